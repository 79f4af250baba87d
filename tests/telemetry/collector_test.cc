#include "rtloop/telemetry/collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::MakeCycle;
using testing::MakeTaskConfig;

class CollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (TaskId id : {0u, 1u}) {
      ASSERT_TRUE(hub_.AddTask(id, MakeTaskConfig(id == 0 ? "a" : "b")).ok());
      hub_.OnRtThreadStart(id);
    }
    stats_.AttachTo(hub_);
  }
  void Produce(TaskId task, std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to; ++i) {
      hub_.OnCycle(MakeCycle(task, i, static_cast<std::int64_t>(1000 + i), 500));
    }
  }
  TelemetryHub hub_{{.min_ring_capacity = 1024}};
  testing::ExecutorStatsStub stats_;
};

class CountingSink final : public SampleSink {
 public:
  void OnSamples(TaskId task, std::span<const Sample> samples) override {
    for (const Sample& s : samples) seqs[task].push_back(s.seq);
  }
  void OnDrainEnd() override { ++drain_ends; }
  std::map<TaskId, std::vector<std::uint64_t>> seqs;
  int drain_ends = 0;
};

TEST_F(CollectorTest, SubscriberReceivesPerTaskBatchesInSeqOrder) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({});
  Produce(0, 0, 100);
  Produce(1, 0, 50);
  EXPECT_EQ(collector.DrainOnce(), 150u);
  std::vector<SampleBatch> batches;
  EXPECT_EQ(sub->Pop(&batches, milliseconds(0)), 150u);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].task, 0u);
  EXPECT_EQ(batches[0].first_seq, 0u);
  EXPECT_EQ(batches[0].samples.size(), 100u);
  EXPECT_EQ(batches[0].lost_before, 0u);
  EXPECT_EQ(batches[1].task, 1u);
  EXPECT_EQ(batches[1].samples.size(), 50u);
  for (std::size_t i = 0; i < batches[0].samples.size(); ++i) {
    EXPECT_EQ(batches[0].samples[i].seq, i);
    EXPECT_EQ(batches[0].samples[i].latency_ns, static_cast<std::int32_t>(1000 + i));
  }
  const SubscriptionStats st = sub->stats();
  EXPECT_EQ(st.offered, 150u);
  EXPECT_EQ(st.received, 150u);
  EXPECT_EQ(st.lost, 0u);
}

TEST_F(CollectorTest, TaskFilterSelectsTasks) {
  Collector collector(hub_);
  auto only_b = collector.Subscribe({.tasks = {1}});
  Produce(0, 0, 10);
  Produce(1, 0, 20);
  collector.DrainOnce();
  std::vector<SampleBatch> batches;
  EXPECT_EQ(only_b->Pop(&batches, milliseconds(0)), 20u);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].task, 1u);
  EXPECT_EQ(only_b->stats().offered, 20u);
}

TEST_F(CollectorTest, FilterOfOnlyImpossibleTaskIdsMatchesNothing) {
  Collector collector(hub_);
  // Ids above 65535 cannot appear in a Sample: ignored, without sizing the filter by them.
  auto none = collector.Subscribe({.tasks = {4'000'000'000u}});
  EXPECT_FALSE(none->Wants(0));
  EXPECT_FALSE(none->Wants(1));
  auto mixed = collector.Subscribe({.tasks = {4'000'000'000u, 1}});
  EXPECT_FALSE(mixed->Wants(0));
  EXPECT_TRUE(mixed->Wants(1));
  Produce(0, 0, 10);
  collector.DrainOnce();
  EXPECT_EQ(none->stats().offered, 0u);
}

TEST_F(CollectorTest, SlowSubscriberLosesItsOldestSamplesWithoutAffectingOthers) {
  Collector collector(hub_);
  auto slow = collector.Subscribe({.capacity = 100});
  auto fast = collector.Subscribe({.capacity = 10'000});
  Produce(0, 0, 700);
  collector.DrainOnce();
  Produce(0, 700, 1000);
  collector.DrainOnce();
  std::vector<SampleBatch> batches;
  EXPECT_EQ(fast->Pop(&batches, milliseconds(0)), 1000u);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].lost_before, 0u);
  EXPECT_EQ(slow->Pop(&batches, milliseconds(0)), 100u);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].first_seq, 900u);
  EXPECT_EQ(batches[0].lost_before, 900u);
  const SubscriptionStats st = slow->stats();
  EXPECT_EQ(st.offered, 1000u);
  EXPECT_EQ(st.received + st.lost + st.queued, st.offered);
  EXPECT_EQ(st.lost, 900u);
  // Later batches report only the loss since the previous batch.
  Produce(0, 1000, 1010);
  collector.DrainOnce();
  EXPECT_EQ(slow->Pop(&batches, milliseconds(0)), 10u);
  EXPECT_EQ(batches[0].lost_before, 0u);
  EXPECT_EQ(batches[0].first_seq, 1000u);
}

// A consumer is told about new samples instead of polling: once per pass that queued some for it,
// never for a pass that brought none (or only other tasks'), and not after it unset the function.
TEST_F(CollectorTest, ASubscriptionIsToldOncePerPassThatQueuedSamplesForIt) {
  Collector collector(hub_, {.chunk_size = 100});
  auto a = collector.Subscribe({.tasks = {0}});
  auto b = collector.Subscribe({.tasks = {1}});
  int told_a = 0, told_b = 0;
  std::uint64_t popped_in_callback = 0;
  a->SetOnSamples([&] {
    ++told_a;
    std::vector<SampleBatch> batches;
    popped_in_callback += a->Pop(&batches, milliseconds(0));  // a consumer may Pop() right here
  });
  b->SetOnSamples([&] { ++told_b; });
  collector.DrainOnce();  // nothing produced
  EXPECT_EQ(told_a, 0);
  Produce(0, 0, 1000);  // ten bulk dequeues: still one call
  collector.DrainOnce();
  EXPECT_EQ(told_a, 1);
  EXPECT_EQ(told_b, 0) << "task 1 produced nothing";
  EXPECT_EQ(popped_in_callback, 1000u);
  Produce(1, 0, 3);
  collector.DrainOnce();
  EXPECT_EQ(told_a, 1);
  EXPECT_EQ(told_b, 1);
  a->SetOnSamples(nullptr);
  Produce(0, 1000, 1010);
  collector.DrainOnce();
  EXPECT_EQ(told_a, 1);
}

std::vector<Sample> Seqs(TaskId task, std::uint64_t from, std::uint64_t to) {
  std::vector<Sample> v;
  for (std::uint64_t i = from; i < to; ++i) v.push_back(MakeSample(MakeCycle(task, i, 1, 1)));
  return v;
}

TEST(SubscriptionTest, LostBeforeIsExactPerTaskAcrossInterleavedTasksAndPartialPops) {
  Subscription sub({.capacity = 4});
  std::vector<SampleBatch> b;
  sub.Offer(0, Seqs(0, 0, 4));  // t0: 0 1 2 3
  sub.Offer(1, Seqs(1, 0, 2));  // drops t0:0,1 -> t0:2 3, t1:0 1
  ASSERT_EQ(sub.Pop(&b, std::chrono::nanoseconds(0), 1), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].task, 0u);
  EXPECT_EQ(b[0].first_seq, 2u);
  EXPECT_EQ(b[0].lost_before, 2u);
  sub.Offer(0, Seqs(0, 4, 6));  // 5 > 4: drops t0:3 -> t1:0 1, t0:4 5
  ASSERT_EQ(sub.Pop(&b, std::chrono::nanoseconds(0)), 4u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].task, 1u);
  EXPECT_EQ(b[0].first_seq, 0u);
  EXPECT_EQ(b[0].lost_before, 0u);
  EXPECT_EQ(b[1].task, 0u);
  EXPECT_EQ(b[1].first_seq, 4u);
  EXPECT_EQ(b[1].lost_before, 1u);  // seq 3: the gap 2 -> 4 is exactly this loss
  sub.Offer(1, Seqs(1, 2, 9));      // more than the capacity at once: keeps t1:5..8
  ASSERT_EQ(sub.Pop(&b, std::chrono::nanoseconds(0)), 4u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].first_seq, 5u);
  EXPECT_EQ(b[0].lost_before, 3u);
  const SubscriptionStats st = sub.stats();
  EXPECT_EQ(st.offered, 15u);
  EXPECT_EQ(st.received, 9u);
  EXPECT_EQ(st.lost, 6u);
  EXPECT_EQ(st.queued, 0u);
}

TEST_F(CollectorTest, RingDropsShowAsSeqGapsThatSplitBatches) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({});
  const std::size_t cap = hub_.task(0)->ring().capacity();
  Produce(0, 0, cap + 10);  // the last 10 are dropped in the ring
  collector.DrainOnce();
  Produce(0, cap + 10, cap + 20);
  collector.DrainOnce();
  std::vector<SampleBatch> batches;
  EXPECT_EQ(sub->Pop(&batches, milliseconds(0), 1 << 20), cap + 10);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].samples.size(), cap);
  EXPECT_EQ(batches[1].first_seq, cap + 10);
  EXPECT_EQ(batches[1].lost_before, 0u);
  Result<TaskReport> snap = hub_.Snapshot(0);
  EXPECT_EQ(snap->ring_dropped, 10u);
  EXPECT_EQ(snap->samples, snap->delivered + snap->ring_dropped);
}

TEST_F(CollectorTest, PopWaitsForTheTimeoutAndWakesOnClose) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({});
  std::vector<SampleBatch> batches;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(sub->Pop(&batches, milliseconds(20)), 0u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(19));
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    collector.Unsubscribe(sub);
  });
  EXPECT_EQ(sub->Pop(&batches, std::chrono::seconds(30)), 0u);  // woken long before 30 s
  closer.join();
  EXPECT_TRUE(sub->closed());
  EXPECT_EQ(collector.stats().subscriptions, 0u);
}

TEST_F(CollectorTest, PopWithAnUnboundedTimeoutWaitsForSamples) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({});
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    Produce(0, 0, 3);
    collector.DrainOnce();
  });
  std::vector<SampleBatch> batches;
  EXPECT_EQ(sub->Pop(&batches, std::chrono::nanoseconds::max()), 3u);  // not 0 at once
  producer.join();
}

TEST_F(CollectorTest, PopWakesWhenTheCollectorThreadDelivers) {
  Collector collector(hub_, {.drain_period = milliseconds(1)});
  auto sub = collector.Subscribe({.tasks = {0}});
  ASSERT_TRUE(collector.Start().ok());
  EXPECT_EQ(collector.Start().code(), StatusCode::kFailedPrecondition);
  Produce(0, 0, 5);
  std::vector<SampleBatch> batches;
  std::size_t got = 0;
  for (int i = 0; i < 100 && got < 5; ++i) got += sub->Pop(&batches, std::chrono::seconds(1));
  EXPECT_EQ(got, 5u);
  collector.Stop();
}

TEST_F(CollectorTest, UnsubscribedSubscriptionsGetNothingMore) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({});
  Produce(0, 0, 10);
  collector.DrainOnce();
  sub->Close();
  Produce(0, 10, 20);
  collector.DrainOnce();
  EXPECT_EQ(sub->stats().offered, 10u);
  EXPECT_EQ(collector.stats().subscriptions, 0u);
  std::vector<SampleBatch> batches;
  EXPECT_EQ(sub->Pop(&batches, milliseconds(0)), 10u);  // what was queued is still readable
}

TEST_F(CollectorTest, StopDrainsWhatRemainsIntoSinks) {
  Collector collector(hub_, {.drain_period = std::chrono::seconds(10)});
  CountingSink sink;
  ASSERT_TRUE(collector.AddSink(&sink).ok());
  ASSERT_TRUE(collector.Start().ok());
  EXPECT_EQ(collector.AddSink(&sink).code(), StatusCode::kFailedPrecondition);
  std::this_thread::sleep_for(milliseconds(5));
  Produce(0, 0, 300);
  Produce(1, 0, 200);
  collector.Stop();
  ASSERT_EQ(sink.seqs[0].size(), 300u);
  ASSERT_EQ(sink.seqs[1].size(), 200u);
  for (std::uint64_t i = 0; i < 300; ++i) EXPECT_EQ(sink.seqs[0][i], i);
  EXPECT_GE(sink.drain_ends, 1);
  EXPECT_EQ(hub_.task(0)->delivered(), 300u);
  EXPECT_EQ(collector.stats().delivered, 500u);
}

TEST_F(CollectorTest, SubscriberLossIsCountedPerTaskInTheHub) {
  Collector collector(hub_);
  auto slow = collector.Subscribe({.capacity = 10});
  auto fast = collector.Subscribe({});
  Produce(0, 0, 25);
  Produce(1, 0, 4);
  collector.DrainOnce();
  // slow holds 10: the 15 oldest of task 0 went first, then the 4 of task 1 pushed out 4 more.
  EXPECT_EQ(slow->stats().lost, 19u);
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 19u);
  EXPECT_EQ(hub_.task(1)->subscriber_lost(), 0u);
  EXPECT_EQ(fast->stats().lost, 0u);
  Result<TaskReport> snap = hub_.Snapshot(0);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->subscriber_lost, 19u);
}

// The one definition of subscriber loss (collector.h, "Loss"): what a stream could not deliver at
// its end is lost, counted once, in the hub too; what a cancelled stream had queued is not.
TEST_F(CollectorTest, AbandonCountsTheUndeliveredAsLostOnceInTheHub) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({.capacity = 10});
  Produce(0, 0, 12);  // 2 dropped
  collector.DrainOnce();
  std::vector<SampleBatch> held;
  ASSERT_EQ(sub->Pop(&held, milliseconds(0), 4), 4u);  // seqs 2..5, lost_before 2
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(held[0].lost_before, 2u);
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 2u);
  // The consumer sent none of them: 4 held + 6 queued lost, and the 2 no batch delivered reported.
  const std::vector<std::uint64_t> last = sub->Abandon(held);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0], 12u);
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 12u);
  const SubscriptionStats st = sub->stats();
  EXPECT_EQ(st.lost, 12u);
  EXPECT_EQ(st.received, 0u);
  EXPECT_EQ(st.offered, st.received + st.lost + st.queued);
  EXPECT_TRUE(sub->closed());
  Produce(0, 12, 17);  // closed: nothing more is offered or lost
  collector.DrainOnce();
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 12u);
}

TEST_F(CollectorTest, WhatACancelledSubscriptionHadQueuedIsNotLost) {
  Collector collector(hub_);
  auto sub = collector.Subscribe({.capacity = 10});
  Produce(0, 0, 13);
  collector.DrainOnce();
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 3u);  // the full queue's drops
  collector.Unsubscribe(sub);                      // 10 still queued
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 3u);
  EXPECT_EQ(sub->stats().lost, 3u);
}

TEST_F(CollectorTest, ASubscriptionThatReportsItsOwnLossStaysOutOfTheHubsCount) {
  Collector collector(hub_);
  auto own = collector.Subscribe({.capacity = 10, .count_loss_in_hub = false});
  Produce(0, 0, 25);
  collector.DrainOnce();
  EXPECT_EQ(own->stats().lost, 15u);
  EXPECT_EQ(hub_.task(0)->subscriber_lost(), 0u);
}

TEST_F(CollectorTest, DrainPeriodDefaultsToTheHubs) {
  Collector collector(hub_);
  EXPECT_EQ(collector.drain_period(), hub_.config().drain_period);
  Collector own(hub_, {.drain_period = milliseconds(3)});
  EXPECT_EQ(own.drain_period(), milliseconds(3));
  Collector bad(hub_, {.drain_period = milliseconds(-1)});
  EXPECT_EQ(bad.Start().code(), StatusCode::kInvalidArgument);
}

TEST_F(CollectorTest, WithoutConsumersTheCollectorWakesOnlyAsTheRingsNeed) {
  // 1 ms tasks with 1024-sample rings: half full after 512 ms, so an idle collector drains about
  // twice a second instead of every 10 ms; a subscription brings the drain period back.
  Collector collector(hub_, {.drain_period = milliseconds(10)});
  ASSERT_TRUE(collector.Start().ok());
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_LE(collector.stats().passes, 2u) << "an idle collector drained every drain period";
  auto sub = collector.Subscribe({});
  for (int i = 0; i < 1000 && collector.stats().passes < 6; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GE(collector.stats().passes, 6u) << "a subscription did not bring back the drain period";
  EXPECT_GT(collector.tid(), 0);
  collector.Stop();
  EXPECT_EQ(collector.tid(), 0);
}

}  // namespace
}  // namespace rtloop::telemetry
