// CyclicThreadStats: what cyclictest keeps per measurement thread (its struct thread_stat,
// bench/cyclic/CYCLICTEST-2.4.md §2) and rtloop's executor does not: cyclictest's own sample
// statistics (C:, Min, Act, Avg, Max of its sample value), the linear -h histogram with its
// overflow list, the -v ring, the --spike list, -M's new-max count and the -b break. Computed off
// the measurement task's RT thread, from the samples its telemetry ring carries: a
// telemetry::TaskSampleObserver of the task (rtloop-cyclic's way, bench/rtcost/README.md "Third
// step"). It can also be a CycleObserver on the RT thread (OnCycle(): the same figures, per cycle;
// tests compare the two).
//
//   rtloop::cyclic::BreakLatch latch;                       // shared by all threads (-b)
//   rtloop::cyclic::CyclicStatsConfig sc;
//   sc.index = 0;
//   sc.histogram_buckets = 400;                             // -h 400
//   sc.break_threshold = 50;                                // -b 50
//   sc.break_latch = &latch;
//   Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(sc);
//   CyclicThreadTask task(&latch);                          // ends at the first release after -b
//   Result<TaskId> id = runtime->AddTask(task, task_config);
//   runtime->hub()->SetSampleObserver(*id, stats->get());   // before runtime->Start()
//   ... main thread, every 10 ms: runtime->hub()->Drain() first (the figures are as recent as the
//       last drain), then (*stats)->Snapshot(), (*stats)->DrainValues(...), latch.hit()
//   ... at the end (runtime stopped): (*stats)->DrainValues(..., true); (*stats)->FillReport(r);
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
//     executor and the hub count each thread's cycles until it stopped (those until the drain
//     that trips the latch, about 10 ms in rtloop-cyclic, and the one whose Step() sees it, see
//     CyclicThreadTask).
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
// `histogram_buckets` of them), cycles++. Samples after a -b break are left out (BreakLatch). The
// cycle index of a sample (-v, the overflow list) is its seq: seqs count the measured cycles from
// 0 (warm-up cycles are no samples), as cyclictest's cycle count does.
//
// Two writers, each exact for what it records:
//   - the in-order writer: OnDrained() (the ring's consumer: the collector's drain pass, or a
//     reader's TelemetryHub::Drain()) or OnCycle() (an RT observer), in seq order. The drained
//     Sample carries what calcdiff needs: the release (ns) and the latency (ns, exact within
//     +-2.1 s); a saturated one is skipped (the RT thread recorded it).
//   - the RT thread, OnRefused(): a cycle the full ring refused, or one the Sample cannot hold.
//     It is recorded when it happens, before the older samples still in the ring. C:, Min, Max,
//     the sum, the histogram and its overflow count, the spike total do not depend on the order;
//     Act is the value of the highest seq recorded by either writer; the -v ring places a value
//     by its cycle index (behind a per-slot tag) and delivers it in order (DrainValues()), but a
//     refused value more than a ring (kValueRingSize) ahead of the drain is left out of -v and
//     counted in verbose_drops(); the overflow list and the spike list are sorted by cycle and
//     time when read, but when more overflows or spikes occur than they hold, which ones are
//     listed follows the order of recording (cyclictest: the first ones), a difference only with
//     refused samples; -b trips on a refused sample at once.
// Each writer keeps its own scalar figures (a reader adds them); the histogram and the lists'
// claim counters are shared (atomic read-modify-writes); a -v slot has one writer at a time.
//
// -b: the in-order writer trips the latch when it reaches the breaking sample, i.e. at the drain
// after it (README.md, "Deliberate deviations"). Samples of the breaking thread after it, and
// samples of other threads that woke after it (release + latency on the run's clock), are left
// out when recorded after the trip. Recorded before the trip, they stay in: other threads'
// samples a drain took before the one that saw the break (at most one drain period's: the runner
// drains every 10 ms), and refused samples of the breaking thread that followed it while it was
// still in the full ring.
//
// Threading: OnDrained() (or OnCycle()) on one thread at a time; OnRefused() on the task's RT
// thread. Everything is stored in atomics: each writer uses relaxed stores and publishes its
// count and its -v watermark with release; readers (any thread) use acquire/relaxed loads, so a
// snapshot's fields are individually exact but may come from adjacent cycles. DrainValues() has one
// reader thread. FillReport()/Spikes() may run concurrently with the writers but give exact results
// only after both stopped. All memory is allocated and touched in Create(); OnCycle(), OnDrained()
// and OnRefused() are RT-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cyclic_report.h"
#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::cyclic {

// cyclictest's sample value for a wake-up `latency_ns` after `release`: calcdiff(now, next) in us
// or, with `nsecs` (-N), calcdiff_ns. RT-safe.
std::int64_t CyclictestDiff(TimePoint release, std::int64_t latency_ns, bool nsecs) noexcept;

// The -b latch shared by all threads of a run: the first sample over the limit, in any thread,
// trips it (cyclictest's break_thread_id/value); later ones are ignored. The runner polls hit()
// and ends the run; every observer of cyclictest's figures leaves later samples out (Excludes(),
// ExcludesSample()). Lock-free; every method is RT-safe.
class BreakLatch {
 public:
  struct Trip {
    bool hit = false;
    int thread = 0;         // index of the thread whose sample broke the limit
    std::uint64_t seq = 0;  // that sample's CycleSample::seq
    std::int64_t value = 0;
    std::int64_t wake_ns = 0;  // its wake-up: release + latency, ns on the run's clock
  };

  // True when this call tripped the latch.
  bool TryTrip(int thread, std::uint64_t seq, std::int64_t value,
               std::int64_t wake_ns = 0) noexcept;
  bool hit() const noexcept { return state_.load(std::memory_order_acquire) == kTripped; }
  // For an observer on the RT thread: true for a sample after the break: the latch tripped, on
  // another sample. The breaking sample itself counts for every observer of its thread, whichever
  // asks first.
  bool Excludes(int thread, std::uint64_t seq) const noexcept;
  // For a sample recorded after it happened (CyclicThreadStats): true once the latch tripped for a
  // later sample of the breaking thread (seq above the breaking one) and for a sample of another
  // thread that woke after the breaking sample (`wake_ns` later than Trip::wake_ns).
  bool ExcludesSample(int thread, std::uint64_t seq, std::int64_t wake_ns) const noexcept;
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
  std::atomic<std::int64_t> wake_ns_{0};
};

// The task of one measurement thread. Like rtloop::CyclicTask its Step() does nothing (the
// measurement is the executor's own), except that once `latch` has tripped it returns kStop: every
// thread ends at its first release after the -b latch tripped (at the drain after the breaking
// sample), as cyclictest's threads leave their loop.
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

class CyclicThreadStats final : public CycleObserver, public telemetry::TaskSampleObserver {
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

  // The in-order writer: as a CycleObserver, on the RT thread, every measured cycle. RT-safe.
  void OnCycle(const CycleSample& sample) noexcept override;
  // The in-order writer: as the task's TaskSampleObserver, the samples just drained from its ring
  // (seq order; saturated ones skipped). One thread at a time. RT-safe (no allocation or lock).
  void OnDrained(std::span<const telemetry::Sample> samples) noexcept override;
  // The task's RT thread: a sample the ring refused or could not hold. RT-safe.
  void OnRefused(const CycleSample& sample) noexcept override;

  // Any thread. RT-safe.
  CyclicStatsSnapshot Snapshot() const noexcept;
  // Any thread. RT-safe. Incremented on each new max of either writer: -M polls it for changes.
  std::uint64_t new_max_count() const noexcept {
    return ordered_.new_max_count.load(std::memory_order_acquire) +
           refused_.new_max_count.load(std::memory_order_acquire);
  }
  const CyclicStatsConfig& config() const noexcept { return config_; }

  // -v: calls fn(cycle, value) for every sample not yet drained, oldest first, up to the in-order
  // writer's last one (a refused sample after it is settled only when that writer gets past it),
  // or, with `all` (once both writers stopped: the run's end), up to the last sample recorded.
  // Samples a writer overwrote before they were read are skipped and counted in verbose_drops()
  // (cyclictest would print overwritten values). One reader thread only. Returns the number
  // delivered.
  template <typename Fn>
  std::size_t DrainValues(Fn&& fn, bool all = false);
  // -v samples lost to ring wrap-around so far (reader thread).
  std::uint64_t verbose_drops() const noexcept { return verbose_drops_; }

  // Fills the fields this object owns: index, cycles, min, act, avg_sum, max, histogram,
  // histogram_overflows, overflow_cycles and verbose_drops. The others come from their owners
  // (the runner fills tid and the executor's and telemetry's figures). Not RT-safe (allocates).
  void FillReport(ThreadReport& report) const;
  // The recorded spikes (at most spike_nodes), in order of their time. Not RT-safe.
  std::vector<SpikeEvent> Spikes() const;

  CyclicThreadStats(const CyclicThreadStats&) = delete;
  CyclicThreadStats& operator=(const CyclicThreadStats&) = delete;
  ~CyclicThreadStats() override;

 private:
  using U64 = std::atomic<std::uint64_t>;
  using I64 = std::atomic<std::int64_t>;

  // One writer's scalar figures (the readers add the two), on their own cache lines.
  struct alignas(64) Part {
    U64 cycles{0};  // published last, with release
    I64 min{1000000};
    I64 max{0};
    I64 act{0};
    U64 act_seq{0};
    std::atomic<double> sum{0.0};
    U64 new_max_count{0};
    U64 next{0};  // seq + 1 of the last sample recorded (-v watermark), after its slot, release
    U64 high{0};  // seq + 1 of the last -v slot this writer wrote
    bool break_seen = false;  // this writer already saw this thread go over the -b limit
  };

  explicit CyclicThreadStats(const CyclicStatsConfig& config);
  // Records one sample (exact values) for `part`'s writer.
  void Record(Part& part, std::uint64_t seq, std::int64_t release_ns,
              std::int64_t latency_ns) noexcept;
  void RecordHistogram(std::int64_t diff, std::uint64_t cycle) noexcept;
  void RecordSpike(std::int64_t wake_ns, std::int64_t diff) noexcept;
  std::uint64_t HighestWritten() const noexcept {
    return std::max(ordered_.high.load(std::memory_order_relaxed),
                    refused_.high.load(std::memory_order_relaxed));
  }

  const CyclicStatsConfig config_;

  Part ordered_;  // OnDrained() / OnCycle()
  Part refused_;  // OnRefused(), the RT thread
  // Shared by both writers (read-modify-writes): totals that claim list slots.
  alignas(64) U64 histogram_overflows_{0};  // also the overflow list's claims
  U64 spikes_{0};                           // also the spike list's claims

  std::unique_ptr<U64[]> histogram_;  // histogram_buckets
  std::unique_ptr<U64[]> outliers_;   // histogram_buckets overflow cycle indices
  // -v: slot c % kValueRingSize holds cycle c's value, tagged c + 1 (0: being written). A
  // per-slot sequence lock: the tag is stored before and after the value, so a reader knows
  // whether the value it read is cycle c's. Two writers never write one slot at once: the RT
  // thread writes a refused cycle's slot only while it is less than a ring ahead of the in-order
  // writer (else the value is left out of -v and counted as a drop by the reader).
  struct ValueSlot {
    U64 tag{0};
    I64 value{0};
  };
  std::unique_ptr<ValueSlot[]> values_;  // kValueRingSize
  void StoreValue(Part& part, std::uint64_t cycle, std::int64_t value) noexcept;
  // Cycle `cycle`'s -v value, or false when its slot holds another cycle's (overwritten, or never
  // written). The reader thread.
  bool LoadValue(std::uint64_t cycle, std::int64_t* value) const noexcept;
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
std::size_t CyclicThreadStats::DrainValues(Fn&& fn, bool all) {
  if (!values_) return 0;
  // Every cycle below the in-order writer's watermark is settled: it recorded them in order, and
  // each refused one was recorded by the RT thread before it pushed the next sample. A settled
  // cycle's slot holds its value unless a writer got a ring ahead since (or the RT thread, too far
  // ahead, left it out): the slot's tag says which.
  std::size_t delivered = 0;
  const std::uint64_t ordered = ordered_.next.load(std::memory_order_acquire);
  const std::uint64_t written =
      all ? std::max(ordered, refused_.next.load(std::memory_order_acquire)) : ordered;
  const std::uint64_t highest = HighestWritten();
  if (highest > read_index_ && highest - read_index_ >= kValueRingSize) {  // lapped: skip at once
    verbose_drops_ += highest - read_index_ - (kValueRingSize - 1);
    read_index_ = highest - (kValueRingSize - 1);
  }
  for (; read_index_ < written; ++read_index_) {
    std::int64_t value = 0;
    if (!LoadValue(read_index_, &value)) {
      ++verbose_drops_;
      continue;
    }
    fn(read_index_, value);
    ++delivered;
  }
  return delivered;
}

}  // namespace rtloop::cyclic
