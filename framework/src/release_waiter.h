// Internal: how a task's RT thread waits for its next release, one ReleaseWaiter per WaitMode, and
// the two signals the executor uses to wake and time its threads. Not installed.
//
//   Result<std::unique_ptr<ReleaseWaiter>> waiter = MakeReleaseWaiter(config);  // on the thread
//   waiter->Wait(engine, stop);   // RT-safe: returns at the release, or early once `stop` is set
//                                 // and the thread got WakeSignal()
//
// Threading: a waiter is made on, and used by, its task's RT thread only (kPosixTimer's timer
// signals the thread that made it). Wait() is RT-safe: the sleeps are time.h's cancellable EINTR
// loops (kAbsolute, kRelative, kNanosleep), timer_settime + sigwait (kPosixTimer) or a read() of
// the kernel's timerlat_fd (kTimerlat).
#pragma once

#include <signal.h>

#include <atomic>
#include <memory>

#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"

namespace rtloop::internal {

// The signal Stop() sends to wake a sleeping RT thread early. Its handler does nothing; the
// interrupted sleep returns EINTR and the thread sees its stop flag. RT-safe.
inline int WakeSignal() noexcept { return SIGRTMIN + 3; }
// The signal of WaitMode::kPosixTimer's per-thread timer (as cyclictest -x).
inline constexpr int kTimerSignal = SIGALRM;

// Installs the wake signal's empty handler (without SA_RESTART), once per process. Not RT-safe.
void InstallWakeHandler();

// Blocks the wake signal on the calling thread. A task thread calls it as it leaves its RT loop,
// before it clears Slot::in_loop: a wake signal sent while the loop ran but delivered after it
// (signal delivery is asynchronous: under qemu-user it lagged past the loop's end) stays pending
// and is discarded with the thread, instead of interrupting a sleep in OnStop() with EINTR.
// A system call, but off the RT path (the loop has ended).
void BlockWakeSignal() noexcept;

class ReleaseWaiter {
 public:
  virtual ~ReleaseWaiter() = default;
  // Sleeps until `engine`'s pending release. In every mode the first release is the absolute
  // E_0; after it the relative modes first re-base the release to "now + period" (cyclictest
  // -r/-s). Returns early when `stop` is true after a signal woke the thread. RT-safe.
  virtual void Wait(CycleEngine& engine, const std::atomic<bool>& stop) noexcept = 0;
};

// The waiter of `config.wait_mode`. Call on the task's thread after its signal mask is set (see
// TaskThreadSignals in task_thread.h). Not RT-safe: allocates; kPosixTimer creates a timer and
// fails with a Status naming the task when it cannot.
Result<std::unique_ptr<ReleaseWaiter>> MakeReleaseWaiter(const TaskConfig& config);

// WaitMode::kTimerlat's waiter (timerlat_waiter.cc): opens the kernel's timerlat_fd of the task's
// one CPU. On the task's thread after it is pinned. Not RT-safe. FailedPrecondition or the open()
// error, each naming its fix (a kernel without the interface, rtla not running or with another
// period, a thread that may migrate).
Result<std::unique_ptr<ReleaseWaiter>> MakeTimerlatWaiter(const TaskConfig& config);

}  // namespace rtloop::internal
