// The rtloop-cyclic program: turns parsed options into an rtloop::Runtime running one measurement
// task per thread (CyclicThreadTask, observed by the runtime's telemetry hub and, with
// --max-over-time, a WindowMaxTracker; its CyclicThreadStats is the hub's TaskSampleObserver of
// the task: cyclictest's figures are computed from the drained samples, off the RT thread), drives
// cyclictest's main loop (live screen, -v draining, -M, -D/-l/-b end, signals, -F; each reader of
// cyclictest's figures drains the hub first), prints the final output in cyclictest 2.4's order
// (bench/cyclic/CYCLICTEST-2.4.md §1, "At the end") and returns the exit status.
//
//   int main(int argc, char** argv) {   // rtloop-cyclic-full (main.cc)
//     return rtloop::cyclic::RunCyclic(argc, argv, {.services = &rtloop::LinkedRuntimeServices});
//   }
//
// Set-up, in order: --smi and privilege checks, -v's CPU lines, the memory check; every output
// file opened (or refused: exit 1, nothing measured); the Runtime (executor with memory locking,
// --mainaffinity as its housekeeping CPUs and the start grid; the hub, always, for the
// percentiles; the collector; the gRPC and HTTP servers when asked, which bind here, so a port in
// use stops the run before it measures); -a's main-thread restriction, cpu_dma_latency, the clock
// warnings; one task per thread; then Runtime::Start(). A set-up error tears down in that order
// and leaves no output file (Runtime::Abandon()). Every figure comes from its one owner
// (cyclic_thread_stats.h says which).
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
#include <vector>

#include "cyclic_options.h"
#include "cyclic_report.h"
#include "rtloop/runtime_services.h"

namespace rtloop::cyclic {

// What the binary links (README.md, "Two binaries"). `services` makes the Runtime's gRPC server,
// HTTP endpoint and sample log (&LinkedRuntimeServices: rtloop-cyclic-full, and rtloop-cyclic of a
// shared-library build). Without it, a run that needs them (--telemetry, --metrics, --record)
// goes to `hand_over` once its options are checked, which returns only on failure (the lean
// rtloop-cyclic: HandOverToFull, cyclic_handover.h); without either, such a run is exit 1.
using MakeRuntimeServices = std::unique_ptr<RuntimeServices> (*)();
struct CyclicLinks {
  MakeRuntimeServices services = nullptr;
  int (*hand_over)(const char* const* argv) = nullptr;
};

// True when `o` asks for the gRPC API, the HTTP endpoint or the sample log.
bool NeedsServices(const CyclicOptions& o) noexcept;

// Runs the whole program; returns kExitOk, kExitFatal, kExitUsage, kExitThreshold or kExitOutput.
int RunCyclic(int argc, const char* const* argv, CyclicLinks links);

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
