#include "rtloop/explain/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>

#include "rtloop/telemetry/utf8.h"

namespace rtloop::explain {
namespace {

void Key(std::string& out, std::string_view key) {
  telemetry::AppendJsonString(out, key);
  out += ':';
}

void Int(std::string& out, std::string_view key, std::int64_t v) {
  Key(out, key);
  out += std::to_string(v);
  out += ',';
}

void Uint(std::string& out, std::string_view key, std::uint64_t v) {
  Key(out, key);
  out += std::to_string(v);
  out += ',';
}

void Str(std::string& out, std::string_view key, std::string_view v) {
  Key(out, key);
  telemetry::AppendJsonString(out, v);
  out += ',';
}

void EndObject(std::string& out) {
  if (!out.empty() && out.back() == ',') out.pop_back();
  out += '}';
}

void AppendCause(std::string& out, const Cause& c) {
  out += '{';
  Str(out, "kind", CauseKindName(c.kind));
  Str(out, "name", c.name);
  Key(out, "ns");
  out += c.ns >= 0 ? std::to_string(c.ns) : std::string("null");
  out += ',';
  Uint(out, "count", c.count);
  Key(out, "id");
  out += c.id >= 0 ? std::to_string(c.id) : std::string("null");
  out += ',';
  Str(out, "detail", c.detail);
  EndObject(out);
}

void AppendRecord(std::string& out, const OutlierRecord& r) {
  const OutlierWindow& w = r.window;
  out += '{';
  Uint(out, "task", w.task);
  Str(out, "task_name", w.task_name);
  Int(out, "tid", w.tid);
  Key(out, "cpu");
  out += w.cpu >= 0 ? std::to_string(w.cpu) : std::string("null");
  out += ',';
  Uint(out, "cycle", w.cycle);
  Str(out, "outlier", w.execution ? "execution" : "latency");
  Int(out, "release_ns", w.release_ns);
  Int(out, "wake_ns", w.wake_ns);
  Int(out, "done_ns", w.done_ns);
  Int(out, "latency_ns", w.wake_ns - w.release_ns);
  Int(out, "execution_ns", w.done_ns - w.wake_ns);
  Str(out, "evidence", EvidenceKindName(r.evidence));
  Str(out, "evidence_note", r.evidence_note);
  Key(out, "causes");
  out += '[';
  for (std::size_t i = 0; i < r.causes.size(); ++i) {
    if (i > 0) out += ',';
    AppendCause(out, r.causes[i]);
  }
  out += "],";
  Int(out, "explained_ns", r.explained_ns);
  Int(out, "unexplained_ns", r.unexplained_ns);
  Key(out, "raw");
  out += '[';
  for (std::size_t i = 0; i < r.raw.size(); ++i) {
    if (i > 0) out += ',';
    telemetry::AppendJsonString(out, r.raw[i]);
  }
  out += ']';
  out += '}';
}

std::string Ms(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// What a record is grouped under in the summary: its leading cause (kind, name and who; never
// its count, so that the same counted cause is one group), or "unexplained".
std::string Leading(const OutlierRecord& r) {
  if (r.evidence == EvidenceKind::kNone) return "no evidence";
  if (r.causes.empty()) {
    return std::string("unexplained: the ") + EvidenceKindName(r.evidence) + " showed nothing";
  }
  const Cause& c = r.causes.front();
  std::string s = std::string(CauseKindName(c.kind));
  // A timer delay's name is only "timer", steal's "steal", page faults' "page faults": the kind
  // says it.
  std::string spoken = s;
  std::replace(spoken.begin(), spoken.end(), '-', ' ');
  if (c.kind != CauseKind::kTimerDelay && c.name != s && c.name != spoken) s += " " + c.name;
  std::string extra;
  if (c.kind == CauseKind::kThread && c.id >= 0) extra = "tid " + std::to_string(c.id);
  if (c.kind == CauseKind::kIrq && c.id >= 0) extra = "irq " + std::to_string(c.id);
  if (!c.detail.empty() && c.kind == CauseKind::kThread) {
    extra += (extra.empty() ? "" : ", ") + c.detail;
  }
  if (!extra.empty()) s += " (" + extra + ")";
  return s;
}

}  // namespace

std::string OutliersJson(const std::vector<OutlierRecord>& records, const ExplainerStats& stats,
                         const Thresholds& thresholds) {
  std::string out = "{";
  Int(out, "version", kOutliersJsonVersion);
  Int(out, "latency_above_ns", thresholds.latency_above_ns);
  Int(out, "execution_above_ns", thresholds.execution_above_ns);
  Uint(out, "outliers", stats.outliers);
  Uint(out, "recorded", stats.recorded);
  Uint(out, "unexplained", stats.unexplained);
  Uint(out, "from_counters", stats.from_counters);
  Uint(out, "dropped", stats.dropped);
  Uint(out, "samples_lost", stats.samples_lost);
  Int(out, "analysis_cpu_ns_max", stats.explain_cpu_ns_max);
  Int(out, "analysis_cpu_ns_total", stats.explain_cpu_ns_total);
  Key(out, "records");
  out += "[";
  for (std::size_t i = 0; i < records.size(); ++i) {
    out += i > 0 ? ",\n" : "\n";
    AppendRecord(out, records[i]);
  }
  out += "]}\n";
  return out;
}

std::string OutliersSummary(const std::vector<OutlierRecord>& records, const ExplainerStats& stats,
                            const Thresholds& thresholds) {
  std::string out =
      "wake-up latency above " + std::to_string(thresholds.latency_above_ns / 1000) + " us";
  if (thresholds.execution_above_ns > 0) {
    out +=
        " or execution time above " + std::to_string(thresholds.execution_above_ns / 1000) + " us";
  }
  out += ": " + std::to_string(stats.outliers) + (stats.outliers == 1 ? " cycle" : " cycles");
  std::map<std::string, std::uint64_t> by_evidence;
  for (const OutlierRecord& r : records) ++by_evidence[EvidenceKindName(r.evidence)];
  if (!by_evidence.empty()) {
    out += " (evidence:";
    for (const auto& [kind, n] : by_evidence) out += " " + kind + " " + std::to_string(n);
    out += ")";
  }
  out += "\n";
  // Grouped by leading cause, the most frequent first; each with its largest share of a window.
  struct Group {
    std::uint64_t cycles = 0;
    std::int64_t max_ns = 0;
    std::uint64_t max_count = 0;  // a counted-only leading cause: its largest count in a window
    std::string note;
  };
  std::map<std::string, Group> groups;
  for (const OutlierRecord& r : records) {
    Group& g = groups[Leading(r)];
    ++g.cycles;
    const bool timed = !r.causes.empty() && r.causes.front().ns >= 0;
    const std::int64_t ns = r.evidence == EvidenceKind::kNone || r.causes.empty()
                                ? r.window.length_ns()
                            : timed ? r.causes.front().ns
                                    : 0;
    g.max_ns = std::max(g.max_ns, ns);
    if (!r.causes.empty() && !timed) g.max_count = std::max(g.max_count, r.causes.front().count);
    if (g.note.empty() && r.evidence == EvidenceKind::kNone) g.note = r.evidence_note;
  }
  std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(b.second.cycles, b.second.max_ns) < std::tie(a.second.cycles, a.second.max_ns);
  });
  for (const auto& [what, g] : sorted) {
    out += "  " + std::to_string(g.cycles) + (g.cycles == 1 ? " cycle: " : " cycles: ") + what;
    if (g.max_ns > 0) out += ", up to " + Ms(g.max_ns) + " of the window";
    if (g.max_count > 0) out += ", counted up to " + std::to_string(g.max_count) + "x in a window";
    if (!g.note.empty()) out += " (" + g.note + ")";
    out += "\n";
  }
  if (stats.dropped > 0) {
    out += "  " + std::to_string(stats.dropped) +
           " more not recorded (the record limit or the analysis queue was full)\n";
  }
  if (stats.samples_lost > 0) {
    out += "  " + std::to_string(stats.samples_lost) +
           " samples lost before analysis: the count above is a lower bound\n";
  }
  return out;
}

}  // namespace rtloop::explain
