#include "rtloop/framework/task_stats.h"

namespace rtloop {

namespace {

// The RT thread writes every field: on each target these must not fall back to libatomic's
// locks (cmake/RtloopTargetChecks.cmake stops the build earlier, naming what to use instead).
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<TaskState>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

// The single-writer updates of task_stats.h.
using task_stats_internal::Add;

inline std::int64_t OrZero(std::int64_t v) noexcept {
  return v == std::numeric_limits<std::int64_t>::max() ||
                 v == std::numeric_limits<std::int64_t>::min()
             ? 0
             : v;
}

}  // namespace

const char* TaskStateName(TaskState state) noexcept {
  switch (state) {
    case TaskState::kCreated:
      return "created";
    case TaskState::kStarting:
      return "starting";
    case TaskState::kRunning:
      return "running";
    case TaskState::kStopped:
      return "stopped";
    case TaskState::kFault:
      return "fault";
  }
  return "unknown";
}

void TaskStats::RecordWarmup() noexcept { Add<std::uint64_t>(warmup_, 1); }

void TaskStats::RecordFault(const FaultRecord& fault) noexcept {
  last_fault_.Store(fault);
  if (fault.reason == FaultReason::kWatchdog || fault.reason == FaultReason::kWatchdogSingle) {
    Add<std::uint64_t>(watchdog_trips_, 1);
  }
  // Release: a reader that acquires this count also sees the record stored above.
  faults_.store(faults_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void TaskStats::RestartMinMax(std::uint64_t req) noexcept {
  for (I64* a : {&latency_min_, &execution_min_, &jitter_min_}) {
    a->store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
  }
  for (I64* a : {&latency_max_, &execution_max_, &jitter_max_}) {
    a->store(std::numeric_limits<std::int64_t>::min(), std::memory_order_relaxed);
  }
  reset_applied_.store(req, std::memory_order_release);
}

void TaskStats::RecordWatchdogViolation() noexcept { Add<std::uint64_t>(watchdog_violations_, 1); }

const char* FaultReasonName(FaultReason reason) noexcept {
  switch (reason) {
    case FaultReason::kNone:
      return "none";
    case FaultReason::kOverruns:
      return "overruns";
    case FaultReason::kWatchdog:
      return "watchdog";
    case FaultReason::kWatchdogSingle:
      return "watchdog-single-cycle";
    case FaultReason::kStep:
      return "step";
  }
  return "unknown";
}

TaskStatsSnapshot TaskStats::Snapshot() const noexcept {
  TaskStatsSnapshot s;
  s.state = state_.load(std::memory_order_acquire);
  s.tid = tid_.load(std::memory_order_relaxed);
  s.cycles = cycles_.load(std::memory_order_acquire);
  s.warmup_cycles = warmup_.load(std::memory_order_relaxed);
  // Min/max belong to one run (the cycles since one reset): reset_applied_ is read before and
  // after them (a seqlock without the writer ever waiting), and they count only when it did not
  // change, equals the last reset asked for, and none of them is still the unset sentinel.
  const std::uint64_t applied_before = reset_applied_.load(std::memory_order_acquire);
  const std::int64_t extremes[6] = {latency_min_.load(std::memory_order_relaxed),
                                    latency_max_.load(std::memory_order_relaxed),
                                    execution_min_.load(std::memory_order_relaxed),
                                    execution_max_.load(std::memory_order_relaxed),
                                    jitter_min_.load(std::memory_order_relaxed),
                                    jitter_max_.load(std::memory_order_relaxed)};
  std::atomic_thread_fence(std::memory_order_acquire);
  const std::uint64_t applied_after = reset_applied_.load(std::memory_order_relaxed);
  s.latency_min_ns = OrZero(extremes[0]);
  s.latency_max_ns = OrZero(extremes[1]);
  s.latency_sum_ns = latency_sum_.load(std::memory_order_relaxed);
  s.latency_last_ns = latency_last_.load(std::memory_order_relaxed);
  s.execution_min_ns = OrZero(extremes[2]);
  s.execution_max_ns = OrZero(extremes[3]);
  s.execution_sum_ns = execution_sum_.load(std::memory_order_relaxed);
  s.execution_last_ns = execution_last_.load(std::memory_order_relaxed);
  s.jitter_min_ns = OrZero(extremes[4]);
  s.jitter_max_ns = OrZero(extremes[5]);
  s.jitter_last_ns = jitter_last_.load(std::memory_order_relaxed);
  s.overruns = overruns_.load(std::memory_order_relaxed);
  s.missed_releases = missed_.load(std::memory_order_relaxed);
  s.faults = faults_.load(std::memory_order_acquire);
  s.watchdog_violations = watchdog_violations_.load(std::memory_order_relaxed);
  s.watchdog_trips = watchdog_trips_.load(std::memory_order_relaxed);
  // A fault is rare and its Store() short: a few bounded attempts (RT-safe); on a collision with
  // a fault being recorded right now the record stays kNone for this snapshot only.
  if (s.faults != 0) (void)last_fault_.TryLoad(s.last_fault, 8);
  s.resets = reset_requested_.load(std::memory_order_acquire);
  constexpr std::int64_t kUnsetMin = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kUnsetMax = std::numeric_limits<std::int64_t>::min();
  const bool current = applied_before == applied_after && applied_after == s.resets;
  const bool latency_extremes = current && extremes[0] != kUnsetMin && extremes[1] != kUnsetMax &&
                                extremes[2] != kUnsetMin && extremes[3] != kUnsetMax;
  const bool jitter_extremes = current && extremes[4] != kUnsetMin && extremes[5] != kUnsetMax;
  s.min_max_cleared = s.has_data() && !latency_extremes;
  s.jitter_min_max_cleared = s.has_jitter() && !jitter_extremes;
  if (!s.has_min_max()) {
    s.latency_min_ns = s.latency_max_ns = s.execution_min_ns = s.execution_max_ns = 0;
  }
  if (!s.has_jitter_min_max()) s.jitter_min_ns = s.jitter_max_ns = 0;
  return s;
}

}  // namespace rtloop
