// Golden tests: the numbers printed in real cyclictest 2.4 output (tests/cyclic/golden/, copied
// from the reference samples; the first line of each file is the command) are fed into the
// formatters, and the result must match the sample byte for byte.
#include "cyclic_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "golden_lines.h"
#include "rtloop/telemetry/utf8.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;

namespace rtloop::cyclic {
namespace {

const char kCursorUp4[] = "\033[4A";

std::string ReadGolden(const std::string& name) {
  std::ifstream in(SourcePath("tests/cyclic/golden") + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The sample without its first line (the command that produced it).
std::string Body(const std::string& text) { return text.substr(text.find('\n') + 1); }

using ::rtloop::testing::SplitLines;

std::string Join(const std::vector<std::string>& lines, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// An avg accumulator whose truncated mean is `avg` (cyclictest prints only the truncation).
double AvgSumFor(long long avg, unsigned long long cycles) {
  return (static_cast<double>(avg) + 0.5) * static_cast<double>(cycles);
}

bool IsThreadLine(const std::string& line) { return line.rfind("T:", 0) == 0; }

ThreadReport ParseThreadLine(const std::string& line) {
  ThreadReport t;
  long long interval = 0, min = 0, act = 0, avg = 0, max = 0;
  unsigned long long cycles = 0;
  const int n =
      std::sscanf(line.c_str(), "T:%d (%d) P:%d I:%lld C:%llu Min:%lld Act:%lld Avg:%lld Max:%lld",
                  &t.index, &t.tid, &t.priority, &interval, &cycles, &min, &act, &avg, &max);
  EXPECT_EQ(n, 9) << "not a T: line: " << line;
  t.interval_us = interval;
  t.cycles = cycles;
  t.min = min;
  t.act = act;
  t.avg_sum = AvgSumFor(avg, cycles);
  t.max = max;
  return t;
}

std::vector<std::uint64_t> Numbers(const std::string& s) {
  std::vector<std::uint64_t> out;
  std::istringstream in(s);
  std::string word;
  while (in >> word) {
    if (word == "#") break;  // " # 00015 others"
    out.push_back(std::stoull(word));
  }
  return out;
}

// Rebuilds the per-thread data from a printed histogram block (lines[first] == "# Histogram").
std::vector<ThreadReport> ParseHistogramBlock(const std::vector<std::string>& lines,
                                              std::size_t first, std::uint32_t buckets) {
  std::size_t i = first + 1;
  std::vector<std::vector<std::uint64_t>> rows;  // {index, counts...}
  while (i < lines.size() && !lines[i].empty() && lines[i][0] != '#')
    rows.push_back(Numbers(lines[i++]));
  std::vector<ThreadReport> threads;
  auto footer = [&](const std::string& prefix) {
    for (std::size_t j = i; j < lines.size(); ++j) {
      if (lines[j].rfind(prefix, 0) == 0) return Numbers(lines[j].substr(prefix.size()));
    }
    ADD_FAILURE() << "no footer " << prefix;
    return std::vector<std::uint64_t>{};
  };
  const auto mins = footer("# Min Latencies:");
  const auto avgs = footer("# Avg Latencies:");
  const auto maxs = footer("# Max Latencies:");
  const auto oflows = footer("# Histogram Overflows:");
  for (std::size_t t = 0; t < mins.size(); ++t) {
    ThreadReport r;
    r.index = static_cast<int>(t);
    r.histogram.assign(buckets, 0);
    std::uint64_t in_range = 0;
    for (const auto& row : rows) {
      r.histogram[row[0]] = row[1 + t];
      in_range += row[1 + t];
    }
    r.min = static_cast<std::int64_t>(mins[t]);
    r.max = static_cast<std::int64_t>(maxs[t]);
    r.histogram_overflows = oflows[t];
    r.cycles = in_range + oflows[t];
    r.avg_sum = AvgSumFor(static_cast<long long>(avgs[t]), r.cycles);
    r.overflow_cycles = footer("# Thread " + std::to_string(t) + ":");
    threads.push_back(r);
  }
  return threads;
}

std::size_t FindLine(const std::vector<std::string>& lines, const std::string& line) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == line) return i;
  }
  ADD_FAILURE() << "no line " << line;
  return lines.size();
}

// Rebuilds a live screen: frames separated by the cursor-up escape, each "policy: ..." + empty
// line + T: lines. Returns our rendering of the same frames and leaves what follows the last
// frame's T: lines in `rest`.
std::string RenderLiveFrames(const std::string& screen, const std::string& cursor_up,
                             const ReportFormat& format, bool up_after_last, std::string* rest) {
  std::string out;
  std::size_t pos = 0;
  bool first = true;
  while (pos < screen.size()) {
    std::size_t end = screen.find(cursor_up, pos);
    const bool last = end == std::string::npos;
    const std::string frame = screen.substr(pos, last ? std::string::npos : end - pos);
    pos = last ? screen.size() : end + cursor_up.size();
    if (frame.empty()) break;
    const std::vector<std::string> lines = SplitLines(frame);
    const std::string& header = lines.at(0);
    const std::string load = ": loadavg: ";
    const std::size_t colon = header.find(load);
    const std::string policy =
        header.substr(std::string("policy: ").size(), colon - std::string("policy: ").size());
    const std::string loadavg =
        header.substr(colon + load.size(), header.size() - colon - load.size() - 10);
    std::vector<ThreadReport> threads;
    std::size_t i = 2;
    for (; i < lines.size() && IsThreadLine(lines[i]); ++i)
      threads.push_back(ParseThreadLine(lines[i]));
    if (!first) out += cursor_up;
    first = false;
    out += FormatLiveHeader(policy, "", loadavg) + FormatThreadLines(threads, format);
    if (i < lines.size()) *rest = Join(lines, i, lines.size());  // only after the last frame
    if (last) break;
  }
  if (up_after_last) out += cursor_up;
  return out;
}

TEST(CyclicReportGolden, QuietSummaryMatchesSample10) {
  const std::string body = Body(ReadGolden("10-quiet-summary.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  std::vector<ThreadReport> threads;
  for (const std::string& l : lines) {
    if (IsThreadLine(l)) threads.push_back(ParseThreadLine(l));
  }
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(FormatDmaLatencyLine(0) + FormatThreadLines(threads, ReportFormat{}), body);
}

TEST(CyclicReportGolden, NsecsSummaryMatchesSample13) {
  const std::string body = Body(ReadGolden("13-nsecs-N.txt"));
  std::vector<ThreadReport> threads;
  for (const std::string& l : SplitLines(body)) {
    if (IsThreadLine(l)) threads.push_back(ParseThreadLine(l));
  }
  ReportFormat fmt;
  fmt.nsecs = true;
  EXPECT_EQ(FormatDmaLatencyLine(0) + FormatThreadLines(threads, fmt), body);
}

TEST(CyclicReportGolden, NsecsLiveScreenMatchesSample14) {
  const std::string body = Body(ReadGolden("14-nsecs-N-live.txt"));
  const std::string dma = FormatDmaLatencyLine(0);
  ASSERT_EQ(body.substr(0, dma.size()), dma);
  ReportFormat fmt;
  fmt.nsecs = true;
  std::string rest;
  const std::string screen = body.substr(dma.size());
  EXPECT_EQ(RenderLiveFrames(screen, kCursorUp4, fmt, false, &rest), screen);
  EXPECT_EQ(FormatCursorUp(2), kCursorUp4);
}

TEST(CyclicReportGolden, HistofallBlockMatchesSample15) {
  const std::string body = Body(ReadGolden("15-histofall-H100.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const std::size_t first = FindLine(lines, "# Histogram");
  const std::vector<ThreadReport> threads = ParseHistogramBlock(lines, first, 100);
  ASSERT_EQ(threads.size(), 2u);
  ReportFormat fmt;
  fmt.histogram_buckets = 100;
  fmt.histofall = true;
  EXPECT_EQ(FormatDmaLatencyLine(0) + FormatHistogram(threads, fmt), body);
}

TEST(CyclicReportGolden, LiveScreenThenHistogramMatchesSample16) {
  const std::string body = Body(ReadGolden("16-histogram-h100-not-quiet.txt"));
  const std::string dma = FormatDmaLatencyLine(0);
  const std::string screen = body.substr(dma.size());
  std::string rest;
  const std::string live = RenderLiveFrames(screen, kCursorUp4, ReportFormat{}, false, &rest);
  const std::vector<std::string> rest_lines = SplitLines(rest);
  ASSERT_FALSE(rest_lines.empty());
  ASSERT_EQ(rest_lines[0], "# Histogram");
  ReportFormat fmt;
  fmt.histogram_buckets = 100;
  const std::string hist = FormatHistogram(ParseHistogramBlock(rest_lines, 0, 100), fmt);
  EXPECT_EQ(dma + live + hist, body);
}

TEST(CyclicReportGolden, HistfileBlockListsAtMostBucketsOverflowCyclesSample17) {
  const std::string body = Body(ReadGolden("17-histfile.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const std::size_t first = FindLine(lines, "# Histogram");
  std::vector<ThreadReport> threads = ParseHistogramBlock(lines, first, 60);
  ASSERT_EQ(threads.size(), 2u);
  // Thread 1 had 75 overflows, only the first 60 cycle numbers are listed.
  EXPECT_EQ(threads[1].histogram_overflows, 75u);
  EXPECT_EQ(threads[1].overflow_cycles.size(), 60u);
  ReportFormat fmt;
  fmt.histogram_buckets = 60;
  EXPECT_EQ(FormatHistogram(threads, fmt), Join(lines, first, lines.size()));
}

// rt-tests 2.7+ layout (--histogram-style=sparse). No 2.7+ binary output is at hand, so the
// golden files in golden/v2.10/ are the same runs as the 2.4 samples, written out by the rules of
// rt-tests v2.10's print_hist() (src/cyclictest/cyclictest.c) and hset_print_bucket() /
// hist_print_oflows() (src/lib/histogram.c): rows whose sum is 0 are skipped, no "# Total:", the
// -H sum column for any thread count, "# Thread N: " with a trailing space, " # N others" once
// the overflow list is full. Our formatter must produce those bytes from the 2.4 sample's data.
void ExpectSparseGolden(const std::string& sample24, const std::string& golden210,
                        std::uint32_t buckets, bool histofall, std::size_t threads) {
  const std::vector<std::string> lines = SplitLines(Body(ReadGolden(sample24)));
  std::vector<ThreadReport> reports =
      ParseHistogramBlock(lines, FindLine(lines, "# Histogram"), buckets);
  ASSERT_GE(reports.size(), threads);
  reports.resize(threads);
  ReportFormat fmt;
  fmt.histogram_buckets = buckets;
  fmt.histofall = histofall;
  fmt.histogram_style = HistogramStyle::kSparse;
  EXPECT_EQ(FormatHistogram(reports, fmt), Body(ReadGolden("v2.10/" + golden210)));
}

TEST(CyclicReportGolden, SparseHistofallMatchesThe2_10LayoutOfSample15) {
  ExpectSparseGolden("15-histofall-H100.txt", "15-histofall-H100.txt", 100, true, 2);
}

TEST(CyclicReportGolden, SparseHistofallOfOneThreadKeepsTheSumColumnLike2_10) {
  ExpectSparseGolden("15-histofall-H100.txt", "15-histofall-H100-one-thread.txt", 100, true, 1);
}

TEST(CyclicReportGolden, SparseFullOverflowListMatchesThe2_10LayoutOfSample17) {
  ExpectSparseGolden("17-histfile.txt", "17-histfile.txt", 60, false, 2);
}

struct JsonSample {
  JsonRunInfo run;
  std::vector<ThreadReport> threads;
};

std::string Capture(const std::string& text, const std::string& pattern) {
  std::smatch m;
  const std::regex re(pattern);
  EXPECT_TRUE(std::regex_search(text, m, re)) << pattern;
  return m.size() > 1 ? m[1].str() : std::string();
}

JsonSample ParseJson(const std::string& json) {
  JsonSample s;
  s.run.cmdline = Capture(json, "\"cmdline:\": \"([^\"]*)\"");
  s.run.start_time = Capture(json, "\"start_time\": \"([^\"]*)\"");
  s.run.end_time = Capture(json, "\"end_time\": \"([^\"]*)\"");
  s.run.return_code = std::stoi(Capture(json, "\"return_code\": (-?[0-9]+)"));
  s.run.sysinfo.sysname = Capture(json, "\"sysname\": \"([^\"]*)\"");
  s.run.sysinfo.nodename = Capture(json, "\"nodename\": \"([^\"]*)\"");
  s.run.sysinfo.release = Capture(json, "\"release\": \"([^\"]*)\"");
  s.run.sysinfo.version = Capture(json, "\"version\": \"([^\"]*)\"");
  s.run.sysinfo.machine = Capture(json, "\"machine\": \"([^\"]*)\"");
  s.run.sysinfo.realtime = Capture(json, "\"realtime\": ([01])") == "1";
  const int n = std::stoi(Capture(json, "\"num_threads\": ([0-9]+)"));
  for (int i = 0; i < n; ++i) {
    const std::size_t start = json.find("    \"" + std::to_string(i) + "\": {");
    const std::size_t end = json.find("\n    }", start);
    const std::string block = json.substr(start, end - start);
    ThreadReport t;
    t.index = i;
    const std::regex bucket("\n        \"([0-9]+)\": ([0-9]+)");
    std::vector<std::pair<std::size_t, unsigned long long>> entries;
    for (auto it = std::sregex_iterator(block.begin(), block.end(), bucket);
         it != std::sregex_iterator(); ++it) {
      entries.emplace_back(std::stoul((*it)[1].str()), std::stoull((*it)[2].str()));
    }
    t.cycles = std::stoull(Capture(block, "\"cycles\": ([0-9]+)"));
    t.min = std::stoll(Capture(block, "\"min\": (-?[0-9]+)"));
    t.max = std::stoll(Capture(block, "\"max\": (-?[0-9]+)"));
    t.avg_sum = std::stod(Capture(block, "\"avg\": ([0-9.]+)")) * static_cast<double>(t.cycles);
    t.cpu = std::stoi(Capture(block, "\"cpu\": (-?[0-9]+)"));
    t.node = std::stoi(Capture(block, "\"node\": (-?[0-9]+)"));
    for (const auto& [b, c] : entries) {
      if (t.histogram.size() <= b) t.histogram.resize(b + 1, 0);
      t.histogram[b] = c;
    }
    s.threads.push_back(t);
  }
  return s;
}

TEST(CyclicReportGolden, JsonWithHistogramMatchesSample18) {
  const std::string body = Body(ReadGolden("18-json-with-h.txt"));
  const std::string marker = "=== contents of out/ct.json ===\n";
  const std::size_t at = body.find(marker);
  ASSERT_NE(at, std::string::npos);
  const std::string json = body.substr(at + marker.size());
  JsonSample s = ParseJson(json);
  ASSERT_EQ(s.threads.size(), 2u);
  for (ThreadReport& t : s.threads) t.histogram.resize(60, 0);
  ReportFormat fmt;
  fmt.histogram_buckets = 60;
  JsonExtras plain;
  plain.enabled = false;
  EXPECT_EQ(FormatJson(s.run, s.threads, fmt, plain), json);

  // The histogram block printed in the same run.
  const std::vector<std::string> lines = SplitLines(body.substr(0, at));
  const std::size_t first = FindLine(lines, "# Histogram");
  EXPECT_EQ(FormatHistogram(ParseHistogramBlock(lines, first, 60), fmt),
            Join(lines, first, lines.size()));
}

TEST(CyclicReportGolden, JsonWithoutHistogramToStdoutMatchesSample19) {
  const std::string body = Body(ReadGolden("19-json-stdout-no-h.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const std::size_t open = FindLine(lines, "{");
  const std::size_t close = FindLine(lines, "}");
  const std::string json = Join(lines, open, close + 1);
  JsonSample s = ParseJson(json);
  std::vector<ThreadReport> final_lines;
  for (std::size_t i = close + 1; i < lines.size(); ++i)
    final_lines.push_back(ParseThreadLine(lines[i]));
  JsonExtras plain;
  plain.enabled = false;
  EXPECT_EQ(FormatDmaLatencyLine(0) + FormatJson(s.run, s.threads, ReportFormat{}, plain) +
                FormatThreadLines(final_lines, ReportFormat{}),
            body);
}

// awk 'NR<=2 || /^#/ || $2+0>0', as in the sample's command.
std::string AwkNonZeroRows(const std::string& text) {
  std::string out;
  std::size_t nr = 0;
  for (const std::string& line : SplitLines(text)) {
    ++nr;
    std::istringstream in(line);
    std::string f1, f2;
    in >> f1 >> f2;
    const bool nonzero = !f2.empty() && std::atof(f2.c_str()) > 0;
    if (nr <= 2 || (!line.empty() && line[0] == '#') || nonzero) out += line + "\n";
  }
  return out;
}

TEST(CyclicReportGolden, NsecsHistogramMatchesSample20) {
  const std::string body = Body(ReadGolden("20-N-h-histogram-in-ns.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const std::vector<ThreadReport> threads = ParseHistogramBlock(lines, 1, 30000);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].cycles, 2000u);  // -l2000: 1923 in range + 77 overflows
  ReportFormat fmt;
  fmt.nsecs = true;
  fmt.histogram_buckets = 30000;
  const std::string full = FormatDmaLatencyLine(0) + FormatHistogram(threads, fmt);
  EXPECT_EQ(SplitLines(full).size(), 2u + 30000u + 7u + 1u);  // every row is printed in 2.4 style
  EXPECT_EQ(AwkNonZeroRows(full), body);
}

TEST(CyclicReportGolden, VerboseLinesMatchSample11) {
  const std::string body = Body(ReadGolden("11-verbose-v.txt"));
  std::string expected, got;
  std::vector<VerboseReducer> reducers = {VerboseReducer(0, 1), VerboseReducer(1, 1)};
  for (const std::string& line : SplitLines(body)) {
    int thread = 0;
    unsigned long long cycle = 0;
    long long value = 0;
    if (std::sscanf(line.c_str(), "%d:%llu:%lld", &thread, &cycle, &value) != 3) continue;
    expected += line + "\n";
    reducers.at(static_cast<std::size_t>(thread)).Add(cycle, value, got);
    EXPECT_EQ(FormatVerboseLine(thread, cycle, value), line + "\n");
  }
  EXPECT_EQ(got, expected);
}

TEST(CyclicReportGolden, OscopeReducerMatchesSample12) {
  const std::string body = Body(ReadGolden("12-verbose-oscope-o10.txt"));
  // Rebuild 100 samples whose per-10 block maxima are the printed ones; the rest are smaller.
  std::vector<long long> samples(100, 1);
  std::string expected;
  for (const std::string& line : SplitLines(body)) {
    int thread = 0;
    unsigned long long cycle = 0;
    long long value = 0;
    if (std::sscanf(line.c_str(), "%d:%llu:%lld", &thread, &cycle, &value) != 3) continue;
    samples.at(cycle) = value;
    expected += line + "\n";
  }
  VerboseReducer reducer(0, 10);
  std::string got;
  for (std::size_t c = 0; c < samples.size(); ++c) reducer.Add(c, samples[c], got);
  EXPECT_EQ(got, expected);
}

TEST(CyclicReportGolden, BreakTraceLiveMatchesSample50) {
  const std::string body = Body(ReadGolden("50-breaktrace-b.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  ThreadReport shown = ParseThreadLine(lines[3]);  // printed before the thread had a TID
  ThreadReport final_state = shown;
  final_state.tid = 10777;
  const std::vector<ThreadReport> finals = {final_state};
  BreakTrace trace{true, 10777, 29};
  const std::string header = FormatLiveHeader("fifo", "", "0.41 0.41 0.18 2/90 10777");
  EXPECT_EQ(FormatDmaLatencyLine(0) + header + FormatThreadLine(shown, ReportFormat{}) +
                FormatBreakTrace(finals, trace),
            body);
}

void ExpectQuietBreak(const std::string& file, bool nsecs, std::size_t skip_lines) {
  const std::string body = Body(ReadGolden(file));
  const std::vector<std::string> lines = SplitLines(body);
  ReportFormat fmt;
  fmt.nsecs = nsecs;
  const ThreadReport t = ParseThreadLine(lines[skip_lines + 1]);
  const std::vector<ThreadReport> threads = {t};
  BreakTrace trace{true, t.tid, t.act};
  EXPECT_EQ(Join(lines, 0, skip_lines) + FormatDmaLatencyLine(0) + FormatThreadLine(t, fmt) +
                FormatBreakTrace(threads, trace),
            body)
      << file;
}

TEST(CyclicReportGolden, BreakTraceQuietMatchesSample51) {
  ExpectQuietBreak("51-breaktrace-tracemark.txt", false, 1);  // after the INFO: debugfs line
}

TEST(CyclicReportGolden, BreakTraceInNanosecondsMatchesSample56) {
  ExpectQuietBreak("56-b-with-N-unit.txt", true, 0);
}

TEST(CyclicReportGolden, SpikeListMatchesSample52) {
  const std::string body = Body(ReadGolden("52-spike.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const ThreadReport t = ParseThreadLine(lines[1]);
  std::vector<SpikeEvent> spikes;
  unsigned long long total = 0;
  for (const std::string& line : lines) {
    SpikeEvent s;
    long long value = 0, ts = 0;
    if (std::sscanf(line.c_str(), "T:%d Spike:%lld: TS: %lld", &s.thread, &value, &ts) == 3) {
      s.value = value;
      s.ts_us = ts;
      spikes.push_back(s);
    }
    std::sscanf(line.c_str(), "spikes = %llu", &total);
  }
  ASSERT_EQ(spikes.size(), 20u);
  EXPECT_EQ(total, 5416u);
  const std::vector<std::vector<SpikeEvent>> per_thread = {spikes};
  EXPECT_EQ(FormatDmaLatencyLine(0) + FormatThreadLine(t, ReportFormat{}) +
                FormatSpikes(MergeSpikes(per_thread, 20), total),
            body);
}

TEST(CyclicReportGolden, StatusBlockMatchesSample60) {
  const std::string body = Body(ReadGolden("60-sigusr1-status.txt"));
  const std::vector<std::string> lines = SplitLines(body);
  const std::vector<ThreadReport> live = {ParseThreadLine(lines[2]), ParseThreadLine(lines[3])};
  const std::vector<ThreadReport> end = {ParseThreadLine(lines[6]), ParseThreadLine(lines[7])};
  EXPECT_EQ(FormatStatusBlock(live, ReportFormat{}) + FormatDmaLatencyLine(0) +
                FormatThreadLines(end, ReportFormat{}),
            body);
}

TEST(CyclicReportGolden, RefreshOnMaxScreenMatchesSample63) {
  const std::string body = Body(ReadGolden("63-refresh-on-max-M.txt"));
  const std::string dma = FormatDmaLatencyLine(0);
  const std::string down = FormatCursorDown(1);
  ASSERT_EQ(body.substr(body.size() - down.size()), down);
  const std::string screen = body.substr(dma.size(), body.size() - dma.size() - down.size());
  std::string rest;
  EXPECT_EQ(dma + RenderLiveFrames(screen, FormatCursorUp(1), ReportFormat{}, true, &rest) + down,
            body);
}

// --- Formats without a 2.4 sample ---

ThreadReport SmallThread(int index, std::vector<std::uint64_t> hist, std::uint64_t overflows,
                         std::vector<std::uint64_t> overflow_cycles) {
  ThreadReport t;
  t.index = index;
  t.tid = 100 + index;
  t.priority = 99;
  t.interval_us = 1000;
  t.histogram = std::move(hist);
  t.histogram_overflows = overflows;
  t.overflow_cycles = std::move(overflow_cycles);
  t.cycles = overflows;
  for (std::uint64_t c : t.histogram) t.cycles += c;
  t.min = 1;
  t.max = 7;
  t.avg_sum = 2.5 * static_cast<double>(t.cycles);
  return t;
}

TEST(CyclicReport, SparseStyleOmitsZeroRowsAndTotalsLike2_10) {
  const std::vector<ThreadReport> threads = {SmallThread(0, {0, 2, 0, 1}, 1, {5}),
                                             SmallThread(1, {0, 0, 0, 3}, 4, {1, 2, 3, 4})};
  ReportFormat fmt;
  fmt.histogram_buckets = 4;
  fmt.histogram_style = HistogramStyle::kSparse;
  EXPECT_EQ(FormatHistogram(threads, fmt),
            "# Histogram\n"
            "000001 000002\t000000\n"
            "000003 000001\t000003\n"
            "# Min Latencies: 00001 00001\n"
            "# Avg Latencies: 00002 00002\n"
            "# Max Latencies: 00007 00007\n"
            "# Histogram Overflows: 00001 00004\n"
            "# Histogram Overflow at cycle number:\n"
            "# Thread 0: 00005\n"
            "# Thread 1: 00001 00002 00003 00004 # 00000 others\n"
            "\n");
}

TEST(CyclicReport, SparseHistofallPrintsTheSumColumnEvenForOneThread) {
  const std::vector<ThreadReport> threads = {SmallThread(0, {0, 2}, 0, {})};
  ReportFormat fmt;
  fmt.histogram_buckets = 2;
  fmt.histofall = true;
  fmt.histogram_style = HistogramStyle::kSparse;
  EXPECT_EQ(FormatHistogram(threads, fmt),
            "# Histogram\n000001 000002\t000002\n# Min Latencies: 00001\n# Avg Latencies: 00002\n"
            "# Max Latencies: 00007\n# Histogram Overflows: 00000\n"
            "# Histogram Overflow at cycle number:\n# Thread 0: \n\n");
  fmt.histogram_style = HistogramStyle::kFull;  // 2.4: no sum column for a single thread
  EXPECT_EQ(FormatHistogram(threads, fmt),
            "# Histogram\n000000 000000\n000001 000002\n# Total: 000000002\n"
            "# Min Latencies: 00001\n# Avg Latencies: 00002\n# Max Latencies: 00007\n"
            "# Histogram Overflows: 00000\n# Histogram Overflow at cycle number:\n"
            "# Thread 0:\n\n");
}

TEST(CyclicReport, SmiAddsAColumnAndAFooterLine) {
  ThreadReport t = SmallThread(0, {1}, 0, {});
  t.smi_count = 3;
  ReportFormat fmt;
  fmt.smi = true;
  EXPECT_EQ(FormatThreadLine(t, fmt),
            "T: 0 (  100) P:99 I:1000 C:      1 Min:      1 Act:    0 Avg:    2 Max:       7 "
            "SMI:       3\n");
  fmt.histogram_buckets = 1;
  const std::vector<ThreadReport> threads = {t};
  const std::string hist = FormatHistogram(threads, fmt);
  EXPECT_NE(hist.find("# Thread 0:\n# SMIs: 00003\n\n"), std::string::npos) << hist;
  EXPECT_EQ(FormatVerboseLine(0, 5, 12, 3), "       0:       5:      12       3\n");
}

TEST(CyclicReport, ThreadLineWidensInsteadOfTruncating) {
  ThreadReport t;
  t.tid = 1234567;
  t.priority = 99;
  t.interval_us = 1000;
  t.cycles = 123456789;
  t.min = 5;
  t.act = 123456;
  t.max = 1234567890;
  t.avg_sum = 7.9 * 123456789.0;
  EXPECT_EQ(FormatThreadLine(t, ReportFormat{}),
            "T: 0 (1234567) P:99 I:1000 C:123456789 Min:      5 Act:123456 Avg:    7 "
            "Max:1234567890\n");
}

TEST(CyclicReport, ThreadWithoutSamplesPrintsCyclictestsInitialValues) {
  ThreadReport t;
  t.priority = 99;
  t.interval_us = 1500;
  EXPECT_EQ(FormatThreadLine(t, ReportFormat{}),
            "T: 0 (    0) P:99 I:1500 C:      0 Min:1000000 Act:    0 Avg:    0 Max:       0\n");
}

TEST(CyclicReport, LiveHeaderShowsASecondPolicyAfterASlash) {
  EXPECT_EQ(FormatLiveHeader("other", "other", "0.1 0.2 0.3 1/2 3"),
            "policy: other/other: loadavg: 0.1 0.2 0.3 1/2 3          \n\n");
}

TEST(CyclicReport, BreakTraceWithoutAHitListsOnlyTheThreadIds) {
  const std::vector<ThreadReport> threads = {SmallThread(0, {}, 0, {}), SmallThread(1, {}, 0, {})};
  EXPECT_EQ(FormatBreakTrace(threads, BreakTrace{}), "# Thread Ids: 00100 00101\n");
}

TEST(CyclicReport, SpikesAreMergedByTimeAndCappedAtTheNodeCount) {
  const std::vector<std::vector<SpikeEvent>> per_thread = {{{0, 30, 100}, {0, 31, 300}},
                                                           {{1, 40, 200}, {1, 41, 400}}};
  const std::vector<SpikeEvent> merged = MergeSpikes(per_thread, 3);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[1].thread, 1);
  EXPECT_EQ(FormatSpikes(merged, 9),
            "\nT: 0 Spike:      30: TS:          100\nT: 1 Spike:      40: TS:          200\n"
            "T: 0 Spike:      31: TS:          300\nspikes = 9\n\n");
  EXPECT_EQ(FormatSpikes({}, 0), "");
}

// Strict JSON: a thread without cycles (a run stopped at once) has no min, max or avg.
TEST(CyclicReport, JsonOfAThreadWithoutCyclesHasNullStatistics) {
  ThreadReport t;
  const std::vector<ThreadReport> threads = {t};
  for (const bool extras_on : {false, true}) {
    JsonExtras extras;
    extras.enabled = extras_on;
    const std::string json = FormatJson(JsonRunInfo{}, threads, ReportFormat{}, extras);
    EXPECT_NE(json.find("\"min\": null,\n      \"max\": null,\n      \"avg\": null,\n"),
              std::string::npos)
        << json;
    EXPECT_EQ(json.find("nan"), std::string::npos) << json;
    EXPECT_EQ(json.find("1000000"), std::string::npos) << json;
  }
}

TEST(CyclicReport, JsonAddsTheRtloopObjectAfterTheCyclictestKeys) {
  ThreadReport t = SmallThread(0, {0, 2}, 0, {});
  t.policy = "fifo";
  t.cpu = 1;
  t.overruns = 2;
  t.missed_releases = 3;
  t.ring_drops = 4;
  t.execution_min_ns = 100;
  t.execution_avg_ns = 150.25;
  t.execution_max_ns = 900;
  t.percentiles = {true, 1000, 2000, 3000, 4000, 5000, 6000, 7000};
  const std::vector<ThreadReport> threads = {t};
  ReportFormat fmt;
  fmt.histogram_buckets = 2;
  JsonExtras plain;
  plain.enabled = false;
  JsonExtras extras;
  extras.tool_version = "0.1.0";
  const std::string base = FormatJson(JsonRunInfo{}, threads, fmt, plain);
  const std::string with = FormatJson(JsonRunInfo{}, threads, fmt, extras);
  // The cyclictest part is untouched: only its closing "  }\n}\n" becomes "  },\n" + rtloop.
  ASSERT_EQ(with.substr(0, base.size() - 4), base.substr(0, base.size() - 4));
  EXPECT_EQ(
      with.substr(base.size() - 4),
      "},\n"
      "  \"rtloop\": {\n"
      "    \"schema_version\": 1,\n"
      "    \"tool\": \"rtloop-cyclic\",\n"
      "    \"version\": \"0.1.0\",\n"
      "    \"unit\": \"us\",\n"
      "    \"thread\": {\n"
      "      \"0\": {\n"
      "        \"tid\": 100,\n"
      "        \"policy\": \"fifo\",\n"
      "        \"priority\": 99,\n"
      "        \"interval_us\": 1000,\n"
      "        \"cpu\": 1,\n"
      "        \"cycles\": 2,\n"
      "        \"warmup_cycles\": 0,\n"
      "        \"histogram_overflows\": 0,\n"
      "        \"overruns\": 2,\n"
      "        \"missed_releases\": 3,\n"
      "        \"ring_drops\": 4,\n"
      "        \"verbose_drops\": 0,\n"
      "        \"latency_ns\": {\"p50\": 1000, \"p90\": 2000, \"p99\": 3000, \"p99.9\": 4000, "
      "\"p99.99\": 5000, \"p99.999\": 6000, \"max\": 7000},\n"
      "        \"execution_ns\": {\"min\": 100, \"avg\": 150.2, \"max\": 900}\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
}

TEST(CyclicReport, JsonEscapesQuotesInTheCommandLine) {
  JsonRunInfo run;
  run.cmdline = "rtloop-cyclic --json=\"a b\\c\"";
  JsonExtras plain;
  plain.enabled = false;
  const std::string json = FormatJson(run, {}, ReportFormat{}, plain);
  EXPECT_NE(json.find("\"cmdline:\": \"rtloop-cyclic --json=\\\"a b\\\\c\\\"\",\n"),
            std::string::npos)
      << json;
}

// Issue 17: one JSON string escaper (rtloop/telemetry/utf8.h) for rtloop-cyclic and the live page;
// bytes that are not UTF-8 become U+FFFD by the WHATWG rule: one per maximal ill-formed subpart,
// so the cut-short sequence "\xe2\x82" is one U+FFFD (this file's own copy made it two).
TEST(CyclicReport, JsonStringsAreValidUtf8WhateverBytesTheyHold) {
  JsonRunInfo run;
  run.cmdline = "rtloop-cyclic --json=r\xe2\x82x\xff.json \xc3\xa9";
  run.sysinfo.nodename = "host\xc0\xaf";
  ThreadReport t;
  t.policy = "fifo\x1b";
  const std::vector<ThreadReport> threads = {t};
  const std::string json = FormatJson(run, threads, ReportFormat{}, JsonExtras{});
  EXPECT_TRUE(telemetry::IsValidUtf8(json));
  EXPECT_NE(json.find("\"cmdline:\": \"rtloop-cyclic --json=r\\ufffdx\\ufffd.json \xc3\xa9\",\n"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"nodename\": \"host\\ufffd\\ufffd\",\n"), std::string::npos) << json;
  EXPECT_NE(json.find("\"policy\": \"fifo\\u001b\",\n"), std::string::npos) << json;
}

TEST(CyclicReport, JoinCommandLineJoinsWithSingleSpaces) {
  const char* argv[] = {"cyclictest", "-m", "-Sp99", "--json=out/ct.json"};
  EXPECT_EQ(JoinCommandLine(4, argv), "cyclictest -m -Sp99 --json=out/ct.json");
}

TEST(CyclicReport, JsonTimeUsesRtUtilsFormat) {
  const std::string s = FormatJsonTime(0);
  EXPECT_TRUE(std::regex_match(s, std::regex("[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} "
                                             "[0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}")))
      << s;
}

TEST(CyclicReport, PercentileTableUsesTheRunUnit) {
  ThreadReport t = SmallThread(0, {1}, 0, {});
  t.tid = 9164;
  t.max = 1918;
  t.percentiles = {true, 18'400, 22'000, 41'999, 310'000, 1'290'000, 1'918'000, 1'918'700};
  ThreadReport empty;
  empty.index = 1;
  const std::vector<ThreadReport> threads = {t, empty};
  EXPECT_EQ(FormatPercentileTable(threads, ReportFormat{}),
            "# Wake-up latency percentiles (us)\n"
            "T: 0 ( 9164) P50:     18 P90:     22 P99:     41 P99.9:    310 P99.99:   1290 "
            "P99.999:   1918 Max:    1918\n"
            "T: 1 (    0) P50:      - P90:      - P99:      - P99.9:      - P99.99:      - "
            "P99.999:      - Max:       -\n");
}

}  // namespace
}  // namespace rtloop::cyclic
