// Run: one run of rtloop-cyclic, from set-up in cyclictest's order through the main loop to the
// final output and exit status. Internal to rtloop_cyclic_lib: RunCyclic() (cyclic_runner.h)
// makes one and executes it; cyclic_run_setup.cc holds the set-up, cyclic_runner.cc the main
// loop, the end and RunCyclic() itself.
//
//   Run run(argc, argv, std::move(options), links.services);
//   return run.Execute();   // set-up, measurement, output: the process's exit status
//
// Threading: one Run on the process's main thread, which takes the stop and status signals
// (sigtimedwait); the measurement threads are the Runtime's. Not RT-safe.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cyclic_explain.h"
#include "cyclic_options.h"
#include "cyclic_report.h"
#include "cyclic_runner.h"
#include "cyclic_side_channels.h"
#include "cyclic_system.h"
#include "cyclic_thread_stats.h"
#include "max_over_time.h"
#include "rtloop/framework/time.h"
#include "rtloop/runtime.h"
#include "rtloop/runtime_services.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic::internal {

// The version the thread info lines and the JSON output name (the project's).
const char* ToolVersion() noexcept;

class Run {
 public:
  Run(int argc, const char* const* argv, CyclicOptions options, MakeRuntimeServices services)
      : argc_(argc), argv_(argv), o_(std::move(options)), services_(services) {}
  ~Run() { TearDown(/*abandon_outputs=*/true); }

  int Execute();

 private:
  // Set-up, in this order (Setup() runs them): nothing is measured before the last one.
  Status Setup();
  Status CheckBeforeAnything();  // --smi, privileges, -v's CPU lines, memory
  Status OpenOutputs();          // every output file, opened (or refused)
  Status CreateRuntime();        // executor, hub, collector, gRPC/HTTP servers
  Status PrepareProcess();       // -a's main thread, cpu_dma_latency, clock warnings, tracemark
  Status CreateMaxOverTime();    // --max-over-time
  Status AddThread(const ThreadPlan& plan);
  TaskConfig ThreadTaskConfig(const ThreadPlan& plan) const;
  void PrintThreadInfo() const;  // -v's per-thread lines
  Status StartMeasuring();
  std::optional<TimePoint> EndByTime() const;

  // The main loop: the live screen, -v, -M, signals, until the run ends.
  void MainLoop();
  void PrintLiveScreen();
  // -M: waits for a new max (or the end). True when the run is to end.
  bool WaitForNewMax(std::uint64_t* seen_max);
  // Waits until `deadline` (monotonic) while taking signals; returns early only for a stop
  // signal. SIGUSR1/SIGUSR2 print the status block.
  void Tick(std::chrono::steady_clock::time_point deadline);
  bool EndRequested();
  // Brings cyclictest's figures up to now: the hub's drain (TelemetryHub::Drain()) feeds every
  // thread's CyclicThreadStats. Every reader of them calls it first.
  void DrainSamples() const;
  std::vector<ThreadReport> LiveReports() const;
  void DrainVerbose(bool all = false);

  // The end: every figure from its owner, the outputs in cyclictest's order, the exit status.
  int Finish();
  std::vector<ThreadReport> FinalReports() const;
  std::vector<std::vector<std::int64_t>> FailPercentileValues(
      const std::vector<ThreadReport>& reports) const;
  void WriteResults(const std::vector<ThreadReport>& reports,
                    const std::vector<std::string>& breaches);
  void WriteJson(const std::vector<ThreadReport>& reports, int return_code);
  void WriteSpikes();
  int ExitStatus(const std::vector<std::string>& breaches) const;
  // Stops everything in dependency order (runtime_.h: tasks, collector, streams, servers, sample
  // log), then --max-over-time; with `abandon_outputs` (a set-up error) no output file is left.
  // Idempotent.
  void TearDown(bool abandon_outputs);
  // Reports an output failure (message on stderr) and remembers it for the exit status.
  void OutputFailed(const Status& status);
  // Flushes stdout and stderr; the first failure of each is an output failure. True when
  // standard output failed (the run's live lines and results cannot reach anyone).
  bool StandardStreamsFailed();

  int argc_;
  const char* const* argv_;
  CyclicOptions o_;
  ReportFormat format_;
  std::string start_time_;
  DmaLatencyRequest dma_;  // the --latency request, held for the run
  TraceMarker trace_;
  bool break_marked_ = false;
  bool sched_denied_ = false;   // set-up failed for lack of scheduling privilege
  bool output_failed_ = false;  // a result could not be written: exit kExitOutput
  bool stdout_failed_ = false;  // standard output failed (reported once)
  bool stderr_failed_ = false;  // standard error failed (reported once)
  bool torn_down_ = false;
  sigset_t signals_{};
  bool stop_signal_ = false;

  // What the measurement threads' observers and tasks use: declared before the runtime that runs
  // them, so that it is destroyed (stopped) first.
  BreakLatch latch_;
  std::vector<std::unique_ptr<CyclicThreadTask>> tasks_;
  std::vector<std::unique_ptr<CyclicThreadStats>> stats_;  // by thread index
  std::unique_ptr<MaxOverTime> max_over_time_;
  std::unique_ptr<CyclicExplain> explain_;  // --explain
  const MakeRuntimeServices services_;      // nullptr: the lean binary (no server, no sample log)
  std::unique_ptr<Runtime> runtime_;
  std::vector<TaskId> ids_;         // by thread index
  std::vector<ThreadReport> base_;  // the static fields of every thread's report
  std::vector<VerboseReducer> reducers_;
  std::optional<TimePoint> end_by_time_;  // -D end for the wait modes that drift
  // Read the stats and the runtime: declared after them, destroyed first.
  FifoWriter fifo_writer_;
  StatusFile status_file_;

  // Output files, opened by OpenOutputs(); the sample log's and --max-over-time's move into the
  // runtime and max_over_time_, the pipe into fifo_writer_.
  telemetry::OutputFile json_file_;
  telemetry::OutputFile hist_file_;
  telemetry::OutputFile record_file_;
  telemetry::OutputFile max_over_time_file_;
  telemetry::OutputFile explain_file_;
  std::optional<telemetry::OutputFifo> fifo_;
};

}  // namespace rtloop::cyclic::internal
