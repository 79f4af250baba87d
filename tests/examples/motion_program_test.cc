// rtloop-motion as a user runs it, without real-time privileges, on a loopback telemetry port:
// the loop is served over gRPC, prints its progress and (on SIGUSR1) the report while it runs,
// the tracking error of both axes at the end, and --record writes every cycle to a sample log.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "example_child.h"
#include "rtloop/telemetry/client.h"
#include "rtloop/telemetry/sample_log_file.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using rtloop::testing::Child;
using rtloop::testing::ReadFile;
using std::chrono::seconds;

TEST(MotionProgramTest, RunsTheLoopServesItRecordsItAndReportsTheTrackingError) {
  const std::string log =
      ::testing::TempDir() + "rtloop_motion_" + std::to_string(getpid()) + ".rtlog";
  Child recorder(
      {TargetFile("rtloop-motion"), "--duration=3", "--telemetry=127.0.0.1:0", "--record=" + log},
      /*drop_rt=*/true);
  std::unique_ptr<Client> client = recorder.ConnectTelemetry();
  ASSERT_NE(client, nullptr);
  Result<v1::ListTasksResponse> tasks = client->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->tasks_size(), 1);
  EXPECT_EQ(tasks->tasks(0).task().name(), "position");
  EXPECT_EQ(tasks->tasks(0).task().period_ns(), 500'000);
  EXPECT_EQ(tasks->tasks(0).task().cpus_size(), 1) << "pinned";
  EXPECT_TRUE(tasks->tasks(0).non_rt_fallback()) << "the child had no RT privilege";

  ASSERT_TRUE(Child::WaitFor(recorder.out(), "t=", seconds(10))) << ReadFile(recorder.out());
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->tasks_size(), 1);
  EXPECT_EQ(stats->tasks(0).state(), v1::TASK_STATE_RUNNING);
  EXPECT_GT(stats->tasks(0).cycles(), 0u);
  ASSERT_TRUE(recorder.Signal(SIGUSR1));
  EXPECT_TRUE(Child::WaitFor(recorder.out(), "wake-up latency (us)", seconds(5)))
      << "no report on SIGUSR1:\n"
      << ReadFile(recorder.out());

  EXPECT_EQ(recorder.Stop(0), 0) << ReadFile(recorder.err());
  const std::string out = ReadFile(recorder.out());
  EXPECT_GE(Child::Count(out, "\nt="), 2) << "a progress line every second:\n" << out;
  EXPECT_EQ(Child::Count(out, "wake-up latency (us)"), 2) << "SIGUSR1 and the end:\n" << out;
  // Both axes saw the same wake-up times; the one that takes its setpoint at the release time
  // (as if every cycle ran on time) pays for the latency in tracking error (A/B in one run).
  std::smatch wake, release;
  ASSERT_TRUE(std::regex_search(
      out, wake,
      std::regex("setpoint at the wake-up time W_k \\(this loop\\) +([0-9.]+) +([0-9.]+)")))
      << out;
  ASSERT_TRUE(std::regex_search(
      out, release,
      std::regex("setpoint at the release time E_k \\(shadow\\) +([0-9.]+) +([0-9.]+)")))
      << out;
  EXPECT_LT(std::stod(wake[1]), std::stod(release[1])) << "RMS:\n" << out;
  EXPECT_LT(std::stod(wake[2]), std::stod(release[2])) << "max:\n" << out;

  // The sample log holds every cycle the ring did not drop, and its trailer the final statistics.
  Result<SampleLogContents> file = ReadSampleLog(log);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->error.ok()) << file->error.ToString();
  ASSERT_EQ(file->header.tasks_size(), 1);
  EXPECT_EQ(file->header.tasks(0).name(), "position");
  ASSERT_TRUE(file->trailer.has_value());
  ASSERT_EQ(file->trailer->stats_size(), 1);
  const v1::TaskStats& final_stats = file->trailer->stats(0);
  std::uint64_t samples = 0;
  for (const v1::SampleBatch& b : file->batches)
    samples += static_cast<std::uint64_t>(b.latency_ns_size());
  EXPECT_EQ(samples, file->trailer->samples_recorded());
  EXPECT_EQ(samples + final_stats.ring_dropped(), final_stats.cycles());
  EXPECT_GT(samples, 1000u);
  std::remove(log.c_str());
}

// Every value is checked before anything starts: a bad address or sample log path is exit 2 with
// one line, no server served (it was: the gRPC server started, then exit 1), and the binary
// sample log never goes to stdout between the progress lines (it did with --record=-).
TEST(MotionProgramTest, BadArgumentsAreOneLineErrorsBeforeAnythingStarts) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--period-us=20"}, "bad --period-us \"20\": give a whole number from 100 to 10000"},
      {{"--priority=0"}, "bad --priority \"0\""},
      {{"--cpu=x"}, "bad --cpu \"x\""},
      {{"--duration=0.01"}, "give 0 (until Ctrl-C) or 0.1..86400 seconds"},
      {{"--record"}, "bad --record \"\": give a value: --record=VALUE"},
      {{"--duration=1", "--telemetry=bogus"}, "rtloop-motion: --telemetry: bad address \"bogus\""},
      {{"--duration=1", "--telemetry=127.0.0.1:0", "--metrics=127.0.0.1"},
       "rtloop-motion: --metrics: bad address \"127.0.0.1\": missing :PORT"},
      {{"--duration=1", "--telemetry=127.0.0.1:0", "--record=/dev/full"},
       "rtloop-motion: --record '/dev/full': is a character device"},
      {{"--duration=1", "--telemetry=127.0.0.1:0", "--record=-"},
       "rtloop-motion: --record '-': this output cannot go to standard output"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {TargetFile("rtloop-motion")};
    argv.insert(argv.end(), args.begin(), args.end());
    Child motion(argv, /*drop_rt=*/true);
    EXPECT_EQ(motion.Stop(0), 2) << args.back();
    const std::string err = ReadFile(motion.err());
    EXPECT_NE(err.find(message), std::string::npos) << message << " in:\n" << err;
    EXPECT_EQ(Child::Count(err, "\n"), 1) << "one line:\n" << err;
    EXPECT_EQ(ReadFile(motion.out()), "") << args.back();
  }
}

}  // namespace
}  // namespace rtloop::telemetry
