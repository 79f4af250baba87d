#include "rtloop/framework/executor.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "rtloop/framework/cyclic_task.h"

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

class CountingTask final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    steps.fetch_add(1, std::memory_order_relaxed);
    last_cycle.store(ctx.cycle, std::memory_order_relaxed);
    return StepResult::kContinue;
  }
  std::atomic<int> steps{0};
  std::atomic<std::uint64_t> last_cycle{0};
};

TEST(ExecutorTest, RunsTaskForMaxCyclesThenStops) {
  auto ex = Executor::Create(TestExecutorConfig());
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  CountingTask task;
  TaskConfig tc = OtherTask("count", microseconds(500));
  tc.max_cycles = 50;
  Result<TaskId> id = (*ex)->AddTask(task, tc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();
  EXPECT_EQ(task.steps.load(), 50);
  const TaskStatsSnapshot s = (*ex)->Stats(*id);
  EXPECT_EQ(s.cycles, 50u);
  EXPECT_EQ(s.state, TaskState::kStopped);
  EXPECT_GT(s.tid, 0);
  EXPECT_TRUE((*ex)->Stop().ok());
}

TEST(ExecutorTest, CyclicTaskRunsUnderTheExecutor) {
  auto ex = Executor::Create(TestExecutorConfig());
  ASSERT_TRUE(ex.ok());
  CyclicTask cyclic;
  TaskConfig tc = OtherTask("cyclic0", microseconds(200));
  tc.max_cycles = 100;
  Result<TaskId> id = (*ex)->AddTask(cyclic, tc);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();
  EXPECT_EQ((*ex)->Stats(*id).cycles, 100u);
}

}  // namespace
}  // namespace rtloop
