#include "cyclic_recorder.h"

#include <unistd.h>

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

}  // namespace

// --- BreakLatch ---

bool BreakLatch::TryTrip(int tid, std::int64_t value) noexcept {
  int expected = kIdle;
  if (!state_.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    return false;
  }
  tid_.store(tid, std::memory_order_relaxed);
  value_.store(value, std::memory_order_relaxed);
  state_.store(kTripped, std::memory_order_release);
  return true;
}

BreakTrace BreakLatch::Get() const noexcept {
  BreakTrace trace;
  if (!hit()) return trace;
  trace.hit = true;
  trace.tid = tid_.load(std::memory_order_relaxed);
  trace.value = value_.load(std::memory_order_relaxed);
  return trace;
}

// --- CyclicRecorder ---

Result<std::unique_ptr<CyclicRecorder>> CyclicRecorder::Create(const RecorderConfig& config) {
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
    return std::unique_ptr<CyclicRecorder>(new CyclicRecorder(config));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  "out of memory for thread " + std::to_string(config.index) + "'s " +
                      std::to_string(MemoryBytes(config) >> 20) +
                      " MiB of histogram and sample buffers: lower -h, --spike-nodes or -t, or "
                      "free memory (ulimit -v)");
  }
}

std::uint64_t CyclicRecorder::MemoryBytes(const RecorderConfig& config) noexcept {
  std::uint64_t bytes = 0;
  // histogram_ and outliers_.
  bytes += 2 * std::uint64_t{config.histogram_buckets} * sizeof(std::uint64_t);
  if (config.verbose) bytes += kValueRingSize * sizeof(std::int64_t);
  if (config.track_percentiles) {
    bytes += telemetry::LatencyHistogram::kBucketCount * sizeof(std::uint64_t);
  }
  if (config.spike_threshold > 0) bytes += std::uint64_t{config.spike_nodes} * 16;
  return bytes;
}

CyclicRecorder::CyclicRecorder(const RecorderConfig& config) : config_(config) {
  // make_unique<T[]> value-initialises: every page is written (touched) here, not on the RT path.
  if (config_.histogram_buckets > 0) {
    histogram_ = std::make_unique<U64[]>(config_.histogram_buckets);
    outliers_ = std::make_unique<U64[]>(config_.histogram_buckets);
  }
  if (config_.verbose) values_ = std::make_unique<I64[]>(kValueRingSize);
  if (config_.track_percentiles) {
    latency_histogram_ = std::make_unique<telemetry::LatencyHistogram>();
  }
  if (config_.spike_threshold > 0 && config_.spike_nodes > 0) {
    spike_slots_ = std::make_unique<SpikeSlot[]>(config_.spike_nodes);
  }
}

CyclicRecorder::~CyclicRecorder() = default;

void CyclicRecorder::OnRtThreadStart(TaskId /*task*/) {
  tid_.store(static_cast<int>(gettid()), std::memory_order_relaxed);
}

std::int64_t CyclicRecorder::Diff(TimePoint release, std::int64_t latency_ns, bool nsecs) noexcept {
  // rt-utils' calcdiff(now, next): whole seconds, then the ns parts subtracted and divided by 1000
  // (C division: truncation toward zero), so the result is not always latency_ns / 1000.
  const timespec next = release.ToTimespec();
  const timespec now = (release + std::chrono::nanoseconds(latency_ns)).ToTimespec();
  const std::int64_t sec = static_cast<std::int64_t>(now.tv_sec) - next.tv_sec;
  const std::int64_t nsec = static_cast<std::int64_t>(now.tv_nsec) - next.tv_nsec;
  if (nsecs) return sec * 1'000'000'000 + nsec;
  return sec * 1'000'000 + nsec / 1000;
}

void CyclicRecorder::OnCycle(const CycleSample& sample) noexcept {
  // Single writer: plain load + store of our own atomics (no read-modify-write needed).
  const std::uint64_t warm = warmup_seen_.load(std::memory_order_relaxed);
  if (warm < config_.warmup_cycles) {
    warmup_seen_.store(warm + 1, std::memory_order_relaxed);
    return;
  }
  const std::int64_t diff = Diff(sample.release, sample.wakeup_latency_ns, config_.nsecs);
  const std::uint64_t c = cycles_.load(std::memory_order_relaxed);

  if (diff < min_.load(std::memory_order_relaxed)) min_.store(diff, std::memory_order_relaxed);
  if (diff > max_.load(std::memory_order_relaxed)) {
    max_.store(diff, std::memory_order_relaxed);
    new_max_count_.store(new_max_count_.load(std::memory_order_relaxed) + 1,
                         std::memory_order_release);
  }
  avg_sum_.store(avg_sum_.load(std::memory_order_relaxed) + static_cast<double>(diff),
                 std::memory_order_relaxed);

  if (config_.spike_threshold > 0 && diff > config_.spike_threshold) {
    const std::uint64_t n = spikes_.load(std::memory_order_relaxed);
    if (n < config_.spike_nodes) {
      const timespec wake =
          (sample.release + std::chrono::nanoseconds(sample.wakeup_latency_ns)).ToTimespec();
      SpikeSlot& slot = spike_slots_[n];
      slot.value.store(diff, std::memory_order_relaxed);
      slot.ts_us.store(static_cast<std::int64_t>(wake.tv_sec) * 1'000'000 + wake.tv_nsec / 1000,
                       std::memory_order_relaxed);
    }
    spikes_.store(n + 1, std::memory_order_release);
  }

  if (config_.break_threshold > 0 && diff > config_.break_threshold && !break_seen_) {
    break_seen_ = true;
    config_.break_latch->TryTrip(tid_.load(std::memory_order_relaxed), diff);
  }

  act_.store(diff, std::memory_order_relaxed);
  if (latency_histogram_) latency_histogram_->Record(sample.wakeup_latency_ns);
  if (values_) {
    // Release: a reader that sees this value also sees cycles_ >= c (see DrainValues()).
    values_[c & (kValueRingSize - 1)].store(diff, std::memory_order_release);
  }

  if (histogram_) {
    if (diff >= 0 && diff < static_cast<std::int64_t>(config_.histogram_buckets)) {
      U64& bucket = histogram_[static_cast<std::size_t>(diff)];
      bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
      // cyclictest's diff is unsigned, so a negative one lands here too.
      const std::uint64_t listed = num_outliers_.load(std::memory_order_relaxed);
      if (listed < config_.histogram_buckets) {
        outliers_[listed].store(c, std::memory_order_relaxed);
        num_outliers_.store(listed + 1, std::memory_order_release);
      }
      histogram_overflows_.store(histogram_overflows_.load(std::memory_order_relaxed) + 1,
                                 std::memory_order_relaxed);
    }
  }

  if (sample.flags & kCycleOverrun) {
    overruns_.store(overruns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  if (sample.missed_releases != 0) {
    missed_releases_.store(
        missed_releases_.load(std::memory_order_relaxed) + sample.missed_releases,
        std::memory_order_relaxed);
  }
  const std::int64_t x = sample.execution_ns;
  if (c == 0 || x < execution_min_ns_.load(std::memory_order_relaxed)) {
    execution_min_ns_.store(x, std::memory_order_relaxed);
  }
  if (c == 0 || x > execution_max_ns_.load(std::memory_order_relaxed)) {
    execution_max_ns_.store(x, std::memory_order_relaxed);
  }
  execution_sum_ns_.store(execution_sum_ns_.load(std::memory_order_relaxed) + x,
                          std::memory_order_relaxed);

  cycles_.store(c + 1, std::memory_order_release);
}

RecorderSnapshot CyclicRecorder::Snapshot() const noexcept {
  RecorderSnapshot s;
  s.tid = tid_.load(std::memory_order_relaxed);
  s.cycles = cycles_.load(std::memory_order_acquire);
  s.min = min_.load(std::memory_order_relaxed);
  s.act = act_.load(std::memory_order_relaxed);
  s.avg_sum = avg_sum_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  s.warmup_cycles = warmup_seen_.load(std::memory_order_relaxed);
  s.histogram_overflows = histogram_overflows_.load(std::memory_order_relaxed);
  s.spikes = spikes_.load(std::memory_order_acquire);
  s.new_max_count = new_max_count_.load(std::memory_order_acquire);
  s.overruns = overruns_.load(std::memory_order_relaxed);
  s.missed_releases = missed_releases_.load(std::memory_order_relaxed);
  return s;
}

void CyclicRecorder::FillReport(ThreadReport& report) const {
  const RecorderSnapshot s = Snapshot();
  report.index = config_.index;
  report.tid = s.tid;
  report.cycles = s.cycles;
  report.min = s.min;
  report.act = s.act;
  report.avg_sum = s.avg_sum;
  report.max = s.max;
  report.warmup_cycles = s.warmup_cycles;
  report.overruns = s.overruns;
  report.missed_releases = s.missed_releases;
  report.verbose_drops = verbose_drops_;
  report.histogram_overflows = s.histogram_overflows;
  report.histogram.clear();
  report.overflow_cycles.clear();
  if (histogram_) {
    report.histogram.resize(config_.histogram_buckets);
    for (std::uint32_t i = 0; i < config_.histogram_buckets; ++i) {
      report.histogram[i] = histogram_[i].load(std::memory_order_relaxed);
    }
    const std::uint64_t listed = num_outliers_.load(std::memory_order_acquire);
    report.overflow_cycles.resize(listed);
    for (std::uint64_t i = 0; i < listed; ++i) {
      report.overflow_cycles[i] = outliers_[i].load(std::memory_order_relaxed);
    }
  }
  report.percentiles = Percentiles();
  if (s.cycles > 0) {
    report.execution_min_ns = execution_min_ns_.load(std::memory_order_relaxed);
    report.execution_max_ns = execution_max_ns_.load(std::memory_order_relaxed);
    report.execution_avg_ns =
        static_cast<double>(execution_sum_ns_.load(std::memory_order_relaxed)) /
        static_cast<double>(s.cycles);
  }
}

LatencyPercentiles CyclicRecorder::Percentiles() const noexcept {
  LatencyPercentiles p;
  if (!latency_histogram_) return p;
  const telemetry::HistogramSummary s = latency_histogram_->Summary();
  if (s.count == 0) return p;
  p.valid = true;
  p.p50_ns = s.percentiles.p50_ns;
  p.p90_ns = s.percentiles.p90_ns;
  p.p99_ns = s.percentiles.p99_ns;
  p.p99_9_ns = s.percentiles.p99_9_ns;
  p.p99_99_ns = s.percentiles.p99_99_ns;
  p.p99_999_ns = s.percentiles.p99_999_ns;
  p.max_ns = s.max_ns;
  return p;
}

std::int64_t CyclicRecorder::LatencyAtPercentile(double percentile) const noexcept {
  return latency_histogram_ ? latency_histogram_->ValueAtPercentile(percentile) : 0;
}

std::vector<SpikeEvent> CyclicRecorder::Spikes() const {
  std::vector<SpikeEvent> out;
  if (!spike_slots_) return out;
  const std::uint64_t total = spikes_.load(std::memory_order_acquire);
  const std::uint64_t listed = total < config_.spike_nodes ? total : config_.spike_nodes;
  out.reserve(listed);
  for (std::uint64_t i = 0; i < listed; ++i) {
    out.push_back({config_.index, spike_slots_[i].value.load(std::memory_order_relaxed),
                   spike_slots_[i].ts_us.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace rtloop::cyclic
