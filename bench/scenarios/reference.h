// The vendors' published cyclictest results (reference/documented-results.json, built into the
// binary), looked up as BOARD/SCENARIO/KERNEL for report.md's side-by-side table.
//
//   Result<std::vector<ReferenceRun>> all = LoadReferences();          // the built-in copy
//   Result<ReferenceRun> ref = FindReference(*all, "rk3568/stress-test1/preempt-rt");
//   ref->threads[0].max_us;   // 74
//
// Matching: each of the three parts is compared as a slug (lower case, every run of other
// characters as one '-'): an exact slug wins, else a unique prefix ("rk3588-tronlong" for
// "RK3588 (Tronlong)"). Ambiguous or unknown queries are errors that list the candidates.
//
// Threading: pure functions. Not RT-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

struct ReferenceThread {
  int thread = 0;
  int prio = 0;
  std::int64_t interval_us = 0;
  std::uint64_t count = 0;
  double min_us = 0, act_us = 0, avg_us = 0, max_us = 0;
};

struct ReferenceRun {
  std::string key;  // board/scenario/kernel slugs
  std::string board, scenario, kernel, command, load, source;
  // As printed in the document, else from the command's -D or -l ("24h (the command's -D24h)"),
  // else "not published".
  std::string duration;
  std::string vendor, document;          // who published it, and in which document
  std::vector<ReferenceThread> threads;  // empty when only a summary was published
  // For summaries, in words: "max 54 us over all CPUs (CPU 1); lowest max 16 us (CPU 7)".
  std::string summary;
  double summary_max_us = -1;  // the summary's max over all CPUs, -1 when none was published
};

// The built-in copy, or `path` when given. Errors name the file.
Result<std::vector<ReferenceRun>> LoadReferences(const std::string& path = {});
Result<ReferenceRun> FindReference(const std::vector<ReferenceRun>& runs, const std::string& query);
std::string Slug(const std::string& text);
// A published summary object ({"max_us_all_cpus": 54, "max_cpu": 1, ...}) in words.
std::string SummaryText(const nlohmann::json& summary);
// How long the reference ran by its cyclictest command: "24h (the command's -D24h)",
// "1000000 cycles per thread (the command's -l1000000)", or "" when the command does not say.
std::string DurationFromCommand(const std::string& command);
// The built-in data's text.
const char* BuiltinReferenceJson();

}  // namespace rtloop::bench
