// CyclicRecorder: cyclictest's per-thread measurement state (struct thread_stat, CYCLICTEST-2.4.md
// §1.2), kept by a CycleObserver on the task's RT thread from the executor's own measurement.
//
//   rtloop::cyclic::BreakLatch latch;                       // shared by all threads (-b)
//   rtloop::cyclic::RecorderConfig rc;
//   rc.index = 0;
//   rc.histogram_buckets = 400;                             // -h 400
//   rc.break_latch = &latch;
//   rtloop::Result<std::unique_ptr<CyclicRecorder>> rec = CyclicRecorder::Create(rc);
//   task_config.observer = rec->get();                     // one recorder per task
//   ... main thread, every 10 ms: rec->Snapshot(), rec->DrainValues(...), latch.hit() ...
//   ... at the end: ThreadReport r; rec->FillReport(r);
//
// Per sample (after the first `warmup_cycles` cycles, which are only counted): diff =
// calcdiff(now, next) in us (the ns part truncated toward zero, as rt-utils does it) or
// calcdiff_ns with -N, where next = the release time E_k and now = E_k + wake-up latency. Then,
// in cyclictest's order: min/max (a new max bumps new_max_count() for -M), avg += diff (double),
// --spike record, -b break, act = diff, -v ring, -h histogram (overflows and their cycle
// indices, at most `histogram_buckets` of them), cycles++.
//
// Threading: OnRtThreadStart()/OnCycle() run on the one RT thread of the task this recorder
// observes (single writer; one recorder per task). Everything is stored in atomics: the writer
// uses relaxed stores and publishes `cycles` with release; readers (any thread) use acquire/
// relaxed loads, so a snapshot's fields are individually exact but may come from adjacent
// cycles. DrainValues() has one reader thread. FillReport()/Spikes() may run concurrently with
// the writer but give exact results only after the RT thread stopped. All memory is allocated
// and touched in Create(); OnCycle() is RT-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cyclic_report.h"
#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop::cyclic {

// The -b latch shared by all recorders of a run: the first sample over the limit, in any thread,
// trips it (cyclictest's break_thread_id/value); later ones are ignored. The runner polls hit()
// and stops the run. RT-safe (one compare-exchange), lock-free.
class BreakLatch {
 public:
  // RT-safe. True when this call tripped the latch.
  bool TryTrip(int tid, std::int64_t value) noexcept;
  // Any thread. RT-safe.
  bool hit() const noexcept { return state_.load(std::memory_order_acquire) == kTripped; }
  // Any thread; {hit=false} until tripped.
  BreakTrace Get() const noexcept;

 private:
  static constexpr int kIdle = 0;
  static constexpr int kWriting = 1;
  static constexpr int kTripped = 2;
  std::atomic<int> state_{kIdle};
  std::atomic<int> tid_{0};
  std::atomic<std::int64_t> value_{0};
};

struct RecorderConfig {
  int index = 0;                        // thread number (T:, spike lines)
  bool nsecs = false;                   // -N: diff in ns (calcdiff_ns), else us (calcdiff)
  std::uint32_t histogram_buckets = 0;  // -h/-H N: buckets 0..N-1 (1 us, or 1 ns with -N); 0: off
  bool verbose = false;                 // -v: keep the kValueRingSize ring of samples
  std::int64_t spike_threshold = 0;     // --spike=N: record samples > N; 0: off
  std::uint32_t spike_nodes = 1024;     // --spike-nodes: list capacity (the total keeps counting)
  std::int64_t break_threshold = 0;     // -b N: trip break_latch on the first sample > N; 0: off
  BreakLatch* break_latch = nullptr;    // required when break_threshold > 0; outlives the recorder
  std::uint64_t warmup_cycles = 0;      // --warmup=N: first N cycles excluded from all statistics
  bool track_percentiles = true;        // keep an HDR histogram of the latency (~224 KiB, ~3 ns)
};

// A consistent-enough copy of the live state (see the header comment).
struct RecorderSnapshot {
  int tid = 0;                 // 0 until OnRtThreadStart()
  std::uint64_t cycles = 0;    // samples in the statistics
  std::int64_t min = 1000000;  // cyclictest's initial value until the first sample
  std::int64_t act = 0;
  double avg_sum = 0.0;
  std::int64_t max = 0;
  std::uint64_t warmup_cycles = 0;  // cycles seen during warm-up (<= config.warmup_cycles)
  std::uint64_t histogram_overflows = 0;
  std::uint64_t spikes = 0;           // total spikes, recorded or not
  std::uint64_t new_max_count = 0;    // new maxima so far (-M)
  std::uint64_t overruns = 0;         // after warm-up
  std::uint64_t missed_releases = 0;  // after warm-up
};

class CyclicRecorder final : public CycleObserver {
 public:
  // -v ring size (cyclictest's VALBUF_SIZE).
  static constexpr std::size_t kValueRingSize = 16384;
  // cyclictest's HIST_MAX.
  static constexpr std::uint32_t kMaxHistogramBuckets = 1000000;

  // Validates `config` and allocates (and touches) every buffer; an allocation failure is
  // ResourceExhausted naming what could not be allocated. Not RT-safe.
  static Result<std::unique_ptr<CyclicRecorder>> Create(const RecorderConfig& config);
  // The bytes Create() allocates for `config` (buffers, not the object itself): what a
  // configuration needs can be checked before anything is allocated. RT-safe.
  static std::uint64_t MemoryBytes(const RecorderConfig& config) noexcept;

  // RT thread, set-up: records the kernel TID (gettid). Not RT-safe (a syscall), by design.
  void OnRtThreadStart(TaskId task) override;
  // RT thread, every cycle. RT-safe.
  void OnCycle(const CycleSample& sample) noexcept override;

  // The sample value cyclictest computes for a wake-up `latency_ns` after `release` (calcdiff or,
  // with `nsecs`, calcdiff_ns). RT-safe.
  static std::int64_t Diff(TimePoint release, std::int64_t latency_ns, bool nsecs) noexcept;

  // Any thread. RT-safe.
  RecorderSnapshot Snapshot() const noexcept;
  // Any thread. RT-safe. Incremented on each new max (after warm-up): -M polls it for changes.
  std::uint64_t new_max_count() const noexcept {
    return new_max_count_.load(std::memory_order_acquire);
  }
  const RecorderConfig& config() const noexcept { return config_; }

  // -v: calls fn(cycle, value) for every sample not yet drained, oldest first. Samples the RT
  // thread overwrote before they were read are skipped and counted in verbose_drops() (cyclictest
  // would print overwritten values). One reader thread only. Returns the number delivered.
  template <typename Fn>
  std::size_t DrainValues(Fn&& fn);
  // -v samples lost to ring wrap-around so far (reader thread).
  std::uint64_t verbose_drops() const noexcept { return verbose_drops_; }

  // Fills every field this recorder knows: index, tid, cycles, min, act, avg_sum, max,
  // histogram, overflows, overflow cycles, warmup_cycles, overruns, missed_releases,
  // verbose_drops, execution time, latency percentiles (from an HDR histogram of the wake-up
  // latency in ns, within 0.1%). Leaves priority, interval_us, cpu, node, policy, ring_drops and
  // smi_count as they are. Not RT-safe (allocates).
  void FillReport(ThreadReport& report) const;
  // Wake-up latency percentiles so far (ns, HDR histogram: within 0.1%; max exact). Any thread;
  // one pass over ~28k buckets, so call it at the end or at most a few times a second.
  // {valid=false} without track_percentiles or samples.
  LatencyPercentiles Percentiles() const noexcept;
  // The wake-up latency (ns) at `percentile` (0..100], e.g. for --fail-percentile; 0 when there
  // is no sample or track_percentiles is off. Any thread; one pass over the buckets.
  std::int64_t LatencyAtPercentile(double percentile) const noexcept;
  // The recorded spikes (at most spike_nodes), in order. Not RT-safe.
  std::vector<SpikeEvent> Spikes() const;

  CyclicRecorder(const CyclicRecorder&) = delete;
  CyclicRecorder& operator=(const CyclicRecorder&) = delete;
  ~CyclicRecorder() override;

 private:
  explicit CyclicRecorder(const RecorderConfig& config);

  using U64 = std::atomic<std::uint64_t>;
  using I64 = std::atomic<std::int64_t>;

  const RecorderConfig config_;
  std::atomic<int> tid_{0};

  // Written by the RT thread only; on their own cache lines, away from the reader's fields.
  alignas(64) U64 cycles_{0};  // published last, with release
  I64 min_{1000000};
  I64 max_{0};
  I64 act_{0};
  std::atomic<double> avg_sum_{0.0};
  U64 warmup_seen_{0};
  U64 new_max_count_{0};
  U64 histogram_overflows_{0};
  U64 num_outliers_{0};
  U64 spikes_{0};
  U64 overruns_{0};
  U64 missed_releases_{0};
  I64 execution_min_ns_{0};
  I64 execution_max_ns_{0};
  I64 execution_sum_ns_{0};
  bool break_seen_ = false;  // RT thread only: this thread already went over the -b limit

  // Wake-up latency in ns (after warm-up) for the percentiles of --percentiles and JSON "rtloop".
  std::unique_ptr<telemetry::LatencyHistogram> latency_histogram_;  // track_percentiles
  std::unique_ptr<U64[]> histogram_;                                // histogram_buckets
  std::unique_ptr<U64[]> outliers_;  // histogram_buckets overflow cycle indices
  std::unique_ptr<I64[]> values_;    // kValueRingSize (-v)
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
std::size_t CyclicRecorder::DrainValues(Fn&& fn) {
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
