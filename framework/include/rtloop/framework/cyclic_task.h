// CyclicTask: a task that only measures, the equivalent of cyclictest's measurement thread for an
// application of one's own (bench/http's A/B runs and the framework's tests use it). rtloop-cyclic
// runs its own variant, bench/cyclic's CyclicThreadTask, which is this plus cyclictest's -b: it
// stops at its first release after the break latch tripped.
//
//   rtloop::CyclicTask cyclic;
//   rtloop::TaskConfig cfg;  cfg.name = "cyclic0"; cfg.period = std::chrono::microseconds(1000);
//   cfg.observers = {&telemetry_tap};              // per-cycle samples go here
//   executor->AddTask(cyclic, cfg);
//
// Its Step() does no work and returns kContinue: the measurement is the executor's own. Wake-up
// latency (cyclictest's "latency"), execution time, period jitter, overruns and missed releases
// are computed by the executor around every Step() (CycleEngine) and land in TaskStats and the
// CycleObserver; there is no second timing loop inside the task. Stopping after N loops
// (cyclictest -l) is TaskConfig::max_cycles.
//
// Threading: Step() runs on the task's RT thread; it is RT-safe and touches no shared state.
#pragma once

#include "rtloop/framework/periodic_task.h"

namespace rtloop {

class CyclicTask final : public PeriodicTask {
 public:
  // RT-safe: does nothing, so every sample is pure scheduling/wake-up latency.
  StepResult Step(const CycleContext& ctx) noexcept override;
};

}  // namespace rtloop
