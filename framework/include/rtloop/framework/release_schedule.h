// ReleaseSchedule: the release-time arithmetic of one periodic task (framework/README.md,
// "Measurement"), free of clocks
// and threads so that it can be driven by a fake clock in tests.
//
//   ReleaseSchedule s(start + phase, std::chrono::milliseconds(1), OverrunPolicy::kSkip);
//   for (;;) {
//     SleepUntil(clock, s.release());
//     ...Step()...
//     ReleaseSchedule::Advanced a = s.Advance(Now(clock));  // a.overrun, a.missed
//   }
//
// Release k is E_k = first + k * period. After the Step() of the current release ended at D:
//   - no overrun (D <= E_{k+1}): the next release is E_{k+1};
//   - overrun (D > E_{k+1}), m = ceil((D - E_{k+1}) / period) grid releases lie before D:
//       kSkip      next = E_{k+1+m}, the first grid release at or after D (as cyclictest); the m
//                  skipped releases are reported as missed; the phase is kept.
//       kCatchUp   next = E_{k+1}: every release runs, back to back, until the task is on time
//                  again; nothing is missed.
//       kReanchor  next = D + period: the grid moves (phase shifts); the m old-grid releases that
//                  passed are reported as missed.
// Threading: a value type owned by one thread. Every member is RT-safe (arithmetic only).
#pragma once

#include <chrono>
#include <cstdint>

#include "rtloop/framework/task_config.h"
#include "rtloop/framework/time.h"

namespace rtloop {

class ReleaseSchedule {
 public:
  struct Advanced {
    bool overrun = false;      // the Step() ended after the next release
    std::uint64_t missed = 0;  // grid releases that will not run because of it
  };

  constexpr ReleaseSchedule() noexcept = default;
  constexpr ReleaseSchedule(TimePoint first_release, std::chrono::nanoseconds period,
                            OverrunPolicy policy) noexcept
      : release_(first_release), period_(period), policy_(policy) {}

  // The pending release E and its index k (counting skipped releases). RT-safe.
  constexpr TimePoint release() const noexcept { return release_; }
  constexpr std::uint64_t index() const noexcept { return index_; }
  constexpr std::chrono::nanoseconds period() const noexcept { return period_; }
  constexpr OverrunPolicy policy() const noexcept { return policy_; }

  // The Step() of the pending release ended at `done`: move to the next release. RT-safe.
  constexpr Advanced Advance(TimePoint done) noexcept {
    const TimePoint next = release_ + period_;
    ++index_;
    if (done <= next) {
      release_ = next;
      return {};
    }
    const std::int64_t p = period_.count();
    const std::int64_t late = (done - next).count();
    // ceil(late / p) in O(1), however long the gap, without the overflow of (late + p - 1) / p.
    const auto missed = static_cast<std::uint64_t>(late / p + (late % p != 0 ? 1 : 0));
    switch (policy_) {
      case OverrunPolicy::kSkip:
        release_ = next + period_ * static_cast<std::int64_t>(missed);
        index_ += missed;
        return {true, missed};
      case OverrunPolicy::kCatchUp:
        release_ = next;
        return {true, 0};
      case OverrunPolicy::kReanchor:
        release_ = done + period_;
        return {true, missed};
    }
    release_ = next;
    return {true, 0};
  }

  // Replaces the pending release (relative wait modes define it as "time before the sleep +
  // period", as cyclictest -r/-s do). The index is kept. RT-safe.
  constexpr void Rebase(TimePoint release) noexcept { release_ = release; }

 private:
  TimePoint release_;
  std::chrono::nanoseconds period_{1};
  OverrunPolicy policy_ = OverrunPolicy::kSkip;
  std::uint64_t index_ = 0;
};

}  // namespace rtloop
