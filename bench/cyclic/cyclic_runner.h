// The rtloop-cyclic program: turns parsed options into an Executor running one CyclicTask per
// measurement thread, drives cyclictest's main loop (live screen, -v draining, -M, -D/-l/-b end,
// signals, -F), prints the final output in cyclictest 2.4's order (CYCLICTEST-2.4.md §1.2 "At the
// end") and returns the exit status.
//
//   int main(int argc, char** argv) { return rtloop::cyclic::RunCyclic(argc, argv); }
//
// Output discipline: stdout carries exactly what cyclictest prints there; every rtloop diagnostic
// (notes, errors, --fail-* verdicts, and the --percentiles table under -q) goes to stderr.
//
// Threading: RunCyclic() runs on the process's main thread and blocks SIGINT, SIGTERM, SIGUSR1 and
// SIGUSR2 in every thread it creates (it takes them with sigtimedwait). Not RT-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cyclic_options.h"
#include "cyclic_recorder.h"
#include "cyclic_report.h"
#include "rtloop/framework/cycle_observer.h"

namespace rtloop::cyclic {

// The observer of one measurement thread: the thread's CyclicRecorder (cyclictest's state and the
// latency percentiles) and an optional second observer (the telemetry hub). After a -b break
// (`latch` tripped) it drops every later sample, as cyclictest's threads stop with the breaking
// one. Pointers are not owned and must outlive it. Threading: the task's RT thread; OnCycle() is
// RT-safe.
class CyclicThreadObserver final : public CycleObserver {
 public:
  CyclicThreadObserver(CyclicRecorder* recorder, const BreakLatch* latch,
                       CycleObserver* extra) noexcept;
  // Not RT-safe (the recorder's gettid, the hub's producer token).
  void OnRtThreadStart(TaskId task) override;
  // RT-safe: no allocation, no lock, no syscall.
  void OnCycle(const CycleSample& sample) noexcept override;

 private:
  CyclicRecorder* recorder_;
  const BreakLatch* latch_;  // nullable: -b not given
  CycleObserver* extra_;     // nullable
};
static_assert(noexcept(std::declval<CyclicThreadObserver&>().OnCycle(CycleSample{})));

// Runs the whole program; returns kExitOk, kExitFatal, kExitUsage or kExitThreshold.
int RunCyclic(int argc, const char* const* argv);

// -D as a cycle budget for a thread released every `interval_us` (cyclictest's thread stops with
// the first sample at or after start + duration): ceil(duration / interval). 0 when no -D.
std::uint64_t CyclesForDuration(std::int64_t duration_s, std::int64_t interval_us) noexcept;

// The --fail-above / --fail-percentile / --fail-missed verdicts for the final reports: one line
// per breach (without a newline), naming the thread and the bound; empty when all bounds hold.
// A --fail-percentile bound b of thread i is checked against `percentile_ns[i][b]`, that thread's
// wake-up latency (ns) at options.fail_percentiles[b] (missing entries are skipped); --fail-above
// uses ThreadReport::max in the run's unit (us, or ns under -N).
std::vector<std::string> CheckFailBounds(const CyclicOptions& options,
                                         std::span<const ThreadReport> threads,
                                         std::span<const std::vector<std::int64_t>> percentile_ns);

}  // namespace rtloop::cyclic
