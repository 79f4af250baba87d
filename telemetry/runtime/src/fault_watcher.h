// Internal to rtloop::Runtime: the non-RT thread that makes a task fault loud. The RT thread only
// records a fault (TaskStats::RecordFault: the record in a SeqLockValue, then the count); this
// thread polls the counts, and for each task whose count grew prints one line on stderr and calls
// the application's RuntimeConfig::on_fault. Not installed.
//
//   FaultWatcher w(executor, hub, {.app_name = "rtloop-plc", .period = 100ms});
//   w.Start();     // after Executor::Start()
//   ...
//   w.Stop();      // after Executor::Stop(): joins, then one last Check(), so no fault goes unsaid
//
// A line: `rtloop-plc: FAULT: task "logic": cycle 101 t=1.010s watchdog: execution 6200.0us >
// 5000.0us, 2 cycles in a row (sensitivity 2); the task stopped (state fault, action
// fault-task)`.
//
// Threading: Start()/Stop() on the runtime's controlling thread; Check() from the watcher thread
// or after Stop(), serialised by a mutex. Not RT-safe: a thread, a mutex, stdio, allocation.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/task_report.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::internal {

struct FaultWatcherConfig {
  std::string app_name = "rtloop";                                  // prefix of the stderr line
  std::chrono::nanoseconds period{std::chrono::milliseconds(100)};  // poll period, > 0
  std::vector<int> cpus;                            // the thread's CPUs; empty: inherited
  std::function<void(const TaskReport&)> on_fault;  // after the line; may be empty
};

// The stderr line for task `r`'s last fault (without the trailing newline); `new_faults` is how
// many faults came since the last line for the task.
std::string FormatFaultLine(const std::string& app_name, const TaskReport& r,
                            std::uint64_t new_faults);

class FaultWatcher {
 public:
  FaultWatcher(const Executor& executor, const telemetry::TelemetryHub* hub,
               FaultWatcherConfig config);
  ~FaultWatcher();  // Stop()
  FaultWatcher(const FaultWatcher&) = delete;
  FaultWatcher& operator=(const FaultWatcher&) = delete;

  void Start();
  void Stop();
  // Prints every fault not printed yet. Any thread.
  void Check();

 private:
  void Run();

  const Executor& executor_;
  const telemetry::TelemetryHub* hub_;
  const FaultWatcherConfig config_;
  std::mutex check_mu_;
  std::vector<std::uint64_t> seen_;  // faults already printed, per task; guarded by check_mu_
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace rtloop::internal
