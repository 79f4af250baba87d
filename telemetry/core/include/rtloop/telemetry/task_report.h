// TaskReport: the one read model of a task. Everything about one task at one moment, in three
// parts: its configuration and effective scheduling (the executor's TaskInfo), its counters (the
// executor's TaskStatsSnapshot, the one owner of counts, min/max/sum/last, overruns, missed
// releases, faults and state) and what only telemetry has (the hub's histograms and sample
// accounting). MakeTaskReport() builds it, the one function that does; every view renders it:
// the task-monitor table below (FormatTaskReport), gRPC (ListTasks, GetStats, a stream's end:
// proto_convert.h), /metrics and the live page (http_server.h), the sample log's header and
// trailer, and rtloop::Runtime::Report(). Two shapes stay their own: v1::TaskStats is the wire
// (proto/), and rtloop-cyclic's ThreadReport is cyclictest's output.
//
//   std::vector<rtloop::TaskReport> reports = runtime->Reports();
//   std::fputs(rtloop::FormatTaskReport(reports).c_str(), stdout);
//   if (reports[0].has_data() && reports[0].latency.percentiles.valid)
//     Use(reports[0].latency.percentiles.p99_ns);
//
// A task without cycles has no data (has_data() is false) and is shown as "no data", never as a
// 0 latency; without telemetry (or when not asked for) the percentiles are invalid and shown as
// "-".
//
// Part of the telemetry core (no protobuf). Threading: value types and pure functions; the
// builders read thread-safe accessors of the executor and the hub, from any thread. Not RT-safe:
// they allocate.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop {

class Executor;
namespace telemetry {
class TelemetryHub;
}  // namespace telemetry

struct TaskReport {
  TaskId id = 0;
  std::string name;
  // Configuration and effective scheduling (after a permitted fallback): Executor::Info(); from a
  // hub alone, its copy of the configuration with the scheduling as configured.
  TaskInfo info;
  TaskStatsSnapshot stats;  // the executor's statistics: the only owner of these figures

  // Telemetry's part: all zero and invalid when the hub does not know the task (`telemetry`).
  bool telemetry = false;
  // The hub's histograms, up to the report (the rings drained first): count, exact min/max/sum
  // and the percentiles (latency.percentiles). Invalid when not asked for
  // (TaskReportParts::histograms) or without data.
  telemetry::HistogramSummary latency;    // wake-up latency, ns
  telemetry::HistogramSummary execution;  // execution time, ns
  std::uint64_t samples = 0;              // cycles the hub saw: ring_pushed + ring_dropped
  std::uint64_t ring_pushed = 0;          // samples that entered the ring
  std::uint64_t ring_dropped = 0;  // samples the ring had no room for (stats still include them)
  // Samples taken out of the ring: by the collector, or by the hub's own drain without one.
  std::uint64_t delivered = 0;
  // Subscriber loss: samples of this task that a subscriber should have received and never did,
  // summed over every subscription the collector has served (except one that reports its own
  // loss: SubscriptionConfig::count_loss_in_hub). A sample is lost when its subscriber's queue
  // was full (drop-oldest), or when the run ended and it was still queued at the stream's
  // delivery deadline. Samples still queued when a stream is cancelled (by its client, the stall
  // timeout or a server stop) are not: the stream ended, nothing is owed to it any more. The one
  // count behind GetStats' stream_loss, /metrics and the task report (collector.h, "Loss").
  std::uint64_t subscriber_lost = 0;
  // Once the task and the collector have stopped: samples == ring_pushed + ring_dropped and
  // ring_pushed == delivered. While they run, the counters are read one after another (delivered
  // first, samples last), so samples in flight can make them differ by a few.
  std::size_t ring_capacity = 0;
  // Non-empty histogram buckets (TaskReportParts::buckets), for dashboards.
  std::vector<telemetry::HistogramBucket> latency_buckets;
  std::vector<telemetry::HistogramBucket> execution_buckets;

  // At least one cycle ran: latency and execution figures exist. RT-safe.
  bool has_data() const noexcept { return stats.has_data(); }
};

// What MakeTaskReport() reads besides the configuration, the counters and the hub's accounting
// (those are cheap and always read).
struct TaskReportParts {
  // The hub's histogram summaries (latency, execution): drains the rings first, then one pass over
  // each histogram (~0.1 ms a task with the default layout). The table, GetStats and the sample
  // log ask for them; /metrics, the page and ListTasks take theirs elsewhere or need none.
  bool histograms = true;
  // The histograms' non-empty buckets too.
  bool buckets = false;
};

// The report of task `id`. `executor` gives the configuration and effective scheduling, and the
// counters; `hub` telemetry's part, and the counters from its attached reader when there is no
// executor. Either may be null, not both. An id neither knows gives a report with id and no data.
TaskReport MakeTaskReport(const Executor* executor, const telemetry::TelemetryHub* hub, TaskId id,
                          TaskReportParts parts = {});
// Every task, by id: the executor's, or without one the hub's. Drains the rings once for all.
std::vector<TaskReport> MakeTaskReports(const Executor* executor,
                                        const telemetry::TelemetryHub* hub,
                                        TaskReportParts parts = {});

// The CPUs a task is pinned to, as the views show them: "2", "0,1,3"; "any" when not pinned.
std::string FormatCpus(const std::vector<int>& cpus);

// The task-monitor table: an overview (id, name, state, policy, period, cycles, overruns, missed
// releases, faults, dropped samples, subscriber loss), then wake-up latency (last/min/avg/max and
// p99/p99.9/p99.99), execution time (the same) and period jitter (last/min/max/range), all in µs
// with one decimal, and, for tasks with a watchdog or a fault, "watchdog, faults": the limits,
// the action, violations, trips and the last fault (DescribeFault). About 100 columns wide; names
// longer than 20 characters are cut. Ends with a newline; an empty `reports` gives "no tasks\n".
std::string FormatTaskReport(std::span<const TaskReport> reports);

// The last fault of `r` in words: "cycle 101 t=1.010s watchdog: execution 6200.0us > 5000.0us, 2
// cycles in a row (sensitivity 2)" (t from the task's first release; reasons: task_stats.h).
// Meaningful when r.stats.faults > 0.
std::string DescribeFault(const TaskReport& r);
// A watchdog's limits in a cell: "5ms" (execution time), "5msx2" (with sensitivity 2), "3ovr"
// (max consecutive overruns), "5ms,3ovr" (both), "-" (none).
std::string FormatWatchdog(const WatchdogConfig& w);

// The cell formats of FormatTaskReport, shared with rtloop-top so that both print a figure the
// same way. printf into a std::string (up to 511 characters).
std::string StrFormat(const char* format, ...) __attribute__((format(printf, 1, 2)));
// `ns` in µs with one decimal, right-aligned in `width`; "-" when absent.
std::string FormatMicros(std::optional<double> ns, int width);
// "500us", "10ms", "250ns": the largest whole unit.
std::string FormatPeriod(std::chrono::nanoseconds period);

}  // namespace rtloop
