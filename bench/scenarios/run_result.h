// result.json (schema "rtloop-bench/result", version 1; documented in README.md and
// result.schema.json): built from what a run collected.
//
//   nlohmann::json r = ResultSkeleton();            // schema, tool, created
//   r["system"] = SystemJson(loadavg_start, loadavg_end);
//   r["threads"] = ThreadsJson(data, &windows);     // from rtloop-cyclic's JSON + max over time
//
// Threading: pure functions (SystemJson reads /proc and /sys); not RT-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "latency_data.h"
#include "plots.h"
#include "reference.h"

namespace rtloop::bench {

inline constexpr int kResultSchemaVersion = 1;

nlohmann::json ResultSkeleton();
// Host, kernel, preempt model, CPUs (online, isolated), CPU model, load averages.
nlohmann::json SystemJson(double loadavg_start, double loadavg_end);
// Per thread: index, cpu, priority, interval_us, cycles, min, act (null), avg, max,
// percentiles, overruns, missed_releases, histogram {bucket_us, buckets, overflows, counts},
// max_over_time {window_s, windows: [[start_s, max, cycles]...]}.
nlohmann::json ThreadsJson(const LatencyData& data, const MaxOverTime* windows);
nlohmann::json ReferenceJson(const ReferenceRun& ref);
// The plots' title: "stress (load: stress-ng -c 2 ...) on host, kernel".
std::string RunTitle(const nlohmann::json& result);
// The reference's published maxima to mark on the histogram: per thread, else the summary's max
// over all CPUs; none without a reference.
std::vector<PublishedMark> PublishedMarks(const nlohmann::json& result);
// /proc/loadavg's first field, -1 when unreadable.
double LoadAverage1m();

}  // namespace rtloop::bench
