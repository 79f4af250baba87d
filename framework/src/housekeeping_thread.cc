#include "rtloop/framework/housekeeping_thread.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/time.h"

namespace rtloop {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kMaxSignal = 64;
// Per signal: the housekeeping thread that takes it (0: none), for the forwarding handler, and
// whether a HousekeepingThread holds it.
std::atomic<pid_t> g_target[kMaxSignal + 1];
std::atomic<bool> g_claimed[kMaxSignal + 1];

extern "C" void RtloopForwardHousekeepingSignal(int sig) {
  // Async-signal-safe: an atomic load and a raw syscall; errno preserved. The target blocks
  // `sig`: it stays pending there for sigtimedwait().
  const int saved_errno = errno;
  if (sig > 0 && sig <= kMaxSignal) {
    const pid_t tid = g_target[sig].load(std::memory_order_acquire);
    if (tid != 0) syscall(SYS_tgkill, getpid(), tid, sig);
  }
  errno = saved_errno;
}

bool Allowed(int sig) {
  if (sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGHUP || sig == SIGWINCH) return true;
  // SIGRTMIN+3 is the executor's wake-up signal for RT threads at Stop() (executor.h).
  return sig >= SIGRTMIN && sig <= SIGRTMAX && sig != SIGRTMIN + 3;
}

// Wakes `tid` out of its sigtimedwait (the signal is blocked there: it stays pending).
void Poke(pid_t tid, int sig) {
  if (tid != 0) syscall(SYS_tgkill, getpid(), tid, sig);
}

}  // namespace

std::string SignalName(int signal) {
  switch (signal) {
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGHUP:
      return "SIGHUP";
    case SIGWINCH:
      return "SIGWINCH";
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      break;
  }
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    return signal == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(signal - SIGRTMIN);
  }
  return "signal " + std::to_string(signal);
}

void BlockSignal(int signal) {
  if (signal <= 0) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Status HousekeepingThread::Check(const HousekeepingConfig& c) {
  if (c.signal != 0 && !Allowed(c.signal)) {
    return InvalidArgumentError(
        SignalName(c.signal) +
        " cannot be the housekeeping signal — use SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH or "
        "SIGRTMIN..SIGRTMAX except SIGRTMIN+3, the executor's own (SIGINT/SIGTERM stop the "
        "program; 0: no signal)");
  }
  if (c.tick.count() < 0 || (c.tick.count() > 0 && c.tick < std::chrono::milliseconds(1))) {
    return InvalidArgumentError("housekeeping tick is " + std::to_string(c.tick.count()) +
                                " ns — use 0 (no tick) or at least 1 ms");
  }
  if (c.tick.count() == 0 && c.signal == 0) {
    return InvalidArgumentError(
        "housekeeping thread with neither a tick nor a signal would never run — set one");
  }
  return Status::Ok();
}

HousekeepingThread::HousekeepingThread(const HousekeepingConfig& config,
                                       std::function<void(Wake)> on_wake)
    : config_(config), on_wake_(std::move(on_wake)) {
  status_ = Check(config_);
  if (!status_.ok()) return;
  const int sig = config_.signal;
  if (sig != 0) {
    if (g_claimed[sig].exchange(true, std::memory_order_acq_rel)) {
      status_ = FailedPreconditionError(SignalName(sig) +
                                        " is already taken by another housekeeping thread "
                                        "(RuntimeConfig::monitor_signal?) — use another signal");
      return;
    }
    claimed_ = true;
  }
  // The thread inherits the mask: the stop signals stay RunUntilSignal's, `sig` is taken by
  // sigtimedwait only.
  const SignalBlockScope blocked({SIGINT, SIGTERM});
  sigset_t own;
  sigemptyset(&own);
  if (sig != 0) sigaddset(&own, sig);
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &own, &before);
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    status_ = InternalError(std::string("cannot create the housekeeping thread: ") + e.what());
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (!status_.ok()) return;
  {
    // Its tid is known (tid()) and the forwarder has its target before the constructor returns.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return tid_.load() != 0; });
  }
  if (sig == 0) return;
  // Threads that do not block `sig` get the forwarder instead of the default action (death).
  sigaction(sig, nullptr, &old_action_);
  if ((old_action_.sa_flags & SA_SIGINFO) == 0 && old_action_.sa_handler == SIG_DFL) {
    struct sigaction sa {};
    sa.sa_handler = RtloopForwardHousekeepingSignal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    forwarding_ = sigaction(sig, &sa, nullptr) == 0;
  }
}

HousekeepingThread::~HousekeepingThread() { Stop(); }

void HousekeepingThread::Stop() {
  // seq_cst with Run()'s tid_ store and stop_ load: either this sees the tid or Run() sees stop_.
  stop_.store(true);
  if (config_.signal != 0) {
    Poke(tid_.load(), config_.signal);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  const int sig = config_.signal;
  if (forwarding_) {
    sigaction(sig, &old_action_, nullptr);
    forwarding_ = false;
  }
  if (claimed_) {
    g_target[sig].store(0, std::memory_order_release);
    g_claimed[sig].store(false, std::memory_order_release);
    claimed_ = false;
  }
}

void HousekeepingThread::Run() {
  pthread_setname_np(pthread_self(), config_.name.substr(0, 15).c_str());
  const int sig = config_.signal;
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  if (sig != 0) g_target[sig].store(self, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    tid_.store(self);  // seq_cst: see Stop()
  }
  cv_.notify_all();
  // Stop() may have run before tid_ was known: it then poked nobody; the loop checks stop_ first.
  const bool ticking = config_.tick.count() > 0;
  SteadyClock::time_point next_tick = SteadyClock::now() + config_.tick;
  sigset_t set;
  sigemptyset(&set);
  if (sig != 0) sigaddset(&set, sig);
  while (!stop_.load()) {
    // Without a tick, wake once a second anyway: a Stop() that ran before tid_ was published.
    const std::chrono::nanoseconds wait =
        ticking ? std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(0),
                                                     next_tick - SteadyClock::now())
                : std::chrono::seconds(1);
    bool signalled = false;
    if (sig != 0) {
      const timespec ts = ToTimespec(wait);
      signalled = sigtimedwait(&set, nullptr, &ts) == sig;
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, wait, [this] { return stop_.load(std::memory_order_acquire); });
    }
    if (stop_.load(std::memory_order_acquire)) break;
    if (signalled) {
      on_wake_(Wake::kSignal);
    } else if (ticking && SteadyClock::now() >= next_tick) {
      on_wake_(Wake::kTick);
      next_tick += config_.tick;
      if (next_tick < SteadyClock::now())
        next_tick = SteadyClock::now() + config_.tick;  // a slow on_wake
    }
  }
}

}  // namespace rtloop
