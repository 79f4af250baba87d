// rtloop-bench's pure parts: input parsing (cyclictest -h 2.4/2.7+, --json), percentiles and the
// sample-count rule, scenarios, references, report.md.
#include <gtest/gtest.h>

#include "bench_test_util.h"
#include "bench_util.h"
#include "latency_data.h"
#include "plots.h"
#include "reference.h"
#include "report.h"
#include "scenarios.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;

namespace rtloop::bench {
namespace {

using testing::Golden;
using testing::ReadFile;

TEST(LatencyData, ParsesTheRtTests24HistogramLayout) {
  Result<LatencyData> d = ParseHistogramText(Golden("17-histfile.txt"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, "histogram-2.4");
  ASSERT_EQ(d->threads.size(), 2u);
  // # Total: 000002954 000002909, # Histogram Overflows: 00039 00075
  EXPECT_EQ(d->threads[0].cycles, 2954u + 39u);
  EXPECT_EQ(d->threads[1].histogram_overflows, 75u);
  EXPECT_EQ(*d->threads[1].max_us, 3775);
  EXPECT_EQ(*d->threads[0].min_us, 11);
}

TEST(LatencyData, TheTwoLayoutsOfOneRunGiveTheSameData) {
  Result<LatencyData> old_form = ParseHistogramText(Golden("15-histofall-H100.txt"));
  Result<LatencyData> new_form = ParseHistogramText(Golden("v2.10/15-histofall-H100.txt"));
  ASSERT_TRUE(old_form.ok() && new_form.ok());
  EXPECT_EQ(new_form->kind, "histogram-2.7+");
  ASSERT_EQ(old_form->threads.size(), 2u);  // the -H sum column is not a thread
  ASSERT_EQ(new_form->threads.size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    const ThreadLatency& a = old_form->threads[t];
    const ThreadLatency& b = new_form->threads[t];
    EXPECT_EQ(a.cycles, b.cycles);
    EXPECT_EQ(*Metric(a, "p99"), *Metric(b, "p99"));
    EXPECT_EQ(*a.max_us, *b.max_us);
  }
}

TEST(LatencyData, ReadsCyclictestJsonWithAndWithoutTheRtloopObject) {
  const std::string body = Golden("18-json-with-h.txt");
  const std::string json = body.substr(body.find('{'));
  Result<LatencyData> d = ParseCyclictestJson(json);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, "cyclictest-json");
  ASSERT_EQ(d->threads.size(), 2u);
  EXPECT_GT(d->threads[0].cycles, 0u);
  EXPECT_FALSE(d->threads[0].histogram.empty());
  EXPECT_TRUE(Metric(d->threads[0], "p50").ok());
  // "avg": nan (no cycles) is read as absent, not an error.
  Result<LatencyData> nan = ParseCyclictestJson(
      R"({"thread": {"0": {"cycles": 0, "min": 1000000, "max": 0, "avg": -nan, "cpu": -1}}})");
  ASSERT_TRUE(nan.ok()) << nan.status().ToString();
  EXPECT_FALSE(nan->threads[0].avg_us.has_value());
  Result<LatencyData> rt = ParseCyclictestJson(
      R"({"thread": {"0": {"histogram": {}, "cycles": 5, "min": 1, "max": 9, "avg": 3.0}},
          "rtloop": {"thread": {"0": {"priority": 99, "interval_us": 1000, "overruns": 2,
          "missed_releases": 3, "latency_ns": {"p99": 8500}}}}})");
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(rt->kind, "rtloop-cyclic-json");
  EXPECT_DOUBLE_EQ(*Metric(rt->threads[0], "p99"), 8.5);
  EXPECT_EQ(*rt->threads[0].missed_releases, 3u);
}

TEST(LatencyData, UnreadableInputsNameTheFileAndWhatIsUnderstood) {
  testing::TempDir dir("data");
  const std::string bad = dir.path() + "/bad.txt";
  ASSERT_TRUE(WriteTextFile(bad, "hello\n").ok());
  Result<LatencyData> d = LoadLatencyData(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(bad), std::string::npos);
  EXPECT_NE(d.status().message().find("2.7+"), std::string::npos);
  EXPECT_FALSE(LoadLatencyData(dir.path() + "/missing.json").ok());
  ASSERT_TRUE(WriteTextFile(bad, "{\"thread\": {").ok());
  EXPECT_FALSE(LoadLatencyData(bad).ok());
  ASSERT_TRUE(WriteTextFile(bad, "# Histogram\n000001 abc\n").ok());
  EXPECT_FALSE(LoadLatencyData(bad).ok());
}

TEST(LatencyData, PercentilesComeFromTheHistogramRank) {
  ThreadLatency t;
  t.histogram = {0, 90, 9, 1};  // 100 samples: p90 in bucket 1, p99 in 2, p99.9 in 3
  t.cycles = 100;
  EXPECT_EQ(*Metric(t, "p90"), 1);
  EXPECT_EQ(*Metric(t, "p99"), 2);
  EXPECT_EQ(*Metric(t, "p99.9"), 3);
  t.histogram_overflows = 5;
  t.cycles = 105;
  Result<double> over = Metric(t, "p99");  // rank 104 of 105 lies in the overflow
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("overflow"), std::string::npos);
  EXPECT_FALSE(Metric(ThreadLatency{}, "p99").ok());
  EXPECT_FALSE(Metric(t, "median").ok());
}

TEST(LatencyData, APercentileNeedsTenSamplesAboveIt) {
  EXPECT_TRUE(SupportsPercentile("p99", 1000).ok());
  EXPECT_FALSE(SupportsPercentile("p99", 999).ok());
  const Status s = SupportsPercentile("p99.999", 20000);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1000000 cycles"), std::string::npos) << s.message();
  EXPECT_TRUE(SupportsPercentile("max", 1).ok());
}

TEST(LatencyData, MergeAddsHistogramsAndWeighsTheAverage) {
  ThreadLatency a, b;
  a.cycles = 10;
  a.avg_us = 2;
  a.max_us = 5;
  a.histogram = {0, 10};
  b.cycles = 30;
  b.avg_us = 6;
  b.max_us = 9;
  b.histogram = {0, 0, 30};
  const ThreadLatency all = MergeThreads({a, b});
  EXPECT_EQ(all.cycles, 40u);
  EXPECT_DOUBLE_EQ(*all.avg_us, 5.0);
  EXPECT_EQ(*all.max_us, 9);
  EXPECT_EQ(all.histogram, (std::vector<std::uint64_t>{0, 10, 30}));
}

TEST(Scenarios, LoadsAreTheDocumentedCommandsScaledToTheCpus) {
  ScenarioRequest r;
  r.online_cpus = {0, 1, 2, 3};
  r.duration_s = 100;
  r.name = "stress";
  Result<ScenarioPlan> p = PlanScenario(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->loads.at(0).argv,
            (std::vector<std::string>{"stress-ng", "-c", "4", "--io", "2", "--vm", "1",
                                      "--vm-bytes", "4M", "--timeout", "160s"}));
  EXPECT_EQ(p->measure_args, (std::vector<std::string>{"-S", "-m", "-p99", "-i1000"}));
  r.name = "hackbench";
  EXPECT_EQ(PlanScenario(r)->loads.at(0).argv,
            (std::vector<std::string>{"hackbench", "-l", "-1", "-g", "15", "-f", "25", "-P"}));
  r.name = "irq";
  r.iperf_port = 5201;
  p = PlanScenario(r);
  ASSERT_EQ(p->loads.size(), 2u);
  EXPECT_EQ(p->loads[0].listen_port, 5201);
  EXPECT_EQ(p->loads[1].argv[2], "127.0.0.1");
}

TEST(Scenarios, IsolatedMeasuresOneCpuAndLoadsTheOthers) {
  ScenarioRequest r;
  r.name = "isolated";
  r.online_cpus = {0, 1, 2};
  Result<ScenarioPlan> p = PlanScenario(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->isolation, "affinity");
  EXPECT_EQ(p->measured_cpu, 2);
  EXPECT_EQ(p->loads[0].cpus, (std::vector<int>{0, 1}));
  ASSERT_FALSE(p->notes.empty());
  EXPECT_NE(p->notes[0].find("isolcpus=2"), std::string::npos);
  r.isolated_cpus = {1};
  p = PlanScenario(r);
  EXPECT_EQ(p->isolation, "isolcpus");
  EXPECT_EQ(p->measured_cpu, 1);
  EXPECT_EQ(p->loads[0].cpus, (std::vector<int>{0, 2}));
  r.online_cpus = {0};
  EXPECT_FALSE(PlanScenario(r).ok());
}

TEST(Scenarios, BadRequestsAreErrorsNamingTheValue) {
  ScenarioRequest r;
  r.online_cpus = {0, 1};
  r.name = "bogus";
  EXPECT_NE(PlanScenario(r).status().message().find("bogus"), std::string::npos);
  r.name = "custom";
  EXPECT_NE(PlanScenario(r).status().message().find("--load"), std::string::npos);
  r.name = "idle";
  r.cpus = {7};
  EXPECT_NE(PlanScenario(r).status().message().find("CPU 7"), std::string::npos);
}

TEST(Scenarios, AReferenceCommandBecomesTheMeasurement) {
  std::uint32_t h = 0;
  EXPECT_EQ(
      MeasureArgsFromCommand(SplitWords("cyclictest -c 0 -m -a -t 4 -p 99"), &h),
      (std::vector<std::string>{"-c", "0", "-m", "-a", "-t", "4", "-p", "99", "--keep-distance"}));
  EXPECT_EQ(h, 0u);
  EXPECT_EQ(MeasureArgsFromCommand(
                SplitWords("taskset -c 0-7 cyclictest -m -Sp99 -i1000 -h800 -D24h -q"), &h),
            (std::vector<std::string>{"-m", "-Sp99", "-i1000"}));
  EXPECT_EQ(h, 800u);
  EXPECT_EQ(
      MeasureArgsFromCommand(SplitWords("/data/cyclictest -c 0 -m -n -t 4 -p 99 -D 2H"), &h).size(),
      8u);  // -c 0 -m -t 4 -p 99 --keep-distance
}

// Issue 19: --scenario=isolated with Tronlong's isolated reference ran `stress-ng -c 1 --io 2` and
// -h10000 instead of the vendor's `stress --cpu 8 ...` and -h800; --cpus also changed -h.
ScenarioRequest TronlongRequest(const std::string& scenario, const std::string& reference) {
  Result<std::vector<ReferenceRun>> all = LoadReferences();
  Result<ReferenceRun> ref = FindReference(*all, reference);
  EXPECT_TRUE(ref.ok()) << reference;
  ScenarioRequest r;
  r.name = scenario;
  r.duration_s = 10;
  r.online_cpus = {0, 1};
  r.reference_command = SplitWords(ref->command);
  r.reference_load = ref->load;
  r.reference_scenario = ref->scenario;
  r.tool_exists = [](const std::string& tool) { return tool == "stress-ng"; };
  return r;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " | ") + w;
  return out;
}

TEST(Scenarios, AReferenceRunIsThePublishedCommandAndLoadScaledToThisMachine) {
  Result<ScenarioPlan> p =
      PlanScenario(TronlongRequest("stress", "rk3588-tronlong/cpu-full-load/preempt-rt"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->measure_args, (std::vector<std::string>{"-m", "-Sp99", "-i1000"}));
  EXPECT_EQ(p->histogram_us, 800u);
  ASSERT_EQ(p->loads.size(), 1u);
  EXPECT_EQ(p->loads[0].argv,
            (std::vector<std::string>{"stress-ng", "--cpu", "2", "--io", "2", "--vm", "2",
                                      "--vm-bytes", "64", "--timeout", "70s"}));
  EXPECT_TRUE(p->like_for_like) << Joined(p->differences);
  const std::string how = Joined(p->how);
  EXPECT_NE(how.find("scaled from the published 8 CPUs (its -c) to the 2"), std::string::npos)
      << how;
  EXPECT_NE(how.find("stress is not installed: its stress-ng equivalent runs"), std::string::npos)
      << how;

  // isolated: the published options and load, the load kept off the measured CPU; no isolcpus
  // here, so not like for like, and the plan says why.
  p = PlanScenario(TronlongRequest("isolated", "rk3588-tronlong/isolated/preempt-rt"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->measure_args, (std::vector<std::string>{"-m", "-Sp99", "-i1000"}));
  EXPECT_EQ(p->histogram_us, 800u);
  ASSERT_EQ(p->loads.size(), 1u);
  EXPECT_EQ(Joined(p->loads[0].argv),
            "stress-ng | --cpu | 1 | --io | 1 | --vm | 1 | --vm-bytes | 64 | --timeout | 70s");
  EXPECT_EQ(p->loads[0].cpus, (std::vector<int>{0}));
  EXPECT_FALSE(p->like_for_like);
  EXPECT_NE(Joined(p->differences).find("this kernel has no isolcpus"), std::string::npos);
}

TEST(Scenarios, CpusAndLoadWithAReferenceKeepItsHistogramAndSayWhyNotLikeForLike) {
  ScenarioRequest r = TronlongRequest("stress", "rk3588-tronlong/cpu-full-load/preempt-rt");
  r.cpus = {1};
  Result<ScenarioPlan> p = PlanScenario(r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->histogram_us, 800u) << "--cpus must not change -h";
  EXPECT_EQ(p->measure_args,
            (std::vector<std::string>{"-t", "1", "-a", "1", "-m", "-p99", "-i1000"}));
  EXPECT_FALSE(p->like_for_like);
  EXPECT_NE(Joined(p->differences).find("--cpus replaces the published thread options"),
            std::string::npos);

  r = TronlongRequest("stress", "rk3588-tronlong/cpu-full-load/preempt-rt");
  r.custom_loads = {"stress-ng -c 1"};
  p = PlanScenario(r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->loads.size(), 1u);
  EXPECT_EQ(p->loads[0].argv, (std::vector<std::string>{"/bin/sh", "-c", "stress-ng -c 1"}));
  EXPECT_EQ(p->histogram_us, 800u);
  EXPECT_FALSE(p->like_for_like);
  EXPECT_NE(Joined(p->differences).find("the load is --load's (`stress-ng -c 1`)"),
            std::string::npos);

  // A published load with parts no machine here can run: the rest runs, the parts are listed.
  r = TronlongRequest("stress", "rk3568/stress-test2/preempt-rt");
  p = PlanScenario(r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->loads.size(), 1u);
  EXPECT_EQ(Joined(p->loads[0].argv),
            "stress-ng | -c | 2 | --io | 1 | --vm | 1 | --vm-bytes | 4M | --timeout | 70s");
  EXPECT_NE(Joined(p->differences).find("\"Fishing Joy game\""), std::string::npos);
}

TEST(References, LookUpBySlugsExactFirstThenUniquePrefix) {
  Result<std::vector<ReferenceRun>> all = LoadReferences();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_GT(all->size(), 30u);
  Result<ReferenceRun> r = FindReference(*all, "RK3568/Stress test1/PREEMPT_RT");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->threads.size(), 4u);
  EXPECT_EQ(r->threads[0].max_us, 74);
  EXPECT_EQ(r->threads[1].interval_us, 1500);
  EXPECT_TRUE(FindReference(*all, "rk3588/stress-test/preempt-rt").ok());  // exact beats prefix
  EXPECT_TRUE(FindReference(*all, "rk3588-tronlong/cpu-full/preempt").ok());
  Result<ReferenceRun> amb = FindReference(*all, "rk3568/stress/preempt-rt");
  ASSERT_FALSE(amb.ok());
  EXPECT_NE(amb.status().message().find("rk3568/stress-test2/preempt-rt"), std::string::npos);
  EXPECT_FALSE(FindReference(*all, "nope/x/y").ok());
  EXPECT_FALSE(FindReference(*all, "rk3568").ok());
  EXPECT_EQ(Slug("RK3588 (Tronlong)"), "rk3588-tronlong");
}

TEST(Report, MarkdownHasTheVendorsTableAndTheReferenceSideBySide) {
  const nlohmann::json r = nlohmann::json::parse(R"({
    "scenario": {"name": "stress", "measure_command": "rtloop-cyclic -S", "duration_s": 5,
                 "description": "stress-ng"},
    "system": {"host": "h"},
    "threads": [{"index": 0, "priority": 99, "interval_us": 1000, "cycles": 5000, "min": 3,
                 "act": null, "avg": 7.5, "max": 80, "percentiles": {"p99": 20, "p99.99": 70},
                 "overruns": 0, "missed_releases": 1}],
    "reference": {"board": "RK3568", "scenario": "Stress test1", "kernel": "PREEMPT_RT",
                  "command": "cyclictest", "duration": "24 hours", "source": "x",
                  "threads": [{"thread": 0, "prio": 99, "interval_us": 1000, "count": 7,
                               "min_us": 0, "act_us": 2, "avg_us": 3, "max_us": 40}]}})");
  const std::string md = FormatReportMarkdown(r);
  EXPECT_NE(md.find("| T | P | I (us) | C | Min | Act | Avg | Max | p99 | p99.99 | overruns | "
                    "missed |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0 | 99 | 1000 | 5000 | 3 | - | 7.50 | 80 | 20 | - | 0 | 1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0 | 3 / 0 | 7.50 / 3 | 80 / 40 | 2.00 |"), std::string::npos) << md;
}

// Issue 19: "run for  (source: 004_....txt", "isolated " ending blank, raw summary keys, p99.99
// for a thread of 12,000 cycles (compare refuses it below 100,000), the load twice.
TEST(Report, GoldenReportOfAFixedResult) {
  const nlohmann::json r =
      nlohmann::json::parse(ReadFile(SourcePath("tests/scenarios/golden") + "/report-input.json"));
  const std::string md = FormatReportMarkdown(r);
  EXPECT_EQ(testing::CheckGolden(md, "report.md"), "");
  EXPECT_EQ(md.find("## Load"), md.rfind("## Load")) << md;
  EXPECT_NE(md.find("| 12000 | 2 | - | 6.12 | 812 | 14 | - | 0 | 0 |"), std::string::npos)
      << "p99.99 of 12,000 cycles shown:\n"
      << md;
  EXPECT_NE(md.find("| 38 |"), std::string::npos) << "p99.99 of 200,000 cycles missing:\n" << md;
  EXPECT_NE(md.find("isolated none"), std::string::npos) << md;
}

// Issue 19: a summary-only reference printed raw keys ("max_us_all_cpus 59, max_cpu 0") and no
// duration; the source was an opaque transcription id.
TEST(References, SummariesDurationsAndSourcesAreInWords) {
  Result<std::vector<ReferenceRun>> all = LoadReferences();
  ASSERT_TRUE(all.ok());
  Result<ReferenceRun> r = FindReference(*all, "rk3588-tronlong/cpu-full-load/preempt-rt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->summary, "max over all CPUs 59 us (CPU 0); lowest max of a CPU 25 us (CPUs 5, 7)");
  EXPECT_EQ(r->duration, "24h (the command's -D24h)");
  EXPECT_EQ(r->vendor, "Tronlong");
  EXPECT_NE(r->document.find("RK3588"), std::string::npos);
  r = FindReference(*all, "rk3588-tronlong/isolated/preempt-rt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary, "max over all CPUs 59 us (CPUs 0, 1); max 18 us on the isolated CPU 3");
  for (const ReferenceRun& run : *all) {
    EXPECT_FALSE(run.vendor.empty()) << run.key << ": " << run.source << " names no publisher";
    EXPECT_FALSE(run.duration.empty()) << run.key;
    EXPECT_EQ(run.summary.find('_'), std::string::npos) << run.key << ": " << run.summary;
  }
  EXPECT_EQ(DurationFromCommand("cyclictest -l1000000 -m -Sp99"),
            "1000000 cycles per thread (the command's -l1000000)");
  EXPECT_EQ(DurationFromCommand("cyclictest -m -D 2H"), "2H (the command's -D 2H)");
  EXPECT_EQ(DurationFromCommand("cyclictest -m"), "");
}

TEST(Plots, MaxOverTimeFileIsParsedAndNsConverted) {
  Result<MaxOverTime> m = ParseMaxOverTime(
      "# rtloop-cyclic max over time\n# window_us: 500000\n# unit: ns\n"
      "# columns: thread window start_s max cycles\n1 0 0.000 2500 10\n0 1 0.500 900 9\n"
      "# lost_windows: 0\n# end\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ(m->window_s, 0.5);
  ASSERT_EQ(m->threads.size(), 2u);
  EXPECT_DOUBLE_EQ(m->threads[1][0].max_us, 2.5);
  EXPECT_TRUE(m->complete);
  EXPECT_FALSE(ParseMaxOverTime("0 0 0 1 1\n").ok());
}

TEST(BenchUtil, DurationsTakeCyclictestsSuffixes) {
  EXPECT_EQ(*ParseDuration("90"), 90);
  EXPECT_EQ(*ParseDuration("15m"), 900);
  EXPECT_EQ(*ParseDuration("24H"), 86400);
  EXPECT_FALSE(ParseDuration("1.5h").ok());
  EXPECT_FALSE(ParseDuration("0").ok());
  EXPECT_FALSE(ParseDuration("5x").ok());
  EXPECT_EQ(DebianPackageOf("hackbench"), "rt-tests");
  EXPECT_NE(MissingToolMessage("stress-ng").find("apt-get install stress-ng"), std::string::npos);
}

}  // namespace
}  // namespace rtloop::bench
