#include "release_waiter.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "rtloop/framework/time.h"

namespace rtloop::internal {
namespace {

extern "C" void RtloopWakeHandler(int /*sig*/) {}

// clock_nanosleep(TIMER_ABSTIME, E_k): keeps the grid.
class AbsoluteWaiter final : public ReleaseWaiter {
 public:
  explicit AbsoluteWaiter(Clock clock) : clock_(clock) {}
  void Wait(CycleEngine& engine, const std::atomic<bool>& stop) noexcept override {
    (void)SleepUntil(clock_, engine.release(), stop);
  }

 private:
  const Clock clock_;
};

// cyclictest -r (clock_nanosleep relative) and -s (nanosleep): one period from just before the
// sleep, after an absolute first release.
class RelativeWaiter final : public ReleaseWaiter {
 public:
  RelativeWaiter(Clock clock, std::chrono::nanoseconds period, bool use_nanosleep)
      : clock_(clock), period_(period), use_nanosleep_(use_nanosleep) {}
  void Wait(CycleEngine& engine, const std::atomic<bool>& stop) noexcept override {
    if (engine.cycles() == 0) {
      (void)SleepUntil(clock_, engine.release(), stop);
      return;
    }
    engine.Rebase(Now(clock_) + period_);
    (void)(use_nanosleep_ ? NanosleepFor(period_, stop) : SleepFor(clock_, period_, stop));
  }

 private:
  const Clock clock_;
  const std::chrono::nanoseconds period_;
  const bool use_nanosleep_;
};

// cyclictest -x: a one-shot POSIX timer armed for E_k that signals this thread, taken with
// sigwait (the timer and wake signals are blocked on the thread).
class PosixTimerWaiter final : public ReleaseWaiter {
 public:
  explicit PosixTimerWaiter(timer_t timer) : timer_(timer) {
    sigemptyset(&wait_set_);
    sigaddset(&wait_set_, WakeSignal());
    sigaddset(&wait_set_, kTimerSignal);
  }
  ~PosixTimerWaiter() override { timer_delete(timer_); }
  PosixTimerWaiter(const PosixTimerWaiter&) = delete;
  PosixTimerWaiter& operator=(const PosixTimerWaiter&) = delete;

  void Wait(CycleEngine& engine, const std::atomic<bool>& stop) noexcept override {
    itimerspec its{};
    its.it_value = engine.release().ToTimespec();
    // An all-zero it_value disarms the timer instead of firing it.
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timer_settime(timer_, TIMER_ABSTIME, &its, nullptr);
    int sig = 0;
    while (sigwait(&wait_set_, &sig) == 0 && sig != kTimerSignal &&
           !stop.load(std::memory_order_relaxed)) {
    }
  }

 private:
  timer_t timer_;
  sigset_t wait_set_{};
};

}  // namespace

void InstallWakeHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = RtloopWakeHandler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the sleep must return EINTR
    sigaction(WakeSignal(), &sa, nullptr);
  });
}

void BlockWakeSignal() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WakeSignal());
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Result<std::unique_ptr<ReleaseWaiter>> MakeReleaseWaiter(const TaskConfig& config) {
  switch (config.wait_mode) {
    case WaitMode::kAbsolute:
      return std::unique_ptr<ReleaseWaiter>(new AbsoluteWaiter(config.clock));
    case WaitMode::kRelative:
    case WaitMode::kNanosleep:
      return std::unique_ptr<ReleaseWaiter>(new RelativeWaiter(
          config.clock, config.period, config.wait_mode == WaitMode::kNanosleep));
    case WaitMode::kPosixTimer: {
      sigevent sev{};
      sev.sigev_notify = SIGEV_THREAD_ID;
      sev.sigev_signo = kTimerSignal;
      // sigev_notify_thread_id (glibc 2.36 lacks the name).
      sev._sigev_un._tid = static_cast<int>(syscall(SYS_gettid));
      timer_t timer{};
      if (timer_create(ToClockId(config.clock), &sev, &timer) != 0) {
        return ErrnoError(errno, "cannot create the POSIX timer of task \"" + config.name + "\"",
                          "use another TaskConfig::wait_mode");
      }
      return std::unique_ptr<ReleaseWaiter>(new PosixTimerWaiter(timer));
    }
    case WaitMode::kTimerlat:
      return MakeTimerlatWaiter(config);
  }
  return InvalidArgumentError("task \"" + config.name + "\": unknown TaskConfig::wait_mode");
}

}  // namespace rtloop::internal
