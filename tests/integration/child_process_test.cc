// ChildProcess (tests/testing/child_process.h), the one harness the tests start programs with:
// what Output() promises once the constructor returned, a start that fails saying why, exit
// statuses, the environment, captured outputs, dropped RT privileges, process groups, and no child
// left behind by the destructor.
//
//   ChildProcess child({"/bin/sleep", "10"}, dir / "out");
//   EXPECT_EQ(child.Output(), "");  // not an earlier child's output left in the file
//
// One test thread.
#include "child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "scratch_dir.h"

namespace rtloop::telemetry::testing {
namespace {

using ::rtloop::testing::ChildConfig;
using ::rtloop::testing::ChildProcess;
using ::rtloop::testing::ChildResult;
using ::rtloop::testing::RunChild;

ChildConfig Shell(const std::string& script) {
  ChildConfig config;
  config.argv = {"/bin/sh", "-c", script};
  return config;
}

// A test that reuses an output file (SecurityLimits.RtloopCyclicsTokenFileGuards... starts
// rtloop-cyclic twice) must not read the first child's output as the second's: under qemu-user,
// posix_spawn returned before the child had emptied the file (47 to 49 of 50 starts while the
// child did it), and that test read the first server's port. A race, hence 20 starts.
TEST(ChildProcessTest, OutputHoldsNothingOfAnEarlierChildOnceStarted) {
  const ScratchDir dir("child_output");
  const std::filesystem::path out = dir / "out";
  int stale = 0;
  for (int i = 0; i < 20; ++i) {
    std::ofstream(out) << "an earlier child's output\n";
    ChildProcess child({"/bin/sleep", "10"}, out);
    ASSERT_TRUE(child.started()) << child.error();
    stale += child.Output() != "";
  }
  EXPECT_EQ(stale, 0);
}

// A file that cannot be opened is an error the test can print, not a child writing nowhere.
TEST(ChildProcessTest, AnOutputThatCannotBeOpenedIsAnError) {
  const ScratchDir dir("child_output_missing");
  ChildProcess child({"/bin/sleep", "10"}, dir / "no-such-dir" / "out");
  EXPECT_FALSE(child.started());
  EXPECT_NE(child.error().find("no-such-dir"), std::string::npos) << child.error();
}

// A program that cannot be executed is the harness's own error, not a child exiting 127.
TEST(ChildProcessTest, AProgramThatCannotStartIsAnErrorNamingIt) {
  ChildProcess child({"/nonexistent/program", "--flag"});
  EXPECT_FALSE(child.started());
  EXPECT_EQ(child.pid(), 0);
  EXPECT_NE(child.error().find("/nonexistent/program"), std::string::npos) << child.error();
  EXPECT_NE(child.error().find(std::strerror(ENOENT)), std::string::npos) << child.error();
  EXPECT_FALSE(child.Wait(std::chrono::seconds(1)).has_value());
}

TEST(ChildProcessTest, WaitGivesTheExitCodeOr128PlusTheSignal) {
  EXPECT_EQ(RunChild(Shell("exit 3")).status, 3);
  EXPECT_EQ(RunChild(Shell("kill -KILL $$")).status, 128 + SIGKILL);
  ChildProcess sleeper({"/bin/sleep", "10"});
  EXPECT_FALSE(sleeper.Wait(std::chrono::milliseconds(50)).has_value()) << "still running";
  EXPECT_TRUE(sleeper.Running());
  EXPECT_EQ(sleeper.Stop(), 128 + SIGTERM);
  EXPECT_FALSE(sleeper.Running());
}

TEST(ChildProcessTest, CapturesBothOutputsAndAddsToTheEnvironment) {
  ChildConfig config = Shell("echo \"$RTLOOP_CHILD_TEST\"; echo to-stderr >&2; echo \"$HOME\"");
  config.env = {"RTLOOP_CHILD_TEST=value", "HOME=/replaced"};
  const ChildResult r = RunChild(config);
  EXPECT_EQ(r.status, 0) << r.error;
  EXPECT_EQ(r.out, "value\n/replaced\n");
  EXPECT_EQ(r.err, "to-stderr\n");
}

TEST(ChildProcessTest, DropRtZeroesTheRealTimePriorityLimit) {
  ChildConfig config = Shell("ulimit -r");
  config.drop_rt = true;
  EXPECT_EQ(RunChild(config).out, "0\n");
}

TEST(ChildProcessTest, ANewProcessGroupIsLedByTheChild) {
  ChildConfig config;
  config.argv = {"/bin/sleep", "10"};
  config.new_process_group = true;
  ChildProcess child(config);
  ASSERT_TRUE(child.started()) << child.error();
  EXPECT_EQ(getpgid(child.pid()), child.pid());
  EXPECT_TRUE(child.Signal(SIGKILL));
  EXPECT_EQ(child.Wait(std::chrono::seconds(10)), 128 + SIGKILL);
}

// No test leaves a process behind: a child that ignores SIGTERM gets SIGKILL after the grace.
TEST(ChildProcessTest, TheDestructorStopsAndReapsEvenAChildIgnoringSigterm) {
  pid_t pid = 0;
  {
    ChildConfig config = Shell("trap '' TERM; echo ready; while :; do sleep 1; done");
    config.stop_grace = std::chrono::milliseconds(200);
    ChildProcess child(config);
    ASSERT_TRUE(child.started()) << child.error();
    pid = child.pid();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (child.Stdout().empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "pid " << pid << " is still there (a zombie counts)";
}

// RunForked: the function's return value, what it printed, a signal as 128 + its number, and a
// child that hangs ended by the alarm; the parent's state is not touched by the child's changes.
TEST(RunForkedTest, ReturnsTheExitCodeTheOutputOr128PlusTheSignal) {
  const ::rtloop::testing::ForkedResult printed = ::rtloop::testing::RunForked([] {
    std::printf("from the child %d\n", 7);
    return 3;
  });
  EXPECT_EQ(printed.status, 3);
  EXPECT_EQ(printed.out, "from the child 7\n");

  int here = 1;
  EXPECT_EQ(::rtloop::testing::RunForked([&here] {
              here = 2;  // the child's copy
              return here;
            }).status,
            2);
  EXPECT_EQ(here, 1);

  EXPECT_EQ(::rtloop::testing::RunForked([] {
              raise(SIGKILL);
              return 0;
            }).status,
            128 + SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(::rtloop::testing::RunForked(
                [] {
                  for (;;) pause();
                  return 0;
                },
                std::chrono::seconds(1))
                .status,
            128 + SIGALRM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60))
      << "ended by its 1 s alarm, not the test's timeout";
}

}  // namespace
}  // namespace rtloop::telemetry::testing
