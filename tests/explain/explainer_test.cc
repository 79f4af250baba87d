// The Explainer's contract with scripted evidence sources (the kernel's evidence is tested with
// real causes in trace_evidence_test.cc and counter_evidence_test.cc): which samples become
// records, which sources are asked again, and that no outlier goes missing.
#include "rtloop/explain/explainer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rtloop/explain/report.h"

namespace rtloop::explain {
namespace {

using std::chrono::milliseconds;

// Answers with `answer(window, record, call)`; counts its calls.
class ScriptedSource final : public EvidenceSource {
 public:
  using Answer = std::function<bool(const OutlierWindow&, OutlierRecord*, int)>;
  ScriptedSource(EvidenceKind kind, Answer answer) : kind_(kind), answer_(std::move(answer)) {}
  EvidenceKind kind() const noexcept override { return kind_; }
  void Poll(std::int64_t) override { polls.fetch_add(1); }
  bool Explain(const OutlierWindow& w, OutlierRecord* r) override {
    return answer_(w, r, calls.fetch_add(1) + 1);
  }
  std::atomic<int> calls{0};
  std::atomic<int> polls{0};

 private:
  EvidenceKind kind_;
  Answer answer_;
};

telemetry::Sample MakeSample(std::uint64_t seq, std::int64_t release_ns, std::int32_t latency_ns,
                             std::uint32_t execution_ns = 10'000, TaskId task = 0) {
  telemetry::Sample s;
  s.seq = seq;
  s.release_ns = release_ns;
  s.latency_ns = latency_ns;
  s.execution_ns = execution_ns;
  s.task = static_cast<std::uint16_t>(task);
  return s;
}

ExplainerConfig Config() {
  ExplainerConfig c;
  c.tasks = {{.task = 0, .name = "cyclic0", .tid = 4242, .cpu = 1}};
  c.latency_above_ns = 100'000;
  c.poll_period = milliseconds(5);
  c.give_up_after = milliseconds(200);
  return c;
}

bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

bool ThreadRan(const OutlierWindow&, OutlierRecord* r, int) {
  r->evidence = EvidenceKind::kTrace;
  r->evidence_note = "scripted";
  Cause c;
  c.kind = CauseKind::kThread;
  c.name = "spinner";
  c.id = 77;
  c.detail = "FIFO 95";
  c.ns = 150'000;
  c.count = 1;
  r->causes.push_back(c);
  return true;
}

TEST(ExplainerTest, OnlyCyclesAboveTheThresholdBecomeRecordsWithTheirTimesAndCauses) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  auto* src = new ScriptedSource(EvidenceKind::kTrace, ThreadRan);
  sources.emplace_back(src);
  auto ex = Explainer::Start(Config(), sub, std::move(sources));
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  const std::vector<telemetry::Sample> samples = {
      MakeSample(0, 1'000'000, 20'000), MakeSample(1, 2'000'000, 100'000),
      MakeSample(2, 3'000'000, 200'000, 30'000), MakeSample(3, 4'000'000, 99'999),
      MakeSample(4, 5'000'000, 150'000, 10'000, /*task=*/9)};  // task 9 is not explained
  sub->Offer(0, std::span(samples.data(), 4));
  sub->Offer(9, std::span(samples.data() + 4, 1));
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; }));
  (*ex)->Stop();
  const std::vector<OutlierRecord> records = (*ex)->Records();
  ASSERT_EQ(records.size(), 1u) << "100 us is not above 100 us; task 9 is not explained";
  const OutlierRecord& r = records[0];
  EXPECT_EQ(r.window.cycle, 2u);
  EXPECT_EQ(r.window.tid, 4242);
  EXPECT_EQ(r.window.cpu, 1);
  EXPECT_EQ(r.window.release_ns, 3'000'000);
  EXPECT_EQ(r.window.wake_ns, 3'200'000);
  EXPECT_EQ(r.window.done_ns, 3'230'000);
  EXPECT_FALSE(r.window.execution);
  EXPECT_EQ(r.evidence, EvidenceKind::kTrace);
  EXPECT_EQ(r.explained_ns, 150'000);
  EXPECT_EQ(r.unexplained_ns, 50'000) << "FinishRecord ran";
  EXPECT_EQ((*ex)->stats().outliers, 1u);
  EXPECT_GT(src->polls.load(), 0);
}

TEST(ExplainerTest, ACountersSourceIsAskedAgainUntilItAnswersAnyOtherSourceOnce) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  auto* trace = new ScriptedSource(EvidenceKind::kTrace, [](auto&, OutlierRecord* r, int) {
    r->evidence_note = "overwritten";
    return false;
  });
  auto* counters = new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int n) {
    if (n < 3) {
      r->evidence_note = "not yet sampled";
      return false;
    }
    r->evidence = EvidenceKind::kCounters;
    return true;
  });
  sources.emplace_back(trace);
  sources.emplace_back(counters);
  auto ex = Explainer::Start(Config(), sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::vector<telemetry::Sample> samples = {MakeSample(5, 1'000'000, 500'000)};
  sub->Offer(0, samples);
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; }));
  (*ex)->Stop();
  EXPECT_EQ(trace->calls.load(), 1);
  EXPECT_EQ(counters->calls.load(), 3);
  ASSERT_EQ((*ex)->Records().size(), 1u);
  EXPECT_EQ((*ex)->Records()[0].evidence, EvidenceKind::kCounters);
  EXPECT_EQ((*ex)->Records()[0].evidence_note, "trace: overwritten")
      << "why the preferred source did not explain it";
  // Counted apart, so that the session's note says the trace did not make every record.
  EXPECT_EQ((*ex)->stats().from_counters, 1u);
  EXPECT_EQ((*ex)->stats().unexplained, 0u);
}

TEST(ExplainerTest, ARecordTheTraceMadeGetsTheCountersPageFaultsOnceTheyHaveSampled) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  auto* trace = new ScriptedSource(EvidenceKind::kTrace, ThreadRan);
  auto* counters = new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int n) {
    if (n < 2) {
      r->evidence_note = "not yet sampled";
      return false;
    }
    r->evidence = EvidenceKind::kCounters;
    r->causes.push_back({.kind = CauseKind::kPageFaults,
                         .name = "page faults",
                         .count = 30,
                         .detail = "major 0, minor 30"});
    r->causes.push_back(
        {.kind = CauseKind::kIrq, .name = "LOC", .count = 2, .detail = ""});  // not taken
    r->raw.emplace_back(
        "tid 4242: minflt +30 majflt +0 voluntary_ctxt_switches +1 "
        "nonvoluntary_ctxt_switches +0");
    return true;
  });
  sources.emplace_back(trace);
  sources.emplace_back(counters);
  auto ex = Explainer::Start(Config(), sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::vector<telemetry::Sample> samples = {MakeSample(5, 1'000'000, 500'000)};
  sub->Offer(0, samples);
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; }));
  (*ex)->Stop();
  EXPECT_EQ(trace->calls.load(), 1);
  EXPECT_EQ(counters->calls.load(), 2) << "asked until it had sampled after the window";
  const std::vector<OutlierRecord> records = (*ex)->Records();
  ASSERT_EQ(records.size(), 1u);
  const OutlierRecord& r = records[0];
  EXPECT_EQ(r.evidence, EvidenceKind::kTrace);
  ASSERT_EQ(r.causes.size(), 2u) << "the trace's thread and the counters' page faults only";
  EXPECT_EQ(r.causes[0].kind, CauseKind::kThread) << "timed causes rank first";
  EXPECT_EQ(r.causes[1].kind, CauseKind::kPageFaults);
  EXPECT_EQ(r.causes[1].count, 30u);
  EXPECT_EQ(r.evidence_note.find("page faults"), std::string::npos) << r.evidence_note;
  ASSERT_FALSE(r.raw.empty());
  EXPECT_EQ(r.raw.back().rfind("tid 4242: minflt +30", 0), 0u) << "the counts the cause came from";
}

TEST(ExplainerTest, WhenTheCountersNeverSampleTheTraceRecordSaysThePageFaultsAreNotKnown) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  sources.emplace_back(new ScriptedSource(EvidenceKind::kTrace, ThreadRan));
  sources.emplace_back(
      new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int) {
        r->evidence_note = "counters: too old";  // labelled, as CounterEvidence's notes are
        return false;
      }));
  auto ex = Explainer::Start(Config(), sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::vector<telemetry::Sample> samples = {MakeSample(5, 1'000'000, 500'000)};
  sub->Offer(0, samples);
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; }));
  (*ex)->Stop();
  const std::vector<OutlierRecord> records = (*ex)->Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].evidence, EvidenceKind::kTrace);
  EXPECT_EQ(records[0].causes.size(), 1u);
  EXPECT_NE(records[0].evidence_note.find("page faults are not known (counters: too old)"),
            std::string::npos)
      << records[0].evidence_note;
  EXPECT_EQ(records[0].evidence_note.find("counters: counters:"), std::string::npos)
      << "labelled once";
}

// A counters snapshot without the thread (it exited before the snapshot after the window) is no
// evidence of "no page faults": the record says none were counted and why, with the line.
TEST(ExplainerTest, ATraceRecordWhoseThreadTheCountersMissedSaysNoPageFaultsWereCounted) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  sources.emplace_back(new ScriptedSource(EvidenceKind::kTrace, ThreadRan));
  sources.emplace_back(
      new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int) {
        r->evidence = EvidenceKind::kCounters;
        r->raw.emplace_back("tid 4242: counters not read in a snapshot (has the thread exited?)");
        r->raw.emplace_back("CPU1 LOC: +2  Local timer interrupts");  // not the thread's
        return true;
      }));
  auto ex = Explainer::Start(Config(), sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::vector<telemetry::Sample> samples = {MakeSample(5, 1'000'000, 500'000)};
  sub->Offer(0, samples);
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; }));
  (*ex)->Stop();
  const std::vector<OutlierRecord> records = (*ex)->Records();
  ASSERT_EQ(records.size(), 1u);
  const OutlierRecord& r = records[0];
  EXPECT_EQ(r.evidence, EvidenceKind::kTrace);
  EXPECT_NE(r.evidence_note.find("; the task's page faults: none counted (tid 4242: counters not "
                                 "read in a snapshot (has the thread exited?))"),
            std::string::npos)
      << r.evidence_note;
  ASSERT_EQ(r.raw.size(), 1u) << "the thread's line only";
  EXPECT_EQ(r.raw[0], "tid 4242: counters not read in a snapshot (has the thread exited?)");
}

TEST(ExplainerTest, AWindowNoSourceExplainsIsRecordedAsUnexplainedWithEverySourcesNote) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  sources.emplace_back(new ScriptedSource(EvidenceKind::kTrace, [](auto&, OutlierRecord* r, int) {
    r->evidence_note = "buffer starts after the window";
    return false;
  }));
  sources.emplace_back(
      new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int) {
        r->evidence_note = "not yet sampled";
        return false;
      }));
  ExplainerConfig c = Config();
  c.execution_above_ns = 1'000'000;
  auto ex = Explainer::Start(c, sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  // An execution-time outlier: 2 ms of Step() after a timely wake-up.
  const std::vector<telemetry::Sample> samples = {MakeSample(8, 1'000'000, 5'000, 2'000'000)};
  sub->Offer(0, samples);
  ASSERT_TRUE(WaitFor([&] { return (*ex)->stats().recorded >= 1; })) << "give_up_after passed";
  (*ex)->Stop();
  const OutlierRecord r = (*ex)->Records().at(0);
  EXPECT_TRUE(r.window.execution);
  EXPECT_EQ(r.window.length_ns(), 2'000'000);
  EXPECT_EQ(r.evidence, EvidenceKind::kNone);
  EXPECT_EQ(r.unexplained_ns, 2'000'000);
  EXPECT_EQ(r.evidence_note, "trace: buffer starts after the window; counters: not yet sampled");
  EXPECT_EQ((*ex)->stats().unexplained, 1u);
}

TEST(ExplainerTest, StopRecordsWhatIsStillPendingAndRecordsBeyondTheLimitAreCounted) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  sources.emplace_back(
      new ScriptedSource(EvidenceKind::kCounters, [](auto&, OutlierRecord* r, int) {
        r->evidence_note = "not yet sampled";
        return false;
      }));
  ExplainerConfig c = Config();
  c.give_up_after = std::chrono::hours(1);
  c.max_records = 2;
  auto ex = Explainer::Start(c, sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::vector<telemetry::Sample> samples = {MakeSample(1, 1'000'000, 300'000),
                                                  MakeSample(2, 2'000'000, 400'000),
                                                  MakeSample(3, 3'000'000, 500'000)};
  sub->Offer(0, samples);
  (*ex)->Stop();  // the samples may not have been read yet: Stop() reads them
  const ExplainerStats s = (*ex)->stats();
  EXPECT_EQ(s.outliers, 3u);
  EXPECT_EQ(s.recorded, 2u);
  EXPECT_EQ(s.dropped, 1u);
  const std::vector<OutlierRecord> records = (*ex)->Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].evidence_note, "counters: not yet sampled");
  const std::string summary = OutliersSummary(records, s, {.latency_above_ns = 100'000});
  EXPECT_NE(summary.find("wake-up latency above 100 us: 3 cycles (evidence: none 2)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("2 cycles: no evidence, up to 0.400 ms"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 more not recorded"), std::string::npos) << summary;
}

TEST(ExplainerTest, PerTaskCountsByLeadingCauseAddUpAndRecordsPage) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  // Task 0's outliers name a thread; task 1's have evidence that showed nothing.
  sources.emplace_back(new ScriptedSource(EvidenceKind::kTrace,
                                          [](const OutlierWindow& w, OutlierRecord* r, int call) {
                                            if (w.task == 0) return ThreadRan(w, r, call);
                                            r->evidence = EvidenceKind::kTrace;
                                            return true;
                                          }));
  ExplainerConfig c = Config();
  c.tasks.push_back({.task = 1, .name = "fast", .tid = 4243, .cpu = 1, .latency_above_ns = 50'000});
  c.max_records = 4;
  auto ex = Explainer::Start(c, sub, std::move(sources));
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  const std::vector<telemetry::Sample> slow = {MakeSample(1, 1'000'000, 300'000),
                                               MakeSample(2, 2'000'000, 400'000),
                                               MakeSample(3, 3'000'000, 90'000)};
  const std::vector<telemetry::Sample> fast = {
      MakeSample(1, 1'100'000, 60'000, 1'000, 1), MakeSample(2, 2'100'000, 70'000, 1'000, 1),
      MakeSample(3, 3'100'000, 80'000, 1'000, 1), MakeSample(4, 4'100'000, 40'000, 1'000, 1)};
  sub->Offer(0, slow);
  sub->Offer(1, fast);
  (*ex)->Stop();
  const ExplainerStats s = (*ex)->stats();
  ASSERT_EQ(s.tasks.size(), 2u);
  const TaskOutlierStats& t0 = s.tasks[0];
  const TaskOutlierStats& t1 = s.tasks[1];
  EXPECT_EQ(t0.name, "cyclic0");
  EXPECT_EQ(t0.latency_above_ns, 100'000) << "the ExplainerConfig's threshold";
  EXPECT_EQ(t1.latency_above_ns, 50'000) << "the task's own";
  EXPECT_EQ(t0.outliers, 2u);
  EXPECT_EQ(t1.outliers, 3u) << "40 us is below the task's 50 us";
  EXPECT_EQ(t0.outliers + t1.outliers, s.outliers);
  EXPECT_EQ(t0.recorded + t1.recorded, 4u) << "max_records";
  EXPECT_EQ(t0.dropped + t1.dropped, 1u);
  EXPECT_EQ(t0.recorded + t1.recorded + t0.dropped + t1.dropped, s.outliers);
  EXPECT_EQ(t0.by_leading_cause[static_cast<std::size_t>(CauseKind::kThread)], t0.recorded);
  EXPECT_EQ(t0.without_cause, 0u);
  EXPECT_EQ(t1.without_cause, t1.recorded) << "evidence that showed nothing has no cause";
  EXPECT_EQ(t1.unexplained, 0u) << "it had evidence";
  // Paging returns the same records as Records(), in order, and nothing past the end.
  const std::vector<OutlierRecord> all = (*ex)->Records();
  ASSERT_EQ((*ex)->record_count(), all.size());
  const std::vector<OutlierRecord> page = (*ex)->Records(1, 2);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].window.task, all[1].window.task);
  EXPECT_EQ(page[0].window.cycle, all[1].window.cycle);
  EXPECT_EQ(page[1].window.cycle, all[2].window.cycle);
  EXPECT_EQ((*ex)->Records(3, 10).size(), 1u);
  EXPECT_TRUE((*ex)->Records(4, 10).empty());
  EXPECT_TRUE((*ex)->Records(0, 0).empty());
}

TEST(OutliersSummaryTest, ACountedCauseIsOneGroupWhateverItsCountsAndStealIsNamedOnce) {
  std::vector<OutlierRecord> records;
  for (std::uint64_t count : {5u, 9u, 7u}) {
    OutlierRecord r = MakeRecord(LatencyWindow(0, "t", 1, 1, count, 0, 200'000, 210'000));
    r.evidence = EvidenceKind::kCounters;
    r.causes.push_back({.kind = CauseKind::kIrq, .name = "LOC", .count = count, .detail = ""});
    FinishRecord(&r);
    records.push_back(r);
  }
  OutlierRecord steal = MakeRecord(LatencyWindow(0, "t", 1, 1, 10, 0, 300'000, 310'000));
  steal.evidence = EvidenceKind::kCounters;
  steal.causes.push_back(
      {.kind = CauseKind::kSteal, .name = "steal", .ns = 250'000, .count = 1, .detail = ""});
  FinishRecord(&steal);
  records.push_back(steal);
  ExplainerStats stats;
  stats.outliers = stats.recorded = records.size();
  const std::string text = OutliersSummary(records, stats, {.latency_above_ns = 100'000});
  EXPECT_NE(text.find("  3 cycles: irq LOC, counted up to 9x in a window\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  1 cycle: steal, up to 0.250 ms of the window\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("steal steal"), std::string::npos) << text;
}

TEST(ExplainerTest, ARealtimeClockTasksReleaseIsMovedOntoTheMonotonicClock) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  sources.emplace_back(new ScriptedSource(EvidenceKind::kTrace, ThreadRan));
  ExplainerConfig c = Config();
  c.tasks[0].clock = Clock::kRealtime;
  auto ex = Explainer::Start(c, sub, std::move(sources));
  ASSERT_TRUE(ex.ok());
  const std::int64_t mono = Now(Clock::kMonotonic).ns();
  const std::int64_t real = Now(Clock::kRealtime).ns();
  const std::vector<telemetry::Sample> samples = {MakeSample(1, real, 300'000)};
  sub->Offer(0, samples);
  (*ex)->Stop();
  const OutlierRecord r = (*ex)->Records().at(0);
  EXPECT_NEAR(static_cast<double>(r.window.release_ns), static_cast<double>(mono), 50e6)
      << "E_k on CLOCK_MONOTONIC, within the 50 ms between the two readings and Stop()";
}

TEST(ExplainerTest, BadConfigurationsNameTheField) {
  auto sub = std::make_shared<telemetry::Subscription>(telemetry::SubscriptionConfig{});
  auto start = [&](const ExplainerConfig& c, int sources) {
    std::vector<std::unique_ptr<EvidenceSource>> v;
    v.reserve(static_cast<std::size_t>(sources));
    for (int i = 0; i < sources; ++i)
      v.emplace_back(new ScriptedSource(EvidenceKind::kTrace, ThreadRan));
    return Explainer::Start(c, sub, std::move(v)).status().ToString();
  };
  EXPECT_NE(start(Config(), 0).find("no evidence source"), std::string::npos);
  ExplainerConfig c = Config();
  c.latency_above_ns = 0;
  EXPECT_NE(start(c, 1).find("latency_above_ns must be > 0"), std::string::npos);
  c = Config();
  c.tasks.clear();
  EXPECT_NE(start(c, 1).find("tasks is empty"), std::string::npos);
  c = Config();
  c.max_records = 0;
  EXPECT_NE(start(c, 1).find("max_records"), std::string::npos);
}

TEST(OutliersJsonTest, EveryFieldIsThereAndStringsAreEscaped) {
  OutlierRecord r = MakeRecord(LatencyWindow(0, "pos\"x", 12, -1, 3, 100, 600, 700));
  r.evidence = EvidenceKind::kTrace;
  Cause c;
  c.kind = CauseKind::kSoftirq;
  c.name = "NET_RX";
  c.ns = 200;
  c.count = 2;
  r.causes.push_back(c);
  r.raw = {"line\twith tab"};
  FinishRecord(&r);
  ExplainerStats s;
  s.outliers = 1;
  s.recorded = 1;
  s.from_counters = 0;
  const std::string json = OutliersJson({r}, s, {.latency_above_ns = 100});
  for (const char* want :
       {"\"version\":1", "\"latency_above_ns\":100", "\"task_name\":\"pos\\\"x\"", "\"cpu\":null",
        "\"outlier\":\"latency\"", "\"latency_ns\":500", "\"execution_ns\":100",
        "\"evidence\":\"trace\"", "\"kind\":\"softirq\"", "\"ns\":200", "\"id\":null",
        "\"explained_ns\":200", "\"unexplained_ns\":300", "\"line\\u0009with tab\"",
        "\"from_counters\":0"}) {
    EXPECT_NE(json.find(want), std::string::npos) << want << " in " << json;
  }
}

}  // namespace
}  // namespace rtloop::explain
