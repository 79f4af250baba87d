#include "rtloop/framework/time.h"

#include <cerrno>

namespace rtloop {

TimePoint Now(Clock clock) noexcept {
  timespec ts{};
  clock_gettime(ToClockId(clock), &ts);
  return TimePoint::FromTimespec(ts);
}

int SleepUntil(Clock clock, TimePoint deadline) noexcept {
  const timespec ts = deadline.ToTimespec();
  for (;;) {
    // clock_nanosleep returns the error number instead of setting errno.
    const int rc = clock_nanosleep(ToClockId(clock), TIMER_ABSTIME, &ts, nullptr);
    if (rc != EINTR) return rc;
  }
}

int SleepFor(Clock clock, std::chrono::nanoseconds duration) noexcept {
  if (duration.count() <= 0) return 0;
  timespec request = ToTimespec(duration);
  timespec remaining{};
  for (;;) {
    const int rc = clock_nanosleep(ToClockId(clock), 0, &request, &remaining);
    if (rc != EINTR) return rc;
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
