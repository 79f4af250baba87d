// LatencyData: per-thread wake-up latency results in one shape, read from whatever a run left:
// rtloop-bench's result.json, cyclictest's (or rtloop-cyclic's) --json file, cyclictest's -h text
// output in rt-tests 2.4's layout or the 2.7+ one (no "# Total:" line, empty buckets omitted).
// compare, plot and report.md all work on it.
//
//   Result<LatencyData> d = LoadLatencyData("result.json");   // kind detected from the content
//   if (!d.ok()) return Fail(d.status());                     // unreadable: names the file, why
//   Result<double> p99 = Metric(d->threads[0], "p99");       // refuses what the data cannot say
//
// Units: every value is in microseconds (cyclictest -N input, in ns, is converted). Histograms
// have 1 us buckets (counts[i] = samples with latency i us), as cyclictest -h prints them.
//
// Threading: value types and free functions; not RT-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

struct ThreadLatency {
  int index = 0;                  // thread number (T:)
  int cpu = -1;                   // pinned CPU, -1 unknown / not pinned
  int priority = -1;              // -1 unknown
  std::int64_t interval_us = -1;  // -1 unknown
  std::uint64_t cycles = 0;       // samples
  std::optional<double> min_us;
  std::optional<double> avg_us;
  std::optional<double> max_us;
  std::vector<std::uint64_t> histogram;   // 1 us buckets; empty: no histogram
  std::uint64_t histogram_overflows = 0;  // samples beyond the last bucket
  // The histogram's size is its -h: every bucket below it is in `histogram` (result.json's
  // "buckets", the 2.4 text's rows). Else (cyclictest --json, the 2.7+ text) only the buckets up
  // to the last filled one are known, and the overflow limit is not.
  bool histogram_size_known = false;
  // Percentiles measured more finely than the histogram (rtloop-cyclic's HDR histogram), keyed
  // "p50", "p90", "p99", "p99.9", "p99.99", "p99.999".
  std::map<std::string, double> percentiles_us;
  std::optional<std::uint64_t> overruns;
  std::optional<std::uint64_t> missed_releases;
};

// result.json's "outliers" counts (outliers.h) when its explanation status is "ok": what compare
// shows next to the latencies (not gated on).
struct OutlierCounts {
  std::uint64_t latency_above_us = 0;
  std::uint64_t outliers = 0, recorded = 0, unexplained = 0, dropped = 0, samples_lost = 0;
};

struct LatencyData {
  // "result.json", "cyclictest-json", "rtloop-cyclic-json", "histogram-2.4", "histogram-2.7+".
  std::string kind;
  std::vector<ThreadLatency> threads;
  // The averages are whole us, truncated: cyclictest's -h footer (`# Avg Latencies`) prints the
  // integer division of the sum by the count. A float average is compared with these only once
  // truncated the same way (compare says so).
  bool avg_truncated = false;
  std::optional<OutlierCounts> outliers;  // a result.json's, when it has them
};

// What the parsers accept, so that compare's arithmetic stays exact: every min/avg/max/percentile
// is a finite number within +-kMaxLatencyUs (no NaN, no infinity), and the samples of all threads
// together (histogram counts, overflows, cycles) are at most kMaxSamples, so merged sums never
// wrap and convert to double exactly. Anything else is DataLoss naming the value.
inline constexpr double kMaxLatencyUs = 1e12;  // 11.6 days
inline constexpr std::uint64_t kMaxSamples = std::uint64_t{1} << 53;

// Reads and detects the input through ReadTextFile (a regular file of at most 256 MiB, refused
// from its size before anything is read). A UTF-8 byte-order mark and CRLF line ends are
// accepted; UTF-16 text is refused with the conversion to make. Errors (exit 2 in compare/plot)
// name the file and say what is wrong and which inputs are understood.
Result<LatencyData> LoadLatencyData(const std::string& path);

// cyclictest -h/-H/--histfile text, 2.4 or 2.7+ (the block may follow other stdout lines). The
// footer lines read (# Total, # Min/Avg/Max Latencies, # Histogram Overflows) must hold plain
// numbers, one per thread at least.
Result<LatencyData> ParseHistogramText(const std::string& text);
// cyclictest / rtloop-cyclic --json text (a leading "# /dev/cpu_dma_latency" line and "nan" avg
// values, both of which cyclictest can write, are accepted), or result.json. A result.json's
// schema_version must be kResultSchemaVersion and its unit "us"; rtloop-cyclic's "rtloop" object
// must be schema_version 1 with the unit resolution_in_ns says.
Result<LatencyData> ParseCyclictestJson(const std::string& text);

// Samples beyond a percentile needed before it may be gated on (see SupportsPercentile).
inline constexpr double kMinTailSamples = 10;
// The percentiles every table shows.
const std::vector<std::string>& StandardPercentiles();
// "p99.99" -> 99.99; nullopt for anything else.
std::optional<double> PercentileOf(const std::string& metric);
// OK when `cycles` samples hold at least kMinTailSamples samples above the percentile; else
// InvalidArgument saying how many cycles it needs.
Status SupportsPercentile(const std::string& metric, std::uint64_t cycles);

// min, avg, max or a percentile "pNN[.N]" of one thread, in us. Percentiles come from
// percentiles_us when present, else from the histogram (the bucket of the rank, as cyclictest's
// truncated values); FailedPrecondition when the data has neither, or the percentile falls into
// the histogram's overflow. Does not apply SupportsPercentile.
Result<double> Metric(const ThreadLatency& thread, const std::string& metric);

// compare's verdict on one metric. A metric regresses when the candidate exceeds the baseline by
// at least min_delta_us and by more than max_regression_pct of the baseline's magnitude (for a
// baseline > 0: candidate > baseline * (1 + pct/100)). `percent` is the change relative to the
// baseline, nullopt when the baseline is not > 0 (a percentage of 0 or of a negative value says
// nothing) unless both are equal (0 %).
struct MetricChange {
  std::optional<double> percent;
  bool regression = false;
};
MetricChange CompareMetric(double baseline, double candidate, double max_regression_pct,
                           double min_delta_us);

// All threads as one: cycles summed, min/max over threads, avg weighted by cycles, histograms
// added (percentiles then come from the merged histogram), index -1.
ThreadLatency MergeThreads(const std::vector<ThreadLatency>& threads);

}  // namespace rtloop::bench
