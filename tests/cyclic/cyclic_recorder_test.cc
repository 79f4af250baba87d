#include "cyclic_recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/executor.h"

namespace rtloop::cyclic {
namespace {

using std::chrono::nanoseconds;

static_assert(
    noexcept(std::declval<CyclicRecorder&>().OnCycle(std::declval<const CycleSample&>())));
static_assert(noexcept(CyclicRecorder::Diff(TimePoint(), 0, false)));
static_assert(noexcept(std::declval<const CyclicRecorder&>().Snapshot()));
static_assert(noexcept(std::declval<BreakLatch&>().TryTrip(1, 2)));

// A sample released at `release_ns` that woke `latency_ns` later.
CycleSample Sample(std::int64_t release_ns, std::int64_t latency_ns, std::uint64_t seq = 0) {
  CycleSample s;
  s.seq = seq;
  s.release = TimePoint(nanoseconds(release_ns));
  s.wakeup_latency_ns = latency_ns;
  s.execution_ns = 500;
  return s;
}

// Feeds latencies (us) on a 1 ms grid that never crosses a second boundary mid-sample.
void FeedUs(CyclicRecorder& rec, const std::vector<std::int64_t>& latencies_us) {
  std::int64_t t = 1'000'000'000;
  for (std::int64_t us : latencies_us) {
    rec.OnCycle(Sample(t, us * 1000));
    t += 1'000'000;
  }
}

std::unique_ptr<CyclicRecorder> Make(const RecorderConfig& config) {
  Result<std::unique_ptr<CyclicRecorder>> rec = CyclicRecorder::Create(config);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return std::move(rec).value();
}

TEST(CyclicRecorderDiff, TruncatesTheNanosecondPartLikeCalcdiff) {
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'000'000'000)), 1'999, false), 1);
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'000'000'500)), 900, false), 0);
  // Across a second boundary calcdiff subtracts the ns parts first: 900 ns late counts as 1 us.
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'999'999'500)), 900, false), 1);
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'999'999'500)), 900, true), 900);
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'000'000'000)), 2'500'000'123, false),
            2'500'000);
  EXPECT_EQ(CyclicRecorder::Diff(TimePoint(nanoseconds(5'000'000'000)), 2'500'000'123, true),
            2'500'000'123);
}

TEST(CyclicRecorder, StartsWithCyclictestsInitialValues) {
  auto rec = Make({});
  const RecorderSnapshot s = rec->Snapshot();
  EXPECT_EQ(s.cycles, 0u);
  EXPECT_EQ(s.min, 1000000);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.act, 0);
  ThreadReport r;
  rec->FillReport(r);
  EXPECT_EQ(r.min, 1000000);
  EXPECT_TRUE(r.histogram.empty());
}

TEST(CyclicRecorder, KeepsMinMaxActAndADoubleSum) {
  auto rec = Make({});
  FeedUs(*rec, {20, 12, 35, 17});
  const RecorderSnapshot s = rec->Snapshot();
  EXPECT_EQ(s.cycles, 4u);
  EXPECT_EQ(s.min, 12);
  EXPECT_EQ(s.max, 35);
  EXPECT_EQ(s.act, 17);
  EXPECT_DOUBLE_EQ(s.avg_sum, 84.0);
  ThreadReport r;
  rec->FillReport(r);
  EXPECT_EQ(r.TruncatedAvg(), 21);
  EXPECT_EQ(r.execution_min_ns, 500);
  EXPECT_DOUBLE_EQ(r.execution_avg_ns, 500.0);
}

TEST(CyclicRecorder, MinKeepsTheInitialMillionWhenEverySampleIsLarger) {
  RecorderConfig c;
  c.nsecs = true;  // cyclictest's quirk: with -N, samples over 1 ms never lower min
  auto rec = Make(c);
  rec->OnCycle(Sample(1'000'000'000, 1'500'000));
  EXPECT_EQ(rec->Snapshot().min, 1000000);
  EXPECT_EQ(rec->Snapshot().max, 1'500'000);
}

TEST(CyclicRecorder, HistogramCountsBucketsAndListsAtMostBucketsOverflowCycles) {
  RecorderConfig c;
  c.histogram_buckets = 3;
  auto rec = Make(c);
  FeedUs(*rec, {0, 2, 3, 2, 7, 9, 1, 5, 4});
  rec->OnCycle(
      Sample(2'000'000'000, -1000));  // negative: an overflow, as cyclictest's unsigned diff
  ThreadReport r;
  rec->FillReport(r);
  EXPECT_EQ(r.histogram, (std::vector<std::uint64_t>{1, 1, 2}));
  EXPECT_EQ(r.histogram_overflows, 6u);
  EXPECT_EQ(r.overflow_cycles, (std::vector<std::uint64_t>{2, 4, 5}));
  EXPECT_EQ(r.cycles, 10u);
}

TEST(CyclicRecorder, NanosecondHistogramUsesOneNanosecondBuckets) {
  RecorderConfig c;
  c.nsecs = true;
  c.histogram_buckets = 1000;
  auto rec = Make(c);
  rec->OnCycle(Sample(1'000'000'000, 999));
  rec->OnCycle(Sample(1'001'000'000, 1000));
  ThreadReport r;
  rec->FillReport(r);
  EXPECT_EQ(r.histogram[999], 1u);
  EXPECT_EQ(r.histogram_overflows, 1u);
}

TEST(CyclicRecorder, WarmupCyclesAreCountedButExcludedFromStatistics) {
  RecorderConfig c;
  c.warmup_cycles = 2;
  c.histogram_buckets = 100;
  c.verbose = true;
  auto rec = Make(c);
  FeedUs(*rec, {900, 800, 10, 20});
  const RecorderSnapshot s = rec->Snapshot();
  EXPECT_EQ(s.warmup_cycles, 2u);
  EXPECT_EQ(s.cycles, 2u);
  EXPECT_EQ(s.max, 20);
  EXPECT_EQ(s.histogram_overflows, 0u);
  std::vector<std::pair<std::uint64_t, std::int64_t>> got;
  rec->DrainValues([&](std::uint64_t cycle, std::int64_t v) { got.emplace_back(cycle, v); });
  EXPECT_EQ(got, (std::vector<std::pair<std::uint64_t, std::int64_t>>{{0, 10}, {1, 20}}));
}

TEST(CyclicRecorder, VerboseRingDeliversEverySampleOnceInOrder) {
  RecorderConfig c;
  c.verbose = true;
  auto rec = Make(c);
  FeedUs(*rec, {5, 6, 7});
  std::vector<std::int64_t> got;
  EXPECT_EQ(rec->DrainValues([&](std::uint64_t, std::int64_t v) { got.push_back(v); }), 3u);
  FeedUs(*rec, {8});
  EXPECT_EQ(rec->DrainValues([&](std::uint64_t, std::int64_t v) { got.push_back(v); }), 1u);
  EXPECT_EQ(got, (std::vector<std::int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(rec->verbose_drops(), 0u);
}

TEST(CyclicRecorder, VerboseRingCountsSamplesOverwrittenBeforeTheyWereRead) {
  RecorderConfig c;
  c.verbose = true;
  auto rec = Make(c);
  const std::size_t n = CyclicRecorder::kValueRingSize + 100;
  for (std::size_t i = 0; i < n; ++i) {
    rec->OnCycle(Sample(1'000'000'000 + static_cast<std::int64_t>(i) * 1'000'000,
                        static_cast<std::int64_t>(i % 1000) * 1000));
  }
  std::uint64_t first = 0, count = 0;
  bool ok = true;
  rec->DrainValues([&](std::uint64_t cycle, std::int64_t v) {
    if (count++ == 0) first = cycle;
    ok = ok && v == static_cast<std::int64_t>(cycle % 1000);
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(first + count, n);
  EXPECT_EQ(rec->verbose_drops() + count, n);
  EXPECT_EQ(count, CyclicRecorder::kValueRingSize - 1);
}

TEST(CyclicRecorder, SpikesAreRecordedUpToTheNodeCountAndAllCounted) {
  RecorderConfig c;
  c.index = 3;
  c.spike_threshold = 20;
  c.spike_nodes = 2;
  auto rec = Make(c);
  FeedUs(*rec, {10, 20, 25, 30, 40});
  EXPECT_EQ(rec->Snapshot().spikes, 3u);
  const std::vector<SpikeEvent> spikes = rec->Spikes();
  ASSERT_EQ(spikes.size(), 2u);
  EXPECT_EQ(spikes[0].thread, 3);
  EXPECT_EQ(spikes[0].value, 25);
  // The wake-up time in us: release 1.002 s + 25 us.
  EXPECT_EQ(spikes[0].ts_us, 1'002'025);
  EXPECT_EQ(spikes[1].value, 30);
}

TEST(CyclicRecorder, BreakLatchKeepsTheFirstThreadOverTheLimit) {
  BreakLatch latch;
  RecorderConfig c;
  c.break_threshold = 15;
  c.break_latch = &latch;
  auto a = Make(c);
  c.index = 1;
  auto b = Make(c);
  FeedUs(*a, {10, 15});
  EXPECT_FALSE(latch.hit());
  EXPECT_FALSE(latch.Get().hit);
  FeedUs(*b, {29});
  FeedUs(*a, {40});
  ASSERT_TRUE(latch.hit());
  const BreakTrace trace = latch.Get();
  EXPECT_EQ(trace.value, 29);
  EXPECT_EQ(a->Snapshot().max, 40);  // measuring goes on until the runner stops the run
}

TEST(CyclicRecorder, PercentilesComeFromTheNanosecondLatencyAfterWarmup) {
  RecorderConfig c;
  c.warmup_cycles = 1;
  auto rec = Make(c);
  EXPECT_FALSE(rec->Percentiles().valid);
  std::vector<std::int64_t> us = {5000};  // warm-up: excluded
  for (int i = 1; i <= 1000; ++i) us.push_back(i);
  FeedUs(*rec, us);
  ThreadReport r;
  rec->FillReport(r);
  ASSERT_TRUE(r.percentiles.valid);
  EXPECT_NEAR(static_cast<double>(r.percentiles.p50_ns), 500'000.0, 500'000.0 / 1024 + 1000);
  EXPECT_NEAR(static_cast<double>(r.percentiles.p99_ns), 990'000.0, 990'000.0 / 1024 + 1000);
  EXPECT_EQ(r.percentiles.max_ns, 1'000'000);
  EXPECT_LE(r.percentiles.p99_999_ns, r.percentiles.max_ns);
  EXPECT_EQ(rec->LatencyAtPercentile(50.0), r.percentiles.p50_ns);

  c.track_percentiles = false;
  auto off = Make(c);
  FeedUs(*off, us);
  EXPECT_FALSE(off->Percentiles().valid);
  EXPECT_EQ(off->LatencyAtPercentile(99.0), 0);
}

TEST(CyclicRecorder, NewMaxCountSignalsEachNewMaximum) {
  auto rec = Make({});
  FeedUs(*rec, {5, 3, 6, 6, 9});
  EXPECT_EQ(rec->new_max_count(), 3u);
}

TEST(CyclicRecorder, CountsOverrunsAndMissedReleases) {
  auto rec = Make({});
  CycleSample s = Sample(1'000'000'000, 1000);
  s.flags = kCycleOverrun;
  s.missed_releases = 2;
  rec->OnCycle(s);
  rec->OnCycle(Sample(1'003'000'000, 1000));
  const RecorderSnapshot snap = rec->Snapshot();
  EXPECT_EQ(snap.overruns, 1u);
  EXPECT_EQ(snap.missed_releases, 2u);
}

TEST(CyclicRecorder, OnRtThreadStartRecordsTheKernelTid) {
  auto rec = Make({});
  EXPECT_EQ(rec->Snapshot().tid, 0);
  std::thread([&] { rec->OnRtThreadStart(0); }).join();
  EXPECT_GT(rec->Snapshot().tid, 0);
}

TEST(CyclicRecorder, FedByTheExecutorAgreesWithItsTaskStats) {
  ExecutorConfig ec;
  ec.lock_memory = false;
  Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  RecorderConfig rc;
  rc.histogram_buckets = 100000;
  auto rec = Make(rc);
  CyclicTask task;
  TaskConfig tc;
  tc.name = "cyclic";
  tc.period = std::chrono::milliseconds(1);
  tc.policy = SchedPolicy::kOther;  // no privilege needed
  tc.priority = 0;
  tc.max_cycles = 30;
  tc.observers = {rec.get()};
  Result<TaskId> id = (*ex)->AddTask(task, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();
  const TaskStatsSnapshot stats = (*ex)->Stats(*id);
  ThreadReport r;
  rec->FillReport(r);
  EXPECT_EQ(r.cycles, 30u);
  EXPECT_EQ(r.cycles, stats.cycles);
  EXPECT_EQ(r.tid, stats.tid);
  // calcdiff truncates per sample (and may round up by 1 us across a second boundary).
  EXPECT_NEAR(static_cast<double>(r.max), static_cast<double>(stats.latency_max_ns / 1000), 1.0);
  EXPECT_NEAR(static_cast<double>(r.min), static_cast<double>(stats.latency_min_ns / 1000), 1.0);
  EXPECT_EQ(r.percentiles.max_ns, stats.latency_max_ns);
  std::uint64_t in_range = 0;
  for (std::uint64_t v : r.histogram) in_range += v;
  EXPECT_EQ(in_range + r.histogram_overflows, 30u);
}

TEST(CyclicRecorder, CreateRejectsBadConfigurationsWithAMessage) {
  RecorderConfig c;
  c.histogram_buckets = CyclicRecorder::kMaxHistogramBuckets + 1;
  Result<std::unique_ptr<CyclicRecorder>> r = CyclicRecorder::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at most 1000000"), std::string::npos);
  c = {};
  c.break_threshold = 10;
  r = CyclicRecorder::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BreakLatch"), std::string::npos);
  c = {};
  c.spike_threshold = -1;
  EXPECT_FALSE(CyclicRecorder::Create(c).ok());
}

TEST(CyclicRecorder, OnCycleAllocatesNothingInSteadyState) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under ASan/TSan";
  }
  BreakLatch latch;
  RecorderConfig c;
  c.histogram_buckets = 1000;
  c.verbose = true;
  c.spike_threshold = 5;
  c.spike_nodes = 16;
  c.break_threshold = 50;
  c.break_latch = &latch;
  c.warmup_cycles = 3;
  auto rec = Make(c);
  testing::AllocationCounter counter;
  for (std::int64_t i = 0; i < 100'000; ++i) {
    rec->OnCycle(
        Sample(1'000'000'000 + i * 1'000'000, (i % 2000) * 1000, static_cast<std::uint64_t>(i)));
  }
  (void)rec->Snapshot();
  EXPECT_EQ(counter.Allocations(), 0u);
}

}  // namespace
}  // namespace rtloop::cyclic
