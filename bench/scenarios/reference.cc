#include "reference.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench_util.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

std::vector<std::string> SplitQuery(const std::string& q) {
  std::vector<std::string> parts;
  std::istringstream in(q);
  std::string p;
  while (std::getline(in, p, '/')) parts.push_back(Slug(p));
  return parts;
}

std::string CpuText(const json& cpu) {
  if (cpu.is_array()) {
    std::string out;
    for (const json& c : cpu) out += (out.empty() ? "" : ", ") + c.dump();
    return (cpu.size() > 1 ? "CPUs " : "CPU ") + out;
  }
  return "CPU " + (cpu.is_string() ? cpu.get<std::string>() : cpu.dump());
}

std::string Value(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string SummaryText(const json& s) {
  std::vector<std::string> parts;
  const auto with_cpu = [&](const char* value_key, const char* cpu_key, const std::string& what) {
    if (!s.contains(value_key)) return;
    std::string text = what + " " + Value(s[value_key]) + " us";
    if (s.contains(cpu_key)) text += " (" + CpuText(s[cpu_key]) + ")";
    parts.push_back(text);
  };
  with_cpu("max_us_all_cpus", "max_cpu", "max over all CPUs");
  with_cpu("lowest_max_us", "lowest_max_cpu", "lowest max of a CPU");
  if (s.contains("isolated_cpu_max_us")) {
    parts.push_back("max " + Value(s["isolated_cpu_max_us"]) + " us on the isolated " +
                    (s.contains("isolated_cpu") ? CpuText(s["isolated_cpu"]) : "CPU"));
  }
  static const std::set<std::string> kKnown = {"max_us_all_cpus", "max_cpu",
                                               "lowest_max_us",   "lowest_max_cpu",
                                               "isolated_cpu",    "isolated_cpu_max_us"};
  for (const auto& [k, v] : s.items()) {
    if (kKnown.count(k) == 0) parts.push_back(k == "result" ? Value(v) : k + " " + Value(v));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string DurationFromCommand(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    for (const auto& [opt, what] : {std::pair<std::string, std::string>{"-D", ""},
                                    {"--duration=", ""},
                                    {"-l", " cycles per thread"},
                                    {"--loops=", " cycles per thread"}}) {
      if (w.rfind(opt, 0) != 0) continue;
      std::string value = w.substr(opt.size());
      if (value.empty() && i + 1 < words.size()) value = words[i + 1];
      if (value.empty() || std::isdigit(static_cast<unsigned char>(value[0])) == 0) continue;
      return value + what + " (the command's " + w + (w == opt ? " " + value : "") + ")";
    }
  }
  return "";
}

std::string Slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      out.push_back(static_cast<char>(std::tolower(u)));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Result<std::vector<ReferenceRun>> LoadReferences(const std::string& path) {
  std::string text = BuiltinReferenceJson();
  std::string name = "the built-in reference data";
  if (!path.empty()) {
    Result<std::string> t = ReadTextFile(path);
    if (!t.ok()) return t.status();
    text = std::move(*t);
    name = path;
  }
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("runs") || !j["runs"].is_array()) {
    return DataLossError(name + ": not a documented-results file (no \"runs\" array)");
  }
  std::vector<ReferenceRun> runs;
  for (const json& r : j["runs"]) {
    ReferenceRun run;
    run.board = r.value("board", "");
    run.scenario = r.value("scenario", "");
    run.kernel = r.value("kernel_rt", "");
    run.command = r.value("command", "");
    run.load = r.contains("load") && r["load"].is_string() ? r["load"].get<std::string>() : "";
    run.duration = r.value("duration_as_printed", "");
    if (run.duration.empty()) run.duration = DurationFromCommand(run.command);
    if (run.duration.empty()) run.duration = "not published";
    run.source = r.value("source", "");
    if (const auto docs = j.find("documents"); docs != j.end() && docs->is_object()) {
      if (const auto doc = docs->find(run.source); doc != docs->end() && doc->is_object()) {
        run.vendor = doc->value("vendor", "");
        run.document = doc->value("document", "");
      }
    }
    run.key = Slug(run.board) + "/" + Slug(run.scenario) + "/" + Slug(run.kernel);
    if (r.contains("threads") && r["threads"].is_array()) {
      for (const json& t : r["threads"]) {
        ReferenceThread th;
        th.thread = t.value("thread", 0);
        th.prio = t.value("prio", 0);
        th.interval_us = t.value("interval_us", std::int64_t{0});
        th.count = t.value("count", std::uint64_t{0});
        th.min_us = t.value("min_us", 0.0);
        th.act_us = t.value("act_us", 0.0);
        th.avg_us = t.value("avg_us", 0.0);
        th.max_us = t.value("max_us", 0.0);
        run.threads.push_back(th);
      }
    }
    if (r.contains("summary") && r["summary"].is_object()) {
      run.summary = SummaryText(r["summary"]);
      const json& max = r["summary"].value("max_us_all_cpus", json());
      if (max.is_number()) run.summary_max_us = max.get<double>();
    }
    if (r.contains("note") && r["note"].is_string()) {
      run.summary += (run.summary.empty() ? "" : "; ") + r["note"].get<std::string>();
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<ReferenceRun> FindReference(const std::vector<ReferenceRun>& runs,
                                   const std::string& query) {
  const std::vector<std::string> q = SplitQuery(query);
  if (q.size() != 3) {
    return InvalidArgumentError("--reference='" + query +
                                "': expected BOARD/SCENARIO/KERNEL, e.g. "
                                "RK3568/Stress-test1/PREEMPT_RT (rtloop-bench references lists "
                                "them)");
  }
  // Per part: exact slugs first, then prefixes.
  std::vector<const ReferenceRun*> exact, prefix;
  for (const ReferenceRun& r : runs) {
    const std::vector<std::string> k = SplitQuery(r.key);
    bool all_exact = true, all_prefix = true;
    for (std::size_t i = 0; i < 3; ++i) {
      all_exact = all_exact && k[i] == q[i];
      all_prefix = all_prefix && k[i].rfind(q[i], 0) == 0;
    }
    if (all_exact) exact.push_back(&r);
    if (all_prefix) prefix.push_back(&r);
  }
  const std::vector<const ReferenceRun*>& found = !exact.empty() ? exact : prefix;
  if (found.size() == 1) return *found[0];
  std::string list;
  for (const ReferenceRun* r : found.empty() ? std::vector<const ReferenceRun*>{} : found) {
    list += "\n  " + r->key;
  }
  if (found.empty()) {
    return NotFoundError("--reference='" + query +
                         "' matches no published run (rtloop-bench references lists them)");
  }
  return InvalidArgumentError("--reference='" + query + "' matches " +
                              std::to_string(found.size()) + " runs; be more specific:" + list);
}

}  // namespace rtloop::bench
