#include "rtloop/framework/stop_signals.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "rtloop/framework/time.h"

namespace rtloop {
namespace {

std::atomic<bool> g_installed{false};
// The thread that waits; the forwarding handler sends the signal there. 0: none.
std::atomic<pid_t> g_waiter_tid{0};

extern "C" void RtloopForwardStopSignal(int sig) {
  // Async-signal-safe: an atomic load and a raw syscall. errno is preserved for the interrupted
  // code. The waiter blocks `sig`, so the forwarded signal stays pending there for sigtimedwait.
  const int saved_errno = errno;
  const pid_t tid = g_waiter_tid.load(std::memory_order_acquire);
  if (tid != 0) syscall(SYS_tgkill, getpid(), tid, sig);
  errno = saved_errno;
}

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Installs the forwarding handler for `sig` when its disposition is the default; true if it did.
bool ForwardIfDefault(int sig, struct sigaction* old) {
  sigaction(sig, nullptr, old);
  if ((old->sa_flags & SA_SIGINFO) != 0 || old->sa_handler != SIG_DFL) return false;
  struct sigaction sa {};
  sa.sa_handler = RtloopForwardStopSignal;
  sigfillset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  return sigaction(sig, &sa, nullptr) == 0;
}

}  // namespace

Result<std::unique_ptr<StopSignals>> StopSignals::Install() {
  if (g_installed.exchange(true, std::memory_order_acq_rel)) {
    return FailedPreconditionError(
        "a StopSignals is already installed (RunUntilSignal() running on another thread?) — wait "
        "for one run at a time");
  }
  std::unique_ptr<StopSignals> s(new StopSignals());
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, &s->old_mask_);
  g_waiter_tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  s->forward_int_ = ForwardIfDefault(SIGINT, &s->old_int_);
  s->forward_term_ = ForwardIfDefault(SIGTERM, &s->old_term_);
  return s;
}

StopSignals::~StopSignals() {
  if (forward_int_) sigaction(SIGINT, &old_int_, nullptr);
  if (forward_term_) sigaction(SIGTERM, &old_term_, nullptr);
  g_waiter_tid.store(0, std::memory_order_release);
  // Stop requests that came during the stop have been honoured: consume them, so that unblocking
  // does not deliver them with the default action.
  while (Wait(std::chrono::nanoseconds(0)) != 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  g_installed.store(false, std::memory_order_release);
}

int StopSignals::Wait(std::chrono::nanoseconds timeout) {
  const sigset_t set = StopSet();
  const timespec ts = ToTimespec(timeout.count() > 0 ? timeout : std::chrono::nanoseconds(0));
  siginfo_t info{};
  // -1 with EAGAIN (timeout) or EINTR (another signal's handler ran; the caller's loop bounds the
  // total wait): no stop signal.
  const int sig = sigtimedwait(&set, &info, &ts);
  return sig > 0 ? sig : 0;
}

StopSignals::Outcome StopSignals::WaitForStop(std::chrono::nanoseconds duration,
                                              const std::function<bool()>& done,
                                              std::chrono::nanoseconds poll) {
  using Steady = std::chrono::steady_clock;
  const bool limited = duration.count() > 0;
  const Steady::time_point deadline = Steady::now() + duration;
  for (;;) {
    if (done && done()) return {Cause::kDone, 0};
    std::chrono::nanoseconds timeout = poll;
    if (limited) {
      const auto left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Steady::now());
      if (left.count() <= 0) return {Cause::kDuration, 0};
      timeout = std::min(timeout, left);
    }
    if (const int sig = Wait(timeout); sig != 0) return {Cause::kSignal, sig};
  }
}

SignalBlockScope::SignalBlockScope(std::initializer_list<int> signals) {
  sigset_t block;
  sigemptyset(&block);
  for (int s : signals) sigaddset(&block, s);
  pthread_sigmask(SIG_BLOCK, &block, &old_);
}

SignalBlockScope::~SignalBlockScope() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

const char* StopSignalName(int sig) noexcept {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal";
}

}  // namespace rtloop
