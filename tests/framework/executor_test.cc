// Real-thread tests of the Executor: scheduling really applied, lifecycle, signals, bad input.
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
#include <vector>

#include "alloc_counter.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

ExecutorConfig TestExecutorConfig() {
  ExecutorConfig ec;
  ec.lock_memory = false;
  ec.start_delay = milliseconds(5);
  return ec;
}

TaskConfig OtherTask(const std::string& name, std::chrono::nanoseconds period) {
  TaskConfig tc;
  tc.name = name;
  tc.period = period;
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  return tc;
}

std::unique_ptr<Executor> MakeExecutor(const ExecutorConfig& ec = TestExecutorConfig()) {
  auto ex = Executor::Create(ec);
  RTLOOP_CHECK(ex.ok(), "Executor::Create failed in a test");
  return std::move(*ex);
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool HaveCapSysNice() {
  struct __user_cap_header_struct hdr {};
  struct __user_cap_data_struct data[2]{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[0].effective & (1u << CAP_SYS_NICE)) != 0;
}

// Removes `cap` from this process's effective/permitted sets (used in forked children).
bool DropCapability(int cap) {
  struct __user_cap_header_struct hdr {};
  struct __user_cap_data_struct data[2]{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  const unsigned idx = static_cast<unsigned>(cap) / 32;
  const std::uint32_t bit = 1u << (static_cast<unsigned>(cap) % 32);
  data[idx].effective &= ~bit;
  data[idx].permitted &= ~bit;
  data[idx].inheritable &= ~bit;
  return syscall(SYS_capset, &hdr, data) == 0;
}

// Runs `body` in a forked child; returns its exit code (or 128+signal). A child that hangs is
// killed by SIGALRM after 20 s, so the test fails instead of hanging.
template <typename F>
int RunInChild(F body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class CountingTask : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    steps.fetch_add(1, std::memory_order_relaxed);
    last_cycle.store(ctx.cycle, std::memory_order_relaxed);
    return StepResult::kContinue;
  }
  void OnStop() noexcept override { stopped.store(true); }
  std::atomic<int> steps{0};
  std::atomic<std::uint64_t> last_cycle{0};
  std::atomic<bool> stopped{false};
};

// Records, from inside the RT thread, the scheduling it runs under.
class ProbeTask final : public PeriodicTask {
 public:
  Status OnStart() override {
    policy = sched_getscheduler(0);
    sched_param p{};
    sched_getparam(0, &p);
    priority = p.sched_priority;
    nice = getpriority(PRIO_PROCESS, 0);
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(static_cast<std::size_t>(c), &set)) affinity.push_back(c);
    }
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    sigterm_blocked = sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
    return Status::Ok();
  }
  StepResult Step(const CycleContext& /*ctx*/) noexcept override {
    const int cpu = sched_getcpu();
    if (cpu_seen.load() < 0) cpu_seen.store(cpu);
    if (cpu != cpu_seen.load()) cpu_changed.store(true);
    return StepResult::kContinue;
  }
  int policy = -1;
  int priority = -1;
  int nice = 0;
  bool sigterm_blocked = false;
  std::vector<int> affinity;
  std::atomic<int> cpu_seen{-1};
  std::atomic<bool> cpu_changed{false};
};

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

// Polls (bounded) until `task` has run `n` steps; false after 10 s.
bool WaitForSteps(const CountingTask& task, int n) {
  const TimePoint until = Now(Clock::kMonotonic) + std::chrono::seconds(10);
  while (task.steps.load() < n) {
    if (Now(Clock::kMonotonic) > until) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
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
    EXPECT_LT(Now(Clock::kMonotonic) - t0, std::chrono::seconds(2));
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

TEST(ExecutorTest, TasksShareOneStartTimePlusPhase) {
  ExecutorConfig ec = TestExecutorConfig();
  ec.align_start_to = milliseconds(10);
  auto ex = MakeExecutor(ec);
  FirstReleaseObserver obs;
  CountingTask a, b;
  TaskConfig ta = OtherTask("a", milliseconds(1));
  ta.max_cycles = 3;
  ta.observers = {&obs};
  TaskConfig tb = ta;
  tb.name = "b";
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
      EXPECT_EQ(probe.nice, c.nice);
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

// ---- Signals ----

TEST(ExecutorTest, RunUntilSignalStopsInOrderOnSigterm) {
  auto ex = MakeExecutor();
  CountingTask a, b;
  ProbeTask probe;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  ASSERT_TRUE(ex->AddTask(b, OtherTask("b", milliseconds(2))).ok());
  ASSERT_TRUE(ex->AddTask(probe, OtherTask("probe", milliseconds(1))).ok());
  std::thread killer([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::this_thread::sleep_for(milliseconds(100));
    kill(getpid(), SIGTERM);  // process-directed: only RunUntilSignal's sigtimedwait takes it
  });
  const TimePoint t0 = Now(Clock::kMonotonic);
  const Status s = ex->RunUntilSignal();
  killer.join();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_LT(Now(Clock::kMonotonic) - t0, std::chrono::seconds(5));
  EXPECT_TRUE(a.stopped.load());
  EXPECT_TRUE(b.stopped.load());
  EXPECT_GT(a.steps.load(), 10);
  EXPECT_TRUE(probe.sigterm_blocked);
  EXPECT_EQ(ex->State(0), TaskState::kStopped);
  EXPECT_EQ(ex->Stop().code(), StatusCode::kFailedPrecondition);
  // SIGTERM is unblocked again on this thread.
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGTERM), 0);
}

TEST(ExecutorTest, RunUntilSignalAfterStartWaitsForSigint) {
  auto ex = MakeExecutor();
  CountingTask a;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  ASSERT_TRUE(ex->Start().ok());
  std::thread killer([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::this_thread::sleep_for(milliseconds(50));
    kill(getpid(), SIGINT);
  });
  EXPECT_TRUE(ex->RunUntilSignal().ok());
  killer.join();
  EXPECT_TRUE(a.stopped.load());
}

TEST(ExecutorTest, RunUntilSignalReturnsWhenEveryTaskEnds) {
  auto ex = MakeExecutor();
  CountingTask a;
  TaskConfig tc = OtherTask("short", milliseconds(1));
  tc.max_cycles = 5;
  ASSERT_TRUE(ex->AddTask(a, tc).ok());
  EXPECT_TRUE(ex->RunUntilSignal().ok());
  EXPECT_EQ(a.steps.load(), 5);
}

TEST(ExecutorTest, RunUntilSignalEndsAfterItsDuration) {
  auto ex = MakeExecutor();
  CountingTask a;
  ASSERT_TRUE(ex->AddTask(a, OtherTask("a", milliseconds(1))).ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ex->RunUntilSignal(milliseconds(200)).ok());
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_TRUE(a.stopped.load());
  EXPECT_EQ(ex->RunUntilSignal(milliseconds(-1)).code(), StatusCode::kInvalidArgument);
}

TEST(ExecutorTest, StopSignalToAThreadThatDoesNotBlockItStillStopsInOrder) {
  // In a child: a SIGTERM that reached an unblocked thread without the forwarding handler would
  // kill the whole test binary.
  const int rc = RunInChild([] {
    auto ex = MakeExecutor();
    CountingTask a;
    if (!ex->AddTask(a, OtherTask("a", milliseconds(1))).ok()) return 10;
    std::atomic<bool> quit{false};
    // An application thread created before RunUntilSignal(), with SIGTERM not blocked: the
    // kernel may deliver a process-directed SIGTERM to it; tgkill makes sure it does.
    std::atomic<pid_t> tid{0};
    std::thread app([&] {
      tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
      while (!quit.load()) std::this_thread::sleep_for(milliseconds(5));
    });
    while (tid.load() == 0) std::this_thread::sleep_for(milliseconds(1));
    std::thread killer([&] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      while (a.steps.load() < 20) std::this_thread::sleep_for(milliseconds(1));
      syscall(SYS_tgkill, getpid(), tid.load(), SIGTERM);
    });
    const Status s = ex->RunUntilSignal(std::chrono::seconds(15));
    killer.join();
    quit.store(true);
    app.join();
    if (!s.ok()) return 11;
    if (!a.stopped.load()) return 12;
    struct sigaction sa {};
    sigaction(SIGTERM, nullptr, &sa);
    return sa.sa_handler == SIG_DFL ? 0 : 13;  // the default disposition is back
  });
  EXPECT_EQ(rc, 0);
}

TEST(ExecutorTest, OnlyOneStopSignalsAtATime) {
  Result<std::unique_ptr<StopSignals>> first = StopSignals::Install();
  ASSERT_TRUE(first.ok());
  Result<std::unique_ptr<StopSignals>> second = StopSignals::Install();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*first)->Wait(milliseconds(1)), 0);
  first->reset();
  EXPECT_TRUE(StopSignals::Install().ok());
}

// ---- Observers and run_for ----

class CountingObserver final : public CycleObserver {
 public:
  void OnRtThreadStart(TaskId /*task*/) override { thread_starts.fetch_add(1); }
  void OnCycle(const CycleSample& /*s*/) noexcept override {
    cycles.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<int> thread_starts{0};
  std::atomic<std::uint64_t> cycles{0};
};

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

// ---- Bad input and faults ----

TEST(ExecutorBadInputTest, NonPositivePeriodNamesTheTask) {
  auto ex = MakeExecutor();
  CountingTask t;
  for (std::int64_t ns : {0LL, -5LL}) {
    TaskConfig tc = OtherTask("pos", std::chrono::nanoseconds(ns));
    Result<TaskId> id = ex->AddTask(t, tc);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(id.status().message(), "task \"pos\": period must be > 0"))
        << id.status().message();
  }
}

TEST(ExecutorBadInputTest, PriorityOutsideThePolicyRange) {
  auto ex = MakeExecutor();
  CountingTask t;
  TaskConfig tc = OtherTask("pos", milliseconds(1));
  tc.policy = SchedPolicy::kFifo;
  tc.priority = 100;
  Result<TaskId> id = ex->AddTask(t, tc);
  ASSERT_FALSE(id.ok());
  EXPECT_TRUE(Contains(id.status().message(), "priority 100 is outside SCHED_FIFO's range 1..99"))
      << id.status().message();
  tc.policy = SchedPolicy::kOther;
  tc.priority = 10;
  id = ex->AddTask(t, tc);
  ASSERT_FALSE(id.ok());
  EXPECT_TRUE(Contains(id.status().message(), "SCHED_OTHER")) << id.status().message();
}

TEST(ExecutorBadInputTest, CpuThatDoesNotExistOrIsOffline) {
  auto ex = MakeExecutor();
  CountingTask t;
  for (int cpu : {4095, -1, 100000}) {
    TaskConfig tc = OtherTask("pinned", milliseconds(1));
    tc.cpus = {cpu};
    Result<TaskId> id = ex->AddTask(t, tc);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(id.status().message(), "task \"pinned\": CPU " + std::to_string(cpu) +
                                                    " does not exist (online CPUs: "))
        << id.status().message();
  }
}

TEST(ExecutorBadInputTest, BadDeadlineParameters) {
  auto ex = MakeExecutor();
  CountingTask t;
  TaskConfig tc = OtherTask("dl", milliseconds(1));
  tc.policy = SchedPolicy::kDeadline;
  tc.deadline.runtime = microseconds(900);
  tc.deadline.deadline = microseconds(500);
  Result<TaskId> id = ex->AddTask(t, tc);
  ASSERT_FALSE(id.ok());
  EXPECT_TRUE(Contains(id.status().message(), "task \"dl\": SCHED_DEADLINE parameters"))
      << id.status().message();
}

TEST(ExecutorBadInputTest, OtherInvalidTaskConfigs) {
  ExecutorConfig ec = TestExecutorConfig();
  auto ex = MakeExecutor(ec);
  CountingTask t;
  TaskConfig tc = OtherTask("", milliseconds(1));
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "empty name"));
  tc = OtherTask("ph", milliseconds(1));
  tc.phase = microseconds(-1);
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "phase must be >= 0"));
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "set TaskConfig::phase"));
  tc = OtherTask("clk", milliseconds(1));
  tc.clock = Clock::kRealtime;
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "start_clock"));
  tc = OtherTask("stk", milliseconds(1));
  tc.stack_size = 100;
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "stack_size 100"));
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "set TaskConfig::stack_size"));
  tc = OtherTask("rf", milliseconds(1));
  tc.run_for = milliseconds(-1);
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "run_for must be >= 0"));
  ASSERT_TRUE(ex->AddTask(t, OtherTask("once", milliseconds(1))).ok());
  EXPECT_TRUE(Contains(ex->AddTask(t, OtherTask("twice", milliseconds(1))).status().message(),
                       "already added as task \"once\""));
}

TEST(ExecutorBadInputTest, BadObserverListsNameTheEntry) {
  auto ex = MakeExecutor();
  CountingTask t;
  CountingObserver o;
  TaskConfig tc = OtherTask("obs", milliseconds(1));
  tc.observers = {&o, nullptr};
  Status s = ex->AddTask(t, tc).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "TaskConfig::observers[1] is null")) << s.message();
  tc.observers = {&o, &o};
  s = ex->AddTask(t, tc).status();
  EXPECT_TRUE(Contains(s.message(), "[0] and [1] are the same observer")) << s.message();
  tc.observers.assign(kMaxCycleObservers + 1, &o);
  s = ex->AddTask(t, tc).status();
  EXPECT_TRUE(Contains(s.message(), "at most " + std::to_string(kMaxCycleObservers)))
      << s.message();
}

TEST(ExecutorBadInputTest, InvalidExecutorConfig) {
  ExecutorConfig ec = TestExecutorConfig();
  ec.housekeeping_cpus = {4000};
  auto ex = Executor::Create(ec);
  ASSERT_FALSE(ex.ok());
  EXPECT_TRUE(Contains(ex.status().message(), "housekeeping_cpus")) << ex.status().message();
  ec = TestExecutorConfig();
  ec.start_delay = milliseconds(-1);
  EXPECT_EQ(Executor::Create(ec).status().code(), StatusCode::kInvalidArgument);
  ec = TestExecutorConfig();
  ec.align_start_to = milliseconds(-1);
  EXPECT_EQ(Executor::Create(ec).status().code(), StatusCode::kInvalidArgument);
  ec = TestExecutorConfig();
  ec.cpu_dma_latency_us = -3;
  EXPECT_EQ(Executor::Create(ec).status().code(), StatusCode::kInvalidArgument);
}

TEST(ExecutorBadInputTest, CpuDmaLatencyIsHeldWhenPermitted) {
  if (geteuid() != 0) GTEST_SKIP() << "writing /dev/cpu_dma_latency needs root";
  if (access("/dev/cpu_dma_latency", F_OK) != 0) GTEST_SKIP() << "no /dev/cpu_dma_latency";
  // Reading the device gives the aggregated request in force.
  const auto current = [] {
    std::int32_t value = -1;
    const int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (read(fd, &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) value = -1;
      close(fd);
    }
    return value;
  };
  const std::int32_t before = current();
  ExecutorConfig ec = TestExecutorConfig();
  ec.cpu_dma_latency_us = 7;
  {
    auto ex = Executor::Create(ec);
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    if (before > 7) {
      EXPECT_EQ(current(), 7);
    }
  }
  EXPECT_EQ(current(), before);  // released with the executor
}

class ThrowingTask final : public PeriodicTask {
 public:
  Status OnStart() override { throw std::runtime_error("sensor not found"); }
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

class FailingTask final : public PeriodicTask {
 public:
  Status OnStart() override { return NotFoundError("no /dev/gpiochip9"); }
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

TEST(ExecutorBadInputTest, TaskThrowingFromOnStartIsReportedAndOthersStop) {
  auto ex = MakeExecutor();
  CountingTask good;
  ThrowingTask bad;
  ASSERT_TRUE(ex->AddTask(good, OtherTask("good", milliseconds(1))).ok());
  ASSERT_TRUE(ex->AddTask(bad, OtherTask("thrower", milliseconds(1))).ok());
  const Status s = ex->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "task \"thrower\": OnStart() threw")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "sensor not found")) << s.message();
  EXPECT_EQ(good.steps.load(), 0);
  EXPECT_TRUE(good.stopped.load());  // its OnStart() ran, so its OnStop() does too
  EXPECT_EQ(ex->State(1), TaskState::kFault);
  EXPECT_EQ(ex->State(0), TaskState::kStopped);
}

TEST(ExecutorBadInputTest, TaskFailingOnStartIsReported) {
  auto ex = MakeExecutor();
  FailingTask bad;
  ASSERT_TRUE(ex->AddTask(bad, OtherTask("gpio", milliseconds(1))).ok());
  const Status s = ex->Start();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(s.message(), "task \"gpio\": OnStart() failed: no /dev/gpiochip9"))
      << s.message();
}

TEST(ExecutorBadInputTest, StopBeforeStartAndTwiceAreFailedPrecondition) {
  auto ex = MakeExecutor();
  CountingTask t;
  ASSERT_TRUE(ex->AddTask(t, OtherTask("t", milliseconds(1))).ok());
  Status s = ex->Stop();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s.message(), "before Start()"));
  ASSERT_TRUE(ex->Start().ok());
  EXPECT_EQ(ex->Start().code(), StatusCode::kFailedPrecondition);
  CountingTask late;
  EXPECT_EQ(ex->AddTask(late, OtherTask("late", milliseconds(1))).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ex->Stop().ok());
  s = ex->Stop();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s.message(), "twice"));
}

TEST(ExecutorBadInputTest, StartWithoutTasksIsFailedPrecondition) {
  auto ex = MakeExecutor();
  EXPECT_EQ(ex->Start().code(), StatusCode::kFailedPrecondition);
  ex->Wait();  // returns at once
  EXPECT_FALSE(ex->WaitAny(milliseconds(1)));
}

TEST(ExecutorBadInputTest, NoPrivilegeForFifoNamesCapSysNiceAndRtprio) {
  const int rc = RunInChild([] {
    rlimit rl{0, 0};
    setrlimit(RLIMIT_RTPRIO, &rl);
    if (!DropCapability(CAP_SYS_NICE)) return 10;
    auto ex = Executor::Create(TestExecutorConfig());
    if (!ex.ok()) return 11;
    CountingTask t;
    TaskConfig tc;
    tc.name = "pos";
    tc.policy = SchedPolicy::kFifo;
    tc.priority = 99;
    Result<TaskId> id = (*ex)->AddTask(t, tc);
    if (id.ok()) return 12;
    const std::string m = id.status().message();
    if (id.status().code() != StatusCode::kPermissionDenied) return 13;
    if (!Contains(m, "cannot set SCHED_FIFO 99 on task \"pos\": Operation not permitted"))
      return 14;
    if (!Contains(m, "CAP_SYS_NICE") || !Contains(m, "rtprio limit") || !Contains(m, "root")) {
      return 15;
    }
    return 0;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop CAP_SYS_NICE here (capset refused)";
  EXPECT_EQ(rc, 0);
}

TEST(ExecutorBadInputTest, NonRtFallbackRunsTheTaskAsOtherAndSaysSo) {
  const int rc = RunInChild([] {
    rlimit rl{0, 0};
    setrlimit(RLIMIT_RTPRIO, &rl);
    if (!DropCapability(CAP_SYS_NICE)) return 10;
    ExecutorConfig ec = TestExecutorConfig();
    ec.allow_non_rt_fallback = true;
    auto ex = Executor::Create(ec);
    if (!ex.ok()) return 11;
    ProbeTask t;
    TaskConfig tc;
    tc.name = "ctl";
    tc.policy = SchedPolicy::kFifo;
    tc.priority = 80;
    tc.max_cycles = 5;
    Result<TaskId> id = (*ex)->AddTask(t, tc);
    if (!id.ok()) return 12;
    const TaskInfo info = (*ex)->Info(*id);
    if (!info.fell_back_to_non_rt || info.effective_policy != SchedPolicy::kOther) return 13;
    if (!(*ex)->Start().ok()) return 14;
    (*ex)->Wait();
    return t.policy == SCHED_OTHER ? 0 : 15;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop CAP_SYS_NICE here (capset refused)";
  EXPECT_EQ(rc, 0);
}

TEST(ExecutorBadInputTest, MlockallFailureNamesTheMemlockLimit) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "lock_memory is ignored in sanitizer builds";
  }
  const int rc = RunInChild([] {
    if (!DropCapability(CAP_IPC_LOCK)) return 10;
    rlimit rl{rlim_t{64} * 1024, rlim_t{64} * 1024};
    setrlimit(RLIMIT_MEMLOCK, &rl);
    ExecutorConfig ec = TestExecutorConfig();
    ec.lock_memory = true;
    auto ex = Executor::Create(ec);
    if (ex.ok()) return 11;
    const std::string m = ex.status().message();
    if (!Contains(m, "mlockall") || !Contains(m, "memlock limit is 64 KiB") ||
        !Contains(m, "ulimit -l")) {
      std::fprintf(stderr, "%s\n", m.c_str());
      return 12;
    }
    return 0;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop CAP_IPC_LOCK here (capset refused)";
  EXPECT_EQ(rc, 0);
}

TEST(ExecutorBadInputTest, UnknownTaskIdReadsAsEmpty) {
  auto ex = MakeExecutor();
  EXPECT_EQ(ex->Stats(42).cycles, 0u);
  EXPECT_EQ(ex->State(42), TaskState::kCreated);
  EXPECT_EQ(ex->Info(42).config.name, "task");
}

static_assert(noexcept(std::declval<const Executor&>().Stats(0)));
static_assert(noexcept(std::declval<const Executor&>().State(0)));
static_assert(noexcept(std::declval<TaskStats&>().Record(0, 0, 0, false, false, 0)));

}  // namespace
}  // namespace rtloop
