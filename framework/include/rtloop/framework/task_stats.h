// Per-task statistics (the words are defined in framework/README.md, "Measurement"), written by
// the task's RT thread and readable from any thread while it runs. TaskStats is the one owner of a
// task's counts, min/max/sum/last values, overruns, missed releases, faults and state: telemetry
// reads them from here and adds only what it alone has (histograms, percentiles, ring accounting).
//
//   const rtloop::TaskStatsSnapshot s = executor->Stats(id);   // any thread, any time
//   if (!s.has_data()) std::printf("no data\n");               // no cycle yet: no min/max/avg
//   else std::printf("%llu cycles, max latency %lld ns\n", (unsigned long long)s.cycles,
//                    (long long)s.latency_max_ns);
//
// "No data" is a state of its own: before the first cycle (has_data() false) the min/max/last
// fields hold 0 and the averages are std::nullopt; show "no data", never a 0 latency. Period
// jitter needs two wake-ups (has_jitter()).
//
// Threading: TaskStats is a single-writer store. Only the owning RT thread calls Record(),
// RecordFault() and RecordWatchdogViolation(): plain relaxed loads and stores of its own values (no
// atomic read-modify-write, no lock), so readers never slow it down. Snapshot() may be called from
// any thread concurrently. The writer stores `cycles` last with release and Snapshot() loads it
// first with acquire, so a snapshot includes every value of the cycles it counts; its other fields
// may already include (part of) the next cycle, e.g. latency_sum_ns one cycle ahead of cycles. The
// last fault is a SeqLockValue (the RT thread never waits; Snapshot() makes a few bounded
// attempts). All counters are 64-bit.
//
// Statistics reset (RequestReset(), Executor::ResetStats(), rtloop::Runtime::ResetStats(), the
// gRPC ResetStats call): clears the min/max figures (wake-up latency, execution time, period
// jitter) and keeps every total: cycles, warm-up cycles, overruns, missed releases, faults and
// the last fault, watchdog violations and trips, the sums (so the averages stay the exact
// all-time means), the last values, the state. The RT thread never waits for it: a reset is a
// request counter any thread bumps; the RT thread compares it with the one it applied at its next
// Record() (one relaxed load per cycle) and restarts min/max from that cycle. Until then (and for a
// task that runs no more cycles) Snapshot() reports the min/max as absent (has_min_max false),
// never the figures from before the reset.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/seqlock_value.h"

namespace rtloop {

enum class TaskState {
  kCreated,   // added, not started
  kStarting,  // thread created, scheduling being applied, OnStart() running
  kRunning,
  kStopped,  // Step() returned kStop, max_cycles reached, or the executor stopped
  // The watchdog tripped (and keep_running_after_fault is false), Step() returned kFault, or
  // OnStart() failed.
  kFault,
};

// "created", "starting", "running", "stopped", "fault". RT-safe.
const char* TaskStateName(TaskState state) noexcept;

// Why a task faulted.
enum class FaultReason : std::uint8_t {
  kNone,            // no fault yet
  kOverruns,        // WatchdogConfig::max_consecutive_overruns overruns in a row
  kWatchdog,        // execution time > WatchdogConfig::time, `sensitivity` cycles in a row
  kWatchdogSingle,  // one cycle's execution time > WatchdogConfig::time x sensitivity
  kStep,            // Step() returned StepResult::kFault
};

// "none", "overruns", "watchdog", "watchdog-single-cycle", "step". RT-safe.
const char* FaultReasonName(FaultReason reason) noexcept;

// One fault, as the RT thread records it (TaskStats::RecordFault) and every view shows it.
struct FaultRecord {
  FaultReason reason = FaultReason::kNone;
  // The cycle's 0-based Step() index (CycleContext::cycle: warm-up cycles included).
  std::uint64_t cycle = 0;
  // When the cycle's Step() ended (D_k), ns on the task's clock (CLOCK_MONOTONIC unless
  // TaskConfig::clock says otherwise).
  std::int64_t time_ns = 0;
  // The same moment from the task's first release E_0 (D_k - E_0): the "t=" every view shows.
  std::int64_t since_start_ns = 0;
  std::int64_t execution_ns = 0;  // that cycle's execution time X_k
  // kOverruns: overruns in a row; kWatchdog/kWatchdogSingle: violations in a row; else 0.
  std::uint32_t consecutive = 0;
  // The limit it broke: the watchdog time (kWatchdog, kWatchdogSingle), else 0.
  std::int64_t limit_ns = 0;
};

struct TaskStatsSnapshot {
  TaskState state = TaskState::kCreated;
  int tid = 0;               // kernel thread id of the RT thread; 0 before it started
  std::uint64_t cycles = 0;  // measured cycles: Step() calls after the warm-up
  // Cycles run before the statistics began (TaskConfig::warmup_cycles); in none of the figures.
  std::uint64_t warmup_cycles = 0;
  // Wake-up latency and execution time: min/max/sum/last over all cycles; meaningful only when
  // has_data() (0 otherwise, which is not a measurement).
  std::int64_t latency_min_ns = 0;
  std::int64_t latency_max_ns = 0;
  std::int64_t latency_sum_ns = 0;
  std::int64_t latency_last_ns = 0;
  std::int64_t execution_min_ns = 0;
  std::int64_t execution_max_ns = 0;
  std::int64_t execution_sum_ns = 0;
  std::int64_t execution_last_ns = 0;
  // Period jitter, from the second cycle on; meaningful only when has_jitter().
  std::int64_t jitter_min_ns = 0;
  std::int64_t jitter_max_ns = 0;
  std::int64_t jitter_last_ns = 0;
  std::uint64_t overruns = 0;
  std::uint64_t missed_releases = 0;
  std::uint64_t faults = 0;  // watchdog trips and Step()s that returned kFault
  // The latest of them (reason kNone while faults == 0). It may be one fault newer than
  // `faults` when a fault happens during the snapshot.
  FaultRecord last_fault;
  // Execution-time watchdog (WatchdogConfig::time): cycles whose execution time exceeded the
  // watchdog time, and trips (kWatchdog and kWatchdogSingle faults). 0 while it is off.
  std::uint64_t watchdog_violations = 0;
  std::uint64_t watchdog_trips = 0;
  // Statistics resets requested so far (TaskStats::RequestReset). The min/max fields cover the
  // cycles since the last one (all cycles when 0).
  std::uint64_t resets = 0;
  // A reset cleared the latency/execution min/max and no cycle has recorded new ones yet (the
  // fields hold 0, which is not a measurement); the jitter min/max likewise. Read them through
  // has_min_max() / has_jitter_min_max().
  bool min_max_cleared = false;
  bool jitter_min_max_cleared = false;

  // RT-safe, all of them.
  // At least one cycle ran: the latency and execution figures exist.
  bool has_data() const noexcept { return cycles > 0; }
  // Two wake-ups, the second one measured: the jitter figures exist.
  bool has_jitter() const noexcept { return cycles > 0 && cycles + warmup_cycles > 1; }
  // The latency/execution min/max fields hold figures: a measured cycle ran since the start or
  // the last reset (has_data() alone does not say so after a reset). Show "no data" otherwise.
  bool has_min_max() const noexcept { return has_data() && !min_max_cleared; }
  // The same for the jitter min/max.
  bool has_jitter_min_max() const noexcept { return has_jitter() && !jitter_min_max_cleared; }
  // Mean wake-up latency / execution time; nullopt without data.
  std::optional<double> latency_avg_ns() const noexcept {
    if (!has_data()) return std::nullopt;
    return static_cast<double>(latency_sum_ns) / static_cast<double>(cycles);
  }
  std::optional<double> execution_avg_ns() const noexcept {
    if (!has_data()) return std::nullopt;
    return static_cast<double>(execution_sum_ns) / static_cast<double>(cycles);
  }
  // max - min of the period jitter; nullopt before two cycles (or after a reset until the next).
  std::optional<std::int64_t> jitter_range_ns() const noexcept {
    if (!has_jitter_min_max()) return std::nullopt;
    return jitter_max_ns - jitter_min_ns;
  }
};

// The one road to a task's counters: whoever reads them (the telemetry hub, the reports, the
// servers) reads them through a TaskStatsReader, and the executor is the one every program has.
// Tests implement it to feed statistics of their own. Stats() is called from any thread at any
// time, RT-safe in the executor's implementation; an unknown id gives a snapshot in state kCreated
// without data.
//   const rtloop::TaskStatsReader& stats = *executor;
//   hub.AttachStats(stats);   // rtloop/telemetry/task_telemetry.h
class TaskStatsReader {
 public:
  virtual TaskStatsSnapshot Stats(TaskId id) const noexcept = 0;

 protected:
  ~TaskStatsReader() = default;
};

// The live store. Written only by the owning RT thread (RT-safe methods), read by anyone.
class alignas(64) TaskStats {
 public:
  // RT-safe. Records one cycle. `first` marks the task's first cycle (no jitter yet).
  void Record(std::int64_t latency_ns, std::int64_t execution_ns, std::int64_t jitter_ns,
              bool first, bool overrun, std::uint64_t missed) noexcept;
  // RT-safe. Counts one warm-up cycle (TaskConfig::warmup_cycles): run, not measured.
  void RecordWarmup() noexcept;
  // RT-safe. Records one fault (a watchdog trip, or a Step() that returned kFault): stores
  // `fault` as the last one, then counts it (a reader that sees the count sees the record).
  void RecordFault(const FaultRecord& fault) noexcept;
  // RT-safe. Counts one cycle whose execution time exceeded the watchdog time.
  void RecordWatchdogViolation() noexcept;
  // Any thread, RT-safe (one atomic increment; the RT thread is never waited for). Asks the RT
  // thread to restart min/max (see "Statistics reset" above); applied at its next Record().
  void RequestReset() noexcept { reset_requested_.fetch_add(1, std::memory_order_acq_rel); }
  // RT-safe. Set by the executor on the task's thread as its lifecycle moves on.
  void SetState(TaskState state) noexcept { state_.store(state, std::memory_order_release); }
  void SetTid(int tid) noexcept { tid_.store(tid, std::memory_order_relaxed); }
  // Any thread. RT-safe (relaxed loads only).
  TaskStatsSnapshot Snapshot() const noexcept;
  TaskState state() const noexcept { return state_.load(std::memory_order_acquire); }

 private:
  using I64 = std::atomic<std::int64_t>;
  using U64 = std::atomic<std::uint64_t>;
  // What Record() touches every cycle first, in two 64-byte lines (the class is aligned to 64:
  // the fewer lines a cold wake-up fetches, bench/rtcost/README.md); the rarer counters after.
  U64 cycles_{0};
  // Reset requests (any thread) and the last one the RT thread applied (RT thread only).
  U64 reset_requested_{0};
  U64 reset_applied_{0};
  I64 latency_min_{std::numeric_limits<std::int64_t>::max()};
  I64 latency_max_{std::numeric_limits<std::int64_t>::min()};
  I64 latency_sum_{0};
  I64 latency_last_{0};
  I64 execution_min_{std::numeric_limits<std::int64_t>::max()};
  I64 execution_max_{std::numeric_limits<std::int64_t>::min()};
  I64 execution_sum_{0};
  I64 execution_last_{0};
  I64 jitter_min_{std::numeric_limits<std::int64_t>::max()};
  I64 jitter_max_{std::numeric_limits<std::int64_t>::min()};
  I64 jitter_last_{0};
  U64 overruns_{0};
  U64 missed_{0};
  std::atomic<TaskState> state_{TaskState::kCreated};
  std::atomic<int> tid_{0};
  U64 warmup_{0};
  U64 faults_{0};
  U64 watchdog_violations_{0};
  U64 watchdog_trips_{0};
  SeqLockValue<FaultRecord> last_fault_;  // written before faults_ is counted

  // Record()'s reset: min/max restart, then reset_applied_ = `req` (release). RT-safe.
  [[gnu::noinline, gnu::cold]] void RestartMinMax(std::uint64_t req) noexcept;
};

namespace task_stats_internal {

// Single-writer updates: a relaxed load of our own last store plus a relaxed store. No atomic
// read-modify-write (no lock prefix), so the RT thread never contends with readers.
template <typename T>
inline void Add(std::atomic<T>& a, T d) noexcept {
  a.store(static_cast<T>(a.load(std::memory_order_relaxed) + d), std::memory_order_relaxed);
}
inline void Min(std::atomic<std::int64_t>& a, std::int64_t v) noexcept {
  if (v < a.load(std::memory_order_relaxed)) a.store(v, std::memory_order_relaxed);
}
inline void Max(std::atomic<std::int64_t>& a, std::int64_t v) noexcept {
  if (v > a.load(std::memory_order_relaxed)) a.store(v, std::memory_order_relaxed);
}

}  // namespace task_stats_internal

// Inline, always: the RT thread calls it every cycle, with seven arguments
// (bench/rtcost/README.md).
[[gnu::always_inline]] inline void TaskStats::Record(std::int64_t latency_ns,
                                                     std::int64_t execution_ns,
                                                     std::int64_t jitter_ns, bool first,
                                                     bool overrun, std::uint64_t missed) noexcept {
  if (const std::uint64_t req = reset_requested_.load(std::memory_order_acquire);
      req != reset_applied_.load(std::memory_order_relaxed)) [[unlikely]] {
    // A reset was asked for: min/max restart with this cycle. Stored before reset_applied_
    // (release), so a reader that sees the reset applied sees them restarted.
    // Out of line: the initializer lists this took inline were built on every cycle's path.
    RestartMinMax(req);
    // Orders the store above before every later min/max store (this cycle's and the next ones'):
    // a reader that sees a min/max of the new run and then fences also sees this reset applied,
    // so it never takes a new value for one of the old run (Snapshot()). Only on a reset's cycle.
    std::atomic_thread_fence(std::memory_order_release);
  }
  task_stats_internal::Min(latency_min_, latency_ns);
  task_stats_internal::Max(latency_max_, latency_ns);
  task_stats_internal::Add(latency_sum_, latency_ns);
  latency_last_.store(latency_ns, std::memory_order_relaxed);
  task_stats_internal::Min(execution_min_, execution_ns);
  task_stats_internal::Max(execution_max_, execution_ns);
  task_stats_internal::Add(execution_sum_, execution_ns);
  execution_last_.store(execution_ns, std::memory_order_relaxed);
  if (!first) {
    task_stats_internal::Min(jitter_min_, jitter_ns);
    task_stats_internal::Max(jitter_max_, jitter_ns);
    jitter_last_.store(jitter_ns, std::memory_order_relaxed);
  }
  if (overrun) task_stats_internal::Add<std::uint64_t>(overruns_, 1);
  if (missed != 0) task_stats_internal::Add(missed_, missed);
  // Last, with release: a reader that sees this cycle count also sees the values above.
  cycles_.store(cycles_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

}  // namespace rtloop
