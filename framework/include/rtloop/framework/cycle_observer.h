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
// A task has up to kMaxCycleObservers observers (TaskConfig::observers, e.g. a user's observer and
// the telemetry hub), fixed when the task is added and called in order on the task's RT thread.
//
// Threading: OnRtThreadStart(), ForTask() and OnCycle() run on the task's RT thread; OnCycle() must
// be RT-safe (no allocation, no blocking, no syscalls). One observer may serve several tasks (each
// call names its task); it is then called concurrently from their threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "rtloop/framework/check.h"
#include "rtloop/framework/time.h"

namespace rtloop {

using TaskId = std::uint32_t;

// Flags of a CycleSample.
enum CycleFlags : std::uint32_t {
  kCycleOverrun = 1u << 0,  // this Step() ended after the next release
  kCycleFault = 1u << 1,    // the watchdog tripped on this cycle, or its Step() returned kFault
  kCycleFirst = 1u << 2,    // the first cycle of the task (no period jitter yet)
};

// One cycle's measurement (the words are defined in framework/README.md, "Measurement"). Times in
// ns on the task's clock.
struct CycleSample {
  TaskId task = 0;
  // 0-based index among the task's measured cycles: CycleContext::cycle minus
  // TaskConfig::warmup_cycles (warm-up cycles are not samples), so seqs are contiguous from 0.
  std::uint64_t seq = 0;
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
  // The observer whose OnCycle() the task's RT thread calls for `task`'s cycles: asked once, on
  // that thread, after OnRtThreadStart() and before the first cycle. An observer that serves
  // several tasks returns the part that serves `task` (one virtual call a cycle, no per-cycle
  // look-up: TelemetryHub returns the task's TaskTelemetry); it must stay valid while the task
  // runs. nullptr or the default: this observer itself.
  virtual CycleObserver* ForTask(TaskId /*task*/) noexcept { return this; }
};

// Observers one task may have.
inline constexpr std::size_t kMaxCycleObservers = 8;

// The observers of one task as the RT thread holds them: a fixed array (no allocation, copied by
// value), filled once at set-up, then only read. Not-null, distinct pointers (Executor::AddTask
// checks TaskConfig::observers before building one). Value type.
class CycleObserverList {
 public:
  constexpr CycleObserverList() noexcept = default;
  // RTLOOP_CHECKs that `observers` fit and are not null (set-up code validates first).
  CycleObserverList(std::initializer_list<CycleObserver*> observers) noexcept {
    for (CycleObserver* o : observers) RTLOOP_CHECK(Add(o), "too many or null cycle observers");
  }

  // Appends `observer`; false when full or null. Set-up only (the RT thread only reads the list).
  bool Add(CycleObserver* observer) noexcept {
    if (observer == nullptr || size_ == items_.size()) return false;
    items_[size_++] = observer;
    return true;
  }

  // RT-safe.
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  CycleObserver* const* begin() const noexcept { return items_.data(); }
  CycleObserver* const* end() const noexcept { return items_.data() + size_; }

  // Calls every observer's OnCycle() in order. RT-safe (as the observers are). One observer (a
  // task with telemetry, or with a user's observer) is the common case: one call, no loop state
  // kept across it (the RT loop saves fewer registers around it).
  void OnCycle(const CycleSample& sample) const noexcept {
    if (size_ == 1) [[likely]] {
      items_[0]->OnCycle(sample);
      return;
    }
    for (std::size_t i = 0; i < size_; ++i) items_[i]->OnCycle(sample);
  }

 private:
  std::array<CycleObserver*, kMaxCycleObservers> items_{};
  std::size_t size_ = 0;
};

}  // namespace rtloop
