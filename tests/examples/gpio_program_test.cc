// rtloop-gpio-toggle as a user runs it, without real-time privileges: the simulated output on a
// loopback telemetry port (the task and its busy delay as telemetry sees them, the report on
// Ctrl-C), a fake LED directory (the trigger put back, the LED left off), and the errors that
// list what exists.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "example_child.h"
#include "rtloop/telemetry/client.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

namespace fs = std::filesystem;
using rtloop::testing::Child;
using rtloop::testing::ReadFile;
using std::chrono::seconds;

std::string FirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(GpioProgramTest, SimulatedOutputTogglesIsServedAndReportsOnCtrlC) {
  Child toggle({TargetFile("rtloop-gpio-toggle"), "--sim", "--period-us=1000", "--delay-us=100",
                "--telemetry=127.0.0.1:0"},
               /*drop_rt=*/true);
  std::unique_ptr<Client> client = toggle.ConnectTelemetry();
  ASSERT_NE(client, nullptr);
  Result<v1::ListTasksResponse> tasks = client->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->tasks_size(), 1);
  EXPECT_EQ(tasks->tasks(0).task().name(), "toggle");
  EXPECT_EQ(tasks->tasks(0).task().period_ns(), 1'000'000);
  EXPECT_TRUE(tasks->tasks(0).non_rt_fallback());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->tasks_size(), 1);
  EXPECT_EQ(stats->tasks(0).state(), v1::TASK_STATE_RUNNING);
  EXPECT_GT(stats->tasks(0).cycles(), 100u);
  // Every cycle busy-waits 100 us after its toggle: no execution time is shorter.
  EXPECT_GE(stats->tasks(0).execution().min_ns(), 100'000);

  EXPECT_EQ(toggle.Stop(SIGINT), 0) << ReadFile(toggle.err());
  const std::string out = ReadFile(toggle.out());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m,
                                std::regex("toggled ([0-9]+) times: simulated \\(memory\\), "
                                           "([0-9]+) writes, 0 failed")))
      << out;
  EXPECT_GT(std::stoull(m[1]), 100u);
  EXPECT_EQ(std::stoull(m[2]), std::stoull(m[1]) + 1) << "one more write: low at the end";
  EXPECT_NE(out.find("square wave of period 2ms"), std::string::npos) << out;
  EXPECT_NE(out.find("wake-up latency (us)"), std::string::npos) << out;
  EXPECT_NE(ReadFile(toggle.err()).find("SIGINT: stopping"), std::string::npos);
}

// A fake /sys/class/leds with one LED whose heartbeat trigger must be put back.
class FakeLedDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("rtloop_gpio_leds_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "status");
    std::ofstream(root_ / "status" / "brightness") << "0\n";
    std::ofstream(root_ / "status" / "max_brightness") << "255\n";
    std::ofstream(root_ / "status" / "trigger") << "none timer [heartbeat]\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FakeLedDir, LedOutputTogglesAndPutsTheTriggerBack) {
  Child toggle({TargetFile("rtloop-gpio-toggle"), "--led=status", "--leds-dir=" + root_.string(),
                "--duration=1", "--telemetry=off"},
               /*drop_rt=*/true);
  EXPECT_EQ(toggle.Stop(0), 0) << ReadFile(toggle.err());
  const std::string out = ReadFile(toggle.out());
  EXPECT_NE(out.find("LED status (" + (root_ / "status" / "brightness").string() + ", on = 255)"),
            std::string::npos)
      << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("([0-9]+) writes, 0 failed"))) << out;
  EXPECT_GT(std::stoull(m[1]), 100u);
  EXPECT_EQ(FirstLine(root_ / "status" / "trigger"), "heartbeat");
  EXPECT_EQ(FirstLine(root_ / "status" / "brightness"), "0") << "left off";
}

TEST_F(FakeLedDir, MissingOutputsListWhatExists) {
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  } cases[] = {
      {{"--led=power", "--leds-dir=" + root_.string()},
       1,
       "no LED \"power\" in " + root_.string() + " — LEDs there: status"},
      {{"--leds-dir=" + root_.string()},
       2,
       "choose an output: --sim, --led=NAME (LEDs in " + root_.string() +
           ": status), or --chip=CHIP"},
      {{"--sim", "--chip=gpiochip0", "--line=1"}, 2, "choose one output"},
      {{"--chip=gpiochip0"}, 2, "--chip needs --line=LINE too"},
      {{"--sim", "--delay-us=2000", "--period-us=1000"}, 2, "give a delay shorter than the period"},
      // The run options are checked before the output opens or a server starts.
      {{"--sim", "--duration=1", "--telemetry=bogus"}, 2, "--telemetry: bad address \"bogus\""},
      {{"--sim", "--duration=1", "--telemetry=127.0.0.1:0", "--record=-"},
       2,
       "--record '-': this output cannot go to standard output"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {TargetFile("rtloop-gpio-toggle")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Child toggle(argv, /*drop_rt=*/true);
    EXPECT_EQ(toggle.Stop(0), c.status) << c.args[0];
    const std::string err = ReadFile(toggle.err());
    EXPECT_NE(err.find(c.message), std::string::npos) << c.message << " in:\n" << err;
  }
  // A GPIO chip that is not there: the chips that are (or that there are none) are named.
  Child gpio({TargetFile("rtloop-gpio-toggle"), "--chip=no-such-chip", "--line=3"},
             /*drop_rt=*/true);
  EXPECT_EQ(gpio.Stop(0), 1);
  const std::string err = ReadFile(gpio.err());
  EXPECT_TRUE(err.find("GPIO chip \"no-such-chip\" not found — chips here: ") !=
                  std::string::npos ||
              err.find("this build has no libgpiod") != std::string::npos)
      << err;
}

}  // namespace
}  // namespace rtloop::telemetry
