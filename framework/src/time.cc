#include "rtloop/framework/time.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace rtloop {

namespace {

// The absolute sleep of every release waits here, once per cycle, so it calls the kernel directly:
// glibc's clock_nanosleep() is a thread cancellation point and brackets the system call with
// __pthread_{enable,disable}_asynccancel, about 60 of the RT thread's instructions per cycle
// (bench/rtcost/README.md); rtloop never cancels a thread. The kernel's call is the same one.
// 32-bit targets built with a 64-bit time_t need the _time64 system call.
#if defined(SYS_clock_nanosleep_time64)
inline constexpr long kClockNanosleep = sizeof(timespec::tv_sec) == 8 && sizeof(long) == 4
                                            ? SYS_clock_nanosleep_time64
                                            : SYS_clock_nanosleep;
#else
inline constexpr long kClockNanosleep = SYS_clock_nanosleep;
#endif

// clock_nanosleep(TIMER_ABSTIME) without the cancellation point: 0 or the error number.
inline int AbsoluteSleep(clockid_t clock, const timespec& deadline) noexcept {
  return syscall(kClockNanosleep, clock, TIMER_ABSTIME, &deadline, nullptr) == 0 ? 0 : errno;
}

// True when an EINTR should end the sleep.
inline bool Cancelled(const std::atomic<bool>* cancel) noexcept {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

int SleepUntilImpl(Clock clock, TimePoint deadline, const std::atomic<bool>* cancel) noexcept {
  const timespec ts = deadline.ToTimespec();
  for (;;) {
    const int rc = AbsoluteSleep(ToClockId(clock), ts);
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
