// The live page's data feed, GET /api/v1/tasks: every task's monitor row, its latency histogram
// in log-spaced bins and its per-second max/p99, and the outlier panel's data (the last
// kPageOutliers records and the per-task counts; README.md beside this file), as JSON.
// Internal to rtloop_telemetry.
//
// Not RT-safe: allocates. Thread-safe: reads only thread-safe accessors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "metrics.h"
#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop::telemetry::internal {

// Bins per power of two in the page's histograms.
inline constexpr int kPageBinsPerOctave = 8;

// Upper bounds (ns) of the page's log-spaced bins: kPageBinsPerOctave per power of two from
// 256 ns to the top of `layout`'s range (2^range_bits ns, where the overflow bin starts); the first
// bin also holds everything below 256 ns (early wake-ups included).
std::vector<std::int64_t> PageBinBounds(const HistogramLayout& layout);

// Outlier records the page gets (the newest), and causes per record (the first, by rank).
inline constexpr std::size_t kPageOutliers = 10;
inline constexpr std::size_t kPageCausesPerOutlier = 8;

// `history_seconds`: per-second entries to include per task (0: none), the newest ones.
std::string RenderTasksJson(const MetricsInput& in, std::size_t history_seconds);

}  // namespace rtloop::telemetry::internal
