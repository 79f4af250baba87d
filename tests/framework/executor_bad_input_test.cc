// The Executor's answers to bad input and failures: each names the task, the field and the fix.
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
#include "executor_test_util.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

using namespace executor_testing;  // NOLINT(google-build-using-namespace): test helpers
using std::chrono::microseconds;
using std::chrono::milliseconds;

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
  tc = OtherTask("wu", milliseconds(1));
  tc.max_cycles = 10;
  tc.warmup_cycles = 10;
  EXPECT_TRUE(Contains(ex->AddTask(t, tc).status().message(), "leaves nothing to measure"));
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
