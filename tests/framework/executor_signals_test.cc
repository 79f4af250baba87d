// Real-thread tests of Executor::RunUntilSignal and StopSignals: SIGINT/SIGTERM, duration, the
// forwarding of a stop signal that reaches another thread.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "executor_test_util.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

using namespace executor_testing;  // NOLINT(google-build-using-namespace): test helpers
using std::chrono::microseconds;
using std::chrono::milliseconds;

// ---- Signals ----

TEST(ExecutorTest, RunUntilSignalStopsInOrderOnSigterm) {
  auto ex = MakeExecutor();
  CountingTask a, b;
  ProbeTask probe;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  ASSERT_TRUE(ex->AddTask(b, OtherTask("b", milliseconds(2))).ok());
  ASSERT_TRUE(ex->AddTask(probe, OtherTask("probe", milliseconds(1))).ok());
  std::thread killer([&a] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // Once task a ran its first cycles (on a loaded machine its SCHED_OTHER thread can start late:
    // a fixed 100 ms once found 0 steps), at most 10 s: a task that never runs still fails below.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (a.steps.load() <= 10 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    kill(getpid(), SIGTERM);  // process-directed: only RunUntilSignal's sigtimedwait takes it
  });
  const TimePoint t0 = Now(Clock::kMonotonic);
  const Status s = ex->RunUntilSignal();
  killer.join();
  EXPECT_TRUE(s.ok()) << s.ToString();
  // The killer sends SIGTERM at most 10 s after t0; RunUntilSignal returns promptly after it.
  EXPECT_LT(Now(Clock::kMonotonic) - t0, std::chrono::seconds(20));
  EXPECT_TRUE(a.stopped.load());
  EXPECT_TRUE(b.stopped.load());
  EXPECT_GT(a.steps.load(), 10);
  EXPECT_TRUE(probe.sigterm_blocked);
  EXPECT_EQ(ex->State(0), TaskState::kStopped);
  EXPECT_EQ(ex->Stop().code(), StatusCode::kFailedPrecondition);
  // SIGTERM is unblocked again on this thread.
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGTERM), 0);
}

TEST(ExecutorTest, RunUntilSignalAfterStartWaitsForSigint) {
  auto ex = MakeExecutor();
  CountingTask a;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  std::thread killer([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::this_thread::sleep_for(milliseconds(50));
    kill(getpid(), SIGINT);
  });
  EXPECT_TRUE(ex->RunUntilSignal().ok());
  killer.join();
  EXPECT_TRUE(a.stopped.load());
}

TEST(ExecutorTest, RunUntilSignalReturnsWhenEveryTaskEnds) {
  auto ex = MakeExecutor();
  CountingTask a;
  TaskConfig tc = OtherTask("short", milliseconds(1));
  tc.max_cycles = 5;
  ASSERT_TRUE(ex->AddTask(a, tc).ok());
  EXPECT_TRUE(ex->RunUntilSignal().ok());
  EXPECT_EQ(a.steps.load(), 5);
}

TEST(ExecutorTest, RunUntilSignalEndsAfterItsDuration) {
  auto ex = MakeExecutor();
  CountingTask a;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ex->RunUntilSignal(milliseconds(200)).ok());
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_TRUE(a.stopped.load());
  EXPECT_EQ(ex->RunUntilSignal(milliseconds(-1)).code(), StatusCode::kInvalidArgument);
}

TEST(ExecutorTest, StopSignalToAThreadThatDoesNotBlockItStillStopsInOrder) {
  // In a child: a SIGTERM that reached an unblocked thread without the forwarding handler would
  // kill the whole test binary.
  const int rc = RunInChild([] {
    auto ex = MakeExecutor();
    CountingTask a;
    if (!ex->AddTask(a, OtherTask("a", milliseconds(1))).ok()) return 10;
    std::atomic<bool> quit{false};
    // An application thread created before RunUntilSignal(), with SIGTERM not blocked: the
    // kernel may deliver a process-directed SIGTERM to it; tgkill makes sure it does.
    std::atomic<pid_t> tid{0};
    std::thread app([&] {
      tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
      while (!quit.load()) std::this_thread::sleep_for(milliseconds(5));
    });
    while (tid.load() == 0) std::this_thread::sleep_for(milliseconds(1));
    std::thread killer([&] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      while (a.steps.load() < 20) std::this_thread::sleep_for(milliseconds(1));
      syscall(SYS_tgkill, getpid(), tid.load(), SIGTERM);
    });
    const Status s = ex->RunUntilSignal(std::chrono::seconds(15));
    killer.join();
    quit.store(true);
    app.join();
    if (!s.ok()) return 11;
    if (!a.stopped.load()) return 12;
    struct sigaction sa {};
    sigaction(SIGTERM, nullptr, &sa);
    return sa.sa_handler == SIG_DFL ? 0 : 13;  // the default disposition is back
  });
  EXPECT_EQ(rc, 0);
}

TEST(ExecutorTest, OnlyOneStopSignalsAtATime) {
  Result<std::unique_ptr<StopSignals>> first = StopSignals::Install();
  ASSERT_TRUE(first.ok());
  Result<std::unique_ptr<StopSignals>> second = StopSignals::Install();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*first)->Wait(milliseconds(1)), 0);
  first->reset();
  EXPECT_TRUE(StopSignals::Install().ok());
}

}  // namespace
}  // namespace rtloop
