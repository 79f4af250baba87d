// CyclicThreadStats, BreakLatch and CyclicThreadTask: cyclictest's per-thread state, and the proof
// that where cyclictest's definitions and the executor's coincide, their figures agree (the one
// documented exception to "one owner per statistic", cyclic_thread_stats.h).
#include "cyclic_thread_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/executor.h"

namespace rtloop::cyclic {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

static_assert(
    noexcept(std::declval<CyclicThreadStats&>().OnCycle(std::declval<const CycleSample&>())));
static_assert(noexcept(CyclictestDiff(TimePoint(), 0, false)));
static_assert(noexcept(std::declval<const CyclicThreadStats&>().Snapshot()));
static_assert(noexcept(std::declval<BreakLatch&>().TryTrip(1, 2, 3)));
static_assert(noexcept(std::declval<const BreakLatch&>().Excludes(1, 2)));

// A sample released at `release_ns` that woke `latency_ns` later.
CycleSample Sample(std::int64_t release_ns, std::int64_t latency_ns, std::uint64_t seq = 0) {
  CycleSample s;
  s.seq = seq;
  s.release = TimePoint(nanoseconds(release_ns));
  s.wakeup_latency_ns = latency_ns;
  s.execution_ns = 500;
  return s;
}

// Feeds latencies (us) on a 1 ms grid that never crosses a second boundary mid-sample; seqs
// continue from `first_seq`.
void FeedUs(CyclicThreadStats& stats, const std::vector<std::int64_t>& latencies_us,
            std::uint64_t first_seq = 0) {
  std::int64_t t = 1'000'000'000 + static_cast<std::int64_t>(first_seq) * 1'000'000;
  std::uint64_t seq = first_seq;
  for (std::int64_t us : latencies_us) {
    stats.OnCycle(Sample(t, us * 1000, seq++));
    t += 1'000'000;
  }
}

std::unique_ptr<CyclicThreadStats> Make(const CyclicStatsConfig& config) {
  Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(config);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return std::move(stats).value();
}

TEST(CyclictestDiff, TruncatesTheNanosecondPartLikeCalcdiff) {
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'000'000'000)), 1'999, false), 1);
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'000'000'500)), 900, false), 0);
  // Across a second boundary calcdiff subtracts the ns parts first: 900 ns late counts as 1 us.
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'999'999'500)), 900, false), 1);
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'999'999'500)), 900, true), 900);
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'000'000'000)), 2'500'000'123, false), 2'500'000);
  EXPECT_EQ(CyclictestDiff(TimePoint(nanoseconds(5'000'000'000)), 2'500'000'123, true),
            2'500'000'123);
}

// calcdiff itself, as rt-utils writes it, against the fast path of CyclictestDiff.
std::int64_t Calcdiff(TimePoint release, std::int64_t latency_ns, bool nsecs) {
  const timespec next = release.ToTimespec();
  const timespec now = (release + nanoseconds(latency_ns)).ToTimespec();
  const std::int64_t sec = static_cast<std::int64_t>(now.tv_sec) - next.tv_sec;
  const std::int64_t nsec = static_cast<std::int64_t>(now.tv_nsec) - next.tv_nsec;
  return nsecs ? sec * 1'000'000'000 + nsec : sec * 1'000'000 + nsec / 1000;
}

TEST(CyclictestDiff, AgreesWithCalcdiffAcrossSecondsAndSigns) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;  // xorshift: the same inputs every run
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 200'000; ++i) {
    const auto release =
        TimePoint(nanoseconds(static_cast<std::int64_t>(next() % 4'000'000'000'000u)));
    // Mostly small latencies, some near and past a second, some negative (early wake-ups).
    const std::int64_t range = i % 3 == 0 ? 3'000'000'000 : 200'000;
    const std::int64_t latency =
        static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(2 * range)) - range / 8;
    for (bool ns : {false, true}) {
      ASSERT_EQ(CyclictestDiff(release, latency, ns), Calcdiff(release, latency, ns))
          << release.ns() << " + " << latency << (ns ? " ns" : " us");
    }
  }
}

TEST(CyclicThreadStats, StartsWithCyclictestsInitialValues) {
  auto stats = Make({});
  const CyclicStatsSnapshot s = stats->Snapshot();
  EXPECT_EQ(s.cycles, 0u);
  EXPECT_EQ(s.min, 1000000);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.act, 0);
  ThreadReport r;
  stats->FillReport(r);
  EXPECT_EQ(r.min, 1000000);
  EXPECT_TRUE(r.histogram.empty());
}

TEST(CyclicThreadStats, KeepsMinMaxActAndADoubleSum) {
  auto stats = Make({});
  FeedUs(*stats, {20, 12, 35, 17});
  const CyclicStatsSnapshot s = stats->Snapshot();
  EXPECT_EQ(s.cycles, 4u);
  EXPECT_EQ(s.min, 12);
  EXPECT_EQ(s.max, 35);
  EXPECT_EQ(s.act, 17);
  EXPECT_DOUBLE_EQ(s.avg_sum, 84.0);
  ThreadReport r;
  stats->FillReport(r);
  EXPECT_EQ(r.TruncatedAvg(), 21);
}

TEST(CyclicThreadStats, MinKeepsTheInitialMillionWhenEverySampleIsLarger) {
  CyclicStatsConfig c;
  c.nsecs = true;  // cyclictest's quirk: with -N, samples over 1 ms never lower min
  auto stats = Make(c);
  stats->OnCycle(Sample(1'000'000'000, 1'500'000));
  EXPECT_EQ(stats->Snapshot().min, 1000000);
  EXPECT_EQ(stats->Snapshot().max, 1'500'000);
}

TEST(CyclicThreadStats, HistogramCountsBucketsAndListsAtMostBucketsOverflowCycles) {
  CyclicStatsConfig c;
  c.histogram_buckets = 3;
  auto stats = Make(c);
  FeedUs(*stats, {0, 2, 3, 2, 7, 9, 1, 5, 4});
  // Negative: an overflow, as cyclictest's unsigned diff.
  stats->OnCycle(Sample(2'000'000'000, -1000, 9));
  ThreadReport r;
  stats->FillReport(r);
  EXPECT_EQ(r.histogram, (std::vector<std::uint64_t>{1, 1, 2}));
  EXPECT_EQ(r.histogram_overflows, 6u);
  EXPECT_EQ(r.overflow_cycles, (std::vector<std::uint64_t>{2, 4, 5}));
  EXPECT_EQ(r.cycles, 10u);
}

TEST(CyclicThreadStats, NanosecondHistogramUsesOneNanosecondBuckets) {
  CyclicStatsConfig c;
  c.nsecs = true;
  c.histogram_buckets = 1000;
  auto stats = Make(c);
  stats->OnCycle(Sample(1'000'000'000, 999));
  stats->OnCycle(Sample(1'001'000'000, 1000, 1));
  ThreadReport r;
  stats->FillReport(r);
  EXPECT_EQ(r.histogram[999], 1u);
  EXPECT_EQ(r.histogram_overflows, 1u);
}

TEST(CyclicThreadStats, VerboseRingDeliversEverySampleOnceInOrder) {
  CyclicStatsConfig c;
  c.verbose = true;
  auto stats = Make(c);
  FeedUs(*stats, {5, 6, 7});
  std::vector<std::int64_t> got;
  EXPECT_EQ(stats->DrainValues([&](std::uint64_t, std::int64_t v) { got.push_back(v); }), 3u);
  FeedUs(*stats, {8}, 3);
  EXPECT_EQ(stats->DrainValues([&](std::uint64_t, std::int64_t v) { got.push_back(v); }), 1u);
  EXPECT_EQ(got, (std::vector<std::int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(stats->verbose_drops(), 0u);
}

TEST(CyclicThreadStats, VerboseRingCountsSamplesOverwrittenBeforeTheyWereRead) {
  CyclicStatsConfig c;
  c.verbose = true;
  auto stats = Make(c);
  const std::size_t n = CyclicThreadStats::kValueRingSize + 100;
  for (std::size_t i = 0; i < n; ++i) {
    stats->OnCycle(Sample(1'000'000'000 + static_cast<std::int64_t>(i) * 1'000'000,
                          static_cast<std::int64_t>(i % 1000) * 1000, i));
  }
  std::uint64_t first = 0, count = 0;
  bool ok = true;
  stats->DrainValues([&](std::uint64_t cycle, std::int64_t v) {
    if (count++ == 0) first = cycle;
    ok = ok && v == static_cast<std::int64_t>(cycle % 1000);
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(first + count, n);
  EXPECT_EQ(stats->verbose_drops() + count, n);
  EXPECT_EQ(count, CyclicThreadStats::kValueRingSize - 1);
}

TEST(CyclicThreadStats, SpikesAreRecordedUpToTheNodeCountAndAllCounted) {
  CyclicStatsConfig c;
  c.index = 3;
  c.spike_threshold = 20;
  c.spike_nodes = 2;
  auto stats = Make(c);
  FeedUs(*stats, {10, 20, 25, 30, 40});
  EXPECT_EQ(stats->Snapshot().spikes, 3u);
  const std::vector<SpikeEvent> spikes = stats->Spikes();
  ASSERT_EQ(spikes.size(), 2u);
  EXPECT_EQ(spikes[0].thread, 3);
  EXPECT_EQ(spikes[0].value, 25);
  // The wake-up time in us: release 1.002 s + 25 us.
  EXPECT_EQ(spikes[0].ts_us, 1'002'025);
  EXPECT_EQ(spikes[1].value, 30);
}

TEST(CyclicThreadStats, NewMaxCountSignalsEachNewMaximum) {
  auto stats = Make({});
  FeedUs(*stats, {5, 3, 6, 6, 9});
  EXPECT_EQ(stats->new_max_count(), 3u);
}

TEST(BreakLatch, KeepsTheFirstThreadOverTheLimitAndEndsEveryThreadsFigures) {
  BreakLatch latch;
  CyclicStatsConfig c;
  c.break_threshold = 15;
  c.break_latch = &latch;
  auto a = Make(c);
  c.index = 1;
  auto b = Make(c);
  FeedUs(*a, {10, 15});
  EXPECT_FALSE(latch.hit());
  EXPECT_FALSE(latch.Get().hit);
  FeedUs(*b, {29});  // breaks: the last sample of thread 1's figures
  FeedUs(*a, {40}, 2);
  FeedUs(*b, {50}, 1);
  ASSERT_TRUE(latch.hit());
  const BreakLatch::Trip trip = latch.Get();
  EXPECT_EQ(trip.thread, 1);
  EXPECT_EQ(trip.seq, 0u);
  EXPECT_EQ(trip.value, 29);
  EXPECT_EQ(a->Snapshot().cycles, 2u) << "samples after the break are left out in every thread";
  EXPECT_EQ(a->Snapshot().max, 15);
  EXPECT_EQ(b->Snapshot().cycles, 1u);
  EXPECT_EQ(b->Snapshot().max, 29) << "the breaking sample is in";
}

TEST(BreakLatch, TheBreakingSampleCountsForEveryObserverOfItsThread) {
  BreakLatch latch;
  EXPECT_FALSE(latch.Excludes(0, 0));
  ASSERT_TRUE(latch.TryTrip(2, 41, 999));
  EXPECT_FALSE(latch.TryTrip(0, 3, 1000)) << "one trip per run";
  EXPECT_FALSE(latch.Excludes(2, 41)) << "asked after the stats tripped it: still counted";
  EXPECT_TRUE(latch.Excludes(2, 42));
  EXPECT_TRUE(latch.Excludes(0, 41));
}

TEST(CyclicThreadTask, StopsAtTheFirstReleaseAfterTheBreak) {
  BreakLatch latch;
  CyclicThreadTask task(&latch);
  CyclicThreadTask without;
  EXPECT_EQ(task.Step(CycleContext{}), StepResult::kContinue);
  latch.TryTrip(0, 0, 1);
  EXPECT_EQ(task.Step(CycleContext{}), StepResult::kStop);
  EXPECT_EQ(without.Step(CycleContext{}), StepResult::kContinue);
}

TEST(CyclicThreadStats, CreateRejectsBadConfigurationsWithAMessage) {
  CyclicStatsConfig c;
  c.histogram_buckets = CyclicThreadStats::kMaxHistogramBuckets + 1;
  Result<std::unique_ptr<CyclicThreadStats>> r = CyclicThreadStats::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at most 1000000"), std::string::npos);
  c = {};
  c.break_threshold = 10;
  r = CyclicThreadStats::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BreakLatch"), std::string::npos);
  c = {};
  c.spike_threshold = -1;
  EXPECT_FALSE(CyclicThreadStats::Create(c).ok());
}

TEST(CyclicThreadStats, OnCycleAllocatesNothingInSteadyState) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under ASan/TSan";
  }
  BreakLatch latch;
  CyclicStatsConfig c;
  c.histogram_buckets = 1000;
  c.verbose = true;
  c.spike_threshold = 5;
  c.spike_nodes = 16;
  c.break_threshold = 50;
  c.break_latch = &latch;
  auto stats = Make(c);
  testing::AllocationCounter counter;
  for (std::int64_t i = 0; i < 100'000; ++i) {
    stats->OnCycle(
        Sample(1'000'000'000 + i * 1'000'000, (i % 2000) * 1000, static_cast<std::uint64_t>(i)));
  }
  (void)stats->Snapshot();
  EXPECT_EQ(counter.Allocations(), 0u);
}

// --- Where cyclictest's definitions and the executor's coincide, the figures agree ---

struct TwoUnits {
  std::unique_ptr<CyclicThreadStats> us = Make({});
  std::unique_ptr<CyclicThreadStats> ns = [] {
    CyclicStatsConfig c;
    c.nsecs = true;
    return Make(c);
  }();
};

// cyclictest's value in us is the executor's ns latency truncated, except across a second
// boundary, where calcdiff rounds it up; under -N it is the executor's latency itself.
void ExpectAgreement(const TaskStatsSnapshot& ex, const TwoUnits& units, bool crossed) {
  const CyclicStatsSnapshot ns = units.ns->Snapshot();
  ASSERT_TRUE(ex.has_data());
  ASSERT_LT(ex.latency_min_ns, 1'000'000) << "under -N, min starts at 1000000 (quirk)";
  EXPECT_EQ(ns.cycles, ex.cycles);
  EXPECT_EQ(ns.min, ex.latency_min_ns);
  EXPECT_EQ(ns.max, ex.latency_max_ns);
  EXPECT_EQ(ns.act, ex.latency_last_ns);
  EXPECT_EQ(ns.avg_sum, static_cast<double>(ex.latency_sum_ns)) << "exact: integers below 2^53";

  const CyclicStatsSnapshot us = units.us->Snapshot();
  EXPECT_EQ(us.cycles, ex.cycles);
  const auto floor_us = [](std::int64_t ns_value) {
    return static_cast<std::int64_t>(std::floor(static_cast<double>(ns_value) / 1000.0));
  };
  const std::int64_t slack = crossed ? 1 : 0;
  EXPECT_GE(us.min, floor_us(ex.latency_min_ns));
  EXPECT_LE(us.min, floor_us(ex.latency_min_ns) + slack);
  EXPECT_GE(us.max, floor_us(ex.latency_max_ns));
  EXPECT_LE(us.max, floor_us(ex.latency_max_ns) + slack);
  const double exact_mean_us = *ex.latency_avg_ns() / 1000.0;
  const double cyclictest_mean_us = us.avg_sum / static_cast<double>(us.cycles);
  EXPECT_LE(cyclictest_mean_us, exact_mean_us + static_cast<double>(slack));
  EXPECT_GT(cyclictest_mean_us, exact_mean_us - 1.0) << "below the exact mean by less than 1 us";
}

// The executor's own bookkeeping (CycleEngine) fed latencies that a real run rarely produces on
// cue: a warm-up, a sample across a second boundary, whole and fractional microseconds.
TEST(CyclicThreadStatsAgreement, WithTheExecutorsStatisticsOnAFakeClock) {
  TaskStats ex_stats;
  TwoUnits units;
  CycleEngineConfig config;
  config.period = milliseconds(1);
  config.warmup_cycles = 2;
  config.observers = {units.us.get(), units.ns.get()};
  config.stats = &ex_stats;
  // Release 6 (the 5th measured one) is at 9.999999700 s: 1500 ns late crosses into second 10.
  CycleEngine engine(config, TimePoint(nanoseconds(9'993'999'700)));
  const std::vector<std::int64_t> latencies_ns = {900'000, 800'000,  // warm-up: in no figure
                                                  2'500,   7'250,   3'999, 12'001,
                                                  1'500,   33'999,  2'000, 5'500};
  for (std::int64_t l : latencies_ns) {
    const TimePoint wake = engine.release() + nanoseconds(l);
    engine.BeginCycle(wake);
    engine.EndCycle(wake + microseconds(5), StepResult::kContinue);
  }
  const TaskStatsSnapshot ex = ex_stats.Snapshot();
  EXPECT_EQ(ex.warmup_cycles, 2u);
  EXPECT_EQ(ex.cycles, 8u);
  ExpectAgreement(ex, units, /*crossed=*/true);
  // The crossing sample is the min in us: ceil(1.5) = 2, where the executor's 1500 ns truncate
  // to 1; and Avg is the mean of truncated values (2+7+3+12+2+33+2+5)/8 = 8.25, exact 8.594.
  EXPECT_EQ(units.us->Snapshot().min, 2);
  EXPECT_EQ(ex.latency_min_ns, 1'500);
  EXPECT_DOUBLE_EQ(units.us->Snapshot().avg_sum, 66.0);
  EXPECT_NEAR(*ex.latency_avg_ns(), 8'593.625, 1e-9);
}

// A real executor run: the same samples reach TaskStats and the observers.
TEST(CyclicThreadStatsAgreement, WithTheExecutorsStatisticsOnARealRun) {
  ExecutorConfig ec;
  ec.lock_memory = false;
  ec.start_delay = milliseconds(5);
  Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  TwoUnits units;
  CyclicThreadTask task;
  TaskConfig tc;
  tc.name = "cyclic";
  tc.period = milliseconds(1);
  tc.policy = SchedPolicy::kOther;  // no privilege needed
  tc.priority = 0;
  tc.warmup_cycles = 5;
  tc.max_cycles = 65;
  tc.observers = {units.us.get(), units.ns.get()};
  Result<TaskId> id = (*ex)->AddTask(task, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();
  const TaskStatsSnapshot stats = (*ex)->Stats(*id);
  EXPECT_EQ(stats.cycles, 60u);
  EXPECT_EQ(stats.warmup_cycles, 5u);
  // 60 releases at 1 ms may cross a second boundary: allow calcdiff's rounding up.
  ExpectAgreement(stats, units, /*crossed=*/true);
}

}  // namespace
}  // namespace rtloop::cyclic
