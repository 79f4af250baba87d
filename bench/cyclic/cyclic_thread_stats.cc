#include "cyclic_thread_stats.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <string>

namespace rtloop::cyclic {
namespace {

// The largest spike list we accept: 16 bytes a node, so 64 MiB.
constexpr std::uint32_t kMaxSpikeNodes = 4u << 20;

// OnCycle() is RT-safe only if these never fall back to libatomic's lock-based implementation
// (e.g. 64-bit atomics on a 32-bit target without double-word exclusives).
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<double>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

// Single-writer update of an atomic the RT thread alone writes: no read-modify-write needed.
template <typename T>
void Bump(std::atomic<T>& a, T by = 1) noexcept {
  a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

std::int64_t CyclictestDiff(TimePoint release, std::int64_t latency_ns, bool nsecs) noexcept {
  // In ns, calcdiff's seconds x 1e9 plus the ns parts is the latency itself.
  if (nsecs) return latency_ns;
  // rt-utils' calcdiff(now, next): whole seconds, then the ns parts subtracted and divided by 1000
  // (C division: truncation toward zero), so the result is not always latency_ns / 1000. It is
  // when the wake-up falls in the release's second: then the ns parts differ by latency_ns. That
  // is nearly every cycle, and costs one remainder instead of two timespec conversions (the RT
  // thread runs this each cycle).
  if (latency_ns >= 0 && release.ns() >= 0) {
    // Unsigned: a remainder and a quotient by constants, without the signed corrections.
    const auto latency = static_cast<std::uint64_t>(latency_ns);
    if (static_cast<std::uint64_t>(release.ns()) % 1'000'000'000u + latency < 1'000'000'000u) {
      return static_cast<std::int64_t>(latency / 1000u);
    }
  }
  const timespec next = release.ToTimespec();
  const timespec now = (release + std::chrono::nanoseconds(latency_ns)).ToTimespec();
  const std::int64_t sec = static_cast<std::int64_t>(now.tv_sec) - next.tv_sec;
  const std::int64_t nsec = static_cast<std::int64_t>(now.tv_nsec) - next.tv_nsec;
  if (nsecs) return sec * 1'000'000'000 + nsec;
  return sec * 1'000'000 + nsec / 1000;
}

// --- BreakLatch ---

bool BreakLatch::TryTrip(int thread, std::uint64_t seq, std::int64_t value,
                         std::int64_t wake_ns) noexcept {
  int expected = kIdle;
  if (!state_.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    return false;
  }
  thread_.store(thread, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  value_.store(value, std::memory_order_relaxed);
  wake_ns_.store(wake_ns, std::memory_order_relaxed);
  state_.store(kTripped, std::memory_order_release);
  return true;
}

bool BreakLatch::Excludes(int thread, std::uint64_t seq) const noexcept {
  // kWriting counts as not yet tripped: only the tripping thread is between the two stores, and
  // it is busy with the breaking sample itself.
  if (!hit()) return false;
  return thread != thread_.load(std::memory_order_relaxed) ||
         seq != seq_.load(std::memory_order_relaxed);
}

bool BreakLatch::ExcludesSample(int thread, std::uint64_t seq,
                                std::int64_t wake_ns) const noexcept {
  if (!hit()) return false;
  if (thread == thread_.load(std::memory_order_relaxed)) {
    return seq > seq_.load(std::memory_order_relaxed);
  }
  return wake_ns > wake_ns_.load(std::memory_order_relaxed);
}

BreakLatch::Trip BreakLatch::Get() const noexcept {
  Trip trip;
  if (!hit()) return trip;
  trip.hit = true;
  trip.thread = thread_.load(std::memory_order_relaxed);
  trip.seq = seq_.load(std::memory_order_relaxed);
  trip.value = value_.load(std::memory_order_relaxed);
  trip.wake_ns = wake_ns_.load(std::memory_order_relaxed);
  return trip;
}

StepResult CyclicThreadTask::Step(const CycleContext& /*ctx*/) noexcept {
  return latch_ != nullptr && latch_->hit() ? StepResult::kStop : StepResult::kContinue;
}

// --- CyclicThreadStats ---

Result<std::unique_ptr<CyclicThreadStats>> CyclicThreadStats::Create(
    const CyclicStatsConfig& config) {
  if (config.histogram_buckets > kMaxHistogramBuckets) {
    return InvalidArgumentError("histogram size " + std::to_string(config.histogram_buckets) +
                                " is too large: use at most " +
                                std::to_string(kMaxHistogramBuckets) + " buckets (-h/-H)");
  }
  if (config.spike_threshold < 0) {
    return InvalidArgumentError("spike threshold " + std::to_string(config.spike_threshold) +
                                " is negative: give --spike a value >= 0");
  }
  if (config.spike_threshold > 0 && config.spike_nodes > kMaxSpikeNodes) {
    return InvalidArgumentError("--spike-nodes=" + std::to_string(config.spike_nodes) +
                                " is too large: use at most " + std::to_string(kMaxSpikeNodes));
  }
  if (config.break_threshold < 0) {
    return InvalidArgumentError("break-trace limit " + std::to_string(config.break_threshold) +
                                " is negative: give -b a value > 0");
  }
  if (config.break_threshold > 0 && config.break_latch == nullptr) {
    return InvalidArgumentError("a break-trace limit (-b) needs a BreakLatch: set break_latch");
  }
  try {
    return std::unique_ptr<CyclicThreadStats>(new CyclicThreadStats(config));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  "out of memory for thread " + std::to_string(config.index) + "'s " +
                      std::to_string(MemoryBytes(config) >> 20) +
                      " MiB of histogram and sample buffers: lower -h, --spike-nodes or -t, or "
                      "free memory (ulimit -v)");
  }
}

std::uint64_t CyclicThreadStats::MemoryBytes(const CyclicStatsConfig& config) noexcept {
  std::uint64_t bytes = 0;
  // histogram_ and outliers_.
  bytes += 2 * std::uint64_t{config.histogram_buckets} * sizeof(std::uint64_t);
  if (config.verbose) bytes += kValueRingSize * sizeof(ValueSlot);
  if (config.spike_threshold > 0) bytes += std::uint64_t{config.spike_nodes} * 16;
  return bytes;
}

CyclicThreadStats::CyclicThreadStats(const CyclicStatsConfig& config) : config_(config) {
  // make_unique<T[]> value-initialises: every page is written (touched) here, not on the RT path.
  if (config_.histogram_buckets > 0) {
    histogram_ = std::make_unique<U64[]>(config_.histogram_buckets);
    outliers_ = std::make_unique<U64[]>(config_.histogram_buckets);
  }
  if (config_.verbose) values_ = std::make_unique<ValueSlot[]>(kValueRingSize);
  if (config_.spike_threshold > 0 && config_.spike_nodes > 0) {
    spike_slots_ = std::make_unique<SpikeSlot[]>(config_.spike_nodes);
  }
}

CyclicThreadStats::~CyclicThreadStats() = default;

void CyclicThreadStats::OnCycle(const CycleSample& sample) noexcept {
  Record(ordered_, sample.seq, sample.release.ns(), sample.wakeup_latency_ns);
}

void CyclicThreadStats::OnDrained(std::span<const telemetry::Sample> samples) noexcept {
  for (const telemetry::Sample& s : samples) {
    if ((s.flags & telemetry::kSampleSaturated) != 0) [[unlikely]]
      continue;  // OnRefused() recorded it with its exact latency
    Record(ordered_, s.seq, s.release_ns, s.latency_ns);
  }
}

void CyclicThreadStats::OnRefused(const CycleSample& sample) noexcept {
  Record(refused_, sample.seq, sample.release.ns(), sample.wakeup_latency_ns);
}

void CyclicThreadStats::Record(Part& part, std::uint64_t seq, std::int64_t release_ns,
                               std::int64_t latency_ns) noexcept {
  const std::int64_t wake_ns = release_ns + latency_ns;
  // -b: cyclictest's figures end with the sample that broke the limit, in every thread.
  if (config_.break_latch != nullptr &&
      config_.break_latch->ExcludesSample(config_.index, seq, wake_ns)) {
    return;
  }
  const std::int64_t diff =
      CyclictestDiff(TimePoint(std::chrono::nanoseconds(release_ns)), latency_ns, config_.nsecs);

  if (diff < part.min.load(std::memory_order_relaxed)) {
    part.min.store(diff, std::memory_order_relaxed);
  }
  if (diff > part.max.load(std::memory_order_relaxed)) {
    part.max.store(diff, std::memory_order_relaxed);
    part.new_max_count.store(part.new_max_count.load(std::memory_order_relaxed) + 1,
                             std::memory_order_release);
  }
  Bump(part.sum, static_cast<double>(diff));
  if (config_.spike_threshold > 0 && diff > config_.spike_threshold) RecordSpike(wake_ns, diff);
  if (config_.break_threshold > 0 && diff > config_.break_threshold && !part.break_seen) {
    part.break_seen = true;
    config_.break_latch->TryTrip(config_.index, seq, diff, wake_ns);
  }
  part.act.store(diff, std::memory_order_relaxed);
  part.act_seq.store(seq, std::memory_order_relaxed);
  if (values_) StoreValue(part, seq, diff);
  if (histogram_) RecordHistogram(diff, seq);
  part.next.store(seq + 1, std::memory_order_release);
  part.cycles.store(part.cycles.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void CyclicThreadStats::StoreValue(Part& part, std::uint64_t cycle, std::int64_t value) noexcept {
  if (&part == &refused_ &&
      cycle >= ordered_.next.load(std::memory_order_acquire) + kValueRingSize) {
    // A ring ahead of the in-order writer: it may still write this slot for an older cycle. Left
    // out (the reader counts a drop); -v's reader would have lost it anyway.
    return;
  }
  ValueSlot& slot = values_[cycle & (kValueRingSize - 1)];
  slot.tag.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.value.store(value, std::memory_order_relaxed);
  slot.tag.store(cycle + 1, std::memory_order_release);
  if (cycle + 1 > part.high.load(std::memory_order_relaxed)) {
    part.high.store(cycle + 1, std::memory_order_relaxed);
  }
}

bool CyclicThreadStats::LoadValue(std::uint64_t cycle, std::int64_t* value) const noexcept {
  const ValueSlot& slot = values_[cycle & (kValueRingSize - 1)];
  const std::uint64_t before = slot.tag.load(std::memory_order_acquire);
  *value = slot.value.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return before == cycle + 1 && slot.tag.load(std::memory_order_relaxed) == before;
}

void CyclicThreadStats::RecordSpike(std::int64_t wake_ns, std::int64_t diff) noexcept {
  // Both writers may record: the slot is claimed with a read-modify-write.
  const std::uint64_t n = spikes_.fetch_add(1, std::memory_order_acq_rel);
  if (n < config_.spike_nodes) {
    const timespec wake = TimePoint(std::chrono::nanoseconds(wake_ns)).ToTimespec();
    SpikeSlot& slot = spike_slots_[static_cast<std::size_t>(n)];  // n < spike_nodes
    slot.value.store(diff, std::memory_order_relaxed);
    slot.ts_us.store(static_cast<std::int64_t>(wake.tv_sec) * 1'000'000 + wake.tv_nsec / 1000,
                     std::memory_order_relaxed);
  }
}

void CyclicThreadStats::RecordHistogram(std::int64_t diff, std::uint64_t cycle) noexcept {
  // Both writers may record: read-modify-writes (lock-free, static_asserts above).
  if (diff >= 0 && diff < static_cast<std::int64_t>(config_.histogram_buckets)) {
    histogram_[static_cast<std::size_t>(diff)].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // cyclictest's diff is unsigned, so a negative one lands here too.
  const std::uint64_t listed = histogram_overflows_.fetch_add(1, std::memory_order_acq_rel);
  if (listed < config_.histogram_buckets) {
    outliers_[static_cast<std::size_t>(listed)].store(cycle, std::memory_order_relaxed);
  }
}

CyclicStatsSnapshot CyclicThreadStats::Snapshot() const noexcept {
  CyclicStatsSnapshot s;
  const std::uint64_t ordered = ordered_.cycles.load(std::memory_order_acquire);
  const std::uint64_t refused = refused_.cycles.load(std::memory_order_acquire);
  s.cycles = ordered + refused;
  s.min = std::min(ordered_.min.load(std::memory_order_relaxed),
                   refused_.min.load(std::memory_order_relaxed));
  s.max = std::max(ordered_.max.load(std::memory_order_relaxed),
                   refused_.max.load(std::memory_order_relaxed));
  // Act: the latest sample, by seq, of either writer.
  const bool refused_later =
      refused > 0 && (ordered == 0 || refused_.act_seq.load(std::memory_order_relaxed) >
                                          ordered_.act_seq.load(std::memory_order_relaxed));
  s.act = (refused_later ? refused_ : ordered_).act.load(std::memory_order_relaxed);
  s.avg_sum =
      ordered_.sum.load(std::memory_order_relaxed) + refused_.sum.load(std::memory_order_relaxed);
  s.histogram_overflows = histogram_overflows_.load(std::memory_order_relaxed);
  s.spikes = spikes_.load(std::memory_order_acquire);
  s.new_max_count = new_max_count();
  return s;
}

void CyclicThreadStats::FillReport(ThreadReport& report) const {
  const CyclicStatsSnapshot s = Snapshot();
  report.index = config_.index;
  report.cycles = s.cycles;
  report.min = s.min;
  report.act = s.act;
  report.avg_sum = s.avg_sum;
  report.max = s.max;
  report.verbose_drops = verbose_drops_;
  report.histogram_overflows = s.histogram_overflows;
  report.histogram.clear();
  report.overflow_cycles.clear();
  if (!histogram_) return;
  report.histogram.resize(config_.histogram_buckets);
  for (std::uint32_t i = 0; i < config_.histogram_buckets; ++i) {
    report.histogram[i] = histogram_[i].load(std::memory_order_relaxed);
  }
  // At most histogram_buckets: an index on every target (a 32-bit size_t on armhf).
  const std::uint64_t claims = histogram_overflows_.load(std::memory_order_acquire);
  const auto listed =
      static_cast<std::size_t>(std::min<std::uint64_t>(claims, config_.histogram_buckets));
  report.overflow_cycles.resize(listed);
  for (std::size_t i = 0; i < listed; ++i) {
    report.overflow_cycles[i] = outliers_[i].load(std::memory_order_relaxed);
  }
  // In cycle order: a refused sample is listed when it happened, before older drained ones.
  std::sort(report.overflow_cycles.begin(), report.overflow_cycles.end());
}

std::vector<SpikeEvent> CyclicThreadStats::Spikes() const {
  std::vector<SpikeEvent> out;
  if (!spike_slots_) return out;
  const std::uint64_t total = spikes_.load(std::memory_order_acquire);
  const auto listed =
      static_cast<std::size_t>(total < config_.spike_nodes ? total : config_.spike_nodes);
  out.reserve(listed);
  for (std::size_t i = 0; i < listed; ++i) {
    out.push_back({config_.index, spike_slots_[i].value.load(std::memory_order_relaxed),
                   spike_slots_[i].ts_us.load(std::memory_order_relaxed)});
  }
  // In time order, as cyclictest lists them (see FillReport() for why they may not be).
  std::stable_sort(out.begin(), out.end(),
                   [](const SpikeEvent& a, const SpikeEvent& b) { return a.ts_us < b.ts_us; });
  return out;
}

}  // namespace rtloop::cyclic
