#include "rtloop/telemetry/task_telemetry.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "alloc_counter.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/collector.h"
#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using testing::MakeCycle;
using testing::MakeTaskConfig;

static_assert(noexcept(std::declval<TelemetryHub&>().OnCycle(CycleSample{})));
static_assert(noexcept(std::declval<TaskTelemetry&>().OnCycle(CycleSample{})));

TEST(TelemetryHubTest, RecordsHistogramsAndSamplesAndReadsTheExecutorStatistics) {
  testing::HubWithStats fed;
  TelemetryHub& hub = fed.hub;
  ASSERT_TRUE(hub.AddTask(3, MakeTaskConfig("pos")).ok());
  hub.OnRtThreadStart(3);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    CycleSample c = MakeCycle(3, i, static_cast<std::int64_t>(10'000 + i), 2000);
    if (i == 500) {
      c.flags |= kCycleOverrun;
      c.missed_releases = 2;
    }
    fed.OnCycle(c);
  }
  Result<TaskReport> snap = hub.Snapshot(3);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->name, "pos");
  EXPECT_EQ(snap->stats.cycles, 1000u);
  EXPECT_EQ(snap->stats.latency_min_ns, 10'000);
  EXPECT_EQ(snap->stats.latency_max_ns, 10'999);
  EXPECT_EQ(snap->stats.latency_sum_ns, 1000 * 10'000 + 999 * 1000 / 2);
  EXPECT_EQ(snap->stats.execution_max_ns, 2000);
  EXPECT_EQ(snap->stats.overruns, 1u);
  EXPECT_EQ(snap->stats.missed_releases, 2u);
  EXPECT_EQ(snap->latency.count, 1000u);
  ASSERT_TRUE(snap->latency.percentiles.valid);
  EXPECT_NEAR(static_cast<double>(snap->latency.percentiles.p50_ns), 10'500.0, 11.0);
  EXPECT_EQ(snap->latency.min_ns, snap->stats.latency_min_ns);  // histogram and executor agree
  EXPECT_EQ(snap->samples, 1000u);
  EXPECT_EQ(snap->ring_pushed, 1000u);
  EXPECT_EQ(snap->ring_dropped, 0u);
  // Without a collector, Snapshot() drained the ring itself, into the histograms.
  EXPECT_EQ(snap->delivered, 1000u);
  EXPECT_EQ(hub.TaskIds(), std::vector<TaskId>{3});
  EXPECT_TRUE(snap->latency_buckets.empty());
  Result<TaskReport> with_buckets = hub.Snapshot(3, {.buckets = true});
  ASSERT_TRUE(with_buckets.ok());
  std::uint64_t in_buckets = 0;
  for (const HistogramBucket& b : with_buckets->latency_buckets) in_buckets += b.count;
  EXPECT_EQ(in_buckets, 1000u);
  ASSERT_EQ(with_buckets->execution_buckets.size(), 1u);
  EXPECT_EQ(with_buckets->execution_buckets[0].lower_ns, 2000);
  EXPECT_EQ(with_buckets->execution_buckets[0].count, 1000u);
}

// The one read model from a hub alone (the gRPC server and the sample log have no executor):
// the configuration the hub was given, its scheduling as configured, the reader's counters; the
// histograms only when asked for, never a zero in their place.
TEST(TelemetryHubTest, AReportFromTheHubAloneHasTheConfigurationAndHistogramsOnlyWhenAsked) {
  testing::HubWithStats fed;
  TelemetryHub& hub = fed.hub;
  TaskConfig config = MakeTaskConfig("axis", std::chrono::microseconds(250));
  config.cpus = {1, 3};
  config.policy = SchedPolicy::kRr;
  config.priority = 70;
  ASSERT_TRUE(hub.AddTask(2, config).ok());
  hub.OnRtThreadStart(2);
  for (std::uint64_t i = 0; i < 10; ++i) fed.OnCycle(MakeCycle(2, i, 5'000, 1'000, 250'000));

  const TaskReport cheap = MakeTaskReport(nullptr, &hub, 2, {.histograms = false});
  EXPECT_EQ(cheap.id, 2u);
  EXPECT_EQ(cheap.name, "axis");
  EXPECT_EQ(cheap.info.config.period, std::chrono::microseconds(250));
  EXPECT_EQ(FormatCpus(cheap.info.config.cpus), "1,3");
  EXPECT_EQ(cheap.info.effective_policy, SchedPolicy::kRr);
  EXPECT_EQ(cheap.info.effective_priority, 70);
  EXPECT_FALSE(cheap.info.fell_back_to_non_rt);
  EXPECT_EQ(cheap.stats.cycles, 10u);
  ASSERT_TRUE(cheap.telemetry);
  EXPECT_EQ(cheap.samples, 10u);
  EXPECT_EQ(cheap.latency.count, 0u) << "no histogram pass was asked for";
  EXPECT_FALSE(cheap.latency.percentiles.valid);

  const TaskReport full = MakeTaskReport(nullptr, &hub, 2);
  EXPECT_EQ(full.latency.count, 10u);
  EXPECT_TRUE(full.latency.percentiles.valid);
  EXPECT_EQ(full.delivered, 10u) << "the rings were drained first";

  // Neither the executor nor the hub knows task 5: an id and no data.
  const TaskReport unknown = MakeTaskReport(nullptr, &hub, 5);
  EXPECT_EQ(unknown.id, 5u);
  EXPECT_FALSE(unknown.telemetry);
  EXPECT_FALSE(unknown.has_data());
  EXPECT_EQ(FormatCpus({}), "any");
}

TEST(TelemetryHubTest, SamplesOfUnknownTasksAreCountedAndIgnored) {
  TelemetryHub hub;
  hub.OnCycle(MakeCycle(9, 0, 1, 1));
  hub.OnCycle(MakeCycle(100'000, 0, 1, 1));
  EXPECT_EQ(hub.unknown_task_samples(), 2u);
  EXPECT_EQ(hub.Snapshot(9).status().code(), StatusCode::kNotFound);
}

// The executor calls a task's TaskTelemetry directly (CycleObserver::ForTask); a task the hub does
// not have is served by the hub itself, which still counts its samples as unknown.
TEST(TelemetryHubTest, ForTaskIsTheTasksTelemetryOrTheHub) {
  TelemetryHub hub;
  ASSERT_TRUE(hub.AddTask(2, MakeTaskConfig("pos")).ok());
  EXPECT_EQ(hub.ForTask(2), static_cast<CycleObserver*>(hub.task(2)));
  EXPECT_EQ(hub.ForTask(5), static_cast<CycleObserver*>(&hub));
  EXPECT_EQ(hub.ForTask(100'000), static_cast<CycleObserver*>(&hub));
  hub.OnRtThreadStart(2);
  hub.ForTask(2)->OnCycle(MakeCycle(2, 0, 1000, 1));
  hub.ForTask(5)->OnCycle(MakeCycle(5, 0, 1000, 1));
  EXPECT_EQ(hub.task(2)->samples(), 1u);
  EXPECT_EQ(hub.unknown_task_samples(), 1u);
}

TEST(TelemetryHubTest, AddTaskRejectsIdsBeyondTheSlotsAndDuplicates) {
  TelemetryHub hub({.max_tasks = 4});
  Status beyond = hub.AddTask(4, MakeTaskConfig("x"));
  EXPECT_EQ(beyond.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(beyond.message().find("max_tasks"), std::string::npos) << beyond.message();
  ASSERT_TRUE(hub.AddTask(1, MakeTaskConfig("a")).ok());
  EXPECT_EQ(hub.AddTask(1, MakeTaskConfig("a")).code(), StatusCode::kAlreadyExists);
  TaskConfig bad = MakeTaskConfig("b");
  bad.period = std::chrono::nanoseconds(0);
  EXPECT_EQ(hub.AddTask(2, bad).code(), StatusCode::kInvalidArgument);
  TelemetryHub huge({.drain_period = std::chrono::hours(1)});
  Status too_big = huge.AddTask(0, MakeTaskConfig("fast", std::chrono::microseconds(1)));
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("\"fast\""), std::string::npos) << too_big.message();
}

TEST(TelemetryHubTest, RingIsSizedFromTheTaskRateAndDrainPeriod) {
  TelemetryHub hub({.drain_period = std::chrono::milliseconds(4), .min_ring_capacity = 1024});
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("fast", std::chrono::microseconds(1))).ok());
  ASSERT_TRUE(hub.AddTask(1, MakeTaskConfig("slow", std::chrono::milliseconds(10))).ok());
  EXPECT_GE(hub.task(0)->ring().capacity(), 8000u);
  EXPECT_EQ(hub.task(1)->ring().capacity(), 1024u);
}

TEST(TelemetryHubTest, StatsComeOnlyFromTheAttachedReader) {
  struct Stopped final : TaskStatsReader {
    TaskStatsSnapshot Stats(TaskId id) const noexcept override {
      TaskStatsSnapshot s;
      s.state = TaskState::kStopped;
      s.tid = 1234;
      s.cycles = 77 + id;
      return s;
    }
  } stopped;
  TelemetryHub hub;
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("a")).ok());
  hub.AttachStats(stopped);
  EXPECT_TRUE(hub.has_stats());
  Result<TaskReport> snap = hub.Snapshot(0);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->stats.state, TaskState::kStopped);
  EXPECT_EQ(snap->stats.tid, 1234);
  EXPECT_EQ(snap->stats.cycles, 77u);
  EXPECT_EQ(hub.Stats(0).cycles, 77u);

  TelemetryHub without_stats;
  ASSERT_TRUE(without_stats.AddTask(0, MakeTaskConfig("a")).ok());
  EXPECT_FALSE(without_stats.has_stats());
  Result<TaskReport> without = without_stats.Snapshot(0);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(without.status().message().find("AttachStats"), std::string::npos)
      << without.status().message();
  EXPECT_TRUE(without_stats.SnapshotAll().empty());
  EXPECT_EQ(without_stats.Stats(0).cycles, 0u);
}

TEST(TelemetryHubTest, CyclesMakeNoHeapAllocationsInSteadyState) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  TelemetryHub hub({.min_ring_capacity = 1024});
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("a", std::chrono::microseconds(100))).ok());
  ASSERT_TRUE(hub.AddTask(1, MakeTaskConfig("b", std::chrono::microseconds(100))).ok());
  hub.OnRtThreadStart(0);
  hub.OnRtThreadStart(1);
  Collector collector(hub);
  hub.OnCycle(MakeCycle(0, 0, 1, 1));
  collector.DrainOnce();  // first pass: warm-up
  rtloop::testing::AllocationCounter counter;
  for (std::uint64_t i = 1; i < 5000; ++i) {
    hub.OnCycle(MakeCycle(0, i, static_cast<std::int64_t>(i * 13 % 100'000), 5000));
    hub.OnCycle(MakeCycle(1, i, -static_cast<std::int64_t>(i % 7), 5000));
    if (i % 500 == 0) collector.DrainOnce();  // collector without subscribers: no allocation
  }
  for (std::uint64_t i = 5000; i < 7000; ++i) hub.OnCycle(MakeCycle(0, i, 1, 1));  // ring full
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_GT(hub.task(0)->ring().writer().dropped(), 0u);
}

long MinorFaultsOfThisThread() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

TEST(TelemetryHubTest, CyclesTouchOnlyMemoryPrefaultedAtSetUp) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "sanitizers map shadow memory on first touch";
  }
  if (const char* emulator = std::getenv("RTLOOP_TEST_EMULATED")) {  // cmake/dev.sh test --arch
    GTEST_SKIP() << "under " << emulator << ": the page-fault counters include the emulator's "
                 << "own faults (it translates code on first run)";
  }
  TelemetryHub hub({.ring_capacity = 16384});  // 512 KB of ring
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("a")).ok());
  hub.OnRtThreadStart(0);
  hub.OnCycle(MakeCycle(0, 0, 1, 1));  // the code's own pages
  const long before = MinorFaultsOfThisThread();
  // Every histogram bucket (latency 0 .. 2^37 ns, both histograms) and every ring slot, then more.
  std::uint64_t seq = 1;
  for (std::int64_t v = 1; v < HistogramLayout().max_trackable(); v += 1 + v / 2048, ++seq) {
    hub.OnCycle(MakeCycle(0, seq, v, v));
  }
  ASSERT_GT(seq, 16384u);
  EXPECT_GT(hub.task(0)->ring().writer().dropped(), 0u);  // the whole ring was written
  EXPECT_EQ(MinorFaultsOfThisThread() - before, 0)
      << "page faults on the RT path: rings and histograms must be prefaulted at set-up";
}

// A task that notes its own thread's allocation count at two cycles: the RT thread is what must not
// allocate. (A process-wide count also took the collector's idle wake-ups, which may allocate:
// they are not on the RT path, and made this test fail once in a loaded run.)
class AllocationProbe final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle == kFrom) from_.store(rtloop::testing::ThreadAllocations());
    if (ctx.cycle == kTo) to_.store(rtloop::testing::ThreadAllocations());
    return StepResult::kContinue;
  }
  static constexpr std::uint64_t kFrom = 500;
  static constexpr std::uint64_t kTo = 2999;
  std::atomic<std::uint64_t> from_{0};
  std::atomic<std::uint64_t> to_{0};
};

// A Runtime with `layout`, one task of 3000 cycles: no heap allocation on its thread in steady
// state, every sample accounted for.
void ExpectRuntimeTaskMakesNoHeapAllocations(const HistogramLayoutConfig& layout) {
  // The Runtime's wiring (hub as the task's observer, its task statistics, collector), no gRPC.
  RuntimeConfig rc;
  rc.executor.lock_memory = false;
  rc.executor.start_delay = std::chrono::milliseconds(5);
  rc.telemetry.serve_grpc = false;
  rc.telemetry.histogram_layout = layout;
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  AllocationProbe probe;
  TaskConfig cfg = MakeTaskConfig("probe", std::chrono::microseconds(200));
  cfg.policy = SchedPolicy::kOther;
  cfg.priority = 0;
  cfg.max_cycles = 3000;
  Result<TaskId> id = (*rt)->AddTask(probe, cfg);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  ASSERT_TRUE((*rt)->Stop().ok());
  EXPECT_EQ(probe.to_.load() - probe.from_.load(), 0u)
      << "heap allocations between cycle " << AllocationProbe::kFrom << " and "
      << AllocationProbe::kTo << " on the task's thread, with telemetry and the collector running";
  Result<TaskReport> snap = (*rt)->hub()->Snapshot(*id);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->samples, 3000u);
  EXPECT_EQ(snap->samples, snap->delivered + snap->ring_dropped);
  // The executor attached the ring's producer token on the task's thread (this test never calls
  // OnRtThreadStart itself): without it every sample would have been dropped.
  EXPECT_GT(snap->ring_pushed, 0u);
  EXPECT_EQ(snap->ring_pushed, snap->delivered);  // the collector's Stop() drained the rest
  EXPECT_EQ(snap->latency.count, 3000u);
  EXPECT_EQ(snap->stats.cycles, 3000u);  // from the executor
  EXPECT_EQ((*rt)->hub()->task(*id)->latency().layout().config().precision_bits,
            layout.precision_bits);
  EXPECT_EQ((*rt)->hub()->task(*id)->execution().layout().config().range_bits, layout.range_bits);
}

TEST(TelemetryHubTest, RealExecutorWithTelemetryMakesNoHeapAllocationsInSteadyState) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  ExpectRuntimeTaskMakesNoHeapAllocations({});
}

// Issue 18 §4: TelemetryConfig::histogram_layout reaches every task's histograms, and a small
// layout keeps the RT path allocation-free.
TEST(TelemetryHubTest, RealExecutorWithASmallHistogramLayoutMakesNoHeapAllocations) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  ExpectRuntimeTaskMakesNoHeapAllocations({.precision_bits = 7, .range_bits = 30});
}

// Every bucket of a small layout, its overflow and negatives, from the RT path: no allocation and
// no page fault (the histograms of the layout are allocated and written at AddTask()).
TEST(TelemetryHubTest, ASmallLayoutsEveryBucketIsRecordedWithoutAllocationOrPageFault) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  if (const char* emulator = std::getenv("RTLOOP_TEST_EMULATED")) {
    GTEST_SKIP() << "under " << emulator << ": the page-fault counters include the emulator's";
  }
  Result<HistogramLayout> small = HistogramLayout::Create({.precision_bits = 7, .range_bits = 30});
  ASSERT_TRUE(small.ok());
  TelemetryHub hub({.ring_capacity = 1024, .histogram_layout = *small});
  ASSERT_TRUE(hub.AddTask(0, MakeTaskConfig("a")).ok());
  EXPECT_EQ(hub.task(0)->latency().layout(), *small);
  EXPECT_EQ(hub.task(0)->execution().layout(), *small);
  hub.OnRtThreadStart(0);
  hub.OnCycle(MakeCycle(0, 0, 1, 1));  // the code's own pages
  std::uint64_t seq = 1;
  rtloop::testing::AllocationCounter counter;
  const long before = MinorFaultsOfThisThread();
  for (std::int64_t v = 0; v < small->max_trackable(); v += 1 + v / 256, ++seq) {
    hub.OnCycle(MakeCycle(0, seq, v, v));
  }
  for (const std::int64_t v :
       {small->max_trackable(), small->max_trackable() * 4, std::int64_t{-3}}) {
    hub.OnCycle(MakeCycle(0, seq++, v, v));
  }
  EXPECT_EQ(MinorFaultsOfThisThread() - before, 0);
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_GT(hub.task(0)->ring().writer().dropped(), 0u);  // the RT thread recorded those itself
  hub.Drain();                                            // and the rest from the ring
  const LatencyHistogram& h = hub.task(0)->latency();
  EXPECT_EQ(h.count(), seq);
  EXPECT_EQ(h.overflow_count(), 2u);
  EXPECT_EQ(h.negative_count(), 1u);
  EXPECT_EQ(h.max_ns(), small->max_trackable() * 4);  // exact, beyond what a Sample holds
  std::vector<HistogramBucket> buckets;
  h.ExportBuckets(&buckets);
  EXPECT_EQ(buckets.size(), small->bucket_count() + 2);  // every bucket, negatives, overflow
}

// Records which seqs reached a TaskSampleObserver, and how.
class SeqObserver final : public TaskSampleObserver {
 public:
  void OnDrained(std::span<const Sample> samples) noexcept override {
    for (const Sample& s : samples) {
      if ((s.flags & kSampleSaturated) == 0) drained.push_back(s.seq);
    }
  }
  void OnRefused(const CycleSample& sample) noexcept override {
    refused.push_back(sample.seq);
    refused_latency.push_back(sample.wakeup_latency_ns);
  }
  std::vector<std::uint64_t> drained;
  std::vector<std::uint64_t> refused;
  std::vector<std::int64_t> refused_latency;
};

// Every cycle reaches the task's sample observer exactly once: from the ring's consumer (the
// collector, or the hub's own drain without one) or, refused by the full ring or saturated, from
// the RT thread with its exact values.
TEST(TelemetryHubTest, ASampleObserverGetsEveryCycleOnceDrainedOrRefused) {
  for (bool with_collector : {false, true}) {
    TelemetryHub hub({.ring_capacity = 256});
    ASSERT_TRUE(hub.AddTask(1, MakeTaskConfig("obs")).ok());
    SeqObserver obs;
    EXPECT_EQ(hub.SetSampleObserver(2, &obs).code(), StatusCode::kNotFound);
    ASSERT_TRUE(hub.SetSampleObserver(1, &obs).ok());
    std::unique_ptr<Collector> collector;
    if (with_collector) collector = std::make_unique<Collector>(hub);  // the drainer, not started
    hub.OnRtThreadStart(1);
    constexpr std::uint64_t kCycles = 3000;
    for (std::uint64_t i = 0; i < kCycles; ++i) {
      const std::int64_t latency = i == 100 ? 5'000'000'000 : 10'000;  // 100: saturates
      hub.OnCycle(MakeCycle(1, i, latency, 2000));
      if (i % 1000 == 999) hub.Drain();  // 1000 cycles into a ring of 256: most are refused
    }
    hub.Drain();
    std::vector<std::uint64_t> all = obs.drained;
    all.insert(all.end(), obs.refused.begin(), obs.refused.end());
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), kCycles) << (with_collector ? "collector" : "hub's own drain");
    for (std::uint64_t i = 0; i < kCycles; ++i) ASSERT_EQ(all[i], i);
    EXPECT_TRUE(std::is_sorted(obs.drained.begin(), obs.drained.end())) << "seq order";
    EXPECT_EQ(obs.refused.size(), hub.task(1)->ring().writer().dropped() + 1);
    ASSERT_TRUE(std::find(obs.refused.begin(), obs.refused.end(), 100u) != obs.refused.end());
    EXPECT_EQ(*std::max_element(obs.refused_latency.begin(), obs.refused_latency.end()),
              5'000'000'000)
        << "the saturated cycle's exact latency";
  }
}

}  // namespace
}  // namespace rtloop::telemetry
