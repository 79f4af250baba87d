#include "metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "process_stats.h"
#include "rtloop/explain/outlier_feed.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "served_tasks.h"

namespace rtloop::telemetry::internal {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

constexpr double kNsToSeconds = 1e-9;

double Seconds(std::int64_t ns) { return static_cast<double>(ns) * kNsToSeconds; }

MetricFamily Family(const char* name, const char* help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

ClientMetric& Add(MetricFamily* f, Labels labels) {
  f->metric.emplace_back();
  f->metric.back().label = std::move(labels);
  return f->metric.back();
}

void AddCounter(MetricFamily* f, Labels labels, double value) {
  Add(f, std::move(labels)).counter.value = value;
}

void AddGauge(MetricFamily* f, Labels labels, double value) {
  Add(f, std::move(labels)).gauge.value = value;
}

Labels With(Labels labels, const char* name, std::string value) {
  labels.push_back({name, std::move(value)});
  return labels;
}

// The labels every per-task series carries.
Labels TaskLabels(const TaskReport& t, const std::string& label) {
  return {{"task", label},
          {"cpu", FormatCpus(t.info.config.cpus)},
          {"policy", SchedPolicyName(t.info.effective_policy)},
          {"priority", std::to_string(t.info.effective_priority)}};
}

// `r.bins` holds the counts per kHistogramBoundsNs bin (WindowedStats::Reading).
void AddHistogram(MetricFamily* f, const Labels& labels, const HistogramReading& r) {
  ClientMetric& m = Add(f, labels);
  m.histogram.bucket.reserve(kHistogramBoundsNs.size() + 1);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kHistogramBoundsSeconds.size(); ++i) {
    cumulative += r.bins[i];
    m.histogram.bucket.push_back({cumulative, kHistogramBoundsSeconds[i]});
  }
  cumulative += r.bins.back();
  m.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  m.histogram.sample_count = cumulative;
  m.histogram.sample_sum = Seconds(r.total.sum_ns);
}

// The max gauge and the summary (p99/p99.9/p99.99, count, sum) of one span; nothing when it
// holds no value ("no data", never 0).
void AddSpan(MetricFamily* max, MetricFamily* summary, const Labels& labels, const char* window,
             const WindowSummary& s) {
  if (!s.valid) return;
  const Labels w = With(labels, "window", window);
  AddGauge(max, w, Seconds(s.max_ns));
  ClientMetric& m = Add(summary, w);
  m.summary.sample_count = s.count;
  m.summary.sample_sum = Seconds(s.sum_ns);
  m.summary.quantile = {
      {0.99, Seconds(s.p99_ns)}, {0.999, Seconds(s.p99_9_ns)}, {0.9999, Seconds(s.p99_99_ns)}};
}

// Every per-task family, appended to `out`; the RT threads' tids into `rt_tids`.
void AddTaskFamilies(const MetricsInput& in, const std::vector<TaskReport>& tasks,
                     const std::vector<std::string>& task_labels, std::vector<MetricFamily>* out,
                     std::vector<int>* rt_tids) {
  const std::string window = std::to_string(in.windows->config().window.count()) + "s";

  MetricFamily cycles = Family("rtloop_task_cycles_total",
                               "Measured Step() calls, as of the reading the histograms come from "
                               "(equal to rtloop_task_wakeup_latency_seconds_count)",
                               MetricType::Counter);
  MetricFamily reading_time =
      Family("rtloop_task_reading_timestamp_seconds",
             "Unix time of the reading the task's counters and histograms come from (<= 1 s old)",
             MetricType::Gauge);
  MetricFamily overruns =
      Family("rtloop_task_overruns_total",
             "Cycles whose step ended after the next release (as of the histograms' reading)",
             MetricType::Counter);
  MetricFamily missed = Family("rtloop_task_missed_releases_total",
                               "Releases skipped because of an overrun", MetricType::Counter);
  MetricFamily faults =
      Family("rtloop_task_faults_total",
             "Faults: watchdog trips and faults the task reported (StepResult::kFault)",
             MetricType::Counter);
  MetricFamily watchdog_trips =
      Family("rtloop_task_watchdog_trips_total",
             "Trips of the execution-time watchdog (TaskConfig::watchdog.time x sensitivity; "
             "each is also a fault); only tasks with that watchdog",
             MetricType::Counter);
  MetricFamily state = Family("rtloop_task_state",
                              "Always 1; the label state is the task's current state (created, "
                              "starting, running, stopped, fault)",
                              MetricType::Gauge);
  MetricFamily dropped = Family("rtloop_task_ring_dropped_samples_total",
                                "Samples the task's ring had no room for (statistics include "
                                "them; streams and the sample log miss them)",
                                MetricType::Counter);
  MetricFamily lost = Family("rtloop_task_subscriber_lost_samples_total",
                             "Samples stream subscribers should have received and never did "
                             "(full queue, or queued at the run's end deadline), all streams; "
                             "GetStats' stream_loss",
                             MetricType::Counter);
  MetricFamily fallback = Family("rtloop_task_rt_fallback",
                                 "1 when the task runs SCHED_OTHER because its RT policy was not "
                                 "permitted (allow_non_rt_fallback)",
                                 MetricType::Gauge);
  MetricFamily period =
      Family("rtloop_task_period_seconds", "The task's release period", MetricType::Gauge);
  MetricFamily latency = Family("rtloop_task_wakeup_latency_seconds",
                                "Wake-up latency (wake-up minus release time), since start, as "
                                "of the last reading (<= 1 s old)",
                                MetricType::Histogram);
  MetricFamily execution = Family("rtloop_task_execution_time_seconds",
                                  "Execution time of Step(), since start, as of the last reading",
                                  MetricType::Histogram);
  MetricFamily latency_max = Family("rtloop_task_wakeup_latency_max_seconds",
                                    "Largest wake-up latency in the window (window=\"all\": "
                                    "since start, exact)",
                                    MetricType::Gauge);
  MetricFamily latency_q =
      Family("rtloop_task_wakeup_latency_window_seconds",
             "Wake-up latency percentiles (nearest rank), count and sum in the window",
             MetricType::Summary);
  MetricFamily execution_max = Family("rtloop_task_execution_time_max_seconds",
                                      "Largest execution time in the window", MetricType::Gauge);
  MetricFamily execution_q =
      Family("rtloop_task_execution_time_window_seconds",
             "Execution time percentiles (nearest rank), count and sum in the window",
             MetricType::Summary);

  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const TaskReport& t = tasks[i];
    const Labels labels = TaskLabels(t, task_labels[i]);
    if (t.stats.tid != 0) rt_tids->push_back(t.stats.tid);
    // The counters and the histograms come from one reading (WindowedStats' last tick), so that a
    // scrape agrees with itself: cycles_total is the latency histogram's _count, and the other
    // counters were read with it. A task not read yet has the live counters and no histogram.
    const TaskReading r = in.windows->Reading(t.id, /*with_buckets=*/false, kHistogramBoundsNs);
    const TaskStatsSnapshot& counted = r.valid ? r.stats : t.stats;
    const std::uint64_t cycle_count = r.valid ? r.latency.total.count : t.stats.cycles;
    AddCounter(&cycles, labels, static_cast<double>(cycle_count));
    AddCounter(&overruns, labels, static_cast<double>(counted.overruns));
    AddCounter(&missed, labels, static_cast<double>(counted.missed_releases));
    AddCounter(&faults, labels, static_cast<double>(counted.faults));
    if (r.valid) AddGauge(&reading_time, labels, static_cast<double>(r.unix_ms) * 1e-3);
    if (t.info.config.watchdog.time.count() > 0) {
      AddCounter(&watchdog_trips, labels, static_cast<double>(counted.watchdog_trips));
    }
    AddGauge(&state, With(labels, "state", TaskStateName(t.stats.state)), 1.0);
    AddCounter(&dropped, labels, static_cast<double>(t.ring_dropped));
    // Without a collector nobody subscribes: no loss to count ("none", not 0).
    if (in.collector != nullptr) {
      AddCounter(&lost, labels, static_cast<double>(t.subscriber_lost));
    }
    AddGauge(&fallback, labels, t.info.fell_back_to_non_rt ? 1.0 : 0.0);
    AddGauge(&period, labels, Seconds(t.info.config.period.count()));

    if (r.valid) {
      AddHistogram(&latency, labels, r.latency);
      AddHistogram(&execution, labels, r.execution);
      AddSpan(&latency_max, &latency_q, labels, "all", r.latency.total);
      AddSpan(&execution_max, &execution_q, labels, "all", r.execution.total);
    }
    const TaskWindow w = in.windows->Window(t.id);
    AddSpan(&latency_max, &latency_q, labels, window.c_str(), w.latency);
    AddSpan(&execution_max, &execution_q, labels, window.c_str(), w.execution);
  }

  for (MetricFamily* f : {&cycles, &reading_time, &overruns, &missed, &faults, &watchdog_trips,
                          &state, &dropped, &lost, &fallback, &period, &latency, &execution,
                          &latency_max, &latency_q, &execution_max, &execution_q}) {
    if (!f->metric.empty()) out->push_back(std::move(*f));
  }
}

// The outlier families (README.md, "Outliers"), appended to `out`: per explained task, and the
// analysis's cost. Nothing at all while the feed explains no task ("not explained", never 0).
// The counts only: OutlierFeed::Counts() copies no record.
void AddOutlierFamilies(const MetricsInput& in, const std::vector<TaskReport>& tasks,
                        const std::vector<std::string>& task_labels,
                        std::vector<MetricFamily>* out) {
  if (in.outliers == nullptr) return;
  const explain::OutlierFeed::Page counts = in.outliers->Counts();
  if (!counts.explaining) return;
  MetricFamily outliers =
      Family("rtloop_task_outliers_total",
             "Cycles whose wake-up latency or execution time was above the task's explanation "
             "threshold (rtloop_task_outlier_threshold_seconds)",
             MetricType::Counter);
  MetricFamily records =
      Family("rtloop_task_outlier_records_total",
             "Outlier records by the kind of their leading cause (thread, irq, softirq, "
             "timer-delay, page-faults, preemption, steal; none: the record names no cause, for "
             "want of evidence or because the evidence showed nothing)",
             MetricType::Counter);
  MetricFamily dropped = Family("rtloop_task_outliers_dropped_total",
                                "Outliers counted but not recorded (the records kept are bounded)",
                                MetricType::Counter);
  MetricFamily threshold =
      Family("rtloop_task_outlier_threshold_seconds",
             "Explanation threshold: kind=latency the wake-up latency, kind=execution the "
             "execution time (only when judged) above which a cycle is an outlier",
             MetricType::Gauge);
  for (const explain::TaskOutlierStats& s : counts.stats.tasks) {
    const auto task = std::find_if(tasks.begin(), tasks.end(),
                                   [&](const TaskReport& t) { return t.id == s.task; });
    if (task == tasks.end()) continue;  // not in the hub: no labels to give it
    const Labels labels =
        TaskLabels(*task, task_labels[static_cast<std::size_t>(task - tasks.begin())]);
    AddCounter(&outliers, labels, static_cast<double>(s.outliers));
    for (std::size_t k = 0; k < explain::kCauseKindCount; ++k) {
      AddCounter(&records,
                 With(labels, "cause", explain::CauseKindName(static_cast<explain::CauseKind>(k))),
                 static_cast<double>(s.by_leading_cause[k]));
    }
    AddCounter(&records, With(labels, "cause", "none"), static_cast<double>(s.without_cause));
    AddCounter(&dropped, labels, static_cast<double>(s.dropped));
    if (ThresholdInForce(s.latency_above_ns)) {
      AddGauge(&threshold, With(labels, "kind", "latency"), Seconds(s.latency_above_ns));
    }
    if (ThresholdInForce(s.execution_above_ns)) {
      AddGauge(&threshold, With(labels, "kind", "execution"), Seconds(s.execution_above_ns));
    }
  }
  for (MetricFamily* f : {&outliers, &records, &dropped, &threshold}) {
    if (!f->metric.empty()) out->push_back(std::move(*f));
  }
  MetricFamily cpu = Family("rtloop_outlier_analysis_cpu_seconds_total",
                            "CPU time the outlier analysis took, every record together (a non-RT "
                            "thread: rtloop-explain)",
                            MetricType::Counter);
  AddCounter(&cpu, {}, Seconds(counts.stats.explain_cpu_ns_total));
  out->push_back(std::move(cpu));
  MetricFamily cpu_max = Family("rtloop_outlier_analysis_cpu_max_seconds",
                                "CPU time of the costliest record's analysis", MetricType::Gauge);
  AddGauge(&cpu_max, {}, Seconds(counts.stats.explain_cpu_ns_max));
  out->push_back(std::move(cpu_max));
  MetricFamily lost = Family("rtloop_outlier_samples_lost_total",
                             "Samples the outlier analysis lost before reading them: outliers may "
                             "hide there (rtloop_task_outliers_total is then a lower bound)",
                             MetricType::Counter);
  AddCounter(&lost, {}, static_cast<double>(counts.stats.samples_lost));
  out->push_back(std::move(lost));
}

// The process and HTTP families, appended to `out`.
void AddProcessFamilies(const MetricsInput& in, std::size_t task_count,
                        const std::vector<int>& rt_tids, std::vector<MetricFamily>* out_families) {
  std::vector<MetricFamily>& out = *out_families;
  const ProcessStats p = ReadProcessStats(rt_tids);
  if (p.ok) {
    MetricFamily locked = Family("rtloop_process_memory_locked_bytes",
                                 "Memory locked by mlockall (VmLck)", MetricType::Gauge);
    AddGauge(&locked, {}, static_cast<double>(p.locked_bytes));
    out.push_back(std::move(locked));
    MetricFamily rss = Family("rtloop_process_resident_memory_bytes", "Resident memory (VmRSS)",
                              MetricType::Gauge);
    AddGauge(&rss, {}, static_cast<double>(p.resident_bytes));
    out.push_back(std::move(rss));
  }
  MetricFamily cpu = Family("rtloop_process_cpu_seconds_total",
                            "CPU time of the whole process (user + system)", MetricType::Counter);
  AddCounter(&cpu, {}, p.cpu_seconds);
  out.push_back(std::move(cpu));
  MetricFamily thread_cpu = Family("rtloop_process_thread_cpu_seconds_total",
                                   "CPU time of the process's non-RT threads (telemetry, HTTP, "
                                   "gRPC, main), summed by thread name",
                                   MetricType::Counter);
  for (const ThreadCpu& t : p.threads) AddCounter(&thread_cpu, {{"thread", t.name}}, t.cpu_seconds);
  if (!thread_cpu.metric.empty()) out.push_back(std::move(thread_cpu));
  MetricFamily tasks_total = Family("rtloop_tasks", "Tasks known to telemetry", MetricType::Gauge);
  AddGauge(&tasks_total, {}, static_cast<double>(task_count));
  out.push_back(std::move(tasks_total));

  if (in.http != nullptr) {
    MetricFamily requests =
        Family("rtloop_http_requests_total", "Requests the HTTP endpoint answered, by status code",
               MetricType::Counter);
    for (const int code : kHttpStatusCodes) {
      AddCounter(&requests, {{"code", std::to_string(code)}},
                 static_cast<double>(in.http->Answered(code)));
    }
    out.push_back(std::move(requests));
    const std::int64_t scrape_ns = in.http->last_scrape_cpu_ns.load(std::memory_order_relaxed);
    if (scrape_ns >= 0) {
      MetricFamily scrape =
          Family("rtloop_http_scrape_cpu_seconds",
                 "CPU time the previous /metrics scrape took to render", MetricType::Gauge);
      AddGauge(&scrape, {}, Seconds(scrape_ns));
      out.push_back(std::move(scrape));
    }
  }
}

// The index of `code` in kHttpStatusCodes; the table's size when it is not there.
std::size_t StatusIndex(int code) noexcept {
  std::size_t i = 0;
  while (i < kHttpStatusCodes.size() && kHttpStatusCodes[i] != code) ++i;
  return i;
}

}  // namespace

int KnownHttpStatus(int code) noexcept {
  if (StatusIndex(code) < kHttpStatusCodes.size()) return code;
  return code >= 400 && code < 500 ? 400 : 500;
}

void HttpCounters::Count(int code) noexcept {
  answered[StatusIndex(KnownHttpStatus(code))].fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t HttpCounters::Answered(int code) const noexcept {
  const std::size_t i = StatusIndex(code);
  return i < answered.size() ? answered[i].load(std::memory_order_relaxed) : 0;
}

std::vector<MetricFamily> CollectMetrics(const MetricsInput& in) {
  const std::vector<TaskReport> tasks = ServedTasks(*in.hub, in.executor);
  const std::vector<std::string> labels = SeriesLabels(tasks);
  std::vector<MetricFamily> out;
  out.reserve(31);
  std::vector<int> rt_tids;
  AddTaskFamilies(in, tasks, labels, &out, &rt_tids);
  AddOutlierFamilies(in, tasks, labels, &out);
  AddProcessFamilies(in, tasks.size(), rt_tids, &out);
  return out;
}

std::string RenderMetrics(const MetricsInput& in) {
  const TelemetryCollectable collectable(in);
  return prometheus::TextSerializer().Serialize(collectable.Collect());
}

}  // namespace rtloop::telemetry::internal
