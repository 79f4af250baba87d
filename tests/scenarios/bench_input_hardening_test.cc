// rtloop-bench's inputs that tests/fuzz or a review (issue 17) found breaking it, one test per
// defect (the fuzzers' inputs are in tests/fuzz/regressions/ too): each must now be read right or
// be DataLoss naming what is wrong, never an uncaught exception (exit 134), undefined behaviour,
// a multi-gigabyte allocation or read, or a verdict computed from NaN or a wrapped sum.
#include <gtest/gtest.h>
#include <unistd.h>

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
      R"({"schema": "rtloop-bench/result", "schema_version": 1, "unit": "us",
          "threads": [{"index": 0, "cycles": 1,
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
      R"({"schema": "rtloop-bench/result", "schema_version": 1, "unit": "us",
          "threads": [{"index": "zero", "cpu": 1e300,
          "priority": -1e300, "cycles": -5, "overruns": 2.5, "min": 1, "max": 9}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->threads[0].index, 0);
  EXPECT_EQ(r->threads[0].cpu, -1);
  EXPECT_EQ(r->threads[0].cycles, 0u);
  EXPECT_FALSE(r->threads[0].overruns.has_value());
  EXPECT_FALSE(
      ParseCyclictestJson(R"({"schema": "rtloop-bench/result", "schema_version": 1, "unit": "us",
          "threads": [5]})")
          .ok());
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"0": 5}})").ok());
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"x": {"cycles": 1}}})").ok());
  EXPECT_TRUE(ParseCyclictestJson(R"({"resolution_in_ns": "yes", "thread": {"0": {"cycles":
      "many", "cpu": "one", "histogram": {"3": "lots"}}}})")
                  .ok());
  EXPECT_FALSE(ParseCyclictestJson(
                   R"({"schema": "rtloop-bench/result", "schema_version": 1, "unit": "us",
          "threads": [{"histogram": {"counts":
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

// --- issue 17: what compare read wrong ---

// std::stod took "nan" and "inf" in a footer: max compared as NaN (never a regression) or inf.
TEST(LatencyInputHardening, FooterValuesThatAreNotPlainNumbersAreDataLoss) {
  const std::string head = "# Histogram\n000001 000005 000005\n# Min Latencies: 00001 00001\n";
  const Result<LatencyData> good = ParseHistogramText(head + "# Max Latencies: 00001 00002\n");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  for (const char* bad : {"nan inf", "00001 inf", "00001 -nan", "0x10 00001", "1e3 00001",
                          "00001 infinity", "00001 1."}) {
    const Result<LatencyData> d = ParseHistogramText(head + "# Max Latencies: " + bad + "\n");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(d.status().message().find("'# Max Latencies' holds"), std::string::npos)
        << d.status().message();
  }
  EXPECT_FALSE(ParseHistogramText(head + "# Avg Latencies: nan 1\n# Max Latencies: 1 1\n").ok());
  EXPECT_FALSE(
      ParseHistogramText(head + "# Max Latencies: 1 1\n# Histogram Overflows: 1 -2\n").ok());
  // One value for two threads: not silently a thread without a max.
  EXPECT_FALSE(ParseHistogramText(head + "# Max Latencies: 00001\n").ok());
  // JSON cannot spell nan or inf, but 1e999 reads as infinity.
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"0": {"cycles": 1, "max": 1e999}}})").ok());
}

// Counts near 2^64 wrapped when threads were merged: 2^63 + 2^63 samples at 5 us became 0, so the
// merged p50 was thread 1's 10 samples at 900 us: a false REGRESSION.
TEST(LatencyInputHardening, CountsWhoseSumWouldWrapAreDataLoss) {
  const Result<LatencyData> json = ParseCyclictestJson(
      R"({"thread": {"0": {"cycles": 5, "histogram": {"5": 9223372036854775808}},
                     "1": {"cycles": 5, "histogram": {"5": 9223372036854775808, "900": 10}}}})");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("more than 2^53 samples"), std::string::npos)
      << json.status().message();
  EXPECT_FALSE(ParseCyclictestJson(R"({"thread": {"0": {"cycles": 9223372036854775807},
                                                  "1": {"cycles": 9223372036854775807},
                                                  "2": {"cycles": 9223372036854775807}}})")
                   .ok());
  // In text: one bucket listed twice, 18 digits each time, over 20 threads.
  std::string text = "# Histogram\n";
  for (int row = 0; row < 20; ++row) text += "000005 999999999999999999\n";
  EXPECT_FALSE(ParseHistogramText(text + "# Min Latencies: 5\n# Max Latencies: 5\n").ok());
  // What is left is summed exactly.
  const Result<LatencyData> ok = ParseHistogramText(
      "# Histogram\n000005 004503599627370496 004503599627370496\n"
      "# Min Latencies: 5 5\n# Max Latencies: 5 5\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(MergeThreads(ok->threads).cycles, kMaxSamples);
}

// A negative baseline average printed "+inf%": the change is not a percentage of it.
TEST(LatencyInputHardening, ABaselineNotAboveZeroHasNoPercentage) {
  MetricChange c = CompareMetric(-5.0, 13.83, 10, 1);
  EXPECT_FALSE(c.percent.has_value());
  EXPECT_TRUE(c.regression);
  c = CompareMetric(-5.0, -5.2, 10, 0);  // better
  EXPECT_FALSE(c.percent.has_value());
  EXPECT_FALSE(c.regression);
  c = CompareMetric(-10.0, -8.5, 10, 1);  // worse by 1.5 us, 15 % of |baseline|
  EXPECT_TRUE(c.regression);
  c = CompareMetric(0.0, 0.0, 10, 1);
  EXPECT_EQ(c.percent, 0.0);
  EXPECT_FALSE(c.regression);
  c = CompareMetric(0.0, 3.0, 10, 1);
  EXPECT_FALSE(c.percent.has_value());
  EXPECT_TRUE(c.regression);
  // A positive baseline: the rule as before (10 -> 11 us is 10 %: not more than 10 %).
  c = CompareMetric(10.0, 11.0, 10, 1);
  EXPECT_DOUBLE_EQ(*c.percent, 10.0);
  EXPECT_FALSE(c.regression);
  EXPECT_TRUE(CompareMetric(10.0, 11.5, 10, 1).regression);
  EXPECT_FALSE(CompareMetric(10.0, 11.5, 10, 2).regression);
}

// schema_version 2 and unit "ns" were read as version 1 in us.
TEST(LatencyInputHardening, AnotherSchemaVersionOrUnitIsRefused) {
  const std::string threads = R"("threads": [{"index": 0, "cycles": 1, "min": 1, "max": 2}]})";
  const auto result = [&](const std::string& fields) {
    return ParseCyclictestJson(R"({"schema": "rtloop-bench/result", )" + fields + threads);
  };
  ASSERT_TRUE(result(R"("schema_version": 1, "unit": "us", )").ok());
  for (const char* bad : {R"("schema_version": 2, "unit": "us", )",
                          R"("schema_version": "1", "unit": "us", )", R"("unit": "us", )",
                          R"("schema_version": 1, "unit": "ns", )", R"("schema_version": 1, )"}) {
    const Result<LatencyData> d = result(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(d.status().message().find("result.json's"), std::string::npos)
        << d.status().message();
  }
  const std::string cyclic = R"({"resolution_in_ns": 0, "thread": {"0": {"cycles": 1}}, )";
  EXPECT_TRUE(
      ParseCyclictestJson(cyclic + R"("rtloop": {"schema_version": 1, "unit": "us"}})").ok());
  EXPECT_FALSE(
      ParseCyclictestJson(cyclic + R"("rtloop": {"schema_version": 2, "unit": "us"}})").ok());
  const Result<LatencyData> unit =
      ParseCyclictestJson(cyclic + R"("rtloop": {"schema_version": 1, "unit": "ns"}})");
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.status().message().find("resolution_in_ns"), std::string::npos);
}

// A file saved on Windows: "# Histogram\r" and a BOM before it read as "no '# Histogram' line".
TEST(LatencyInputHardening, AByteOrderMarkAndCrlfLineEndsReadAsTheSameData) {
  testing::TempDir dir("bench-input-hardening");
  const std::string text =
      "# Histogram\n000001 000010 000020\n000002 000005 000001\n"
      "# Total: 000000015 000000021\n# Min Latencies: 00001 00001\n"
      "# Avg Latencies: 00001 00001\n# Max Latencies: 00002 00002\n";
  std::string crlf;
  for (const char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::string plain_path = dir.path() + "/plain.txt";
  const std::string windows_path = dir.path() + "/windows.txt";
  std::ofstream(plain_path, std::ios::binary) << text;
  std::ofstream(windows_path, std::ios::binary) << "\xef\xbb\xbf" << crlf;
  const Result<LatencyData> plain = LoadLatencyData(plain_path);
  const Result<LatencyData> windows = LoadLatencyData(windows_path);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_TRUE(windows.ok()) << windows.status().ToString();
  EXPECT_EQ(windows->kind, "histogram-2.4");
  ASSERT_EQ(windows->threads.size(), 2u);
  EXPECT_EQ(windows->threads[1].histogram, plain->threads[1].histogram);
  EXPECT_EQ(*windows->threads[1].max_us, 2.0);
  // A BOM before JSON.
  const std::string json_path = dir.path() + "/bom.json";
  std::ofstream(json_path, std::ios::binary) << "\xef\xbb\xbf"
                                             << R"({"thread": {"0": {"cycles": 1, "max": 3}}})";
  ASSERT_TRUE(LoadLatencyData(json_path).ok());
  // UTF-16 is not guessed at: the message says how to convert it.
  const std::string utf16_path = dir.path() + "/utf16.txt";
  std::ofstream(utf16_path, std::ios::binary) << std::string("\xff\xfe#\0 \0H\0", 8);
  const Result<LatencyData> utf16 = LoadLatencyData(utf16_path);
  ASSERT_FALSE(utf16.ok());
  EXPECT_NE(utf16.status().message().find("iconv"), std::string::npos) << utf16.status().message();
}

// Bytes this process has read so far (/proc/self/io rchar), or -1.
long long BytesRead() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long long value = -1;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return -1;
}

// A sparse 3 GiB file was read up to the 256 MiB bound (and held twice in memory) before the
// refusal; its size alone says it is too big.
TEST(LatencyInputHardening, AHugeSparseFileIsRefusedFromItsSizeBeforeAnyRead) {
  testing::TempDir dir("bench-input-hardening");
  const std::string path = dir.path() + "/sparse.txt";
  { std::ofstream(path) << "# Histogram\n"; }
  ASSERT_EQ(::truncate(path.c_str(), 3LL << 30), 0);
  const long long before = BytesRead();
  if (before < 0)
    GTEST_SKIP() << "/proc/self/io is not readable (needs a kernel with task I/O accounting)";
  const Result<LatencyData> d = LoadLatencyData(path);
  const long long read = BytesRead() - before;
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(d.status().message().find("3221225472 bytes"), std::string::npos)
      << d.status().message();
  EXPECT_LT(read, 1 << 20) << "bytes read before the refusal";
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
