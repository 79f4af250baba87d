// Per-task statistics (DESIGN.md §3), written by the task's RT thread and readable from any thread
// while it runs.
//
//   const rtloop::TaskStatsSnapshot s = executor->Stats(id);   // any thread, any time
//   std::printf("%llu cycles, max latency %lld ns\n", (unsigned long long)s.cycles,
//               (long long)s.latency_max_ns);
//
// Threading: TaskStats is a single-writer store. Only the owning RT thread calls Record() and
// RecordFault(): plain relaxed loads and stores of its own values (no atomic read-modify-write, no
// lock), so readers never slow it down. Snapshot() may be called from any thread concurrently.
// The writer stores `cycles` last with release and Snapshot() loads it first with acquire, so a
// snapshot includes every value of the cycles it counts; its other fields may already include
// (part of) the next cycle, e.g. latency_sum_ns one cycle ahead of cycles. All counters are
// 64-bit.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

namespace rtloop {

enum class TaskState {
  kCreated,   // added, not started
  kStarting,  // thread created, scheduling being applied, OnStart() running
  kRunning,
  kStopped,  // Step() returned kStop, max_cycles reached, or the executor stopped
  kFault,    // the watchdog tripped (and keep_running_after_fault is false), or OnStart() failed
};

// "created", "starting", "running", "stopped", "fault". RT-safe.
const char* TaskStateName(TaskState state) noexcept;

struct TaskStatsSnapshot {
  TaskState state = TaskState::kCreated;
  int tid = 0;                      // kernel thread id of the RT thread; 0 before it started
  std::uint64_t cycles = 0;         // Step() calls
  std::int64_t latency_min_ns = 0;  // wake-up latency, min/max/sum over all cycles (0 if none)
  std::int64_t latency_max_ns = 0;
  std::int64_t latency_sum_ns = 0;
  std::int64_t latency_last_ns = 0;
  std::int64_t execution_min_ns = 0;  // execution time
  std::int64_t execution_max_ns = 0;
  std::int64_t execution_sum_ns = 0;
  std::int64_t execution_last_ns = 0;
  std::int64_t jitter_min_ns = 0;  // period jitter, from the second cycle on
  std::int64_t jitter_max_ns = 0;
  std::int64_t jitter_last_ns = 0;
  std::uint64_t overruns = 0;
  std::uint64_t missed_releases = 0;
  std::uint64_t faults = 0;  // watchdog trips

  double latency_avg_ns() const noexcept {
    return cycles ? static_cast<double>(latency_sum_ns) / static_cast<double>(cycles) : 0.0;
  }
  double execution_avg_ns() const noexcept {
    return cycles ? static_cast<double>(execution_sum_ns) / static_cast<double>(cycles) : 0.0;
  }
};

// The live store. Written only by the owning RT thread (RT-safe methods), read by anyone.
class TaskStats {
 public:
  // RT-safe. Records one cycle. `first` marks the task's first cycle (no jitter yet).
  void Record(std::int64_t latency_ns, std::int64_t execution_ns, std::int64_t jitter_ns,
              bool first, bool overrun, std::uint64_t missed) noexcept;
  // RT-safe. Counts one watchdog trip.
  void RecordFault() noexcept;
  // RT-safe. Set by the executor on the task's thread as its lifecycle moves on.
  void SetState(TaskState state) noexcept { state_.store(state, std::memory_order_release); }
  void SetTid(int tid) noexcept { tid_.store(tid, std::memory_order_relaxed); }
  // Any thread. RT-safe (relaxed loads only).
  TaskStatsSnapshot Snapshot() const noexcept;
  TaskState state() const noexcept { return state_.load(std::memory_order_acquire); }

 private:
  using I64 = std::atomic<std::int64_t>;
  using U64 = std::atomic<std::uint64_t>;
  std::atomic<TaskState> state_{TaskState::kCreated};
  std::atomic<int> tid_{0};
  U64 cycles_{0};
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
  U64 faults_{0};
};

}  // namespace rtloop
