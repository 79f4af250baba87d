#include "rtloop/telemetry/windowed_stats.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

// A histogram's cumulative counts as of its last reading, dense by bucket index. Allocated once,
// at the first reading (the layout's bucket_count(), 224 KiB by default), then updated in place by
// each tick: what a task's statistics take does not grow as its latency tail finds buckets it never
// used before (a sparse copy of the non-empty buckets, rebuilt every second, did, by up to 0.7 MB a
// histogram).
struct CumulativeReading {
  bool taken = false;
  std::vector<std::uint64_t> counts;  // by layout index; empty until the first reading
  std::size_t begin = 0;              // the non-empty buckets lie in [begin, end); none: equal
  std::size_t end = 0;
  std::int64_t negative_min = 0;  // lower edge of the negatives' bucket (the all-time min)
  std::int64_t sum_ns = 0;
  std::uint64_t negatives = 0;
  std::int64_t negative_sum = 0;
  std::uint64_t overflow = 0;
  std::int64_t max_ns = kI64Min;  // the all-time max at the reading (kI64Min: empty)
};

// One tick's reading of a histogram before it is folded into the CumulativeReading: the scalars
// here, the non-empty buckets (as ExportBuckets gives them) in the caller's buffer.
struct Snapshot {
  std::int64_t negative_min = 0;
  std::int64_t sum_ns = 0;
  std::uint64_t negatives = 0;
  std::int64_t negative_sum = 0;
  std::uint64_t overflow = 0;
  std::int64_t max_ns = kI64Min;
};

// What one tick added to a histogram: bucket count differences (non-zero only, ascending).
struct DeltaEntry {
  std::uint32_t index;
  std::uint32_t count;  // a tick holds far fewer than 2^32 values of one bucket
};
struct Delta {
  std::vector<DeltaEntry> buckets;
  std::uint64_t negatives = 0;
  std::int64_t negative_sum = 0;
  std::uint64_t overflow = 0;
  std::uint64_t count = 0;  // negatives + buckets + overflow
  std::int64_t sum_ns = 0;  // of every value of the tick
  std::int64_t max_ns = 0;  // meaningful when count > 0 (see the header's "Accuracy")
};

bool InRange(const HistogramBucket& b, const HistogramLayout& layout) {
  return b.lower_ns >= 0 && b.lower_ns < layout.max_trackable();
}

// A buffer for ExportBuckets that never grows again: room for every bucket, the negatives' and
// the overflow's, its pages touched once.
void PrepareExportBuffer(std::vector<HistogramBucket>* buffer, const HistogramLayout& layout) {
  if (buffer->capacity() >= layout.bucket_count() + 2) return;
  buffer->resize(layout.bucket_count() + 2);
  buffer->clear();
}

Snapshot Read(const LatencyHistogram& h, std::vector<HistogramBucket>* buckets) {
  const HistogramLayout& layout = h.layout();
  Snapshot r;
  r.negative_sum = h.negative_sum_ns();
  r.sum_ns = h.sum_ns();
  buckets->clear();
  h.ExportBuckets(buckets);
  std::size_t highest = 0;  // 1 + the highest in-range bucket's index; 0: none
  for (const HistogramBucket& b : *buckets) {
    if (b.lower_ns < 0) {
      r.negatives = b.count;
      r.negative_min = b.lower_ns;
    } else if (b.lower_ns >= layout.max_trackable()) {
      r.overflow = b.count;
    } else {
      highest = layout.BucketIndex(b.lower_ns) + 1;
    }
  }
  // The max after the buckets, and at least as new as they are: the writer bumps a value's bucket
  // before it raises the max (LatencyHistogram::Record), so a max read first, or read while the
  // writer is between the two, can miss a value the scan counted. That tick would then report a
  // max below its true one, and the next tick could not claim the value either (its bucket is no
  // longer in that tick's difference): the all-time max would be lost from the history. A max
  // below the highest counted bucket is such a stale one: read it again (the writer is a few
  // instructions from storing it; bounded, should it have been preempted there).
  const bool any = h.count() > 0 || highest > 0 || r.negatives > 0 || r.overflow > 0;
  r.max_ns = any ? h.max_ns() : kI64Min;
  const auto stale = [&r, &layout, highest] {
    if (highest == 0 || r.max_ns >= layout.max_trackable()) return false;
    return r.max_ns < 0 || layout.BucketIndex(r.max_ns) + 1 < highest;
  };
  for (int tries = 0; tries < 10'000 && stale(); ++tries) {
    std::this_thread::yield();
    r.max_ns = h.max_ns();
  }
  return r;
}

// What `now` (its non-empty buckets in `buckets`, ascending) added since the reading `r`, which
// then becomes `now`: one pass over the buckets both diffs and stores them, each of `r`'s counts
// touched once (counts never shrink: every bucket that was non-empty is among them). The first
// call allocates `r`'s counts and returns everything as added.
Delta Advance(const Snapshot& now, const std::vector<HistogramBucket>& buckets,
              const HistogramLayout& layout, CumulativeReading* r) {
  if (r->counts.empty()) r->counts.assign(layout.bucket_count(), 0);
  Delta d;
  for (const HistogramBucket& b : buckets) {
    if (!InRange(b, layout)) continue;
    const std::size_t i = layout.BucketIndex(b.lower_ns);
    std::uint64_t& count = r->counts[i];
    if (b.count > count) {
      const std::uint64_t n = std::min<std::uint64_t>(b.count - count, UINT32_MAX);
      d.buckets.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(n)});
      d.count += n;
    }
    count = b.count;
    if (r->begin == r->end) {
      r->begin = i;
      r->end = i + 1;
    } else {
      r->begin = std::min(r->begin, i);
      r->end = std::max(r->end, i + 1);
    }
  }
  d.negatives = now.negatives > r->negatives ? now.negatives - r->negatives : 0;
  d.negative_sum = static_cast<std::int64_t>(static_cast<std::uint64_t>(now.negative_sum) -
                                             static_cast<std::uint64_t>(r->negative_sum));
  d.overflow = now.overflow > r->overflow ? now.overflow - r->overflow : 0;
  d.count += d.negatives + d.overflow;
  d.sum_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(now.sum_ns) -
                                       static_cast<std::uint64_t>(r->sum_ns));
  if (d.count > 0) {
    if (d.overflow > 0) {
      d.max_ns = now.max_ns;  // beyond the buckets: only the exact all-time max is known
    } else if (!d.buckets.empty()) {
      const std::size_t top = d.buckets.back().index;
      const bool raised = now.max_ns > r->max_ns;
      if (raised && layout.BucketIndex(now.max_ns) == top) {
        d.max_ns = now.max_ns;  // this tick holds the all-time max: exact
      } else {
        d.max_ns = std::min(layout.BucketUpper(top) - 1, now.max_ns);
      }
    } else {
      d.max_ns = -1;  // only early wake-ups: all below 0
    }
  }
  r->taken = true;
  r->negative_min = now.negative_min;
  r->sum_ns = now.sum_ns;
  r->negatives = now.negatives;
  r->negative_sum = now.negative_sum;
  r->overflow = now.overflow;
  r->max_ns = now.max_ns;
  return d;
}

}  // namespace

// One histogram's state: the last reading and the window's ticks (newest last).
struct Series {
  CumulativeReading prev;
  std::deque<Delta> ticks;
};

struct WindowedStats::TaskState {
  mutable std::mutex mu;  // guards everything below against readers; Tick() is the only writer
  Series latency;
  Series execution;
  WindowSummary latency_total;  // of latency.prev
  WindowSummary execution_total;
  std::int64_t reading_unix_ms = 0;
  std::deque<Clock::duration> spans;  // of the window's ticks, newest last
  Clock::time_point last_reading{};
  std::deque<SecondStats> history;
  TaskWindow window;
  TaskStatsSnapshot stats;        // the executor's statistics read with the histograms
  std::uint64_t resets_seen = 0;  // TaskStatsSnapshot::resets at the last tick
};

namespace {

// The statistics of values made of `negatives` (summing to `negative_sum`), the `layout` buckets
// that `for_each_bucket(visit)` visits in ascending order as visit(index, count), and `overflow`
// values; `max` is their max (exact or the documented bound).
template <typename ForEachBucket>
WindowSummary Rank(const HistogramLayout& layout, std::uint64_t negatives,
                   std::int64_t negative_sum, std::uint64_t overflow, std::int64_t max,
                   ForEachBucket for_each_bucket) {
  WindowSummary s;
  std::uint64_t total = negatives + overflow;
  for_each_bucket([&](std::size_t, std::uint64_t c) { total += c; });
  if (total == 0) return s;
  s.valid = true;
  s.count = total;
  s.max_ns = max;
  constexpr std::array<double, 3> kPercentiles = {99.0, 99.9, 99.99};
  const std::array<std::int64_t*, 3> out = {&s.p99_ns, &s.p99_9_ns, &s.p99_99_ns};
  std::size_t next = 0;
  std::uint64_t want = NearestRank(kPercentiles[0], total);
  auto fill = [&](std::int64_t v, std::uint64_t cumulative) {
    while (next < out.size() && want <= cumulative) {
      *out[next++] = std::min(v, max);
      if (next < out.size()) want = NearestRank(kPercentiles[next], total);
    }
  };
  std::uint64_t cumulative = negatives;
  if (negatives > 0) {
    fill(std::min<std::int64_t>(negative_sum / static_cast<std::int64_t>(negatives), -1),
         cumulative);
  }
  for_each_bucket([&](std::size_t i, std::uint64_t c) {
    cumulative += c;
    const std::int64_t lower = layout.BucketLower(i);
    fill(lower + (layout.BucketUpper(i) - lower) / 2, cumulative);
  });
  fill(max, total);  // ranks among the overflow values
  return s;
}

// Summarises `deltas` (one or several ticks of `layout`) with `scratch` (dense, one count per
// bucket, all zero on entry and exit) and `touched` (its set indices).
WindowSummary Summarize(const HistogramLayout& layout, std::span<const Delta* const> deltas,
                        std::vector<std::uint64_t>* scratch, std::vector<std::uint32_t>* touched) {
  std::uint64_t negatives = 0;
  std::int64_t negative_sum = 0;
  std::uint64_t overflow = 0;
  std::int64_t max = kI64Min;
  std::int64_t sum = 0;
  touched->clear();
  for (const Delta* d : deltas) {
    if (d->count == 0) continue;
    negatives += d->negatives;
    negative_sum += d->negative_sum;
    overflow += d->overflow;
    sum += d->sum_ns;
    max = std::max(max, d->max_ns);
    for (const DeltaEntry& e : d->buckets) {
      std::uint64_t& c = (*scratch)[e.index];
      if (c == 0) touched->push_back(e.index);
      c += e.count;
    }
  }
  std::sort(touched->begin(), touched->end());
  WindowSummary s = Rank(layout, negatives, negative_sum, overflow, max, [&](auto visit) {
    for (const std::uint32_t i : *touched) visit(i, (*scratch)[i]);
  });
  if (s.valid) s.sum_ns = sum;
  for (const std::uint32_t i : *touched) (*scratch)[i] = 0;
  return s;
}

// The since-start statistics of a reading (its buckets ascending: no scratch needed).
WindowSummary SummarizeReading(const HistogramLayout& layout, const Snapshot& r,
                               const std::vector<HistogramBucket>& buckets) {
  WindowSummary s =
      Rank(layout, r.negatives, r.negative_sum, r.overflow, r.max_ns, [&](auto visit) {
        for (const HistogramBucket& b : buckets) {
          if (InRange(b, layout)) visit(layout.BucketIndex(b.lower_ns), b.count);
        }
      });
  if (s.valid) s.sum_ns = r.sum_ns;
  return s;
}

std::vector<HistogramBucket> ExportReading(const CumulativeReading& r,
                                           const HistogramLayout& layout) {
  std::vector<HistogramBucket> out;
  if (r.negatives > 0) out.push_back({r.negative_min, 0, r.negatives});
  for (std::size_t i = r.begin; i < r.end; ++i) {
    if (r.counts[i] == 0) continue;
    out.push_back({layout.BucketLower(i), layout.BucketUpper(i), r.counts[i]});
  }
  if (r.overflow > 0) {
    out.push_back(
        {layout.max_trackable(), r.max_ns == INT64_MAX ? INT64_MAX : r.max_ns + 1, r.overflow});
  }
  return out;
}

// The reading's buckets summed into the bins of `bounds` (see HistogramReading::bins; bounds
// ascending and >= 0). The buckets whose every value is <= b are exactly those below the bucket
// holding b + 1: one pass over the non-empty range for all the bounds. The overflow bucket
// [max_trackable, max + 1) goes, by the same rule, to the first bound >= the max (a bound beyond
// the layout's range, e.g. /metrics' le="2" over a 2^30 ns range), else to the last bin.
std::vector<std::uint64_t> Bin(const CumulativeReading& r, const HistogramLayout& layout,
                               std::span<const std::int64_t> bounds) {
  std::vector<std::uint64_t> bins;
  bins.reserve(bounds.size() + 1);
  std::uint64_t before = 0;                 // values counted in earlier bins
  std::uint64_t at_or_below = r.negatives;  // values in the buckets below i, negatives included
  std::uint64_t overflow = r.overflow;      // not counted yet
  std::size_t i = r.begin;
  for (const std::int64_t bound : bounds) {
    const std::size_t first_above =
        bound + 1 >= layout.max_trackable() ? layout.bucket_count() : layout.BucketIndex(bound + 1);
    for (; i < r.end && i < first_above; ++i) at_or_below += r.counts[i];
    if (overflow > 0 && r.max_ns <= bound) {
      at_or_below += overflow;
      overflow = 0;
    }
    bins.push_back(at_or_below - before);
    before = at_or_below;
  }
  for (; i < r.end; ++i) at_or_below += r.counts[i];
  bins.push_back(at_or_below + overflow - before);  // the rest, overflow beyond the bounds included
  return bins;
}

WindowSummary SummarizeOne(const HistogramLayout& layout, const Delta& d,
                           std::vector<std::uint64_t>* scratch,
                           std::vector<std::uint32_t>* touched) {
  const Delta* one[] = {&d};
  return Summarize(layout, one, scratch, touched);
}

WindowSummary SummarizeWindow(const HistogramLayout& layout, const Series& series,
                              std::vector<std::uint64_t>* scratch,
                              std::vector<std::uint32_t>* touched) {
  std::vector<const Delta*> all;
  all.reserve(series.ticks.size());
  for (const Delta& d : series.ticks) all.push_back(&d);
  return Summarize(layout, all, scratch, touched);
}

}  // namespace

WindowedStats::WindowedStats(const TelemetryHub& hub, const WindowedStatsConfig& config)
    : hub_(hub), config_(config), layout_(hub.config().histogram_layout) {}

WindowedStats::~WindowedStats() { Stop(); }

Status WindowedStats::Validate(const WindowedStatsConfig& c) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (c.tick < milliseconds(10) || c.tick > seconds(60)) {
    return InvalidArgumentError("WindowedStatsConfig.tick must be 10 ms .. 60 s, not " +
                                std::to_string(c.tick.count()) + " ms");
  }
  if (c.history < c.window || c.history > seconds(86400)) {
    return InvalidArgumentError("WindowedStatsConfig.history must be window .. 86400 s, not " +
                                std::to_string(c.history.count()) + " s");
  }
  if (c.window < seconds(1) || c.window < c.tick) {
    return InvalidArgumentError("WindowedStatsConfig.window must be >= 1 s and >= the tick, not " +
                                std::to_string(c.window.count()) + " s");
  }
  return Status::Ok();
}

Status WindowedStats::Start() {
  RTLOOP_RETURN_IF_ERROR(Validate(config_));
  if (started_) return FailedPreconditionError("WindowedStats::Start(): already started");
  Tick();  // the baseline: the first second covers one second, not the run so far
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = false;
  }
  try {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "rtloop-window");  // shows in top and thread metrics
      Run();
    });
  } catch (const std::system_error& e) {
    return InternalError(std::string("cannot create the windowed-statistics thread: ") + e.what());
  }
  started_ = true;
  return Status::Ok();
}

void WindowedStats::Stop() {
  if (!started_) return;
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  run_cv_.notify_all();
  thread_.join();
  started_ = false;
}

void WindowedStats::Run() {
  Clock::time_point next = Clock::now() + config_.tick;
  std::unique_lock<std::mutex> lock(run_mu_);
  while (!run_cv_.wait_until(lock, next, [this] { return stop_; })) {
    lock.unlock();
    Tick();
    lock.lock();
    next += config_.tick;
    // After a stall (a suspended VM), tick once and realign instead of catching up in a burst.
    if (const Clock::time_point now = Clock::now(); next < now) next = now + config_.tick;
  }
}

WindowedStats::TaskState* WindowedStats::StateFor(TaskId id) const {
  std::lock_guard<std::mutex> lock(tasks_mu_);
  return id < tasks_.size() ? tasks_[id].get() : nullptr;
}

void WindowedStats::Tick() {
  hub_.Drain();  // every value recorded so far lands in this second
  if (scratch_.empty()) scratch_.assign(layout_.bucket_count(), 0);
  PrepareExportBuffer(&latency_buckets_, layout_);
  PrepareExportBuffer(&execution_buckets_, layout_);
  for (const TaskId id : hub_.TaskIds()) {
    const TaskTelemetry* t = hub_.task(id);
    if (t == nullptr) continue;
    TaskState* state = StateFor(id);
    if (state == nullptr) {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (tasks_.size() <= id) tasks_.resize(std::size_t{id} + 1);
      tasks_[id] = std::make_unique<TaskState>();
      state = tasks_[id].get();
      state->window.id = id;
    }
    TickTask(*t, state);
  }
  ticks_.fetch_add(1, std::memory_order_relaxed);
}

void WindowedStats::TickTask(const TaskTelemetry& t, TaskState* state) {
  const std::size_t window_ticks = static_cast<std::size_t>(
      (std::chrono::duration_cast<std::chrono::milliseconds>(config_.window) + config_.tick -
       std::chrono::milliseconds(1)) /
      config_.tick);
  const std::size_t history_ticks = static_cast<std::size_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.history) / config_.tick);
  // Read without the state's lock: only this thread writes the series.
  const Clock::time_point now = Clock::now();
  // Execution first, then latency, then the counters: every writer (the drain, the RT thread for a
  // sample its full ring refused) records latency before execution, so the latency reading counts
  // at least the cycles the execution reading does
  // (see TaskReading::stats).
  const Snapshot execution = Read(t.execution(), &execution_buckets_);
  const Snapshot latency = Read(t.latency(), &latency_buckets_);
  const TaskStatsSnapshot stats = hub_.Stats(t.id());
  const WindowSummary latency_total = SummarizeReading(layout_, latency, latency_buckets_);
  const WindowSummary execution_total = SummarizeReading(layout_, execution, execution_buckets_);
  const std::int64_t unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
  // Under the lock from here: the readers see the new reading, totals, window and history at once.
  std::lock_guard<std::mutex> lock(state->mu);
  const bool baseline = !state->latency.prev.taken;  // the first reading only sets the baseline
  Delta dl = Advance(latency, latency_buckets_, layout_, &state->latency.prev);
  Delta de = Advance(execution, execution_buckets_, layout_, &state->execution.prev);
  state->latency_total = latency_total;
  state->execution_total = execution_total;
  state->reading_unix_ms = unix_ms;
  state->stats = stats;
  const Clock::duration since_last = now - state->last_reading;
  state->last_reading = now;
  // A statistics reset since the last tick (the epoch the executor's TaskStats counts): the
  // window restarts empty, this tick included (it holds values from before the reset). The
  // history keeps its seconds: it is a time series, not a statistic.
  const bool reset = stats.resets != state->resets_seen;
  state->resets_seen = stats.resets;
  if (baseline) return;
  const WindowSummary sl = SummarizeOne(layout_, dl, &scratch_, &touched_);
  const WindowSummary se = SummarizeOne(layout_, de, &scratch_, &touched_);
  state->history.push_back({.unix_ms = unix_ms,
                            .latency_count = sl.count,
                            .latency_max_ns = sl.max_ns,
                            .latency_p99_ns = sl.p99_ns,
                            .execution_count = se.count,
                            .execution_max_ns = se.max_ns,
                            .execution_p99_ns = se.p99_ns});
  while (state->history.size() > history_ticks) state->history.pop_front();
  if (reset) {
    state->latency.ticks.clear();
    state->execution.ticks.clear();
    state->spans.clear();
    state->window = TaskWindow{};
    state->window.id = t.id();
    return;
  }
  state->latency.ticks.push_back(std::move(dl));
  state->execution.ticks.push_back(std::move(de));
  state->spans.push_back(since_last);
  while (state->latency.ticks.size() > window_ticks) {
    state->latency.ticks.pop_front();
    state->execution.ticks.pop_front();
    state->spans.pop_front();
  }
  state->window.latency = SummarizeWindow(layout_, state->latency, &scratch_, &touched_);
  state->window.execution = SummarizeWindow(layout_, state->execution, &scratch_, &touched_);
  Clock::duration span{0};
  for (const Clock::duration d : state->spans) span += d;
  state->window.span = std::chrono::duration_cast<std::chrono::nanoseconds>(span);
}

TaskWindow WindowedStats::Window(TaskId id) const {
  const TaskState* state = StateFor(id);
  if (state == nullptr) {
    TaskWindow empty;
    empty.id = id;
    return empty;
  }
  std::lock_guard<std::mutex> lock(state->mu);
  return state->window;
}

TaskReading WindowedStats::Reading(TaskId id, bool with_buckets,
                                   std::span<const std::int64_t> bin_bounds_ns) const {
  TaskReading r;
  r.id = id;
  const TaskState* state = StateFor(id);
  if (state == nullptr) return r;
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->latency.prev.taken) return r;
  r.valid = true;
  r.unix_ms = state->reading_unix_ms;
  r.latency.total = state->latency_total;
  r.execution.total = state->execution_total;
  r.stats = state->stats;
  if (with_buckets) {
    r.latency.buckets = ExportReading(state->latency.prev, layout_);
    r.execution.buckets = ExportReading(state->execution.prev, layout_);
  }
  if (!bin_bounds_ns.empty()) {
    r.latency.bins = Bin(state->latency.prev, layout_, bin_bounds_ns);
    r.execution.bins = Bin(state->execution.prev, layout_, bin_bounds_ns);
  }
  return r;
}

std::vector<SecondStats> WindowedStats::History(TaskId id, std::size_t max_seconds) const {
  const TaskState* state = StateFor(id);
  if (state == nullptr) return {};
  std::lock_guard<std::mutex> lock(state->mu);
  const std::size_t n =
      max_seconds == 0 ? state->history.size() : std::min(max_seconds, state->history.size());
  return {state->history.end() - static_cast<std::ptrdiff_t>(n), state->history.end()};
}

std::uint64_t WindowedStats::ticks() const noexcept {
  return ticks_.load(std::memory_order_relaxed);
}

}  // namespace rtloop::telemetry
