// WindowMaxTracker's single-producer ring under real threads (label stress: also run under TSan):
// every window the RT side published is read once, in order, with the right max, or counted lost.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "max_over_time.h"

namespace rtloop::cyclic {
namespace {

TEST(WindowMaxTrackerStress, ConcurrentDrainSeesEveryWindowOnceInOrder) {
  constexpr std::int64_t kWindows = 50'000;
  constexpr std::int64_t kPerWindow = 4;
  const TimePoint origin{std::chrono::seconds(1)};
  WindowMaxTracker tracker(0, std::chrono::microseconds(100), origin, true, 64);
  std::atomic<bool> done{false};
  std::vector<WindowMax> seen;
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      tracker.Drain([&](const WindowMax& w) { seen.push_back(w); });
    }
    tracker.Drain([&](const WindowMax& w) { seen.push_back(w); });
  });
  for (std::int64_t w = 0; w < kWindows; ++w) {
    for (std::int64_t k = 0; k < kPerWindow; ++k) {
      CycleSample s;
      s.release = origin + std::chrono::microseconds(w * 100 + k * 10);
      s.wakeup_latency_ns = (w % 97) * 10 + k;  // max of the window: (w % 97) * 10 + 3
      tracker.OnCycle(s);
    }
  }
  done.store(true, std::memory_order_release);
  reader.join();
  // The last window is still the current one.
  EXPECT_EQ(static_cast<std::int64_t>(seen.size() + tracker.lost()), kWindows - 1);
  std::int64_t previous = -1;
  for (const WindowMax& w : seen) {
    ASSERT_GT(w.window, previous);
    previous = w.window;
    ASSERT_EQ(w.max, (w.window % 97) * 10 + 3);
    ASSERT_EQ(w.cycles, static_cast<std::uint64_t>(kPerWindow));
  }
}

}  // namespace
}  // namespace rtloop::cyclic
