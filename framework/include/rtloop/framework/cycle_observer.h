// CycleObserver: the per-cycle hook through which telemetry (or a user) sees every cycle's
// measurement, on the RT thread, right after the executor's own statistics are updated.
//
//   class CountLate final : public rtloop::CycleObserver {
//    public:
//     void OnCycle(const rtloop::CycleSample& s) noexcept override {
//       if (s.wakeup_latency_ns > 50'000) late_.fetch_add(1, std::memory_order_relaxed);
//     }
//     std::atomic<std::uint64_t> late_{0};
//   };
//
// Threading: OnRtThreadStart() and OnCycle() run on the task's RT thread; OnCycle() must be RT-safe
// (no allocation, no blocking, no syscalls). One observer may serve several tasks (each call names
// its task); it is then called concurrently from their threads.
#pragma once

#include <cstdint>

#include "rtloop/framework/time.h"

namespace rtloop {

using TaskId = std::uint32_t;

// Flags of a CycleSample.
enum CycleFlags : std::uint32_t {
  kCycleOverrun = 1u << 0,  // this Step() ended after the next release
  kCycleFault = 1u << 1,    // the watchdog tripped on this cycle
  kCycleFirst = 1u << 2,    // the first cycle of the task (no period jitter yet)
};

// One cycle's measurement (DESIGN.md §3). Times in ns on the task's clock.
struct CycleSample {
  TaskId task = 0;
  std::uint64_t seq = 0;               // 0-based cycle index (== CycleContext::cycle)
  TimePoint release;                   // E_k
  std::int64_t wakeup_latency_ns = 0;  // L_k = W_k - E_k, signed
  std::int64_t execution_ns = 0;       // X_k = D_k - W_k
  std::int64_t period_jitter_ns = 0;   // J_k = (W_k - W_{k-1}) - period; 0 on the first cycle
  // Releases missed because of this cycle's overrun (kSkip, kReanchor; 0 under kCatchUp).
  std::uint32_t missed_releases = 0;
  std::uint32_t flags = 0;  // CycleFlags
};

class CycleObserver {
 public:
  virtual ~CycleObserver() = default;
  // On the task's RT thread, after its scheduling is set and before OnStart(): the place to take
  // per-thread resources (e.g. a queue producer token). May allocate. Default: nothing.
  virtual void OnRtThreadStart(TaskId /*task*/) {}
  // After each cycle. RT-safe.
  virtual void OnCycle(const CycleSample& sample) noexcept = 0;
};

}  // namespace rtloop
