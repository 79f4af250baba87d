// rtloop-plc as a user runs it, without real-time privileges, on a loopback telemetry port: the
// three tasks run and are served over gRPC, SIGUSR1 prints the task monitor while it runs, an
// injected overrun trips the logic's watchdog (safe outputs, the fault report, the task in the
// fault state over gRPC), and bad input is a one-line error that starts nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "example_child.h"
#include "http_test_util.h"
#include "rtloop/telemetry/client.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using rtloop::testing::Child;
using rtloop::testing::ReadFile;
using std::chrono::seconds;

// conveyor.toml's tasks on CPU 0 (every machine has it), with an I/O-scan watchdog that the
// scheduler of a shared VM without RT privileges cannot trip by itself (1 ms x 10 instead of
// 500 us x 3), and a short conveyor so that boxes are delivered within the run.
constexpr char kTestConfig[] = R"(# rtloop-plc test configuration
[plc]
name = "test-conveyor"

[[task]]
name = "io_scan"
program = "io_scan"
period = "1ms"
cpu = 0
priority = 90
watchdog = "1ms"
sensitivity = 10

[[task]]
name = "logic"
program = "logic"
period = "10ms"
cpu = 0
priority = 80
watchdog = "5ms"
sensitivity = 2

[[task]]
name = "housekeeping"
program = "housekeeping"
period = "100ms"
cpu = 0
priority = 20
watchdog = "50ms"

[conveyor]
belt_length_mm = 400
speed_mm_per_s = 1000
item_length_mm = 100
item_interval = "400ms"
removal_delay = "100ms"
start_press_at = "50ms"
)";

// A configuration file in a directory of the test's own.
class PlcProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("rtloop_plc_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string WriteConfig(const std::string& text, const std::string& name = "plc.toml") {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

// True when `exposition` has a line of the series `name` with every one of `labels` and ending in
// `value`.
bool HasSeries(const std::string& exposition, const std::string& name,
               const std::vector<std::string>& labels, const std::string& value) {
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0 || line.size() < value.size() ||
        line.compare(line.size() - value.size(), value.size(), value) != 0) {
      continue;
    }
    bool all = true;
    for (const std::string& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return true;
  }
  return false;
}

// The task of `stats` named `name`; nullptr if none.
const v1::TaskStats* Find(const v1::GetStatsResponse& stats, const std::string& name) {
  for (const v1::TaskStats& t : stats.tasks()) {
    if (t.task_name() == name) return &t;
  }
  return nullptr;
}

TEST_F(PlcProgramTest, RunsItsTasksServesThemAndPrintsTheMonitorOnSigusr1AndAtExit) {
  Child plc({TargetFile("rtloop-plc"), "--config=" + WriteConfig(kTestConfig), "--duration=4",
             "--telemetry=127.0.0.1:0"},
            /*drop_rt=*/true);
  std::unique_ptr<Client> client = plc.ConnectTelemetry();
  ASSERT_NE(client, nullptr);
  Result<v1::ListTasksResponse> tasks = client->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->tasks_size(), 3);
  const char* names[] = {"io_scan", "logic", "housekeeping"};
  const std::int64_t periods[] = {1'000'000, 10'000'000, 100'000'000};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(tasks->tasks(i).task().name(), names[i]);
    EXPECT_EQ(tasks->tasks(i).task().period_ns(), periods[i]);
    EXPECT_EQ(tasks->tasks(i).task().policy(), v1::SCHED_POLICY_FIFO);
    EXPECT_TRUE(tasks->tasks(i).non_rt_fallback()) << "the child had no RT privilege";
  }
  EXPECT_EQ(tasks->tasks(0).task().priority(), 90);

  // While it runs: every task cycles, none faulted; SIGUSR1 prints the monitor now.
  ASSERT_TRUE(Child::WaitFor(plc.out(), "kill -USR1", seconds(10))) << ReadFile(plc.out());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  for (const char* name : names) {
    const v1::TaskStats* t = Find(*stats, name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->state(), v1::TASK_STATE_RUNNING) << name;
    EXPECT_GT(t->cycles(), 0u) << name;
    EXPECT_EQ(t->faults(), 0u) << name;
  }
  EXPECT_GT(Find(*stats, "io_scan")->cycles(), Find(*stats, "logic")->cycles());
  ASSERT_TRUE(plc.Signal(SIGUSR1));
  EXPECT_TRUE(Child::WaitFor(plc.out(), "task monitor", seconds(5))) << "no monitor on SIGUSR1:\n"
                                                                     << ReadFile(plc.out());

  EXPECT_EQ(plc.Stop(0), 0) << ReadFile(plc.err());
  const std::string out = ReadFile(plc.out());
  EXPECT_EQ(Child::Count(out, "PLC \"test-conveyor\" task monitor"), 2) << out;  // SIGUSR1, exit
  for (const char* part :
       {"io_scan", "wake-up latency (us)", "execution time (us)", "period jitter (us)", "watchdog",
        "outputs: from the logic task", "no fault", "other!"}) {
    EXPECT_NE(out.find(part), std::string::npos) << part << " in:\n" << out;
  }
  EXPECT_EQ(out.find("TRIPPED"), std::string::npos) << out;
  // Boxes went through the process image and the logic: some were delivered.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("; ([0-9]+) items delivered"))) << out;
  EXPECT_GT(std::stoi(m[1]), 0) << out;
  const std::string err = ReadFile(plc.err());
  EXPECT_NE(err.find("SCHED_OTHER (NOT real-time)"), std::string::npos) << err;
}

TEST_F(PlcProgramTest, InjectedOverrunTripsTheWatchdogMakesOutputsSafeAndFaultsTheTask) {
  Child plc({TargetFile("rtloop-plc"), "--config=" + WriteConfig(kTestConfig), "--duration=3",
             "--inject-overrun=logic", "--telemetry=127.0.0.1:0", "--metrics=127.0.0.1:0"},
            /*drop_rt=*/true);
  std::unique_ptr<Client> client = plc.ConnectTelemetry();
  ASSERT_NE(client, nullptr);
  // The trip (from t = 1 s) is announced on stderr, and the task is in the fault state over gRPC
  // within one of its periods.
  ASSERT_TRUE(Child::WaitFor(plc.err(), "PLC FAULT", seconds(10))) << ReadFile(plc.err());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  const v1::TaskStats* logic = Find(*stats, "logic");
  ASSERT_NE(logic, nullptr);
  EXPECT_EQ(logic->state(), v1::TASK_STATE_FAULT);
  EXPECT_EQ(logic->faults(), 1u);
  EXPECT_EQ(Find(*stats, "io_scan")->state(), v1::TASK_STATE_RUNNING) << "holds the outputs safe";
  EXPECT_EQ(Find(*stats, "housekeeping")->state(), v1::TASK_STATE_RUNNING);
  Result<v1::ListTasksResponse> tasks = client->ListTasks();
  ASSERT_TRUE(tasks.ok());
  EXPECT_EQ(tasks->tasks(1).task().state(), v1::TASK_STATE_FAULT);
  // And on the HTTP endpoint: the logic task's state series says fault, its fault is counted.
  const std::string http = plc.WaitForHttpAddress();
  ASSERT_FALSE(http.empty()) << ReadFile(plc.err());
  // The counters are those of the endpoint's last reading (<= 1 s old, taken with the
  // histograms): wait (bounded) for the one after the trip.
  testing::HttpReply metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = testing::HttpGet(std::atoi(http.substr(http.rfind(':') + 1).c_str()), "/metrics");
    ASSERT_EQ(metrics.status, 200) << metrics.error;
    if (HasSeries(metrics.body, "rtloop_task_faults_total{", {"task=\"logic\""}, " 1")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(
      HasSeries(metrics.body, "rtloop_task_state{", {"task=\"logic\"", "state=\"fault\""}, " 1"))
      << metrics.body;
  EXPECT_TRUE(HasSeries(metrics.body, "rtloop_task_faults_total{", {"task=\"logic\""}, " 1"))
      << metrics.body;

  EXPECT_EQ(plc.Stop(0), 3) << "exit status 3: the PLC faulted\n" << ReadFile(plc.err());
  const std::string out = ReadFile(plc.out());
  for (const char* part :
       {"will inject 2 overruns of task \"logic\" (watchdog 5ms x 2) from cycle 100",
        "outputs: SAFE (motor off, red lamp) since the PLC fault", "motor off, lamp red;",
        "PLC FAULT: watchdog of task \"logic\" (10ms, watchdog 5ms x 2) tripped at cycle 10",
        "task halted, outputs set to safe values"}) {
    EXPECT_NE(out.find(part), std::string::npos) << part << " in:\n" << out;
  }
  // The trip's reason: two injected 6.2 ms cycles in a row, or (the test runs SCHED_OTHER, on a
  // loaded machine the first spin can be preempted past 10 ms: seen once in ctest -j2) the first
  // alone lasting longer than watchdog x sensitivity. The monitor's row says which.
  const bool in_a_row = out.find("2 consecutive violations;") != std::string::npos;
  const bool one_long =
      out.find("one cycle longer than watchdog x sensitivity") != std::string::npos;
  EXPECT_TRUE(in_a_row != one_long) << out;
  const std::string n = in_a_row ? "2" : "1";
  // The monitor's rows: the logic task in the fault state, its watchdog tripped.
  EXPECT_TRUE(std::regex_search(out, std::regex("\\n +1 logic +fault "))) << out;
  EXPECT_TRUE(
      std::regex_search(out, std::regex("\\n  logic +5ms +2  TRIPPED +" + n + " +" + n + "\\n")))
      << out;
  EXPECT_EQ(Child::Count(ReadFile(plc.err()), "PLC FAULT"), 1) << "reported once";
}

TEST_F(PlcProgramTest, BadInputIsAOneLineErrorAndNothingStarts) {
  std::string bad = kTestConfig;
  bad.replace(bad.find("priority = 80"), 13, "priority = 120");
  const std::string fifo = (dir_ / "plc.fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  } cases[] = {
      {{"--config=" + WriteConfig(bad, "bad.toml")},
       2,
       "bad.toml:19: task \"logic\": key \"priority\" = 120 is out of range"},
      {{"--config=" + (dir_ / "missing.toml").string()}, 2, "missing.toml"},
      {{"--config=" + WriteConfig(kTestConfig), "--inject-overrun=nosuch"},
       2,
       "no such task in " + (dir_ / "plc.toml").string() +
           " — use one of io_scan, logic, "
           "housekeeping"},
      {{"--duration=soon"}, 2, "bad --duration \"soon\""},
      {{"--record=x.rtlog", "--telemetry=off"}, 2, "--record needs telemetry"},
      {{"--metrics", "--telemetry=off"}, 2, "--metrics needs telemetry"},
      {{"--frobnicate"}, 2, "unknown argument \"--frobnicate\""},
      {{"--config=" + WriteConfig(kTestConfig), "--require-rt", "--telemetry=off"},
       1,
       "SCHED_FIFO"},
      // Only a regular file of a configuration's size is read: a device, a directory or a FIFO
      // is refused by what it is, without reading (/dev/zero grew to 4 GB, a FIFO blocked).
      {{"--config=/dev/zero"}, 2, "PLC configuration '/dev/zero': is a character device"},
      {{"--config=" + dir_.string()},
       2,
       "PLC configuration '" + dir_.string() + "': is a directory"},
      {{"--config=" + fifo}, 2, "PLC configuration '" + fifo + "': is a named pipe (FIFO)"},
      // Every value is checked before anything starts (the gRPC server served, then exit 1);
      // the binary sample log never goes to stdout, between the monitor's text.
      {{"--config=" + WriteConfig(kTestConfig), "--duration=1", "--telemetry=bogus"},
       2,
       "rtloop-plc: --telemetry: bad address \"bogus\""},
      {{"--config=" + WriteConfig(kTestConfig), "--duration=1", "--telemetry=127.0.0.1:0",
        "--metrics=localhost"},
       2,
       "rtloop-plc: --metrics: bad address \"localhost\""},
      {{"--config=" + WriteConfig(kTestConfig), "--duration=1", "--telemetry=127.0.0.1:0",
        "--record=/dev/full"},
       2,
       "rtloop-plc: --record '/dev/full': is a character device"},
      {{"--config=" + WriteConfig(kTestConfig), "--duration=1", "--telemetry=127.0.0.1:0",
        "--record=-"},
       2,
       "rtloop-plc: --record '-': this output cannot go to standard output"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {TargetFile("rtloop-plc")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Child plc(argv, /*drop_rt=*/true);
    EXPECT_EQ(plc.Stop(0), c.status) << c.args.back();
    const std::string err = ReadFile(plc.err());
    EXPECT_NE(err.find(c.message), std::string::npos) << c.message << " in:\n" << err;
    EXPECT_EQ(err.find("serving on"), std::string::npos) << err;
    EXPECT_EQ(ReadFile(plc.out()).find("task monitor"), std::string::npos);
    if (c.status == 2) {  // a bad argument: one line, nothing else
      EXPECT_EQ(Child::Count(err, "\n"), 1) << "one line:\n" << err;
      EXPECT_EQ(ReadFile(plc.out()), "") << c.args.back();
    }
  }
}

// --record=FILE naming --config (under any name: a hard link, ./FILE) used to replace the
// configuration with a sample log (exit 0). No output may name an input: exit 2, file intact.
TEST_F(PlcProgramTest, TheRecordNeverOverwritesTheConfiguration) {
  const std::string config = WriteConfig(kTestConfig);
  const std::string hard = (dir_ / "hard.toml").string();
  ASSERT_EQ(::link(config.c_str(), hard.c_str()), 0);
  for (const std::string& record : {config, (dir_ / "." / "plc.toml").string(), hard}) {
    Child plc({TargetFile("rtloop-plc"), "--config=" + config, "--record=" + record,
               "--duration=0.5", "--telemetry=127.0.0.1:0"},
              /*drop_rt=*/true);
    EXPECT_EQ(plc.Stop(0), 2) << record;
    const std::string err = ReadFile(plc.err());
    EXPECT_NE(err.find("--record '" + record + "' is the same file as --config '" + config + "'"),
              std::string::npos)
        << err;
    EXPECT_TRUE(ReadFile(config) == kTestConfig) << "the configuration was overwritten";
  }
}

}  // namespace
}  // namespace rtloop::telemetry
