// What the HTTP endpoint shows of each task besides its histograms, gathered once per request:
// name, CPUs and effective scheduling, the executor's counters, ring drops and subscriber loss.
// Internal to rtloop_telemetry.
//
// Not RT-safe: allocates. Thread-safe: reads only thread-safe accessors.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"

namespace rtloop {
class Executor;
}  // namespace rtloop

namespace rtloop::telemetry {
class Collector;
class TelemetryHub;
}  // namespace rtloop::telemetry

namespace rtloop::telemetry::internal {

struct TaskView {
  TaskId id = 0;
  std::string name;
  // The `task` label: the name, or "name#id" when another task has the same name (series must be
  // unique).
  std::string label;
  std::string cpus;          // "2", "0,1,3"; "any" when not pinned
  std::string policy;        // effective ("fifo", or "other" after a permitted RT fallback)
  int priority = 0;          // effective
  bool rt_fallback = false;  // runs SCHED_OTHER because the RT policy was not permitted
  std::int64_t period_ns = 0;
  WatchdogConfig watchdog;  // as configured (TaskConfig::watchdog)
  TaskStatsSnapshot stats;  // the executor's counters (live)
  std::uint64_t ring_dropped = 0;
  bool has_subscriber_lost = false;   // a collector was given (else nobody subscribes)
  std::uint64_t subscriber_lost = 0;  // TaskTelemetry::subscriber_lost()
};

// True for an explanation threshold in force (explain::TaskOutlierStats): > 0, and not the "never"
// (nanoseconds::max()) the Runtime gives the latency of a task judged on its execution time only.
inline bool ThresholdInForce(std::int64_t threshold_ns) {
  return threshold_ns > 0 && threshold_ns != std::numeric_limits<std::int64_t>::max();
}

// Every task of `hub`, by id. `executor` and `collector` are optional. The effective scheduling
// is read from the executor only once a task's thread has applied it (state past kStarting);
// before, the configured policy is shown.
std::vector<TaskView> ViewTasks(const TelemetryHub& hub, const Executor* executor,
                                const Collector* collector);

}  // namespace rtloop::telemetry::internal
