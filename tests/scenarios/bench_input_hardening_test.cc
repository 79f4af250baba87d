// rtloop-bench's inputs that tests/fuzz found breaking it, one test per defect (the fuzzers'
// inputs are in tests/fuzz/regressions/ too): each must now be DataLoss naming what is wrong,
// never an uncaught exception (exit 134), undefined behaviour or a multi-gigabyte allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "bench_test_util.h"
#include "latency_data.h"
#include "plots.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/v1/record.pb.h"

namespace rtloop::bench {
namespace {

// bench_inputs_fuzzer found it: a result.json histogram count under the key "99999999999" made
// rtloop-bench resize the histogram to 10^11 buckets (std::length_error, abort).
TEST(LatencyInputHardening, ABucketBeyondAnyHistogramIsDataLossNotAnAllocation) {
  const Result<LatencyData> json = ParseCyclictestJson(
      R"({"schema": "rtloop-bench/result", "threads": [{"index": 0, "cycles": 1,
          "histogram": {"counts": {"99999999999": 1}}}]})");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("not a histogram bucket"), std::string::npos)
      << json.status().message();
  EXPECT_FALSE(
      ParseCyclictestJson(R"({"thread": {"0": {"cycles": 1, "histogram": {"12345678901234": 1}}}})")
          .ok());
  const Result<LatencyData> text = ParseHistogramText(
      "# Histogram\n99999999999 000001\n# Min Latencies: 00001\n# Max Latencies: 00001\n");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("not a histogram bucket"), std::string::npos);
  // Many threads of a large histogram: refused by the total, before anything is allocated.
  std::string wide = "# Histogram\n999999";
  std::string mins = "# Min Latencies:";
  for (int t = 0; t < 100; ++t) {
    wide += " 000000";
    mins += " 00001";
  }
  const Result<LatencyData> big =
      ParseHistogramText(wide + "\n" + mins + "\n" + "# Max Latencies: 00001\n");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than the histograms"), std::string::npos);
}

// nlohmann::json's value<T>() and get<T>() throw on a wrong type and cast out-of-range floats
// with undefined behaviour; std::stoull throws on what is not a number.
TEST(LatencyInputHardening, WrongTypesAndHugeNumbersAreDataLossOrIgnoredNeverAnException) {
  const Result<LatencyData> r = ParseCyclictestJson(
      R"({"schema": "rtloop-bench/result", "threads": [{"index": "zero", "cpu": 1e300,
          "priority": -1e300, "cycles": -5, "overruns": 2.5, "min": 1, "max": 9}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->threads[0].index, 0);
  EXPECT_EQ(r->threads[0].cpu, -1);
  EXPECT_EQ(r->threads[0].cycles, 0u);
  EXPECT_FALSE(r->threads[0].overruns.has_value());
  EXPECT_FALSE(ParseCyclictestJson(R"({"schema": "rtloop-bench/result", "threads": [5]})").ok());
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"0": 5}})").ok());
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"x": {"cycles": 1}}})").ok());
  EXPECT_TRUE(ParseCyclictestJson(R"({"resolution_in_ns": "yes", "thread": {"0": {"cycles":
      "many", "cpu": "one", "histogram": {"3": "lots"}}}})")
                  .ok());
  EXPECT_FALSE(ParseCyclictestJson(
                   R"({"schema": "rtloop-bench/result", "threads": [{"histogram": {"counts":
                   {"1": "one"}}}]})")
                   .ok());
  // A count with more digits than 64 bits hold: not a row, not an exception.
  EXPECT_FALSE(ParseHistogramText("# Histogram\n000001 123456789012345678901\n"
                                  "# Min Latencies: 00001\n# Max Latencies: 00001\n")
                   .ok());
}

// cyclictest writes "avg": -nan; the replacement was a std::regex, which recurses per character.
TEST(LatencyInputHardening, NanAfterALongRunOfBlanksIsReadWithoutRecursion) {
  const std::string blanks(200'000, ' ');
  const Result<LatencyData> d = ParseCyclictestJson(
      R"({"thread": {"0": {"cycles": 0, "min": 1, "max": 0, "avg":)" + blanks + "-nan}}}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->threads[0].avg_us.has_value());
  // "nan" inside a string or a word stays as it is.
  const Result<LatencyData> s =
      ParseCyclictestJson(R"({"note": "nan", "thread": {"0": {"cycles": 2, "avg": 1.5}}})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(*s->threads[0].avg_us, 1.5);
}

// bench_inputs_fuzzer found it: "# lost_windows: c" threw std::invalid_argument out of stoull.
TEST(LatencyInputHardening, MaxOverTimeHeadersThatAreNotNumbersAreDataLoss) {
  const std::string head = "# rtloop-cyclic max over time\n";
  EXPECT_FALSE(ParseMaxOverTime(head + "# lost_windows: c\n").ok());
  EXPECT_FALSE(ParseMaxOverTime(head + "# lost_windows: -1\n").ok());
  EXPECT_FALSE(ParseMaxOverTime(head + "# window_us: x\n").ok());
  EXPECT_FALSE(ParseMaxOverTime(head + "# window_us: 0\n").ok());
  // A start time that cannot be sorted (std::sort with nan is undefined).
  EXPECT_FALSE(ParseMaxOverTime(head + "0 0 nan 5 1\n").ok());
  EXPECT_TRUE(ParseMaxOverTime(head + "# window_us: 1000 \n# lost_windows: 3\n0 0 0.0 5 1\n").ok());
}

// A sample log written record by record, framed as SampleLogWriter frames them.
std::string SampleLog(const std::vector<telemetry::v1::Record>& records) {
  std::string out;
  for (const telemetry::v1::Record& r : records) {
    const std::string body = r.SerializeAsString();
    for (std::uint64_t v = body.size() + 5;; v >>= 7) {
      out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
      if (v < 0x80) break;
    }
    out += body;
    out.push_back(static_cast<char>((15u << 3) | 5u));
    const std::uint32_t crc = telemetry::Crc32c(body.data(), body.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  }
  return out;
}

// The plot of a damaged sample log (found with sample_log_fuzzer's framing of hand-made records):
// a batch of task 4000000000 made the max-over-time windows allocate 4e9 vectors, and release
// times spanning the int64 range overflowed release - first_release.
TEST(LatencyInputHardening, APlotOfADamagedSampleLogIsAnErrorOrAPlotNeverACrash) {
  testing::TempDir dir("bench-input-hardening");
  telemetry::v1::Record header;
  header.mutable_header()->set_magic(telemetry::kSampleLogMagic);
  header.mutable_header()->set_format_version(1);
  telemetry::v1::Record huge;
  huge.mutable_batch()->set_task_id(4'000'000'000u);
  huge.mutable_batch()->add_release_ns(1000);
  huge.mutable_batch()->add_latency_ns(5000);
  const std::string bad = dir.path() + "/huge.rtlog";
  std::ofstream(bad, std::ios::binary) << SampleLog({header, huge});
  LatencyData hist;
  MaxOverTime windows;
  const Result<PlotJob> refused = SampleLogPlot(bad, "t", &hist, &windows);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("task ids are 0..65535"), std::string::npos)
      << refused.status().message();

  telemetry::v1::Record span;
  span.mutable_batch()->set_task_id(1);
  span.mutable_batch()->add_release_ns(INT64_MIN + 1);
  span.mutable_batch()->add_release_ns(INT64_MAX);
  span.mutable_batch()->add_latency_ns(5000);
  span.mutable_batch()->add_latency_ns(7000);
  const std::string wide = dir.path() + "/span.rtlog";
  std::ofstream(wide, std::ios::binary) << SampleLog({header, span});
  const Result<PlotJob> plotted = SampleLogPlot(wide, "t", &hist, &windows);
  ASSERT_TRUE(plotted.ok()) << plotted.status().ToString();
  ASSERT_EQ(hist.threads.size(), 1u);
  EXPECT_EQ(hist.threads[0].cycles, 2u);
}

}  // namespace
}  // namespace rtloop::bench
