// Spinner: a thread of the test process, named "rtloop-spin" (or as asked), SCHED_FIFO at a chosen
// priority on one CPU, busy for `busy` every `every` until destroyed: a real cause of late cycles
// for the outlier explanation's tests (a higher-priority thread on the task's CPU).
//
//   rtloop::testing::Spinner spin(0, 95, std::chrono::microseconds(3000),
//                                 std::chrono::milliseconds(150));
//   if (!spin.ok()) GTEST_SKIP() << "SCHED_FIFO 95 on CPU 0 was refused";
//   ... measure under rtloop::testing::MeasureLock ...
//
// Threading: construct and destroy on one test thread; tid() and ok() from any. Header-only.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace rtloop::testing {

class Spinner {
 public:
  // `name`: the thread's name (its comm: at most 15 bytes), e.g. markup for the views' tests.
  Spinner(int cpu, int priority, std::chrono::microseconds busy, std::chrono::milliseconds every,
          const char* name = "rtloop-spin")
      : thread_([=, this] { Run(cpu, priority, busy, every, name); }) {
    while (state_.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Spinner() {
    stop_.store(true);
    thread_.join();
  }
  bool ok() const { return state_.load() == 1; }
  int tid() const { return tid_.load(); }

 private:
  void Run(int cpu, int priority, std::chrono::microseconds busy, std::chrono::milliseconds every,
           const char* name) {
    pthread_setname_np(pthread_self(), name);
    tid_.store(gettid());
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<std::size_t>(cpu), &set);
    sched_param p{};
    p.sched_priority = priority;
    const bool ok = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0 &&
                    pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
    state_.store(ok ? 1 : 2);
    if (!ok) return;
    while (!stop_.load()) {
      std::this_thread::sleep_for(every);
      const auto end = std::chrono::steady_clock::now() + busy;
      while (std::chrono::steady_clock::now() < end) {
      }
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<int> state_{0};  // 1: running as asked, 2: could not
  std::atomic<int> tid_{0};
  std::thread thread_;
};

}  // namespace rtloop::testing
