#include "report.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "latency_data.h"
#include "outliers.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/utf8.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

std::string Num(const json& v, int decimals = 0) {
  if (!v.is_number()) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>());
  return buf;
}

std::string Str(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

const json& At(const json& j, const char* key) {
  static const json kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The percentiles of the table: shown only where the thread's cycles support them, by the rule
// compare gates with (SupportsPercentile: at least kMinTailSamples samples above it).
const char* const kTablePercentiles[] = {"p99", "p99.99"};

std::string Percentile(const json& t, const char* p, std::set<std::string>& unsupported) {
  const json& ps = At(t, "percentiles");
  const json& cycles = At(t, "cycles");
  if (cycles.is_number_unsigned() && !SupportsPercentile(p, cycles.get<std::uint64_t>()).ok()) {
    unsupported.insert(p);
    return "-";
  }
  return ps.is_object() ? Num(At(ps, p), 0) : "-";
}

std::string ThreadTable(const json& threads) {
  std::string out =
      "| T | P | I (us) | C | Min | Act | Avg | Max | p99 | p99.99 | overruns | missed |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::set<std::string> unsupported;
  for (const json& t : threads) {
    out += "| " + Str(t, "index") + " | " + Str(t, "priority") + " | " + Str(t, "interval_us") +
           " | " + Str(t, "cycles") + " | " + Num(At(t, "min")) + " | " + Num(At(t, "act")) +
           " | " + Num(At(t, "avg"), 2) + " | " + Num(At(t, "max")) + " | " +
           Percentile(t, "p99", unsupported) + " | " + Percentile(t, "p99.99", unsupported) +
           " | " + Str(t, "overruns") + " | " + Str(t, "missed_releases") + " |\n";
  }
  out += "\nAct (the last sample) is not kept by a histogram run (-h), as in cyclictest.\n";
  for (const char* p : kTablePercentiles) {
    if (unsupported.count(p) == 0) continue;
    const double pct = *PercentileOf(p);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s is shown for threads of at least %.0f cycles (%.0f samples above it, the "
                  "rule compare gates with); \"-\" where a thread has fewer.\n",
                  p, std::ceil(kMinTailSamples * 100.0 / (100.0 - pct) - 1e-6), kMinTailSamples);
    out += buf;
  }
  return out;
}

// "Tronlong, Tronlong's RK3588 ... tests (source 004_....txt)": who published it, where.
std::string SourceText(const json& ref) {
  const std::string vendor = Str(ref, "vendor");
  const std::string document = Str(ref, "document");
  std::string out = vendor != "-" && !vendor.empty() ? vendor + ", " : "";
  if (document != "-" && !document.empty()) out += document + ", ";
  return out + "transcribed as `" + Str(ref, "source") + "`";
}

std::string ReferenceSection(const json& ref, const json& threads) {
  std::string out = "\n## Published figures: " + Str(ref, "board") + ", " + Str(ref, "scenario") +
                    ", " + Str(ref, "kernel") + "\n\n";
  out += "Command `" + Str(ref, "command") + "`";
  if (At(ref, "load").is_string()) out += ", load `" + Str(ref, "load") + "`";
  out += ", run for " + Str(ref, "duration") + ". Source: " + SourceText(ref) +
         " (the vendor's own figures on its board).\n\n";
  const json& rthreads = At(ref, "threads");
  if (!rthreads.is_array() || rthreads.empty()) {
    return out + "Only a summary was published: " + Str(ref, "summary") + ".\n";
  }
  out += "| T | P | I (us) | C | Min | Act | Avg | Max |\n|---|---|---|---|---|---|---|---|\n";
  for (const json& t : rthreads) {
    out += "| " + Str(t, "thread") + " | " + Str(t, "prio") + " | " + Str(t, "interval_us") +
           " | " + Str(t, "count") + " | " + Num(At(t, "min_us")) + " | " + Num(At(t, "act_us")) +
           " | " + Num(At(t, "avg_us")) + " | " + Num(At(t, "max_us")) + " |\n";
  }
  out +=
      "\nSide by side (this run / published, us):\n\n"
      "| T | Min | Avg | Max | Max ratio |\n|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < rthreads.size(); ++i) {
    const json& r = rthreads[i];
    const json mine = i < threads.size() ? threads[i] : json();
    std::string ratio = "-";
    if (mine.is_object() && At(mine, "max").is_number() && At(r, "max_us").is_number() &&
        At(r, "max_us").get<double>() > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f",
                    At(mine, "max").get<double>() / At(r, "max_us").get<double>());
      ratio = buf;
    }
    out += "| " + Str(r, "thread") + " | " + Num(At(mine, "min")) + " / " + Num(At(r, "min_us")) +
           " | " + Num(At(mine, "avg"), 2) + " / " + Num(At(r, "avg_us")) + " | " +
           Num(At(mine, "max")) + " / " + Num(At(r, "max_us")) + " | " + ratio + " |\n";
  }
  return out;
}

// The line under the title when a reference is given: whether this run is the vendor's run
// (its cyclictest options and load, scaled to this machine) and, when not, why.
std::string ComparisonLine(const json& result) {
  const json& ref = At(result, "reference");
  if (!ref.is_object()) return "";
  const json& cmp = At(result, "reference_comparison");
  const std::string what =
      "the published run (" + Str(ref, "board") + ", " + Str(ref, "scenario") + ")";
  const auto list = [](const json& items) {
    std::string out;
    for (const json& i : items.is_array() ? items : json::array()) {
      out += (out.empty() ? "" : "; ") + (i.is_string() ? i.get<std::string>() : i.dump());
    }
    return out;
  };
  if (!cmp.is_object()) {
    return "**Not like for like** with " + what +
           ": this result does not record how its run relates to the reference.\n\n";
  }
  const std::string how = list(At(cmp, "how"));
  if (At(cmp, "like_for_like").is_boolean() && At(cmp, "like_for_like").get<bool>()) {
    return "**Like for like** with " + what + ": its cyclictest options and load" +
           (how.empty() ? "" : " (" + how + ")") + ".\n\n";
  }
  return "**Not like for like** with " + what + ": " + list(At(cmp, "reasons")) + "." +
         (how.empty() ? "" : " Otherwise: " + how + ".") + "\n\n";
}

std::string LoadSection(const json& result) {
  const json& scenario = At(result, "scenario");
  std::string out = "\n## Load\n\n" + Str(scenario, "description") + ".\n\n";
  const json& loads = At(result, "loads");
  for (const json& l : loads.is_array() ? loads : json::array()) {
    out += "- `" + Str(l, "command") + "`" +
           (At(l, "cpus").is_string() ? " on CPUs " + Str(l, "cpus") : std::string()) + ": " +
           Str(l, "max_processes_seen") + " processes seen while measuring" +
           (At(l, "exited_early").is_boolean() && At(l, "exited_early").get<bool>()
                ? ", **ended before the measurement did** (" + Str(l, "exit") + ")"
                : std::string()) +
           "\n";
  }
  for (const json& n : At(result, "notes").is_array() ? At(result, "notes") : json::array()) {
    out += "\nNote: " + (n.is_string() ? n.get<std::string>() : n.dump()) + "\n";
  }
  return out;
}

std::string CpuList(const json& system, const char* key) {
  const std::string v = Str(system, key);
  return v.empty() || v == "-" ? "none" : v;
}

std::string SystemSection(const json& result) {
  const json& system = At(result, "system");
  std::string out = "\n## System\n\n";
  out += "- host " + Str(system, "host") + ", " + Str(system, "cpu_model") + ", " +
         Str(system, "machine") + "\n";
  out += "- kernel " + Str(system, "kernel_release") + " (" + Str(system, "kernel_version") +
         "), preemption " + Str(system, "preempt_model") + "\n";
  out += "- CPUs online " + CpuList(system, "online_cpus") + ", isolated " +
         CpuList(system, "isolated_cpus") + "\n";
  out += "- load average (1 min) " + Str(system, "loadavg_start") + " at start, " +
         Str(system, "loadavg_end") + " at the end\n";
  const json& tune = At(result, "tune");
  if (tune.is_object() && At(tune, "applied").is_boolean() && At(tune, "applied").get<bool>()) {
    out += "- --tune: ";
    for (const json& s : At(tune, "settings")) {
      out += Str(s, "path") + " = " + Str(s, "value") + " (was " + Str(s, "previous") + "); ";
    }
    out += "restored afterwards\n";
  }
  const json& doctor = At(result, "doctor");
  if (doctor.is_object()) {
    out += "- doctor: " + Str(doctor, "fail") + " FAIL, " + Str(doctor, "warn") + " WARN";
    std::string listed;
    for (const json& f : At(doctor, "findings")) {
      if (Str(f, "level") != "OK") listed += (listed.empty() ? "" : ", ") + Str(f, "id");
    }
    out += listed.empty() ? "\n" : " (" + listed + ")\n";
  }
  return out;
}

}  // namespace

std::string FormatReportMarkdown(const json& result) {
  const json& scenario = At(result, "scenario");
  std::string out = "# rtloop-bench: " + Str(scenario, "name") + " on " +
                    Str(At(result, "system"), "host") + "\n\n" + ComparisonLine(result);
  if (At(result, "interrupted").is_boolean() && At(result, "interrupted").get<bool>()) {
    const json& reason = At(result, "interrupted_reason");
    out += "**Interrupted**" + (reason.is_string() ? " (" + reason.get<std::string>() + ")" : "") +
           ": the run was stopped early; the figures cover what was measured.\n\n";
  }
  out += "Measured with `" + Str(scenario, "measure_command") + "` for " +
         Str(scenario, "duration_s") + " s (values in us).\n\n";
  out += ThreadTable(At(result, "threads"));
  out += OutliersSection(result);
  out += LoadSection(result);
  out += SystemSection(result);
  const json& ref = At(result, "reference");
  if (ref.is_object()) out += ReferenceSection(ref, At(result, "threads"));
  out += "\nPlots: `plot.png` (latency histogram), `max-over-time.png` (max per window).\n";
  return out;
}

std::string FormatFindings(const ReadinessReport& report) {
  std::string out;
  for (const ReadinessFinding& f : report.findings) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-4s %-20s ", ReadinessLevelName(f.level), f.id.c_str());
    // Facts come from files that may hold anything (a saved tree): one line each, shown as is.
    out += buf + telemetry::EscapeControlCharacters(f.summary) + "\n";
    if (!f.fix.empty()) out += "     fix: " + telemetry::EscapeControlCharacters(f.fix) + "\n";
  }
  out += std::to_string(report.Count(ReadinessLevel::kFail)) + " FAIL, " +
         std::to_string(report.Count(ReadinessLevel::kWarn)) + " WARN, " +
         std::to_string(report.Count(ReadinessLevel::kOk)) + " OK\n";
  return out;
}

json FindingsJson(const ReadinessReport& report) {
  json findings = json::array();
  for (const ReadinessFinding& f : report.findings) {
    findings.push_back({{"id", f.id},
                        {"level", ReadinessLevelName(f.level)},
                        {"summary", f.summary},
                        {"fix", f.fix}});
  }
  return {{"schema_version", 1},
          {"findings", findings},
          {"ok", report.Count(ReadinessLevel::kOk)},
          {"warn", report.Count(ReadinessLevel::kWarn)},
          {"fail", report.Count(ReadinessLevel::kFail)}};
}

namespace {

nlohmann::json WithValidUtf8(const nlohmann::json& j) {
  if (j.is_string()) return telemetry::ToValidUtf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& e : j) out.push_back(WithValidUtf8(e));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : j.items())
      out[telemetry::ToValidUtf8(key)] = WithValidUtf8(value);
    return out;
  }
  return j;
}

}  // namespace

std::string JsonText(const nlohmann::json& document) {
  return WithValidUtf8(document).dump(1) + "\n";
}

}  // namespace rtloop::bench
