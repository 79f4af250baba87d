// A whole telemetry pipeline in one process for the gRPC end-to-end tests: an Executor running
// SCHED_OTHER tasks (no privilege needed), a TelemetryHub observing them, a Collector and a
// telemetry Server on 127.0.0.1 with a free port.
//
//   Rig rig;
//   ASSERT_TRUE(rig.Build({.tasks = 1, .period = 100us, .cycles = 20000}).ok());
//   ... open client streams on rig.address() ...
//   ASSERT_TRUE(rig.StartTasks().ok());
//   rig.WaitTasks();   // every task ran its cycles; the collector has delivered every sample
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry::testing {

class IdleTask final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

struct RigConfig {
  int tasks = 1;
  std::chrono::nanoseconds period{std::chrono::microseconds(100)};
  std::uint64_t cycles = 10000;  // per task; 0: until stopped
  ServerConfig server;           // address forced to 127.0.0.1:0 unless set otherwise
};

class Rig {
 public:
  Rig() = default;
  ~Rig() { Shutdown(); }

  Status Build(RigConfig config) {
    ExecutorConfig ec;
    ec.lock_memory = false;
    ec.start_delay = std::chrono::milliseconds(5);
    Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
    if (!ex.ok()) return ex.status();
    executor_ = std::move(*ex);
    tasks_.resize(static_cast<std::size_t>(config.tasks));
    for (int i = 0; i < config.tasks; ++i) {
      TaskConfig tc;
      tc.name = "task" + std::to_string(i);
      tc.period = config.period;
      tc.policy = SchedPolicy::kOther;
      tc.priority = 0;
      tc.max_cycles = config.cycles;
      tc.observers = {&hub_};
      Result<TaskId> id = executor_->AddTask(tasks_[static_cast<std::size_t>(i)], tc);
      if (!id.ok()) return id.status();
      RTLOOP_RETURN_IF_ERROR(hub_.AddTask(*id, tc));
      ids_.push_back(*id);
    }
    hub_.AttachExecutor(*executor_);
    collector_ = std::make_unique<Collector>(hub_);
    RTLOOP_RETURN_IF_ERROR(collector_->Start());
    ServerConfig sc = config.server;
    if (sc.address == ServerConfig().address) sc.address = "127.0.0.1:0";
    sc.log_to_stderr = false;
    Result<std::unique_ptr<Server>> server = Server::Start(sc, hub_, *collector_, executor_.get());
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
    return Status::Ok();
  }

  Status StartTasks() { return executor_->Start(); }
  // Waits for every task to finish its cycles, then drains every ring into the subscriptions.
  void WaitTasks() {
    executor_->Wait();
    collector_->Stop();
  }
  void Shutdown() {
    if (server_ != nullptr) server_->Stop();
    if (executor_ != nullptr) (void)executor_->Stop();
    if (collector_ != nullptr) collector_->Stop();
  }

  const std::string& address() const { return server_->address(); }
  Server& server() { return *server_; }
  Executor& executor() { return *executor_; }
  TelemetryHub& hub() { return hub_; }
  Collector& collector() { return *collector_; }
  const std::vector<TaskId>& ids() const { return ids_; }

 private:
  TelemetryHub hub_;
  std::vector<IdleTask> tasks_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<Server> server_;
  std::vector<TaskId> ids_;
};

}  // namespace rtloop::telemetry::testing
