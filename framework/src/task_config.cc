#include "rtloop/framework/task_config.h"

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/system_info.h"
#include "task_config_check.h"

namespace rtloop {

const char* SchedPolicyName(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::kOther:
      return "other";
    case SchedPolicy::kBatch:
      return "batch";
    case SchedPolicy::kIdle:
      return "idle";
    case SchedPolicy::kFifo:
      return "fifo";
    case SchedPolicy::kRr:
      return "rr";
    case SchedPolicy::kDeadline:
      return "deadline";
  }
  return "unknown";
}

const char* OverrunPolicyName(OverrunPolicy policy) noexcept {
  switch (policy) {
    case OverrunPolicy::kSkip:
      return "skip";
    case OverrunPolicy::kCatchUp:
      return "catch-up";
    case OverrunPolicy::kReanchor:
      return "re-anchor";
  }
  return "unknown";
}

const char* WaitModeName(WaitMode mode) noexcept {
  switch (mode) {
    case WaitMode::kAbsolute:
      return "absolute";
    case WaitMode::kRelative:
      return "relative";
    case WaitMode::kNanosleep:
      return "nanosleep";
    case WaitMode::kPosixTimer:
      return "posix-timer";
    case WaitMode::kTimerlat:
      return "timerlat";
  }
  return "unknown";
}

const char* WatchdogActionName(WatchdogAction action) noexcept {
  switch (action) {
    case WatchdogAction::kFaultTask:
      return "fault-task";
    case WatchdogAction::kStopAll:
      return "stop-all";
    case WatchdogAction::kContinue:
      return "continue";
  }
  return "unknown";
}

}  // namespace rtloop

namespace rtloop::internal {
namespace {

const char* ClockName(Clock clock) { return clock == Clock::kRealtime ? "realtime" : "monotonic"; }

Status ValidateTiming(const TaskConfig& config, const std::string& who) {
  if (config.period.count() <= 0) {
    return InvalidArgumentError(who + ": period must be > 0 (got " +
                                std::to_string(config.period.count()) +
                                " ns) — set TaskConfig::period, e.g. std::chrono::milliseconds(1)");
  }
  if (config.phase.count() < 0) {
    return InvalidArgumentError(who + ": phase must be >= 0 (got " +
                                std::to_string(config.phase.count()) +
                                " ns) — set TaskConfig::phase to 0 or a positive offset");
  }
  if (config.max_cycles != 0 && config.warmup_cycles >= config.max_cycles) {
    return InvalidArgumentError(who + ": warmup_cycles " + std::to_string(config.warmup_cycles) +
                                " >= max_cycles " + std::to_string(config.max_cycles) +
                                " leaves nothing to measure — lower TaskConfig::warmup_cycles or "
                                "raise max_cycles (it counts the warm-up too)");
  }
  if (config.explain_latency_above.count() < 0 || config.explain_execution_above.count() < 0) {
    return InvalidArgumentError(who +
                                ": explain_latency_above and explain_execution_above must be >= 0 "
                                "— set them to 0 (not explained) or a duration");
  }
  if (config.run_for.count() < 0) {
    return InvalidArgumentError(who + ": run_for must be >= 0 (got " +
                                std::to_string(config.run_for.count()) +
                                " ns) — set TaskConfig::run_for to 0 (no limit) or a duration");
  }
  return Status::Ok();
}

Status ValidateObservers(const TaskConfig& config, const std::string& who) {
  const std::vector<CycleObserver*>& obs = config.observers;
  if (obs.size() > kMaxCycleObservers) {
    return InvalidArgumentError(who + ": " + std::to_string(obs.size()) +
                                " observers in TaskConfig::observers, at most " +
                                std::to_string(kMaxCycleObservers) +
                                " (rtloop::Runtime adds its telemetry hub as one) — combine some "
                                "into one observer");
  }
  for (std::size_t i = 0; i < obs.size(); ++i) {
    if (obs[i] == nullptr) {
      return InvalidArgumentError(who + ": TaskConfig::observers[" + std::to_string(i) +
                                  "] is null — remove it or point it at an observer");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (obs[j] == obs[i]) {
        return InvalidArgumentError(who + ": TaskConfig::observers[" + std::to_string(j) +
                                    "] and [" + std::to_string(i) +
                                    "] are the same observer (it would see every cycle twice) — "
                                    "list it once");
      }
    }
  }
  return Status::Ok();
}

// What the kernel's timerlat user-space interface needs of a task (WaitMode::kTimerlat): one CPU
// (timerlat_fd refuses a thread that may migrate), CLOCK_MONOTONIC and kSkip (its timer and its
// skipping of missed periods), a period the tracer can have (whole us, 100 us..1 s).
Status ValidateTimerlatMode(const TaskConfig& config, const std::string& who) {
  const std::string mode = who + ": wait_mode timerlat ";
  if (config.cpus.size() != 1) {
    return InvalidArgumentError(mode +
                                "needs the task pinned to exactly one CPU (the kernel's "
                                "timerlat_fd is per CPU) — set TaskConfig::cpus = {N}");
  }
  if (config.clock != Clock::kMonotonic) {
    return InvalidArgumentError(mode +
                                "releases on CLOCK_MONOTONIC (the tracer's timer) — set "
                                "TaskConfig::clock (and the executor's start_clock) to "
                                "Clock::kMonotonic");
  }
  if (config.overrun_policy != OverrunPolicy::kSkip) {
    return InvalidArgumentError(mode +
                                "skips the releases an overrun missed, as the kernel's "
                                "timer does — set TaskConfig::overrun_policy to kSkip");
  }
  if (config.policy == SchedPolicy::kDeadline) {
    return InvalidArgumentError(mode +
                                "cannot be used with SCHED_DEADLINE (a deadline task may "
                                "not be pinned to one CPU) — use kFifo or kRr");
  }
  constexpr std::int64_t kMinNs = 100'000, kMaxNs = 1'000'000'000;
  const std::int64_t ns = config.period.count();
  if (ns < kMinNs || ns > kMaxNs || ns % 1000 != 0) {
    return InvalidArgumentError(mode +
                                "needs a period of whole microseconds from 100 us to 1 s "
                                "(the tracer's timerlat_period_us; got " +
                                std::to_string(ns) + " ns) — change TaskConfig::period");
  }
  return Status::Ok();
}

constexpr std::uint32_t kMaxSensitivity = 1000;

Status ValidateWatchdog(const WatchdogConfig& w, const std::string& who) {
  const std::int64_t time_ns = w.time.count();
  if (time_ns < 0) {
    return InvalidArgumentError(who + ": TaskConfig::watchdog.time must be >= 0 (got " +
                                std::to_string(time_ns) +
                                " ns) — 0 turns the execution-time watchdog off; else give the "
                                "longest execution time a cycle may take, e.g. "
                                "std::chrono::microseconds(500)");
  }
  if (w.sensitivity < 1 || w.sensitivity > kMaxSensitivity) {
    return InvalidArgumentError(who + ": TaskConfig::watchdog.sensitivity is " +
                                std::to_string(w.sensitivity) +
                                " — use 1..1000 (violations in a row that trip the watchdog)");
  }
  if (time_ns == 0 && w.sensitivity != 1) {
    return InvalidArgumentError(
        who + ": TaskConfig::watchdog.sensitivity is " + std::to_string(w.sensitivity) +
        " but watchdog.time is 0 (the execution-time watchdog is off) — set watchdog.time, or "
        "leave sensitivity at 1");
  }
  if (time_ns > std::numeric_limits<std::int64_t>::max() / w.sensitivity) {
    return InvalidArgumentError(who + ": TaskConfig::watchdog.time x sensitivity (" +
                                std::to_string(time_ns) + " ns x " + std::to_string(w.sensitivity) +
                                ") overflows 64-bit nanoseconds — use a shorter watchdog.time");
  }
  if (w.keep_running_after_fault && w.action != WatchdogAction::kFaultTask) {
    return InvalidArgumentError(
        who + ": TaskConfig::watchdog.keep_running_after_fault is set and watchdog.action is " +
        WatchdogActionName(w.action) +
        " — they contradict; keep_running_after_fault is the older spelling of action = "
        "WatchdogAction::kContinue: set only one of them");
  }
  if (w.action != WatchdogAction::kFaultTask && !w.enabled()) {
    return InvalidArgumentError(who + ": TaskConfig::watchdog.action is " +
                                WatchdogActionName(w.action) +
                                " but no watchdog is on — set watchdog.time (execution time) or "
                                "watchdog.max_consecutive_overruns");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateTaskConfig(const TaskConfig& config, Clock start_clock, const CpuFacts& cpus) {
  if (config.name.empty()) {
    return InvalidArgumentError("a task has an empty name — set TaskConfig::name");
  }
  const std::string who = "task \"" + config.name + "\"";
  RTLOOP_RETURN_IF_ERROR(ValidateTiming(config, who));
  RTLOOP_RETURN_IF_ERROR(ValidateWatchdog(config.watchdog, who));
  if (config.clock != start_clock) {
    return InvalidArgumentError(who + ": uses clock " + ClockName(config.clock) +
                                " but the executor's start_clock is " + ClockName(start_clock) +
                                " — every task must share ExecutorConfig::start_clock");
  }
  if (config.stack_size < static_cast<std::size_t>(PTHREAD_STACK_MIN) ||
      config.stack_size > (std::size_t{1} << 30)) {
    return InvalidArgumentError(who + ": stack_size " + std::to_string(config.stack_size) +
                                " bytes is outside " + std::to_string(PTHREAD_STACK_MIN) +
                                " bytes..1 GiB — set TaskConfig::stack_size in that range "
                                "(default 256 KiB)");
  }
  RTLOOP_RETURN_IF_ERROR(ValidateSchedParams(config));
  if (config.wait_mode == WaitMode::kTimerlat) {
    RTLOOP_RETURN_IF_ERROR(ValidateTimerlatMode(config, who));
  }
  RTLOOP_RETURN_IF_ERROR(ValidateCpus(config.cpus, cpus.online, cpus.present,
                                      PinnableCpus(cpus.allowed, cpus.isolated), who,
                                      "TaskConfig::cpus"));
  return ValidateObservers(config, who);
}

}  // namespace rtloop::internal
