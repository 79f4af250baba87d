// Runs one SCHED_OTHER task for 20 cycles through an installed rtloop and checks the statistics.
#include <cstdio>
#include <memory>

#include "rtloop/framework/executor.h"

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
  rtloop::Result<rtloop::TaskId> id = (*executor)->AddTask(task, task_config);
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().ToString().c_str());
    return 1;
  }
  if (rtloop::Status s = (*executor)->Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  (*executor)->Wait();
  const rtloop::TaskStatsSnapshot stats = (*executor)->Stats(*id);
  std::printf("consumer: %llu cycles\n", static_cast<unsigned long long>(stats.cycles));
  return stats.cycles == 20 ? 0 : 1;
}
