// TaskConfig: how one periodic task is scheduled. Validated by Executor::AddTask() (the checks are
// in task_config.cc; each failure names the field and how to fix it).
//
//   rtloop::TaskConfig cfg;
//   cfg.name = "position";
//   cfg.period = std::chrono::microseconds(500);
//   cfg.cpus = {2};
//   cfg.policy = rtloop::SchedPolicy::kFifo;
//   cfg.priority = 90;
//   cfg.run_for = std::chrono::seconds(10);     // optional: end the task after 10 s of releases
//   cfg.observers = {&my_observer};             // optional: sees every cycle on the RT thread
//
// TaskInfo: a task as the executor runs it (its TaskConfig and the scheduling it got).
//
// Value types; no threading concerns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/time.h"

namespace rtloop {

enum class SchedPolicy { kOther, kBatch, kIdle, kFifo, kRr, kDeadline };

// "other", "batch", "idle", "fifo", "rr", "deadline". RT-safe.
const char* SchedPolicyName(SchedPolicy policy) noexcept;

// What happens after a Step() that ended after the next release (framework/README.md,
// "Measurement").
enum class OverrunPolicy {
  kSkip,      // next release = first future E on the original grid; skipped ones are counted
  kCatchUp,   // run once per missed release, back to back, keeping the grid
  kReanchor,  // next release = now + period: the grid shifts
};

// "skip", "catch-up", "re-anchor". RT-safe.
const char* OverrunPolicyName(OverrunPolicy policy) noexcept;

// How the RT thread waits for its release. kAbsolute, kPosixTimer and kTimerlat keep a fixed grid;
// the relative modes exist to reproduce cyclictest's -r and -s. In every mode but kTimerlat the
// first release is the shared start time + phase; in the relative modes each later release E_k is
// "the time just before the sleep + period" (as in cyclictest), so their wake-up latency excludes
// the loop's own time.
enum class WaitMode {
  kAbsolute,    // clock_nanosleep(TIMER_ABSTIME, E_k): the default
  kRelative,    // clock_nanosleep(relative, period) from just before the sleep (cyclictest -r)
  kNanosleep,   // nanosleep(period) (cyclictest -s)
  kPosixTimer,  // a per-thread one-shot POSIX timer (SIGALRM to this thread) + sigwait (-x)
  // read() of the kernel's timerlat_fd (Linux >= 6.5): the timerlat tracer's timer releases the
  // task, so `rtla timerlat top|hist -U` measures and auto-analyses this very thread. rtla must
  // run first (it enables the tracer for a user-space workload) with the task's period (-p) and
  // CPU (-c); the task is pinned to exactly one CPU, on CLOCK_MONOTONIC, with kSkip, a period of
  // whole microseconds from 100 us to 1 s. The kernel starts the grid at the thread's first
  // read: E_0 is about the shared start time + phase (one period after the read), not exactly.
  // When the tracer stops (rtla ends) the kernel kills the process with SIGKILL: end the task
  // first. framework/README.md, "The timerlat wait mode".
  kTimerlat,
};

// "absolute", "relative", "nanosleep", "posix-timer", "timerlat". RT-safe.
const char* WaitModeName(WaitMode mode) noexcept;

// The mode keeps a fixed grid of releases E_0 + k x period (kAbsolute, kPosixTimer, kTimerlat),
// so that a run_for of T is ceil(T / period) cycles without overruns. RT-safe.
constexpr bool KeepsGrid(WaitMode mode) noexcept {
  return mode == WaitMode::kAbsolute || mode == WaitMode::kPosixTimer ||
         mode == WaitMode::kTimerlat;
}

// What a watchdog trip does (either watchdog of WatchdogConfig). Every trip counts a fault
// (TaskStatsSnapshot::faults, last_fault), flags the cycle kCycleFault and calls the task's
// OnWatchdog() hook on its RT thread (RT-safe, as Step()); rtloop::Runtime prints it on stderr
// from a non-RT thread and makes RunUntilSignal() return a fault.
enum class WatchdogAction {
  kFaultTask,  // the task ends in TaskState::kFault after this cycle; other tasks keep running
  // As kFaultTask, then the executor stops every other task (each after its current cycle), so
  // Executor::RunUntilSignal()/Wait() and rtloop::Runtime::RunUntilSignal() return.
  kStopAll,
  kContinue,  // count it, call OnWatchdog(), keep running (the task stays kRunning)
};

// "fault-task", "stop-all", "continue". RT-safe.
const char* WatchdogActionName(WatchdogAction action) noexcept;

// The task's two watchdogs; both off by default. Checked on the RT thread after every cycle,
// warm-up cycles included, without allocation, lock or system call.
struct WatchdogConfig {
  // Overrun watchdog: this many consecutive overruns of the period trip it. 0: off.
  std::uint32_t max_consecutive_overruns = 0;
  // Execution-time watchdog, CODESYS's task watchdog: a cycle whose execution time X_k exceeds
  // `time` is a violation; `sensitivity` violations in a row trip it, and so does one cycle whose
  // execution time exceeds time x sensitivity (which catches an endless loop at once). 0: off;
  // else > 0.
  std::chrono::nanoseconds time{0};
  // 1..1000 (1: the first violation trips it). Only with `time`.
  std::uint32_t sensitivity = 1;
  WatchdogAction action = WatchdogAction::kFaultTask;
  // The older spelling of action = kContinue (then `action` must stay kFaultTask).
  bool keep_running_after_fault = false;

  // The action in force: kContinue when keep_running_after_fault is set. RT-safe.
  WatchdogAction effective_action() const noexcept {
    return keep_running_after_fault ? WatchdogAction::kContinue : action;
  }
  // Either watchdog is on. RT-safe.
  bool enabled() const noexcept { return max_consecutive_overruns != 0 || time.count() > 0; }
};

struct DeadlineParams {  // SCHED_DEADLINE; all three > 0 and runtime <= deadline <= period
  std::chrono::nanoseconds runtime{0};
  std::chrono::nanoseconds deadline{0};
  std::chrono::nanoseconds period{0};  // 0: use the task's period
};

struct TaskConfig {
  std::string name = "task";                   // shown in messages, telemetry and tools
  std::chrono::nanoseconds period{1'000'000};  // > 0
  std::chrono::nanoseconds phase{0};           // offset of E_0 from the executor's start time, >= 0
  std::vector<int> cpus;  // CPUs the thread may run on; empty: not pinned. Each must be online and
                          // in the process's affinity or isolated (rtloop::PinnableCpus)
  SchedPolicy policy = SchedPolicy::kFifo;
  int priority = 80;        // 1..99 for kFifo/kRr; 0 for the others
  int nice = 0;             // -20..19 for kOther/kBatch
  DeadlineParams deadline;  // kDeadline only
  OverrunPolicy overrun_policy = OverrunPolicy::kSkip;
  WatchdogConfig watchdog;
  Clock clock = Clock::kMonotonic;
  WaitMode wait_mode = WaitMode::kAbsolute;
  std::size_t stack_size = 262'144;  // bytes (256 KiB), prefaulted when the executor locks memory
  std::uint64_t max_cycles = 0;      // stop the task after this many Step() calls; 0: never
  // The first warmup_cycles cycles run as usual (Step() is called, the releases, the overrun
  // policy and the watchdog work) but are left out of TaskStats and not shown to the observers, so
  // cold caches, first-touch page faults and the start's own jitter stay out of every statistic,
  // telemetry's included (cyclictest-style warm-up: rtloop-cyclic --warmup).
  // TaskStatsSnapshot::warmup_cycles counts them; max_cycles counts them too (< max_cycles when
  // that is set). 0: none.
  std::uint64_t warmup_cycles = 0;
  // Stop the task once its releases reach E_0 + run_for: with a grid (kAbsolute, kPosixTimer) and
  // no overrun that is ceil(run_for / period) cycles, as cyclictest -D. 0: no time limit. >= 0.
  // With max_cycles too, whichever comes first ends the task.
  std::chrono::nanoseconds run_for{0};
  // Outlier explanation (rtloop::Runtime; telemetry/explain/README.md): a cycle whose wake-up
  // latency exceeds explain_latency_above, or whose execution time exceeds
  // explain_execution_above, gets an outlier record saying why it was late
  // (Runtime::Outliers()). 0: not explained. >= 0. The RT thread does nothing extra for it; the
  // Executor alone ignores both.
  std::chrono::nanoseconds explain_latency_above{0};
  std::chrono::nanoseconds explain_execution_above{0};
  // Called in this order on the RT thread after every cycle's bookkeeping (telemetry plugs in
  // here; rtloop::Runtime appends its telemetry hub). At most kMaxCycleObservers, not null, each
  // once; copied into a fixed list at AddTask(). Not owned: each must outlive the executor.
  std::vector<CycleObserver*> observers;
};

// A task as the executor runs it: its configuration and the scheduling it got
// (Executor::Info()).
struct TaskInfo {
  TaskId id = 0;
  TaskConfig config;                                  // as added (observers included)
  SchedPolicy effective_policy = SchedPolicy::kFifo;  // after a permitted fallback
  int effective_priority = 0;
  bool fell_back_to_non_rt = false;
};

}  // namespace rtloop
