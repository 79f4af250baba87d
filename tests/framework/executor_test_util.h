// Helpers shared by the executor's real-thread tests (executor_test.cc, executor_signals_test.cc,
// executor_bad_input_test.cc): configs for tasks that need no privilege, capability checks, a
// forked child with a time limit, and tasks that count what happens to them.
#pragma once

#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/periodic_task.h"

namespace rtloop::executor_testing {

inline ExecutorConfig TestExecutorConfig() {
  ExecutorConfig ec;
  ec.lock_memory = false;
  ec.start_delay = std::chrono::milliseconds(5);
  return ec;
}

inline TaskConfig OtherTask(const std::string& name, std::chrono::nanoseconds period) {
  TaskConfig tc;
  tc.name = name;
  tc.period = period;
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  return tc;
}

inline std::unique_ptr<Executor> MakeExecutor(const ExecutorConfig& ec = TestExecutorConfig()) {
  auto ex = Executor::Create(ec);
  RTLOOP_CHECK(ex.ok(), "Executor::Create failed in a test");
  return std::move(*ex);
}

inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline bool HaveCapSysNice() {
  struct __user_cap_header_struct hdr {};
  struct __user_cap_data_struct data[2]{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[0].effective & (1u << CAP_SYS_NICE)) != 0;
}

// Removes `cap` from this process's effective/permitted sets (used in forked children).
inline bool DropCapability(int cap) {
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

// Runs `body` in a forked child (rtloop::testing::RunForked: SIGALRM after 20 s, so a child that
// hangs fails the test instead of hanging it); returns its exit code (or 128+signal), and passes
// what the child printed on to this process' stdout.
template <typename F>
inline int RunInChild(F body) {
  const ::rtloop::testing::ForkedResult r =
      ::rtloop::testing::RunForked([&body] { return static_cast<int>(body()); });
  std::fputs(r.out.c_str(), stdout);
  return r.status;
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

// Polls (bounded) until `task` has run `n` steps; false after 10 s.
inline bool WaitForSteps(const CountingTask& task, int n) {
  const TimePoint until = Now(Clock::kMonotonic) + std::chrono::seconds(10);
  while (task.steps.load() < n) {
    if (Now(Clock::kMonotonic) > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

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

class CountingObserver final : public CycleObserver {
 public:
  void OnRtThreadStart(TaskId /*task*/) override { thread_starts.fetch_add(1); }
  void OnCycle(const CycleSample& /*s*/) noexcept override {
    cycles.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<int> thread_starts{0};
  std::atomic<std::uint64_t> cycles{0};
};

}  // namespace rtloop::executor_testing
