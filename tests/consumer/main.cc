// Runs one SCHED_OTHER task for 20 cycles through an installed rtloop, with the telemetry hub
// attached, and checks that the executor and telemetry agree on the cycle count.
#include <cstdio>
#include <memory>

#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace {

class Counter final : public rtloop::PeriodicTask {
 public:
  rtloop::StepResult Step(const rtloop::CycleContext& /*ctx*/) noexcept override {
    return rtloop::StepResult::kContinue;
  }
};

}  // namespace

int main() {
  rtloop::ExecutorConfig config;
  config.lock_memory = false;
  rtloop::Result<std::unique_ptr<rtloop::Executor>> executor = rtloop::Executor::Create(config);
  if (!executor.ok()) {
    std::fprintf(stderr, "%s\n", executor.status().ToString().c_str());
    return 1;
  }
  Counter task;
  rtloop::TaskConfig task_config;
  task_config.name = "consumer";
  task_config.policy = rtloop::SchedPolicy::kOther;
  task_config.priority = 0;
  task_config.max_cycles = 20;
  rtloop::telemetry::TelemetryHub hub;
  hub.AttachExecutor(**executor);
  task_config.observers = {&hub};
  rtloop::Result<rtloop::TaskId> id = (*executor)->AddTask(task, task_config);
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().ToString().c_str());
    return 1;
  }
  if (rtloop::Status s = hub.AddTask(*id, task_config); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  if (rtloop::Status s = (*executor)->Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  (*executor)->Wait();
  const rtloop::TaskStatsSnapshot stats = (*executor)->Stats(*id);
  rtloop::Result<rtloop::telemetry::TaskTelemetrySnapshot> snapshot = hub.Snapshot(*id);
  if (!snapshot.ok()) {
    std::fprintf(stderr, "%s\n", snapshot.status().ToString().c_str());
    return 1;
  }
  const rtloop::telemetry::TaskTelemetrySnapshot& telemetry = *snapshot;
  std::printf("consumer: %llu cycles, %llu latency samples, p99 %lld ns\n",
              static_cast<unsigned long long>(stats.cycles),
              static_cast<unsigned long long>(telemetry.latency.count),
              static_cast<long long>(telemetry.latency.percentiles.p99_ns));
  return stats.cycles == 20 && telemetry.latency.count == 20 ? 0 : 1;
}
