#include "reference.h"

#include <cctype>
#include <nlohmann/json.hpp>
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

std::string Summary(const json& s) {
  std::string out;
  for (const auto& [k, v] : s.items()) {
    out += (out.empty() ? "" : ", ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace

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
    run.source = r.value("source", "");
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
    if (r.contains("summary") && r["summary"].is_object()) run.summary = Summary(r["summary"]);
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
