// CycleEngine: the executor's per-cycle bookkeeping for one task, everything a cycle does except
// waiting for the release and calling Step(): the CycleContext, the next release (ReleaseSchedule
// and the overrun policy), TaskStats, the watchdog, a Step()'s kStop/kFault, the warm-up,
// max_cycles / run_for and the CycleObservers.
//
// The executor's RT loop is, per cycle:
//   wait until engine.release();  W = Now();
//   const CycleContext& ctx = engine.BeginCycle(W);
//   StepResult r = task.Step(ctx);  D = Now();
//   CycleOutcome o = engine.EndCycle(D, r);   // o.fault: call OnWatchdog(); o.stop: leave the loop
//
// It takes times as arguments, so tests drive it with a fake clock and bench/micro measures its
// cost alone. Threading: owned by one thread (the task's RT thread). BeginCycle()/EndCycle() are
// RT-safe: no allocation, no lock, no syscall (the observer must be RT-safe too).
#pragma once

#include <chrono>
#include <cstdint>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/release_schedule.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/framework/time.h"

namespace rtloop {

struct CycleEngineConfig {
  TaskId task = 0;                             // copied into every CycleSample
  std::chrono::nanoseconds period{1'000'000};  // > 0
  OverrunPolicy overrun_policy = OverrunPolicy::kSkip;
  WatchdogConfig watchdog;
  std::uint64_t max_cycles = 0;         // 0: no limit
  std::uint64_t warmup_cycles = 0;      // leading cycles left out of stats and observers
  std::chrono::nanoseconds run_for{0};  // stop once the next release is >= first + run_for; 0: no
  CycleObserverList observers;          // called in order after the stats; not owned
  TaskStats* stats = nullptr;           // required, not owned
};

struct CycleOutcome {
  bool stop = false;   // leave the loop after this cycle
  bool fault = false;  // a watchdog tripped on this cycle: call OnWatchdog(ctx, last_fault())
  // That watchdog's action is WatchdogAction::kStopAll: stop every other task too.
  bool stop_all = false;
  // The task ends in TaskState::kFault: the watchdog tripped and does not keep it running, or
  // Step() returned kFault.
  bool fault_state = false;
};

class CycleEngine {
 public:
  CycleEngine(const CycleEngineConfig& config, TimePoint first_release) noexcept
      : schedule_(first_release, config.period, config.overrun_policy),
        warmup_(config.warmup_cycles),
        stop_after_(config.max_cycles != 0 ? config.max_cycles : UINT64_MAX),
        end_(config.run_for.count() > 0 ? first_release + config.run_for : TimePoint::Max()),
        stats_(config.stats),
        task_(config.task),
        watchdogs_on_(config.watchdog.enabled()),
        observers_(config.observers),
        watchdog_(config.watchdog),
        first_(first_release) {
    ctx_.period = config.period;
  }

  // The release the thread must wait for next. RT-safe.
  TimePoint release() const noexcept { return schedule_.release(); }
  // For relative wait modes: the pending release becomes `release`. RT-safe.
  void Rebase(TimePoint release) noexcept { schedule_.Rebase(release); }
  // RT-safe.
  const ReleaseSchedule& schedule() const noexcept { return schedule_; }
  // The last watchdog trip (reason kNone before the first). RT-safe.
  const FaultRecord& last_fault() const noexcept { return last_fault_; }
  // Cycles ended so far (EndCycle() calls). RT-safe.
  std::uint64_t cycles() const noexcept { return cycles_; }

  // The thread woke at `wake` for the pending release: returns the Step()'s context. RT-safe.
  const CycleContext& BeginCycle(TimePoint wake) noexcept {
    ctx_.cycle = cycles_;
    ctx_.release_index = schedule_.index();
    ctx_.release = schedule_.release();
    ctx_.wake = wake;
    ctx_.since_last_wake = cycles_ == 0 ? std::chrono::nanoseconds(0) : wake - last_wake_;
    ctx_.missed_releases = pending_missed_;
    return ctx_;
  }

  // The Step() returned `step` at `done`: account for the cycle and pick the next release.
  // RT-safe. Tests and bench/micro call this form; the RT loop the one below (the same work).
  // What a cycle reads is in the members' first lines (below), constant per task and
  // precomputed: the common path makes one compare per stop condition.
  CycleOutcome EndCycle(TimePoint done, StepResult step) noexcept {
    CycleOutcome out;
    (void)EndCycle(done, step, &out);
    return out;
  }

  // The same, as the RT loop calls it (always inlined: no call, no saved registers): sets `*out`,
  // returns out->stop || out->fault, so a plain cycle costs the caller one test. RT-safe.
  [[gnu::always_inline]] bool EndCycle(TimePoint done, StepResult step,
                                       CycleOutcome* out) noexcept {
    const std::uint64_t cycle = cycles_;
    const bool first = cycle == 0;
    // Warm-up cycles run like any other but are neither recorded nor observed.
    const bool measured = cycle >= warmup_;
    const ReleaseSchedule::Advanced adv = schedule_.Advance(done);
    CycleSample sample;
    sample.task = task_;
    sample.seq = cycle - warmup_;
    sample.release = ctx_.release;
    sample.wakeup_latency_ns = (ctx_.wake - ctx_.release).count();
    sample.execution_ns = (done - ctx_.wake).count();
    sample.period_jitter_ns = first ? 0 : (ctx_.since_last_wake - ctx_.period).count();
    sample.missed_releases =
        adv.missed > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(adv.missed);
    sample.flags = (first ? kCycleFirst : 0u) | (adv.overrun ? kCycleOverrun : 0u);
    if (measured) [[likely]] {
      stats_->Record(sample.wakeup_latency_ns, sample.execution_ns, sample.period_jitter_ns, first,
                     adv.overrun, adv.missed);
    } else {
      stats_->RecordWarmup();
    }

    // Anything but a plain cycle: a watchdog on, or a Step() that did not return kContinue.
    const bool special = watchdogs_on_ || step != StepResult::kContinue;
    *out = {};
    // The watchdogs and faults, out of line: a cycle without them pays one branch.
    if (special && (watchdogs_on_ || step == StepResult::kFault)) [[unlikely]] {
      CheckFaults(done, step, adv.overrun, &sample, out);
    }
    // The engine's own state first: nothing of it stays live across the observers' calls.
    last_wake_ = ctx_.wake;
    pending_missed_ = adv.missed;
    cycles_ = cycle + 1;
    // stop_after_: max_cycles, or 2^64 - 1 without a limit (a count no task reaches).
    const bool check = special || cycles_ >= stop_after_ || schedule_.release() >= end_;
    if (measured) [[likely]] {
      observers_.OnCycle(sample);
    }
    if (check) [[unlikely]] {
      out->stop = out->fault_state || step == StepResult::kStop || cycles_ >= stop_after_ ||
                  schedule_.release() >= end_;
      return out->stop || out->fault;
    }
    return false;
  }

 private:
  // What every cycle reads or writes first, together (the fewer cache lines a cold wake-up
  // fetches, bench/rtcost/README.md): the counters, the schedule, the context, the per-task
  // constants EndCycle() needs; the watchdog's configuration (read only when one is on) after them.
  // Each field is copied once from the CycleEngineConfig, which the engine does not keep.
  std::uint64_t cycles_ = 0;
  std::uint64_t pending_missed_ = 0;
  TimePoint last_wake_;
  ReleaseSchedule schedule_;
  CycleContext ctx_;
  std::uint64_t warmup_;         // config.warmup_cycles
  std::uint64_t stop_after_;     // config.max_cycles, or UINT64_MAX for none
  TimePoint end_;                // first release + run_for, or TimePoint::Max()
  TaskStats* stats_;             // config.stats
  TaskId task_;                  // config.task
  bool watchdogs_on_;            // config.watchdog.enabled()
  CycleObserverList observers_;  // config.observers
  WatchdogConfig watchdog_;      // config.watchdog
  TimePoint first_;              // E_0
  std::uint32_t consecutive_overruns_ = 0;
  std::uint32_t consecutive_violations_ = 0;  // execution-time watchdog
  FaultRecord last_fault_;

  // A cycle with a watchdog on, or whose Step() returned kFault: the overrun watchdog, the
  // execution-time watchdog, the fault they or the Step() caused (one per cycle), recorded in the
  // statistics, flagged in `sample` and reported in `out`. Out of line (cold). RT-safe.
  [[gnu::noinline, gnu::cold]] void CheckFaults(TimePoint done, StepResult step, bool overrun,
                                                CycleSample* sample, CycleOutcome* out) noexcept {
    consecutive_overruns_ = overrun ? consecutive_overruns_ + 1 : 0;
    FaultRecord fault;
    if (watchdog_.max_consecutive_overruns != 0 &&
        consecutive_overruns_ >= watchdog_.max_consecutive_overruns) {
      fault = {
          FaultReason::kOverruns, cycles_, done.ns(), (done - first_).count(), sample->execution_ns,
          consecutive_overruns_,  0};
      consecutive_overruns_ = 0;
    }
    if (watchdog_.time.count() > 0) CheckExecutionTime(sample->execution_ns, done, &fault);
    if (fault.reason != FaultReason::kNone) {  // a watchdog tripped
      stats_->RecordFault(fault);
      sample->flags |= kCycleFault;
      out->fault = true;
      out->stop_all = watchdog_.effective_action() == WatchdogAction::kStopAll;
      out->fault_state = watchdog_.effective_action() != WatchdogAction::kContinue;
      last_fault_ = fault;
    }
    if (step == StepResult::kFault) {  // the task's own fault: one fault per cycle
      if (!out->fault) {
        stats_->RecordFault({FaultReason::kStep, cycles_, done.ns(), (done - first_).count(),
                             sample->execution_ns, 0, 0});
      }
      sample->flags |= kCycleFault;
      out->fault_state = true;
    }
  }

  // The execution-time watchdog (CODESYS semantics, task_config.h): counts a violation and,
  // when it trips, fills `fault` (unless the overrun watchdog already did on this cycle: one
  // fault per cycle). RT-safe.
  void CheckExecutionTime(std::int64_t execution_ns, TimePoint done, FaultRecord* fault) noexcept {
    const std::int64_t limit = watchdog_.time.count();
    if (execution_ns <= limit) {
      consecutive_violations_ = 0;
      return;
    }
    ++consecutive_violations_;
    stats_->RecordWatchdogViolation();
    // Validated: limit x sensitivity fits in 64 bits.
    const bool single = execution_ns > limit * static_cast<std::int64_t>(watchdog_.sensitivity);
    if (!single && consecutive_violations_ < watchdog_.sensitivity) return;
    if (fault->reason == FaultReason::kNone) {
      const bool by_run = consecutive_violations_ >= watchdog_.sensitivity;
      *fault = {by_run ? FaultReason::kWatchdog : FaultReason::kWatchdogSingle,
                cycles_,
                done.ns(),
                (done - first_).count(),
                execution_ns,
                consecutive_violations_,
                limit};
    }
    consecutive_violations_ = 0;  // a new run of sensitivity violations trips it again
  }
};

}  // namespace rtloop
