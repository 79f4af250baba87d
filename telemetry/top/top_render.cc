#include "top_render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/task_report.h"

namespace rtloop::telemetry::top {
namespace {

using ::rtloop::StrFormat;

std::string CpuList(const google::protobuf::RepeatedField<std::int32_t>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  int i = 0;
  while (i < cpus.size()) {
    int j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

const char* PolicyName(v1::SchedPolicy p) {
  switch (p) {
    case v1::SCHED_POLICY_OTHER:
      return "other";
    case v1::SCHED_POLICY_BATCH:
      return "batch";
    case v1::SCHED_POLICY_IDLE:
      return "idle";
    case v1::SCHED_POLICY_FIFO:
      return "fifo";
    case v1::SCHED_POLICY_RR:
      return "rr";
    case v1::SCHED_POLICY_DEADLINE:
      return "deadline";
    default:
      return "?";
  }
}

const char* StateName(v1::TaskState s) {
  switch (s) {
    case v1::TASK_STATE_CREATED:
      return "created";
    case v1::TASK_STATE_STARTING:
      return "starting";
    case v1::TASK_STATE_RUNNING:
      return "running";
    case v1::TASK_STATE_STOPPED:
      return "stopped";
    case v1::TASK_STATE_FAULT:
      return "FAULT";
    default:
      return "?";
  }
}

// The value at percentile `p`; nullopt when the stats carry none (no data).
std::optional<double> PercentileNs(const v1::LatencyStats& stats, double p) {
  for (const v1::Percentile& q : stats.percentiles()) {
    if (std::fabs(q.percentile() - p) < 1e-9) return static_cast<double>(q.value_ns());
  }
  return std::nullopt;
}

std::string Duration(std::int64_t ns) {
  const std::int64_t s = ns / 1'000'000'000;
  return StrFormat("%" PRId64 ":%02" PRId64 ":%02" PRId64, s / 3600, (s / 60) % 60, s % 60);
}

std::string BinLabel(std::size_t i) {
  constexpr std::size_t kBins = std::size(kBinEdgesUs);
  if (i < kBins) return StrFormat("<%" PRId64 "us", kBinEdgesUs[i]);
  return StrFormat(">=%" PRId64 "us", kBinEdgesUs[kBins - 1]);
}

const v1::Histogram* FindHistogram(const v1::GetStatsResponse& stats, std::uint32_t task,
                                   v1::Quantity quantity) {
  for (const v1::Histogram& h : stats.histograms()) {
    if (h.task_id() == task && h.quantity() == quantity) return &h;
  }
  return nullptr;
}

// One task's row as the table reads it.
struct Row {
  const v1::TaskStats& stats;
  const v1::TaskInfo* info;  // nullptr: not in ListTasks
  std::uint64_t loss;
};

// What a cell shows: text, or "no data" for a latency figure of a task without cycles.
struct Cell {
  std::string text;
  bool needs_data = false;  // a figure that exists only once the task has run a cycle
};

std::string Number(std::uint64_t v) { return std::to_string(v); }
Cell Micros(std::optional<double> ns) { return {FormatMicros(ns, 0), true}; }
Cell Micros(std::int64_t ns) { return Micros(std::optional<double>(static_cast<double>(ns))); }
// A figure with presence (proto3 optional): "no data"/"-" when the server left it out (no cycle
// yet, or a reset since), never 0.
Cell Present(bool has, std::int64_t ns) {
  if (!has) return {FormatMicros(std::nullopt, 0), true};
  return Micros(ns);
}
Cell Present(bool has, double ns) { return Micros(has ? std::optional<double>(ns) : std::nullopt); }
Cell Jitter(bool has, std::int64_t ns) {
  if (!has) return {"-", true};  // jitter needs two wake-ups (and one since a reset)
  return Micros(ns);
}

// The name of a cause kind as the explanation says it (explain::CauseKindName).
const char* CauseKindText(v1::CauseKind kind) {
  switch (kind) {
    case v1::CAUSE_KIND_THREAD:
      return "thread";
    case v1::CAUSE_KIND_IRQ:
      return "irq";
    case v1::CAUSE_KIND_SOFTIRQ:
      return "softirq";
    case v1::CAUSE_KIND_TIMER_DELAY:
      return "timer-delay";
    case v1::CAUSE_KIND_PAGE_FAULTS:
      return "page-faults";
    case v1::CAUSE_KIND_PREEMPTION:
      return "preemption";
    case v1::CAUSE_KIND_STEAL:
      return "steal";
    default:
      return "?";
  }
}

// A cause's time ("4.0ms", "310us") or, counted only, its count ("x30").
std::string CauseAmount(const v1::OutlierCause& c) {
  if (!c.has_ns()) return "x" + std::to_string(c.count());
  if (c.ns() >= 1'000'000) return StrFormat("%.1fms", static_cast<double>(c.ns()) * 1e-6);
  return StrFormat("%" PRId64 "us", c.ns() / 1000);
}

// OUTL: the task's outliers seen; "-" when the task is not explained (never 0 then).
std::string OutlierCount(const v1::TaskStats& t) {
  return t.has_outliers() ? std::to_string(t.outliers().outliers()) : std::string("-");
}

// LAST_OUTLIER: the leading cause of the task's last record, at most `width` bytes: "thread
// rtl-spinner 4.0ms" (the name is cut, never the amount); "none" before the first record;
// "no evidence" / "unexplained" for a record without a cause; "-" when not explained.
std::string LastOutlierCause(const v1::TaskStats& t, std::size_t width) {
  if (!t.has_outliers()) return "-";
  if (!t.outliers().has_last()) return "none";
  const v1::OutlierRecord& last = t.outliers().last();
  if (last.causes_size() == 0) {
    return last.evidence() == v1::EVIDENCE_KIND_NONE ? "no evidence" : "unexplained";
  }
  const v1::OutlierCause& c = last.causes(0);
  const std::string kind = CauseKindText(c.kind());
  const std::string amount = CauseAmount(c);
  // A name that only repeats the kind ("steal", "page faults") is left out.
  std::string spoken = kind;
  std::replace(spoken.begin(), spoken.end(), '-', ' ');
  std::string name =
      c.name() == kind || c.name() == spoken ? std::string() : EscapeControlCharacters(c.name());
  const std::size_t fixed = kind.size() + amount.size() + (name.empty() ? 1 : 2);
  if (fixed >= width) return (kind + " " + amount).substr(0, width);
  if (name.size() > width - fixed) {
    std::size_t cut = width - fixed;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);
  }
  return kind + (name.empty() ? "" : " " + name) + " " + amount;
}

std::string PolicyOf(const Row& r) {
  if (r.info == nullptr) return "?";
  std::string p = PolicyName(r.info->effective_policy());
  if (r.info->effective_priority() > 0) p += "/" + std::to_string(r.info->effective_priority());
  if (r.info->non_rt_fallback()) p += "!";
  return p;
}

// A string from the server as the terminal may show it: control characters escaped (a task named
// "\x1b[2J" must not clear the screen), then cut to at most `max_bytes` without splitting a UTF-8
// character (the server sends valid UTF-8).
std::string Shown(const std::string& text, std::size_t max_bytes = std::string::npos) {
  std::string out = EscapeControlCharacters(text);
  if (out.size() <= max_bytes) return out;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  return out;
}

// The task table's columns, in display order. `priority` 0 is always shown; when the terminal is
// too narrow the column with the highest priority (the rightmost among equals) goes first.
struct Column {
  const char* header;
  int width;
  int priority;
  bool left;  // left-aligned
  Cell (*cell)(const Row&);
};

constexpr Column kColumns[] = {
    {"ID", 3, 4, false, [](const Row& r) { return Cell{std::to_string(r.stats.task_id())}; }},
    {"NAME", 14, 0, true, [](const Row& r) { return Cell{Shown(r.stats.task_name(), 14)}; }},
    {"POLICY", 10, 5, true, [](const Row& r) { return Cell{PolicyOf(r)}; }},
    {"PERIOD", 7, 5, false,
     [](const Row& r) {
       return Cell{r.info == nullptr
                       ? std::string("?")
                       : FormatPeriod(std::chrono::nanoseconds(r.info->task().period_ns()))};
     }},
    {"STATE", 8, 0, true, [](const Row& r) { return Cell{StateName(r.stats.state())}; }},
    {"FAULTS", 6, 0, false, [](const Row& r) { return Cell{Number(r.stats.faults())}; }},
    {"CYCLES", 12, 2, false, [](const Row& r) { return Cell{Number(r.stats.cycles())}; }},
    {"LAT_MIN", 8, 4, false,
     [](const Row& r) {
       return Present(r.stats.latency().has_min_ns(), r.stats.latency().min_ns());
     }},
    {"LAT_AVG", 8, 1, false,
     [](const Row& r) {
       return Present(r.stats.latency().has_avg_ns(), r.stats.latency().avg_ns());
     }},
    {"LAT_P99", 8, 1, false,
     [](const Row& r) { return Micros(PercentileNs(r.stats.latency(), 99.0)); }},
    {"P99.99", 8, 3, false,
     [](const Row& r) { return Micros(PercentileNs(r.stats.latency(), 99.99)); }},
    {"LAT_MAX", 8, 0, false,
     [](const Row& r) {
       return Present(r.stats.latency().has_max_ns(), r.stats.latency().max_ns());
     }},
    {"EXEC_AVG", 8, 6, false,
     [](const Row& r) {
       return Present(r.stats.execution().has_avg_ns(), r.stats.execution().avg_ns());
     }},
    {"EXEC_MAX", 8, 3, false,
     [](const Row& r) {
       return Present(r.stats.execution().has_max_ns(), r.stats.execution().max_ns());
     }},
    {"JIT_MIN", 8, 6, false,
     [](const Row& r) { return Jitter(r.stats.has_jitter_min_ns(), r.stats.jitter_min_ns()); }},
    {"JIT_MAX", 8, 6, false,
     [](const Row& r) { return Jitter(r.stats.has_jitter_max_ns(), r.stats.jitter_max_ns()); }},
    {"OVERRUNS", 9, 2, false, [](const Row& r) { return Cell{Number(r.stats.overruns())}; }},
    {"MISSED", 9, 3, false, [](const Row& r) { return Cell{Number(r.stats.missed_releases())}; }},
    {"DROPS", 9, 5, false, [](const Row& r) { return Cell{Number(r.stats.ring_dropped())}; }},
    {"LOSS", 9, 7, false, [](const Row& r) { return Cell{Number(r.loss)}; }},
    // Shown only when some task is explained (kExplainColumns).
    {"OUTL", 6, 1, false, [](const Row& r) { return Cell{OutlierCount(r.stats)}; }},
    {"LAST_OUTLIER", 24, 1, true, [](const Row& r) { return Cell{LastOutlierCause(r.stats, 24)}; }},
};
constexpr std::size_t kColumnCount = std::size(kColumns);
// The last columns, the outliers', are left out when no task of the snapshot is explained.
constexpr std::size_t kExplainColumns = 2;

bool AnyExplained(const v1::GetStatsResponse& stats) {
  for (const v1::TaskStats& t : stats.tasks()) {
    if (t.has_outliers()) return true;
  }
  return false;
}

// The columns that fit in `width` (0: all); the outliers' only with `explaining`.
std::vector<std::size_t> VisibleColumns(int width, bool explaining) {
  const std::size_t columns = explaining ? kColumnCount : kColumnCount - kExplainColumns;
  std::vector<std::size_t> visible(columns);
  for (std::size_t i = 0; i < columns; ++i) visible[i] = i;
  auto total = [&] {
    int w = -1;
    for (std::size_t i : visible) w += kColumns[i].width + 1;
    return w;
  };
  while (width > 0 && total() > width) {
    std::size_t drop = kColumnCount;
    for (std::size_t v = 0; v < visible.size(); ++v) {
      const int p = kColumns[visible[v]].priority;
      if (p > 0 && (drop == kColumnCount || p >= kColumns[visible[drop]].priority)) drop = v;
    }
    if (drop == kColumnCount) break;  // only the essential columns are left
    visible.erase(visible.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  return visible;
}

std::string Pad(const std::string& text, int width, bool left) {
  return left ? StrFormat("%-*s", width, text.c_str()) : StrFormat("%*s", width, text.c_str());
}

std::string TableHeader(const std::vector<std::size_t>& visible) {
  std::string line;
  for (std::size_t i : visible) {
    if (!line.empty()) line += ' ';
    line += Pad(kColumns[i].header, kColumns[i].width, kColumns[i].left);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();  // a left-aligned last column
  return line;
}

// A task without cycles shows "no data" once, in its first figure column, and leaves the other
// figures blank: never a 0.0 that looks like a perfect task.
std::string TableRow(const Row& row, const std::vector<std::size_t>& visible) {
  const bool no_data = row.stats.cycles() == 0;
  bool said = false;
  std::string line;
  for (std::size_t i : visible) {
    Cell c = kColumns[i].cell(row);
    if (no_data && c.needs_data) {
      c.text = said ? "" : "no data";
      said = true;
    }
    if (!line.empty()) line += ' ';
    line += Pad(c.text, kColumns[i].width, kColumns[i].left);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

std::vector<std::string> HeaderLines(const Snapshot& snap, std::int64_t now_ns) {
  const v1::SystemInfo& sys = snap.system.system();
  const std::time_t now_s = static_cast<std::time_t>(now_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&now_s, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  const std::int64_t dma = snap.system.cpu_dma_latency_us();
  return {StrFormat("rtloop-top  %s  %s  rtloop %s  up %s  streams %u", snap.address.c_str(), when,
                    snap.system.rtloop_version().c_str(),
                    snap.system.process_start_unix_ns() > 0
                        ? Duration(now_ns - snap.system.process_start_unix_ns()).c_str()
                        : "?",
                    snap.stats.open_streams()),
          StrFormat("host %s  kernel %s %s  %s", Shown(sys.host_name()).c_str(),
                    Shown(sys.kernel_release()).c_str(), Shown(sys.kernel_version()).c_str(),
                    Shown(sys.machine()).c_str()),
          StrFormat("preempt %s  PREEMPT_RT %s  CPUs online %s  isolated %s  affinity %s  "
                    "cpu_dma_latency %s",
                    Shown(sys.preempt_model()).c_str(), sys.realtime() ? "yes" : "no",
                    CpuList(sys.online_cpus()).c_str(), CpuList(sys.isolated_cpus()).c_str(),
                    CpuList(sys.affinity_cpus()).c_str(),
                    dma < 0             ? "unknown"
                    : dma >= 2000000000 ? "none"
                                        : (std::to_string(dma) + "us").c_str()),
          ""};
}

std::vector<std::string> HistogramLines(const v1::TaskStats& t, const v1::Histogram& h) {
  const std::vector<LatencyBin> bins = BinLatency(h);
  std::uint64_t total = 0;
  for (const LatencyBin& b : bins) total += b.count;
  std::vector<std::string> out = {
      "", StrFormat("wake-up latency, task %u \"%s\" (bar: log10 of the count)", t.task_id(),
                    Shown(t.task_name()).c_str())};
  for (std::size_t i = 0; i < bins.size(); ++i) {
    const std::uint64_t c = bins[i].count;
    const int bar = c == 0 ? 0 : 1 + static_cast<int>(std::log10(static_cast<double>(c)) * 4);
    std::string line =
        StrFormat("  %8s %12" PRIu64 " %6.2f%% %s", BinLabel(i).c_str(), c,
                  total ? 100.0 * static_cast<double>(c) / static_cast<double>(total) : 0.0,
                  std::string(static_cast<std::size_t>(std::min(bar, 40)), '#').c_str());
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(line);
  }
  return out;
}

// The task rows that fit in `room` lines (all when room < 0): with a "... more" line when some
// do not.
std::vector<std::string> TaskLines(const Snapshot& snap, const std::vector<std::size_t>& visible,
                                   int room) {
  std::map<std::uint32_t, const v1::TaskInfo*> infos;
  for (const v1::TaskInfo& t : snap.tasks.tasks()) infos[t.task().id()] = &t;
  std::map<std::uint32_t, std::uint64_t> loss;
  for (const v1::StreamLoss& l : snap.stats.stream_loss()) loss[l.task_id()] = l.lost();
  const int tasks = snap.stats.tasks_size();
  const int shown = room < 0 || tasks <= room ? tasks : std::max(room - 1, 0);
  std::vector<std::string> out;
  for (int i = 0; i < shown; ++i) {
    const v1::TaskStats& t = snap.stats.tasks(i);
    const auto info = infos.find(t.task_id());
    out.push_back(
        TableRow({t, info == infos.end() ? nullptr : info->second, loss[t.task_id()]}, visible));
  }
  if (shown < tasks) {
    out.push_back(StrFormat("... %d more task%s (enlarge the terminal to see them)", tasks - shown,
                            tasks - shown == 1 ? "" : "s"));
  }
  return out;
}

const char* FaultReasonText(v1::FaultReason reason) {
  switch (reason) {
    case v1::FAULT_REASON_OVERRUNS:
      return "overruns";
    case v1::FAULT_REASON_WATCHDOG:
      return "watchdog";
    case v1::FAULT_REASON_WATCHDOG_SINGLE:
      return "watchdog-single-cycle";
    case v1::FAULT_REASON_STEP:
      return "step";
    default:
      return "?";
  }
}

const char* WatchdogActionText(v1::WatchdogAction action) {
  switch (action) {
    case v1::WATCHDOG_ACTION_FAULT_TASK:
      return "fault-task";
    case v1::WATCHDOG_ACTION_STOP_ALL:
      return "stop-all";
    case v1::WATCHDOG_ACTION_CONTINUE:
      return "continue";
    default:
      return "?";
  }
}

// One line per task with a watchdog or a fault: the watchdog's limits, action and state, and the
// last fault (as the report's "watchdog, faults" section says them).
std::vector<std::string> FaultLines(const Snapshot& snap) {
  std::map<std::uint32_t, const v1::TaskDescriptor*> desc;
  for (const v1::TaskInfo& t : snap.tasks.tasks()) desc[t.task().id()] = &t.task();
  std::vector<std::string> out;
  for (const v1::TaskStats& t : snap.stats.tasks()) {
    const auto d = desc.find(t.task_id());
    const v1::TaskDescriptor* td = d == desc.end() ? nullptr : d->second;
    const bool watchdog = td != nullptr && (td->watchdog_time_ns() > 0 ||
                                            td->watchdog_max_consecutive_overruns() > 0);
    if (!watchdog && t.faults() == 0) continue;
    std::string line =
        StrFormat("watchdog task %u \"%s\":", t.task_id(), Shown(t.task_name(), 14).c_str());
    if (td != nullptr && td->watchdog_time_ns() > 0) {
      line += " " + FormatPeriod(std::chrono::nanoseconds(td->watchdog_time_ns())) + " x" +
              std::to_string(td->watchdog_sensitivity());
    }
    if (td != nullptr && td->watchdog_max_consecutive_overruns() > 0) {
      line += " " + std::to_string(td->watchdog_max_consecutive_overruns()) + " overruns";
    }
    if (td != nullptr) line += std::string(" ") + WatchdogActionText(td->watchdog_action());
    line += StrFormat(", violations %" PRIu64 ", trips %" PRIu64, t.watchdog_violations(),
                      t.watchdog_trips());
    if (t.faults() > 0) {
      line +=
          StrFormat("; last fault: cycle %" PRIu64 " t=%.3fs %s (execution %s us)",
                    t.last_fault_cycle(), static_cast<double>(t.last_fault_since_start_ns()) * 1e-9,
                    FaultReasonText(t.last_fault_reason()),
                    FormatMicros(static_cast<double>(t.last_fault_execution_ns()), 0).c_str());
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace

std::vector<LatencyBin> BinLatency(const v1::Histogram& histogram) {
  constexpr std::size_t kBins = std::size(kBinEdgesUs);
  std::vector<LatencyBin> bins(kBins + 1);
  for (std::size_t i = 0; i < kBins; ++i) bins[i].upper_us = kBinEdgesUs[i];
  for (const v1::HistogramBucket& b : histogram.buckets()) {
    // A bucket goes to the bin of its lower bound (buckets are narrow against these bins).
    std::size_t i = 0;
    while (i < kBins && b.lower_ns() >= kBinEdgesUs[i] * 1000) ++i;
    bins[i].count += b.count();
  }
  return bins;
}

std::string RenderText(const Snapshot& snap, const RenderOptions& options) {
  const std::int64_t now_ns = options.now_unix_ns >= 0
                                  ? options.now_unix_ns
                                  : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
  // With a height: height - 1 lines, so the cursor's line below the frame never scrolls it.
  const int max_lines = options.height > 0 ? std::max(options.height - 1, 1) : -1;
  const std::vector<std::size_t> visible = VisibleColumns(options.width, AnyExplained(snap.stats));
  std::vector<std::string> lines = HeaderLines(snap, now_ns);
  lines.push_back(TableHeader(visible));
  const int room = max_lines < 0 ? -1 : std::max(max_lines - static_cast<int>(lines.size()), 1);
  for (std::string& l : TaskLines(snap, visible, room)) lines.push_back(std::move(l));
  for (std::string& l : FaultLines(snap)) {
    if (max_lines >= 0 && static_cast<int>(lines.size()) >= max_lines) break;
    lines.push_back(std::move(l));
  }
  if (options.show_histograms) {
    for (const v1::TaskStats& t : snap.stats.tasks()) {
      const v1::Histogram* h = FindHistogram(snap.stats, t.task_id(), v1::QUANTITY_WAKEUP_LATENCY);
      if (h == nullptr) continue;
      std::vector<std::string> block = HistogramLines(t, *h);
      if (max_lines >= 0 && static_cast<int>(lines.size() + block.size()) > max_lines) break;
      lines.insert(lines.end(), block.begin(), block.end());
    }
  }
  std::string out;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    if (max_lines >= 0 && i >= max_lines) break;
    std::string& l = lines[static_cast<std::size_t>(i)];
    if (options.width > 0 && static_cast<int>(l.size()) > options.width) {
      l.resize(static_cast<std::size_t>(options.width));
    }
    out += l + "\n";
  }
  return out;
}

namespace {

// The JSON printer leaves an unset optional field out; --json prints it as null instead, so that a
// script finds every key and cannot read a missing figure as 0. Absent fields get a sentinel no
// measurement can have, which the printed text then turns into null.
constexpr std::int64_t kAbsentInt = std::numeric_limits<std::int64_t>::min();
constexpr double kAbsentDouble = -std::numeric_limits<double>::max();

void MarkAbsent(v1::LatencyStats* s) {
  if (!s->has_min_ns()) s->set_min_ns(kAbsentInt);
  if (!s->has_max_ns()) s->set_max_ns(kAbsentInt);
  if (!s->has_avg_ns()) s->set_avg_ns(kAbsentDouble);
}

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (std::size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

// A task that is not explained gets this as its `outliers` (a message field the printer would
// leave out), printed as null; a record's absent cpu, cause time and id get the sentinels.
constexpr std::int32_t kAbsentInt32 = std::numeric_limits<std::int32_t>::min();

v1::TaskOutlierCounts NotExplained() {
  v1::TaskOutlierCounts m;
  m.set_task_name("\x01not explained");  // no task name of a server holds U+0001 unescaped
  return m;
}

void MarkAbsent(v1::OutlierRecord* r) {
  if (!r->has_cpu()) r->set_cpu(kAbsentInt32);
  for (v1::OutlierCause& c : *r->mutable_causes()) {
    if (!c.has_ns()) c.set_ns(kAbsentInt);
    if (!c.has_id()) c.set_id(kAbsentInt32);
  }
}

// `stats` as JSON, absent figures as null.
std::string StatsJson(v1::GetStatsResponse stats,
                      const google::protobuf::util::JsonPrintOptions& options) {
  for (v1::TaskStats& t : *stats.mutable_tasks()) {
    MarkAbsent(t.mutable_latency());
    MarkAbsent(t.mutable_execution());
    if (!t.has_jitter_min_ns()) t.set_jitter_min_ns(kAbsentInt);
    if (!t.has_jitter_max_ns()) t.set_jitter_max_ns(kAbsentInt);
    if (!t.has_outliers()) {
      *t.mutable_outliers() = NotExplained();
    } else if (t.outliers().has_last()) {
      MarkAbsent(t.mutable_outliers()->mutable_last());
    }
  }
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(stats, &json, options);
  std::string not_explained;
  (void)google::protobuf::util::MessageToJsonString(NotExplained(), &not_explained, options);
  ReplaceAll(&json, "\"outliers\":" + not_explained, "\"outliers\":null");
  ReplaceAll(&json, "\"" + std::to_string(kAbsentInt) + "\"", "null");  // int64 is a JSON string
  ReplaceAll(&json, ":" + std::to_string(kAbsentInt32), ":null");
  ReplaceAll(&json, "-1.7976931348623157e+308", "null");
  return json;
}

}  // namespace

std::string RenderJson(const Snapshot& snap) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string system;
  std::string tasks;
  std::string stats;
  // Raw buckets are left out (they can be thousands); latency_bins summarises them.
  v1::GetStatsResponse stats_only = snap.stats;
  stats_only.clear_histograms();
  (void)google::protobuf::util::MessageToJsonString(snap.system, &system, options);
  (void)google::protobuf::util::MessageToJsonString(snap.tasks, &tasks, options);
  stats = StatsJson(std::move(stats_only), options);
  std::string bins = "[";
  bool first_task = true;
  for (const v1::TaskStats& t : snap.stats.tasks()) {
    const v1::Histogram* h = FindHistogram(snap.stats, t.task_id(), v1::QUANTITY_WAKEUP_LATENCY);
    if (h == nullptr) continue;
    bins += StrFormat("%s{\"task_id\":%u,\"bins\":[", first_task ? "" : ",", t.task_id());
    first_task = false;
    const std::vector<LatencyBin> b = BinLatency(*h);
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (b[i].upper_us > 0) {
        bins += StrFormat("%s{\"upper_us\":%" PRId64 ",\"count\":%" PRIu64 "}", i ? "," : "",
                          b[i].upper_us, b[i].count);
      } else {
        bins += StrFormat("%s{\"upper_us\":null,\"count\":%" PRIu64 "}", i ? "," : "", b[i].count);
      }
    }
    bins += "]}";
  }
  bins += "]";
  std::string address;
  for (const char c : snap.address) {
    if (c == '"' || c == '\\') address += '\\';
    address += c;
  }
  return "{\"schema_version\":1,\"address\":\"" + address + "\",\"system\":" + system +
         ",\"tasks\":" + tasks + ",\"stats\":" + stats + ",\"latency_bins\":" + bins + "}\n";
}

}  // namespace rtloop::telemetry::top
