// CyclicThreadStats: what cyclictest keeps per measurement thread (its struct thread_stat,
// bench/cyclic/CYCLICTEST-2.4.md §2) and rtloop's executor does not: cyclictest's own sample
// statistics (C:, Min, Act, Avg, Max of its sample value), the linear -h histogram with its
// overflow list, the -v ring, the --spike list, -M's new-max count and the -b break. A
// CycleObserver of one measurement task, on that task's RT thread.
//
//   rtloop::cyclic::BreakLatch latch;                       // shared by all threads (-b)
//   rtloop::cyclic::CyclicStatsConfig sc;
//   sc.index = 0;
//   sc.histogram_buckets = 400;                             // -h 400
//   sc.break_threshold = 50;                                // -b 50
//   sc.break_latch = &latch;
//   Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(sc);
//   CyclicThreadTask task(&latch);                          // ends at the first release after -b
//   task_config.observers = {stats->get()};                 // one per measurement thread
//   runtime->AddTask(task, task_config);
//   ... main thread, every 10 ms: (*stats)->Snapshot(), (*stats)->DrainValues(...), latch.hit()
//   ... at the end: ThreadReport r; (*stats)->FillReport(r);
//
// One owner per statistic. rtloop-cyclic reads every figure from the one place that has it:
//   the executor (TaskStats)   the thread's tid and state, the warm-up (--warmup is
//                              TaskConfig::warmup_cycles: no observer sees those cycles),
//                              overruns, missed releases, execution time, the exact ns latency;
//   the telemetry hub          the wake-up latency percentiles (--percentiles, --fail-percentile,
//                              JSON "rtloop") and ring drops;
//   CyclicThreadStats          only what cyclictest has and the executor does not (above).
// The one figure both have is the latency's min/max/mean, and it stays here, documented, because
// cyclictest defines its own and its output must be reproduced exactly:
//   - The sample value is diff = calcdiff(now, next) (CyclictestDiff()): whole seconds, then the
//     ns parts subtracted and divided by 1000 with C's truncation toward zero. Within a second
//     that is the latency truncated to whole us; across a second boundary it rounds up (a wake-up
//     1.2 us late at x.9999995 s counts 2 us), so it depends on the release's position within the
//     second, which the executor's ns figures do not keep.
//   - Avg is the mean of those truncated values (cyclictest sums them), below the exact mean by up
//     to 1 us: samples 1.5 and 2.5 us give cyclictest's avg 1.50, JSON "1.50", where the executor
//     has 2.0.
//   - The window: after a -b break cyclictest's figures stop at the breaking sample, while the
//     executor and the hub count each thread's cycles until it stopped (one or two more: the
//     cycle in flight and the one whose Step() sees the break, see CyclicThreadTask).
//   - min starts at cyclictest's 1000000 (so under -N a thread whose every sample is above 1 ms
//     shows Min:1000000).
// Where the definitions coincide (-N, no break, samples below 1 ms) C:, Min, Act, Max and the sum
// equal the executor's TaskStats exactly; in us, Min and Max are the executor's ns figures
// truncated (rounded up across a second boundary) and Avg lies within 1 us below its mean.
// tests/cyclic/cyclic_thread_stats_test.cc proves both, with samples from a real executor and
// from a CycleEngine driven across second boundaries.
//
// Per sample, in cyclictest's order: min/max (a new max bumps new_max_count() for -M), sum,
// --spike record, -b trip, act, -v ring, -h histogram (overflows and their cycle indices, at most
// `histogram_buckets` of them), cycles++. Samples after a -b break are left out (BreakLatch).
//
// Threading: OnCycle() runs on the one RT thread of the task observed (single writer). Everything
// is stored in atomics: the writer uses relaxed stores and publishes `cycles` with release; readers
// (any thread) use acquire/relaxed loads, so a snapshot's fields are individually exact but may
// come from adjacent cycles. DrainValues() has one reader thread. FillReport()/Spikes() may run
// concurrently with the writer but give exact results only after the RT thread stopped. All memory
// is allocated and touched in Create(); OnCycle() is RT-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cyclic_report.h"
#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/status.h"

namespace rtloop::cyclic {

// cyclictest's sample value for a wake-up `latency_ns` after `release`: calcdiff(now, next) in us
// or, with `nsecs` (-N), calcdiff_ns. RT-safe.
std::int64_t CyclictestDiff(TimePoint release, std::int64_t latency_ns, bool nsecs) noexcept;

// The -b latch shared by all threads of a run: the first sample over the limit, in any thread,
// trips it (cyclictest's break_thread_id/value); later ones are ignored. The runner polls hit()
// and ends the run; every observer of cyclictest's figures leaves later samples out (Excludes()).
// Lock-free; every method is RT-safe.
class BreakLatch {
 public:
  struct Trip {
    bool hit = false;
    int thread = 0;         // index of the thread whose sample broke the limit
    std::uint64_t seq = 0;  // that sample's CycleSample::seq
    std::int64_t value = 0;
  };

  // True when this call tripped the latch.
  bool TryTrip(int thread, std::uint64_t seq, std::int64_t value) noexcept;
  bool hit() const noexcept { return state_.load(std::memory_order_acquire) == kTripped; }
  // True for a sample after the break: the latch tripped, on another sample. The breaking sample
  // itself counts for every observer of its thread, whichever asks first.
  bool Excludes(int thread, std::uint64_t seq) const noexcept;
  // {hit = false} until tripped.
  Trip Get() const noexcept;

 private:
  static constexpr int kIdle = 0;
  static constexpr int kWriting = 1;
  static constexpr int kTripped = 2;
  std::atomic<int> state_{kIdle};
  std::atomic<int> thread_{0};
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<std::int64_t> value_{0};
};

// The task of one measurement thread. Like rtloop::CyclicTask its Step() does nothing (the
// measurement is the executor's own), except that once `latch` has tripped it returns kStop: every
// thread ends at its first release after a -b break, as cyclictest's threads leave their loop.
class CyclicThreadTask final : public PeriodicTask {
 public:
  explicit CyclicThreadTask(const BreakLatch* latch = nullptr) noexcept : latch_(latch) {}
  // RT-safe.
  StepResult Step(const CycleContext& ctx) noexcept override;

 private:
  const BreakLatch* latch_;  // nullable: -b not given
};

struct CyclicStatsConfig {
  int index = 0;                        // thread number (T:, spike lines, the break latch)
  bool nsecs = false;                   // -N: diff in ns (calcdiff_ns), else us (calcdiff)
  std::uint32_t histogram_buckets = 0;  // -h/-H N: buckets 0..N-1 (1 us, or 1 ns with -N); 0: off
  bool verbose = false;                 // -v: keep the kValueRingSize ring of samples
  std::int64_t spike_threshold = 0;     // --spike=N: record samples > N; 0: off
  std::uint32_t spike_nodes = 1024;     // --spike-nodes: list capacity (the total keeps counting)
  std::int64_t break_threshold = 0;     // -b N: trip break_latch on the first sample > N; 0: off
  // The run's -b latch (required with break_threshold; outlives the stats): tripped here, and
  // samples after any thread's break are left out.
  BreakLatch* break_latch = nullptr;
};

// A consistent-enough copy of the live state (see the header comment). Run unit: us, or ns (-N).
struct CyclicStatsSnapshot {
  std::uint64_t cycles = 0;    // samples in cyclictest's figures (C:)
  std::int64_t min = 1000000;  // cyclictest's initial value until the first sample
  std::int64_t act = 0;
  double avg_sum = 0.0;  // the sum behind Avg
  std::int64_t max = 0;
  std::uint64_t histogram_overflows = 0;
  std::uint64_t spikes = 0;         // total spikes, recorded or not
  std::uint64_t new_max_count = 0;  // new maxima so far (-M)
};

class CyclicThreadStats final : public CycleObserver {
 public:
  // -v ring size (cyclictest's VALBUF_SIZE).
  static constexpr std::size_t kValueRingSize = 16384;
  // cyclictest's HIST_MAX.
  static constexpr std::uint32_t kMaxHistogramBuckets = 1000000;

  // Validates `config` and allocates (and touches) every buffer; an allocation failure is
  // ResourceExhausted naming what could not be allocated. Not RT-safe.
  static Result<std::unique_ptr<CyclicThreadStats>> Create(const CyclicStatsConfig& config);
  // The bytes Create() allocates for `config` (buffers, not the object itself): what a
  // configuration needs can be checked before anything is allocated. RT-safe.
  static std::uint64_t MemoryBytes(const CyclicStatsConfig& config) noexcept;

  // RT thread, every measured cycle. RT-safe.
  void OnCycle(const CycleSample& sample) noexcept override;

  // Any thread. RT-safe.
  CyclicStatsSnapshot Snapshot() const noexcept;
  // Any thread. RT-safe. Incremented on each new max: -M polls it for changes.
  std::uint64_t new_max_count() const noexcept {
    return new_max_count_.load(std::memory_order_acquire);
  }
  const CyclicStatsConfig& config() const noexcept { return config_; }

  // -v: calls fn(cycle, value) for every sample not yet drained, oldest first. Samples the RT
  // thread overwrote before they were read are skipped and counted in verbose_drops() (cyclictest
  // would print overwritten values). One reader thread only. Returns the number delivered.
  template <typename Fn>
  std::size_t DrainValues(Fn&& fn);
  // -v samples lost to ring wrap-around so far (reader thread).
  std::uint64_t verbose_drops() const noexcept { return verbose_drops_; }

  // Fills the fields this object owns: index, cycles, min, act, avg_sum, max, histogram,
  // histogram_overflows, overflow_cycles and verbose_drops. The others come from their owners
  // (the runner fills tid and the executor's and telemetry's figures). Not RT-safe (allocates).
  void FillReport(ThreadReport& report) const;
  // The recorded spikes (at most spike_nodes), in order. Not RT-safe.
  std::vector<SpikeEvent> Spikes() const;

  CyclicThreadStats(const CyclicThreadStats&) = delete;
  CyclicThreadStats& operator=(const CyclicThreadStats&) = delete;
  ~CyclicThreadStats() override;

 private:
  explicit CyclicThreadStats(const CyclicStatsConfig& config);
  void RecordHistogram(std::int64_t diff, std::uint64_t cycle) noexcept;
  void RecordSpike(const CycleSample& sample, std::int64_t diff) noexcept;

  using U64 = std::atomic<std::uint64_t>;
  using I64 = std::atomic<std::int64_t>;

  const CyclicStatsConfig config_;

  // Written by the RT thread only; on their own cache lines, away from the reader's fields.
  alignas(64) U64 cycles_{0};  // published last, with release
  I64 min_{1000000};
  I64 max_{0};
  I64 act_{0};
  std::atomic<double> avg_sum_{0.0};
  U64 new_max_count_{0};
  U64 histogram_overflows_{0};
  U64 num_outliers_{0};
  U64 spikes_{0};
  bool break_seen_ = false;  // RT thread only: this thread already went over the -b limit

  std::unique_ptr<U64[]> histogram_;  // histogram_buckets
  std::unique_ptr<U64[]> outliers_;   // histogram_buckets overflow cycle indices
  std::unique_ptr<I64[]> values_;     // kValueRingSize (-v)
  struct SpikeSlot {
    I64 value{0};
    I64 ts_us{0};
  };
  std::unique_ptr<SpikeSlot[]> spike_slots_;  // spike_nodes

  // Reader side of the -v ring (one reader thread).
  alignas(64) std::uint64_t read_index_ = 0;
  std::uint64_t verbose_drops_ = 0;
};

template <typename Fn>
std::size_t CyclicThreadStats::DrainValues(Fn&& fn) {
  if (!values_) return 0;
  // Slot r % kValueRingSize holds cycle r while the writer is below cycle r + kValueRingSize; the
  // writer stores the value for cycle c when cycles_ == c. So with `w` published cycles, only
  // cycles in (w - kValueRingSize, w) are safe to read.
  std::size_t delivered = 0;
  const std::uint64_t written = cycles_.load(std::memory_order_acquire);
  if (written - read_index_ >= kValueRingSize) {  // lapped: skip what was overwritten
    verbose_drops_ += written - read_index_ - (kValueRingSize - 1);
    read_index_ = written - (kValueRingSize - 1);
  }
  while (read_index_ < written) {
    // Acquire pairs with the writer's release store of the slot: if this load saw a newer
    // occupant, the cycles_ load below sees that the writer got there.
    const std::int64_t value =
        values_[read_index_ & (kValueRingSize - 1)].load(std::memory_order_acquire);
    if (cycles_.load(std::memory_order_relaxed) - read_index_ >= kValueRingSize) {
      ++verbose_drops_;
      ++read_index_;
      continue;
    }
    fn(read_index_, value);
    ++read_index_;
    ++delivered;
  }
  return delivered;
}

}  // namespace rtloop::cyclic
