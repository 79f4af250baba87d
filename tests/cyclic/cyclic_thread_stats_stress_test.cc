// Multi-threaded checks of CyclicThreadStats' writer/reader protocol and of the BreakLatch (label
// `stress`, run under TSan in CI): one thread plays the RT thread (and one the drainer), the main
// thread reads like the runner does.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cyclic_thread_stats.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::cyclic {
namespace {

TEST(CyclicThreadStatsStress, ReaderSeesConsistentValuesWhileTheWriterRuns) {
  BreakLatch latch;
  CyclicStatsConfig c;
  c.verbose = true;
  c.histogram_buckets = 500;
  c.spike_threshold = 900;
  c.spike_nodes = 64;
  c.break_threshold = 2000;  // broken by the last sample only
  c.break_latch = &latch;
  Result<std::unique_ptr<CyclicThreadStats>> made = CyclicThreadStats::Create(c);
  ASSERT_TRUE(made.ok());
  CyclicThreadStats& rec = **made;

  constexpr std::int64_t kCycles = 300'000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::int64_t i = 0; i < kCycles; ++i) {
      CycleSample s;
      s.seq = static_cast<std::uint64_t>(i);
      // A 1 ms grid; latency (i % 1000) us, so the sample value encodes its cycle.
      s.release = TimePoint(std::chrono::nanoseconds(1'000'000'000 + i * 1'000'000));
      s.wakeup_latency_ns = (i % 1000) * 1000;
      rec.OnCycle(s);
    }
    // Over the -b limit, then one more: the first is the last sample counted, the second is not.
    for (std::int64_t i = kCycles; i < kCycles + 2; ++i) {
      CycleSample s;
      s.seq = static_cast<std::uint64_t>(i);
      s.release = TimePoint(std::chrono::nanoseconds(1'000'000'000 + i * 1'000'000));
      s.wakeup_latency_ns = 5'000'000;
      rec.OnCycle(s);
    }
    done.store(true, std::memory_order_release);
  });

  std::uint64_t delivered = 0;
  std::uint64_t next_expected = 0;
  bool values_ok = true;
  std::uint64_t last_cycles = 0;
  bool monotonic = true;
  auto drain = [&] {
    rec.DrainValues([&](std::uint64_t cycle, std::int64_t v) {
      const std::int64_t expected = cycle < static_cast<std::uint64_t>(kCycles)
                                        ? static_cast<std::int64_t>(cycle % 1000)
                                        : 5000;
      values_ok = values_ok && v == expected && cycle >= next_expected;
      next_expected = cycle + 1;
      ++delivered;
    });
  };
  while (!done.load(std::memory_order_acquire)) {
    const CyclicStatsSnapshot s = rec.Snapshot();
    monotonic = monotonic && s.cycles >= last_cycles;
    last_cycles = s.cycles;
    (void)latch.Get();
    drain();
  }
  writer.join();
  drain();

  EXPECT_TRUE(values_ok);
  EXPECT_TRUE(monotonic);
  constexpr auto kCounted = static_cast<std::uint64_t>(kCycles) + 1;
  EXPECT_EQ(delivered + rec.verbose_drops(), kCounted);
  const CyclicStatsSnapshot s = rec.Snapshot();
  EXPECT_EQ(s.cycles, kCounted);
  EXPECT_EQ(s.max, 5000);
  EXPECT_EQ(s.min, 0);
  EXPECT_TRUE(latch.hit());
  EXPECT_EQ(latch.Get().value, 5000);
  EXPECT_EQ(latch.Get().seq, static_cast<std::uint64_t>(kCycles));
  ThreadReport r;
  rec.FillReport(r);
  std::uint64_t in_range = 0;
  for (std::uint64_t v : r.histogram) in_range += v;
  EXPECT_EQ(in_range + r.histogram_overflows, kCounted);
  EXPECT_EQ(r.overflow_cycles.size(), 500u);
  EXPECT_EQ(rec.Spikes().size(), 64u);
  EXPECT_EQ(rec.Snapshot().spikes, 300u * 99u + 1u);  // 900 < i % 1000, and the breaking one
}

// rtloop-cyclic's arrangement (cyclic_thread_stats.h): an RT thread publishes through a hub whose
// small ring often refuses (OnRefused() on the RT thread), a drainer thread feeds OnDrained(), the
// main thread reads the -v ring and snapshots. Every sample is counted once and the -v ring
// delivers cycles in order, each with its own value.
TEST(CyclicThreadStatsStress, DrainedAndRefusedWritersWithAReader) {
  CyclicStatsConfig c;
  c.verbose = true;
  c.histogram_buckets = 1000;
  Result<std::unique_ptr<CyclicThreadStats>> made = CyclicThreadStats::Create(c);
  ASSERT_TRUE(made.ok());
  CyclicThreadStats& rec = **made;
  telemetry::TelemetryHub hub({.ring_capacity = 256});
  TaskConfig tc;
  tc.name = "cyclic0";
  tc.period = std::chrono::milliseconds(1);
  ASSERT_TRUE(hub.AddTask(0, tc).ok());
  ASSERT_TRUE(hub.SetSampleObserver(0, &rec).ok());

  constexpr std::int64_t kCycles = 200'000;
  std::atomic<bool> done{false};
  std::thread rt([&] {
    hub.OnRtThreadStart(0);
    for (std::int64_t i = 0; i < kCycles; ++i) {
      CycleSample s;
      s.seq = static_cast<std::uint64_t>(i);
      s.release = TimePoint(std::chrono::nanoseconds(1'000'000'000 + i * 1'000'000));
      s.wakeup_latency_ns = (i % 1000) * 1000;  // the value encodes the cycle
      hub.OnCycle(s);
    }
    done.store(true, std::memory_order_release);
  });
  std::thread drainer([&] {
    while (!done.load(std::memory_order_acquire)) {
      hub.Drain();
      std::this_thread::yield();
    }
  });
  std::uint64_t delivered = 0;
  std::uint64_t next_expected = 0;
  bool values_ok = true;
  auto take = [&](std::uint64_t cycle, std::int64_t v) {
    values_ok = values_ok && v == static_cast<std::int64_t>(cycle % 1000) && cycle >= next_expected;
    next_expected = cycle + 1;
    ++delivered;
  };
  std::uint64_t last_cycles = 0;
  bool monotonic = true;
  while (!done.load(std::memory_order_acquire)) {
    const std::uint64_t cycles = rec.Snapshot().cycles;
    monotonic = monotonic && cycles >= last_cycles;
    last_cycles = cycles;
    rec.DrainValues(take);
  }
  rt.join();
  drainer.join();
  hub.Drain();
  rec.DrainValues(take, /*all=*/true);

  EXPECT_TRUE(values_ok);
  EXPECT_TRUE(monotonic);
  EXPECT_GT(hub.task(0)->ring().writer().dropped(), 0u) << "the refused path must be exercised";
  EXPECT_EQ(delivered + rec.verbose_drops(), static_cast<std::uint64_t>(kCycles));
  const CyclicStatsSnapshot s = rec.Snapshot();
  EXPECT_EQ(s.cycles, static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(s.act, 999) << "the last cycle's value";
  EXPECT_EQ(s.max, 999);
  EXPECT_EQ(s.avg_sum, 200.0 * (999.0 * 1000.0 / 2.0));
  ThreadReport r;
  rec.FillReport(r);
  for (std::size_t v = 0; v < r.histogram.size(); ++v) {
    ASSERT_EQ(r.histogram[v], 200u) << "bucket " << v;
  }
}

TEST(CyclicThreadStatsStress, ManyThreadsRaceForTheBreakLatchAndOneWins) {
  BreakLatch latch;
  std::vector<std::thread> threads;
  std::atomic<int> winners{0};
  for (int t = 1; t <= 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if (latch.TryTrip(t, static_cast<std::uint64_t>(i), t * 100 + i)) winners.fetch_add(1);
        (void)latch.Excludes(t, static_cast<std::uint64_t>(i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(winners.load(), 1);
  const BreakLatch::Trip trip = latch.Get();
  ASSERT_TRUE(trip.hit);
  EXPECT_EQ(trip.value / 100, trip.thread);  // thread, seq and value come from the same trip
  EXPECT_EQ(static_cast<std::uint64_t>(trip.value % 100), trip.seq);
  EXPECT_FALSE(latch.Excludes(trip.thread, trip.seq));
}

}  // namespace
}  // namespace rtloop::cyclic
