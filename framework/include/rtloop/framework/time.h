// Time on a chosen POSIX clock: a TimePoint type, conversions to and from timespec, Now(), and
// sleeps that resume after signals (or, given a cancel flag, end once it is set).
//
//   const Clock clock = Clock::kMonotonic;
//   TimePoint next = Now(clock) + std::chrono::milliseconds(1);
//   SleepUntil(clock, next);  // returns at or after `next`, even if a signal interrupts the sleep
//
// A TimePoint is a position on one clock (ns since that clock's epoch), not a duration: the
// difference of two TimePoints is a std::chrono::nanoseconds. Threading: no shared state; any
// thread. All functions here are RT-safe: Now() is clock_gettime, the sleeps are clock_nanosleep
// (or nanosleep) in an EINTR loop. These loops are the only ones in rtloop: the executor's release
// waiters use the cancellable forms, so that Stop() can end a long sleep with a signal.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <compare>
#include <cstdint>

namespace rtloop {

enum class Clock {
  kMonotonic,  // CLOCK_MONOTONIC: the default, immune to wall-clock steps
  kRealtime,   // CLOCK_REALTIME: wall clock (cyclictest -c 1)
};

// RT-safe.
constexpr clockid_t ToClockId(Clock clock) noexcept {
  return clock == Clock::kRealtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

// RT-safe.
constexpr std::chrono::nanoseconds FromTimespec(const timespec& ts) noexcept {
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Normalised (0 <= tv_nsec < 1e9) also for negative durations. RT-safe.
constexpr timespec ToTimespec(std::chrono::nanoseconds d) noexcept {
  std::int64_t ns = d.count();
  std::int64_t sec = ns / 1'000'000'000;
  std::int64_t rem = ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --sec;
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(sec);
  ts.tv_nsec = static_cast<long>(rem);
  return ts;
}

// A point on one clock, in ns since that clock's epoch. Trivially copyable; RT-safe throughout.
class TimePoint {
 public:
  constexpr TimePoint() noexcept = default;
  constexpr explicit TimePoint(std::chrono::nanoseconds since_epoch) noexcept
      : since_epoch_(since_epoch) {}
  static constexpr TimePoint FromTimespec(const timespec& ts) noexcept {
    return TimePoint(rtloop::FromTimespec(ts));
  }
  // Later than any time a clock reaches ("never").
  static constexpr TimePoint Max() noexcept { return TimePoint(std::chrono::nanoseconds::max()); }

  constexpr std::chrono::nanoseconds since_epoch() const noexcept { return since_epoch_; }
  constexpr std::int64_t ns() const noexcept { return since_epoch_.count(); }
  constexpr timespec ToTimespec() const noexcept { return rtloop::ToTimespec(since_epoch_); }

  constexpr TimePoint& operator+=(std::chrono::nanoseconds d) noexcept {
    since_epoch_ += d;
    return *this;
  }
  constexpr TimePoint& operator-=(std::chrono::nanoseconds d) noexcept {
    since_epoch_ -= d;
    return *this;
  }
  friend constexpr TimePoint operator+(TimePoint t, std::chrono::nanoseconds d) noexcept {
    return TimePoint(t.since_epoch_ + d);
  }
  friend constexpr TimePoint operator-(TimePoint t, std::chrono::nanoseconds d) noexcept {
    return TimePoint(t.since_epoch_ - d);
  }
  friend constexpr std::chrono::nanoseconds operator-(TimePoint a, TimePoint b) noexcept {
    return a.since_epoch_ - b.since_epoch_;
  }
  friend constexpr auto operator<=>(TimePoint, TimePoint) noexcept = default;

 private:
  std::chrono::nanoseconds since_epoch_{0};
};

// clock_gettime on `clock` (inline: the RT loop reads the clock twice a cycle). RT-safe.
inline TimePoint Now(Clock clock) noexcept {
  timespec ts{};
  clock_gettime(ToClockId(clock), &ts);
  return TimePoint::FromTimespec(ts);
}

// clock_nanosleep(TIMER_ABSTIME) until `deadline` (the system call itself, not glibc's cancellation
// point: time.cc); resumes after EINTR. Returns 0, or the error
// number clock_nanosleep reported (EINVAL for a bad deadline). RT-safe.
int SleepUntil(Clock clock, TimePoint deadline) noexcept;

// Relative sleep for `duration` on `clock` (clock_nanosleep without TIMER_ABSTIME); resumes after
// EINTR with the remaining time. Returns 0 or the error number. RT-safe.
int SleepFor(Clock clock, std::chrono::nanoseconds duration) noexcept;

// The same sleeps, cancellable: a signal that interrupts the sleep while `cancel` is true ends it
// (returning EINTR); other interruptions resume it. Set `cancel`, then send the sleeping thread a
// signal that has a handler (not SIG_IGN, no SA_RESTART needed). RT-safe.
int SleepUntil(Clock clock, TimePoint deadline, const std::atomic<bool>& cancel) noexcept;
int SleepFor(Clock clock, std::chrono::nanoseconds duration,
             const std::atomic<bool>& cancel) noexcept;
// nanosleep(2) for `duration` (Linux measures it on CLOCK_MONOTONIC), cancellable as above: the
// wait of cyclictest -s. Returns 0 or the error number. RT-safe.
int NanosleepFor(std::chrono::nanoseconds duration, const std::atomic<bool>& cancel) noexcept;

// Busy-waits (reads `clock` in a loop, never sleeps) until `duration` has passed; returns the time
// it finished. For deliberate CPU work inside a Step, such as a fixed delay between two GPIO
// writes or a test's injected overrun: the thread keeps its CPU, so its time is not at the mercy
// of the scheduler's wake-up latency. RT-safe (clock_gettime only; bounded by `duration`).
TimePoint SpinFor(Clock clock, std::chrono::nanoseconds duration) noexcept;

}  // namespace rtloop
