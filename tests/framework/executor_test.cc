// Real-thread tests of the Executor: lifecycle, scheduling really applied, overruns, observers,
// run_for and steady-state allocation.
#include "rtloop/framework/executor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "alloc_counter.h"
#include "executor_test_util.h"
#include "release_waiter.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

using namespace executor_testing;  // NOLINT(google-build-using-namespace): test helpers
using std::chrono::microseconds;
using std::chrono::milliseconds;

// ---- Lifecycle ----

TEST(ExecutorTest, RunsTaskForMaxCyclesThenStops) {
  auto ex = MakeExecutor();
  CountingTask task;
  TaskConfig tc = OtherTask("count", microseconds(500));
  tc.max_cycles = 50;
  Result<TaskId> id = ex->AddTask(task, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(ex->State(*id), TaskState::kCreated);
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(task.steps.load(), 50);
  EXPECT_TRUE(task.stopped.load());
  const TaskStatsSnapshot s = ex->Stats(*id);
  EXPECT_EQ(s.cycles, 50u);
  EXPECT_EQ(s.state, TaskState::kStopped);
  EXPECT_GT(s.tid, 0);
  EXPECT_LE(s.latency_min_ns, s.latency_max_ns);
  EXPECT_GT(s.execution_sum_ns, 0);
  EXPECT_EQ(ex->TaskCount(), 1u);
  EXPECT_TRUE(ex->Stop().ok());
}

TEST(ExecutorTest, CyclicTaskRunsUnderTheExecutor) {
  auto ex = MakeExecutor();
  CyclicTask cyclic;
  TaskConfig tc = OtherTask("cyclic0", microseconds(200));
  tc.max_cycles = 100;
  Result<TaskId> id = ex->AddTask(cyclic, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(ex->Stats(*id).cycles, 100u);
  static_assert(noexcept(cyclic.Step(std::declval<const CycleContext&>())));
}

class StopAfter final : public CountingTask {
 public:
  explicit StopAfter(int n) : n_(n) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    CountingTask::Step(ctx);
    return steps.load() >= n_ ? StepResult::kStop : StepResult::kContinue;
  }

 private:
  int n_;
};

TEST(ExecutorTest, StepReturningStopEndsOnlyThatTask) {
  auto ex = MakeExecutor();
  StopAfter quitter(5);
  CountingTask runner;
  ASSERT_TRUE(ex->AddTask(quitter, OtherTask("quitter", milliseconds(1))).ok());
  ASSERT_TRUE(ex->AddTask(runner, OtherTask("runner", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  EXPECT_TRUE(ex->WaitAny(std::chrono::seconds(5)));
  EXPECT_EQ(ex->State(0), TaskState::kStopped);
  EXPECT_EQ(quitter.steps.load(), 5);
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(ex->State(1), TaskState::kRunning);
  EXPECT_TRUE(ex->Stop().ok());
  EXPECT_EQ(ex->State(1), TaskState::kStopped);
  EXPECT_TRUE(runner.stopped.load());
}

// Reports a fault of its own at step `n`; counts OnFault() calls (there must be none).
class FaultAfter final : public CountingTask {
 public:
  explicit FaultAfter(int n) : n_(n) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    CountingTask::Step(ctx);
    return steps.load() >= n_ ? StepResult::kFault : StepResult::kContinue;
  }
  void OnFault(const CycleContext& /*ctx*/) noexcept override { on_fault.fetch_add(1); }
  std::atomic<int> on_fault{0};

 private:
  int n_;
};

TEST(ExecutorTest, StepReturningFaultEndsOnlyThatTaskInTheFaultState) {
  auto ex = MakeExecutor();
  FaultAfter faulty(3);
  CountingTask runner;
  ASSERT_TRUE(ex->AddTask(faulty, OtherTask("faulty", milliseconds(1))).ok());
  ASSERT_TRUE(ex->AddTask(runner, OtherTask("runner", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  EXPECT_TRUE(ex->WaitAny(std::chrono::seconds(5)));
  const TaskStatsSnapshot s = ex->Stats(0);
  EXPECT_EQ(s.state, TaskState::kFault);
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.cycles, 3u);
  EXPECT_EQ(faulty.on_fault.load(), 0);
  EXPECT_TRUE(faulty.stopped.load()) << "OnStop() follows a fault";
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(ex->State(1), TaskState::kRunning);
  EXPECT_TRUE(ex->Stop().ok());
  EXPECT_EQ(ex->State(0), TaskState::kFault) << "Stop() keeps the fault state";
}

TEST(ExecutorTest, StopWakesThreadsSleepingOnLongPeriods) {
  for (WaitMode mode :
       {WaitMode::kAbsolute, WaitMode::kRelative, WaitMode::kNanosleep, WaitMode::kPosixTimer}) {
    SCOPED_TRACE(WaitModeName(mode));
    auto ex = MakeExecutor();
    CountingTask task;
    TaskConfig tc = OtherTask("sleepy", std::chrono::seconds(30));
    tc.wait_mode = mode;
    ASSERT_TRUE(ex->AddTask(task, tc).ok());
    ASSERT_TRUE(ex->Start().ok());
    ASSERT_TRUE(WaitForSteps(task, 1));  // now asleep until the release 30 s later
    const TimePoint t0 = Now(Clock::kMonotonic);
    ASSERT_TRUE(ex->Stop().ok());
    // Woken, not slept out: far below the 30 s period, far above a loaded machine's delays.
    EXPECT_LT(Now(Clock::kMonotonic) - t0, std::chrono::seconds(15));
    EXPECT_EQ(task.steps.load(), 1);
    EXPECT_TRUE(task.stopped.load());
  }
}

// Sleeps in OnStop() and records whether the sleep was interrupted.
class SleepyStopTask final : public CountingTask {
 public:
  void OnStop() noexcept override {
    timespec ts = ToTimespec(milliseconds(60));
    interrupted.store(nanosleep(&ts, nullptr) != 0 && errno == EINTR);
    CountingTask::OnStop();
  }
  std::atomic<bool> interrupted{false};
};

TEST(ExecutorTest, StopSendsNoWakeSignalDuringOnStop) {
  for (WaitMode mode : {WaitMode::kAbsolute, WaitMode::kPosixTimer}) {
    SCOPED_TRACE(WaitModeName(mode));
    auto ex = MakeExecutor();
    SleepyStopTask task;
    TaskConfig tc = OtherTask("sleepy-stop", std::chrono::seconds(30));
    tc.wait_mode = mode;
    ASSERT_TRUE(ex->AddTask(task, tc).ok());
    ASSERT_TRUE(ex->Start().ok());
    ASSERT_TRUE(WaitForSteps(task, 1));
    ASSERT_TRUE(ex->Stop().ok());
    EXPECT_TRUE(task.stopped.load());
    EXPECT_FALSE(task.interrupted.load());
  }
}

// Ends its loop after one cycle, then in OnStop() publishes its thread and sleeps, recording
// whether a signal interrupted the sleep.
class LateSignalTask final : public CountingTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    CountingTask::Step(ctx);
    return StepResult::kStop;
  }
  void OnStop() noexcept override {
    thread = pthread_self();
    in_on_stop.store(true);
    timespec ts = ToTimespec(milliseconds(300));
    interrupted.store(nanosleep(&ts, nullptr) != 0 && errno == EINTR);
    CountingTask::OnStop();
  }
  pthread_t thread{};
  std::atomic<bool> in_on_stop{false};
  std::atomic<bool> interrupted{false};
};

// Stop() sends the wake signal while it sees the thread in its loop; delivery can lag (under
// qemu-user it landed in OnStop()). Here the signal is sent during OnStop() outright: a late wake
// signal must stay pending, not cut OnStop() short.
TEST(ExecutorTest, AWakeSignalDeliveredAfterTheLoopDoesNotInterruptOnStop) {
  auto ex = MakeExecutor();
  LateSignalTask task;
  ASSERT_TRUE(ex->AddTask(task, OtherTask("late-signal", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  const TimePoint deadline = Now(Clock::kMonotonic) + std::chrono::seconds(10);
  while (!task.in_on_stop.load() && Now(Clock::kMonotonic) < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(task.in_on_stop.load()) << "OnStop() did not run within 10 s";
  ASSERT_EQ(pthread_kill(task.thread, internal::WakeSignal()), 0);
  EXPECT_TRUE(ex->WaitAny(std::chrono::seconds(10)));
  EXPECT_TRUE(task.stopped.load());
  EXPECT_FALSE(task.interrupted.load()) << "the wake signal interrupted OnStop()'s sleep";
  EXPECT_TRUE(ex->Stop().ok());
}

// Calls Stop() and Start() on its own executor from Step(), then ends.
class SelfStoppingTask final : public CountingTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    stop_status = executor->Stop();
    start_status = executor->Start();
    CountingTask::Step(ctx);
    return StepResult::kStop;
  }
  Executor* executor = nullptr;
  Status stop_status;
  Status start_status;
};

TEST(ExecutorTest, StopFromATaskThreadIsRefusedNotADeadlock) {
  auto ex = MakeExecutor();
  SelfStoppingTask task;
  task.executor = ex.get();
  ASSERT_TRUE(ex->AddTask(task, OtherTask("self-stop", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(task.steps.load(), 1);
  EXPECT_EQ(task.stop_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(task.stop_status.message(), "StepResult::kStop"))
      << task.stop_status.message();
  EXPECT_EQ(task.start_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ex->Stop().ok());
}

TEST(ExecutorTest, EveryWaitModeRunsCycles) {
  for (WaitMode mode :
       {WaitMode::kAbsolute, WaitMode::kRelative, WaitMode::kNanosleep, WaitMode::kPosixTimer}) {
    SCOPED_TRACE(WaitModeName(mode));
    auto ex = MakeExecutor();
    CountingTask task;
    TaskConfig tc = OtherTask("mode", microseconds(500));
    tc.wait_mode = mode;
    tc.max_cycles = 20;
    Result<TaskId> id = ex->AddTask(task, tc);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(ex->Start().ok());
    ex->Wait();
    const TaskStatsSnapshot s = ex->Stats(*id);
    EXPECT_EQ(s.cycles, 20u);
    // Waking before the release would be a bug in every mode.
    EXPECT_GE(s.latency_min_ns, 0);
  }
}

TEST(ExecutorTest, RealtimeClockTasksRun) {
  ExecutorConfig ec = TestExecutorConfig();
  ec.start_clock = Clock::kRealtime;
  auto ex = MakeExecutor(ec);
  CountingTask task;
  TaskConfig tc = OtherTask("wall", microseconds(500));
  tc.clock = Clock::kRealtime;
  tc.max_cycles = 10;
  ASSERT_TRUE(ex->AddTask(task, tc).ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(task.steps.load(), 10);
}

// Captures each task's first release.
class FirstReleaseObserver final : public CycleObserver {
 public:
  void OnRtThreadStart(TaskId task) override { started[task].store(true); }
  void OnCycle(const CycleSample& s) noexcept override {
    if (s.seq == 0 && s.task < 4) first_release_ns[s.task].store(s.release.ns());
    cycles.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<std::int64_t> first_release_ns[4] = {};
  std::atomic<bool> started[4] = {};
  std::atomic<std::uint64_t> cycles{0};
};

// Tasks "a" and "b" at 1 ms, 3 cycles each, both observed by `obs`.
std::pair<TaskConfig, TaskConfig> TwoObservedTasks(CycleObserver* obs) {
  TaskConfig ta = OtherTask("a", milliseconds(1));
  ta.max_cycles = 3;
  ta.observers = {obs};
  TaskConfig tb = ta;
  tb.name = "b";
  return {ta, tb};
}

TEST(ExecutorTest, TasksShareOneStartTimePlusPhase) {
  ExecutorConfig ec = TestExecutorConfig();
  ec.align_start_to = milliseconds(10);
  auto ex = MakeExecutor(ec);
  FirstReleaseObserver obs;
  CountingTask a, b;
  auto [ta, tb] = TwoObservedTasks(&obs);
  tb.phase = microseconds(300);
  ASSERT_TRUE(ex->AddTask(a, ta).ok());
  ASSERT_TRUE(ex->AddTask(b, tb).ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  const TimePoint s = ex->start_time();
  EXPECT_EQ(s.ns() % 10'000'000, 0);
  EXPECT_EQ(obs.first_release_ns[0].load(), s.ns());
  EXPECT_EQ(obs.first_release_ns[1].load(), s.ns() + 300'000);
  EXPECT_TRUE(obs.started[0].load());
  EXPECT_TRUE(obs.started[1].load());
  EXPECT_EQ(obs.cycles.load(), 6u);
}

// Serves task 0 through a part of its own (CycleObserver::ForTask), the others itself.
class DispatchingObserver final : public CycleObserver {
 public:
  void OnRtThreadStart(TaskId /*task*/) override { thread_starts.fetch_add(1); }
  void OnCycle(const CycleSample& /*s*/) noexcept override { own_cycles.fetch_add(1); }
  CycleObserver* ForTask(TaskId task) noexcept override {
    return task == 0 ? static_cast<CycleObserver*>(&part) : nullptr;  // nullptr: this one
  }
  CountingObserver part;
  std::atomic<int> thread_starts{0};
  std::atomic<std::uint64_t> own_cycles{0};
};

TEST(ExecutorTest, EachTaskCallsThePartItsObserverNamesForIt) {
  auto ex = MakeExecutor(TestExecutorConfig());
  DispatchingObserver obs;
  CountingTask a, b;
  auto [ta, tb] = TwoObservedTasks(&obs);
  tb.max_cycles = 4;
  ASSERT_TRUE(ex->AddTask(a, ta).ok());
  ASSERT_TRUE(ex->AddTask(b, tb).ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(obs.thread_starts.load(), 2);       // OnRtThreadStart() on the observer added
  EXPECT_EQ(obs.part.thread_starts.load(), 0);  // never on the part
  EXPECT_EQ(obs.part.cycles.load(), 3u);        // task 0's cycles: the part
  EXPECT_EQ(obs.own_cycles.load(), 4u);         // task 1's: the observer itself
}

// ---- Scheduling really applied ----

TEST(ExecutorTest, AffinityIsAppliedInsideTheThread) {
  const SystemInfo info = ReadSystemInfo();
  const int cpu = info.affinity_cpus.back();
  auto ex = MakeExecutor();
  ProbeTask probe;
  TaskConfig tc = OtherTask("pinned", microseconds(500));
  tc.cpus = {cpu};
  tc.max_cycles = 50;
  ASSERT_TRUE(ex->AddTask(probe, tc).ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(probe.affinity, std::vector<int>{cpu});
  EXPECT_EQ(probe.cpu_seen.load(), cpu);
  EXPECT_FALSE(probe.cpu_changed.load());
  EXPECT_TRUE(probe.sigterm_blocked);
}

TEST(ExecutorTest, UnpinnedTaskGetsTheProcessCpusNotTheHousekeepingOnes) {
  const SystemInfo info = ReadSystemInfo();
  if (info.affinity_cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const std::vector<int> before = CurrentAffinity();
  ExecutorConfig ec = TestExecutorConfig();
  ec.housekeeping_cpus = {info.affinity_cpus.front()};
  {
    auto ex = MakeExecutor(ec);
    EXPECT_EQ(CurrentAffinity(), ec.housekeeping_cpus);
    ProbeTask probe;
    TaskConfig tc = OtherTask("free", microseconds(500));
    tc.max_cycles = 5;
    ASSERT_TRUE(ex->AddTask(probe, tc).ok());
    ASSERT_TRUE(ex->Start().ok());
    ex->Wait();
    EXPECT_EQ(probe.affinity, info.affinity_cpus);
  }
  {
    // A second executor on the moved thread still knows the process's CPUs.
    auto ex = MakeExecutor();
    ProbeTask probe;
    TaskConfig tc = OtherTask("again", microseconds(500));
    tc.max_cycles = 2;
    ASSERT_TRUE(ex->AddTask(probe, tc).ok());
    tc.name = "pinned-elsewhere";
    tc.cpus = {info.affinity_cpus.back()};
    ProbeTask pinned;
    EXPECT_TRUE(ex->AddTask(pinned, tc).ok());
    ASSERT_TRUE(ex->Start().ok());
    ex->Wait();
    EXPECT_EQ(probe.affinity, info.affinity_cpus);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : before) CPU_SET(static_cast<std::size_t>(c), &set);
  sched_setaffinity(0, sizeof(set), &set);
}

TEST(ExecutorTest, FifoPriorityIsAppliedInsideTheThread) {
  if (!HaveCapSysNice()) GTEST_SKIP() << "needs CAP_SYS_NICE (run as root) for SCHED_FIFO";
  auto ex = MakeExecutor();
  ProbeTask probe;
  TaskConfig tc;
  tc.name = "fifo";
  tc.period = milliseconds(1);
  tc.policy = SchedPolicy::kFifo;
  tc.priority = 10;
  tc.max_cycles = 20;
  Result<TaskId> id = ex->AddTask(probe, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(probe.policy, SCHED_FIFO);
  EXPECT_EQ(probe.priority, 10);
  const TaskInfo info = ex->Info(*id);
  EXPECT_EQ(info.effective_policy, SchedPolicy::kFifo);
  EXPECT_EQ(info.effective_priority, 10);
  EXPECT_FALSE(info.fell_back_to_non_rt);
  EXPECT_EQ(info.config.name, "fifo");
}

TEST(ExecutorTest, RrAndBatchAndIdleAndNiceAreApplied) {
  struct Case {
    SchedPolicy policy;
    int priority;
    int nice;
    int expected_policy;
  };
  const bool cap = HaveCapSysNice();
  // TaskConfig::nice 0 keeps the niceness the thread inherits: this process's, which is not 0
  // when the tests run under `nice` (ctest under nice -n 5 failed here).
  errno = 0;
  const int inherited_nice = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  std::vector<Case> cases = {{SchedPolicy::kBatch, 0, 5, SCHED_BATCH},
                             {SchedPolicy::kIdle, 0, 0, SCHED_IDLE},
                             {SchedPolicy::kOther, 0, 3, SCHED_OTHER}};
  if (cap) cases.push_back({SchedPolicy::kRr, 5, 0, SCHED_RR});
  for (const Case& c : cases) {
    SCOPED_TRACE(SchedPolicyName(c.policy));
    auto ex = MakeExecutor();
    ProbeTask probe;
    TaskConfig tc = OtherTask("p", milliseconds(1));
    tc.policy = c.policy;
    tc.priority = c.priority;
    tc.nice = c.nice;
    tc.max_cycles = 3;
    ASSERT_TRUE(ex->AddTask(probe, tc).ok());
    ASSERT_TRUE(ex->Start().ok());
    ex->Wait();
    EXPECT_EQ(probe.policy, c.expected_policy);
    EXPECT_EQ(probe.priority, c.priority);
    if (c.policy != SchedPolicy::kIdle) {
      EXPECT_EQ(probe.nice, c.nice != 0 ? c.nice : inherited_nice);
    }
  }
}

TEST(ExecutorTest, DeadlinePolicyIsApplied) {
  if (!HaveCapSysNice()) GTEST_SKIP() << "needs CAP_SYS_NICE (run as root) for SCHED_DEADLINE";
  auto ex = MakeExecutor();
  ProbeTask probe;
  TaskConfig tc = OtherTask("dl", milliseconds(1));
  tc.policy = SchedPolicy::kDeadline;
  tc.deadline.runtime = microseconds(100);
  tc.deadline.deadline = microseconds(1000);
  tc.max_cycles = 10;
  ASSERT_TRUE(ex->AddTask(probe, tc).ok());
  Status s = ex->Start();
  if (!s.ok() && s.code() == StatusCode::kPermissionDenied) {
    GTEST_SKIP() << "SCHED_DEADLINE refused here: " << s.message();
  }
  ASSERT_TRUE(s.ok()) << s.ToString();
  ex->Wait();
  EXPECT_EQ(probe.policy, 6 /* SCHED_DEADLINE */);
}

TEST(ExecutorTest, DeadlineParametersTheKernelRejectsNameTheTask) {
  if (!HaveCapSysNice()) GTEST_SKIP() << "needs CAP_SYS_NICE (run as root) for SCHED_DEADLINE";
  auto ex = MakeExecutor();
  ProbeTask probe;
  TaskConfig tc = OtherTask("greedy", milliseconds(1));
  tc.policy = SchedPolicy::kDeadline;
  // A 10 s period: above the kernel's sched_deadline_period_max_us (4.19 s by default).
  tc.period = std::chrono::seconds(10);
  tc.deadline.runtime = milliseconds(1);
  tc.deadline.deadline = milliseconds(1);
  ASSERT_TRUE(ex->AddTask(probe, tc).ok());
  const Status s = ex->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "cannot set SCHED_DEADLINE")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "task \"greedy\"")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "sched_deadline_period")) << s.message();
  EXPECT_EQ(ex->State(0), TaskState::kFault);
  EXPECT_EQ(ex->Stop().code(), StatusCode::kFailedPrecondition);
}

TEST(ExecutorTest, SchedulingRefusedOnTheThreadFailsStartNamingTheTask) {
  if (!HaveCapSysNice()) GTEST_SKIP() << "needs CAP_SYS_NICE (run as root) for SCHED_DEADLINE";
  if (ReadSystemInfo().affinity_cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  // A process restricted to one CPU cannot take SCHED_DEADLINE (its affinity must span the root
  // domain): AddTask's checks pass, the kernel refuses on the task's thread.
  const int rc = RunInChild([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(static_cast<std::size_t>(ReadSystemInfo().affinity_cpus.front()), &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return 10;
    auto ex = Executor::Create(TestExecutorConfig());
    if (!ex.ok()) return 11;
    CountingTask good;
    ProbeTask dl;
    TaskConfig tc = OtherTask("dl", milliseconds(1));
    tc.policy = SchedPolicy::kDeadline;
    tc.deadline.runtime = microseconds(100);
    tc.deadline.deadline = microseconds(500);
    if (!(*ex)->AddTask(good, OtherTask("good", milliseconds(1))).ok()) return 12;
    if (!(*ex)->AddTask(dl, tc).ok()) return 13;
    const Status s = (*ex)->Start();
    if (s.ok()) return 14;
    if (!Contains(s.message(), "cannot set SCHED_DEADLINE") ||
        !Contains(s.message(), "on task \"dl\"") || !Contains(s.message(), "root domain")) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 15;
    }
    if ((*ex)->State(1) != TaskState::kFault || !good.stopped.load()) return 16;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// ---- Overruns and the watchdog, for real ----

class SlowTask final : public CountingTask {
 public:
  explicit SlowTask(std::chrono::nanoseconds busy) : busy_(busy) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    const TimePoint until = Now(Clock::kMonotonic) + busy_;
    while (Now(Clock::kMonotonic) < until) {
    }
    return CountingTask::Step(ctx);
  }
  void OnFault(const CycleContext& /*ctx*/) noexcept override { faults.fetch_add(1); }
  std::atomic<int> faults{0};

 private:
  std::chrono::nanoseconds busy_;
};

TEST(ExecutorTest, WatchdogMovesAnOverrunningTaskToFault) {
  auto ex = MakeExecutor();
  SlowTask slow(microseconds(1500));
  TaskConfig tc = OtherTask("slow", milliseconds(1));
  tc.watchdog.max_consecutive_overruns = 3;
  Result<TaskId> id = ex->AddTask(slow, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->Start().ok());
  ASSERT_TRUE(ex->WaitAny(std::chrono::seconds(5)));
  const TaskStatsSnapshot s = ex->Stats(*id);
  EXPECT_EQ(s.state, TaskState::kFault);
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(slow.faults.load(), 1);
  EXPECT_TRUE(slow.stopped.load());
  EXPECT_GE(s.overruns, 3u);
  EXPECT_GE(s.missed_releases, 3u);
  EXPECT_TRUE(ex->Stop().ok());
}

// ---- Observers and run_for ----

TEST(ExecutorTest, EveryObserverOfATaskSeesEveryCycle) {
  auto ex = MakeExecutor();
  CountingObserver first, second;
  CountingTask a;
  TaskConfig tc = OtherTask("observed", microseconds(500));
  tc.max_cycles = 40;
  tc.observers = {&first, &second};
  Result<TaskId> id = ex->AddTask(a, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(first.cycles.load(), 40u);
  EXPECT_EQ(second.cycles.load(), 40u);
  EXPECT_EQ(first.thread_starts.load(), 1);
  EXPECT_EQ(second.thread_starts.load(), 1);
  EXPECT_EQ(ex->Info(*id).config.observers.size(), 2u);
}

TEST(ExecutorTest, RunForEndsTheTaskAfterItsDuration) {
  auto ex = MakeExecutor();
  CountingTask a;
  TaskConfig tc = OtherTask("timed", milliseconds(1));
  tc.run_for = milliseconds(30);
  Result<TaskId> id = ex->AddTask(a, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->Start().ok());
  ex->Wait();
  EXPECT_EQ(ex->State(*id), TaskState::kStopped);
  // 30 releases on the grid unless the VM stalled long enough to skip some.
  EXPECT_GE(a.steps.load(), 1);
  EXPECT_LE(a.steps.load(), 30);
  EXPECT_TRUE(ex->AllTasksEnded());
}

// ---- Steady state allocates nothing ----

class NoopObserver final : public CycleObserver {
 public:
  void OnCycle(const CycleSample& s) noexcept override {
    sum_.fetch_add(static_cast<std::uint64_t>(s.execution_ns), std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> sum_{0};
};

TEST(ExecutorTest, SteadyStateMakesNoHeapAllocations) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under ASan/TSan";
  }
  auto ex = MakeExecutor();
  NoopObserver obs;
  CountingTask a, b;
  TaskConfig ta = OtherTask("alloc-a", microseconds(100));
  ta.observers = {&obs};
  TaskConfig tb = ta;
  tb.name = "alloc-b";
  tb.overrun_policy = OverrunPolicy::kCatchUp;
  tb.watchdog.max_consecutive_overruns = 1'000'000;
  Result<TaskId> id = ex->AddTask(a, ta);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ex->AddTask(b, tb).ok());
  ASSERT_TRUE(ex->Start().ok());
  while (ex->Stats(*id).cycles < 200) std::this_thread::sleep_for(milliseconds(1));
  testing::AllocationCounter counter;
  const std::uint64_t from = ex->Stats(*id).cycles;
  while (ex->Stats(*id).cycles < from + 3000) std::this_thread::sleep_for(milliseconds(5));
  const std::uint64_t allocations = counter.Allocations();
  const std::uint64_t deallocations = counter.Deallocations();
  ASSERT_TRUE(ex->Stop().ok());
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(deallocations, 0u);
}

TEST(ExecutorTest, LockedMemoryRunWorks) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "lock_memory is ignored in sanitizer builds";
  }
  // In a child: mlockall(MCL_FUTURE) would otherwise stay in force for the whole test binary.
  const int rc = RunInChild([] {
    ExecutorConfig ec = TestExecutorConfig();
    ec.lock_memory = true;
    auto ex = Executor::Create(ec);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
      return 1;
    }
    CountingTask t;
    TaskConfig tc = OtherTask("locked", microseconds(500));
    tc.max_cycles = 10;
    if (!(*ex)->AddTask(t, tc).ok() || !(*ex)->Start().ok()) return 2;
    (*ex)->Wait();
    return t.steps.load() == 10 ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace rtloop
