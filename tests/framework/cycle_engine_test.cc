// Fake-clock tests of the per-cycle bookkeeping: context, statistics, watchdog, run_for,
// observers.
#include "rtloop/framework/cycle_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "alloc_counter.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr nanoseconds kPeriod = microseconds(1000);
constexpr TimePoint kStart(std::chrono::seconds(50));
TimePoint At(std::int64_t us) { return kStart + microseconds(us); }

static_assert(noexcept(std::declval<CycleEngine&>().BeginCycle(TimePoint())));
static_assert(noexcept(std::declval<CycleEngine&>().EndCycle(TimePoint(), StepResult::kContinue)));
static_assert(noexcept(std::declval<CycleEngine&>().EndCycle(TimePoint(), StepResult::kContinue,
                                                             nullptr)));

class RecordingObserver final : public CycleObserver {
 public:
  void OnCycle(const CycleSample& s) noexcept override {
    if (samples.size() < samples.capacity()) samples.push_back(s);
  }
  std::vector<CycleSample> samples = [] {
    std::vector<CycleSample> v;
    v.reserve(64);
    return v;
  }();
};

struct Fixture {
  explicit Fixture(OverrunPolicy policy, std::uint32_t watchdog = 0, bool keep = false,
                   std::uint64_t max_cycles = 0, std::uint64_t warmup_cycles = 0) {
    CycleEngineConfig c;
    c.task = 7;
    c.period = kPeriod;
    c.overrun_policy = policy;
    c.watchdog.max_consecutive_overruns = watchdog;
    c.watchdog.keep_running_after_fault = keep;
    c.max_cycles = max_cycles;
    c.warmup_cycles = warmup_cycles;
    c.observers = {&observer};
    c.stats = &stats;
    engine.emplace(c, kStart);
  }
  // One cycle that wakes `late_us` after its release and runs `exec_us`.
  CycleOutcome Cycle(std::int64_t late_us, std::int64_t exec_us,
                     StepResult r = StepResult::kContinue) {
    const TimePoint wake = engine->release() + microseconds(late_us);
    engine->BeginCycle(wake);
    return engine->EndCycle(wake + microseconds(exec_us), r);
  }
  RecordingObserver observer;
  TaskStats stats;
  std::optional<CycleEngine> engine;
};

TEST(CycleEngineTest, ContextDescribesTheCycle) {
  Fixture f(OverrunPolicy::kSkip);
  const CycleContext& c0 = f.engine->BeginCycle(At(20));
  EXPECT_EQ(c0.cycle, 0u);
  EXPECT_EQ(c0.release, At(0));
  EXPECT_EQ(c0.wake, At(20));
  EXPECT_EQ(c0.period, kPeriod);
  EXPECT_EQ(c0.since_last_wake, nanoseconds(0));
  EXPECT_EQ(c0.wakeup_latency(), microseconds(20));
  f.engine->EndCycle(At(30), StepResult::kContinue);
  const CycleContext& c1 = f.engine->BeginCycle(At(1005));
  EXPECT_EQ(c1.cycle, 1u);
  EXPECT_EQ(c1.release_index, 1u);
  EXPECT_EQ(c1.release, At(1000));
  EXPECT_EQ(c1.since_last_wake, microseconds(985));
}

TEST(CycleEngineTest, StatisticsFollowTheDefinitions) {
  Fixture f(OverrunPolicy::kSkip);
  f.Cycle(10, 100);  // L=10, X=100, first
  f.Cycle(30, 200);  // L=30, J=(1030-10)-1000=20
  f.Cycle(-5, 50);   // L=-5 (early wake), J=(1995-1030)-1000=-35
  const TaskStatsSnapshot s = f.stats.Snapshot();
  EXPECT_EQ(s.cycles, 3u);
  EXPECT_EQ(s.latency_min_ns, -5'000);
  EXPECT_EQ(s.latency_max_ns, 30'000);
  EXPECT_EQ(s.latency_sum_ns, 35'000);
  EXPECT_EQ(s.latency_last_ns, -5'000);
  EXPECT_EQ(s.execution_min_ns, 50'000);
  EXPECT_EQ(s.execution_max_ns, 200'000);
  EXPECT_EQ(s.execution_sum_ns, 350'000);
  EXPECT_EQ(s.jitter_min_ns, -35'000);
  EXPECT_EQ(s.jitter_max_ns, 20'000);
  EXPECT_EQ(s.jitter_last_ns, -35'000);
  EXPECT_EQ(s.overruns, 0u);
  ASSERT_TRUE(s.latency_avg_ns().has_value());
  EXPECT_DOUBLE_EQ(*s.latency_avg_ns(), 35'000.0 / 3);
  ASSERT_EQ(f.observer.samples.size(), 3u);
  EXPECT_EQ(f.observer.samples[0].flags, kCycleFirst);
  EXPECT_EQ(f.observer.samples[0].period_jitter_ns, 0);
  EXPECT_EQ(f.observer.samples[1].period_jitter_ns, 20'000);
  EXPECT_EQ(f.observer.samples[2].seq, 2u);
  EXPECT_EQ(f.observer.samples[2].task, 7u);
  EXPECT_EQ(f.observer.samples[2].release, At(2000));
}

TEST(CycleEngineTest, EmptyStatsSayNoDataInsteadOfZeroLatency) {
  TaskStats stats;
  const TaskStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.cycles, 0u);
  EXPECT_FALSE(s.has_data());
  EXPECT_FALSE(s.has_jitter());
  EXPECT_FALSE(s.latency_avg_ns().has_value());
  EXPECT_FALSE(s.execution_avg_ns().has_value());
  EXPECT_FALSE(s.jitter_range_ns().has_value());
  // The fields themselves stay 0 (not INT64_MAX/MIN sentinels), for code that ignores has_data().
  EXPECT_EQ(s.latency_min_ns, 0);
  EXPECT_EQ(s.latency_max_ns, 0);
  EXPECT_EQ(s.jitter_min_ns, 0);
  EXPECT_STREQ(TaskStateName(TaskState::kFault), "fault");
}

TEST(CycleEngineTest, SkipOverrunIsCountedAndReportedToTheNextStep) {
  Fixture f(OverrunPolicy::kSkip);
  f.Cycle(0, 2500);  // ends at 2.5 ms: releases 1 and 2 skipped
  const TaskStatsSnapshot s = f.stats.Snapshot();
  EXPECT_EQ(s.overruns, 1u);
  EXPECT_EQ(s.missed_releases, 2u);
  EXPECT_EQ(f.observer.samples[0].missed_releases, 2u);
  EXPECT_EQ(f.observer.samples[0].flags, kCycleFirst | kCycleOverrun);
  const CycleContext& next = f.engine->BeginCycle(At(3000));
  EXPECT_EQ(next.release, At(3000));
  EXPECT_EQ(next.release_index, 3u);
  EXPECT_EQ(next.missed_releases, 2u);
  f.engine->EndCycle(At(3001), StepResult::kContinue);
  EXPECT_EQ(f.engine->BeginCycle(At(4000)).missed_releases, 0u);
}

TEST(CycleEngineTest, CatchUpRunsBackToBackWithGrowingLatency) {
  Fixture f(OverrunPolicy::kCatchUp);
  f.Cycle(0, 3500);
  // The next three releases are already due: their wake-up latency shows how late they run.
  EXPECT_EQ(f.engine->release(), At(1000));
  f.engine->BeginCycle(At(3500));
  f.engine->EndCycle(At(3510), StepResult::kContinue);
  EXPECT_EQ(f.engine->release(), At(2000));
  EXPECT_EQ(f.observer.samples[1].wakeup_latency_ns, 2'500'000);
  EXPECT_EQ(f.stats.Snapshot().missed_releases, 0u);
}

TEST(CycleEngineTest, ReanchorOverrunReportsMissedAndShiftsTheGrid) {
  Fixture f(OverrunPolicy::kReanchor);
  f.Cycle(0, 2500);  // ends at 2.5 ms: old-grid releases 1 and 2 passed
  EXPECT_EQ(f.stats.Snapshot().missed_releases, 2u);
  EXPECT_EQ(f.observer.samples[0].missed_releases, 2u);
  const CycleContext& next = f.engine->BeginCycle(At(3500));
  EXPECT_EQ(next.release, At(3500));  // end + period
  EXPECT_EQ(next.missed_releases, 2u);
}

TEST(CycleEngineTest, WatchdogFaultsAfterConsecutiveOverrunsAndStops) {
  Fixture f(OverrunPolicy::kSkip, /*watchdog=*/3);
  EXPECT_FALSE(f.Cycle(0, 1500).fault);
  EXPECT_FALSE(f.Cycle(0, 100).fault);  // on time: the count restarts
  EXPECT_FALSE(f.Cycle(0, 1500).fault);
  EXPECT_FALSE(f.Cycle(0, 1500).fault);
  const CycleOutcome o = f.Cycle(0, 1500);
  EXPECT_TRUE(o.fault);
  EXPECT_TRUE(o.fault_state);
  EXPECT_TRUE(o.stop);
  EXPECT_EQ(f.stats.Snapshot().faults, 1u);
  EXPECT_NE(f.observer.samples.back().flags & kCycleFault, 0u);
}

TEST(CycleEngineTest, WatchdogCanKeepTheTaskRunning) {
  Fixture f(OverrunPolicy::kSkip, /*watchdog=*/2, /*keep=*/true);
  f.Cycle(0, 1500);
  CycleOutcome o = f.Cycle(0, 1500);
  EXPECT_TRUE(o.fault);
  EXPECT_FALSE(o.fault_state);
  EXPECT_FALSE(o.stop);
  f.Cycle(0, 1500);
  o = f.Cycle(0, 1500);
  EXPECT_TRUE(o.fault);
  EXPECT_EQ(f.stats.Snapshot().faults, 2u);
}

TEST(CycleEngineTest, StopsAtMaxCyclesOrWhenStepSaysStop) {
  Fixture f(OverrunPolicy::kSkip, 0, false, /*max_cycles=*/3);
  EXPECT_FALSE(f.Cycle(0, 1).stop);
  EXPECT_FALSE(f.Cycle(0, 1).stop);
  EXPECT_TRUE(f.Cycle(0, 1).stop);
  Fixture g(OverrunPolicy::kSkip);
  EXPECT_TRUE(g.Cycle(0, 1, StepResult::kStop).stop);
  EXPECT_FALSE(g.Cycle(0, 1, StepResult::kStop).fault_state);
}

TEST(CycleEngineTest, StepReturningFaultCountsOneFaultAndEndsInTheFaultState) {
  Fixture f(OverrunPolicy::kSkip);
  EXPECT_FALSE(f.Cycle(0, 1).fault_state);
  const CycleOutcome o = f.Cycle(0, 1, StepResult::kFault);
  EXPECT_TRUE(o.stop);
  EXPECT_TRUE(o.fault_state);
  EXPECT_FALSE(o.fault) << "OnFault() is the executor watchdog's hook";
  EXPECT_EQ(f.stats.Snapshot().faults, 1u);
  EXPECT_EQ(f.stats.Snapshot().cycles, 2u) << "the faulting cycle is measured like any other";
  EXPECT_NE(f.observer.samples.back().flags & kCycleFault, 0u);
  EXPECT_EQ(f.observer.samples.front().flags & kCycleFault, 0u);
}

TEST(CycleEngineTest, StepFaultOnTheCycleTheWatchdogTripsCountsOneFault) {
  Fixture f(OverrunPolicy::kSkip, /*watchdog=*/1, /*keep=*/true);
  const CycleOutcome o = f.Cycle(0, 1500, StepResult::kFault);
  EXPECT_TRUE(o.fault);
  EXPECT_TRUE(o.fault_state) << "kFault ends the task even when the watchdog would keep it";
  EXPECT_TRUE(o.stop);
  EXPECT_EQ(f.stats.Snapshot().faults, 1u);
}

// Appends its tag to a shared log on every cycle: shows the order observers are called in.
class TaggingObserver final : public CycleObserver {
 public:
  TaggingObserver(char tag, std::vector<char>* log) : tag_(tag), log_(log) {}
  void OnCycle(const CycleSample& /*s*/) noexcept override {
    if (log_->size() < log_->capacity()) log_->push_back(tag_);
  }

 private:
  char tag_;
  std::vector<char>* log_;
};

TEST(CycleEngineTest, EveryObserverSeesEveryCycleInListOrder) {
  std::vector<char> log;
  log.reserve(16);
  TaggingObserver a('a', &log), b('b', &log), c('c', &log);
  TaskStats stats;
  CycleEngineConfig config;
  config.period = kPeriod;
  config.observers = {&a, &b, &c};
  config.stats = &stats;
  CycleEngine e(config, kStart);
  for (int i = 0; i < 2; ++i) {
    e.BeginCycle(e.release());
    e.EndCycle(e.release() + microseconds(1), StepResult::kContinue);
  }
  EXPECT_EQ(std::string(log.begin(), log.end()), "abcabc");
}

TEST(CycleEngineTest, ObserverListRefusesNullAndMoreThanItsCapacity) {
  CycleObserverList list;
  RecordingObserver o;
  EXPECT_FALSE(list.Add(nullptr));
  for (std::size_t i = 0; i < kMaxCycleObservers; ++i) EXPECT_TRUE(list.Add(&o));
  EXPECT_FALSE(list.Add(&o));
  EXPECT_EQ(list.size(), kMaxCycleObservers);
}

TEST(CycleEngineTest, RunForStopsAtTheFirstReleaseBeyondTheDuration) {
  TaskStats stats;
  CycleEngineConfig config;
  config.period = kPeriod;
  config.run_for = microseconds(2500);  // releases at 0, 1000, 2000 ms-grid points: 3 cycles
  config.stats = &stats;
  CycleEngine e(config, kStart);
  int cycles = 0;
  for (bool stop = false; !stop && cycles < 100; ++cycles) {
    e.BeginCycle(e.release() + microseconds(5));
    stop = e.EndCycle(e.release() + microseconds(50), StepResult::kContinue).stop;
  }
  EXPECT_EQ(cycles, 3);
  // An exact multiple: run_for = 3 periods is 3 cycles too (E_3 is not before the end).
  config.run_for = microseconds(3000);
  CycleEngine f(config, kStart);
  cycles = 0;
  for (bool stop = false; !stop && cycles < 100; ++cycles) {
    f.BeginCycle(f.release());
    stop = f.EndCycle(f.release() + microseconds(50), StepResult::kContinue).stop;
  }
  EXPECT_EQ(cycles, 3);
}

TEST(CycleEngineTest, JitterExistsFromTheSecondCycle) {
  Fixture f(OverrunPolicy::kSkip);
  f.Cycle(10, 100);
  TaskStatsSnapshot s = f.stats.Snapshot();
  EXPECT_TRUE(s.has_data());
  EXPECT_FALSE(s.has_jitter());
  EXPECT_FALSE(s.jitter_range_ns().has_value());
  f.Cycle(30, 100);
  f.Cycle(0, 100);
  s = f.stats.Snapshot();
  EXPECT_TRUE(s.has_jitter());
  ASSERT_TRUE(s.jitter_range_ns().has_value());
  EXPECT_EQ(*s.jitter_range_ns(), 20'000 - (-30'000));
}

TEST(CycleEngineTest, WarmupCyclesRunButStayOutOfTheStatisticsAndTheObservers) {
  Fixture f(OverrunPolicy::kSkip, /*watchdog=*/0, /*keep=*/false, /*max_cycles=*/5,
            /*warmup_cycles=*/2);
  EXPECT_FALSE(f.Cycle(900, 100).stop);  // warm-up: a cold start's late wake-up
  EXPECT_FALSE(f.Cycle(0, 2500).stop);   // warm-up: an overrun, releases 2 and 3 skipped
  TaskStatsSnapshot s = f.stats.Snapshot();
  EXPECT_EQ(s.warmup_cycles, 2u);
  EXPECT_FALSE(s.has_data()) << "warm-up cycles are no data";
  EXPECT_EQ(s.overruns, 0u);
  EXPECT_EQ(s.missed_releases, 0u);
  EXPECT_TRUE(f.observer.samples.empty());
  EXPECT_EQ(f.engine->release(), At(4000)) << "the grid and the overrun policy still apply";

  EXPECT_FALSE(f.Cycle(10, 100).stop);
  EXPECT_FALSE(f.Cycle(30, 100).stop);
  EXPECT_TRUE(f.Cycle(20, 100).stop) << "max_cycles counts the warm-up too";
  s = f.stats.Snapshot();
  EXPECT_EQ(s.cycles, 3u);
  EXPECT_EQ(s.latency_max_ns, 30'000);
  EXPECT_EQ(s.latency_sum_ns, 60'000);
  EXPECT_TRUE(s.has_jitter()) << "the first measured cycle follows a warm-up wake-up";
  ASSERT_EQ(f.observer.samples.size(), 3u);
  EXPECT_EQ(f.observer.samples[0].seq, 0u) << "seqs count samples, from 0";
  EXPECT_EQ(f.observer.samples[0].release, At(4000));
  EXPECT_EQ(f.observer.samples[0].flags, 0u) << "not the task's first cycle";
  EXPECT_EQ(f.observer.samples[2].seq, 2u);
}

TEST(CycleEngineTest, PhaseOffsetSetsTheFirstRelease) {
  TaskStats stats;
  CycleEngineConfig c;
  c.period = kPeriod;
  c.stats = &stats;
  CycleEngine e(c, kStart + microseconds(300));
  EXPECT_EQ(e.release(), At(300));
  e.BeginCycle(At(301));
  e.EndCycle(At(302), StepResult::kContinue);
  EXPECT_EQ(e.release(), At(1300));
}

TEST(CycleEngineTest, BookkeepingAllocatesNothing) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under ASan/TSan";
  }
  for (OverrunPolicy policy :
       {OverrunPolicy::kSkip, OverrunPolicy::kCatchUp, OverrunPolicy::kReanchor}) {
    Fixture f(policy, /*watchdog=*/2, /*keep=*/true);
    testing::AllocationCounter counter;
    for (int i = 0; i < 10'000; ++i) f.Cycle(i % 7, (i % 50 == 0) ? 2500 : 100);
    EXPECT_EQ(counter.Allocations(), 0u) << OverrunPolicyName(policy);
    EXPECT_EQ(counter.Deallocations(), 0u) << OverrunPolicyName(policy);
    EXPECT_EQ(f.stats.Snapshot().cycles, 10'000u);
  }
}

// The RT loop's form of EndCycle() (a bool and an out-parameter) says the same as the other one,
// and returns true exactly on the cycles whose outcome has stop or fault set.
TEST(CycleEngineTest, RtLoopFormAgreesWithTheOutcomeForm) {
  struct Step {
    std::int64_t exec_us;
    StepResult result;
  };
  const std::vector<Step> steps = {{10, StepResult::kContinue},   {1500, StepResult::kContinue},
                                   {1500, StepResult::kContinue}, {10, StepResult::kFault},
                                   {10, StepResult::kStop},       {10, StepResult::kContinue}};
  for (const std::uint32_t watchdog : {0u, 2u}) {
    for (const std::uint64_t max_cycles : {0u, 3u}) {
      Fixture a(OverrunPolicy::kSkip, watchdog, /*keep=*/true, max_cycles);
      Fixture b(OverrunPolicy::kSkip, watchdog, /*keep=*/true, max_cycles);
      for (const Step& s : steps) {
        const CycleOutcome oa = a.Cycle(5, s.exec_us, s.result);
        const TimePoint wake = b.engine->release() + microseconds(5);
        b.engine->BeginCycle(wake);
        CycleOutcome ob;
        const bool any = b.engine->EndCycle(wake + microseconds(s.exec_us), s.result, &ob);
        EXPECT_EQ(any, oa.stop || oa.fault);
        EXPECT_EQ(ob.stop, oa.stop);
        EXPECT_EQ(ob.fault, oa.fault);
        EXPECT_EQ(ob.stop_all, oa.stop_all);
        EXPECT_EQ(ob.fault_state, oa.fault_state);
        EXPECT_EQ(b.engine->release(), a.engine->release());
      }
      EXPECT_EQ(b.stats.Snapshot().cycles, a.stats.Snapshot().cycles);
      EXPECT_EQ(b.stats.Snapshot().faults, a.stats.Snapshot().faults);
      EXPECT_EQ(b.observer.samples.size(), a.observer.samples.size());
    }
  }
}

}  // namespace
}  // namespace rtloop
