// Multi-threaded stress of the executor (label `stress`, also run under TSan): several tasks share
// one observer while other threads read statistics; executors are created, started and stopped
// repeatedly at random moments.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rtloop/framework/executor.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

class SharedObserver final : public CycleObserver {
 public:
  void OnCycle(const CycleSample& s) noexcept override {
    samples.fetch_add(1, std::memory_order_relaxed);
    if (s.wakeup_latency_ns < 0) early.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> samples{0};
  std::atomic<std::uint64_t> early{0};
};

class Busy final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& ctx) noexcept override {
    sum_ += ctx.cycle;
    return StepResult::kContinue;
  }

 private:
  std::uint64_t sum_ = 0;
};

Result<std::unique_ptr<Executor>> CreateExecutor() {
  ExecutorConfig ec;
  ec.lock_memory = false;
  ec.start_delay = milliseconds(1);
  return Executor::Create(ec);
}

TaskConfig OtherTask(std::string name, std::chrono::nanoseconds period) {
  TaskConfig tc;
  tc.name = std::move(name);
  tc.period = period;
  tc.policy = SchedPolicy::kOther;
  tc.priority = 0;
  return tc;
}

TEST(ExecutorStressTest, ConcurrentReadersAndRepeatedStartStop) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 15; ++round) {
    Result<std::unique_ptr<Executor>> ex = CreateExecutor();
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    SharedObserver obs;
    std::vector<Busy> tasks(4);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskConfig tc = OtherTask("stress" + std::to_string(i),
                                microseconds(200 + 100 * static_cast<std::int64_t>(i)));
      tc.observers = {&obs};
      tc.overrun_policy = static_cast<OverrunPolicy>(i % 3);
      tc.wait_mode = i == 3 ? WaitMode::kPosixTimer : WaitMode::kAbsolute;
      ASSERT_TRUE((*ex)->AddTask(tasks[i], tc).ok());
    }
    std::atomic<bool> done{false};
    std::vector<std::thread> readers;
    readers.reserve(2);
    for (int r = 0; r < 2; ++r) {
      readers.emplace_back([&] {
        std::uint64_t last = 0;
        while (!done.load()) {
          for (TaskId id = 0; id < (*ex)->TaskCount(); ++id) {
            const TaskStatsSnapshot s = (*ex)->Stats(id);
            if (id == 0) {
              EXPECT_GE(s.cycles, last);  // monotonic
              last = s.cycles;
            }
            (void)(*ex)->State(id);
          }
        }
      });
    }
    ASSERT_TRUE((*ex)->Start().ok());
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(0, 40)(rng)));
    ASSERT_TRUE((*ex)->Stop().ok());
    done.store(true);
    for (auto& t : readers) t.join();
    std::uint64_t total = 0;
    for (TaskId id = 0; id < tasks.size(); ++id) {
      const TaskStatsSnapshot s = (*ex)->Stats(id);
      EXPECT_EQ(s.state, TaskState::kStopped);
      total += s.cycles;
    }
    EXPECT_EQ(total, obs.samples.load());
    EXPECT_EQ(obs.early.load(), 0u);
  }
}

// Stop() from a second thread at random moments around Start(): it is refused before Start(),
// waits for a Start() in progress, and then stops every task; Wait() on the first thread returns.
TEST(ExecutorStressTest, StopFromAnotherThreadRacesStart) {
  std::mt19937 rng(777);
  for (int round = 0; round < 20; ++round) {
    Result<std::unique_ptr<Executor>> ex = CreateExecutor();
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    std::vector<Busy> tasks(3);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskConfig tc = OtherTask("race" + std::to_string(i), microseconds(300));
      ASSERT_TRUE((*ex)->AddTask(tasks[i], tc).ok());
    }
    const int delay_us = std::uniform_int_distribution<int>(0, 3000)(rng);
    Status stopped;
    std::thread stopper([&] {
      std::this_thread::sleep_for(microseconds(delay_us));
      for (;;) {
        Status s = (*ex)->Stop();
        if (s.ok() || s.message().find("before Start()") == std::string::npos) {
          stopped = s;
          return;
        }
        std::this_thread::yield();
      }
    });
    ASSERT_TRUE((*ex)->Start().ok());
    (*ex)->Wait();
    stopper.join();
    EXPECT_TRUE(stopped.ok()) << stopped.ToString();
    for (TaskId id = 0; id < tasks.size(); ++id) {
      EXPECT_EQ((*ex)->State(id), TaskState::kStopped);
    }
  }
}

}  // namespace
}  // namespace rtloop
