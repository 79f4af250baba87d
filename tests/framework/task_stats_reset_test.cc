// TaskStats' statistics reset (issue 19, item 3): what a reset clears (min/max of latency,
// execution time and jitter) and what it keeps (cycles, overruns, missed releases, faults and the
// last fault, watchdog counts, sums, averages, last values), applied by the writer at its next
// Record() without ever waiting.
#include <gtest/gtest.h>

#include "rtloop/framework/task_stats.h"

namespace rtloop {
namespace {

// Records one cycle as the executor does (not the first: jitter recorded).
void Cycle(TaskStats& s, std::int64_t latency, std::int64_t execution, std::int64_t jitter,
           bool overrun = false, std::uint64_t missed = 0) {
  s.Record(latency, execution, jitter, /*first=*/false, overrun, missed);
}

TEST(TaskStatsResetTest, ResetClearsMinMaxAndKeepsEveryTotal) {
  TaskStats stats;
  stats.Record(100, 10, 0, /*first=*/true, false, 0);
  Cycle(stats, 900, 90, 50, /*overrun=*/true, /*missed=*/2);
  stats.RecordFault(FaultRecord{.reason = FaultReason::kWatchdog, .cycle = 1, .execution_ns = 90});
  stats.RecordWatchdogViolation();
  const TaskStatsSnapshot before = stats.Snapshot();
  ASSERT_TRUE(before.has_min_max());
  EXPECT_EQ(before.latency_max_ns, 900);

  stats.RequestReset();
  const TaskStatsSnapshot pending = stats.Snapshot();
  EXPECT_EQ(pending.resets, 1u);
  // Cleared: no cycle since the reset, so no min/max (not the old ones, not 0 as a figure).
  EXPECT_FALSE(pending.has_min_max());
  EXPECT_FALSE(pending.has_jitter_min_max());
  EXPECT_FALSE(pending.jitter_range_ns().has_value());
  // Kept: the exact totals.
  EXPECT_TRUE(pending.has_data());
  EXPECT_EQ(pending.cycles, 2u);
  EXPECT_EQ(pending.overruns, 1u);
  EXPECT_EQ(pending.missed_releases, 2u);
  EXPECT_EQ(pending.faults, 1u);
  EXPECT_EQ(pending.last_fault.reason, FaultReason::kWatchdog);
  EXPECT_EQ(pending.last_fault.cycle, 1u);
  EXPECT_EQ(pending.watchdog_violations, 1u);
  EXPECT_EQ(pending.watchdog_trips, 1u);
  EXPECT_EQ(pending.latency_sum_ns, 1000);
  EXPECT_EQ(pending.execution_sum_ns, 100);
  EXPECT_EQ(pending.latency_last_ns, 900);
  ASSERT_TRUE(pending.latency_avg_ns().has_value());
  EXPECT_DOUBLE_EQ(*pending.latency_avg_ns(), 500.0);

  Cycle(stats, 300, 30, -20);
  const TaskStatsSnapshot after = stats.Snapshot();
  ASSERT_TRUE(after.has_min_max());
  ASSERT_TRUE(after.has_jitter_min_max());
  // Min/max restarted with the first cycle after the reset.
  EXPECT_EQ(after.latency_min_ns, 300);
  EXPECT_EQ(after.latency_max_ns, 300);
  EXPECT_EQ(after.execution_min_ns, 30);
  EXPECT_EQ(after.execution_max_ns, 30);
  EXPECT_EQ(after.jitter_min_ns, -20);
  EXPECT_EQ(after.jitter_max_ns, -20);
  // The totals went on counting.
  EXPECT_EQ(after.cycles, 3u);
  EXPECT_EQ(after.latency_sum_ns, 1300);
  EXPECT_EQ(after.overruns, 1u);
  EXPECT_EQ(after.resets, 1u);
}

TEST(TaskStatsResetTest, ResetBeforeAnyCycleAndTwoResetsInARowAreOneRestart) {
  TaskStats stats;
  stats.RequestReset();
  EXPECT_FALSE(stats.Snapshot().has_data());
  stats.Record(100, 10, 0, /*first=*/true, false, 0);
  EXPECT_TRUE(stats.Snapshot().has_min_max());
  stats.RequestReset();
  stats.RequestReset();
  EXPECT_EQ(stats.Snapshot().resets, 3u);
  EXPECT_FALSE(stats.Snapshot().has_min_max());
  Cycle(stats, 70, 7, 1);
  const TaskStatsSnapshot s = stats.Snapshot();
  EXPECT_TRUE(s.has_min_max());
  EXPECT_EQ(s.latency_max_ns, 70);
  EXPECT_EQ(s.cycles, 2u);
}

static_assert(noexcept(std::declval<TaskStats&>().RequestReset()));

}  // namespace
}  // namespace rtloop
