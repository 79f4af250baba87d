// TaskReport built from a real executor and hub, and FormatTaskReport's table locked by a golden
// string.
#include "rtloop/telemetry/task_report.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TaskReport Measured() {
  TaskReport r;
  r.id = 0;
  r.name = "position";
  r.info.id = 0;
  r.info.config.name = "position";
  r.info.config.period = microseconds(500);
  r.info.effective_policy = SchedPolicy::kFifo;
  r.info.effective_priority = 90;
  r.stats.state = TaskState::kRunning;
  r.stats.cycles = 20000;
  r.stats.latency_min_ns = 8'100;
  r.stats.latency_max_ns = 87'200;
  r.stats.latency_sum_ns = 20000LL * 11'000;
  r.stats.latency_last_ns = 12'300;
  r.stats.execution_min_ns = 2'900;
  r.stats.execution_max_ns = 10'400;
  r.stats.execution_sum_ns = 20000LL * 3'000;
  r.stats.execution_last_ns = 3'100;
  r.stats.jitter_min_ns = -40'100;
  r.stats.jitter_max_ns = 61'000;
  r.stats.jitter_last_ns = -1'200;
  r.stats.overruns = 3;
  r.stats.missed_releases = 4;
  r.latency.percentiles = {.valid = true,
                           .p50_ns = 11'000,
                           .p90_ns = 13'000,
                           .p99_ns = 15'200,
                           .p99_9_ns = 40'300,
                           .p99_99_ns = 80'100,
                           .p99_999_ns = 87'000};
  r.execution.percentiles = {.valid = true,
                             .p50_ns = 3'000,
                             .p90_ns = 3'200,
                             .p99_ns = 3'500,
                             .p99_9_ns = 6'000,
                             .p99_99_ns = 9'900,
                             .p99_999_ns = 10'300};
  r.telemetry = true;
  r.ring_dropped = 5;
  r.subscriber_lost = 6;
  return r;
}

TaskReport NotYetRun() {
  TaskReport r;
  r.id = 1;
  r.name = "supervisor";
  r.info.id = 1;
  r.info.config.name = "supervisor";
  r.info.config.period = milliseconds(10);
  r.info.effective_policy = SchedPolicy::kOther;
  r.info.fell_back_to_non_rt = true;
  r.stats.state = TaskState::kStarting;
  r.telemetry = true;
  return r;
}

// A task whose execution-time watchdog tripped (and keeps running), one that faulted on overruns
// and stays in the fault state, one with a watchdog and no fault: the FAULTS column and the
// "watchdog, faults" section, locked.
TEST(TaskReportTest, FaultsAndWatchdogsMatchGolden) {
  TaskReport keeps = Measured();
  keeps.info.config.watchdog.time = microseconds(300);
  keeps.info.config.watchdog.sensitivity = 2;
  keeps.info.config.watchdog.action = WatchdogAction::kContinue;
  keeps.stats.faults = 1;
  keeps.stats.watchdog_violations = 3;
  keeps.stats.watchdog_trips = 1;
  keeps.stats.last_fault = {
      FaultReason::kWatchdog, 101, 5'000'000'000, 1'016'000'000, 350'000, 2, 300'000};
  TaskReport halted = Measured();
  halted.id = 1;
  halted.name = halted.info.config.name = "logic";
  halted.stats.state = TaskState::kFault;
  halted.info.config.watchdog.max_consecutive_overruns = 3;
  halted.stats.faults = 1;
  halted.stats.last_fault = {FaultReason::kOverruns, 7, 9'000'000, 3'500'000, 1'200'000, 3, 0};
  TaskReport calm = NotYetRun();
  calm.id = 2;
  calm.info.config.watchdog.time = milliseconds(5);
  const std::vector<TaskReport> reports = {keeps, halted, calm};
  const std::string text = FormatTaskReport(reports);
  const std::string overview =
      " ID NAME       STATE    POLICY      PERIOD       CYCLES  OVERRUNS    MISSED  FAULTS   "
      "DROPPED      LOST\n"
      "  0 position   running  fifo/90      500us        20000         3         4       1     "
      "    5         6\n"
      "  1 logic      fault    fifo/90      500us        20000         3         4       1     "
      "    5         6\n";
  EXPECT_EQ(text.rfind(overview, 0), 0u) << text;
  const std::string section =
      "watchdog, faults         LIMIT ACTION     VIOLATIONS  TRIPS  LAST FAULT\n"
      "  position             300usx2 continue            3      1  cycle 101 t=1.016s watchdog: "
      "execution 350.0us > 300.0us, 2 cycles in a row (sensitivity 2)\n"
      "  logic                   3ovr fault-task          0      0  cycle 7 t=0.004s overruns: 3 "
      "overruns in a row (execution 1200.0us)\n"
      "  supervisor               5ms fault-task          0      0  -\n";
  EXPECT_NE(text.find("\n\n" + section), std::string::npos) << text;
}

TEST(TaskReportTest, TableMatchesGolden) {
  TaskReport no_telemetry = Measured();
  no_telemetry.id = 2;
  no_telemetry.name = no_telemetry.info.config.name = "logger-without-telemetry";
  no_telemetry.latency = {};
  no_telemetry.execution = {};
  no_telemetry.telemetry = false;
  const std::vector<TaskReport> reports = {Measured(), NotYetRun(), no_telemetry};
  const std::string expected =
      " ID NAME                 STATE    POLICY      PERIOD       CYCLES  OVERRUNS    MISSED  "
      "FAULTS   DROPPED      LOST\n"
      "  0 position             running  fifo/90      500us        20000         3         4     "
      "  0         5         6\n"
      "  1 supervisor           starting other!        10ms            0         0         0     "
      "  0         0         0\n"
      "  2 logger-without-telem running  fifo/90      500us        20000         3         4     "
      "  0         -         -\n"
      "\n"
      "wake-up latency (us)       LAST      MIN      AVG      MAX      P99    P99.9   P99.99\n"
      "  position                 12.3      8.1     11.0     87.2     15.2     40.3     80.1\n"
      "  supervisor            no data\n"
      "  logger-without-telem     12.3      8.1     11.0     87.2        -        -        -\n"
      "\n"
      "execution time (us)        LAST      MIN      AVG      MAX      P99    P99.9   P99.99\n"
      "  position                  3.1      2.9      3.0     10.4      3.5      6.0      9.9\n"
      "  supervisor            no data\n"
      "  logger-without-telem      3.1      2.9      3.0     10.4        -        -        -\n"
      "\n"
      "period jitter (us)         LAST      MIN      MAX    RANGE\n"
      "  position                 -1.2    -40.1     61.0    101.1\n"
      "  supervisor            no data\n"
      "  logger-without-telem     -1.2    -40.1     61.0    101.1\n"
      "\n"
      "! fell back to SCHED_OTHER: not real-time figures\n"
      "- percentiles need telemetry (RuntimeConfig::telemetry.enabled)\n";
  EXPECT_EQ(FormatTaskReport(reports), expected) << FormatTaskReport(reports);
}

TEST(TaskReportTest, ATaskWithoutCyclesShowsNoDataNeverZero) {
  const std::vector<TaskReport> reports = {NotYetRun()};
  const std::string text = FormatTaskReport(reports);
  EXPECT_NE(text.find("no data"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.0"), std::string::npos) << text;
  EXPECT_FALSE(reports[0].has_data());
  EXPECT_EQ(FormatTaskReport({}), "no tasks\n");
}

class Idle final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

TEST(TaskReportTest, ReportJoinsTheExecutorStatisticsAndTheHubPercentiles) {
  ExecutorConfig ec;
  ec.lock_memory = false;
  ec.start_delay = milliseconds(5);
  Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  telemetry::TelemetryHub hub;
  hub.AttachStats(**ex);
  Idle observed, unobserved;
  TaskConfig tc;
  tc.name = "observed";
  tc.period = microseconds(500);
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  tc.max_cycles = 50;
  tc.observers = {&hub};
  Result<TaskId> a = (*ex)->AddTask(observed, tc);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(hub.AddTask(*a, tc).ok());
  tc.name = "unobserved";
  tc.observers.clear();
  Result<TaskId> b = (*ex)->AddTask(unobserved, tc);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();

  const std::vector<TaskReport> reports = MakeTaskReports(ex->get(), &hub);
  ASSERT_EQ(reports.size(), 2u);
  const TaskReport& r = reports[0];
  EXPECT_EQ(r.name, "observed");
  EXPECT_EQ(r.stats.cycles, 50u);
  EXPECT_EQ(r.stats.state, TaskState::kStopped);
  EXPECT_TRUE(r.has_data());
  ASSERT_TRUE(r.telemetry);
  ASSERT_TRUE(r.latency.percentiles.valid);
  EXPECT_GE(r.latency.percentiles.p99_ns, r.latency.percentiles.p50_ns);
  EXPECT_LE(r.latency.percentiles.p99_999_ns, r.stats.latency_max_ns);
  EXPECT_GE(r.latency.percentiles.p50_ns, r.stats.latency_min_ns);
  EXPECT_EQ(r.ring_dropped, 0u);
  // The hub never saw the second task: executor figures, no percentiles (never zeros).
  EXPECT_TRUE(reports[1].has_data());
  EXPECT_FALSE(reports[1].telemetry);
  EXPECT_FALSE(reports[1].latency.percentiles.valid);
  EXPECT_EQ(MakeTaskReport(ex->get(), &hub, 7).stats.cycles, 0u);  // unknown id: no data
}

}  // namespace
}  // namespace rtloop
