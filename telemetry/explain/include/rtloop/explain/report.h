// The outlier records as a program shows them: a JSON document (rtloop-cyclic --explain=FILE;
// schema in README.md, "The JSON document") and a short text summary grouped by each record's
// leading cause (printed after a run).
//
//   std::string json = OutliersJson(explainer->Records(), explainer->stats(), thresholds);
//   std::string text = OutliersSummary(explainer->Records(), explainer->stats(), thresholds);
//   // wake-up latency above 100 us: 7 cycles (evidence: trace 6, none 1)
//   //   5 cycles: thread spinner (tid 812, FIFO 95), up to 4.012 ms of the window
//   //   1 cycle: irq virtio0-input.0 (irq 11), up to 0.310 ms of the window
//   //   1 cycle: no evidence, up to 2.100 ms of the window (trace: ...)
//
// Threading: pure functions, any non-RT thread (they allocate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/explain/explainer.h"
#include "rtloop/explain/outlier.h"

namespace rtloop::explain {

struct Thresholds {
  std::int64_t latency_above_ns = 0;
  std::int64_t execution_above_ns = 0;  // 0: not judged
};

// The version of the JSON document's layout; raised when a field changes meaning or goes away.
inline constexpr int kOutliersJsonVersion = 1;

std::string OutliersJson(const std::vector<OutlierRecord>& records, const ExplainerStats& stats,
                         const Thresholds& thresholds);

std::string OutliersSummary(const std::vector<OutlierRecord>& records, const ExplainerStats& stats,
                            const Thresholds& thresholds);

}  // namespace rtloop::explain
