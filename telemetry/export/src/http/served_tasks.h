// The tasks /metrics and the live page show, as their one read model (rtloop::TaskReport,
// task_report.h), gathered once per request, and what the two views derive from them: the
// `task` label of every series, and whether an explanation threshold is in force. Internal to
// rtloop_telemetry.
//
//   const std::vector<TaskReport> tasks = ServedTasks(*in.hub, in.executor);
//   const std::vector<std::string> labels = SeriesLabels(tasks);  // "conveyor", "axis#2", ...
//
// Not RT-safe: allocates. Thread-safe: reads only thread-safe accessors.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rtloop/telemetry/task_report.h"

namespace rtloop::telemetry::internal {

// Every task of `hub`, by id, without the hub's histograms (both views take theirs from
// WindowedStats): configuration and effective scheduling (from `executor` when given, else as
// configured), the counters, the ring's and the subscribers' accounting. Names are made valid
// UTF-8 (Prometheus labels and the page's JSON are UTF-8: utf8.h).
std::vector<TaskReport> ServedTasks(const TelemetryHub& hub, const Executor* executor);

// The `task` label of each of `tasks`: the name, or "name#id" when another task has the same
// name (series must be unique).
std::vector<std::string> SeriesLabels(const std::vector<TaskReport>& tasks);

// True for an explanation threshold in force (explain::TaskOutlierStats): > 0, and not the "never"
// (nanoseconds::max()) the Runtime gives the latency of a task judged on its execution time only.
inline bool ThresholdInForce(std::int64_t threshold_ns) {
  return threshold_ns > 0 && threshold_ns != std::numeric_limits<std::int64_t>::max();
}

}  // namespace rtloop::telemetry::internal
