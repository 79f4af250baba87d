#include "outliers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include "bench_util.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

constexpr int kCauseKinds = 7;     // CauseKind's enumerators, kThread .. kSteal
constexpr int kEvidenceKinds = 3;  // EvidenceKind's, kNone .. kCounters
// The by_leading_cause keys of records without a cause: evidence that showed nothing, and none.
constexpr const char* kNothingFound = "nothing-found";
constexpr const char* kNoEvidence = "no-evidence";
// report.md lists this many groups of rtloop::explain's summary; outliers.json has every record.
constexpr std::size_t kShownGroups = 10;

// Reads one field of a JSON object, by type, and remembers the first field that was wrong.
class Fields {
 public:
  Fields(const json& object, std::string where) : o_(object), where_(std::move(where)) {
    if (!o_.is_object()) Fail("", "an object");
  }
  std::int64_t Int(const char* key, bool nullable = false, std::int64_t if_null = -1) {
    const json* v = Find(key);
    if (v == nullptr) return 0;
    if (nullable && v->is_null()) return if_null;
    if (!v->is_number_integer()) return Fail(key, "an integer"), 0;
    return v->get<std::int64_t>();
  }
  std::uint64_t Uint(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return 0;
    if (!v->is_number_unsigned()) return Fail(key, "an integer >= 0"), 0;
    return v->get<std::uint64_t>();
  }
  std::string Str(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return "";
    if (!v->is_string()) return Fail(key, "a string"), "";
    return v->get<std::string>();
  }
  const json& Array(const char* key) {
    static const json kEmpty = json::array();
    const json* v = Find(key);
    if (v == nullptr) return kEmpty;
    if (!v->is_array()) return Fail(key, "an array"), kEmpty;
    return *v;
  }
  void Fail(const std::string& key, const std::string& expected) {
    if (error_.ok()) {
      error_ =
          InvalidArgumentError(where_ + (key.empty() ? "" : "." + key) + ": expected " + expected);
    }
  }
  const Status& error() const { return error_; }

 private:
  const json* Find(const char* key) {
    if (!o_.is_object()) return nullptr;
    const auto it = o_.find(key);
    if (it == o_.end()) {
      Fail(key, "the field (missing)");
      return nullptr;
    }
    return &*it;
  }
  const json& o_;
  std::string where_;
  Status error_;
};

// The kind whose rtloop::explain name is `name` (CauseKindName, EvidenceKindName): the names are
// the library's, looked up through it rather than copied.
template <typename Kind, typename NameOf>
std::optional<Kind> KindNamed(const std::string& name, int kinds, NameOf name_of) {
  for (int i = 0; i < kinds; ++i) {
    if (name == name_of(static_cast<Kind>(i))) return static_cast<Kind>(i);
  }
  return std::nullopt;
}

Status ParseCause(const json& j, const std::string& where, explain::Cause* c) {
  Fields f(j, where);
  const std::string kind = f.Str("kind");
  c->name = f.Str("name");
  c->ns = f.Int("ns", true);
  c->count = f.Uint("count");
  c->id = static_cast<int>(f.Int("id", true));
  c->detail = f.Str("detail");
  if (!f.error().ok()) return f.error();
  const auto k = KindNamed<explain::CauseKind>(kind, kCauseKinds, explain::CauseKindName);
  if (!k) return InvalidArgumentError(where + ".kind: unknown cause kind '" + kind + "'");
  c->kind = *k;
  return Status::Ok();
}

Status ParseRecord(const json& j, const std::string& where, explain::OutlierRecord* r) {
  Fields f(j, where);
  explain::OutlierWindow& w = r->window;
  w.task = static_cast<TaskId>(f.Uint("task"));
  w.task_name = f.Str("task_name");
  w.tid = static_cast<int>(f.Int("tid"));
  w.cpu = static_cast<int>(f.Int("cpu", true));
  w.cycle = f.Uint("cycle");
  const std::string outlier = f.Str("outlier");
  w.release_ns = f.Int("release_ns");
  w.wake_ns = f.Int("wake_ns");
  w.done_ns = f.Int("done_ns");
  const std::string evidence = f.Str("evidence");
  r->evidence_note = f.Str("evidence_note");
  r->explained_ns = f.Int("explained_ns");
  r->unexplained_ns = f.Int("unexplained_ns");
  const json& causes = f.Array("causes");
  const json& raw = f.Array("raw");
  if (!f.error().ok()) return f.error();
  if (outlier != "latency" && outlier != "execution") {
    return InvalidArgumentError(where + ".outlier: expected \"latency\" or \"execution\"");
  }
  w.execution = outlier == "execution";
  const auto e =
      KindNamed<explain::EvidenceKind>(evidence, kEvidenceKinds, explain::EvidenceKindName);
  if (!e) return InvalidArgumentError(where + ".evidence: unknown evidence '" + evidence + "'");
  r->evidence = *e;
  for (std::size_t i = 0; i < causes.size(); ++i) {
    explain::Cause c;
    if (Status s = ParseCause(causes[i], where + ".causes[" + std::to_string(i) + "]", &c);
        !s.ok()) {
      return s;
    }
    r->causes.push_back(std::move(c));
  }
  for (const json& line : raw) {
    if (!line.is_string()) return InvalidArgumentError(where + ".raw: expected strings");
    r->raw.push_back(line.get<std::string>());
  }
  return Status::Ok();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    out.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

// The thread index of a record: rtloop-cyclic names its tasks "cyclic<T>".
std::optional<std::int64_t> ThreadOf(const explain::OutlierRecord& r) {
  const std::string& n = r.window.task_name;
  if (n.rfind("cyclic", 0) != 0 || n.size() == 6) return std::nullopt;
  std::int64_t t = 0;
  for (std::size_t i = 6; i < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9' || t > 1'000'000) return std::nullopt;
    t = t * 10 + (n[i] - '0');
  }
  return t;
}

// "thread spinner (tid 812, FIFO 95), 3.994 ms of the window": a record's leading cause as
// rtloop::explain's summary names it (its group line for this record alone).
std::string LeadingCause(const explain::OutlierRecord& r, const explain::Thresholds& t) {
  explain::ExplainerStats one;
  one.outliers = one.recorded = 1;
  const std::vector<std::string> lines = Lines(explain::OutliersSummary({r}, one, t));
  if (lines.size() < 2) return "";
  std::string cause = lines[1].substr(std::min(lines[1].size(), lines[1].find(": ") + 2));
  if (const std::size_t up = cause.find(", up to "); up != std::string::npos) {
    cause.replace(up, 8, ", ");  // one cycle: its part of the window, not a largest one
  }
  return cause;
}

// The run's worst cycle (the largest thread max) and the record of it, when there is one: a
// latency record of the same thread whose latency is that max (rtloop-cyclic's max is whole us).
json MaxCycle(const OutliersDocument& doc, const json& threads) {
  if (!threads.is_array()) return nullptr;
  const json* worst = nullptr;  // into `threads` (not a copy of it)
  for (const json& t : threads) {
    const auto m = t.find("max");
    if (m == t.end() || !m->is_number()) continue;
    if (worst == nullptr || m->get<double>() > (*worst)["max"].get<double>()) worst = &t;
  }
  if (worst == nullptr) return nullptr;
  const double max_us = (*worst)["max"].get<double>();
  const std::int64_t thread = worst->value("index", std::int64_t{0});
  json out = {{"thread", thread},
              {"latency_us", max_us},
              {"recorded", false},
              {"cycle", nullptr},
              {"leading_cause", nullptr}};
  for (const explain::OutlierRecord& r : doc.records) {
    const double us = static_cast<double>(r.window.wake_ns - r.window.release_ns) / 1000.0;
    if (r.window.execution || ThreadOf(r) != thread || std::fabs(us - max_us) >= 1.0) continue;
    out["recorded"] = true;
    out["cycle"] = r.window.cycle;
    out["leading_cause"] = LeadingCause(r, doc.thresholds);
    break;
  }
  return out;
}

json Counts(const std::map<std::string, std::uint64_t>& counts) {
  json out = json::object();
  for (const auto& [k, n] : counts) out[k] = n;
  return out;
}

}  // namespace

Result<OutliersDocument> ParseOutliersJson(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("not JSON");
  Fields f(j, "$");
  const std::int64_t version = f.Int("version");
  if (!f.error().ok()) return f.error();
  if (version != explain::kOutliersJsonVersion) {
    return InvalidArgumentError("version " + std::to_string(version) +
                                ": this rtloop-bench reads " + "version " +
                                std::to_string(explain::kOutliersJsonVersion));
  }
  OutliersDocument d;
  d.thresholds.latency_above_ns = f.Int("latency_above_ns");
  d.thresholds.execution_above_ns = f.Int("execution_above_ns");
  d.stats.outliers = f.Uint("outliers");
  d.stats.recorded = f.Uint("recorded");
  d.stats.unexplained = f.Uint("unexplained");
  // Added within version 1 (a document written before it has none: then not known, 0).
  if (j.contains("from_counters")) d.stats.from_counters = f.Uint("from_counters");
  d.stats.dropped = f.Uint("dropped");
  d.stats.samples_lost = f.Uint("samples_lost");
  d.stats.explain_cpu_ns_max = f.Int("analysis_cpu_ns_max");
  d.stats.explain_cpu_ns_total = f.Int("analysis_cpu_ns_total");
  const json& records = f.Array("records");
  if (!f.error().ok()) return f.error();
  for (std::size_t i = 0; i < records.size(); ++i) {
    explain::OutlierRecord r;
    if (Status s = ParseRecord(records[i], "$.records[" + std::to_string(i) + "]", &r); !s.ok()) {
      return s;
    }
    d.records.push_back(std::move(r));
  }
  return d;
}

std::string ExplainedWithNote(const std::string& cyclic_log) {
  static const std::string kPrefix = "# explained with ";
  std::size_t at = cyclic_log.rfind("\n" + kPrefix);
  if (at != std::string::npos) {
    ++at;
  } else if (cyclic_log.rfind(kPrefix, 0) == 0) {
    at = 0;
  } else {
    return "";
  }
  const std::size_t begin = at + kPrefix.size();
  const std::size_t end = cyclic_log.find('\n', begin);
  return cyclic_log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

json OutliersOff(const std::string& reason) {
  return {{"status", "off"}, {"reason", reason}, {"file", nullptr}};
}

json OutliersFromDocument(const OutliersDocument& doc, const std::string& evidence,
                          const json& threads) {
  std::map<std::string, std::uint64_t> by_evidence, by_cause;
  for (int i = 0; i < kEvidenceKinds; ++i) {
    by_evidence[explain::EvidenceKindName(static_cast<explain::EvidenceKind>(i))] = 0;
  }
  for (int i = 0; i < kCauseKinds; ++i) {
    by_cause[explain::CauseKindName(static_cast<explain::CauseKind>(i))] = 0;
  }
  by_cause[kNothingFound] = 0;
  by_cause[kNoEvidence] = 0;
  json notes = json::object();  // the first record's note of each evidence kind
  for (const explain::OutlierRecord& r : doc.records) {
    ++by_evidence[explain::EvidenceKindName(r.evidence)];
    if (!notes.contains(explain::EvidenceKindName(r.evidence))) {
      notes[explain::EvidenceKindName(r.evidence)] = r.evidence_note;
    }
    ++by_cause[r.evidence == explain::EvidenceKind::kNone ? kNoEvidence
               : r.causes.empty()                         ? kNothingFound
                                  : explain::CauseKindName(r.causes.front().kind)];
  }
  const std::int64_t exec = doc.thresholds.execution_above_ns;
  return {{"status", "ok"},
          {"reason", nullptr},
          {"file", kOutliersFile},
          {"latency_above_us", doc.thresholds.latency_above_ns / 1000},
          {"execution_above_us", exec > 0 ? json(exec / 1000) : json()},
          {"evidence", evidence.empty() ? json() : json(evidence)},
          {"outliers", doc.stats.outliers},
          {"recorded", doc.stats.recorded},
          {"unexplained", doc.stats.unexplained},
          {"dropped", doc.stats.dropped},
          {"samples_lost", doc.stats.samples_lost},
          {"by_evidence", Counts(by_evidence)},
          {"evidence_notes", notes},
          {"analysis_cpu_ms_max", static_cast<double>(doc.stats.explain_cpu_ns_max) / 1e6},
          {"analysis_cpu_ms_total", static_cast<double>(doc.stats.explain_cpu_ns_total) / 1e6},
          {"by_leading_cause", Counts(by_cause)},
          {"summary", Lines(explain::OutliersSummary(doc.records, doc.stats, doc.thresholds))},
          {"max_cycle", MaxCycle(doc, threads)}};
}

json OutliersResult(const std::string& path, const std::string& cyclic_log, const json& threads) {
  const std::string evidence = ExplainedWithNote(cyclic_log);
  Result<std::string> text = ReadTextFile(path);
  Result<OutliersDocument> doc =
      text.ok() ? ParseOutliersJson(*text) : Result<OutliersDocument>(text.status());
  if (doc.ok()) return OutliersFromDocument(*doc, evidence, threads);
  json out = {{"status", "failed"},
              {"reason", (text.ok() ? path + ": " : std::string()) + doc.status().message()},
              {"file", nullptr}};
  if (!evidence.empty()) out["evidence"] = evidence;
  return out;
}

namespace {

std::string Text(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return "";
  // Names come from /proc and the trace (a thread's comm may hold anything): one line each.
  return telemetry::EscapeControlCharacters(it->is_string() ? it->get<std::string>() : it->dump());
}

std::uint64_t Count(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

std::string Us(const json& v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f us", v.is_number() ? v.get<double>() : 0.0);
  return buf;
}

// "100 us" or "100 us of wake-up latency or 500 us of execution time".
std::string Thresholds(const json& o) {
  std::string s = Text(o, "latency_above_us") + " us";
  if (!Text(o, "execution_above_us").empty()) {
    s += " of wake-up latency or " + Text(o, "execution_above_us") + " us of execution time";
  }
  return s;
}

// rtloop::explain's summary, its groups as a list (at most kShownGroups): "- 5 cycles: thread
// spinner (tid 812, FIFO 95), up to 4.012 ms of the window". Its header and its lines on dropped
// records and lost samples are said in words by the caller.
std::string Groups(const json& summary) {
  std::string out;
  std::size_t groups = 0;
  for (const json& line : summary.is_array() ? summary : json::array()) {
    if (!line.is_string()) continue;
    const std::string l = line.get<std::string>();
    const bool group = l.rfind("  ", 0) == 0 && (l.find(" cycle: ") != std::string::npos ||
                                                 l.find(" cycles: ") != std::string::npos);
    if (!group) continue;
    if (++groups <= kShownGroups)
      out += "- " + telemetry::EscapeControlCharacters(l.substr(2)) + "\n";
  }
  if (groups > kShownGroups) {
    out += "- and " + std::to_string(groups - kShownGroups) +
           " more leading causes (every record is in `outliers.json`)\n";
  }
  return out;
}

// Whether the run's worst cycle has a record; "" when the result has no thread max.
std::string WorstCycle(const json& o) {
  const json& m = o.value("max_cycle", json());
  if (!m.is_object()) return "";
  const std::string what = Us(m.value("latency_us", json())) + " on T" + Text(m, "thread");
  const json& above = o.value("latency_above_us", json());
  if (above.is_number() && m.value("latency_us", json()).is_number() &&
      m["latency_us"].get<double>() <= above.get<double>()) {
    return "The run's worst cycle, " + what + ", was not above the threshold.\n";
  }
  if (m.value("recorded", false)) {
    return "The run's worst cycle, " + what + " (cycle " + Text(m, "cycle") +
           "), has a record: " + Text(m, "leading_cause") + ".\n";
  }
  return "The run's worst cycle, " + what + ", has no record" +
         (Count(o, "dropped") + Count(o, "samples_lost") > 0
              ? ": it may be among the outliers not recorded or the samples lost"
              : "") +
         ".\n";
}

// What rtloop-cyclic explained with, the records whose evidence was the coarser /proc counters
// (one's note: how far its snapshots lay and why not the trace), and what the analysis cost.
std::string EvidenceLines(const json& o) {
  std::string out = "\n";
  if (!Text(o, "evidence").empty()) out += "Evidence: " + Text(o, "evidence") + ".";
  const json& by = o.value("by_evidence", json());
  if (by.is_object() && Count(by, "counters") > 0) {
    const json& notes = o.value("evidence_notes", json());
    const std::uint64_t n = Count(by, "counters");
    out += " " + std::to_string(n) + (n == 1 ? " record has" : " records have") +
           " the /proc counters as evidence, such as: " +
           (notes.is_object() ? Text(notes, "counters") : "") +
           ". The counters give counts over the sampling interval around a window, not times "
           "inside it; the threads they name are candidates that may have run.";
  }
  const json& total = o.value("analysis_cpu_ms_total", json());
  if (total.is_number() && Count(o, "recorded") > 0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, " The analysis took %.1f ms of CPU time, %.1f ms the costliest.",
                  total.get<double>(), o.value("analysis_cpu_ms_max", 0.0));
    out += buf;
  }
  return out == "\n" ? "" : out + "\n";
}

std::string Explained(const json& o) {
  std::string out;
  if (Count(o, "outliers") == 0) {
    out = "No cycle above " + Thresholds(o) + ": nothing to explain";
    const json& m = o.value("max_cycle", json());
    if (m.is_object())
      out +=
          " (the worst: " + Us(m.value("latency_us", json())) + " on T" + Text(m, "thread") + ")";
    out += ".\n";
  } else {
    const json& summary = o.value("summary", json());
    const std::string head = summary.is_array() && !summary.empty() && summary[0].is_string()
                                 ? telemetry::EscapeControlCharacters(summary[0].get<std::string>())
                                 : "";
    out = "Outliers, " + head +
          ". By leading cause, the most frequent first, each with the "
          "largest part of a window it took:\n\n" +
          Groups(summary) + "\n";
    out += "Recorded " + std::to_string(Count(o, "recorded")) + " of " +
           std::to_string(Count(o, "outliers")) + " outliers (" +
           std::to_string(Count(o, "unexplained")) + " without evidence); " +
           std::to_string(Count(o, "dropped")) +
           " not recorded (the record limit or the analysis queue was full); " +
           std::to_string(Count(o, "samples_lost")) + " samples lost before analysis" +
           (Count(o, "samples_lost") > 0 ? ", so the count of outliers is a lower bound" : "") +
           ".\n\n" + WorstCycle(o);
  }
  return out + EvidenceLines(o) +
         "Every record with its causes ranked by time and the raw evidence: `outliers.json`.\n";
}

}  // namespace

std::string OutliersSection(const json& result) {
  std::string out = "\n## Why the worst cycles were late\n\n";
  const auto it = result.find("outliers");
  if (it == result.end() || !it->is_object()) {
    return out +
           "Not recorded: this result.json has no \"outliers\" object (written by an "
           "rtloop-bench from before outlier explanation).\n";
  }
  const json& o = *it;
  const std::string status = Text(o, "status");
  if (status == "ok") return out + Explained(o);
  if (status == "off") return out + "Not explained: " + Text(o, "reason") + ".\n";
  out += "Not explained: the outlier records could not be read (" + Text(o, "reason") + ").";
  if (!Text(o, "evidence").empty())
    out += " rtloop-cyclic explained with " + Text(o, "evidence") + ".";
  return out + " `rtloop-cyclic.log` has its output.\n";
}

}  // namespace rtloop::bench
