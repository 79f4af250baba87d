#include "rtloop/framework/time.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(TimeTest, TimespecRoundTrips) {
  for (std::int64_t ns : {0LL, 1LL, 999'999'999LL, 1'000'000'000LL, 12'345'678'901LL}) {
    EXPECT_EQ(FromTimespec(ToTimespec(nanoseconds(ns))).count(), ns);
  }
}

TEST(TimeTest, NegativeDurationsAreNormalised) {
  const timespec ts = ToTimespec(nanoseconds(-1));
  EXPECT_EQ(ts.tv_sec, -1);
  EXPECT_EQ(ts.tv_nsec, 999'999'999);
  EXPECT_EQ(FromTimespec(ts).count(), -1);
  static_assert(ToTimespec(nanoseconds(-1'500'000'000)).tv_nsec == 500'000'000);
}

TEST(TimeTest, TimePointArithmetic) {
  constexpr TimePoint kT(nanoseconds(1000));
  static_assert((kT + nanoseconds(5)).ns() == 1005);
  static_assert((kT - nanoseconds(5)).ns() == 995);
  static_assert((kT + nanoseconds(5)) - kT == nanoseconds(5));
  static_assert(kT < kT + nanoseconds(1));
  static_assert(noexcept(Now(Clock::kMonotonic)));
  static_assert(noexcept(SleepUntil(Clock::kMonotonic, kT)));
  constexpr nanoseconds kOne(1);
  static_assert(noexcept(SleepFor(Clock::kMonotonic, kOne)));
  EXPECT_EQ(TimePoint::FromTimespec(kT.ToTimespec()), kT);
  EXPECT_EQ(ToClockId(Clock::kRealtime), CLOCK_REALTIME);
  EXPECT_EQ(ToClockId(Clock::kMonotonic), CLOCK_MONOTONIC);
}

TEST(TimeTest, NowIsMonotonicAndSleepUntilReturnsAfterDeadline) {
  const TimePoint a = Now(Clock::kMonotonic);
  const TimePoint deadline = a + milliseconds(2);
  EXPECT_EQ(SleepUntil(Clock::kMonotonic, deadline), 0);
  EXPECT_GE(Now(Clock::kMonotonic), deadline);
}

TEST(TimeTest, SleepForSleepsAtLeastTheDuration) {
  const TimePoint a = Now(Clock::kMonotonic);
  EXPECT_EQ(SleepFor(Clock::kMonotonic, milliseconds(2)), 0);
  EXPECT_GE(Now(Clock::kMonotonic) - a, milliseconds(2));
  EXPECT_EQ(SleepFor(Clock::kMonotonic, nanoseconds(-5)), 0);
}

TEST(TimeTest, SpinForReturnsAfterTheDuration) {
  const TimePoint a = Now(Clock::kMonotonic);
  const TimePoint end = SpinFor(Clock::kMonotonic, microseconds(300));
  EXPECT_GE(end - a, microseconds(300));
  EXPECT_LE(end, Now(Clock::kMonotonic));
  const TimePoint negative = SpinFor(Clock::kMonotonic, nanoseconds(-5));  // returns at once
  EXPECT_LE(negative, Now(Clock::kMonotonic));
}

TEST(TimeTest, RealtimeClockIsNearWallClock) {
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto ours = Now(Clock::kRealtime).since_epoch();
  EXPECT_LT(std::chrono::abs(ours - std::chrono::duration_cast<nanoseconds>(wall)),
            std::chrono::seconds(1));
}

std::atomic<int> g_signal_hits{0};
extern "C" void CountSignal(int /*sig*/) { g_signal_hits.fetch_add(1); }

// Interrupts `sleeper` with SIGUSR1 (handler without SA_RESTART, so sleeps see EINTR) every 2 ms
// until destroyed.
class Interrupter {
 public:
  explicit Interrupter(pthread_t sleeper) {
    struct sigaction sa {};
    sa.sa_handler = CountSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old_);
    thread_ = std::thread([this, sleeper] {
      while (!done_.load()) {
        pthread_kill(sleeper, SIGUSR1);
        std::this_thread::sleep_for(milliseconds(2));
      }
    });
  }
  ~Interrupter() {
    done_.store(true);
    thread_.join();
    sigaction(SIGUSR1, &old_, nullptr);
  }

 private:
  struct sigaction old_ {};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST(TimeTest, SleepsResumeAfterSignalsUntilTheDeadline) {
  g_signal_hits.store(0);
  Interrupter interrupter(pthread_self());
  const TimePoint deadline = Now(Clock::kMonotonic) + milliseconds(100);
  EXPECT_EQ(SleepUntil(Clock::kMonotonic, deadline), 0);
  EXPECT_GE(Now(Clock::kMonotonic), deadline);
  const TimePoint before = Now(Clock::kMonotonic);
  EXPECT_EQ(SleepFor(Clock::kMonotonic, milliseconds(100)), 0);
  EXPECT_GE(Now(Clock::kMonotonic) - before, milliseconds(100));
  EXPECT_GT(g_signal_hits.load(), 0);  // the sleeps really were interrupted
}

TEST(TimeTest, CancellableSleepsResumeUntilCancelledThenEndAtTheNextSignal) {
  g_signal_hits.store(0);
  std::atomic<bool> cancel{false};
  Interrupter interrupter(pthread_self());
  // Not cancelled: the interruptions are resumed, as without a flag.
  const TimePoint before = Now(Clock::kMonotonic);
  EXPECT_EQ(NanosleepFor(milliseconds(30), cancel), 0);
  EXPECT_EQ(SleepFor(Clock::kMonotonic, milliseconds(30), cancel), 0);
  EXPECT_GE(Now(Clock::kMonotonic) - before, milliseconds(60));
  EXPECT_GT(g_signal_hits.load(), 0);
  // Cancelled: the next signal (every 2 ms) ends each sleep with EINTR, long before 10 s.
  cancel.store(true);
  const TimePoint t0 = Now(Clock::kMonotonic);
  EXPECT_EQ(SleepUntil(Clock::kMonotonic, t0 + std::chrono::seconds(10), cancel), EINTR);
  EXPECT_EQ(SleepFor(Clock::kMonotonic, std::chrono::seconds(10), cancel), EINTR);
  EXPECT_EQ(NanosleepFor(std::chrono::seconds(10), cancel), EINTR);
  EXPECT_LT(Now(Clock::kMonotonic) - t0, std::chrono::seconds(9));
}

TEST(TimeTest, SleepUntilPastDeadlineReturnsImmediately) {
  EXPECT_EQ(SleepUntil(Clock::kMonotonic, Now(Clock::kMonotonic) - milliseconds(10)), 0);
}

}  // namespace
}  // namespace rtloop
