// Multi-threaded stress of the telemetry pipeline: RT-like producer threads, the collector thread,
// a fast and a deliberately slow subscriber, subscriptions coming and going, and a histogram
// reader racing its writer. Runs under TSan (label `stress`).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;

#if defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kPerTask = 60'000;
#else
constexpr std::uint64_t kPerTask = 300'000;
#endif
constexpr TaskId kTasks = 3;

// Checks per-task order and counts what a subscription received.
struct StreamCheck {
  std::vector<std::uint64_t> received = std::vector<std::uint64_t>(kTasks, 0);
  std::vector<std::uint64_t> lost_reported = std::vector<std::uint64_t>(kTasks, 0);
  std::vector<std::int64_t> last_seq = std::vector<std::int64_t>(kTasks, -1);
  bool ok = true;
  std::string problem;

  void Take(const std::vector<SampleBatch>& batches) {
    for (const SampleBatch& b : batches) {
      if (b.task >= kTasks) {
        Fail("unknown task");
        continue;
      }
      if (static_cast<std::int64_t>(b.first_seq) <= last_seq[b.task]) {
        Fail("task " + std::to_string(b.task) + ": seq " + std::to_string(b.first_seq) + " after " +
             std::to_string(last_seq[b.task]) + " (duplicate or reordered)");
      }
      for (std::size_t i = 0; i < b.samples.size(); ++i) {
        if (b.samples[i].seq != b.first_seq + i || b.samples[i].task != b.task) {
          Fail("batch not consecutive");
        }
      }
      last_seq[b.task] = static_cast<std::int64_t>(b.first_seq + b.samples.size()) - 1;
      received[b.task] += b.samples.size();
      lost_reported[b.task] += b.lost_before;
    }
  }
  void Fail(std::string why) {
    if (ok) problem = std::move(why);
    ok = false;
  }
};

TEST(TelemetryStressTest, NoSampleIsDuplicatedOrReorderedAndAccountingIsExact) {
  testing::HubWithStats fed({.ring_capacity = 2048});
  TelemetryHub& hub = fed.hub;
  for (TaskId t = 0; t < kTasks; ++t) {
    ASSERT_TRUE(hub.AddTask(t, testing::MakeTaskConfig("t", std::chrono::microseconds(10))).ok());
  }
  Collector collector(hub, {.drain_period = milliseconds(1), .chunk_size = 1024});
  auto fast = collector.Subscribe({.capacity = kPerTask * kTasks});
  auto slow = collector.Subscribe({.tasks = {0, 2}, .capacity = 1000});
  ASSERT_TRUE(collector.Start().ok());

  std::atomic<bool> producers_done{false};
  StreamCheck fast_check, slow_check;
  std::thread fast_reader([&] {
    std::vector<SampleBatch> batches;
    while (true) {
      const bool done = producers_done.load() && !collector.running();
      if (fast->Pop(&batches, milliseconds(5)) == 0 && done) break;
      fast_check.Take(batches);
    }
  });
  std::thread slow_reader([&] {
    std::vector<SampleBatch> batches;
    while (true) {
      const bool done = producers_done.load() && !collector.running();
      const std::size_t n = slow->Pop(&batches, milliseconds(5), 100);
      slow_check.Take(batches);
      if (n == 0 && done) break;
      std::this_thread::sleep_for(milliseconds(20));  // deliberately slow: <= 5000 samples/s
    }
  });
  // Subscriptions that come and go while samples flow.
  std::atomic<bool> churn_stop{false};
  std::thread churn([&] {
    std::vector<SampleBatch> batches;
    while (!churn_stop.load()) {
      auto sub = collector.Subscribe({.tasks = {1}, .capacity = 64});
      sub->Pop(&batches, milliseconds(2));
      collector.Unsubscribe(sub);
      const SubscriptionStats st = sub->stats();
      if (st.offered != st.received + st.lost + st.queued) ADD_FAILURE() << "churn accounting";
    }
  });
  std::vector<std::thread> producers;
  for (TaskId t = 0; t < kTasks; ++t) {
    producers.emplace_back([&fed, t] {
      fed.hub.OnRtThreadStart(t);
      for (std::uint64_t i = 0; i < kPerTask; ++i) {
        fed.OnCycle(testing::MakeCycle(t, i, static_cast<std::int64_t>(i % 5000), 100));
        // Bursts with pauses: some stretches overflow the ring, others do not.
        if (i % 4096 == 4095) std::this_thread::sleep_for(std::chrono::microseconds(500 * t));
      }
    });
  }
  for (std::thread& p : producers) p.join();
  producers_done.store(true);
  collector.Stop();
  fast_reader.join();
  slow_reader.join();
  churn_stop.store(true);
  churn.join();

  EXPECT_TRUE(fast_check.ok) << fast_check.problem;
  EXPECT_TRUE(slow_check.ok) << slow_check.problem;
  for (TaskId t = 0; t < kTasks; ++t) {
    Result<TaskReport> snap = hub.Snapshot(t);
    ASSERT_TRUE(snap.ok());
    EXPECT_EQ(snap->samples, kPerTask);
    EXPECT_EQ(snap->stats.cycles, kPerTask);
    EXPECT_EQ(snap->latency.count, kPerTask);
    // produced = delivered + dropped in the ring
    EXPECT_EQ(snap->samples, snap->delivered + snap->ring_dropped) << "task " << t;
    // The fast subscriber got every delivered sample.
    EXPECT_EQ(fast_check.received[t], snap->delivered) << "task " << t;
    EXPECT_EQ(fast_check.lost_reported[t], 0u);
  }
  const SubscriptionStats fs = fast->stats();
  EXPECT_EQ(fs.lost, 0u);
  EXPECT_EQ(fs.offered, fs.received + fs.lost + fs.queued);
  const SubscriptionStats ss = slow->stats();
  EXPECT_EQ(ss.offered, ss.received + ss.lost + ss.queued);
  EXPECT_EQ(ss.queued, 0u);
  EXPECT_EQ(ss.offered, hub.task(0)->delivered() + hub.task(2)->delivered());
  EXPECT_EQ(slow_check.received[1], 0u);  // filtered out
  // Every loss the slow subscriber counted was reported in lost_before of a later batch, except
  // losses after its last received sample of a task.
  EXPECT_LE(slow_check.lost_reported[0] + slow_check.lost_reported[2], ss.lost);
  EXPECT_EQ(slow_check.received[0] + slow_check.received[2], ss.received);
  EXPECT_GT(ss.lost, 0u) << "the slow subscriber was expected to fall behind";
  // Only the slow subscriber lost samples of tasks 0 and 2: the hub counted each of them.
  EXPECT_EQ(hub.task(0)->subscriber_lost() + hub.task(2)->subscriber_lost(), ss.lost);
}

TEST(TelemetryStressTest, HistogramSummaryIsConsistentWhileTheWriterRuns) {
  LatencyHistogram h;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::int64_t i = 0; i < 2'000'000; ++i) h.Record(1000 + (i % 100'000));
    done.store(true);
  });
  std::uint64_t last_count = 0;
  int reads = 0;
  std::vector<HistogramBucket> buckets;
  while (!done.load() || reads == 0) {
    const HistogramSummary s = h.Summary();
    EXPECT_GE(s.count, last_count);
    last_count = s.count;
    if (s.count > 0) {
      EXPECT_TRUE(s.percentiles.valid);
      for (std::size_t i = 1; i < Percentiles::kLevels.size(); ++i) {
        EXPECT_LE(s.percentiles.at(i - 1), s.percentiles.at(i));
      }
      // Every value lies in [1000, 100'999]: so do min, max and every percentile, however the
      // reader interleaves with the writer (no half-initialised min/max, no value outside).
      EXPECT_GE(s.min_ns, 1000);
      EXPECT_LE(s.max_ns, 100'999);
      EXPECT_LE(s.min_ns, s.max_ns);
      EXPECT_GE(s.percentiles.p50_ns, s.min_ns);
      EXPECT_LE(s.percentiles.p99_999_ns, s.max_ns);
    }
    // The count is published after the value's bucket: the buckets read later hold at least it.
    const std::uint64_t count = h.count();
    buckets.clear();
    h.ExportBuckets(&buckets);
    std::uint64_t in_buckets = 0;
    for (const HistogramBucket& b : buckets) in_buckets += b.count;
    EXPECT_GE(in_buckets, count);
    ++reads;
  }
  writer.join();
  EXPECT_EQ(h.count(), 2'000'000u);
  EXPECT_GT(reads, 0);
}

TEST(TelemetryStressTest, WindowedStatsPutEveryValueInExactlyOneTickWhileTheWriterRuns) {
  TelemetryHub hub;
  ASSERT_TRUE(hub.AddTask(0, testing::MakeTaskConfig("w")).ok());
  WindowedStats windows(hub, {.window = std::chrono::seconds(1),
                              .history = std::chrono::seconds(86400),
                              .tick = std::chrono::milliseconds(10)});
  windows.Tick();  // baseline before the first value
  constexpr std::uint64_t kValues = kPerTask;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    hub.OnRtThreadStart(0);
    for (std::uint64_t i = 0; i < kValues; ++i) {
      hub.OnCycle(testing::MakeCycle(0, i, static_cast<std::int64_t>(500 + (i * 7919) % 200'000),
                                     static_cast<std::int64_t>(100 + i % 3000)));
    }
    done.store(true);
  });
  int ticks = 0;
  while (!done.load()) {
    windows.Tick();
    ++ticks;
  }
  writer.join();
  windows.Tick();  // the tail
  std::uint64_t latency = 0;
  std::uint64_t execution = 0;
  std::int64_t max = 0;
  for (const SecondStats& s : windows.History(0)) {
    latency += s.latency_count;
    execution += s.execution_count;
    max = std::max(max, s.latency_max_ns);
  }
  EXPECT_EQ(latency, kValues);
  EXPECT_EQ(execution, kValues);
  EXPECT_EQ(max, hub.task(0)->latency().max_ns());
  EXPECT_GT(ticks, 0);
}

}  // namespace
}  // namespace rtloop::telemetry
