// HousekeepingThread (issue 19, items 3 and 4): the side thread behind the Runtime's task monitor
// and housekeeping jobs. A signal whose default action ends the process is taken on this thread
// (forwarded from a thread that does not block it) and the process lives on; ticks come on it
// too; bad configs are refused with the fix.
#include "rtloop/framework/housekeeping_thread.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rtloop {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the thread saw, waited for with a bound.
struct Calls {
  std::mutex mu;
  std::condition_variable cv;
  int signals = 0;
  int ticks = 0;
  std::thread::id thread;

  void Add(HousekeepingThread::Wake w) {
    std::lock_guard<std::mutex> lock(mu);
    (w == HousekeepingThread::Wake::kSignal ? signals : ticks)++;
    thread = std::this_thread::get_id();
    cv.notify_all();
  }
  // Under the lock: the thread's write is ordered by it, not by the signal (which TSan does not
  // see as synchronisation: it reported the unlocked read racing with the next signal's write).
  std::thread::id Thread() {
    std::lock_guard<std::mutex> lock(mu);
    return thread;
  }
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, seconds(10), pred);
  }
};

TEST(HousekeepingThreadTest, SignalToTheProcessCallsOnWakeOnItsThreadAndDoesNotKillIt) {
  Calls calls;
  HousekeepingThread hk({.signal = SIGUSR2, .name = "hk-test"},
                        [&](HousekeepingThread::Wake w) { calls.Add(w); });
  ASSERT_TRUE(hk.ok()) << hk.status().ToString();
  EXPECT_NE(hk.tid(), 0);
  // To the process: the kernel may pick this thread (SIGUSR2 not blocked here): the forwarder
  // sends it on. The default action would have ended the test binary.
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(calls.WaitFor([&] { return calls.signals == 1; }));
  EXPECT_NE(calls.Thread(), std::this_thread::get_id());
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(calls.WaitFor([&] { return calls.signals == 2; }));
  hk.Stop();
  // The disposition is restored: SIGUSR2 is the default again.
  struct sigaction now {};
  sigaction(SIGUSR2, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(HousekeepingThreadTest, TicksComeOnTheThreadAndStopIsPrompt) {
  Calls calls;
  HousekeepingThread hk({.tick = milliseconds(5)},
                        [&](HousekeepingThread::Wake w) { calls.Add(w); });
  ASSERT_TRUE(hk.ok());
  ASSERT_TRUE(calls.WaitFor([&] { return calls.ticks >= 3; }));
  EXPECT_NE(calls.Thread(), std::this_thread::get_id());
  hk.Stop();
  hk.Stop();  // idempotent
}

TEST(HousekeepingThreadTest, BadConfigsAndASignalTakenTwiceAreRefusedWithTheFix) {
  const auto refused = [](const HousekeepingConfig& c) {
    HousekeepingThread hk(c, [](HousekeepingThread::Wake) {});
    EXPECT_FALSE(hk.ok());
    return hk.status().message();
  };
  EXPECT_NE(refused({.signal = SIGINT}).find("SIGUSR1"), std::string::npos);
  EXPECT_NE(refused({.signal = SIGSEGV}).find("SIGUSR1"), std::string::npos);
  EXPECT_NE(refused({}).find("neither a tick nor a signal"), std::string::npos);
  EXPECT_NE(refused({.tick = std::chrono::microseconds(10)}).find("1 ms"), std::string::npos);
  HousekeepingThread first({.signal = SIGUSR2}, [](HousekeepingThread::Wake) {});
  ASSERT_TRUE(first.ok());
  HousekeepingThread second({.signal = SIGUSR2}, [](HousekeepingThread::Wake) {});
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("already taken"), std::string::npos);
}

}  // namespace
}  // namespace rtloop
