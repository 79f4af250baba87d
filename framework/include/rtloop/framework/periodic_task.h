// PeriodicTask: the user's code that the executor runs once per period on its RT thread.
//
//   class Blink final : public rtloop::PeriodicTask {
//    public:
//     rtloop::Status OnStart() override { return gpio_.Open(); }     // may allocate
//     rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
//       gpio_.Write(ctx.cycle % 2 == 0);                               // RT-safe work only
//       return rtloop::StepResult::kContinue;
//     }
//   };
//
// Lifecycle, all on the task's RT thread: OnStart() once, after the thread's scheduling policy,
// priority and affinity are in force and before the first release; then Step() once per release
// until it returns kStop or kFault or the executor stops; then OnStop() once. OnWatchdog() is
// called on the RT thread when a watchdog trips (see TaskConfig::watchdog). OnStart() may allocate
// and may fail (a non-OK Status, or an exception, which the executor catches and reports); Step()
// must be RT-safe (framework/README.md, "Real-time rules"): no allocation, no blocking lock, no
// syscall but the task's own I/O.
#pragma once

#include <chrono>
#include <cstdint>

#include "rtloop/framework/status.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/framework/time.h"

namespace rtloop {

// What the executor passes to each Step(). All times on the task's clock.
struct CycleContext {
  std::uint64_t cycle = 0;                      // 0-based index of this Step() call
  std::uint64_t release_index = 0;              // k of E_k: counts skipped releases too
  TimePoint release;                            // E_k, the scheduled release time
  TimePoint wake;                               // W_k, when the thread actually woke
  std::chrono::nanoseconds period{0};           // the task's period
  std::chrono::nanoseconds since_last_wake{0};  // W_k - W_{k-1}; 0 for the first cycle
  // Releases missed just before this one (kSkip, kReanchor; always 0 under kCatchUp).
  std::uint64_t missed_releases = 0;

  // W_k - E_k, signed. RT-safe.
  constexpr std::chrono::nanoseconds wakeup_latency() const noexcept { return wake - release; }
};

enum class StepResult {
  kContinue,  // run again at the next release
  kStop,      // finish this task (OnStop() follows); other tasks keep running
  // The task detected a fault of its own (e.g. an application watchdog, a device error): the
  // executor counts a fault (TaskStatsSnapshot::faults, last_fault reason kStep), flags this cycle
  // kCycleFault and ends the task in TaskState::kFault, which telemetry shows. OnStop() follows;
  // OnWatchdog() does not (it is the watchdog's hook, and the task already knows). Other tasks
  // keep running.
  kFault,
};

class PeriodicTask {
 public:
  virtual ~PeriodicTask() = default;

  // On the RT thread before the first release. May allocate. Default: nothing.
  virtual Status OnStart() { return Status::Ok(); }
  // Once per release. RT-safe, noexcept.
  virtual StepResult Step(const CycleContext& ctx) noexcept = 0;
  // On the RT thread after the last Step(). May allocate. Default: nothing.
  virtual void OnStop() noexcept {}
  // On the RT thread right after the cycle `ctx` on which a watchdog tripped (TaskConfig::watchdog:
  // consecutive overruns or the execution-time watchdog), before the action takes effect; `fault`
  // says which, with the cycle, time and execution time. The place to put outputs in a safe state
  // (examples/plc). RT-safe. Default: calls OnFault(ctx).
  virtual void OnWatchdog(const CycleContext& ctx, const FaultRecord& /*fault*/) noexcept {
    OnFault(ctx);
  }
  // The older hook, called by the default OnWatchdog(). RT-safe. Default: nothing.
  virtual void OnFault(const CycleContext& /*ctx*/) noexcept {}
};

}  // namespace rtloop
