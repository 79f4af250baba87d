#include "plc_watchdog.h"

namespace plc {

const char* WatchdogStateName(WatchdogState state) noexcept {
  switch (state) {
    case WatchdogState::kOff:
      return "off";
    case WatchdogState::kArmed:
      return "armed";
    case WatchdogState::kTripped:
      return "TRIPPED";
  }
  return "?";
}

Watchdog::Watchdog(std::chrono::nanoseconds time, std::uint32_t sensitivity) noexcept
    : time_(time),
      sensitivity_(sensitivity == 0 ? 1 : sensitivity),
      state_(time.count() > 0 ? WatchdogState::kArmed : WatchdogState::kOff) {}

bool Watchdog::Check(std::int64_t execution_ns) noexcept {
  if (state() != WatchdogState::kArmed) return false;
  // Only this thread writes the counters: plain load + store, no read-modify-write needed.
  const bool violation = execution_ns > time_.count();
  const std::uint32_t run = violation ? consecutive_.load(std::memory_order_relaxed) + 1 : 0;
  consecutive_.store(run, std::memory_order_relaxed);
  if (!violation) return false;
  violations_.store(violations_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const bool single = execution_ns > time_.count() * static_cast<std::int64_t>(sensitivity_);
  if (run < sensitivity_ && !single) return false;
  single_cycle_.store(single && run < sensitivity_, std::memory_order_relaxed);
  state_.store(WatchdogState::kTripped, std::memory_order_release);
  return true;
}

}  // namespace plc
