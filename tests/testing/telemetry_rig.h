// A whole telemetry pipeline in one process for the gRPC end-to-end tests: an rtloop::Runtime
// running SCHED_OTHER tasks (no privilege needed) with its hub, collector and telemetry server on
// 127.0.0.1 with a free port. The wiring is the Runtime's own; the rig only adds the test's
// controls (start the tasks later, wait for them while the server keeps serving).
//
//   Rig rig;
//   ASSERT_TRUE(rig.Build({.tasks = 1, .period = 100us, .cycles = 20000}).ok());
//   ... open client streams on rig.address() ...
//   ASSERT_TRUE(rig.StartTasks().ok());
//   rig.WaitTasks();   // every task ran its cycles; the collector has delivered every sample
//
// Build() adds config.tasks tasks; AddTasks() adds more later (e.g. after a client opened its
// streams, as an application that starts its server before its tasks does). With RigConfig::http
// the Runtime serves /metrics and the page too (http_port()). One test thread.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/framework/periodic_task.h"
#include "rtloop/runtime.h"

namespace rtloop::telemetry::testing {

class IdleTask final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

// A Runtime's config for a test: memory not locked, the gRPC server quiet on any free loopback
// port (HTTP off unless set).
inline RuntimeConfig TestRuntimeConfig(const std::string& app_name) {
  RuntimeConfig rc;
  rc.app_name = app_name;
  rc.executor.lock_memory = false;
  rc.executor.start_delay = std::chrono::milliseconds(5);
  rc.telemetry.grpc.address = "127.0.0.1:0";
  rc.telemetry.grpc.log_to_stderr = false;
  return rc;
}

// A SCHED_OTHER task (no privilege needed) of `period`, ending after `cycles` (0: never).
inline TaskConfig OtherTask(const std::string& name, std::chrono::nanoseconds period,
                            std::uint64_t cycles = 0) {
  TaskConfig tc;
  tc.name = name;
  tc.period = period;
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  tc.max_cycles = cycles;
  return tc;
}

struct RigConfig {
  int tasks = 1;
  std::chrono::nanoseconds period{std::chrono::microseconds(100)};
  std::uint64_t cycles = 10000;    // per task; 0: until stopped
  ServerConfig server;             // address forced to 127.0.0.1:0 unless set otherwise
  std::optional<HttpConfig> http;  // the Runtime's HTTP endpoint too (quiet, on loopback)
};

class Rig {
 public:
  Rig() = default;
  ~Rig() { Shutdown(); }

  Status Build(RigConfig config) {
    RuntimeConfig rc = TestRuntimeConfig("telemetry_rig");
    rc.telemetry.grpc = config.server;
    if (rc.telemetry.grpc.address == ServerConfig().address) {
      rc.telemetry.grpc.address = "127.0.0.1:0";
    }
    rc.telemetry.grpc.log_to_stderr = false;
    rc.telemetry.http = config.http;
    if (rc.telemetry.http) rc.telemetry.http->log_to_stderr = false;
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
    if (!rt.ok()) return rt.status();
    runtime_ = std::move(*rt);
    address_ = runtime_->grpc_address();
    return AddTasks(config.tasks, config.period, config.cycles);
  }
  // Adds `n` SCHED_OTHER tasks of `period` and `cycles`, named task<id>, before StartTasks().
  Status AddTasks(int n, std::chrono::nanoseconds period, std::uint64_t cycles) {
    for (int i = 0; i < n; ++i) {
      RTLOOP_RETURN_IF_ERROR(AddTask("task" + std::to_string(ids_.size()), period, cycles));
    }
    return Status::Ok();
  }
  // Adds one SCHED_OTHER task named `name` (any bytes), before StartTasks().
  Status AddTask(const std::string& name, std::chrono::nanoseconds period, std::uint64_t cycles) {
    tasks_.emplace_back();  // a deque: the tasks added before keep their addresses
    Result<TaskId> id = runtime_->AddTask(tasks_.back(), OtherTask(name, period, cycles));
    if (!id.ok()) return id.status();
    ids_.push_back(*id);
    return Status::Ok();
  }

  // The collector and the tasks (Runtime::Start).
  Status StartTasks() { return runtime_->Start(); }
  // Waits for every task to finish its cycles, then drains every ring into the subscriptions; the
  // server keeps serving what they hold.
  void WaitTasks() {
    runtime_->executor().Wait();
    runtime_->collector()->Stop();
  }
  // The Runtime's orderly stop (idempotent).
  void Shutdown() {
    if (runtime_ != nullptr) (void)runtime_->Stop();
  }
  const std::string& address() const { return address_; }
  Server& server() { return *runtime_->server(); }
  int http_port() { return runtime_->http() != nullptr ? runtime_->http()->port() : 0; }
  Executor& executor() { return runtime_->executor(); }
  TelemetryHub& hub() { return *runtime_->hub(); }
  Collector& collector() { return *runtime_->collector(); }
  Runtime& runtime() { return *runtime_; }
  const std::vector<TaskId>& ids() const { return ids_; }

 private:
  // Declared before the runtime: the tasks outlive it.
  std::deque<IdleTask> tasks_;
  std::unique_ptr<Runtime> runtime_;
  std::vector<TaskId> ids_;
  std::string address_;
};

}  // namespace rtloop::telemetry::testing
