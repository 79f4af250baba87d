// TaskStats' fault record under real concurrency (label `stress`, also run under TSan): the RT
// thread's RecordFault() (the record into a SeqLockValue, then the count with release) against
// readers' Snapshot(). A snapshot that counts N faults must carry a whole record of fault N - 1
// or newer (never an older or torn one), and its count must never go backwards.
//
//   ctest --test-dir build -R TaskStatsStress
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "rtloop/framework/task_stats.h"

namespace rtloop {
namespace {

FaultRecord Fault(std::uint64_t i) {
  return {FaultReason::kWatchdog,
          i,
          static_cast<std::int64_t>(i) * 3,
          static_cast<std::int64_t>(i) * 5,
          static_cast<std::int64_t>(i) * 7,
          static_cast<std::uint32_t>(i % 1000),
          11};
}

TEST(TaskStatsStressTest, ASnapshotCarriesAWholeRecordAtLeastAsNewAsItsCount) {
  constexpr std::uint64_t kFaults = 200'000;
  // On a loaded machine the readers may start late: the writer goes on (bounded) until they have
  // checked this many snapshots.
  constexpr std::uint64_t kMinChecked = 10'000;
  constexpr std::uint64_t kMaxFaults = 200'000'000;
  TaskStats stats;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> bad{0};
  std::atomic<std::uint64_t> checked{0};
  std::atomic<int> started{0};
  std::vector<std::thread> readers;
  readers.reserve(2);
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      started.fetch_add(1);
      std::uint64_t last_count = 0;
      while (!done.load(std::memory_order_acquire)) {
        const TaskStatsSnapshot s = stats.Snapshot();
        if (s.faults < last_count) bad.fetch_add(1);
        last_count = s.faults;
        if (s.faults == 0 || s.last_fault.reason == FaultReason::kNone) continue;  // a collision
        const FaultRecord& f = s.last_fault;
        const FaultRecord want = Fault(f.cycle);
        const bool whole = f.time_ns == want.time_ns && f.since_start_ns == want.since_start_ns &&
                           f.execution_ns == want.execution_ns &&
                           f.consecutive == want.consecutive && f.limit_ns == want.limit_ns;
        if (!whole || f.cycle + 1 < s.faults) bad.fetch_add(1);
        checked.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  std::uint64_t n = 0;
  while (n < kFaults || (checked.load(std::memory_order_relaxed) < kMinChecked && n < kMaxFaults)) {
    stats.RecordFault(Fault(n++));
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(checked.load(), 0u);
  const TaskStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.faults, n);
  EXPECT_EQ(s.watchdog_trips, n);
  EXPECT_EQ(s.last_fault.cycle, n - 1);
}

}  // namespace
}  // namespace rtloop
