// Issue 19, items 3, 5 and 6, end to end on a Runtime: the opt-in task monitor (a signal prints it
// from a non-RT thread and the process lives on), the statistics reset (Runtime API and the gRPC
// call, which needs the token), presence of the figures a task without cycles does not have
// (gRPC and rtloop-top --json: absent / null, never 0), and a /metrics scrape that agrees with
// itself (cycles_total equals the latency histogram's _count) while a task runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "grpc_test_util.h"
#include "http_test_util.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/client.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::BuildTokenRig;
using testing::Cfg;
using testing::Command;
using testing::Connect;
using testing::HttpGet;
using testing::HttpReply;
using testing::IdleTask;
using testing::Rig;
using testing::RunCommand;
using testing::Sample;
using testing::ScratchDir;
using testing::TestRuntimeConfig;

// Polls `pred` every 5 ms for up to 10 s: true once it held.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

TaskConfig OtherTask(const std::string& name, std::uint64_t max_cycles = 0) {
  TaskConfig tc;
  tc.name = name;
  tc.period = milliseconds(1);
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  tc.max_cycles = max_cycles;
  return tc;
}

// ---------------------------------------------------------------------------------------------
// Item 3: the monitor

TEST(RuntimeMonitor, MonitorSignalPrintsFromANonRtThreadAndTheProcessLivesOn) {
  std::mutex mu;
  std::condition_variable cv;
  int printed = 0;
  std::thread::id printer;
  RuntimeConfig rc = TestRuntimeConfig("monitor_test");
  rc.monitor_signal = SIGUSR1;
  rc.monitor_text = [&](const Runtime& runtime) {
    std::string table = FormatTaskReport(runtime.Reports());
    std::lock_guard<std::mutex> lock(mu);
    ++printed;
    printer = std::this_thread::get_id();
    cv.notify_all();
    return table;
  };
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  IdleTask task;
  ASSERT_TRUE((*rt)->AddTask(task, OtherTask("scan")).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  // To the whole process, as `kill -USR1 PID` does. Before the monitor, SIGUSR1's default action
  // ended the process here.
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(10), [&] { return printed == 1; }));
    EXPECT_NE(printer, std::this_thread::get_id());
  }
  // Not on the task's RT thread either: printed on the monitor thread.
  const int task_tid = (*rt)->executor().Stats(0).tid;
  EXPECT_NE(task_tid, 0);
  ASSERT_TRUE((*rt)->Stop().ok());
}

TEST(RuntimeMonitor, BadMonitorSignalIsRefusedNamingTheField) {
  RuntimeConfig rc = TestRuntimeConfig("monitor_bad");
  rc.monitor_signal = SIGTERM;
  const Status s = Runtime::Check(rc);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("RuntimeConfig::monitor_signal"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------------------------------------
// Item 3: the reset

TEST(RuntimeReset, ResetClearsMinMaxAndTheWindowKeepsTheTotals) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(TestRuntimeConfig("reset_test"));
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  IdleTask task;
  ASSERT_TRUE((*rt)->AddTask(task, OtherTask("scan", /*max_cycles=*/60)).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();  // 60 cycles, then the task ends: nothing moves any more
  const TaskStatsSnapshot before = (*rt)->Report(0).stats;
  ASSERT_EQ(before.cycles, 60u);
  ASSERT_TRUE(before.has_min_max());

  (*rt)->ResetStats();
  const TaskStatsSnapshot after = (*rt)->Report(0).stats;
  EXPECT_EQ(after.resets, 1u);
  EXPECT_FALSE(after.has_min_max()) << "no cycle since the reset: no min/max";
  EXPECT_FALSE(after.has_jitter_min_max());
  EXPECT_EQ(after.cycles, before.cycles);
  EXPECT_EQ(after.overruns, before.overruns);
  EXPECT_EQ(after.missed_releases, before.missed_releases);
  EXPECT_EQ(after.faults, before.faults);
  EXPECT_EQ(after.latency_sum_ns, before.latency_sum_ns);
  EXPECT_EQ(after.latency_avg_ns(), before.latency_avg_ns());
  // The all-time histograms (percentiles) are kept too.
  EXPECT_EQ((*rt)->Report(0).latency.percentiles.valid, true);
  // The report says "-" for the cleared figures, the averages stay.
  const std::string report = FormatTaskReport((*rt)->Reports());
  EXPECT_NE(report.find(" -"), std::string::npos) << report;
  EXPECT_EQ((*rt)->ResetStats(7).code(), StatusCode::kNotFound);
  ASSERT_TRUE((*rt)->Stop().ok());
}

TEST(GrpcReset, ResetStatsNeedsTheTokenAndClearsMinMax) {
  const ScratchDir dir("reset");
  const std::string token = (dir / "token").string();
  Rig rig;
  ASSERT_TRUE(BuildTokenRig(rig, token, "s3cret-token").ok());
  ASSERT_TRUE(rig.StartTasks().ok());
  rig.WaitTasks();
  // Without the token: refused, nothing reset.
  Result<v1::ResetStatsResponse> anonymous = Connect(rig.address())->ResetStats({});
  EXPECT_EQ(anonymous.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(rig.executor().Stats(0).resets, 0u);
  std::unique_ptr<Client> client = Connect(rig.address(), token);
  Result<v1::ResetStatsResponse> unknown = client->ResetStats({99});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);  // as GetStats({99})
  Result<v1::ResetStatsResponse> reset = client->ResetStats({});
  ASSERT_TRUE(reset.ok()) << reset.status().ToString();
  ASSERT_EQ(reset->task_ids_size(), 1);
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok());
  const v1::TaskStats& t = stats->tasks(0);
  EXPECT_EQ(t.resets(), 1u);
  EXPECT_EQ(t.cycles(), 10u);
  EXPECT_FALSE(t.latency().has_min_ns());
  EXPECT_FALSE(t.latency().has_max_ns());
  EXPECT_TRUE(t.latency().has_avg_ns()) << "averages are totals: kept";
  EXPECT_FALSE(t.has_jitter_min_ns());
}

TEST(GrpcReset, RtloopTopResetNeedsTheToken) {
  const ScratchDir dir("top_reset");
  const std::string token = (dir / "token").string();
  Rig rig;
  ASSERT_TRUE(BuildTokenRig(rig, token, "s3cret-token").ok());
  const std::string top = TargetFile("rtloop-top") + " " + rig.address() + " --timeout 30 --reset";
  const Command refused = RunCommand(top);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_EQ(rig.executor().Stats(0).resets, 0u);
  const Command done = RunCommand(top + " --token-file " + token);
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("statistics of 1 task reset"), std::string::npos) << done.output;
  EXPECT_EQ(rig.executor().Stats(0).resets, 1u);
}

TEST(GrpcReset, AServerWithoutATokenIsReadOnly) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, std::chrono::microseconds(100), 10)).ok());
  Result<v1::ResetStatsResponse> r = Connect(rig.address())->ResetStats({});
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("token"), std::string::npos) << r.status().message();
  EXPECT_EQ(rig.executor().Stats(0).resets, 0u);
}

// ---------------------------------------------------------------------------------------------
// Item 5: no zeros where there is no data

TEST(NoDataPresence, ATaskThatHasNotRunHasNoMinMaxAvgOrJitterOverGrpcAndInJson) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, std::chrono::milliseconds(1), 10)).ok());  // not started
  Result<v1::GetStatsResponse> stats = Connect(rig.address())->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  const v1::TaskStats& t = stats->tasks(0);
  EXPECT_EQ(t.cycles(), 0u);
  for (const v1::LatencyStats* q : {&t.latency(), &t.execution()}) {
    EXPECT_FALSE(q->has_min_ns());
    EXPECT_FALSE(q->has_max_ns());
    EXPECT_FALSE(q->has_avg_ns());
  }
  EXPECT_FALSE(t.has_jitter_min_ns());
  EXPECT_FALSE(t.has_jitter_max_ns());

  const Command c =
      RunCommand(TargetFile("rtloop-top") + " " + rig.address() + " --once --json --timeout 30");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("\"min_ns\":null"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\"max_ns\":null"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\"avg_ns\":null"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\"jitter_min_ns\":null"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("\"min_ns\":\"0\""), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("\"jitter_min_ns\":\"0\""), std::string::npos) << c.output;
  const Command text =
      RunCommand(TargetFile("rtloop-top") + " " + rig.address() + " --once --timeout 30");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("no data"), std::string::npos) << text.output;
}

// ---------------------------------------------------------------------------------------------
// Item 6: one scrape, one reading

TEST(MetricsOneReading, CyclesTotalEqualsTheLatencyHistogramCountInEveryScrapeWhileTheTaskRuns) {
  RuntimeConfig rc = TestRuntimeConfig("metrics_reading");
  rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  IdleTask task;
  TaskConfig tc = OtherTask("scan");
  tc.period = std::chrono::microseconds(250);
  ASSERT_TRUE((*rt)->AddTask(task, tc).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  const int port = (*rt)->http()->port();
  // Scrape until three readings (ticks) with cycles in them were seen, each scrape checked.
  std::set<double> readings;
  int scrapes = 0;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (readings.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    const HttpReply m = HttpGet(port, "/metrics");
    ASSERT_EQ(m.status, 200) << m.error;
    ++scrapes;
    const std::string labels = "{task=\"scan\"";
    const double cycles = Sample(m.body, "rtloop_task_cycles_total" + labels);
    const double latency = Sample(m.body, "rtloop_task_wakeup_latency_seconds_count" + labels);
    const double execution = Sample(m.body, "rtloop_task_execution_time_seconds_count" + labels);
    const double at = Sample(m.body, "rtloop_task_reading_timestamp_seconds" + labels);
    ASSERT_GE(cycles, 0) << m.body;
    if (latency < 0) {  // not read yet (the first tick after the task was added): no histogram
      std::this_thread::sleep_for(milliseconds(100));
      continue;
    }
    EXPECT_EQ(cycles, latency) << "scrape " << scrapes;
    EXPECT_LE(execution, latency) << "scrape " << scrapes;
    EXPECT_GT(at, 1.6e9) << "the reading's unix time";
    if (cycles > 0) readings.insert(at);
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_GE(readings.size(), 3u) << scrapes << " scrapes";
  ASSERT_TRUE((*rt)->Stop().ok());
}

}  // namespace
}  // namespace rtloop::telemetry
