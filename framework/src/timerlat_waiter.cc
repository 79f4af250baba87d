// WaitMode::kTimerlat: the task's RT thread waits on the kernel's timerlat_fd (Linux >= 6.5), so
// that the timerlat tracer's timer releases it and `rtla timerlat -U` measures and explains the
// task itself (framework/README.md, "The timerlat wait mode").
//
//   rtla timerlat top -U -c 1 -p 1000 -a 100 &        # first: arms the tracer for a user workload
//   TaskConfig tc;  tc.cpus = {1};  tc.period = 1ms;  tc.wait_mode = WaitMode::kTimerlat;
//
// The kernel's interface (kernel/trace/trace_osnoise.c): open() of
// <tracefs>/osnoise/per_cpu/cpuN/timerlat_fd succeeds only while the timerlat tracer runs with
// NO_OSNOISE_WORKLOAD (EINVAL otherwise), for a thread allowed on CPU N alone (EPERM), once per CPU
// (EBUSY). Each read() returns 0 at the next period of the tracer's grid, which starts at the
// first read: "now + timerlat_period_us". A signal ends the wait early (read() still returns 0);
// a read() made before the armed release returns at once, without waiting.
//
// Threading: MakeTimerlatWaiter() runs on the task's thread after it is pinned (not RT-safe: file
// I/O, allocation); Wait() is RT-safe (one read() per cycle, a clock read; the fallback below).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "release_waiter.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/framework/time.h"

namespace rtloop::internal {
namespace {

class TimerlatWaiter final : public ReleaseWaiter {
 public:
  TimerlatWaiter(int fd, std::chrono::nanoseconds period) : fd_(fd), period_(period) {}
  ~TimerlatWaiter() override { close(fd_); }
  TimerlatWaiter(const TimerlatWaiter&) = delete;
  TimerlatWaiter& operator=(const TimerlatWaiter&) = delete;

  void Wait(CycleEngine& engine, const std::atomic<bool>& stop) noexcept override {
    if (failed_) {  // the interface failed once: the task goes on, on rtloop's own timer
      (void)SleepUntil(Clock::kMonotonic, engine.release(), stop);
      return;
    }
    if (!armed_) {
      // The tracer's grid starts at the first read: read one period before E_0, so that the
      // kernel's first release falls (a few hundred ns after) where the executor placed it.
      if (SleepUntil(Clock::kMonotonic, engine.release() - period_, stop) != 0 ||
          stop.load(std::memory_order_relaxed)) {
        return;
      }
      engine.Rebase(Now(Clock::kMonotonic) + period_);
      armed_ = true;
    }
    char buffer[8];
    if (read(fd_, buffer, sizeof buffer) < 0 && errno != EINTR) {
      Fail(engine, stop);
      return;
    }
    // A signal ends the kernel's wait early and a second read() would not wait at all: unless the
    // task is stopping, sleep out the rest of the period on rtloop's timer (the kernel's timer
    // still wakes nothing else; its next read() then records and waits as usual).
    if (!stop.load(std::memory_order_relaxed) && Now(Clock::kMonotonic) < engine.release()) {
      (void)SleepUntil(Clock::kMonotonic, engine.release(), stop);
    }
  }

 private:
  // read() failed (the thread migrated, or the tracer was reconfigured): say so once, on this
  // failure path only, and keep the task's releases on clock_nanosleep.
  void Fail(CycleEngine& engine, const std::atomic<bool>& stop) noexcept {
    failed_ = true;
    char line[200];
    const int n = std::snprintf(line, sizeof line,
                                "rtloop: WARNING: reading timerlat_fd failed (errno %d); the task "
                                "now waits on clock_nanosleep and rtla no longer sees it\n",
                                errno);
    if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<std::size_t>(n));
    (void)SleepUntil(Clock::kMonotonic, engine.release(), stop);
  }

  const int fd_;
  const std::chrono::nanoseconds period_;
  bool armed_ = false;
  bool failed_ = false;
};

// The tracefs mount holding osnoise/: /sys/kernel/tracing, else the debugfs path.
std::string OsnoiseDir() {
  for (const char* dir : {"/sys/kernel/tracing/osnoise", "/sys/kernel/debug/tracing/osnoise"}) {
    if (access(dir, F_OK) == 0) return dir;
  }
  return {};
}

std::string StartRtla(const TaskConfig& config) {
  return "start `rtla timerlat top -U -c " + std::to_string(config.cpus.front()) + " -p " +
         std::to_string(config.period.count() / 1000) +
         "` (or `rtla timerlat hist -U ...`) first: it enables the timerlat tracer for a "
         "user-space workload";
}

}  // namespace

Result<std::unique_ptr<ReleaseWaiter>> MakeTimerlatWaiter(const TaskConfig& config) {
  const std::string who = "task \"" + config.name + "\" (wait_mode timerlat)";
  const int cpu = config.cpus.front();  // ValidateTaskConfig: exactly one
  const std::string dir = OsnoiseDir();
  const std::string fd_path =
      dir.empty() ? std::string("/sys/kernel/tracing/osnoise/per_cpu/cpuN/timerlat_fd")
                  : dir + "/per_cpu/cpu" + std::to_string(cpu) + "/timerlat_fd";
  if (dir.empty() || access(fd_path.c_str(), F_OK) != 0) {
    return FailedPreconditionError(
        who + ": " + fd_path +
        " is missing: this kernel has no timerlat user-space interface, "
        "or tracefs is not mounted — it needs Linux >= 6.5 with CONFIG_TIMERLAT_TRACER and "
        "tracefs (mount -t tracefs nodev /sys/kernel/tracing); or use another "
        "TaskConfig::wait_mode");
  }
  // The tracer's period is global: the task must have the same, or its latencies would be
  // measured against releases it does not have.
  const std::string period_us = ReadFirstLine((dir + "/timerlat_period_us").c_str());
  const long long want_us = static_cast<long long>(config.period.count() / 1000);
  if (!period_us.empty() && std::atoll(period_us.c_str()) != want_us) {
    return FailedPreconditionError(
        who + ": the timerlat tracer's period is " + period_us + " us (" + dir +
        "/timerlat_period_us) but the task's is " + std::to_string(want_us) +
        " us — give rtla the task's period (-p " + std::to_string(want_us) + ")");
  }
  const int fd = open(fd_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    std::string fix;
    if (e == EINVAL) {
      fix = "the timerlat tracer is not waiting for a user-space workload — " + StartRtla(config);
    } else if (e == EBUSY) {
      fix = "another thread already waits on CPU " + std::to_string(cpu) +
            "'s timerlat_fd (rtla's own threads under -u, or another task): one per CPU; give "
            "rtla -U, not -u, and one timerlat task per CPU";
    } else if (e == EPERM) {
      fix = "the kernel refused the thread: it must be allowed on CPU " + std::to_string(cpu) +
            " alone (TaskConfig::cpus = {" + std::to_string(cpu) + "}) and run there";
    } else if (e == EACCES) {
      fix = "tracefs refused this user: run as root";
    } else {
      fix = StartRtla(config);
    }
    return ErrnoError(e, who + ": cannot open " + fd_path, fix);
  }
  return std::unique_ptr<ReleaseWaiter>(new TimerlatWaiter(fd, config.period));
}

}  // namespace rtloop::internal
