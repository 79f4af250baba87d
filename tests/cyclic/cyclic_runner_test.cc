#include "cyclic_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "cyclic_thread_stats.h"
#include "max_over_time.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::cyclic {
namespace {

TEST(CyclicRunnerTest, DurationBecomesACycleBudgetRoundedUp) {
  EXPECT_EQ(CyclesForDuration(0, 1000), 0u);
  EXPECT_EQ(CyclesForDuration(3, 1000), 3000u);
  EXPECT_EQ(CyclesForDuration(4, 1500), 2667u) << "cyclictest -D4 -i1000 -t2: T1 C: 2667";
  EXPECT_EQ(CyclesForDuration(1, 700000), 2u);
  EXPECT_EQ(CyclesForDuration(86400, 200), 432'000'000u);
}

ThreadReport Thread(int index, std::int64_t max, std::uint64_t missed = 0) {
  ThreadReport t;
  t.index = index;
  t.tid = 1000 + index;
  t.cycles = 100;
  t.max = max;
  t.missed_releases = missed;
  return t;
}

TEST(CyclicRunnerTest, FailAboveNamesTheThreadAndTheBound) {
  CyclicOptions o;
  o.fail_above_us = 100;
  const std::vector<ThreadReport> threads = {Thread(0, 100), Thread(1, 101)};
  const std::vector<std::string> out = CheckFailBounds(o, threads, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("thread 1 (tid 1001)"), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("max latency 101 us > --fail-above=100 us"), std::string::npos) << out[0];
}

TEST(CyclicRunnerTest, FailAboveComparesNanosecondsUnderDashN) {
  CyclicOptions o;
  o.nsecs = true;
  o.fail_above_us = 100;
  const std::vector<ThreadReport> ok = {Thread(0, 100'000)};
  EXPECT_TRUE(CheckFailBounds(o, ok, {}).empty());
  const std::vector<ThreadReport> bad = {Thread(0, 100'001)};
  ASSERT_EQ(CheckFailBounds(o, bad, {}).size(), 1u);
}

TEST(CyclicRunnerTest, FailAboveIgnoresThreadsWithoutCycles) {
  CyclicOptions o;
  o.fail_above_us = 0;
  ThreadReport idle = Thread(0, 0);
  idle.cycles = 0;
  const std::vector<ThreadReport> threads = {idle};
  EXPECT_TRUE(CheckFailBounds(o, threads, {}).empty());
}

TEST(CyclicRunnerTest, FailPercentileUsesTheGivenValues) {
  CyclicOptions o;
  o.fail_percentiles.push_back(PercentileBound{99.9, 50, "99.9:50"});
  const std::vector<ThreadReport> threads = {Thread(0, 0), Thread(1, 0)};
  const std::vector<std::vector<std::int64_t>> values = {{50'000}, {50'001}};
  const std::vector<std::string> out = CheckFailBounds(o, threads, values);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("thread 1"), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("p99.9 latency 50.001 us > --fail-percentile=99.9:50"), std::string::npos)
      << out[0];
}

TEST(CyclicRunnerTest, FailMissedCountsMissedReleases) {
  CyclicOptions o;
  o.fail_missed = 2;
  const std::vector<ThreadReport> threads = {Thread(0, 0, 2), Thread(1, 0, 3)};
  const std::vector<std::string> out = CheckFailBounds(o, threads, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("thread 1 (tid 1001): 3 missed releases > --fail-missed=2"),
            std::string::npos)
      << out[0];
}

TEST(CyclicRunnerTest, NoBoundsNoBreaches) {
  const std::vector<ThreadReport> threads = {Thread(0, 1'000'000, 1'000)};
  EXPECT_TRUE(CheckFailBounds(CyclicOptions{}, threads, {}).empty());
}

// Everything a measurement thread's observers do per cycle, with every option that adds work
// (-h, -v, --spike, -b, --max-over-time, and the telemetry hub the runtime appends), allocates
// nothing: the observers as the executor calls them, in one CycleObserverList.
TEST(CyclicRunnerTest, MeasurementThreadObserversAllocateNothingPerCycle) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  BreakLatch latch;
  CyclicStatsConfig sc;
  sc.histogram_buckets = 50;  // samples are 10..99 us: about half overflow, filling the list
  sc.verbose = true;
  sc.spike_threshold = 50;
  sc.spike_nodes = 16;
  sc.break_threshold = 1'000'000;
  sc.break_latch = &latch;
  Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(sc);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  WindowMaxTracker windows(0, std::chrono::milliseconds(10), TimePoint(), false, 1024, &latch);
  telemetry::TelemetryHub hub;
  TaskConfig tc;
  tc.name = "cyclic0";
  tc.period = std::chrono::microseconds(1000);
  ASSERT_TRUE(hub.AddTask(0, tc).ok());
  const CycleObserverList observers = {stats->get(), &windows, &hub};
  for (CycleObserver* o : observers) o->OnRtThreadStart(0);  // set-up: may allocate
  CyclicThreadTask task(&latch);

  testing::AllocationCounter counter;
  for (std::uint64_t k = 0; k < 5000; ++k) {
    CycleSample s;
    s.seq = k;
    s.release = TimePoint(std::chrono::milliseconds(k));
    s.wakeup_latency_ns = static_cast<std::int64_t>(10'000 + (k * 7919) % 90'000);
    s.execution_ns = 500;
    (void)task.Step(CycleContext{});
    observers.OnCycle(s);
    if (k % 100 == 0) windows.Drain([](const WindowMax&) {});
  }
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_EQ((*stats)->Snapshot().cycles, 5000u);
  EXPECT_GT((*stats)->Snapshot().histogram_overflows, 50u) << "the overflow list filled up";
  EXPECT_GT((*stats)->Snapshot().spikes, 16u) << "the spike list filled up";
  hub.Drain();  // the histograms from the ring (off the RT path)
  EXPECT_GE(hub.task(0)->latency().ValueAtPercentile(99.0), 10'000);
}

}  // namespace
}  // namespace rtloop::cyclic
