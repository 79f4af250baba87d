// Golden tests of rtloop-top's output (text dashboard and JSON snapshot) for a fixed snapshot.
// Set RTLOOP_UPDATE_GOLDEN=1 to rewrite the golden files after an intended format change.
#include "top_render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

using rtloop::testing::SourcePath;

namespace rtloop::telemetry::top {
namespace {

Snapshot FixedSnapshot() {
  Snapshot s;
  s.address = "127.0.0.1:50051";
  v1::SystemInfo* sys = s.system.mutable_system();
  sys->set_host_name("board");
  sys->set_kernel_release("6.1.0-rt");
  sys->set_kernel_version("#1 SMP PREEMPT_RT");
  sys->set_machine("aarch64");
  sys->set_preempt_model("rt");
  sys->set_realtime(true);
  for (int cpu : {0, 1, 2, 3}) sys->add_online_cpus(cpu);
  for (int cpu : {2, 3}) sys->add_isolated_cpus(cpu);
  for (int cpu : {0, 1}) sys->add_affinity_cpus(cpu);
  s.system.set_rtloop_version("0.1.0");
  s.system.set_process_start_unix_ns(1'700'000'000'000'000'000);
  s.system.set_cpu_dma_latency_us(0);
  s.system.set_server_address("127.0.0.1:50051");

  v1::TaskInfo* info = s.tasks.add_tasks();
  info->mutable_task()->set_id(0);
  info->mutable_task()->set_name("position");
  info->mutable_task()->set_period_ns(500'000);
  info->mutable_task()->set_policy(v1::SCHED_POLICY_FIFO);
  info->mutable_task()->set_priority(90);
  info->set_effective_policy(v1::SCHED_POLICY_FIFO);
  info->set_effective_priority(90);
  // Its execution-time watchdog tripped once and it keeps running (action continue).
  info->mutable_task()->set_watchdog_time_ns(400'000);
  info->mutable_task()->set_watchdog_sensitivity(2);
  info->mutable_task()->set_watchdog_action(v1::WATCHDOG_ACTION_CONTINUE);

  s.stats.set_monotonic_ns(123'456'789);
  s.stats.set_unix_time_ns(1'700'000'060'000'000'000);
  s.stats.set_open_streams(2);
  v1::TaskStats* t = s.stats.add_tasks();
  t->set_task_id(0);
  t->set_task_name("position");
  t->set_state(v1::TASK_STATE_RUNNING);
  t->set_cycles(120'000);
  v1::LatencyStats* lat = t->mutable_latency();
  lat->set_count(120'000);
  lat->set_min_ns(1'800);
  lat->set_max_ns(48'200);
  lat->set_avg_ns(3'412.5);
  for (auto [p, v] : {std::pair{50.0, 3'200},
                      {90.0, 4'100},
                      {99.0, 7'900},
                      {99.9, 12'000},
                      {99.99, 31'000},
                      {99.999, 47'000}}) {
    v1::Percentile* q = lat->add_percentiles();
    q->set_percentile(p);
    q->set_value_ns(v);
  }
  t->mutable_execution()->set_avg_ns(850.0);
  t->mutable_execution()->set_max_ns(4'100);
  t->set_jitter_min_ns(-9'000);
  t->set_jitter_max_ns(41'000);
  t->set_overruns(1);
  t->set_missed_releases(1);
  t->set_ring_dropped(0);
  t->set_faults(1);
  t->set_watchdog_violations(3);
  t->set_watchdog_trips(1);
  t->set_last_fault_reason(v1::FAULT_REASON_WATCHDOG);
  t->set_last_fault_cycle(1000);
  t->set_last_fault_time_ns(5'500'000'000);
  t->set_last_fault_since_start_ns(500'900'000);
  t->set_last_fault_execution_ns(900'000);
  t->set_last_fault_consecutive(2);
  t->set_last_fault_limit_ns(400'000);
  v1::StreamLoss* loss = s.stats.add_stream_loss();
  loss->set_task_id(0);
  loss->set_lost(17);
  v1::Histogram* h = s.stats.add_histograms();
  h->set_task_id(0);
  h->set_quantity(v1::QUANTITY_WAKEUP_LATENCY);
  for (auto [lo, n] :
       {std::pair{1'800, 40'000}, {3'000, 70'000}, {6'000, 9'000}, {15'000, 990}, {48'200, 10}}) {
    v1::HistogramBucket* b = h->add_buckets();
    b->set_lower_ns(lo);
    b->set_upper_ns(lo + 1);
    b->set_count(static_cast<std::uint64_t>(n));
  }
  return s;
}

void ExpectGolden(const std::string& actual, const std::string& name) {
  const std::string path = SourcePath("tests/top/data") + "/" + name;
  if (std::getenv("RTLOOP_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (RTLOOP_UPDATE_GOLDEN=1 writes it)";
  std::ostringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from " << path;
}

constexpr std::int64_t kNow = 1'700'000'060'000'000'000;

// FixedSnapshot() plus a task that has not run a cycle yet, and `extra` more running tasks.
Snapshot WithMoreTasks(int extra) {
  Snapshot s = FixedSnapshot();
  auto add = [&s](std::uint32_t id, const std::string& name, std::uint64_t cycles) {
    v1::TaskInfo* info = s.tasks.add_tasks();
    info->mutable_task()->set_id(id);
    info->mutable_task()->set_name(name);
    info->mutable_task()->set_period_ns(10'000'000);
    info->set_effective_policy(v1::SCHED_POLICY_OTHER);
    v1::TaskStats* t = s.stats.add_tasks();
    t->set_task_id(id);
    t->set_task_name(name);
    t->set_state(cycles == 0 ? v1::TASK_STATE_STARTING : v1::TASK_STATE_RUNNING);
    t->set_cycles(cycles);
    if (cycles > 0) {
      t->mutable_latency()->set_count(cycles);
      t->mutable_latency()->set_min_ns(20'000);
      t->mutable_latency()->set_max_ns(90'000);
      t->mutable_latency()->set_avg_ns(30'000);
    }
  };
  add(1, "supervisor", 0);
  for (int i = 0; i < extra; ++i)
    add(static_cast<std::uint32_t>(2 + i), "worker" + std::to_string(i), 7);
  return s;
}

TEST(TopRender, TextDashboardMatchesGolden) {
  ExpectGolden(RenderText(FixedSnapshot(), {.show_histograms = true, .now_unix_ns = kNow}),
               "top_text.golden");
}

TEST(TopRender, TaskWithoutCyclesShowsNoDataNeverZero) {
  const std::string text =
      RenderText(WithMoreTasks(0), {.show_histograms = false, .now_unix_ns = kNow});
  std::string row;
  for (std::size_t at = 0; (at = text.find('\n', at)) != std::string::npos; ++at) {
    const std::size_t start = text.rfind('\n', at - 1) + 1;
    if (text.compare(start, 5, "  1 s") == 0) row = text.substr(start, at - start);
  }
  ASSERT_FALSE(row.empty()) << text;
  EXPECT_NE(row.find("no data"), std::string::npos) << row;
  EXPECT_EQ(row.find("0.0"), std::string::npos) << row;
}

TEST(TopRender, FitsA100By30Terminal) {
  const std::string text =
      RenderText(WithMoreTasks(40), {.now_unix_ns = kNow, .width = 100, .height = 30});
  ExpectGolden(text, "top_text_100x30.golden");
}

TEST(TopRender, FitsA160By30Terminal) {
  const std::string text =
      RenderText(WithMoreTasks(3), {.now_unix_ns = kNow, .width = 160, .height = 30});
  ExpectGolden(text, "top_text_160x30.golden");
}

TEST(TopRender, EveryLineFitsAndTheHeaderStaysAtAnySize) {
  for (int width : {40, 60, 80, 100, 120, 160, 200}) {
    for (int height : {5, 10, 30, 60}) {
      const std::string text =
          RenderText(WithMoreTasks(60), {.now_unix_ns = kNow, .width = width, .height = height});
      int lines = 0;
      std::size_t start = 0;
      for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        EXPECT_LE(static_cast<int>(end - start), width) << width << "x" << height;
        ++lines;
      }
      EXPECT_LT(lines, height) << width << "x" << height;
      EXPECT_EQ(text.rfind("rtloop-top  ", 0), 0u) << width << "x" << height;
      if (height >= 10) {
        EXPECT_NE(text.find("NAME"), std::string::npos) << width << "x" << height;
        EXPECT_NE(text.find("LAT_MAX"), std::string::npos) << width << "x" << height;
        EXPECT_NE(text.find("more tasks"), std::string::npos) << width << "x" << height;
      }
    }
  }
}

// A name or system string is the server's bytes (valid UTF-8, but any characters): escape
// sequences and line breaks in it must not reach the terminal, and the name column cuts it on a
// character boundary.
TEST(TopRender, ControlCharactersFromTheServerNeverReachTheTerminal) {
  Snapshot s = FixedSnapshot();
  s.stats.mutable_tasks(0)->set_task_name("\x1b[2J\r\nmotor \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  s.system.mutable_system()->set_host_name("evil\x1b]0;title\x07");
  s.system.mutable_system()->set_preempt_model("rt\n");
  const std::string text = RenderText(s, {.show_histograms = true, .now_unix_ns = kNow});
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b[2J"), std::string::npos) << text;  // shown, escaped
  // "motors " is 7 bytes and each "é" 2: the 14-byte column ends inside the fourth é, which goes.
  s.stats.mutable_tasks(0)->set_task_name("motors \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  const std::string cut = RenderText(s, {.show_histograms = false, .now_unix_ns = kNow});
  EXPECT_NE(cut.find("motors \xc3\xa9\xc3\xa9\xc3\xa9 "), std::string::npos) << cut;
  EXPECT_EQ(cut.find("\xc3\xa9\xc3 "), std::string::npos) << "a character was cut: " << cut;
}

// FixedSnapshot() with outlier explanation: "position" explained (its last outlier's leading
// cause a thread, timed), and one task for each other case: explained without an outlier yet, a
// last outlier with a counted-only cause, one without evidence, one not explained.
Snapshot WithOutliers() {
  Snapshot s = WithMoreTasks(0);  // "supervisor": no cycle yet, not explained
  auto explained = [](v1::TaskStats* t, std::uint64_t outliers) {
    v1::TaskOutlierCounts* o = t->mutable_outliers();
    o->set_task_id(t->task_id());
    o->set_task_name(t->task_name());
    o->set_latency_above_ns(100'000);
    o->set_outliers(outliers);
    o->set_recorded(outliers);
    return o;
  };
  auto last = [](v1::TaskOutlierCounts* o, v1::EvidenceKind evidence) {
    v1::OutlierRecord* r = o->mutable_last();
    r->set_index(41);
    r->set_task_id(o->task_id());
    r->set_task_name(o->task_name());
    r->set_tid(812);
    r->set_cycle(1499);
    r->set_kind(v1::OUTLIER_KIND_LATENCY);
    r->set_release_ns(1'000'000'000);
    r->set_wake_ns(1'004'034'000);
    r->set_done_ns(1'004'040'000);
    r->set_latency_ns(4'034'000);
    r->set_execution_ns(6'000);
    r->set_evidence(evidence);
    return r;
  };
  v1::TaskOutlierCounts* pos = explained(s.stats.mutable_tasks(0), 7);
  v1::CauseKindCount* by = pos->add_by_leading_cause();
  by->set_kind(v1::CAUSE_KIND_THREAD);
  by->set_records(7);
  v1::OutlierRecord* r = last(pos, v1::EVIDENCE_KIND_TRACE);
  r->set_cpu(1);
  v1::OutlierCause* c = r->add_causes();
  c->set_kind(v1::CAUSE_KIND_THREAD);
  c->set_name("rtl-spinner");
  c->set_ns(3'994'000);
  c->set_count(1);
  c->set_id(30571);
  c->set_detail("FIFO 90");
  r->set_explained_ns(4'028'000);
  r->set_unexplained_ns(6'000);
  Snapshot more = WithMoreTasks(3);  // workers 0..2: ids 2..4
  for (int i = 2; i < 5; ++i) {
    *s.tasks.add_tasks() = more.tasks.tasks(i);
    *s.stats.add_tasks() = more.stats.tasks(i);
  }
  explained(s.stats.mutable_tasks(2), 0);  // worker0: explained, no outlier yet
  v1::OutlierRecord* counted =
      last(explained(s.stats.mutable_tasks(3), 2), v1::EVIDENCE_KIND_COUNTERS);  // worker1
  v1::OutlierCause* faults = counted->add_causes();
  faults->set_kind(v1::CAUSE_KIND_PAGE_FAULTS);
  faults->set_name("page faults");
  faults->set_count(30);  // counted only: no ns
  counted->set_unexplained_ns(4'034'000);
  last(explained(s.stats.mutable_tasks(4), 1), v1::EVIDENCE_KIND_NONE)  // worker2
      ->set_unexplained_ns(4'034'000);
  return s;
}

TEST(TopRender, OutliersShowTheLastLeadingCauseAndADashWhenNotExplained) {
  const Snapshot s = WithOutliers();
  const std::string text = RenderText(s, {.show_histograms = false, .now_unix_ns = kNow});
  ExpectGolden(text, "top_text_outliers.golden");
  ExpectGolden(
      RenderText(s, {.show_histograms = false, .now_unix_ns = kNow, .width = 100, .height = 30}),
      "top_text_outliers_100x30.golden");
  EXPECT_NE(text.find("thread rtl-spinner 4.0ms"), std::string::npos) << text;
  EXPECT_NE(text.find("page-faults x30"), std::string::npos) << text;
  EXPECT_NE(text.find("no evidence"), std::string::npos) << text;
  EXPECT_NE(text.find("none"), std::string::npos) << text;
  // Nothing explained: no outlier columns at all (the other goldens hold that too).
  const std::string plain = RenderText(FixedSnapshot(), {.now_unix_ns = kNow});
  EXPECT_EQ(plain.find("OUTL"), std::string::npos) << plain;
}

TEST(TopRender, JsonCarriesTheOutliersAndNullWhenNotExplained) {
  const std::string json = RenderJson(WithOutliers());
  ExpectGolden(json, "top_json_outliers.golden");
  // supervisor (task 1) is not explained: null, never a zero count.
  EXPECT_NE(json.find("\"outliers\":null"), std::string::npos) << json;
  // The counted-only cause's time and the unpinned CPU are null, not 0.
  // (The printer puts a oneof's field after the others.)
  EXPECT_NE(json.find("\"name\":\"page faults\",\"count\":\"30\",\"detail\":\"\",\"ns\":null"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cycle\":\"1499\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cpu\":null"), std::string::npos) << json;
}

TEST(TopRender, JsonSnapshotMatchesGolden) {
  ExpectGolden(RenderJson(FixedSnapshot()), "top_json.golden");
}

TEST(TopRender, LatencyBinsCountEveryValueOnce) {
  const Snapshot s = FixedSnapshot();
  const std::vector<LatencyBin> bins = BinLatency(s.stats.histograms(0));
  ASSERT_EQ(bins.size(), std::size(kBinEdgesUs) + 1);
  std::uint64_t total = 0;
  for (const LatencyBin& b : bins) total += b.count;
  EXPECT_EQ(total, 120'000u);
  EXPECT_EQ(bins[0].count, 110'000u);  // < 5 µs
  EXPECT_EQ(bins[1].count, 9'000u);    // < 10 µs
  EXPECT_EQ(bins[2].count, 990u);      // < 20 µs
  EXPECT_EQ(bins[3].count, 10u);       // < 50 µs
}

}  // namespace
}  // namespace rtloop::telemetry::top
