#include "page_json.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "rtloop/explain/outlier_feed.h"
#include "rtloop/telemetry/utf8.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "served_tasks.h"

namespace rtloop::telemetry::internal {
namespace {

// A minimal JSON writer: objects, arrays, numbers, strings (utf8.h: escaped, and valid UTF-8
// whatever bytes a task name holds).
class Json {
 public:
  Json& Key(const char* key) {
    Comma();
    String(key);
    out_ += ':';
    fresh_ = true;
    return *this;
  }
  Json& Begin(char bracket) {
    Comma();
    out_ += bracket;
    fresh_ = true;
    return *this;
  }
  Json& End(char bracket) {
    out_ += bracket;
    fresh_ = false;
    return *this;
  }
  Json& Int(long long v) {
    Comma();
    out_ += std::to_string(v);
    return *this;
  }
  Json& Number(double v) {
    Comma();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    out_ += buf;
    return *this;
  }
  Json& Bool(bool v) {
    Comma();
    out_ += v ? "true" : "false";
    return *this;
  }
  Json& Null() {
    Comma();
    out_ += "null";
    return *this;
  }
  Json& Str(const std::string& s) {
    Comma();
    String(s);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  void Comma() {
    if (!fresh_) out_ += ',';
    fresh_ = false;
  }
  void String(const std::string& s) { AppendJsonString(out_, s); }  // valid UTF-8 always
  std::string out_;
  bool fresh_ = true;
};

// `v`, or null when the task has no such data ("no data", never 0).
void IntOrNull(Json& j, bool valid, long long v) {
  if (valid) {
    j.Int(v);
  } else {
    j.Null();
  }
}

// `has_min_max`: TaskStatsSnapshot::has_min_max() (false after a statistics reset until the next
// cycle: min/max null while last/avg stay).
void Stat(Json& j, const char* name, bool has_data, bool has_min_max, std::int64_t last,
          std::int64_t min, std::optional<double> avg, std::int64_t max, const WindowSummary& total,
          const WindowSummary& window) {
  j.Key(name).Begin('{');
  j.Key("last");
  IntOrNull(j, has_data, last);
  j.Key("min");
  IntOrNull(j, has_min_max, min);
  j.Key("avg");
  if (has_data && avg.has_value()) {
    j.Number(*avg);
  } else {
    j.Null();
  }
  j.Key("max");
  IntOrNull(j, has_min_max, max);
  j.Key("p99");
  IntOrNull(j, total.valid, total.p99_ns);
  j.Key("p99_99");
  IntOrNull(j, total.valid, total.p99_99_ns);
  j.Key("window_max");
  IntOrNull(j, window.valid, window.max_ns);
  j.Key("window_p99");
  IntOrNull(j, window.valid, window.p99_ns);
  j.End('}');
}

}  // namespace

std::vector<std::int64_t> PageBinBounds(const HistogramLayout& layout) {
  std::vector<std::int64_t> b;
  for (int k = 8 * kPageBinsPerOctave; k <= layout.range_bits() * kPageBinsPerOctave; ++k) {
    b.push_back(std::llround(std::exp2(static_cast<double>(k) / kPageBinsPerOctave)));
  }
  return b;
}

namespace {

// The non-empty bins of `bounds` as [lower_ns, upper_ns, count] (the overflow bin, beyond the
// histogram's range, is left out: the max shows it).
void LogBins(Json& j, const std::vector<std::int64_t>& bounds,
             const std::vector<std::uint64_t>& bins) {
  j.Key("histogram").Begin('[');
  for (std::size_t i = 0; i + 1 < bins.size(); ++i) {
    if (bins[i] == 0) continue;
    j.Begin('[');
    j.Int(i == 0 ? 0 : bounds[i - 1]);
    j.Int(bounds[i]);
    j.Int(static_cast<long long>(bins[i]));
    j.End(']');
  }
  j.End(']');
}

// "watchdog": its settings and state; "last_fault": null, or the last fault's reason, cycle, t.
void Faults(Json& j, const TaskReport& t) {
  const TaskStatsSnapshot& s = t.stats;
  const WatchdogConfig& watchdog = t.info.config.watchdog;
  j.Key("watchdog").Begin('{');
  j.Key("time_ns").Int(watchdog.time.count());
  j.Key("sensitivity").Int(watchdog.sensitivity);
  j.Key("max_consecutive_overruns").Int(watchdog.max_consecutive_overruns);
  j.Key("action").Str(WatchdogActionName(watchdog.effective_action()));
  j.Key("violations").Int(static_cast<long long>(s.watchdog_violations));
  j.Key("trips").Int(static_cast<long long>(s.watchdog_trips));
  j.End('}');
  j.Key("last_fault");
  if (s.faults == 0) {
    j.Null();
    return;
  }
  const FaultRecord& f = s.last_fault;
  j.Begin('{');
  j.Key("reason").Str(FaultReasonName(f.reason));
  j.Key("cycle").Int(static_cast<long long>(f.cycle));
  j.Key("time_ns").Int(f.time_ns);
  j.Key("since_start_ns").Int(f.since_start_ns);
  j.Key("execution_ns").Int(f.execution_ns);
  j.Key("consecutive").Int(f.consecutive);
  j.Key("limit_ns").Int(f.limit_ns);
  j.End('}');
}

// A threshold in force (ThresholdInForce()), else null.
void Threshold(Json& j, const char* key, std::int64_t ns) {
  j.Key(key);
  IntOrNull(j, ThresholdInForce(ns), ns);
}

// One explained task's counts: "by_cause" has every cause kind and "none" (no cause named).
void OutlierCounts(Json& j, const explain::TaskOutlierStats& s) {
  j.Begin('{');
  j.Key("task").Int(s.task);
  j.Key("task_name").Str(s.name);
  Threshold(j, "latency_above_ns", s.latency_above_ns);
  Threshold(j, "execution_above_ns", s.execution_above_ns);
  j.Key("outliers").Int(static_cast<long long>(s.outliers));
  j.Key("recorded").Int(static_cast<long long>(s.recorded));
  j.Key("unexplained").Int(static_cast<long long>(s.unexplained));
  j.Key("dropped").Int(static_cast<long long>(s.dropped));
  j.Key("by_cause").Begin('{');
  for (std::size_t k = 0; k < explain::kCauseKindCount; ++k) {
    j.Key(explain::CauseKindName(static_cast<explain::CauseKind>(k)))
        .Int(static_cast<long long>(s.by_leading_cause[k]));
  }
  j.Key("none").Int(static_cast<long long>(s.without_cause));
  j.End('}');
  j.Key("last_cycle");
  IntOrNull(j, s.recorded > 0, static_cast<long long>(s.last_cycle));
  j.End('}');
}

// One record as the page shows it: the JSON document's fields (telemetry/explain/README.md)
// without the raw lines, its first kPageCausesPerOutlier causes ("more_causes": the rest).
void OutlierRecordJson(Json& j, std::size_t index, const explain::OutlierRecord& r) {
  const explain::OutlierWindow& w = r.window;
  j.Begin('{');
  j.Key("index").Int(static_cast<long long>(index));
  j.Key("task").Int(w.task);
  j.Key("task_name").Str(w.task_name);
  j.Key("tid").Int(w.tid);
  j.Key("cpu");
  IntOrNull(j, w.cpu >= 0, w.cpu);
  j.Key("cycle").Int(static_cast<long long>(w.cycle));
  j.Key("outlier").Str(w.execution ? "execution" : "latency");
  j.Key("latency_ns").Int(w.wake_ns - w.release_ns);
  j.Key("execution_ns").Int(w.done_ns - w.wake_ns);
  j.Key("evidence").Str(explain::EvidenceKindName(r.evidence));
  j.Key("evidence_note").Str(r.evidence_note);
  j.Key("causes").Begin('[');
  const std::size_t shown = std::min(r.causes.size(), kPageCausesPerOutlier);
  for (std::size_t i = 0; i < shown; ++i) {
    const explain::Cause& c = r.causes[i];
    j.Begin('{');
    j.Key("kind").Str(explain::CauseKindName(c.kind));
    j.Key("name").Str(c.name);
    j.Key("ns");
    IntOrNull(j, c.ns >= 0, c.ns);
    j.Key("count").Int(static_cast<long long>(c.count));
    j.Key("id");
    IntOrNull(j, c.id >= 0, c.id);
    j.Key("detail").Str(c.detail);
    j.End('}');
  }
  j.End(']');
  j.Key("more_causes").Int(static_cast<long long>(r.causes.size() - shown));
  j.Key("explained_ns").Int(r.explained_ns);
  j.Key("unexplained_ns").Int(r.unexplained_ns);
  j.End('}');
}

// "outliers": {"explaining": false} when no task is explained (or the server has no feed);
// else the evidence note, the counts, and the last kPageOutliers records, newest first.
void Outliers(Json& j, const explain::OutlierFeed* feed) {
  j.Key("outliers").Begin('{');
  const explain::OutlierFeed::Page p =
      feed != nullptr ? feed->Last(kPageOutliers) : explain::OutlierFeed::Page{};
  j.Key("explaining").Bool(p.explaining);
  if (p.explaining) {
    j.Key("evidence").Str(p.evidence);
    j.Key("total").Int(static_cast<long long>(p.total));
    j.Key("samples_lost").Int(static_cast<long long>(p.stats.samples_lost));
    j.Key("analysis_cpu_ns_max").Int(p.stats.explain_cpu_ns_max);
    j.Key("analysis_cpu_ns_total").Int(p.stats.explain_cpu_ns_total);
    j.Key("tasks").Begin('[');
    for (const explain::TaskOutlierStats& s : p.stats.tasks) OutlierCounts(j, s);
    j.End(']');
    j.Key("records").Begin('[');
    for (std::size_t i = p.records.size(); i-- > 0;)
      OutlierRecordJson(j, p.first + i, p.records[i]);
    j.End(']');
  }
  j.End('}');
}

}  // namespace

std::string RenderTasksJson(const MetricsInput& in, std::size_t history_seconds) {
  const std::vector<TaskReport> tasks = ServedTasks(*in.hub, in.executor);
  const std::vector<std::int64_t> bounds = PageBinBounds(in.windows->layout());
  Json j;
  j.Begin('{');
  j.Key("unix_ms").Int(std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
  j.Key("window_s").Int(in.windows->config().window.count());
  j.Key("tick_ms").Int(in.windows->config().tick.count());
  j.Key("tasks").Begin('[');
  for (const TaskReport& t : tasks) {
    const TaskStatsSnapshot& s = t.stats;
    const bool has_data = s.cycles > 0;
    const TaskReading r = in.windows->Reading(t.id, /*with_buckets=*/false, bounds);
    const TaskWindow w = in.windows->Window(t.id);
    j.Begin('{');
    j.Key("id").Int(t.id);
    j.Key("name").Str(t.name);
    j.Key("cpu").Str(FormatCpus(t.info.config.cpus));
    j.Key("policy").Str(SchedPolicyName(t.info.effective_policy));
    j.Key("priority").Int(t.info.effective_priority);
    j.Key("rt_fallback").Bool(t.info.fell_back_to_non_rt);
    j.Key("state").Str(TaskStateName(s.state));
    j.Key("period_ns").Int(t.info.config.period.count());
    j.Key("has_data").Bool(has_data);
    j.Key("cycles").Int(static_cast<long long>(s.cycles));
    j.Key("overruns").Int(static_cast<long long>(s.overruns));
    j.Key("missed").Int(static_cast<long long>(s.missed_releases));
    j.Key("faults").Int(static_cast<long long>(s.faults));
    Faults(j, t);
    j.Key("ring_dropped").Int(static_cast<long long>(t.ring_dropped));
    j.Key("subscriber_lost");
    IntOrNull(j, in.collector != nullptr, static_cast<long long>(t.subscriber_lost));
    Stat(j, "latency", has_data, s.has_min_max(), s.latency_last_ns, s.latency_min_ns,
         s.latency_avg_ns(), s.latency_max_ns, r.latency.total, w.latency);
    Stat(j, "execution", has_data, s.has_min_max(), s.execution_last_ns, s.execution_min_ns,
         s.execution_avg_ns(), s.execution_max_ns, r.execution.total, w.execution);
    const bool has_jitter = s.cycles > 1;
    j.Key("jitter").Begin('{');
    j.Key("min");
    IntOrNull(j, s.has_jitter_min_max(), s.jitter_min_ns);
    j.Key("max");
    IntOrNull(j, s.has_jitter_min_max(), s.jitter_max_ns);
    j.Key("last");
    IntOrNull(j, has_jitter, s.jitter_last_ns);
    j.End('}');
    LogBins(j, bounds, r.latency.bins);
    j.Key("history").Begin('[');
    if (history_seconds > 0) {
      for (const SecondStats& h : in.windows->History(t.id, history_seconds)) {
        j.Begin('[');
        j.Int(h.unix_ms);
        IntOrNull(j, h.latency_count > 0, h.latency_max_ns);
        IntOrNull(j, h.latency_count > 0, h.latency_p99_ns);
        IntOrNull(j, h.execution_count > 0, h.execution_max_ns);
        IntOrNull(j, h.execution_count > 0, h.execution_p99_ns);
        j.End(']');
      }
    }
    j.End(']');
    j.End('}');
  }
  j.End(']');
  Outliers(j, in.outliers);
  j.End('}');
  return j.Take();
}

}  // namespace rtloop::telemetry::internal
