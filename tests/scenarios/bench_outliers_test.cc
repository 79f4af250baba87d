// Why the worst cycles were late, in rtloop-bench (bench/scenarios/outliers.h): outliers.json read
// back, result.json's "outliers" counts, report.md's section (golden: tests/scenarios/golden/
// outliers-section.md from golden/outliers-input.json, a hand-made document with several causes,
// the counters' evidence, a record without evidence, nothing found, dropped records and lost
// samples), the run's options, and a real short run (root; under /tmp/rtloop-measure.lock).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bench_test_util.h"
#include "measure_lock.h"
#include "outliers.h"
#include "report.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;
using rtloop::testing::TargetFile;

namespace rtloop::bench {
namespace {

using nlohmann::json;
using testing::ReadFile;

const std::string kBench = TargetFile("rtloop-bench");
const std::string kCyclic = TargetFile("rtloop-cyclic");

std::string GoldenInput() {
  return ReadFile(SourcePath("tests/scenarios/golden") + "/outliers-input.json");
}

// Two threads as result.json has them: T0's max is the 4034 us cycle 149 of the input.
json Threads(double t0_max = 4034, double t1_max = 330) {
  return json::parse(R"([{"index": 0, "max": )" + std::to_string(t0_max) +
                     R"(}, {"index": 1, "max": )" + std::to_string(t1_max) + "}]");
}

json ResultWith(const json& outliers, const json& threads = Threads()) {
  return {{"outliers", outliers}, {"threads", threads}};
}

TEST(BenchOutliers, TheDocumentReadsBackIntoExplainsOwnTypes) {
  Result<OutliersDocument> d = ParseOutliersJson(GoldenInput());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->thresholds.latency_above_ns, 100'000);
  EXPECT_EQ(d->stats.outliers, 9u);
  EXPECT_EQ(d->stats.dropped, 3u);
  EXPECT_EQ(d->stats.samples_lost, 5u);
  ASSERT_EQ(d->records.size(), 6u);
  const explain::OutlierRecord& r = d->records[0];
  EXPECT_EQ(r.window.cycle, 149u);
  EXPECT_EQ(r.window.cpu, 1);
  EXPECT_EQ(r.evidence, explain::EvidenceKind::kTrace);
  ASSERT_EQ(r.causes.size(), 2u);
  EXPECT_EQ(r.causes[0].kind, explain::CauseKind::kThread);
  EXPECT_EQ(r.causes[0].id, 812);
  EXPECT_EQ(r.causes[1].id, -1);  // null
  EXPECT_EQ(d->records[3].evidence, explain::EvidenceKind::kCounters);
  EXPECT_EQ(d->records[3].causes[0].ns, -1);  // counted only
  EXPECT_EQ(d->records[4].evidence, explain::EvidenceKind::kNone);
  // What was read is what rtloop::explain writes: its own writer gives the same document back.
  const json again = json::parse(explain::OutliersJson(d->records, d->stats, d->thresholds));
  EXPECT_EQ(again, json::parse(GoldenInput()));
}

TEST(BenchOutliers, AnotherVersionOrABadFieldIsRefusedNamingIt) {
  json doc = json::parse(GoldenInput());
  doc["version"] = 2;
  Result<OutliersDocument> d = ParseOutliersJson(doc.dump());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("version 2: this rtloop-bench reads version 1"),
            std::string::npos)
      << d.status().message();
  doc = json::parse(GoldenInput());
  doc["records"][2]["causes"][0]["kind"] = "gremlin";
  d = ParseOutliersJson(doc.dump());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("$.records[2].causes[0].kind: unknown cause kind 'gremlin'"),
            std::string::npos)
      << d.status().message();
  doc = json::parse(GoldenInput());
  doc["records"][1].erase("wake_ns");
  d = ParseOutliersJson(doc.dump());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("$.records[1].wake_ns"), std::string::npos)
      << d.status().message();
  doc = json::parse(GoldenInput());
  doc["dropped"] = -1;
  EXPECT_FALSE(ParseOutliersJson(doc.dump()).ok());
  EXPECT_FALSE(ParseOutliersJson("{\"version\": 1, ").ok());
  EXPECT_FALSE(ParseOutliersJson("[]").ok());
}

TEST(BenchOutliers, ResultCountsByEvidenceAndLeadingCause) {
  Result<OutliersDocument> d = ParseOutliersJson(GoldenInput());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const json o = OutliersFromDocument(*d, "the kernel's trace events", Threads());
  EXPECT_EQ(o["status"], "ok");
  EXPECT_EQ(o["latency_above_us"], 100);
  EXPECT_TRUE(o["execution_above_us"].is_null());
  EXPECT_EQ(o["outliers"], 9);
  EXPECT_EQ(o["recorded"], 6);
  EXPECT_EQ(o["unexplained"], 1);
  EXPECT_EQ(o["dropped"], 3);
  EXPECT_EQ(o["samples_lost"], 5);
  EXPECT_EQ(o["by_evidence"], json::parse(R"({"trace": 4, "counters": 1, "none": 1})"));
  EXPECT_EQ(o["by_leading_cause"],
            json::parse(R"({"thread": 2, "irq": 1, "softirq": 0, "timer-delay": 0,
                            "page-faults": 1, "preemption": 0, "steal": 0,
                            "nothing-found": 1, "no-evidence": 1})"));
  EXPECT_EQ(o["evidence_notes"]["none"].get<std::string>().rfind("trace: the window", 0), 0u);
  EXPECT_EQ(o["evidence_notes"]["counters"].get<std::string>().rfind("counters: snapshots", 0), 0u);
  EXPECT_DOUBLE_EQ(o["analysis_cpu_ms_total"].get<double>(), 31.0);
  EXPECT_DOUBLE_EQ(o["analysis_cpu_ms_max"].get<double>(), 11.2);
  EXPECT_EQ(o["max_cycle"]["recorded"], true);
  EXPECT_EQ(o["max_cycle"]["cycle"], 149);
  // The summary is rtloop::explain's own grouping, not a copy of it.
  EXPECT_EQ(o["summary"][0],
            "wake-up latency above 100 us: 9 cycles (evidence: counters 1 none 1 trace 4)");
  const json schema = json::parse(ReadFile(SourcePath("bench/scenarios/result.schema.json")));
  EXPECT_EQ(testing::ValidateSchema(o, schema["properties"]["outliers"], "$.outliers"), "");
}

TEST(BenchOutliers, SectionOfAFixedDocumentIsGolden) {
  Result<OutliersDocument> d = ParseOutliersJson(GoldenInput());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::string md = OutliersSection(ResultWith(OutliersFromDocument(
      *d, "/proc counters (tracefs: not permitted (run as root or grant tracefs permissions))",
      Threads())));
  EXPECT_EQ(testing::CheckGolden(md, "outliers-section.md"), "");
  EXPECT_NE(md.find("- 2 cycles: thread spinner (tid 812, FIFO 95), up to 3.994 ms of the window"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("no evidence, up to 2.100 ms of the window (trace: the window"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("3 not recorded"), std::string::npos) << md;
  EXPECT_NE(md.find("5 samples lost before analysis, so the count of outliers is a lower bound"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("The run's worst cycle, 4034 us on T0 (cycle 149), has a record: thread "
                    "spinner (tid 812, FIFO 95), 3.994 ms of the window."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Evidence: /proc counters (tracefs: not permitted"), std::string::npos) << md;
}

TEST(BenchOutliers, TheWorstCycleWithoutARecordSaysWhereItMayBe) {
  Result<OutliersDocument> d = ParseOutliersJson(GoldenInput());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::string md =
      OutliersSection(ResultWith(OutliersFromDocument(*d, "", Threads(4034, 5000))));
  EXPECT_NE(md.find("The run's worst cycle, 5000 us on T1, has no record: it may be among the "
                    "outliers not recorded or the samples lost."),
            std::string::npos)
      << md;
}

TEST(BenchOutliers, NoOutlierSaysSoWithTheThreshold) {
  OutliersDocument none;
  none.thresholds.latency_above_ns = 250'000;
  const json o = OutliersFromDocument(none, "the kernel's trace events", Threads(42, 17));
  EXPECT_EQ(o["outliers"], 0);
  EXPECT_EQ(o["max_cycle"]["recorded"], false);
  const std::string md = OutliersSection(ResultWith(o, Threads(42, 17)));
  EXPECT_EQ(md,
            "\n## Why the worst cycles were late\n\nNo cycle above 250 us: nothing to explain (the "
            "worst: 42 us on T0).\n\nEvidence: the kernel's trace events.\nEvery record with its "
            "causes ranked by time and the raw evidence: `outliers.json`.\n");
}

TEST(BenchOutliers, OffFailedAndAbsentEachSayWhy) {
  EXPECT_NE(OutliersSection(ResultWith(OutliersOff("--no-explain was given")))
                .find("Not explained: --no-explain was given.\n"),
            std::string::npos);
  // rtloop-cyclic did not write the file: the reason names it.
  const json failed = OutliersResult("/nonexistent/outliers.json",
                                     "x\n# explained with the kernel's trace events\n", Threads());
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_NE(failed["reason"].get<std::string>().find("/nonexistent/outliers.json"),
            std::string::npos)
      << failed.dump();
  const std::string md = OutliersSection(ResultWith(failed));
  EXPECT_NE(md.find("Not explained: the outlier records could not be read (cannot open file "
                    "'/nonexistent/outliers.json'"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("rtloop-cyclic explained with the kernel's trace events."), std::string::npos)
      << md;
  EXPECT_NE(OutliersSection(json{{"threads", Threads()}}).find("Not recorded: this result.json"),
            std::string::npos);
  EXPECT_EQ(ExplainedWithNote("# explained with /proc counters (why)\nwake-up ...\n"),
            "/proc counters (why)");
  EXPECT_EQ(ExplainedWithNote("no such line\n"), "");
}

// compare shows each result.json's outlier counts (not gated) and says when a run did not explain.
TEST(BenchOutliers, CompareShowsTheOutlierCountsOfBothResults) {
  const std::string base = SourcePath("tests/scenarios/golden") + "/report-input.json";
  json cand = json::parse(ReadFile(base));
  Result<OutliersDocument> d = ParseOutliersJson(GoldenInput());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  cand["outliers"] = OutliersFromDocument(*d, "", cand["threads"]);
  testing::TempDir dir("compare-outliers");
  const std::string path = dir.path() + "/result.json";
  std::ofstream(path) << cand.dump();
  testing::RunResult r = testing::Run({kBench, "compare", base, path});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\noutliers (not gated; report.md says why): baseline not explained, "
                       "candidate 9 above 100 us (6 recorded, 1 without evidence, 3 dropped, 5 "
                       "samples lost)\n"),
            std::string::npos)
      << r.out;
  // Without the object on either side (older results, cyclictest input): no line at all.
  r = testing::Run({kBench, "compare", base, base});
  EXPECT_EQ(r.out.find("outliers"), std::string::npos) << r.out;
}

// --explain-above is checked like the run's other numbers: the whole word, before anything runs.
TEST(BenchOutliers, RunRefusesABadThresholdOrBothOptionsBeforeAnythingStarts) {
  for (const char* bad : {"--explain-above=abc", "--explain-above=100us", "--explain-above=0",
                          "--explain-above=-5", "--explain-above=1e3", "--explain-above="}) {
    testing::RunResult r = testing::Run({kBench, "run", "--scenario=idle", bad});
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--explain-above='"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(r.err.find("doctor:"), std::string::npos) << "started before refusing: " << r.err;
  }
  testing::RunResult r =
      testing::Run({kBench, "run", "--scenario=idle", "--no-explain", "--explain-above=50"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--explain-above and --no-explain contradict each other"), std::string::npos)
      << r.err;
  r = testing::Run({kBench, "run", "--no-explain=1", "--scenario=idle"});
  EXPECT_EQ(r.status, 2) << r.err;
}

// A real short run: rtloop-cyclic writes outliers.json, result.json counts it, report.md has the
// section; with --no-explain a previous run's outliers.json is removed, not reported as this one's.
TEST(BenchOutliers, ARealRunExplainsItsOutliersAndNoExplainLeavesNone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (SCHED_FIFO for rtloop-cyclic -p99)";
  const rtloop::testing::MeasureLock lock(std::chrono::seconds(600));
  ASSERT_TRUE(lock.held()) << lock.why_not();
  testing::TempDir dir("outliers");
  // Whether this second has cycles above 60 us or not, what was written must agree.
  testing::RunResult r =
      testing::Run({kBench, "run", "--scenario=idle", "--duration=1", "--out=" + dir.path(),
                    "--rtloop-cyclic=" + kCyclic, "--explain-above=60"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json result = json::parse(ReadFile(dir.path() + "/result.json"));
  EXPECT_NE(result["scenario"]["measure_command"].get<std::string>().find(
                "--explain=" + dir.path() + "/outliers.json --explain-above=60"),
            std::string::npos);
  Result<OutliersDocument> doc = ParseOutliersJson(ReadFile(dir.path() + "/outliers.json"));
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const json& o = result["outliers"];
  ASSERT_EQ(o["status"], "ok") << o.dump();
  EXPECT_EQ(o["latency_above_us"], 60);
  EXPECT_EQ(o["outliers"], doc->stats.outliers);
  EXPECT_EQ(o["recorded"], doc->records.size());
  EXPECT_FALSE(o["evidence"].is_null()) << "rtloop-cyclic's log names its evidence";
  const json schema = json::parse(ReadFile(SourcePath("bench/scenarios/result.schema.json")));
  EXPECT_EQ(testing::ValidateSchema(result, schema), "");
  const std::string md = ReadFile(dir.path() + "/report.md");
  EXPECT_NE(md.find("\n## Why the worst cycles were late\n\n"), std::string::npos) << md;
  EXPECT_NE(md.find("Evidence: "), std::string::npos) << md;

  r = testing::Run({kBench, "run", "--scenario=idle", "--duration=1", "--out=" + dir.path(),
                    "--rtloop-cyclic=" + kCyclic, "--no-explain"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/outliers.json"))
      << "the previous run's records are still there";
  const json off = json::parse(ReadFile(dir.path() + "/result.json"));
  EXPECT_EQ(off["outliers"]["status"], "off");
  EXPECT_EQ(off["scenario"]["measure_command"].get<std::string>().find("--explain"),
            std::string::npos);
  EXPECT_NE(ReadFile(dir.path() + "/report.md").find("Not explained: --no-explain was given."),
            std::string::npos);
}

}  // namespace
}  // namespace rtloop::bench
