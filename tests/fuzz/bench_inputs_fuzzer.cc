// Fuzzes what rtloop-bench compare (and plot, report) reads (bench/scenarios/latency_data.h):
// result.json, cyclictest's and rtloop-cyclic's --json, and cyclictest -h text in the 2.4 and the
// 2.7+ layouts. The first byte picks the entry point (the whole-file loader with its detection, or
// one parser, or the --max-over-time text plot reads), the rest is the file; then compare's work
// runs on what was read: every metric of every thread and of all threads merged (finite, the
// merge's sums exact), the percentile sample-count rule and the verdict; and the same bytes as a
// JSON string through utf8.h's escaper (valid UTF-8, reads back with U+FFFD for bad parts). Any
// input must give data or a DataLoss naming what is wrong: never a crash, an exception, undefined
// behaviour, a hang or an allocation the input size does not justify.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_util.h"
#include "latency_data.h"
#include "plots.h"
#include "rtloop/telemetry/utf8.h"

namespace {

void Compare(const rtloop::bench::LatencyData& d) {
  static const char* const kMetrics[] = {"min", "avg", "max", "p50", "p99", "p99.9", "p99.999"};
  std::vector<rtloop::bench::ThreadLatency> rows = d.threads;
  rows.push_back(rtloop::bench::MergeThreads(d.threads));
  // The merge adds without wrapping: the parsers bound the samples of all threads together.
  std::uint64_t cycles = 0;
  for (const rtloop::bench::ThreadLatency& t : d.threads) cycles += t.cycles;
  RTLOOP_FUZZ_CHECK(rows.back().cycles == cycles && cycles <= rtloop::bench::kMaxSamples);
  for (const rtloop::bench::ThreadLatency& t : rows) {
    for (const char* m : kMetrics) {
      (void)rtloop::bench::SupportsPercentile(m, t.cycles);
      const rtloop::Result<double> v = rtloop::bench::Metric(t, m);
      if (!v.ok()) {
        RTLOOP_FUZZ_CHECK(v.status().code() == rtloop::StatusCode::kFailedPrecondition);
        continue;
      }
      // compare's arithmetic never sees NaN or infinity, so its verdict is one of the two.
      RTLOOP_FUZZ_CHECK(std::isfinite(*v));
      const rtloop::bench::MetricChange c = rtloop::bench::CompareMetric(*v, *v * 1.5, 10, 1);
      RTLOOP_FUZZ_CHECK(!c.percent || std::isfinite(*c.percent));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return -1;
  static rtloop::fuzz::MemoryFile file;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The one JSON string escaper (rtloop/telemetry/utf8.h), on the same bytes: valid UTF-8 and
  // JSON, which reads back as the bytes with U+FFFD for each ill-formed part.
  std::string quoted;
  rtloop::telemetry::AppendJsonString(quoted, text);
  RTLOOP_FUZZ_CHECK(rtloop::telemetry::IsValidUtf8(quoted));
  const nlohmann::json back = nlohmann::json::parse(quoted, nullptr, false);
  RTLOOP_FUZZ_CHECK(back.is_string() &&
                    back.get<std::string>() == rtloop::telemetry::ToValidUtf8(text));
  rtloop::Result<rtloop::bench::LatencyData> d = rtloop::DataLossError("unset");
  if (data[0] % 4 == 3) {
    const rtloop::Result<rtloop::bench::MaxOverTime> m = rtloop::bench::ParseMaxOverTime(text);
    RTLOOP_FUZZ_CHECK(m.ok() || !m.status().message().empty());
    return 0;
  }
  switch (data[0] % 4) {
    case 0:
      d = rtloop::bench::LoadLatencyData(
          file.Write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
      break;
    case 1:
      d = rtloop::bench::ParseHistogramText(text);
      break;
    default:
      d = rtloop::bench::ParseCyclictestJson(text);
      break;
  }
  if (!d.ok()) {
    RTLOOP_FUZZ_CHECK(!d.status().message().empty());
    return 0;
  }
  Compare(*d);
  return 0;
}
