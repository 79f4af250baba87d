#include "rtloop/telemetry/task_report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <optional>

#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop {
namespace {

constexpr int kMaxNameWidth = 20;
// Width of the first column of the section tables (their titles are up to 20 characters).
constexpr int kTitleWidth = 19;

std::string Us(std::optional<double> ns) { return FormatMicros(ns, 9); }
std::string Us(std::int64_t ns) { return Us(std::optional<double>(static_cast<double>(ns))); }

std::string Policy(const TaskInfo& info) {
  std::string p = SchedPolicyName(info.effective_policy);
  if (info.effective_priority > 0) p += "/" + std::to_string(info.effective_priority);
  if (info.fell_back_to_non_rt) p += "!";
  return p;
}

std::string Name(const TaskReport& r, int width) {
  std::string n = r.name.substr(0, static_cast<std::size_t>(width));
  n.resize(static_cast<std::size_t>(width), ' ');
  return n;
}

// last / min / avg / max and the three percentiles of one quantity of one task.
std::string QuantityRow(const TaskReport& r, int width, std::int64_t last, std::int64_t min,
                        std::optional<double> avg, std::int64_t max,
                        const telemetry::Percentiles& p) {
  if (!r.has_data()) return "  " + Name(r, width) + StrFormat("%9s", "no data") + "\n";
  // After a statistics reset, min/max are "-" until the task's next cycle.
  const auto extreme = [&r](std::int64_t v) -> std::optional<double> {
    if (!r.stats.has_min_max()) return std::nullopt;
    return static_cast<double>(v);
  };
  std::string row =
      "  " + Name(r, width) + Us(last) + Us(extreme(min)) + Us(avg) + Us(extreme(max));
  if (p.valid) {
    row += Us(p.p99_ns) + Us(p.p99_9_ns) + Us(p.p99_99_ns);
  } else {
    row += Us(std::nullopt) + Us(std::nullopt) + Us(std::nullopt);
  }
  return row + "\n";
}

std::string QuantityHeader(const char* title, int width) {
  std::string t = title;
  t.resize(static_cast<std::size_t>(width) + 2, ' ');
  return t + StrFormat("%9s%9s%9s%9s%9s%9s%9s\n", "LAST", "MIN", "AVG", "MAX", "P99", "P99.9",
                       "P99.99");
}

std::string Overview(std::span<const TaskReport> reports, int width) {
  std::string out =
      StrFormat("%3s %-*s %-8s %-10s %7s %12s %9s %9s %7s %9s %9s\n", "ID", width, "NAME", "STATE",
                "POLICY", "PERIOD", "CYCLES", "OVERRUNS", "MISSED", "FAULTS", "DROPPED", "LOST");
  for (const TaskReport& r : reports) {
    const std::string dropped = r.telemetry ? std::to_string(r.ring_dropped) : "-";
    const std::string lost = r.telemetry ? std::to_string(r.subscriber_lost) : "-";
    out += StrFormat(
        "%3u %s %-8s %-10s %7s %12" PRIu64 " %9" PRIu64 " %9" PRIu64 " %7" PRIu64 " %9s %9s\n",
        r.id, Name(r, width).c_str(), TaskStateName(r.stats.state), Policy(r.info).c_str(),
        FormatPeriod(r.info.config.period).c_str(), r.stats.cycles, r.stats.overruns,
        r.stats.missed_releases, r.stats.faults, dropped.c_str(), lost.c_str());
  }
  return out;
}

std::string Jitter(std::span<const TaskReport> reports, int width) {
  std::string title = "period jitter (us)";
  title.resize(static_cast<std::size_t>(width) + 2, ' ');
  std::string out = title + StrFormat("%9s%9s%9s%9s\n", "LAST", "MIN", "MAX", "RANGE");
  for (const TaskReport& r : reports) {
    const TaskStatsSnapshot& s = r.stats;
    if (!s.has_jitter()) {
      out += "  " + Name(r, width) + StrFormat("%9s", "no data") + "\n";
      continue;
    }
    const std::optional<std::int64_t> range = s.jitter_range_ns();
    if (!s.has_jitter_min_max()) {  // reset, no cycle since
      out += "  " + Name(r, width) + Us(s.jitter_last_ns) + Us(std::nullopt) + Us(std::nullopt) +
             Us(std::nullopt) + "\n";
      continue;
    }
    out += "  " + Name(r, width) + Us(s.jitter_last_ns) + Us(s.jitter_min_ns) +
           Us(s.jitter_max_ns) + Us(*range) + "\n";
  }
  return out;
}

// The tasks with a watchdog (its settings and state) or a fault (the last one); "" when none.
std::string Watchdogs(std::span<const TaskReport> reports, int width) {
  std::string out;
  for (const TaskReport& r : reports) {
    const WatchdogConfig& w = r.info.config.watchdog;
    if (!w.enabled() && r.stats.faults == 0) continue;
    out +=
        "  " + Name(r, width) + StrFormat("%9s", FormatWatchdog(w).c_str()) +
        StrFormat(" %-10s %10" PRIu64 " %6" PRIu64 "  ", WatchdogActionName(w.effective_action()),
                  r.stats.watchdog_violations, r.stats.watchdog_trips) +
        (r.stats.faults == 0 ? std::string("-") : DescribeFault(r)) + "\n";
  }
  if (out.empty()) return out;
  std::string title = "watchdog, faults";
  title.resize(static_cast<std::size_t>(width) + 2, ' ');
  return title +
         StrFormat("%9s %-10s %10s %6s  %s\n", "LIMIT", "ACTION", "VIOLATIONS", "TRIPS",
                   "LAST FAULT") +
         out;
}

std::string Notes(std::span<const TaskReport> reports) {
  bool fell_back = false;
  bool no_percentiles = false;
  for (const TaskReport& r : reports) {
    fell_back = fell_back || r.info.fell_back_to_non_rt;
    no_percentiles = no_percentiles || (r.has_data() && !r.latency.percentiles.valid);
  }
  std::string out;
  if (fell_back) out += "! fell back to SCHED_OTHER: not real-time figures\n";
  if (no_percentiles) out += "- percentiles need telemetry (RuntimeConfig::telemetry.enabled)\n";
  return out;
}

}  // namespace

std::string StrFormat(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string FormatMicros(std::optional<double> ns, int width) {
  if (!ns) return StrFormat("%*s", width, "-");
  return StrFormat("%*.1f", width, *ns / 1000.0);
}

std::string FormatPeriod(std::chrono::nanoseconds period) {
  const std::int64_t ns = period.count();
  if (ns != 0 && ns % 1'000'000 == 0) return StrFormat("%" PRId64 "ms", ns / 1'000'000);
  if (ns != 0 && ns % 1'000 == 0) return StrFormat("%" PRId64 "us", ns / 1'000);
  return StrFormat("%" PRId64 "ns", ns);
}

std::string FormatWatchdog(const WatchdogConfig& w) {
  std::string out;
  if (w.time.count() > 0) {
    out = FormatPeriod(w.time);
    if (w.sensitivity != 1) out += "x" + std::to_string(w.sensitivity);
  }
  if (w.max_consecutive_overruns != 0) {
    out += (out.empty() ? "" : ",") + std::to_string(w.max_consecutive_overruns) + "ovr";
  }
  return out.empty() ? "-" : out;
}

std::string DescribeFault(const TaskReport& r) {
  const FaultRecord& f = r.stats.last_fault;
  const WatchdogConfig& w = r.info.config.watchdog;
  std::string out = "cycle " + std::to_string(f.cycle) +
                    StrFormat(" t=%.3fs ", static_cast<double>(f.since_start_ns) * 1e-9) +
                    FaultReasonName(f.reason) + ": ";
  const std::string exec = FormatMicros(static_cast<double>(f.execution_ns), 0) + "us";
  const std::string limit = FormatMicros(static_cast<double>(f.limit_ns), 0) + "us";
  switch (f.reason) {
    case FaultReason::kWatchdog:
      out += "execution " + exec + " > " + limit + ", " + std::to_string(f.consecutive) +
             (f.consecutive == 1 ? " cycle" : " cycles") + " in a row (sensitivity " +
             std::to_string(w.sensitivity) + ")";
      break;
    case FaultReason::kWatchdogSingle:
      out += "execution " + exec + " > " + limit + " x " + std::to_string(w.sensitivity) +
             " in one cycle";
      break;
    case FaultReason::kOverruns:
      out += std::to_string(f.consecutive) + (f.consecutive == 1 ? " overrun" : " overruns") +
             " in a row (execution " + exec + ")";
      break;
    case FaultReason::kStep:
      out += "Step() returned StepResult::kFault";
      break;
    case FaultReason::kNone:
      out += "not recorded yet";  // a snapshot taken while the fault was being stored
      break;
  }
  return out;
}

namespace {

// MakeTaskReport() once the rings are drained (or when no histogram is asked for).
TaskReport ReportDrained(const Executor* executor, const telemetry::TelemetryHub* hub, TaskId id,
                         TaskReportParts parts) {
  TaskReport r;
  r.id = id;
  const telemetry::TaskTelemetry* t = hub != nullptr ? hub->task(id) : nullptr;
  if (executor != nullptr && id < executor->TaskCount()) {
    r.info = executor->Info(id);
    r.stats = executor->Stats(id);
  } else if (t != nullptr) {
    r.info.id = id;
    r.info.config = t->config();
    r.info.effective_policy = t->config().policy;
    r.info.effective_priority = t->config().priority;
    r.stats = hub->Stats(id);
  } else {
    return r;
  }
  r.name = r.info.config.name;
  if (t == nullptr) return r;
  r.telemetry = true;
  if (parts.histograms) {
    r.latency = t->latency().Summary();
    r.execution = t->execution().Summary();
  }
  // Downstream first, upstream last: while the task runs, later counters can only be ahead.
  r.delivered = t->delivered();
  r.ring_dropped = t->ring().writer().dropped();
  r.ring_pushed = t->ring().writer().pushed();
  r.subscriber_lost = t->subscriber_lost();
  r.samples = r.ring_pushed + r.ring_dropped;
  r.ring_capacity = t->ring().capacity();
  if (parts.buckets) {
    t->latency().ExportBuckets(&r.latency_buckets);
    t->execution().ExportBuckets(&r.execution_buckets);
  }
  return r;
}

}  // namespace

TaskReport MakeTaskReport(const Executor* executor, const telemetry::TelemetryHub* hub, TaskId id,
                          TaskReportParts parts) {
  if (hub != nullptr && parts.histograms) hub->Drain();  // the histograms up to now
  return ReportDrained(executor, hub, id, parts);
}

std::vector<TaskReport> MakeTaskReports(const Executor* executor,
                                        const telemetry::TelemetryHub* hub, TaskReportParts parts) {
  std::vector<TaskId> ids;
  if (executor != nullptr) {
    ids.resize(executor->TaskCount());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TaskId>(i);
  } else if (hub != nullptr) {
    ids = hub->TaskIds();
  }
  if (hub != nullptr && parts.histograms) hub->Drain();  // once for all of them
  std::vector<TaskReport> out;
  out.reserve(ids.size());
  for (const TaskId id : ids) out.push_back(ReportDrained(executor, hub, id, parts));
  return out;
}

std::string FormatCpus(const std::vector<int>& cpus) {
  std::string out;
  for (const int cpu : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
  }
  return out.empty() ? "any" : out;
}

std::string FormatTaskReport(std::span<const TaskReport> reports) {
  if (reports.empty()) return "no tasks\n";
  int width = 4;
  for (const TaskReport& r : reports) {
    width = std::max(width, std::min(kMaxNameWidth, static_cast<int>(r.name.size())));
  }
  std::string out = Overview(reports, width) + "\n";
  // The section tables' first column also holds their title.
  const int label = std::max(width, kTitleWidth);
  out += QuantityHeader("wake-up latency (us)", label);
  for (const TaskReport& r : reports) {
    const TaskStatsSnapshot& s = r.stats;
    out += QuantityRow(r, label, s.latency_last_ns, s.latency_min_ns, s.latency_avg_ns(),
                       s.latency_max_ns, r.latency.percentiles);
  }
  out += "\n" + QuantityHeader("execution time (us)", label);
  for (const TaskReport& r : reports) {
    const TaskStatsSnapshot& s = r.stats;
    out += QuantityRow(r, label, s.execution_last_ns, s.execution_min_ns, s.execution_avg_ns(),
                       s.execution_max_ns, r.execution.percentiles);
  }
  out += "\n" + Jitter(reports, label);
  if (const std::string w = Watchdogs(reports, label); !w.empty()) out += "\n" + w;
  if (const std::string notes = Notes(reports); !notes.empty()) out += "\n" + notes;
  return out;
}

}  // namespace rtloop
