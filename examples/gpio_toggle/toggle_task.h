// The vendor's rt_gpio_ctrl case as an rtloop task: every cycle it flips an output, then
// optionally busy-waits a fixed delay (100 µs in the vendor's document) to stand for the work a
// real loop does. On a scope the output is a square wave of twice the period; its edges jitter by
// the task's wake-up latency, which the runtime measures and reports at the same time.
//
//   gpio_toggle::ToggleTask task(**output, std::chrono::microseconds(100), /*cycles=*/0);
//   runtime->AddTask(task, config);                 // e.g. 1 ms, SCHED_FIFO 90, pinned
//
// Threading: Step() and OnStop() run on the task's RT thread; toggles() from any thread.
// Step() is RT-safe apart from the output's own write (one system call on real hardware).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "gpio_output.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/time.h"

namespace gpio_toggle {

class ToggleTask final : public rtloop::PeriodicTask {
 public:
  // `cycles` 0: until stopped.
  ToggleTask(Output& output, std::chrono::nanoseconds busy_delay, std::uint64_t cycles) noexcept
      : output_(output), delay_(busy_delay), cycles_(cycles) {}

  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    level_ = !level_;
    output_.Set(level_);
    if (delay_.count() > 0) rtloop::SpinFor(rtloop::Clock::kMonotonic, delay_);
    toggles_.store(ctx.cycle + 1, std::memory_order_relaxed);
    const bool more = cycles_ == 0 || ctx.cycle + 1 < cycles_;
    return more ? rtloop::StepResult::kContinue : rtloop::StepResult::kStop;
  }

  // Leaves the output low.
  void OnStop() noexcept override { output_.Set(false); }

  std::uint64_t toggles() const noexcept { return toggles_.load(std::memory_order_relaxed); }

 private:
  Output& output_;
  const std::chrono::nanoseconds delay_;
  const std::uint64_t cycles_;
  bool level_ = false;
  std::atomic<std::uint64_t> toggles_{0};
};

}  // namespace gpio_toggle
