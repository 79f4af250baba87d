#include "rtloop/telemetry/windowed_stats.h"

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MakeCycle;
using testing::MakeTaskConfig;

constexpr HistogramLayout kDefault;  // the hub's unless a test says otherwise

// A hub with one task (id 0) that a test feeds cycle by cycle.
class WindowedStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hub_.AddTask(0, MakeTaskConfig("t")).ok());
    hub_.OnRtThreadStart(0);
  }
  void Record(std::int64_t latency_ns, std::int64_t execution_ns = 1000) {
    hub_.OnCycle(MakeCycle(0, seq_++, latency_ns, execution_ns));
  }
  static std::int64_t Width(std::int64_t v) {
    const std::size_t i = kDefault.BucketIndex(v);
    return kDefault.BucketUpper(i) - kDefault.BucketLower(i);
  }

  TelemetryHub hub_;
  std::uint64_t seq_ = 0;
};

TEST_F(WindowedStatsTest, FirstTickOnlySetsTheBaseline) {
  WindowedStats w(hub_);
  for (int i = 0; i < 100; ++i) Record(5000);
  w.Tick();
  EXPECT_FALSE(w.Window(0).latency.valid);
  EXPECT_EQ(w.Window(0).latency.count, 0u);
  EXPECT_TRUE(w.History(0).empty());
}

// Issue 19: a statistics reset (the task's reset count changes) restarts the window at the next
// tick, that tick's values (from before the reset) included; the all-time reading and the history
// are kept, and the reading carries the counters read with the histograms.
TEST_F(WindowedStatsTest, AResetRestartsTheWindowAndKeepsTheReadingAndTheHistory) {
  TaskStats stats;
  const testing::OneTaskStats reader(stats);
  hub_.AttachStats(reader);
  WindowedStats w(hub_);
  w.Tick();
  for (int i = 0; i < 10; ++i) {
    stats.Record(9000, 1000, 0, i == 0, false, 0);
    Record(9000);
  }
  w.Tick();
  ASSERT_EQ(w.Window(0).latency.count, 10u);
  EXPECT_EQ(w.Reading(0).stats.cycles, 10u);
  EXPECT_EQ(w.Reading(0).latency.total.count, 10u);
  stats.RequestReset();
  for (int i = 0; i < 3; ++i) Record(9000);  // recorded before the reset reached the RT thread
  w.Tick();
  EXPECT_FALSE(w.Window(0).latency.valid) << "the window restarts empty";
  EXPECT_EQ(w.Window(0).latency.count, 0u);
  EXPECT_EQ(w.Reading(0).latency.total.count, 13u) << "the all-time reading is kept";
  EXPECT_EQ(w.History(0).size(), 2u) << "and so is the history";
  for (int i = 0; i < 4; ++i) Record(1500);
  w.Tick();
  EXPECT_EQ(w.Window(0).latency.count, 4u);
  EXPECT_EQ(w.Window(0).latency.max_ns, 1500);
}

TEST_F(WindowedStatsTest, EachTickHoldsExactlyTheValuesRecordedSinceThePreviousOne) {
  WindowedStats w(hub_);
  for (int i = 0; i < 50; ++i) Record(9'999'999);  // before the baseline: in no tick
  w.Tick();
  for (int i = 0; i < 100; ++i) Record(1000 + i, 300);
  w.Tick();
  for (int i = 0; i < 7; ++i) Record(1500, 200);
  w.Tick();
  w.Tick();  // nothing recorded
  const std::vector<SecondStats> h = w.History(0);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].latency_count, 100u);
  EXPECT_EQ(h[0].latency_max_ns, 1099);  // below 2048 ns: exact
  EXPECT_EQ(h[0].latency_p99_ns, 1098);  // rank 99 of 1000..1099
  EXPECT_EQ(h[0].execution_count, 100u);
  EXPECT_EQ(h[0].execution_max_ns, 300);
  EXPECT_EQ(h[1].latency_count, 7u);
  EXPECT_EQ(h[1].latency_max_ns, 1500);
  EXPECT_EQ(h[1].execution_max_ns, 200);
  EXPECT_EQ(h[2].latency_count, 0u);
  EXPECT_LE(h[0].unix_ms, h[1].unix_ms);
  const TaskWindow tw = w.Window(0);
  EXPECT_TRUE(tw.latency.valid);
  EXPECT_EQ(tw.latency.count, 107u);  // the 50 before the baseline are not in it
  EXPECT_EQ(tw.latency.sum_ns, (1000 + 1099) * 50 + 7 * 1500);
  EXPECT_EQ(tw.latency.max_ns, 1500);
}

TEST_F(WindowedStatsTest, WindowForgetsTicksOlderThanItsLength) {
  WindowedStats w(hub_, {.window = seconds(3), .history = seconds(60), .tick = milliseconds(1000)});
  w.Tick();
  Record(1'000'000);  // a 1 ms spike
  w.Tick();
  EXPECT_EQ(w.Window(0).latency.max_ns, 1'000'000);  // raised the all-time max: exact
  for (int t = 0; t < 3; ++t) {
    Record(1000);
    w.Tick();
  }
  const TaskWindow tw = w.Window(0);
  EXPECT_EQ(tw.latency.count, 3u);
  EXPECT_EQ(tw.latency.max_ns, 1000);
  EXPECT_GT(tw.span.count(), 0);
  EXPECT_EQ(w.History(0).size(), 4u);  // the history keeps the spike
  EXPECT_EQ(w.History(0, 2).size(), 2u);
  EXPECT_EQ(w.History(0).front().latency_max_ns, 1'000'000);
}

TEST_F(WindowedStatsTest, MaxBelowTheAllTimeMaxIsTheTopOfItsBucketAtMostABucketAbove) {
  WindowedStats w(hub_);
  w.Tick();
  Record(1'000'000);
  w.Tick();
  Record(999'000);  // not a new all-time max: only its bucket is known
  w.Tick();
  const std::int64_t reported = w.History(0).back().latency_max_ns;
  const std::size_t i = kDefault.BucketIndex(999'000);
  EXPECT_EQ(reported, kDefault.BucketUpper(i) - 1);
  EXPECT_GE(reported, 999'000);
  EXPECT_LE(static_cast<double>(reported - 999'000), 999'000 * kDefault.max_relative_error());
}

TEST_F(WindowedStatsTest, WindowPercentilesMatchAHistogramOfTheSameValuesWithinABucket) {
  WindowedStats w(hub_, {.window = seconds(4), .history = seconds(60), .tick = milliseconds(1000)});
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.0, 1.0);  // median ~22 us, a long tail
  w.Tick();
  LatencyHistogram reference;  // the values of the last 4 ticks
  std::vector<std::vector<std::int64_t>> ticks;
  for (int t = 0; t < 6; ++t) {
    ticks.emplace_back();
    for (int i = 0; i < 20'000; ++i) {
      const auto v = static_cast<std::int64_t>(dist(rng));
      ticks.back().push_back(v);
      Record(v);
    }
    w.Tick();
  }
  std::int64_t max = 0;
  for (std::size_t t = 2; t < ticks.size(); ++t) {
    for (const std::int64_t v : ticks[t]) {
      reference.Record(v);
      max = std::max(max, v);
    }
  }
  const TaskWindow tw = w.Window(0);
  EXPECT_EQ(tw.latency.count, 80'000u);
  const std::pair<std::int64_t, double> cases[] = {
      {tw.latency.p99_ns, 99.0}, {tw.latency.p99_9_ns, 99.9}, {tw.latency.p99_99_ns, 99.99}};
  for (const auto& [got, p] : cases) {
    const std::int64_t want = reference.ValueAtPercentile(p);
    EXPECT_LE(std::abs(got - want), Width(want)) << "p" << p;
  }
  EXPECT_GE(tw.latency.max_ns, max);
  EXPECT_LE(tw.latency.max_ns - max, Width(max));
}

TEST_F(WindowedStatsTest, EarlyWakeUpsAreCountedAndReportTheirMean) {
  WindowedStats w(hub_);
  w.Tick();
  for (int i = 0; i < 10; ++i) Record(-300);
  for (int i = 0; i < 90; ++i) Record(500);
  w.Tick();
  const TaskWindow tw = w.Window(0);
  EXPECT_EQ(tw.latency.count, 100u);
  EXPECT_EQ(tw.latency.max_ns, 500);
  EXPECT_EQ(tw.latency.p99_ns, 500);
  w.Tick();
  for (int i = 0; i < 5; ++i) Record(-200);
  w.Tick();
  EXPECT_EQ(w.History(0).back().latency_count, 5u);
  EXPECT_EQ(w.History(0).back().latency_p99_ns, -200);
  EXPECT_EQ(w.History(0).back().latency_max_ns, -1);  // an upper bound: every value was < 0
}

TEST_F(WindowedStatsTest, HistoryIsBoundedAndOldestFirst) {
  WindowedStats w(hub_, {.window = seconds(2), .history = seconds(5), .tick = milliseconds(1000)});
  w.Tick();
  for (int t = 0; t < 8; ++t) {
    Record(100 + t);
    w.Tick();
  }
  const std::vector<SecondStats> h = w.History(0);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h.front().latency_max_ns, 103);
  EXPECT_EQ(h.back().latency_max_ns, 107);
  EXPECT_EQ(w.Window(0).latency.count, 2u);
}

TEST_F(WindowedStatsTest, TaskAddedLaterIsPickedUpAndUnknownTasksAreEmpty) {
  WindowedStats w(hub_);
  w.Tick();
  ASSERT_TRUE(hub_.AddTask(5, MakeTaskConfig("late")).ok());
  hub_.OnRtThreadStart(5);
  w.Tick();
  hub_.OnCycle(MakeCycle(5, 0, 4000, 100));
  w.Tick();
  EXPECT_EQ(w.Window(5).latency.count, 1u);
  EXPECT_EQ(w.Window(5).id, 5u);
  EXPECT_FALSE(w.Window(9).latency.valid);
  EXPECT_TRUE(w.History(9).empty());
}

TEST_F(WindowedStatsTest, ReadingHoldsTheSinceStartHistogramOfTheLastTick) {
  WindowedStats w(hub_);
  EXPECT_FALSE(w.Reading(0).valid);
  for (int i = 0; i < 1000; ++i) Record(1000 + i, 50);
  Record(-20, 50);
  w.Tick();  // the baseline reading is a reading too
  TaskReading r = w.Reading(0, /*with_buckets=*/true);
  ASSERT_TRUE(r.valid);
  EXPECT_GT(r.unix_ms, 0);
  const HistogramSummary want = hub_.task(0)->latency().Summary();
  EXPECT_EQ(r.latency.total.count, want.count);
  EXPECT_EQ(r.latency.total.max_ns, want.max_ns);
  EXPECT_EQ(r.latency.total.p99_ns, want.percentiles.p99_ns);
  EXPECT_EQ(r.latency.total.p99_9_ns, want.percentiles.p99_9_ns);
  EXPECT_EQ(r.latency.total.sum_ns, want.sum_ns);
  std::vector<HistogramBucket> buckets;
  hub_.task(0)->latency().ExportBuckets(&buckets);
  ASSERT_EQ(r.latency.buckets.size(), buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(r.latency.buckets[i].lower_ns, buckets[i].lower_ns);
    EXPECT_EQ(r.latency.buckets[i].upper_ns, buckets[i].upper_ns);
    EXPECT_EQ(r.latency.buckets[i].count, buckets[i].count);
  }
  EXPECT_EQ(r.execution.total.max_ns, 50);
  EXPECT_TRUE(w.Reading(0).latency.buckets.empty());
  Record(5000);  // not in the reading until the next tick
  EXPECT_EQ(w.Reading(0).latency.total.count, 1001u);
  w.Tick();
  EXPECT_EQ(w.Reading(0).latency.total.count, 1002u);
  EXPECT_EQ(w.Reading(0).latency.total.max_ns, 5000);
}

// Bins are counted from the reading kept between ticks (updated in place each tick): every value
// once, in the first bin whose bound its bucket's every value is at or below.
TEST_F(WindowedStatsTest, BinsCountEveryValueOnceInTheFirstBinThatHoldsIt) {
  WindowedStats w(hub_);
  const std::vector<std::int64_t> bounds = {999, 1000, 5000, 1'000'000};
  std::vector<std::int64_t> values = {-20, 0, 999, 1000, 1001, 4999, 5000, 5003, 999'999};
  const auto expected = [&bounds](const std::vector<std::int64_t>& vs) {
    std::vector<std::uint64_t> bins(bounds.size() + 1, 0);
    for (const std::int64_t v : vs) {
      std::size_t b = bounds.size();
      if (v < 0) {
        b = 0;
      } else if (v < kDefault.max_trackable()) {
        const std::int64_t top = kDefault.BucketUpper(kDefault.BucketIndex(v)) - 1;
        for (b = 0; b < bounds.size() && top > bounds[b]; ++b) {
        }
      }
      ++bins[b];
    }
    return bins;
  };
  for (const std::int64_t v : values) Record(v);
  w.Tick();
  EXPECT_EQ(w.Reading(0, false, bounds).latency.bins, expected(values));
  // New buckets below, between and above the first ones, and beyond the buckets.
  const std::vector<std::int64_t> more = {-5,     3,         2500,
                                          70'000, 2'000'000, kDefault.max_trackable() + 5};
  for (const std::int64_t v : more) {
    Record(v);
    values.push_back(v);
  }
  w.Tick();
  const TaskReading r = w.Reading(0, true, bounds);
  EXPECT_EQ(r.latency.bins, expected(values));
  std::vector<HistogramBucket> buckets;
  hub_.task(0)->latency().ExportBuckets(&buckets);
  ASSERT_EQ(r.latency.buckets.size(), buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(r.latency.buckets[i].lower_ns, buckets[i].lower_ns) << i;
    EXPECT_EQ(r.latency.buckets[i].count, buckets[i].count) << i;
  }
}

// The soak test's finding: a task whose latency tail keeps reaching buckets it never used before
// must not make the statistics' memory grow (the previous reading was a sparse copy rebuilt every
// second, which grew with every new bucket). With the window and the history full, 40 ticks that
// each reach 300 new buckets leave the heap in use where it was (a sparse reading would have grown
// by 40 * 300 * 24 bytes = 288 KB).
TEST_F(WindowedStatsTest, MemoryDoesNotGrowAsValuesReachNewBuckets) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "needs glibc's mallinfo2 (a sanitizer's allocator does not report it)";
#else
  WindowedStats w(hub_, {.window = seconds(10), .history = seconds(10), .tick = seconds(1)});
  std::int64_t next = 3000;  // exact below 2048; above, each value in a bucket of its own
  const auto tick_reaching_new_buckets = [&] {
    for (int i = 0; i < 300; ++i) {
      Record(next);
      next += Width(next);
    }
    w.Tick();
  };
  for (int i = 0; i < 15; ++i) tick_reaching_new_buckets();  // window and history full
  const std::size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 40; ++i) tick_reaching_new_buckets();
  const std::size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + 16'384) << "heap in use " << before << " -> " << after << " bytes";
  EXPECT_EQ(w.Reading(0).latency.total.count, 55u * 300u);
#endif
}

// Issue 18 §4: with a hub of a small histogram layout (7 bits, 2^30 ns), the readings, bins,
// windows and history follow its buckets, at and beyond the top of its range.
TEST(WindowedStatsLayoutTest, ReadingsBinsAndWindowsFollowTheHubsLayoutAtTheEdgesOfItsRange) {
  const Result<HistogramLayout> small =
      HistogramLayout::Create({.precision_bits = 7, .range_bits = 30});
  ASSERT_TRUE(small.ok());
  TelemetryHub hub({.histogram_layout = *small});
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("t")).ok());
  hub.OnRtThreadStart(0);
  std::uint64_t seq = 0;
  const auto record = [&](std::int64_t v) { hub.OnCycle(MakeCycle(0, seq++, v, 1000)); };
  WindowedStats w(hub);
  EXPECT_EQ(w.layout(), *small);
  w.Tick();  // the baseline
  constexpr std::int64_t kTop = std::int64_t{1} << 30;
  for (const std::int64_t v : {std::int64_t{-10}, std::int64_t{255}, std::int64_t{300}, kTop - 1}) {
    record(v);
  }
  w.Tick();
  EXPECT_EQ(w.Window(0).latency.count, 4u);
  EXPECT_EQ(w.Window(0).latency.max_ns, kTop - 1);  // raised the all-time max: exact
  record(kTop);                                     // the first value beyond the range
  record(1'500'000'000);                            // 1.5 s: overflow, the all-time max
  w.Tick();
  TaskWindow tw = w.Window(0);
  EXPECT_EQ(tw.latency.count, 6u);
  EXPECT_EQ(tw.latency.max_ns, 1'500'000'000);
  EXPECT_EQ(tw.latency.p99_ns, 1'500'000'000);  // a rank among the overflow: the max
  ASSERT_EQ(w.History(0).size(), 2u);
  EXPECT_EQ(w.History(0).back().latency_count, 2u);
  EXPECT_EQ(w.History(0).back().latency_max_ns, 1'500'000'000);
  // A second whose max is not the all-time max: the top of its bucket in this layout.
  record(300'000'000);
  w.Tick();
  const std::int64_t reported = w.History(0).back().latency_max_ns;
  EXPECT_EQ(reported, small->BucketUpper(small->BucketIndex(300'000'000)) - 1);
  EXPECT_GE(reported, 300'000'000);
  EXPECT_LE(static_cast<double>(reported - 300'000'000), 300'000'000 * small->max_relative_error());
  EXPECT_EQ(w.Window(0).latency.count, 7u);
  // The reading's buckets are the hub's, bounds from the layout, overflow from 2^30 on.
  const std::vector<std::int64_t> bounds = {255, 1'000'000'000, 2'000'000'000};
  const TaskReading r = w.Reading(0, true, bounds);
  std::vector<HistogramBucket> hub_buckets;
  hub.task(0)->latency().ExportBuckets(&hub_buckets);
  ASSERT_EQ(r.latency.buckets.size(), 6u);  // negatives, 255, 300, 3e8, the top bucket, overflow
  ASSERT_EQ(hub_buckets.size(), r.latency.buckets.size());
  for (std::size_t i = 0; i < hub_buckets.size(); ++i) {
    EXPECT_EQ(r.latency.buckets[i].lower_ns, hub_buckets[i].lower_ns) << i;
    EXPECT_EQ(r.latency.buckets[i].upper_ns, hub_buckets[i].upper_ns) << i;
    EXPECT_EQ(r.latency.buckets[i].count, hub_buckets[i].count) << i;
  }
  EXPECT_EQ(r.latency.buckets[2].upper_ns, 302);  // 2 ns wide above 2^8
  EXPECT_EQ(r.latency.buckets[4].lower_ns, kTop - (kTop >> 8));
  EXPECT_EQ(r.latency.buckets[4].upper_ns, kTop);
  EXPECT_EQ(r.latency.buckets[5].lower_ns, kTop);
  EXPECT_EQ(r.latency.buckets[5].upper_ns, 1'500'000'001);
  EXPECT_EQ(r.latency.buckets[5].count, 2u);
  EXPECT_EQ(r.latency.total.max_ns, 1'500'000'000);
  // Bins: le 255 takes -10 and 255; le 1e9 takes 300 and 3e8; le 2e9 takes the top bucket (up to
  // 2^30 - 1 > 1e9) and the overflow, whose max (1.5 s) is <= 2 s; nothing is left above.
  EXPECT_EQ(r.latency.bins, (std::vector<std::uint64_t>{2, 2, 3, 0}));
  // A bound below the max leaves the overflow above every bound.
  const std::vector<std::int64_t> low = {1'000'000'000};
  EXPECT_EQ(w.Reading(0, false, low).latency.bins, (std::vector<std::uint64_t>{4, 3}));
}

TEST(WindowedStatsConfigTest, ValidateNamesTheFieldOutOfRange) {
  using C = WindowedStatsConfig;
  EXPECT_TRUE(WindowedStats::Validate(C{}).ok());
  const std::pair<C, const char*> bad[] = {
      {C{.window = seconds(0)}, "window"},
      {C{.window = seconds(20), .history = seconds(10)}, "history"},
      {C{.history = seconds(100000)}, "history"},
      {C{.tick = milliseconds(1)}, "tick"},
      {C{.window = seconds(1), .tick = milliseconds(2000)}, "window"},
  };
  for (const auto& [config, field] : bad) {
    const Status s = WindowedStats::Validate(config);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.message().find(std::string("WindowedStatsConfig.") + field), std::string::npos)
        << s.message();
  }
  TelemetryHub hub;
  WindowedStats w(hub, C{.tick = milliseconds(1)});
  EXPECT_EQ(w.Start().code(), StatusCode::kInvalidArgument);
}

TEST_F(WindowedStatsTest, StartTicksOnItsOwnThreadUntilStopped) {
  WindowedStats w(hub_, {.window = seconds(1), .history = seconds(60), .tick = milliseconds(20)});
  ASSERT_TRUE(w.Start().ok());
  EXPECT_EQ(w.Start().code(), StatusCode::kFailedPrecondition);
  Record(777);
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (w.Window(0).latency.count == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(w.Window(0).latency.max_ns, 777);
  w.Stop();
  const std::uint64_t ticks = w.ticks();
  std::this_thread::sleep_for(milliseconds(60));
  EXPECT_EQ(w.ticks(), ticks);
  w.Stop();  // idempotent
}

}  // namespace
}  // namespace rtloop::telemetry
