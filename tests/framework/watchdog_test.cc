// The task watchdogs (TaskConfig::watchdog): the execution-time watchdog with CODESYS semantics
// (time x sensitivity), the overrun watchdog's fault record, the actions (fault the task, stop
// every task, continue), the OnWatchdog() hook and the config checks. Fake-clock CycleEngine
// tests first, then real threads under the Executor (SCHED_OTHER, no privilege needed).
//
//   ctest --test-dir build -R 'WatchdogTest|WatchdogExecutorTest'
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "alloc_counter.h"
#include "executor_test_util.h"
#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/executor.h"

namespace rtloop {
namespace {

using namespace executor_testing;  // NOLINT(google-build-using-namespace): test helpers
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr std::chrono::nanoseconds kPeriod = microseconds(1000);
constexpr TimePoint kStart(std::chrono::seconds(50));

struct Engine {
  explicit Engine(const WatchdogConfig& w) {
    CycleEngineConfig c;
    c.period = kPeriod;
    c.watchdog = w;
    c.stats = &stats;
    engine.emplace(c, kStart);
  }
  // One cycle on time that runs `exec_us`.
  CycleOutcome Cycle(std::int64_t exec_us, StepResult r = StepResult::kContinue) {
    const TimePoint wake = engine->release();
    engine->BeginCycle(wake);
    return engine->EndCycle(wake + microseconds(exec_us), r);
  }
  TaskStats stats;
  std::optional<CycleEngine> engine;
};

WatchdogConfig ExecutionWatchdog(std::int64_t time_us, std::uint32_t sensitivity,
                                 WatchdogAction action = WatchdogAction::kFaultTask) {
  WatchdogConfig w;
  w.time = microseconds(time_us);
  w.sensitivity = sensitivity;
  w.action = action;
  return w;
}

TEST(WatchdogTest, TripsAfterSensitivityViolationsInARow) {
  Engine e(ExecutionWatchdog(/*time_us=*/300, /*sensitivity=*/3));
  EXPECT_FALSE(e.Cycle(400).fault);
  EXPECT_FALSE(e.Cycle(400).fault);
  EXPECT_FALSE(e.Cycle(100).fault);  // within the time: the run restarts
  EXPECT_FALSE(e.Cycle(400).fault);
  EXPECT_FALSE(e.Cycle(400).fault);
  const CycleOutcome o = e.Cycle(400);  // cycle 5: the third violation in a row
  EXPECT_TRUE(o.fault);
  EXPECT_TRUE(o.fault_state);
  EXPECT_TRUE(o.stop);
  EXPECT_FALSE(o.stop_all);
  const TaskStatsSnapshot s = e.stats.Snapshot();
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.watchdog_trips, 1u);
  EXPECT_EQ(s.watchdog_violations, 5u);
  EXPECT_EQ(s.overruns, 0u) << "400 us of a 1 ms period is no overrun: only the watchdog sees it";
  EXPECT_EQ(s.last_fault.reason, FaultReason::kWatchdog);
  EXPECT_EQ(s.last_fault.cycle, 5u);
  EXPECT_EQ(s.last_fault.consecutive, 3u);
  EXPECT_EQ(s.last_fault.execution_ns, 400'000);
  EXPECT_EQ(s.last_fault.limit_ns, 300'000);
  EXPECT_EQ(s.last_fault.time_ns, (kStart + 5 * kPeriod + microseconds(400)).ns());
  EXPECT_EQ(e.engine->last_fault().reason, FaultReason::kWatchdog);
}

TEST(WatchdogTest, OneCycleLongerThanTimeTimesSensitivityTripsAtOnce) {
  Engine e(ExecutionWatchdog(/*time_us=*/200, /*sensitivity=*/3));
  EXPECT_FALSE(e.Cycle(600).fault) << "600 us = time x sensitivity exactly: a violation only";
  const CycleOutcome o = e.Cycle(601);
  EXPECT_TRUE(o.fault);
  const TaskStatsSnapshot s = e.stats.Snapshot();
  EXPECT_EQ(s.last_fault.reason, FaultReason::kWatchdogSingle);
  EXPECT_EQ(s.last_fault.cycle, 1u);
  EXPECT_EQ(s.last_fault.consecutive, 2u);
  EXPECT_STREQ(FaultReasonName(s.last_fault.reason), "watchdog-single-cycle");
}

TEST(WatchdogTest, ExecutionEqualToTheTimeIsNoViolation) {
  Engine e(ExecutionWatchdog(/*time_us=*/300, /*sensitivity=*/1));
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(e.Cycle(300).fault);
  EXPECT_EQ(e.stats.Snapshot().watchdog_violations, 0u);
  EXPECT_TRUE(e.Cycle(301).fault) << "sensitivity 1: the first violation trips it";
}

TEST(WatchdogTest, ContinueActionKeepsRunningAndTripsAgainAfterANewRun) {
  Engine e(ExecutionWatchdog(/*time_us=*/300, /*sensitivity=*/2, WatchdogAction::kContinue));
  EXPECT_FALSE(e.Cycle(400).fault);
  CycleOutcome o = e.Cycle(400);
  EXPECT_TRUE(o.fault);
  EXPECT_FALSE(o.fault_state);
  EXPECT_FALSE(o.stop);
  EXPECT_FALSE(e.Cycle(400).fault) << "the run restarts after a trip";
  EXPECT_TRUE(e.Cycle(400).fault);
  EXPECT_EQ(e.stats.Snapshot().faults, 2u);
  EXPECT_EQ(e.stats.Snapshot().watchdog_trips, 2u);
}

TEST(WatchdogTest, KeepRunningAfterFaultIsTheContinueAction) {
  WatchdogConfig w = ExecutionWatchdog(300, 1);
  w.keep_running_after_fault = true;
  EXPECT_EQ(w.effective_action(), WatchdogAction::kContinue);
  Engine e(w);
  const CycleOutcome o = e.Cycle(400);
  EXPECT_TRUE(o.fault);
  EXPECT_FALSE(o.fault_state);
}

TEST(WatchdogTest, StopAllActionAsksToStopEveryTask) {
  Engine e(ExecutionWatchdog(/*time_us=*/300, /*sensitivity=*/1, WatchdogAction::kStopAll));
  const CycleOutcome o = e.Cycle(400);
  EXPECT_TRUE(o.fault);
  EXPECT_TRUE(o.stop_all);
  EXPECT_TRUE(o.fault_state);
  EXPECT_TRUE(o.stop);
}

TEST(WatchdogTest, OverrunWatchdogRecordsItsReasonCycleAndRun) {
  WatchdogConfig w;
  w.max_consecutive_overruns = 2;
  Engine e(w);
  EXPECT_FALSE(e.Cycle(100).fault);
  EXPECT_FALSE(e.Cycle(1500).fault);
  EXPECT_TRUE(e.Cycle(1500).fault);
  const TaskStatsSnapshot s = e.stats.Snapshot();
  EXPECT_EQ(s.last_fault.reason, FaultReason::kOverruns);
  EXPECT_EQ(s.last_fault.cycle, 2u);
  EXPECT_EQ(s.last_fault.consecutive, 2u);
  EXPECT_EQ(s.last_fault.execution_ns, 1'500'000);
  EXPECT_EQ(s.watchdog_trips, 0u) << "watchdog_trips counts the execution-time watchdog only";
}

TEST(WatchdogTest, BothWatchdogsOnOneCycleCountOneFault) {
  WatchdogConfig w = ExecutionWatchdog(300, 1);
  w.max_consecutive_overruns = 1;
  Engine e(w);
  EXPECT_TRUE(e.Cycle(1500).fault);
  const TaskStatsSnapshot s = e.stats.Snapshot();
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.last_fault.reason, FaultReason::kOverruns);
}

TEST(WatchdogTest, StepFaultRecordsReasonStep) {
  Engine e(WatchdogConfig{});
  EXPECT_FALSE(e.Cycle(10).fault_state);
  const CycleOutcome o = e.Cycle(10, StepResult::kFault);
  EXPECT_TRUE(o.fault_state);
  EXPECT_FALSE(o.fault);
  const TaskStatsSnapshot s = e.stats.Snapshot();
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.last_fault.reason, FaultReason::kStep);
  EXPECT_EQ(s.last_fault.cycle, 1u);
}

TEST(WatchdogTest, NoFaultMeansReasonNone) {
  Engine e(ExecutionWatchdog(300, 2));
  e.Cycle(10);
  EXPECT_EQ(e.stats.Snapshot().last_fault.reason, FaultReason::kNone);
  EXPECT_STREQ(FaultReasonName(FaultReason::kNone), "none");
  EXPECT_STREQ(WatchdogActionName(WatchdogAction::kStopAll), "stop-all");
}

TEST(WatchdogTest, CheckAllocatesNothing) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under ASan/TSan";
  }
  WatchdogConfig w = ExecutionWatchdog(300, 2, WatchdogAction::kContinue);
  w.max_consecutive_overruns = 3;
  Engine e(w);
  testing::AllocationCounter counter;
  for (int i = 0; i < 10'000; ++i) e.Cycle(i % 3 == 0 ? 100 : (i % 5 == 0 ? 1500 : 400));
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_GT(e.stats.Snapshot().faults, 0u) << "the fault path ran too";
}

// ---- Real threads ----

// Busy-waits `busy` from cycle `from` on; records what OnWatchdog() saw.
class BusyTask final : public CountingTask {
 public:
  BusyTask(std::chrono::nanoseconds busy, std::uint64_t from) : busy_(busy), from_(from) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle >= from_) SpinFor(Clock::kMonotonic, busy_);
    return CountingTask::Step(ctx);
  }
  void OnWatchdog(const CycleContext& ctx, const FaultRecord& fault) noexcept override {
    hook_cycle.store(ctx.cycle);
    hook_reason.store(fault.reason);
    hooks.fetch_add(1);
  }
  std::atomic<int> hooks{0};
  std::atomic<std::uint64_t> hook_cycle{0};
  std::atomic<FaultReason> hook_reason{FaultReason::kNone};

 private:
  std::chrono::nanoseconds busy_;
  std::uint64_t from_;
};

TEST(WatchdogExecutorTest, ExecutionWatchdogFaultsTheTaskAndCallsOnWatchdog) {
  auto ex = MakeExecutor();
  BusyTask t(milliseconds(3), /*from=*/2);
  TaskConfig tc = OtherTask("busy", milliseconds(20));
  tc.watchdog.time = milliseconds(1);
  tc.watchdog.sensitivity = 2;
  Result<TaskId> id = ex->AddTask(t, tc);
  ASSERT_TRUE(id.ok()) << id.status().message();
  ASSERT_TRUE(ex->Start().ok());
  ASSERT_TRUE(ex->WaitAny(std::chrono::seconds(10)));
  const TaskStatsSnapshot s = ex->Stats(*id);
  EXPECT_EQ(s.state, TaskState::kFault);
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.watchdog_trips, 1u);
  // 3 ms > 1 ms x 2: the first busy cycle (2) trips it by the single-cycle rule. SCHED_OTHER on
  // a loaded machine can stretch an earlier cycle past the limits: then that one is the fault,
  // and everything below must name it.
  const std::uint64_t at = s.last_fault.cycle;
  EXPECT_LE(at, 2u);
  if (at == 2) {
    EXPECT_EQ(s.last_fault.reason, FaultReason::kWatchdogSingle);
  }
  EXPECT_TRUE(s.last_fault.reason == FaultReason::kWatchdogSingle ||
              s.last_fault.reason == FaultReason::kWatchdog);
  EXPECT_EQ(t.hooks.load(), 1);
  EXPECT_EQ(t.hook_cycle.load(), at);
  EXPECT_EQ(t.hook_reason.load(), s.last_fault.reason);
  EXPECT_EQ(static_cast<std::uint64_t>(t.steps.load()), at + 1) << "no cycle after the trip";
  EXPECT_TRUE(t.stopped.load());
  EXPECT_TRUE(ex->Stop().ok());
}

TEST(WatchdogExecutorTest, StopAllActionEndsEveryTask) {
  auto ex = MakeExecutor();
  BusyTask bad(milliseconds(2), /*from=*/3);
  CountingTask other;
  TaskConfig tb = OtherTask("bad", milliseconds(10));
  tb.watchdog.time = milliseconds(1);
  tb.watchdog.action = WatchdogAction::kStopAll;
  ASSERT_TRUE(ex->AddTask(bad, tb).ok());
  // A long period: the other task sleeps when the fault comes and must be woken.
  Result<TaskId> oid = ex->AddTask(other, OtherTask("other", std::chrono::seconds(30)));
  ASSERT_TRUE(oid.ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ex->RunUntilSignal(std::chrono::seconds(60)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20))
      << "RunUntilSignal() returned at the fault, not at its 60 s limit";
  EXPECT_EQ(ex->State(0), TaskState::kFault);
  EXPECT_EQ(ex->State(*oid), TaskState::kStopped);
  EXPECT_TRUE(other.stopped.load());
}

TEST(WatchdogExecutorTest, ContinueActionKeepsTheTaskRunning) {
  auto ex = MakeExecutor();
  BusyTask t(milliseconds(2), /*from=*/1);
  TaskConfig tc = OtherTask("cont", milliseconds(10));
  tc.watchdog.time = milliseconds(1);
  tc.watchdog.action = WatchdogAction::kContinue;
  tc.max_cycles = 5;
  Result<TaskId> id = ex->AddTask(t, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->RunUntilSignal(std::chrono::seconds(20)).ok());
  const TaskStatsSnapshot s = ex->Stats(*id);
  EXPECT_EQ(s.state, TaskState::kStopped) << "it ran to max_cycles";
  EXPECT_EQ(s.cycles, 5u);
  // Cycles 1..4 trip it (sensitivity 1); a loaded machine may stretch cycle 0 past 1 ms too.
  EXPECT_GE(s.faults, 4u);
  EXPECT_EQ(static_cast<std::uint64_t>(t.hooks.load()), s.faults);
}

TEST(WatchdogExecutorTest, BadWatchdogConfigsNameTheField) {
  auto ex = MakeExecutor();
  CountingTask t;
  const auto message = [&](const auto& change) {
    TaskConfig tc = OtherTask("wd", milliseconds(1));
    change(tc.watchdog);
    Result<TaskId> id = ex->AddTask(t, tc);
    EXPECT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    return id.status().message();
  };
  std::string m = message([](WatchdogConfig& w) { w.time = microseconds(-1); });
  EXPECT_TRUE(Contains(m, "task \"wd\": TaskConfig::watchdog.time must be >= 0")) << m;
  m = message([](WatchdogConfig& w) {
    w.time = microseconds(500);
    w.sensitivity = 0;
  });
  EXPECT_TRUE(Contains(m, "TaskConfig::watchdog.sensitivity is 0 — use 1..1000")) << m;
  m = message([](WatchdogConfig& w) {
    w.time = microseconds(500);
    w.sensitivity = 1001;
  });
  EXPECT_TRUE(Contains(m, "use 1..1000")) << m;
  m = message([](WatchdogConfig& w) { w.sensitivity = 3; });
  EXPECT_TRUE(Contains(m, "but watchdog.time is 0")) << m;
  m = message([](WatchdogConfig& w) {
    w.time = std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::max() / 2);
    w.sensitivity = 3;
  });
  EXPECT_TRUE(Contains(m, "overflows 64-bit nanoseconds")) << m;
  m = message([](WatchdogConfig& w) {
    w.time = microseconds(500);
    w.keep_running_after_fault = true;
    w.action = WatchdogAction::kStopAll;
  });
  EXPECT_TRUE(Contains(m, "keep_running_after_fault is set and watchdog.action is stop-all")) << m;
  m = message([](WatchdogConfig& w) { w.action = WatchdogAction::kContinue; });
  EXPECT_TRUE(Contains(m, "but no watchdog is on")) << m;
}

}  // namespace
}  // namespace rtloop
