// Multi-threaded checks of CyclicRecorder's single-writer/reader protocol (label `stress`, run
// under TSan in CI): one thread plays the RT thread, the main thread reads like the runner does.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cyclic_recorder.h"

namespace rtloop::cyclic {
namespace {

TEST(CyclicRecorderStress, ReaderSeesConsistentValuesWhileTheWriterRuns) {
  BreakLatch latch;
  RecorderConfig c;
  c.verbose = true;
  c.histogram_buckets = 500;
  c.spike_threshold = 900;
  c.spike_nodes = 64;
  c.break_threshold = 998;
  c.break_latch = &latch;
  Result<std::unique_ptr<CyclicRecorder>> made = CyclicRecorder::Create(c);
  ASSERT_TRUE(made.ok());
  CyclicRecorder& rec = **made;

  constexpr std::int64_t kCycles = 300'000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    rec.OnRtThreadStart(0);
    for (std::int64_t i = 0; i < kCycles; ++i) {
      CycleSample s;
      s.seq = static_cast<std::uint64_t>(i);
      // A 1 ms grid; latency (i % 1000) us, so the sample value encodes its cycle.
      s.release = TimePoint(std::chrono::nanoseconds(1'000'000'000 + i * 1'000'000));
      s.wakeup_latency_ns = (i % 1000) * 1000;
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
      values_ok =
          values_ok && v == static_cast<std::int64_t>(cycle % 1000) && cycle >= next_expected;
      next_expected = cycle + 1;
      ++delivered;
    });
  };
  while (!done.load(std::memory_order_acquire)) {
    const RecorderSnapshot s = rec.Snapshot();
    monotonic = monotonic && s.cycles >= last_cycles;
    last_cycles = s.cycles;
    (void)latch.Get();
    drain();
  }
  writer.join();
  drain();

  EXPECT_TRUE(values_ok);
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(delivered + rec.verbose_drops(), static_cast<std::uint64_t>(kCycles));
  const RecorderSnapshot s = rec.Snapshot();
  EXPECT_EQ(s.cycles, static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(s.max, 999);
  EXPECT_EQ(s.min, 0);
  EXPECT_TRUE(latch.hit());
  EXPECT_EQ(latch.Get().value, 999);
  EXPECT_GT(latch.Get().tid, 0);
  ThreadReport r;
  rec.FillReport(r);
  std::uint64_t in_range = 0;
  for (std::uint64_t v : r.histogram) in_range += v;
  EXPECT_EQ(in_range + r.histogram_overflows, static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(r.overflow_cycles.size(), 500u);
  EXPECT_EQ(rec.Spikes().size(), 64u);
}

TEST(CyclicRecorderStress, ManyThreadsRaceForTheBreakLatchAndOneWins) {
  BreakLatch latch;
  std::vector<std::thread> threads;
  std::atomic<int> winners{0};
  for (int t = 1; t <= 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if (latch.TryTrip(t, t * 100 + i)) winners.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(winners.load(), 1);
  const BreakTrace trace = latch.Get();
  ASSERT_TRUE(trace.hit);
  EXPECT_EQ(trace.value / 100, trace.tid);  // tid and value come from the same trip
}

}  // namespace
}  // namespace rtloop::cyclic
