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
// Value type; no threading concerns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/time.h"

namespace rtloop {

class CycleObserver;

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

// How the RT thread waits for its release. Only kAbsolute and kPosixTimer keep a fixed grid; the
// relative modes exist to reproduce cyclictest's -r and -s. In every mode the first release is the
// shared start time + phase; in the relative modes each later release E_k is "the time just before
// the sleep + period" (as in cyclictest), so their wake-up latency excludes the loop's own time.
enum class WaitMode {
  kAbsolute,    // clock_nanosleep(TIMER_ABSTIME, E_k): the default
  kRelative,    // clock_nanosleep(relative, period) from just before the sleep (cyclictest -r)
  kNanosleep,   // nanosleep(period) (cyclictest -s)
  kPosixTimer,  // a per-thread one-shot POSIX timer (SIGALRM to this thread) + sigwait (-x)
};

// "absolute", "relative", "nanosleep", "posix-timer". RT-safe.
const char* WaitModeName(WaitMode mode) noexcept;

struct WatchdogConfig {
  // Consecutive overruns that move the task to kFault and call OnFault(). 0 disables the watchdog.
  std::uint32_t max_consecutive_overruns = 0;
  // After a fault: keep running (true) or stop the task (false).
  bool keep_running_after_fault = false;
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
  std::vector<int> cpus;                       // CPUs the thread may run on; empty: not pinned
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
  // Called in this order on the RT thread after every cycle's bookkeeping (telemetry plugs in
  // here; rtloop::Runtime appends its telemetry hub). At most kMaxCycleObservers, not null, each
  // once; copied into a fixed list at AddTask(). Not owned: each must outlive the executor.
  std::vector<CycleObserver*> observers;
};

}  // namespace rtloop
