// CyclicThreadStats computed off the RT thread (bench/rtcost/README.md, "Third step"): from the
// samples a telemetry hub's ring carries (OnDrained), with the ones the full ring refuses or cannot
// hold recorded by the RT thread (OnRefused). The proof that this gives exactly the figures of the
// per-cycle path (OnCycle, a CycleObserver on the RT thread) for the same samples, across second
// boundaries, in us and ns, with refused samples interleaved; and that -b acts at the drain with
// cyclictest's figures ending at the breaking sample.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "alloc_counter.h"
#include "cyclic_thread_stats.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::cyclic {
namespace {

using std::chrono::nanoseconds;

static_assert(noexcept(std::declval<CyclicThreadStats&>().OnDrained({})));
static_assert(noexcept(std::declval<CyclicThreadStats&>().OnRefused(CycleSample{})));

std::unique_ptr<CyclicThreadStats> Make(const CyclicStatsConfig& config) {
  Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(config);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return std::move(stats).value();
}

// `n` samples on a 1 ms grid starting 3 ms before a second boundary, with release phases that put
// some wake-ups just across it; latencies mostly a few us to 120 us (fractional), some early
// (negative), one beyond the 32-bit Sample (3 s: saturated, recorded by the RT thread).
std::vector<CycleSample> Samples(std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<CycleSample> out;
  for (std::size_t i = 0; i < n; ++i) {
    CycleSample s;
    s.seq = i;
    s.task = 0;
    // Every 500th release lies 700 ns before a whole second: a wake-up 900 ns late crosses it.
    const std::int64_t base = 41'997'000'000 + static_cast<std::int64_t>(i) * 1'000'000;
    s.release = TimePoint(
        nanoseconds(i % 500 == 7 ? (base / 1'000'000'000 + 1) * 1'000'000'000 - 700 : base + 333));
    s.wakeup_latency_ns = static_cast<std::int64_t>(next() % 120'000) + 900;
    if (i % 97 == 5) s.wakeup_latency_ns = -1'500;  // early: an overflow in cyclictest's histogram
    if (i == n / 2) s.wakeup_latency_ns = 3'000'000'123;  // saturates the Sample
    s.execution_ns = 700;
    out.push_back(s);
  }
  return out;
}

struct Figures {
  CyclicStatsSnapshot snap;
  ThreadReport report;
  std::vector<SpikeEvent> spikes;
  std::vector<std::pair<std::uint64_t, std::int64_t>> values;  // -v
};

Figures Read(CyclicThreadStats& stats) {
  Figures f;
  stats.DrainValues([&](std::uint64_t c, std::int64_t v) { f.values.emplace_back(c, v); },
                    /*all=*/true);
  f.snap = stats.Snapshot();
  stats.FillReport(f.report);
  f.spikes = stats.Spikes();
  return f;
}

void ExpectSame(const Figures& a, const Figures& b) {
  EXPECT_EQ(a.snap.cycles, b.snap.cycles);
  EXPECT_EQ(a.snap.min, b.snap.min);
  EXPECT_EQ(a.snap.act, b.snap.act);
  EXPECT_EQ(a.snap.avg_sum, b.snap.avg_sum) << "integers below 2^53: exact in any order";
  EXPECT_EQ(a.snap.max, b.snap.max);
  EXPECT_EQ(a.snap.histogram_overflows, b.snap.histogram_overflows);
  EXPECT_EQ(a.snap.spikes, b.snap.spikes);
  EXPECT_EQ(a.report.histogram, b.report.histogram);
  ASSERT_EQ(a.report.overflow_cycles.size(), b.report.overflow_cycles.size());
  for (std::size_t i = 0; i < a.report.overflow_cycles.size(); ++i) {
    ASSERT_EQ(a.report.overflow_cycles[i], b.report.overflow_cycles[i]) << "overflow " << i;
  }
  ASSERT_EQ(a.spikes.size(), b.spikes.size());
  for (std::size_t i = 0; i < a.spikes.size(); ++i) {
    EXPECT_EQ(a.spikes[i].value, b.spikes[i].value) << i;
    EXPECT_EQ(a.spikes[i].ts_us, b.spikes[i].ts_us) << i;
  }
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.report.verbose_drops, b.report.verbose_drops);
}

CyclicStatsConfig FullConfig(bool nsecs) {
  CyclicStatsConfig c;
  c.nsecs = nsecs;
  // Room for every overflow (the early and the saturated samples) in the list: which ones a full
  // list holds depends on the order of recording (cyclic_thread_stats.h).
  c.histogram_buckets = nsecs ? 121'000 : 1000;
  c.verbose = true;
  c.spike_threshold = nsecs ? 110'000 : 110;
  c.spike_nodes = 4096;  // room for every spike: the list does not depend on the order
  return c;
}

// A hub of one task (id 0, 1 ms) with a ring of 256 samples (one queue block: it fills quickly)
// and `stats` as the task's sample observer, its RT side set up (OnRtThreadStart: may allocate).
std::unique_ptr<telemetry::TelemetryHub> SmallRingHub(CyclicThreadStats* stats) {
  telemetry::TelemetryHubConfig hc;
  hc.ring_capacity = 256;
  auto hub = std::make_unique<telemetry::TelemetryHub>(hc);
  TaskConfig tc;
  tc.name = "cyclic0";
  tc.period = std::chrono::milliseconds(1);
  EXPECT_TRUE(hub->AddTask(0, tc).ok());
  EXPECT_TRUE(hub->SetSampleObserver(0, stats).ok());
  hub->OnRtThreadStart(0);
  return hub;
}

// The per-cycle path (OnCycle on the "RT thread") against the hub's: `capacity` samples fit in
// the ring; a drain every `drain_every` cycles (0: only at the end), so that with a small ring
// the refused samples fall between drained ones.
void CompareThroughHub(bool nsecs, std::size_t n, std::size_t drain_every,
                       std::uint64_t* refused_out = nullptr) {
  const std::vector<CycleSample> samples = Samples(n, nsecs ? 7 : 11);
  auto per_cycle = Make(FullConfig(nsecs));
  for (const CycleSample& s : samples) per_cycle->OnCycle(s);

  auto drained = Make(FullConfig(nsecs));
  const std::unique_ptr<telemetry::TelemetryHub> hub_owner = SmallRingHub(drained.get());
  telemetry::TelemetryHub& hub = *hub_owner;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    hub.OnCycle(samples[i]);
    if (drain_every > 0 && i % drain_every == drain_every - 1) hub.Drain();
  }
  hub.Drain();
  const std::uint64_t refused = hub.task(0)->ring().writer().dropped();
  if (refused_out != nullptr) *refused_out = refused;
  ExpectSame(Read(*drained), Read(*per_cycle));
  EXPECT_EQ(Read(*drained).snap.cycles, n);
}

TEST(CyclicThreadStatsDrained, GivesThePerCycleFiguresAcrossSecondBoundaries) {
  CompareThroughHub(/*nsecs=*/false, 3000, /*drain_every=*/100);
}

TEST(CyclicThreadStatsDrained, GivesThePerCycleFiguresInNanoseconds) {
  CompareThroughHub(/*nsecs=*/true, 3000, /*drain_every=*/100);
}

TEST(CyclicThreadStatsDrained, CountsRefusedSamplesExactlyWhereverTheyFall) {
  for (bool nsecs : {false, true}) {
    std::uint64_t refused = 0;
    // 700 cycles between drains into a ring of 256: most samples are refused, in runs between
    // drained ones; the RT thread records them itself.
    CompareThroughHub(nsecs, 5000, /*drain_every=*/700, &refused);
    EXPECT_GT(refused, 2000u) << "the test must exercise the refused path";
    CompareThroughHub(nsecs, 5000, /*drain_every=*/0, &refused);
    EXPECT_GT(refused, 4000u);
  }
}

TEST(CyclicThreadStatsDrained, ActIsTheLatestSampleWhenItWasRefused) {
  auto stats = Make({});
  CycleSample s;
  s.release = TimePoint(nanoseconds(1'000'000'000));
  s.seq = 5;
  s.wakeup_latency_ns = 9'000;
  stats->OnRefused(s);  // seq 5: refused while seqs 3 and 4 were still in the ring
  telemetry::Sample older[2];
  for (int i = 0; i < 2; ++i) {
    s.seq = 3 + static_cast<std::uint64_t>(i);
    s.wakeup_latency_ns = 4'000 + i * 1000;
    older[i] = telemetry::MakeSample(s);
  }
  stats->OnDrained(older);
  EXPECT_EQ(stats->Snapshot().act, 9) << "the value of seq 5, recorded before 3 and 4";
  EXPECT_EQ(stats->Snapshot().cycles, 3u);
  EXPECT_EQ(stats->Snapshot().min, 4);
}

TEST(CyclicThreadStatsDrained, TheVerboseRingWaitsForTheDrainBeforeARefusedSample) {
  CyclicStatsConfig c;
  c.verbose = true;
  auto stats = Make(c);
  CycleSample s;
  s.release = TimePoint(nanoseconds(1'000'000'000));
  s.seq = 2;
  s.wakeup_latency_ns = 7'000;
  stats->OnRefused(s);
  std::vector<std::int64_t> got;
  const auto take = [&](std::uint64_t, std::int64_t v) { got.push_back(v); };
  EXPECT_EQ(stats->DrainValues(take), 0u) << "cycles 0 and 1 are still in the ring";
  telemetry::Sample first[2];
  for (int i = 0; i < 2; ++i) {
    s.seq = static_cast<std::uint64_t>(i);
    s.wakeup_latency_ns = (i + 1) * std::int64_t{1000};
    first[i] = telemetry::MakeSample(s);
  }
  stats->OnDrained(first);
  EXPECT_EQ(stats->DrainValues(take), 2u) << "cycle 2 follows once a later one is drained";
  EXPECT_EQ(stats->DrainValues(take, /*all=*/true), 1u) << "or at the end";
  EXPECT_EQ(got, (std::vector<std::int64_t>{1, 2, 7}));
}

// Two measurement threads on one hub, as rtloop-cyclic runs them: thread 0 breaks -b at its
// sample 40; the latch trips at the drain, not before, and both threads' figures end there.
TEST(CyclicThreadStatsDrained, TheBreakActsAtTheDrainAndTheFiguresEndAtTheBreakingSample) {
  BreakLatch latch;
  telemetry::TelemetryHub hub;
  std::vector<std::unique_ptr<CyclicThreadStats>> stats;
  for (int t = 0; t < 2; ++t) {
    CyclicStatsConfig c;
    c.index = t;
    c.break_threshold = 100;
    c.break_latch = &latch;
    stats.push_back(Make(c));
    TaskConfig tc;
    tc.name = "cyclic" + std::to_string(t);
    tc.period = std::chrono::milliseconds(1);
    ASSERT_TRUE(hub.AddTask(static_cast<TaskId>(t), tc).ok());
    ASSERT_TRUE(hub.SetSampleObserver(static_cast<TaskId>(t), stats.back().get()).ok());
    hub.OnRtThreadStart(static_cast<TaskId>(t));
  }
  // Thread 1 runs 300 us behind thread 0 on the same 1 ms grid; latencies 10 us, but thread 0's
  // sample 40 (wake-up 1.040150 s) is 150 us late.
  for (std::uint64_t k = 0; k < 60; ++k) {
    for (int t = 0; t < 2; ++t) {
      CycleSample s;
      s.task = static_cast<TaskId>(t);
      s.seq = k;
      s.release = TimePoint(nanoseconds(1'000'000'000 + static_cast<std::int64_t>(k) * 1'000'000 +
                                        t * std::int64_t{300'000}));
      s.wakeup_latency_ns = t == 0 && k == 40 ? 150'000 : 10'000;
      hub.OnCycle(s);
    }
  }
  EXPECT_FALSE(latch.hit()) << "the RT path does not look at -b";
  hub.Drain();
  ASSERT_TRUE(latch.hit());
  const BreakLatch::Trip trip = latch.Get();
  EXPECT_EQ(trip.thread, 0);
  EXPECT_EQ(trip.seq, 40u);
  EXPECT_EQ(trip.value, 150);
  EXPECT_EQ(trip.wake_ns, 1'040'150'000);
  const CyclicStatsSnapshot s0 = stats[0]->Snapshot();
  EXPECT_EQ(s0.cycles, 41u) << "the breaking thread: up to its breaking sample";
  EXPECT_EQ(s0.max, 150);
  EXPECT_EQ(s0.act, 150);
  // Thread 1's sample 39 woke at 1.039310 s, before the break; sample 40 at 1.040310 s, after.
  const CyclicStatsSnapshot s1 = stats[1]->Snapshot();
  EXPECT_EQ(s1.cycles, 40u) << "other threads: the samples that woke up to the break";
  EXPECT_EQ(s1.max, 10);
}

TEST(CyclicThreadStatsDrained, TheBreakingThreadCountsOlderSamplesStillInTheRing) {
  BreakLatch latch;
  CyclicStatsConfig c;
  c.break_threshold = 100;
  c.break_latch = &latch;
  auto stats = Make(c);
  CycleSample s;
  s.release = TimePoint(nanoseconds(2'000'000'000));
  s.seq = 9;
  s.wakeup_latency_ns = 500'000;
  stats->OnRefused(s);  // refused, over the limit: trips at once
  ASSERT_TRUE(latch.hit());
  telemetry::Sample older[3];
  for (int i = 0; i < 3; ++i) {
    CycleSample o = s;
    o.seq = 6 + static_cast<std::uint64_t>(i);
    o.release = TimePoint(nanoseconds(1'997'000'000 + i * 1'000'000));
    o.wakeup_latency_ns = 20'000;
    older[i] = telemetry::MakeSample(o);
  }
  stats->OnDrained(older);
  EXPECT_EQ(stats->Snapshot().cycles, 4u);
  s.seq = 10;
  stats->OnRefused(s);
  EXPECT_EQ(stats->Snapshot().cycles, 4u) << "after the breaking sample";
}

// The RT thread's part with the stats behind the hub: the push, and for refused and saturated
// samples the hub's histograms and CyclicThreadStats::OnRefused(), allocate nothing.
TEST(CyclicThreadStatsDrained, TheRtPathAllocatesNothingWithRefusedSamples) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  BreakLatch latch;
  CyclicStatsConfig c = FullConfig(false);
  c.spike_nodes = 16;
  c.break_threshold = 1'000'000'000;
  c.break_latch = &latch;
  auto stats = Make(c);
  const std::unique_ptr<telemetry::TelemetryHub> hub_owner = SmallRingHub(stats.get());
  telemetry::TelemetryHub& hub = *hub_owner;
  const std::vector<CycleSample> samples = Samples(5000, 3);
  testing::AllocationCounter counter;
  for (const CycleSample& s : samples) hub.OnCycle(s);
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_GT(hub.task(0)->ring().writer().dropped(), 4000u);
  hub.Drain();
  EXPECT_EQ(stats->Snapshot().cycles, 5000u);
}

}  // namespace
}  // namespace rtloop::cyclic
