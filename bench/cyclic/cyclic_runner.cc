// RunCyclic() (cyclic_runner.h), and Run's main loop, end and exit status (cyclic_run.h); its
// set-up is cyclic_run_setup.cc's.
#include "cyclic_runner.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cyclic_explain.h"
#include "cyclic_memory.h"
#include "cyclic_process_io.h"
#include "cyclic_run.h"
#include "cyclic_side_channels.h"
#include "cyclic_system.h"
#include "cyclic_thread_stats.h"
#include "max_over_time.h"
#include "rtloop/framework/time.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {
namespace internal {
namespace {

using std::chrono::milliseconds;

#ifdef RTLOOP_VERSION_STRING
constexpr const char* kToolVersion = RTLOOP_VERSION_STRING;
#else
constexpr const char* kToolVersion = "0.1.0";
#endif

// The figures of a thread whose owner is the executor or telemetry (cyclic_thread_stats.h says who
// owns what), added to a report of cyclictest's own.
void AddExecutorAndTelemetryFigures(const TaskReport& task, ThreadReport& r) {
  const TaskStatsSnapshot& s = task.stats;
  r.tid = s.tid;
  r.warmup_cycles = s.warmup_cycles;
  r.overruns = s.overruns;
  r.missed_releases = s.missed_releases;
  if (s.has_data()) {
    r.execution_min_ns = s.execution_min_ns;
    r.execution_avg_ns = *s.execution_avg_ns();
    r.execution_max_ns = s.execution_max_ns;
  }
  r.ring_drops = task.ring_dropped;
  const telemetry::Percentiles& p = task.latency.percentiles;
  r.percentiles.valid = p.valid && s.has_data();
  r.percentiles.p50_ns = p.p50_ns;
  r.percentiles.p90_ns = p.p90_ns;
  r.percentiles.p99_ns = p.p99_ns;
  r.percentiles.p99_9_ns = p.p99_9_ns;
  r.percentiles.p99_99_ns = p.p99_99_ns;
  r.percentiles.p99_999_ns = p.p99_999_ns;
  r.percentiles.max_ns = s.latency_max_ns;
}

}  // namespace

const char* ToolVersion() noexcept { return kToolVersion; }

void Run::DrainSamples() const {
  if (runtime_ != nullptr && runtime_->hub() != nullptr) runtime_->hub()->Drain();
}

std::vector<ThreadReport> Run::LiveReports() const {
  DrainSamples();  // cyclictest's figures are as recent as the last drain
  std::vector<ThreadReport> out;
  out.reserve(base_.size());
  for (std::size_t i = 0; i < base_.size(); ++i) {
    ThreadReport r;
    r.index = base_[i].index;
    r.priority = base_[i].priority;
    r.interval_us = base_[i].interval_us;
    r.cpu = base_[i].cpu;
    r.node = base_[i].node;
    r.tid = runtime_->executor().Stats(ids_[i]).tid;
    const CyclicStatsSnapshot s = stats_[i]->Snapshot();
    r.cycles = s.cycles;
    r.min = s.min;
    r.act = s.act;
    r.avg_sum = s.avg_sum;
    r.max = s.max;
    out.push_back(std::move(r));
  }
  return out;
}

void Run::Tick(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || stop_signal_) return;
    const timespec ts = ToTimespec(deadline - now);
    siginfo_t info{};
    const int sig = sigtimedwait(&signals_, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      stop_signal_ = true;
    } else if (sig == SIGUSR1) {
      WriteAll(stderr, FormatStatusBlock(LiveReports(), format_));
    } else if (sig == SIGUSR2) {
      (void)status_file_.Write(FormatStatusBlock(LiveReports(), format_));
    }
  }
}

bool Run::EndRequested() {
  if (stop_signal_) return true;
  if (StandardStreamsFailed()) return true;
  if (o_.breaktrace > 0) DrainSamples();  // the break trips when its sample is drained
  if (o_.breaktrace > 0 && latch_.hit()) {
    if (!break_marked_) {
      trace_.Mark(latch_.Get().value, o_.breaktrace);
      break_marked_ = true;
    }
    return true;
  }
  for (TaskId id : ids_) {
    const TaskState st = runtime_->executor().State(id);
    if (st == TaskState::kStopped || st == TaskState::kFault) return true;
  }
  if (end_by_time_ && Now(o_.clock) >= *end_by_time_) return true;
  return false;
}

void Run::DrainVerbose(bool all) {
  DrainSamples();
  std::string out;
  for (std::size_t i = 0; i < stats_.size(); ++i) {
    stats_[i]->DrainValues(
        [&](std::uint64_t cycle, std::int64_t value) { reducers_[i].Add(cycle, value, out); }, all);
  }
  WriteAll(stdout, out);
}

void Run::PrintLiveScreen() {
  const bool forced_other =
      std::any_of(o_.threads.begin(), o_.threads.end(),
                  [](const ThreadPlan& t) { return t.policy == SchedPolicy::kOther; });
  std::string screen = FormatLiveHeader(o_.policy_name, forced_other ? "other" : "", ReadLoadavg());
  screen += FormatThreadLines(LiveReports(), format_);
  WriteAll(stdout, screen);
  std::fflush(stdout);
}

bool Run::WaitForNewMax(std::uint64_t* seen_max) {
  std::fflush(stdout);
  for (;;) {
    DrainSamples();
    std::uint64_t total = 0;
    for (const auto& s : stats_) total += s->new_max_count();
    if (total != *seen_max) {
      *seen_max = total;
      return false;
    }
    if (o_.verbose) DrainVerbose();
    Tick(std::chrono::steady_clock::now() + milliseconds(10));
    if (EndRequested()) return true;
  }
}

void Run::MainLoop() {
  const bool live = !o_.quiet && !o_.verbose;
  const int n = static_cast<int>(base_.size());
  std::uint64_t seen_max = 0;
  for (;;) {
    if (live) PrintLiveScreen();
    if (o_.verbose) DrainVerbose();
    Tick(std::chrono::steady_clock::now() + milliseconds(10));
    if (EndRequested()) break;
    if (live) WriteAll(stdout, FormatCursorUp(n));
    if (o_.refresh_on_max && WaitForNewMax(&seen_max)) break;
  }
  if (o_.refresh_on_max) WriteAll(stdout, FormatCursorDown(n));
}

void Run::TearDown(bool abandon_outputs) {
  if (!torn_down_) {
    torn_down_ = true;
    fifo_writer_.Stop();
    if (runtime_ != nullptr) {
      if (abandon_outputs) {
        runtime_->Abandon();
      } else if (Status s = runtime_->Stop(); !s.ok()) {
        OutputFailed(s);  // the sample log could not be completed
      }
    }
    if (explain_ != nullptr) abandon_outputs ? explain_->Abandon() : explain_->End();
    if (max_over_time_ != nullptr) {
      if (abandon_outputs) {
        max_over_time_->Abandon();
      } else if (Status s = max_over_time_->Close(); !s.ok()) {
        OutputFailed(s);
      }
    }
  }
  if (abandon_outputs) {
    json_file_.Discard();
    hist_file_.Discard();
    record_file_.Discard();
    max_over_time_file_.Discard();
    explain_file_.Discard();
    fifo_.reset();  // removes the pipe this run created
  }
}

void Run::OutputFailed(const Status& status) {
  output_failed_ = true;
  Complain(status.message());
}

bool Run::StandardStreamsFailed() {
  errno = 0;
  if (!stdout_failed_ && (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)) {
    stdout_failed_ = true;
    OutputFailed(ErrnoError(errno != 0 ? errno : EIO,
                            "cannot write to standard output (a closed pipe or a full disk?)"));
  }
  errno = 0;
  if (!stderr_failed_ && (std::fflush(stderr) != 0 || std::ferror(stderr) != 0)) {
    stderr_failed_ = true;
    OutputFailed(ErrnoError(errno != 0 ? errno : EIO,
                            "cannot write to standard error (a closed pipe or a full disk?)"));
  }
  return stdout_failed_;
}

std::vector<ThreadReport> Run::FinalReports() const {
  DrainSamples();  // after TearDown() the rings are empty: a no-op but for a reader's safety
  std::vector<ThreadReport> reports = base_;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    stats_[i]->FillReport(reports[i]);
    AddExecutorAndTelemetryFigures(runtime_->Report(ids_[i]), reports[i]);
  }
  return reports;
}

std::vector<std::vector<std::int64_t>> Run::FailPercentileValues(
    const std::vector<ThreadReport>& reports) const {
  std::vector<std::vector<std::int64_t>> values(reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const telemetry::TaskTelemetry* t = runtime_->hub()->task(ids_[i]);
    if (reports[i].cycles == 0 || t == nullptr) continue;
    for (const PercentileBound& b : o_.fail_percentiles) {
      values[i].push_back(t->latency().ValueAtPercentile(b.percentile));
    }
  }
  return values;
}

int Run::ExitStatus(const std::vector<std::string>& breaches) const {
  if (output_failed_) return kExitOutput;
  return breaches.empty() ? kExitOk : kExitThreshold;
}

int Run::Finish() {
  // Everything stops first: the tasks, the collector (the rings' tail reaches the streams and the
  // sample log), the streams' final message, the servers; the sample log and --max-over-time are
  // completed, so that the JSON's return_code covers them.
  TearDown(/*abandon_outputs=*/false);
  // The threads and the collector stopped (its last pass drained every ring): every sample is in.
  if (o_.verbose) DrainVerbose(/*all=*/true);
  const std::vector<ThreadReport> reports = FinalReports();
  const std::vector<std::string> breaches =
      CheckFailBounds(o_, reports, FailPercentileValues(reports));
  WriteResults(reports, breaches);
  if (o_.warmup > 0) {
    std::fprintf(stderr,
                 "rtloop-cyclic: note: the first %llu cycles of each thread were left out of the "
                 "statistics (--warmup)\n",
                 static_cast<unsigned long long>(o_.warmup));
  }
  for (const std::string& b : breaches) {
    std::fprintf(stderr, "rtloop-cyclic: FAIL: %s\n", b.c_str());
  }
  (void)StandardStreamsFailed();
  return ExitStatus(breaches);
}

void Run::WriteJson(const std::vector<ThreadReport>& reports, int return_code) {
  JsonRunInfo run;
  run.cmdline = JoinCommandLine(argc_, argv_);
  run.start_time = start_time_;
  run.end_time = FormatJsonTime(std::time(nullptr));
  run.return_code = return_code;
  run.sysinfo = CollectSysInfo();
  JsonExtras extras;
  extras.tool_version = kToolVersion;
  Status s = json_file_.Write(FormatJson(run, reports, format_, extras));
  if (s.ok()) s = json_file_.Commit();
  if (!s.ok()) OutputFailed(s);
}

void Run::WriteSpikes() {
  std::vector<std::vector<SpikeEvent>> per_thread;
  std::uint64_t total = 0;
  for (const auto& s : stats_) {
    per_thread.push_back(s->Spikes());
    total += s->Snapshot().spikes;
  }
  WriteAll(stdout, FormatSpikes(MergeSpikes(per_thread, o_.spike_nodes), total));
}

void Run::WriteResults(const std::vector<ThreadReport>& reports,
                       const std::vector<std::string>& breaches) {
  // A histogram file first: files are not ordered, and the JSON's return_code then covers it.
  const bool hist_to_file = hist_file_.is_open();
  if (o_.histogram > 0 && hist_to_file) {
    Status s = hist_file_.Write(FormatHistogram(reports, format_));
    if (s.ok()) s = hist_file_.Commit();
    if (!s.ok()) OutputFailed(s);
  }
  // cyclictest's order on stdout: JSON, final T: lines (-q without -h), spikes, histogram, break
  // trace.
  if (json_file_.is_open()) WriteJson(reports, ExitStatus(breaches));
  if (o_.quiet && o_.histogram == 0) WriteAll(stdout, FormatThreadLines(reports, format_));
  if (o_.spike > 0) WriteSpikes();
  if (o_.histogram > 0 && !hist_to_file) WriteAll(stdout, FormatHistogram(reports, format_));
  if (o_.breaktrace > 0) {
    const BreakLatch::Trip trip = latch_.Get();
    BreakTrace trace;
    trace.hit = trip.hit;
    trace.value = trip.value;
    // "# Break thread:" is the kernel TID of the breaking thread, as cyclictest prints it.
    if (trip.hit) trace.tid = reports[static_cast<std::size_t>(trip.thread)].tid;
    WriteAll(stdout, FormatBreakTrace(reports, trace));
  }
  std::fflush(stdout);
  if (o_.percentiles) WriteAll(o_.quiet ? stderr : stdout, FormatPercentileTable(reports, format_));
  if (explain_ != nullptr) {
    if (Status s = explain_->Write(stdout); !s.ok()) OutputFailed(s);
  }
  // stdout and stderr are outputs too: a full disk or a closed pipe behind them loses results.
  (void)StandardStreamsFailed();
}

int Run::Execute() {
  sigemptyset(&signals_);
  for (int s : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) sigaddset(&signals_, s);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);

  Status s;
  try {
    s = Setup();
  } catch (const std::bad_alloc&) {
    s = Status(StatusCode::kResourceExhausted,
               "out of memory while setting up: lower -h, -t or --spike-nodes, or free memory");
  }
  if (!s.ok()) {
    // In order, before anything is destroyed: no thread left running, no output file left.
    TearDown(/*abandon_outputs=*/true);
    if (sched_denied_) {
      std::fflush(stdout);
      std::fprintf(stderr, "Unable to change scheduling policy!\n");
      // Debian's cyclictest 2.4 binary prints this wording (the rt-utils.c of the reference notes
      // says "either run as root or join realtime group"); we follow the binary.
      std::fprintf(stderr,
                   "Probably missing capabilities, either run as root or increase RLIMIT_RTPRIO "
                   "limits.\n");
    }
    if (s.message().rfind("FATAL:", 0) == 0) {
      std::fflush(stdout);
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return kExitFatal;
    }
    Complain(s.message());
    return kExitFatal;
  }
  MainLoop();
  RestoreStopSignals();
  try {
    return Finish();
  } catch (const std::bad_alloc&) {
    TearDown(/*abandon_outputs=*/true);
    Complain("out of memory while writing the results");
    return kExitFatal;
  }
}

}  // namespace internal

std::uint64_t CyclesForDuration(std::int64_t duration_s, std::int64_t interval_us) noexcept {
  if (duration_s <= 0 || interval_us <= 0) return 0;
  const std::uint64_t d_us = static_cast<std::uint64_t>(duration_s) * 1'000'000u;
  const std::uint64_t i_us = static_cast<std::uint64_t>(interval_us);
  return (d_us + i_us - 1) / i_us;
}

std::vector<std::string> CheckFailBounds(const CyclicOptions& o,
                                         std::span<const ThreadReport> threads,
                                         std::span<const std::vector<std::int64_t>> pct_ns) {
  std::vector<std::string> out;
  auto who = [](const ThreadReport& t) {
    return "thread " + std::to_string(t.index) + " (tid " + std::to_string(t.tid) + ")";
  };
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const ThreadReport& t = threads[i];
    if (o.fail_above_us && t.cycles > 0) {
      const std::int64_t max_ns = o.nsecs ? t.max : t.max * 1000;
      if (max_ns > *o.fail_above_us * 1000) {
        out.push_back(who(t) + ": max latency " + std::to_string(t.max) +
                      (o.nsecs ? " ns" : " us") +
                      " > --fail-above=" + std::to_string(*o.fail_above_us) + " us");
      }
    }
    for (std::size_t b = 0; b < o.fail_percentiles.size(); ++b) {
      if (i >= pct_ns.size() || b >= pct_ns[i].size()) continue;
      const std::int64_t v = pct_ns[i][b];
      const PercentileBound& bound = o.fail_percentiles[b];
      if (v > bound.limit_us * 1000) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(v) / 1000.0);
        out.push_back(who(t) + ": p" + bound.text.substr(0, bound.text.find(':')) + " latency " +
                      buf + " us > --fail-percentile=" + bound.text);
      }
    }
    if (o.fail_missed && t.missed_releases > *o.fail_missed) {
      out.push_back(who(t) + ": " + std::to_string(t.missed_releases) + " missed releases > " +
                    "--fail-missed=" + std::to_string(*o.fail_missed));
    }
  }
  return out;
}

bool NeedsServices(const CyclicOptions& o) noexcept {
  return o.telemetry || o.metrics || !o.record_path.empty();
}

int RunCyclic(int argc, const char* const* argv, CyclicLinks links) {
  IgnoreSigpipe();
  if (const char* closed = ClosedStandardStream()) {
    std::fprintf(stderr,
                 "rtloop-cyclic: %s is closed: the results would be lost; give it a file "
                 "or /dev/null\n",
                 closed);
    return kExitOutput;
  }
  const MachineCpus machine = MachineCpus::Read();
  Result<CyclicOptions> parsed = ParseCyclicOptions(argc, argv, machine);
  if (!parsed.ok()) return PrintUsageError(parsed.status());
  CyclicOptions& o = *parsed;
  if (o.help) {
    WriteAll(stdout, UsageText());
    return kExitOk;
  }
  if (o.check_options) return kExitOk;
  if (links.services == nullptr && NeedsServices(o)) {
    if (links.hand_over != nullptr) return links.hand_over(argv);
    std::fputs(
        "rtloop-cyclic: --telemetry, --metrics and --record need the telemetry servers, "
        "which this binary does not link: run rtloop-cyclic-full\n",
        stderr);
    return kExitFatal;
  }
  if (o.unbuffered) std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (const std::string& note : o.stderr_notes) WriteAll(stderr, note);
  for (const std::string& note : o.stdout_notes) WriteAll(stdout, note);
  internal::Run run(argc, argv, std::move(o), links.services);
  return run.Execute();
}

}  // namespace rtloop::cyclic
