// Runtime: one object runs an application's periodic tasks with telemetry built in. It owns the
// Executor, the TelemetryHub, the Collector, the gRPC Server and the optional sample log, and
// creates, wires, starts and stops them in the right order. A complete application:
//
//   int main() {
//     rtloop::RuntimeConfig config;                       // telemetry on 127.0.0.1:50051
//     config.report_at_exit = true;                       // the task table when it ends
//     auto rt = rtloop::Runtime::Create(config);
//     if (!rt.ok()) return rtloop::ExitCode(rt.status());
//     Position position;                                  // a rtloop::PeriodicTask
//     rtloop::TaskConfig pc;
//     pc.name = "position";
//     pc.period = std::chrono::microseconds(500);
//     if (auto id = (*rt)->AddTask(position, pc); !id.ok()) return rtloop::ExitCode(id.status());
//     return rtloop::ExitCode((*rt)->RunUntilSignal());   // Ctrl-C / SIGTERM: orderly stop
//   }
//
// Telemetry is on by default (histograms, rings, the collector and the gRPC API on
// 127.0.0.1:50051) and costs the RT loop two histogram records and one ring push per cycle; it
// never changes what a task's Step() sees. TelemetryConfig turns it off (enabled = false: the
// executor alone, TaskReport without percentiles), moves the API elsewhere (grpc.address,
// "127.0.0.1:0" for any free port) or records a sample log (record_path).
//
// TelemetryConfig::http adds the HTTP endpoint (Prometheus /metrics and the live page at /,
// http_server.h); it listens from Create() on, like the gRPC server.
//
// A program that checks and opens every output before it measures (rtloop-cyclic) hands the
// runtime its sample log already open (RecordTo()), and ends a run whose set-up failed with
// Abandon(), which leaves no output behind.
//
// Where the telemetry threads run: the collector, gRPC and HTTP threads are housekeeping. With
// ExecutorConfig::housekeeping_cpus they run there. Otherwise, when the tasks' pinned CPUs
// (TaskConfig::cpus) leave some of the process's CPUs free, Start() moves them to those free CPUs,
// so that their wake-ups do not land on RT CPUs; telemetry_cpus() says which. The collector wakes
// every drain_period only while someone consumes samples (a stream or the sample log).
//
// Faults: a task fault is printed on stderr when it happens (from a non-RT thread, see
// RuntimeConfig::fault_check_period), every view shows it (the report's FAULTS column and
// "watchdog, faults" section, rtloop-top, /api/v1/tasks, the page, gRPC, /metrics), and
// RunUntilSignal() returns StatusCode::kAborted: `return rtloop::ExitCode(...)` exits with 3.
//
// Stop order (Stop(), RunUntilSignal(), the destructor): the executor's tasks stop; the collector
// drains what the rings still hold into the streams and the sample log; the gRPC streams end with
// their final message and the server stops; the HTTP endpoint stops; the sample log gets its
// trailer and is closed. A Start() that fails stops in the same order but as Abandon() does:
// nothing was measured, so no sample log is left.
//
// Signals: RunUntilSignal() takes SIGINT/SIGTERM on the calling thread (StopSignals,
// framework/stop_signals.h). Every thread the Runtime creates (tasks, collector, gRPC) has them
// blocked. The application's other threads need not block them: a stop signal the kernel
// delivers to one of them is forwarded to RunUntilSignal's thread; blocking them there still saves
// the hop and an EINTR in that thread (stop_signals.h has the details).
//
// Threading: Create/AddTask/Start/RunUntilSignal on one controlling thread (not on an RT-pinned
// one: thread affinity is inherited). Stop() may also come from another thread. Report()/Reports()
// and the accessors may be called from any thread at any time. Not RT-safe: everything here
// creates threads, allocates and does I/O; tasks reach telemetry only through their observers.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/explain/outlier_feed.h"
#include "rtloop/explain/session.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/housekeeping_thread.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/runtime_services.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_report.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop {

namespace internal {
class FaultWatcher;
}  // namespace internal

struct TelemetryConfig {
  // Hub, histograms, rings and collector. false: the executor alone (no percentiles, no gRPC,
  // no sample log).
  bool enabled = true;
  // Tasks telemetry can hold (slots are allocated up front). 1..65536.
  std::size_t max_tasks = 64;
  // The one setting for both ends of the ring: sizes every task's ring (rate x 2 x drain_period,
  // at least 8192 samples) and paces the collector while someone consumes samples (a stream, the
  // sample log). The hub's default, telemetry::kDefaultDrainPeriod (50 ms), says why. > 0.
  std::chrono::nanoseconds drain_period{telemetry::kDefaultDrainPeriod};
  // Each task's ring holds bit_ceil(max(min_ring_capacity, 2 x drain_period / period)) samples of
  // 32 bytes (256 KiB at the default up to 80 kHz); ring_capacity > 0 fixes it for every task.
  // A small board lowers them (bench/footprint/README.md, "Memory per task"). 256..2^31 (0 for
  // ring_capacity: by rate).
  std::size_t min_ring_capacity = 8192;
  std::size_t ring_capacity = 0;
  // The layout of every task's latency and execution-time histograms, one for the process
  // (latency_histogram.h): precision_bits 4..10 (percentiles within 2^-bits) and range_bits
  // 20..37 (values below 2^bits ns bucketed). The default, 10 and 37, is 224 KiB a histogram, two
  // per task, plus as much again with HTTP's windowed statistics; a small board lowers them, e.g.
  // 7 and 30: 0.8 % up to 1.07 s, 24 KiB (bench/footprint/README.md, "Memory per task").
  telemetry::HistogramLayoutConfig histogram_layout{};
  // Sample log to write (every sample, header and trailer: sample_log.h); empty: none. A file
  // (or /dev/null), not standard output: a program that wants the log on stdout and nothing else
  // there hands an OutputFile to RecordTo().
  std::string record_path;
  // The gRPC API (needs `enabled`).
  bool serve_grpc = true;
  // Address 127.0.0.1:50051 by default; "127.0.0.1:0" picks a free port (grpc_address() tells
  // which). Token, TLS and stream limits: server.h.
  telemetry::ServerConfig grpc;
  // The HTTP endpoint: Prometheus /metrics and the live page (http_server.h; needs `enabled`).
  // Off unless set; set it to {} for 127.0.0.1:9101 (http_address() tells the bound one).
  std::optional<telemetry::HttpConfig> http;
  // How the user of a program picks another gRPC / HTTP address, appended in parentheses to a
  // "port in use" or "not permitted" error (a tool with a command line names its option, e.g.
  // "give another --telemetry=HOST:PORT; port 0 picks a free one"). Empty: the RuntimeConfig
  // fields to set.
  std::string grpc_address_hint;
  std::string http_address_hint;
  // Stack of the threads the telemetry starts (collector, gRPC's pools, civetweb's workers), set
  // as the process's default thread stack size (pthread_setattr_default_np) when the runtime is
  // created, because gRPC and civetweb create their threads with the default attributes, some
  // of them later, on demand. So threads the application creates afterwards without a stack size
  // of their own get it too. glibc's default is RLIMIT_STACK (8 MiB), and the memlock limit counts
  // every stack in full under locked memory. 0: leave the default alone; else 64 KiB..64 MiB.
  std::size_t thread_stack_size = std::size_t{256} * 1024;
};

class Runtime;

struct RuntimeConfig {
  // Prefix of every line the runtime prints (stderr), and the tool name in the sample log.
  std::string app_name = "rtloop";
  ExecutorConfig executor;
  TelemetryConfig telemetry;
  // RunUntilSignal() ends after this long; 0: at a signal or when every task has ended. >= 0.
  // (TaskConfig::run_for ends one task after a time instead.)
  std::chrono::nanoseconds duration{0};
  // RunUntilSignal() prints FormatTaskReport(Reports()) on stdout when it ends.
  bool report_at_exit = false;
  // A task fault (a watchdog trip, Step() returning kFault) is printed on stderr when it happens,
  // as one line "<app_name>: FAULT: task "NAME": cycle N t=S.SSSs REASON: DETAIL; WHAT NOW", by
  // a non-RT thread of the runtime that polls the tasks' fault counts every fault_check_period
  // (the RT thread only records the fault). > 0.
  std::chrono::nanoseconds fault_check_period{std::chrono::milliseconds(100)};
  // Called on that thread (not RT: it may allocate, log, notify a supervisor) after the line,
  // with the task's report (stats.last_fault, stats.faults). Empty: none.
  std::function<void(const TaskReport&)> on_fault;
  // The task monitor, opt-in: on this signal (e.g. SIGUSR1; 0: off) a non-RT thread prints
  // monitor_text() on stdout, from Create() until Stop(); `kill -USR1 PID` then shows the task
  // table while the program runs. The signal is blocked in every thread the runtime creates and
  // taken by that thread with sigtimedwait (HousekeepingThread): no handler runs on an RT thread.
  // A thread of the application that does not block it gets it forwarded (the default action
  // would end the process); rtloop::BlockSignal(signal) first in main() saves that hop.
  // SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH or SIGRTMIN..SIGRTMAX but SIGRTMIN+3 (the executor's).
  int monitor_signal = 0;
  // What the monitor prints (on the monitor thread: read shared data thread-safely); empty:
  // FormatTaskReport(runtime.Reports()). A PLC prints its own view around the task table.
  std::function<std::string(const Runtime& runtime)> monitor_text;
};

// Exit statuses for main() (ExitCode()): 0 the run ended and no task faulted; 1 the runtime
// could not start or run (the message says why); 3 a task faulted (RunUntilSignal() returned
// StatusCode::kAborted). Programs use 2 for a bad argument or configuration.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitTaskFault = 3;

class Runtime {
 public:
  // Checks `config` without creating, starting or binding anything: its values, and what a
  // program's user names in it, each as its consumer checks it: the gRPC and HTTP addresses
  // (CheckServerAddress, CheckHttpAddress), their token files (ReadTokenFile) and the sample log's
  // path (ResolveOutputPath; not "-": the sample log is binary and the report is text on stdout).
  // InvalidArgument (or the reader's NotFound/PermissionDenied/ResourceExhausted) naming the
  // RuntimeConfig field. A program may call it to tell a bad setting (its exit status 2) from a
  // runtime that could not start; Create() calls it first.
  static Status Check(const RuntimeConfig& config);
  // Check(), then creates the executor (process set-up: memory locking etc.), the hub, the
  // collector and, with serve_grpc, the gRPC server, which listens from here on: a port in use
  // fails here, naming the port and the fix. Errors are Statuses with messages that say what to
  // change (ExitCode() prints them).
  static Result<std::unique_ptr<Runtime>> Create(const RuntimeConfig& config);
  // The same with `services` for the gRPC server, the HTTP endpoint and the sample log
  // (runtime_services.h); Create(config) passes LinkedRuntimeServices(). nullptr: none of them,
  // and FailedPrecondition naming the setting when `config` asks for one (serve_grpc is true by
  // default: set it false). A program that must not link the servers' libraries calls this.
  static Result<std::unique_ptr<Runtime>> Create(const RuntimeConfig& config,
                                                 std::unique_ptr<RuntimeServices> services);
  ~Runtime();  // Stop()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Executor::AddTask plus telemetry: the hub is appended to the task's observers (the task's own
  // observers stay, in their order, before it) and registered for the task. Before Start() only.
  // `task` must outlive the runtime.
  Result<TaskId> AddTask(PeriodicTask& task, const TaskConfig& config);

  // Records the sample log into `file`, opened beforehand (by a program that checks and opens all
  // of its outputs before it measures), instead of TelemetryConfig::record_path. `header` names
  // the tool, its version and its command line (its path is `file`'s). The header is written at
  // Start(), the trailer at Stop(); Abandon() removes the file. Before Start() only;
  // FailedPrecondition without telemetry, without the services (Create(config, nullptr)), with
  // record_path set, or when called twice.
  Status RecordTo(telemetry::OutputFile file, const telemetry::SampleLogConfig& header);

  // Opens the sample log, places the telemetry threads (see above), starts the collector and then
  // the executor's tasks (collector first, so that no ring fills before it runs).
  // FailedPrecondition when started before, stopped, or without tasks.
  Status Start();
  // The orderly stop described above. Idempotent; the first error (e.g. of the sample log) is
  // returned. After Stop() the runtime cannot start again.
  Status Stop();
  // Ends a run whose set-up failed after Create() (before or after Start()): stops in the same
  // order, but leaves nothing behind: gRPC streams end with UNAVAILABLE instead of a final
  // message, and the sample log (PATH.partial, or the file given to RecordTo()) is removed
  // instead of closed. Idempotent; after Stop() it does nothing.
  void Abandon();
  // Start() (unless started), wait for SIGINT/SIGTERM, for `duration`, or for every task to end,
  // then Stop() and, with report_at_exit, print the task report. A stop signal is announced on
  // stderr ("<app_name>: SIGINT: stopping"). Returns StatusCode::kAborted, naming the tasks and
  // their last faults, when any task faulted during the run (AnyTaskFaulted(), also with
  // WatchdogAction::kContinue), so that `return rtloop::ExitCode(rt->RunUntilSignal());` exits
  // with kExitTaskFault (3) and a service manager (systemd Restart=on-failure) restarts it.
  Status RunUntilSignal();

  // True when any task has faulted (TaskStatsSnapshot::faults > 0). Any thread.
  bool AnyTaskFaulted() const;
  // The reports of the tasks that faulted (stats.faults, stats.last_fault, stats.state). Any
  // thread.
  std::vector<TaskReport> FaultedTasks() const;

  // Statistics reset (CODESYS's "reset" of the task monitor), of every task / of task `id`:
  //  - clears: the min/max of wake-up latency, execution time and period jitter (each task
  //    restarts them at its next cycle; until then they are absent: "-" in the report, absent in
  //    gRPC, null in JSON), and the sliding windows of /metrics and the page (at their next tick,
  //    <= 1 s: the window restarts empty);
  //  - keeps: the exact totals: cycles, warm-up cycles, overruns, missed releases, faults, the
  //    sums and so the averages (all-time means), the last values, the state, the all-time
  //    histograms and their percentiles (Prometheus counters never go down), the per-second
  //    history, ring and subscriber accounting.
  // TaskStatsSnapshot::resets counts the resets. The RT threads never wait for it (a request
  // counter each applies at its next cycle). Any thread. NotFound for an unknown id.
  void ResetStats();
  Status ResetStats(TaskId id);

  // A periodic non-real-time job (an HMI refresh, housekeeping): `job` runs every `tick` on a
  // thread of its own (SCHED_OTHER, named `name`, on the telemetry CPUs: see above), from Start()
  // until Stop(). It is not a task: not measured, in no report, gRPC list or metric, so its
  // latencies (a SCHED_OTHER thread sees 100 ms under load) never pass for real-time figures.
  // Before Start() only; InvalidArgument for a tick below 1 ms.
  Status AddHousekeeping(std::string name, std::chrono::nanoseconds tick,
                         std::function<void()> job);

  // Why the late cycles were late: the outlier records of the tasks that set
  // TaskConfig::explain_latency_above (telemetry/explain/README.md), in the order they were made;
  // empty when no task asks. The counts (outliers seen, recorded, unexplained, dropped) and the
  // analysis's CPU time in OutlierStats(); which evidence is used, and why, in
  // OutlierEvidence(). Any non-RT thread.
  std::vector<explain::OutlierRecord> Outliers() const;
  explain::ExplainerStats OutlierStats() const;
  std::string OutlierEvidence() const;
  // The same records for views that page through them while the tasks run (the servers read
  // it): not explaining until Start() began the explanation. A program that runs its own
  // ExplainSession over the Runtime's tasks (rtloop-cyclic --explain) attaches it here, after
  // Start(). Any non-RT thread.
  explain::OutlierFeed& outlier_feed() noexcept { return outlier_feed_; }
  const explain::OutlierFeed& outlier_feed() const noexcept { return outlier_feed_; }

  // Everything about one task / every task (TaskReport): the executor's statistics and
  // telemetry's percentiles and sample accounting. Any thread.
  TaskReport Report(TaskId id) const;
  std::vector<TaskReport> Reports() const;

  Executor& executor() noexcept { return *executor_; }
  const Executor& executor() const noexcept { return *executor_; }
  telemetry::TelemetryHub* hub() noexcept { return hub_.get(); }           // nullptr: telemetry off
  telemetry::Collector* collector() noexcept { return collector_.get(); }  // nullptr: telemetry off
  telemetry::Server* server() noexcept {                                   // nullptr: not serving
    return services_ != nullptr ? services_->server() : nullptr;
  }
  telemetry::HttpServer* http() noexcept {  // nullptr: no HTTP endpoint
    return services_ != nullptr ? services_->http() : nullptr;
  }
  // The bound gRPC address ("127.0.0.1:50051"); "" when not serving.
  std::string grpc_address() const;
  // The bound HTTP address ("127.0.0.1:9101"); "" without TelemetryConfig::http.
  std::string http_address() const;
  // CPUs the collector, gRPC and HTTP threads were moved to at Start(); empty: left where they
  // were.
  const std::vector<int>& telemetry_cpus() const noexcept { return telemetry_cpus_; }
  const RuntimeConfig& config() const noexcept { return config_; }

 private:
  enum class Phase { kCreated, kStarted, kStopped };
  Runtime(const RuntimeConfig& config, std::unique_ptr<RuntimeServices> services);
  Status Init();
  Status InitTelemetry();  // Init()'s hub, collector and servers
  Status StartServer();
  Status StartHttp();
  Status OpenSampleLog();
  std::vector<int> ChooseTelemetryCpus() const;
  Status StartCollector();
  Status StopLocked(bool abandon);  // mu_ held
  void PrintMonitor();              // the monitor thread's job
  Status StartHousekeeping();       // Start(), mu_ held

  const RuntimeConfig config_;
  std::vector<int> process_cpus_;  // the controlling thread's affinity at Create()
  // Declared in dependency order: each is destroyed before what it uses.
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<telemetry::TelemetryHub> hub_;
  std::unique_ptr<telemetry::Collector> collector_;
  // The explanation's records for the servers: declared before them, destroyed after them.
  explain::OutlierFeed outlier_feed_;
  // The gRPC server, the HTTP endpoint (they read the hub, the collector, the executor and the
  // feed: declared after them, destroyed first) and the sample log; nullptr: none linked.
  std::unique_ptr<RuntimeServices> services_;
  std::vector<int> server_tids_;  // the threads the gRPC server's start created
  std::vector<int> http_tids_;    // the threads the HTTP endpoint's start created
  // Prints task faults from a non-RT thread; from Start() to Stop().
  std::unique_ptr<internal::FaultWatcher> fault_watcher_;
  std::vector<explain::ExplainPlan> explain_plans_;  // guarded by mu_
  // Guarded by mu_; from Start(). Shared with outlier_feed_ once it began.
  std::shared_ptr<explain::ExplainSession> explain_;
  // RecordTo(): the sample log's file and header until Start() opens the writer on them.
  std::optional<telemetry::OutputFile> record_file_;
  telemetry::SampleLogConfig record_header_;
  std::vector<int> telemetry_cpus_;
  // The monitor (RuntimeConfig::monitor_signal), from Create() to Stop(), and the housekeeping
  // jobs (AddHousekeeping) with their threads from Start() to Stop().
  std::unique_ptr<HousekeepingThread> monitor_;
  struct HousekeepingJob {
    HousekeepingConfig config;
    std::function<void()> job;
  };
  std::vector<HousekeepingJob> housekeeping_;                              // guarded by mu_
  std::vector<std::unique_ptr<HousekeepingThread>> housekeeping_threads_;  // guarded by mu_
  // Serialises Start() and Stop() (Stop() may come from another thread).
  mutable std::mutex mu_;
  Phase phase_ = Phase::kCreated;  // guarded by mu_
  Status broken_;  // a task the executor took but telemetry could not register; guarded by mu_
};

// The exit status for main(): kExitOk (0) for OK; otherwise prints "<program>: <message>" on
// stderr and returns kExitTaskFault (3) for StatusCode::kAborted (a task faulted), else
// kExitError (1).
int ExitCode(const Status& status);

}  // namespace rtloop
