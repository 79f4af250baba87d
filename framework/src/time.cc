#include "rtloop/framework/time.h"

#include <cerrno>

namespace rtloop {

namespace {

// True when an EINTR should end the sleep.
inline bool Cancelled(const std::atomic<bool>* cancel) noexcept {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

int SleepUntilImpl(Clock clock, TimePoint deadline, const std::atomic<bool>* cancel) noexcept {
  const timespec ts = deadline.ToTimespec();
  for (;;) {
    // clock_nanosleep returns the error number instead of setting errno.
    const int rc = clock_nanosleep(ToClockId(clock), TIMER_ABSTIME, &ts, nullptr);
    if (rc != EINTR || Cancelled(cancel)) return rc;
  }
}

int SleepForImpl(Clock clock, std::chrono::nanoseconds duration,
                 const std::atomic<bool>* cancel) noexcept {
  if (duration.count() <= 0) return 0;
  timespec request = ToTimespec(duration);
  timespec remaining{};
  for (;;) {
    const int rc = clock_nanosleep(ToClockId(clock), 0, &request, &remaining);
    if (rc != EINTR || Cancelled(cancel)) return rc;
    request = remaining;
  }
}

}  // namespace

TimePoint Now(Clock clock) noexcept {
  timespec ts{};
  clock_gettime(ToClockId(clock), &ts);
  return TimePoint::FromTimespec(ts);
}

int SleepUntil(Clock clock, TimePoint deadline) noexcept {
  return SleepUntilImpl(clock, deadline, nullptr);
}

int SleepUntil(Clock clock, TimePoint deadline, const std::atomic<bool>& cancel) noexcept {
  return SleepUntilImpl(clock, deadline, &cancel);
}

int SleepFor(Clock clock, std::chrono::nanoseconds duration) noexcept {
  return SleepForImpl(clock, duration, nullptr);
}

int SleepFor(Clock clock, std::chrono::nanoseconds duration,
             const std::atomic<bool>& cancel) noexcept {
  return SleepForImpl(clock, duration, &cancel);
}

int NanosleepFor(std::chrono::nanoseconds duration, const std::atomic<bool>& cancel) noexcept {
  if (duration.count() <= 0) return 0;
  timespec request = ToTimespec(duration);
  timespec remaining{};
  for (;;) {
    if (nanosleep(&request, &remaining) == 0) return 0;
    // nanosleep sets errno (unlike clock_nanosleep).
    const int err = errno;
    if (err != EINTR || cancel.load(std::memory_order_relaxed)) return err;
    request = remaining;
  }
}

TimePoint SpinFor(Clock clock, std::chrono::nanoseconds duration) noexcept {
  const TimePoint end = Now(clock) + duration;
  TimePoint now = Now(clock);
  while (now < end) now = Now(clock);
  return now;
}

}  // namespace rtloop
