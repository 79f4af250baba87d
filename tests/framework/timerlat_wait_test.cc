// WaitMode::kTimerlat: what a task needs of it (checked at AddTask), the errors where the kernel
// cannot serve it, and, where the kernel has timerlat's user-space interface (Linux >= 6.5, root:
// the PREEMPT_RT lab, tests/rtlab), a real run released by the tracer's timer, with the kernel's
// own timerlat samples of the task's thread in the trace.
//
// The real run sets the tracer up as `rtla timerlat -U` does (the timerlat tracer in a trace
// instance of the test's own, NO_OSNOISE_WORKLOAD, the period) and restores every setting after.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "executor_test_util.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

using namespace executor_testing;  // NOLINT(google-build-using-namespace): test helpers
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr const char* kOsnoise = "/sys/kernel/tracing/osnoise";

int LastAllowedCpu() {
  const SystemInfo info = ReadSystemInfo();
  return info.affinity_cpus.empty() ? 0 : info.affinity_cpus.back();
}

TaskConfig TimerlatTask(const std::string& name, int cpu) {
  TaskConfig tc = OtherTask(name, milliseconds(1));
  tc.wait_mode = WaitMode::kTimerlat;
  tc.cpus = {cpu};
  return tc;
}

std::string AddTaskError(const TaskConfig& tc) {
  auto ex = MakeExecutor();
  CountingTask task;
  Result<TaskId> id = ex->AddTask(task, tc);
  EXPECT_FALSE(id.ok());
  if (id.ok()) return "";
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  return id.status().message();
}

TEST(TimerlatWaitTest, AddTaskSaysWhatTheModeNeeds) {
  const int cpu = LastAllowedCpu();
  TaskConfig tc = TimerlatTask("tl", cpu);
  tc.cpus.clear();
  EXPECT_TRUE(Contains(AddTaskError(tc), "exactly one CPU"));
  tc = TimerlatTask("tl", cpu);
  tc.overrun_policy = OverrunPolicy::kCatchUp;
  EXPECT_TRUE(Contains(AddTaskError(tc), "kSkip"));
  tc = TimerlatTask("tl", cpu);
  tc.period = microseconds(50);
  EXPECT_TRUE(Contains(AddTaskError(tc), "100 us to 1 s"));
  tc.period = std::chrono::nanoseconds(1'000'500);
  EXPECT_TRUE(Contains(AddTaskError(tc), "whole microseconds"));
  tc = TimerlatTask("tl", cpu);
  tc.policy = SchedPolicy::kDeadline;
  tc.deadline = {microseconds(100), microseconds(500), milliseconds(1)};
  EXPECT_TRUE(Contains(AddTaskError(tc), "SCHED_DEADLINE"));
  EXPECT_STREQ(WaitModeName(WaitMode::kTimerlat), "timerlat");
  EXPECT_TRUE(KeepsGrid(WaitMode::kTimerlat));
  EXPECT_FALSE(KeepsGrid(WaitMode::kRelative));
}

bool HaveTimerlatFd(int cpu) {
  return access((std::string(kOsnoise) + "/per_cpu/cpu" + std::to_string(cpu) + "/timerlat_fd")
                    .c_str(),
                F_OK) == 0;
}

// Start() fails on the task's thread, with the reason and the fix.
std::string StartError(const TaskConfig& tc) {
  auto ex = MakeExecutor();
  CountingTask task;
  EXPECT_TRUE(ex->AddTask(task, tc).ok());
  const Status s = ex->Start();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(task.steps.load(), 0);
  return s.message();
}

TEST(TimerlatWaitTest, AKernelWithoutTheInterfaceIsNamedWithItsFix) {
  const int cpu = LastAllowedCpu();
  if (HaveTimerlatFd(cpu)) GTEST_SKIP() << "this kernel has timerlat_fd (the lab's case)";
  const std::string e = StartError(TimerlatTask("tl-none", cpu));
  EXPECT_TRUE(Contains(e, "timerlat_fd is missing")) << e;
  EXPECT_TRUE(Contains(e, "Linux >= 6.5")) << e;
}

// Writes `value` to a tracefs file; false when the kernel refuses it.
bool WriteFile(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value << "\n";
  f.flush();
  return static_cast<bool>(f);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The tracer as `rtla timerlat -U` leaves it while it runs, in an instance of the test's own;
// every global setting it changes is put back on destruction.
class TimerlatTracer {
 public:
  explicit TimerlatTracer(int period_us) {
    period_ = ReadFirstLine((std::string(kOsnoise) + "/timerlat_period_us").c_str());
    ok_ = mkdir(instance_.c_str(), 0755) == 0 &&
          WriteFile(std::string(kOsnoise) + "/timerlat_period_us", std::to_string(period_us)) &&
          WriteFile(std::string(kOsnoise) + "/options", "NO_OSNOISE_WORKLOAD") &&
          WriteFile(instance_ + "/current_tracer", "timerlat");
  }
  ~TimerlatTracer() {
    WriteFile(instance_ + "/current_tracer", "nop");
    rmdir(instance_.c_str());
    if (!period_.empty()) WriteFile(std::string(kOsnoise) + "/timerlat_period_us", period_);
    WriteFile(std::string(kOsnoise) + "/options", "OSNOISE_WORKLOAD");
  }
  TimerlatTracer(const TimerlatTracer&) = delete;
  TimerlatTracer& operator=(const TimerlatTracer&) = delete;

  bool ok() const { return ok_; }
  std::string trace() const { return ReadAll(instance_ + "/trace"); }

 private:
  const std::string instance_ = "/sys/kernel/tracing/instances/rtloop_timerlat_test";
  std::string period_;
  bool ok_ = false;
};

TEST(TimerlatWaitTest, TheTracersTimerReleasesTheTaskAndTheKernelMeasuresIt) {
  const int cpu = LastAllowedCpu();
  if (!HaveTimerlatFd(cpu)) {
    GTEST_SKIP() << "no timerlat_fd here (needs Linux >= 6.5 with the timerlat tracer; the "
                    "PREEMPT_RT lab boots one: tests/rtlab)";
  }
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the tracer's settings)";
  {
    // The interface is there but nobody enabled the tracer for a user workload: rtla is named.
    const std::string e = StartError(TimerlatTask("tl-norun", cpu));
    EXPECT_TRUE(Contains(e, "rtla timerlat top -U -c " + std::to_string(cpu) + " -p 1000")) << e;
  }
  TimerlatTracer tracer(1000);
  ASSERT_TRUE(tracer.ok()) << "could not set the timerlat tracer up";
  {
    TaskConfig other_period = TimerlatTask("tl-2ms", cpu);
    other_period.period = milliseconds(2);
    const std::string e = StartError(other_period);
    EXPECT_TRUE(Contains(e, "period is 1000 us")) << e;
    EXPECT_TRUE(Contains(e, "-p 2000")) << e;
  }
  auto ex = MakeExecutor();
  CountingTask task;
  TaskConfig tc = TimerlatTask("tl-run", cpu);
  tc.max_cycles = 200;
  Result<TaskId> id = ex->AddTask(task, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const Status started = ex->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  ex->Wait();
  const TaskStatsSnapshot s = ex->Stats(*id);
  EXPECT_EQ(s.cycles, 200u);
  EXPECT_EQ(s.state, TaskState::kStopped);
  // Released by the tracer's 1 ms grid: 200 cycles take about 200 periods.
  EXPECT_GE(s.latency_min_ns, -50'000) << "woke well before its release: not on the grid";
  // The kernel recorded the thread's own samples ("COMM-TID [cpu] ... context thread ..."), found
  // by the TID: the comm is "<...>" when nothing recorded it (the timerlat tracer alone does not;
  // rtla's events, or any sched_switch tracing, do): "<...>-647" in the lab's first 6.12 run.
  const std::string trace = tracer.trace();
  const std::string by_tid = "-" + std::to_string(s.tid);
  std::istringstream lines(trace);
  int samples = 0;
  for (std::string line; std::getline(lines, line);) {
    std::string who;
    std::istringstream(line) >> who;
    const bool thread = who.size() > by_tid.size() &&
                        who.compare(who.size() - by_tid.size(), by_tid.size(), by_tid) == 0;
    if (thread && Contains(line, "timer_latency")) ++samples;
  }
  EXPECT_GE(samples, 150) << trace.substr(0, 2000);

  // Stop() ends a wait in the kernel's read(): the wake signal returns it early, and the task
  // neither sleeps out the period nor runs another cycle (the waiter sees the stop flag).
  auto endless = MakeExecutor();
  CountingTask running;
  ASSERT_TRUE(endless->AddTask(running, TimerlatTask("tl-stop", cpu)).ok());
  const Status started_again = endless->Start();
  ASSERT_TRUE(started_again.ok()) << started_again.ToString();
  ASSERT_TRUE(WaitForSteps(running, 50));
  ASSERT_TRUE(endless->Stop().ok());
  EXPECT_TRUE(running.stopped.load());
  const int steps = running.steps.load();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(running.steps.load(), steps) << "a cycle ran after Stop() returned";
  EXPECT_EQ(endless->State(0), TaskState::kStopped);
}

}  // namespace
}  // namespace rtloop
