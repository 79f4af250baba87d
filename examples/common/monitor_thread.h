// MonitorThread: an example's non-RT side thread. It calls a function every `tick` (a progress
// line, a fault check) and at once when the process receives SIGUSR1 (print the report now), while
// the main thread sits in Runtime::RunUntilSignal().
//
//   int main() {
//     example_cli::BlockMonitorSignal();             // first, before any thread exists
//     ... create the runtime, add the tasks ...
//     example_cli::MonitorThread monitor(std::chrono::seconds(1), [&](example_cli::Wake w) {
//       if (w == example_cli::Wake::kSignal) PrintReport();
//     });
//     rtloop::Status s = runtime->RunUntilSignal();
//     monitor.Stop();                                // before printing the final report
//   }
//
// Why SIGUSR1 is blocked everywhere: its default action ends the process, and a signal handler
// could not print a report safely. Blocked in every thread (they inherit the mask of main(), which
// blocked it first), the signal stays pending until this one thread takes it with sigtimedwait():
// no handler, no async-signal-safety limits, and no RT thread is ever interrupted by it. The
// thread itself also blocks SIGINT and SIGTERM, so that those reach RunUntilSignal().
//
// Threading: construct, Stop() and destroy on the controlling thread; `on_wake` runs on the
// monitor thread (it must synchronise what it shares: read RT data through SeqLockValue::Load(),
// atomics, or the runtime's thread-safe Reports()). Not RT-safe: a thread, stdio.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace example_cli {

// Blocks SIGUSR1 on the calling thread; call it first in main(), so every thread inherits it.
void BlockMonitorSignal();

enum class Wake {
  kTick,    // `tick` passed
  kSignal,  // SIGUSR1 came
};

class MonitorThread {
 public:
  MonitorThread(std::chrono::nanoseconds tick, std::function<void(Wake)> on_wake);
  ~MonitorThread();  // Stop()
  MonitorThread(const MonitorThread&) = delete;
  MonitorThread& operator=(const MonitorThread&) = delete;

  // Ends the thread (within 50 ms, or after an `on_wake` call in progress) and joins it.
  // Idempotent.
  void Stop();

 private:
  void Run();

  const std::chrono::nanoseconds tick_;
  const std::function<void(Wake)> on_wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace example_cli
