// Stress (label `stress`, also run under TSan): statistics resets from other threads while the
// writer records and readers snapshot. The writer never waits; every snapshot is coherent: totals
// only grow, min <= max whenever they are present, present min/max come from values recorded
// (never a sentinel), and after the last reset the next cycle restarts min/max.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "rtloop/framework/task_stats.h"

namespace rtloop {
namespace {

TEST(TaskStatsResetStress, ResetsWhileRecordingKeepSnapshotsCoherent) {
  TaskStats stats;
  std::atomic<bool> done{false};
  constexpr std::uint64_t kCycles = 300'000;
  std::thread writer([&] {
    for (std::uint64_t i = 0; i < kCycles; ++i) {
      const auto v = static_cast<std::int64_t>(1000 + (i * 7919) % 5000);  // 1000..5999
      stats.Record(v, v / 10, v - 3500, i == 0, (i % 97) == 0, 0);
    }
    done.store(true);
  });
  std::thread resetter([&] {
    while (!done.load()) stats.RequestReset();
  });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  readers.reserve(2);
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      std::uint64_t last_cycles = 0;
      std::uint64_t last_resets = 0;
      while (!done.load()) {
        const TaskStatsSnapshot s = stats.Snapshot();
        if (s.cycles < last_cycles || s.resets < last_resets) ++bad;
        last_cycles = s.cycles;
        last_resets = s.resets;
        if (s.has_min_max() && (s.latency_min_ns < 1000 || s.latency_max_ns > 5999 ||
                                s.latency_min_ns > s.latency_max_ns)) {
          ++bad;
        }
      }
    });
  }
  writer.join();
  resetter.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  const TaskStatsSnapshot end = stats.Snapshot();
  EXPECT_EQ(end.cycles, kCycles);
  stats.RequestReset();
  stats.Record(4242, 424, 1, false, false, 0);  // the next cycle applies it
  const TaskStatsSnapshot after = stats.Snapshot();
  ASSERT_TRUE(after.has_min_max());
  EXPECT_EQ(after.latency_min_ns, 4242);
  EXPECT_EQ(after.latency_max_ns, 4242);
  EXPECT_EQ(after.cycles, kCycles + 1);
}

}  // namespace
}  // namespace rtloop
