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
  std::string board, scenario, kernel, command, load, duration, source;
  std::vector<ReferenceThread> threads;  // empty when only a summary was published
  std::string summary;                   // "max 7 us on every CPU", or a note; for summaries
};

// The built-in copy, or `path` when given. Errors name the file.
Result<std::vector<ReferenceRun>> LoadReferences(const std::string& path = {});
Result<ReferenceRun> FindReference(const std::vector<ReferenceRun>& runs, const std::string& query);
std::string Slug(const std::string& text);
// The built-in data's text.
const char* BuiltinReferenceJson();

}  // namespace rtloop::bench
