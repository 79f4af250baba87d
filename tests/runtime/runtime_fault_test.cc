// rtloop::Runtime and task faults, end to end (issue 19, items 1 and 2): a fault is printed on
// stderr when it happens, from a non-RT thread; RunUntilSignal() returns kAborted and ExitCode()
// makes it 3; every view (the report, gRPC, /api/v1/tasks, /metrics) shows the same state, the
// same fault count and the same last fault, while the task runs and after it ended. Real
// SCHED_OTHER tasks (no privilege needed), telemetry on free loopback ports.
//
//   ctest --test-dir build -R RuntimeFaultTest
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "http_test_util.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/client.h"
#include "telemetry_rig.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using telemetry::testing::HttpGet;
using telemetry::testing::OtherTask;

// Busy-waits `busy` in cycles [from, from + count) (count 0: every cycle from `from` on).
class BusyTask final : public PeriodicTask {
 public:
  BusyTask(std::chrono::nanoseconds busy, std::uint64_t from, std::uint64_t count = 0)
      : busy_(busy), from_(from), count_(count) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle >= from_ && (count_ == 0 || ctx.cycle < from_ + count_)) {
      SpinFor(Clock::kMonotonic, busy_);
    }
    steps.fetch_add(1, std::memory_order_relaxed);
    return StepResult::kContinue;
  }
  std::atomic<std::uint64_t> steps{0};

 private:
  std::chrono::nanoseconds busy_;
  std::uint64_t from_;
  std::uint64_t count_;
};

RuntimeConfig TestConfig(bool http = false) {
  RuntimeConfig c = telemetry::testing::TestRuntimeConfig("fault_test");
  c.fault_check_period = milliseconds(10);
  if (http) c.telemetry.http = telemetry::HttpConfig{.address = "127.0.0.1:0"};
  return c;
}

std::unique_ptr<Runtime> MakeRuntime(const RuntimeConfig& config) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(config);
  RTLOOP_CHECK(rt.ok(), "Runtime::Create failed in a test");
  return std::move(*rt);
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(RuntimeFaultTest, AnOverrunFaultIsPrintedOnStderrAndRunUntilSignalSaysSo) {
  auto rt = MakeRuntime(TestConfig());
  BusyTask logic(milliseconds(45), /*from=*/5, /*count=*/1);
  TaskConfig tc = OtherTask("logic", milliseconds(20));
  tc.watchdog.max_consecutive_overruns = 1;
  ASSERT_TRUE(rt->AddTask(logic, tc).ok());
  ::testing::internal::CaptureStderr();
  const Status s = rt->RunUntilSignal();  // returns when the faulted task has ended
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.message();
  ASSERT_EQ(rt->FaultedTasks().size(), 1u);
  // Cycle 5 overran by design; a wake-up late by a whole period on a loaded machine may come
  // first: the views must name the cycle the executor recorded.
  const std::string cycle = std::to_string(rt->FaultedTasks()[0].stats.last_fault.cycle);
  EXPECT_TRUE(Has(s.message(),
                  "1 task faulted (exit status 3): task \"logic\" state fault, 1 "
                  "fault, last at cycle " +
                      cycle + " t="))
      << s.message();
  EXPECT_TRUE(Has(err, "fault_test: FAULT: task \"logic\": cycle " + cycle + " t=")) << err;
  EXPECT_TRUE(Has(err, "overruns: 1 overrun in a row")) << err;
  EXPECT_TRUE(Has(err, "the task stopped (state fault, action fault-task)")) << err;
  EXPECT_EQ(err.find("FAULT:"), err.rfind("FAULT:")) << "one line per fault: " << err;
  EXPECT_TRUE(rt->AnyTaskFaulted());
  EXPECT_EQ(rt->FaultedTasks()[0].stats.last_fault.reason, FaultReason::kOverruns);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ExitCode(s), kExitTaskFault);
  EXPECT_TRUE(Has(::testing::internal::GetCapturedStderr(), "task \"logic\" state fault"));
}

TEST(RuntimeFaultTest, ARunWithoutFaultsReturnsOk) {
  auto rt = MakeRuntime(TestConfig());
  BusyTask idle(microseconds(10), /*from=*/0);
  TaskConfig tc = OtherTask("calm", milliseconds(1), 20);
  tc.watchdog.time = milliseconds(20);
  ASSERT_TRUE(rt->AddTask(idle, tc).ok());
  EXPECT_TRUE(rt->RunUntilSignal().ok());
  EXPECT_FALSE(rt->AnyTaskFaulted());
  EXPECT_TRUE(rt->FaultedTasks().empty());
}

TEST(RuntimeFaultTest, TheFaultIsToldWhileTheRunGoesOnFromANonRtThread) {
  RuntimeConfig c = TestConfig();
  std::mutex mu;
  std::condition_variable cv;
  bool told = false;
  bool on_rt_thread = true;
  std::string told_task;
  c.on_fault = [&](const TaskReport& r) {
    std::lock_guard<std::mutex> lock(mu);
    told = true;
    on_rt_thread = r.stats.tid == static_cast<int>(syscall(SYS_gettid));
    told_task = r.name;
    cv.notify_all();
  };
  auto rt = MakeRuntime(c);
  BusyTask bad(milliseconds(2), /*from=*/3);
  telemetry::testing::IdleTask other;
  TaskConfig tb = OtherTask("bad", milliseconds(10));
  tb.watchdog.time = milliseconds(1);
  ASSERT_TRUE(rt->AddTask(bad, tb).ok());
  ASSERT_TRUE(rt->AddTask(other, OtherTask("other", milliseconds(5))).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(rt->Start().ok());
  std::unique_lock<std::mutex> lock(mu);
  const bool in_time = cv.wait_for(lock, std::chrono::seconds(10), [&] { return told; });
  lock.unlock();
  const TaskState other_state = rt->executor().State(1);
  ASSERT_TRUE(rt->Stop().ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(in_time) << "no on_fault call within 10 s";
  EXPECT_EQ(told_task, "bad");
  EXPECT_FALSE(on_rt_thread);
  EXPECT_EQ(other_state, TaskState::kRunning) << "told while the run went on, not at its end";
  EXPECT_TRUE(Has(err, "fault_test: FAULT: task \"bad\": cycle ")) << err;
  EXPECT_TRUE(Has(err, " watchdog: execution ")) << err;
  EXPECT_TRUE(Has(err, "us > 1000.0us, 1 cycle in a row (sensitivity 1)")) << err;
}

// The state, the fault count and the last fault of task `id` as the report, gRPC, /api/v1/tasks
// and /metrics give them, each as a short string that must be the same in every view.
struct Views {
  std::string report, grpc, json, metrics;
};

Views Look(Runtime& rt, TaskId id) {
  Views v;
  const TaskReport r = rt.Report(id);
  v.report = std::string(TaskStateName(r.stats.state)) + " " + std::to_string(r.stats.faults) +
             " " + FaultReasonName(r.stats.last_fault.reason) + " " +
             std::to_string(r.stats.last_fault.cycle);
  telemetry::ClientConfig cc;
  cc.address = rt.grpc_address();
  auto client = telemetry::Client::Create(cc);
  if (client.ok()) {
    auto stats = (*client)->GetStats({id}, false);
    if (stats.ok() && stats->tasks_size() == 1) {
      const auto& t = stats->tasks(0);
      const char* state = t.state() == telemetry::v1::TASK_STATE_RUNNING   ? "running"
                          : t.state() == telemetry::v1::TASK_STATE_FAULT   ? "fault"
                          : t.state() == telemetry::v1::TASK_STATE_STOPPED ? "stopped"
                                                                           : "?";
      const char* reason =
          t.last_fault_reason() == telemetry::v1::FAULT_REASON_WATCHDOG ? "watchdog"
          : t.last_fault_reason() == telemetry::v1::FAULT_REASON_WATCHDOG_SINGLE
              ? "watchdog-single-cycle"
          : t.last_fault_reason() == telemetry::v1::FAULT_REASON_OVERRUNS ? "overruns"
          : t.last_fault_reason() == telemetry::v1::FAULT_REASON_STEP     ? "step"
                                                                          : "none";
      v.grpc = std::string(state) + " " + std::to_string(t.faults()) + " " + reason + " " +
               std::to_string(t.last_fault_cycle());
    }
  }
  const std::string port = rt.http_address().substr(rt.http_address().rfind(':') + 1);
  const std::string json = HttpGet(std::stoi(port), "/api/v1/tasks").body;
  // {"id":0,"name":...,"state":"running",...,"faults":2,"watchdog":{...},"last_fault":{"reason":
  // "watchdog","cycle":5,...}}
  const auto field = [&](const std::string& key, std::size_t from) {
    const std::size_t at = json.find("\"" + key + "\":", from);
    if (at == std::string::npos) return std::string("?");
    std::size_t b = at + key.size() + 3;
    std::size_t e = json.find_first_of(",}", b);
    std::string val = json.substr(b, e - b);
    if (!val.empty() && val.front() == '"') val = val.substr(1, val.size() - 2);
    return val;
  };
  const std::size_t task = json.find("\"id\":" + std::to_string(id));
  const std::size_t last = json.find("\"last_fault\":", task);
  v.json = field("state", task) + " " + field("faults", task) + " " + field("reason", last) + " " +
           field("cycle", last);
  const std::string metrics = HttpGet(std::stoi(port), "/metrics").body;
  const std::size_t m = metrics.find("rtloop_task_faults_total{task=\"" + r.name + "\"");
  const std::size_t s = metrics.find("rtloop_task_state{task=\"" + r.name + "\"");
  const std::size_t st = metrics.find("state=\"", s);
  const std::size_t sp = metrics.find(' ', metrics.find('}', m));
  v.metrics = metrics.substr(st + 7, metrics.find('"', st + 7) - st - 7) + " " +
              metrics.substr(sp + 1, metrics.find('\n', sp) - sp - 1);
  return v;
}

TEST(RuntimeFaultTest, EveryViewShowsTheSameStateAndFaultsWhileRunningAndAfter) {
  auto rt = MakeRuntime(TestConfig(/*http=*/true));
  // Two violations of 1 ms from cycle 4, sensitivity 2: one trip by the consecutive rule at
  // cycle 5; the task keeps running (action continue).
  BusyTask cont(microseconds(1500), /*from=*/4, /*count=*/2);
  TaskConfig tc = OtherTask("keeps", milliseconds(10));
  tc.watchdog.time = milliseconds(1);
  tc.watchdog.sensitivity = 2;
  tc.watchdog.keep_running_after_fault = true;
  // Faults and stays in the fault state.
  BusyTask stop(microseconds(1500), /*from=*/4, /*count=*/2);
  TaskConfig ts = OtherTask("halts", milliseconds(10));
  ts.watchdog = tc.watchdog;
  ts.watchdog.keep_running_after_fault = false;
  ASSERT_TRUE(rt->AddTask(cont, tc).ok());
  ASSERT_TRUE(rt->AddTask(stop, ts).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(rt->Start().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((rt->executor().Stats(0).faults == 0 || rt->executor().State(1) != TaskState::kFault) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  // Cycles 4 and 5 exceed the watchdog time by design: the trip is at cycle 5. A cycle slowed by
  // a loaded machine (preempted for over 2 ms, as under TSan in CI) may trip it earlier or again,
  // by the single-cycle rule, while the task keeps running: the views must agree with each other
  // on whatever count they show, so they are read between two equal counts (bounded retries).
  Views running;
  std::uint64_t faults = 0;
  for (int i = 0; i < 20; ++i) {
    faults = rt->executor().Stats(0).faults;
    running = Look(*rt, 0);
    if (rt->executor().Stats(0).faults == faults) break;
  }
  ASSERT_GE(faults, 1u);
  EXPECT_TRUE(running.report.starts_with("running " + std::to_string(faults) + " watchdog"))
      << running.report;
  EXPECT_EQ(running.grpc, running.report);
  EXPECT_EQ(running.json, running.report);
  EXPECT_EQ(running.metrics, "running " + std::to_string(faults));
  const Views halted = Look(*rt, 1);
  EXPECT_TRUE(halted.report.starts_with("fault 1 watchdog")) << halted.report;
  EXPECT_EQ(halted.grpc, halted.report);
  EXPECT_EQ(halted.json, halted.report);
  EXPECT_EQ(halted.metrics, "fault 1");
  const std::string metrics =
      HttpGet(std::stoi(rt->http_address().substr(rt->http_address().rfind(':') + 1)), "/metrics")
          .body;
  EXPECT_TRUE(Has(metrics, "rtloop_task_watchdog_trips_total{task=\"keeps\"")) << metrics;
  EXPECT_TRUE(Has(FormatTaskReport(rt->Reports()), "watchdog, faults"));
  const Status s = rt->Stop();
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(rt->Report(0).stats.state, TaskState::kStopped) << "stopped by Stop(), not faulted";
  EXPECT_EQ(rt->Report(1).stats.state, TaskState::kFault) << "a fault stays a fault";
  EXPECT_GE(rt->Report(0).stats.faults, faults) << "a reset nobody asked for";
}

TEST(RuntimeFaultTest, CheckRefusesANonPositiveFaultCheckPeriod) {
  RuntimeConfig c = TestConfig();
  c.fault_check_period = milliseconds(0);
  const Status s = Runtime::Check(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(s.message(), "RuntimeConfig::fault_check_period must be > 0")) << s.message();
}

TEST(RuntimeFaultTest, ExitCodeIsThreeForATaskFault) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ExitCode(Status(StatusCode::kAborted, "a task faulted")), 3);
  EXPECT_EQ(ExitCode(InvalidArgumentError("bad")), 1);
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ExitCode(Status::Ok()), 0);
}

}  // namespace
}  // namespace rtloop
