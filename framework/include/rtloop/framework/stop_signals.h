// StopSignals: SIGINT and SIGTERM as a request for an orderly stop, taken synchronously on one
// thread. Executor::RunUntilSignal() and rtloop::Runtime::RunUntilSignal() use it; an application
// with its own main loop can too.
//
//   rtloop::Result<std::unique_ptr<rtloop::StopSignals>> signals = rtloop::StopSignals::Install();
//   if (!signals.ok()) return signals.status();
//   ... create threads: they inherit SIGINT/SIGTERM blocked ...
//   while (!done) {
//     if (const int sig = (*signals)->Wait(std::chrono::milliseconds(100)); sig != 0) break;
//   }
//
// While a StopSignals exists:
//  - SIGINT and SIGTERM are blocked on the thread that installed it, and so in every thread it
//    creates meanwhile (threads inherit their creator's mask): the signals stay pending until
//    Wait() takes them with sigtimedwait.
//  - Where a signal's disposition is the default (terminate the process), a forwarding handler is
//    installed (with SA_RESTART): if the kernel delivers the signal to another thread of the
//    application that does not block it, the handler sends it on to the waiting thread, so the
//    stop stays orderly instead of killing the process mid-cycle. A handler of the application's
//    own is left in place (it then sees the signals that reach unblocked threads), and so is
//    SIG_IGN (the kernel discards an ignored signal: Wait() never sees it; shells start background
//    jobs with SIGINT ignored, so stop those with SIGTERM).
//
// What the application's other threads should do: nothing is required. Blocking SIGINT and
// SIGTERM in them (create them after Install(), or call pthread_sigmask) saves the forwarding hop
// and keeps the signal from interrupting their system calls: SA_RESTART restarts most, but sleeps,
// poll/epoll/select and a few others still return EINTR (see signal(7)). A thread that must see
// the signals itself needs its own handler, which then replaces this forwarding for it.
//
// At destruction, stop signals still pending (a second Ctrl-C during the stop) are consumed, then
// the mask and the dispositions are restored: the orderly stop is not cut short afterwards.
//
// Threading: one StopSignals at a time in a process (Install() fails otherwise); Install(), Wait()
// and the destructor on the same thread. Not RT-safe: system calls.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>

#include "rtloop/framework/status.h"

namespace rtloop {

class StopSignals {
 public:
  // FailedPrecondition when another StopSignals exists.
  static Result<std::unique_ptr<StopSignals>> Install();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Waits up to `timeout` (<= 0: just looks) for SIGINT or SIGTERM; returns the signal number, or
  // 0 when none came. Only on the installing thread.
  int Wait(std::chrono::nanoseconds timeout);

  // Why WaitForStop() returned.
  enum class Cause { kSignal, kDuration, kDone };
  struct Outcome {
    Cause cause = Cause::kDone;
    int signal = 0;  // SIGINT or SIGTERM for kSignal
  };
  // Waits for a stop signal, for `duration` to pass (0: no limit) or for `done()` to return true
  // (polled every `poll`), whichever comes first. Only on the installing thread.
  Outcome WaitForStop(std::chrono::nanoseconds duration, const std::function<bool()>& done,
                      std::chrono::nanoseconds poll = std::chrono::milliseconds(50));

 private:
  StopSignals() = default;
  sigset_t old_mask_{};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  bool forward_int_ = false;
  bool forward_term_ = false;
};

// Blocks `signals` on the calling thread for its lifetime, then restores the thread's mask. Threads
// created meanwhile inherit the block: the executor and the runtime create their threads inside
// one, so SIGINT/SIGTERM never land in a task, collector or gRPC thread. Not RT-safe.
class SignalBlockScope {
 public:
  explicit SignalBlockScope(std::initializer_list<int> signals);
  ~SignalBlockScope();
  SignalBlockScope(const SignalBlockScope&) = delete;
  SignalBlockScope& operator=(const SignalBlockScope&) = delete;

 private:
  sigset_t old_{};
};

// "SIGINT", "SIGTERM", or "signal" for any other. RT-safe.
const char* StopSignalName(int sig) noexcept;

}  // namespace rtloop
