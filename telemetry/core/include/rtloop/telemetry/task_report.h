// TaskReport and FormatTaskReport: everything about one task at one moment, and the standard
// per-task table a PLC runtime's task monitor shows (state, cycles, last/min/avg/max wake-up
// latency and execution time, jitter range, p99/p99.9/p99.99, overruns, missed releases, dropped
// samples). rtloop::Runtime::Reports() builds them; RunUntilSignal() prints the table at exit when
// asked; an application may print it whenever it likes.
//
//   std::vector<rtloop::TaskReport> reports = runtime->Reports();
//   std::fputs(rtloop::FormatTaskReport(reports).c_str(), stdout);
//   if (reports[0].has_data() && reports[0].latency.valid) Use(reports[0].latency.p99_ns);
//
// One owner per statistic: counts, min/max/sum/last, overruns, missed releases, faults and state
// are the executor's TaskStats (`stats`); the percentiles and the sample accounting are
// telemetry's (the hub). A task without cycles has no data (has_data() is false) and is shown as
// "no data", never as a 0 latency; without telemetry the percentiles are invalid and shown as "-".
//
// Part of the telemetry core (no protobuf). Threading: value types and pure functions; the
// builders read thread-safe accessors of the executor and the hub. Not RT-safe: they allocate.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop {

struct TaskReport {
  TaskId id = 0;
  std::string name;
  TaskInfo info;            // configuration, effective policy/priority, fallback
  TaskStatsSnapshot stats;  // the executor's statistics: the only owner of these figures
  // Wake-up latency and execution-time percentiles from the telemetry hub's histograms; invalid
  // without telemetry or without data.
  telemetry::Percentiles latency;
  telemetry::Percentiles execution;
  bool telemetry = false;             // the hub knows this task (the two counters below exist)
  std::uint64_t ring_dropped = 0;     // samples the task's ring had no room for
  std::uint64_t subscriber_lost = 0;  // TaskTelemetry::subscriber_lost (subscriber loss)

  // At least one cycle ran: latency and execution figures exist. RT-safe.
  bool has_data() const noexcept { return stats.has_data(); }
};

// The report of task `id` of `executor`, with `hub`'s percentiles and accounting when `hub` is
// not null and knows the task. An unknown id gives a report with id and no data.
TaskReport MakeTaskReport(const Executor& executor, const telemetry::TelemetryHub* hub, TaskId id);
// Every task of `executor`, by id.
std::vector<TaskReport> MakeTaskReports(const Executor& executor,
                                        const telemetry::TelemetryHub* hub);

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
