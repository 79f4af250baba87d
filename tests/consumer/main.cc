// An application built against an *installed* rtloop: one SCHED_OTHER task for 20 cycles under
// rtloop::Runtime with telemetry on (gRPC on a free loopback port), then the standard report.
// Checks that the executor's and telemetry's figures agree.
#include <cstdio>
#include <memory>

#include "rtloop/rtloop.h"

namespace {

class Counter final : public rtloop::PeriodicTask {
 public:
  rtloop::StepResult Step(const rtloop::CycleContext& /*ctx*/) noexcept override {
    return rtloop::StepResult::kContinue;
  }
};

}  // namespace

int main() {
  rtloop::RuntimeConfig config;
  config.app_name = "rtloop_consumer";
  config.executor.lock_memory = false;
  config.telemetry.grpc.address = "127.0.0.1:0";
  config.report_at_exit = true;
  auto rt = rtloop::Runtime::Create(config);
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  Counter task;
  rtloop::TaskConfig task_config;
  task_config.name = "consumer";
  task_config.policy = rtloop::SchedPolicy::kOther;
  task_config.priority = 0;
  task_config.max_cycles = 20;
  auto id = (*rt)->AddTask(task, task_config);
  if (!id.ok()) return rtloop::ExitCode(id.status());
  if (rtloop::Status s = (*rt)->RunUntilSignal(); !s.ok()) return rtloop::ExitCode(s);
  const rtloop::TaskReport report = (*rt)->Report(*id);
  std::printf("consumer: %llu cycles, p99 %lld ns, served on %s\n",
              static_cast<unsigned long long>(report.stats.cycles),
              static_cast<long long>(report.latency.percentiles.p99_ns),
              (*rt)->grpc_address().c_str());
  return report.stats.cycles == 20 && report.latency.percentiles.valid ? 0 : 1;
}
