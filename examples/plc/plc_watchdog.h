// A PLC task watchdog with CODESYS semantics: a cycle whose execution time exceeds the watchdog
// time is a violation; `sensitivity` consecutive violations trip it, and so does one cycle longer
// than time x sensitivity (which catches an endless loop in the first cycle). Sensitivity 1: the
// first violation trips it. Once tripped it stays tripped (a PLC needs a reset after an exception).
//
//   plc::Watchdog wd(std::chrono::microseconds(500), 3);
//   if (wd.Check(sample.execution_ns)) EnterFault();   // on the task's RT thread
//
// Execution time is the executor's X_k = D_k - W_k (the task's own work, from wake-up to the end
// of its step), as a PLC's watchdog measures a task's processing time; wake-up latency is the
// scheduler's and shows in the monitor's jitter columns instead.
//
// Threading: Check() on one thread (the task's RT thread, from a CycleObserver). The getters may
// be called from any thread: the counters are single-writer relaxed atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace plc {

enum class WatchdogState : std::uint8_t {
  kOff,      // no watchdog configured
  kArmed,    // watching, not tripped
  kTripped,  // tripped: the task is in exception
};

// "off", "armed", "TRIPPED". RT-safe.
const char* WatchdogStateName(WatchdogState state) noexcept;

class Watchdog {
 public:
  // time 0: off (never trips). sensitivity 0 counts as 1, as in CODESYS.
  Watchdog(std::chrono::nanoseconds time, std::uint32_t sensitivity) noexcept;

  // One cycle's execution time. True on the one cycle that trips it. RT-safe.
  bool Check(std::int64_t execution_ns) noexcept;

  // Any thread. RT-safe.
  WatchdogState state() const noexcept { return state_.load(std::memory_order_acquire); }
  std::uint64_t violations() const noexcept { return violations_.load(std::memory_order_relaxed); }
  // The run of consecutive violations ending at the last checked cycle.
  std::uint32_t consecutive() const noexcept {
    return consecutive_.load(std::memory_order_relaxed);
  }
  std::chrono::nanoseconds time() const noexcept { return time_; }
  std::uint32_t sensitivity() const noexcept { return sensitivity_; }
  // True when the trip came from a single cycle longer than time x sensitivity.
  bool tripped_by_single_cycle() const noexcept {
    return single_cycle_.load(std::memory_order_relaxed);
  }

 private:
  const std::chrono::nanoseconds time_;
  const std::uint32_t sensitivity_;
  std::atomic<WatchdogState> state_;
  std::atomic<std::uint64_t> violations_{0};
  std::atomic<std::uint32_t> consecutive_{0};
  std::atomic<bool> single_cycle_{false};
};

}  // namespace plc
