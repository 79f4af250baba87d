// HousekeepingThread: a non-RT side thread that calls a function every `tick` (a progress line, an
// HMI refresh, a fault check, log rotation) and at once when the process receives `signal` (e.g.
// SIGUSR1: print the task monitor now). It is where a program's periodic non-real-time work goes:
// it runs SCHED_OTHER where it was created (the Runtime places its housekeeping threads on the
// CPUs its RT tasks leave free), is not measured and shows in no task table. A "task" with
// SCHED_OTHER would be measured as if it were real-time (its 100 ms latencies in every view).
//
//   rtloop::HousekeepingThread hmi({.tick = std::chrono::milliseconds(100), .signal = SIGUSR1},
//                                  [&](rtloop::HousekeepingThread::Wake w) {
//     if (w == rtloop::HousekeepingThread::Wake::kSignal) PrintReport();
//     else RefreshHmi();
//   });
//   if (!hmi.ok()) return hmi.status();
//   ...
//   hmi.Stop();  // before what `on_wake` uses goes away
//
// rtloop::Runtime starts them itself: RuntimeConfig::monitor_signal (the task monitor) and
// Runtime::AddHousekeeping().
//
// The signal, taken the RT-safe way: no handler runs on an RT thread and nothing is printed from
// one. The thread waits for `signal` with sigtimedwait(), blocked in it (and in every thread it
// creates). Threads the program creates after BlockSignal(signal) (or after the Runtime's
// Create(), whose threads all block it) never receive it. For a thread that does not block it,
// a forwarding handler is installed while the thread runs, when the signal's disposition is the
// default (which would end the process): it sends the signal on to this thread (an atomic load and
// tgkill, async-signal-safe), as StopSignals does for SIGINT/SIGTERM. A handler of the program's
// own, or SIG_IGN, is left in place. One HousekeepingThread per signal at a time.
//
// Threading: construct, Stop() and destroy on one controlling thread; `on_wake` runs on the
// housekeeping thread (it must synchronise what it shares: SeqLockValue::Load(), atomics, or the
// Runtime's thread-safe Reports()). Not RT-safe: a thread, signals, whatever on_wake does.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "rtloop/framework/status.h"

namespace rtloop {

struct HousekeepingConfig {
  // Time between two kTick calls; 0: none (the signal only). 0 or >= 1 ms.
  std::chrono::nanoseconds tick{0};
  // The signal that makes a kSignal call (SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH or SIGRTMIN..
  // SIGRTMAX but SIGRTMIN+3, the executor's); 0: none. At least one of tick and signal.
  int signal = 0;
  // The thread's name (top, /metrics' thread CPU), at most 15 bytes shown.
  std::string name = "rtloop-hk";
};

class HousekeepingThread {
 public:
  enum class Wake {
    kTick,    // `tick` passed
    kSignal,  // `signal` came
  };

  // Starts the thread; status() says whether it runs (a bad config or a signal another
  // HousekeepingThread already takes: InvalidArgument / FailedPrecondition naming the fix).
  HousekeepingThread(const HousekeepingConfig& config, std::function<void(Wake)> on_wake);
  ~HousekeepingThread();  // Stop()
  HousekeepingThread(const HousekeepingThread&) = delete;
  HousekeepingThread& operator=(const HousekeepingThread&) = delete;

  bool ok() const noexcept { return status_.ok(); }
  // The thread's kernel id (set once constructed with ok()): to move it to other CPUs.
  int tid() const noexcept { return tid_.load(); }
  const Status& status() const noexcept { return status_; }

  // Ends the thread (at once, or after an `on_wake` call in progress), joins it and restores the
  // signal's disposition. Idempotent.
  void Stop();

  // Checks a config without starting anything.
  static Status Check(const HousekeepingConfig& config);

 private:
  void Run();

  const HousekeepingConfig config_;
  const std::function<void(Wake)> on_wake_;
  Status status_;
  std::atomic<bool> stop_{false};
  std::atomic<int> tid_{0};
  bool claimed_ = false;     // this object holds `signal` (one HousekeepingThread per signal)
  bool forwarding_ = false;  // the forwarding handler is installed; old_action_ restores it
  struct sigaction old_action_ {};
  std::mutex mu_;  // with cv_: the tick-only thread's wait
  std::condition_variable cv_;
  std::thread thread_;
};

// Blocks `signal` on the calling thread (threads created afterwards inherit it): call it first in
// main() so that no thread of the program ever takes the monitor signal itself. Not RT-safe.
void BlockSignal(int signal);

// "SIGUSR1", "SIGRTMIN+3", ...: the signal's name for messages. Not RT-safe.
std::string SignalName(int signal);

}  // namespace rtloop
