// Run's set-up (cyclic_run.h), in cyclictest's order: the checks before anything, the output
// files, the Runtime, the process, --max-over-time, one task per thread, then the start. Nothing
// is measured before StartMeasuring().
#include <fcntl.h>
#include <pthread.h>
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

#include "cyclic_memory.h"
#include "cyclic_process_io.h"
#include "cyclic_run.h"

namespace rtloop::cyclic::internal {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

Status Run::Setup() {
  format_.nsecs = o_.nsecs;
  format_.histogram_buckets = o_.histogram;
  format_.histofall = o_.histofall;
  format_.histogram_style = o_.histogram_style;
  format_.smi = o_.smi;
  start_time_ = FormatJsonTime(std::time(nullptr));

  RTLOOP_RETURN_IF_ERROR(CheckBeforeAnything());
  RTLOOP_RETURN_IF_ERROR(OpenOutputs());
  RTLOOP_RETURN_IF_ERROR(CreateRuntime());
  RTLOOP_RETURN_IF_ERROR(PrepareProcess());
  RTLOOP_RETURN_IF_ERROR(CreateMaxOverTime());
  // Stable addresses: observers and tasks are handed to the executor as raw pointers.
  stats_.reserve(o_.threads.size());
  tasks_.reserve(o_.threads.size());
  for (const ThreadPlan& plan : o_.threads) RTLOOP_RETURN_IF_ERROR(AddThread(plan));
  PrintThreadInfo();
  return StartMeasuring();
}

Status Run::CheckBeforeAnything() {
  if (o_.smi) return CheckSmi();
  if (Status priv = CheckPrivileges(o_); !priv.ok()) {
    sched_denied_ = true;
    return priv;
  }
  if (o_.verbose) {
    std::printf("Max CPUs = %ld\n", sysconf(_SC_NPROCESSORS_CONF));
    std::printf("Online CPUs = %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    if (o_.affinity == AffinityMode::kCpuSet) {
      std::printf("Using %zu cpus.\n", o_.affinity_cpus.size());
    }
  }
  // Everything big is allocated below: check first that it can be (a clear error, not bad_alloc).
  return CheckMemory(
      PlanMemory(o_),
      ReadMemoryLimits(static_cast<int>(o_.threads.size()), o_.telemetry || o_.metrics), o_);
}

Status Run::OpenOutputs() {
  // The paths were checked with the options (exit 2); what can still fail here is the system
  // (a full disk, permissions changed meanwhile): a runtime error before anything is measured.
  const auto open = [](const std::string& path, const telemetry::OutputPathOptions& options,
                       telemetry::OutputFile* file) -> Status {
    Result<telemetry::OutputFile> f = telemetry::OutputFile::Open(path, options);
    if (!f.ok()) return f.status();
    *file = std::move(*f);
    return Status::Ok();
  };
  if (!o_.json_path.empty()) RTLOOP_RETURN_IF_ERROR(open(o_.json_path, {"--json"}, &json_file_));
  if (o_.histogram > 0 && !o_.histfile.empty() && o_.histfile != "-") {
    RTLOOP_RETURN_IF_ERROR(open(o_.histfile, {"--histfile"}, &hist_file_));
  }
  if (!o_.record_path.empty()) {
    RTLOOP_RETURN_IF_ERROR(open(o_.record_path, {"--record", false}, &record_file_));
  }
  if (!o_.max_over_time_path.empty()) {
    RTLOOP_RETURN_IF_ERROR(
        open(o_.max_over_time_path, {"--max-over-time", false}, &max_over_time_file_));
  }
  if (!o_.explain_path.empty()) {
    RTLOOP_RETURN_IF_ERROR(open(o_.explain_path, {"--explain"}, &explain_file_));
  }
  if (!o_.fifo_path.empty()) {
    Result<telemetry::OutputTarget> t =
        telemetry::OutputFifo::ResolveFifoPath(o_.fifo_path, "-F/--fifo");
    if (!t.ok()) return t.status();
    Result<telemetry::OutputFifo> fifo = telemetry::OutputFifo::Create(*t);
    if (!fifo.ok()) return fifo.status();
    fifo_ = std::move(*fifo);
  }
  return Status::Ok();
}

Status Run::CreateRuntime() {
  RuntimeConfig rc;
  rc.app_name = "rtloop-cyclic";
  ExecutorConfig& ec = rc.executor;
  ec.lock_memory = o_.mlockall;
  ec.cpu_dma_latency_us = std::nullopt;  // HoldDmaLatency(), with cyclictest's messages
  ec.start_delay = milliseconds(1);
  ec.start_clock = o_.clock;
  if (o_.secaligned) ec.align_start_to = std::chrono::seconds(1);
  // --mainaffinity: the main thread moves there now, and so do the telemetry, -F and
  // --max-over-time threads it creates; the measurement threads keep their own CPUs (or, not
  // pinned, the process's).
  ec.housekeeping_cpus = o_.main_affinity;
  // Telemetry's hub always runs: it owns the latency percentiles (and the rings, drained only as
  // they fill while no client or sample log reads them). The servers only when asked.
  TelemetryConfig& tc = rc.telemetry;
  tc.max_tasks = std::max<std::size_t>(o_.threads.size(), 1);
  tc.histogram_layout = o_.hdr_layout.config();
  tc.serve_grpc = o_.telemetry;
  if (!o_.telemetry_address.empty()) tc.grpc.address = o_.telemetry_address;
  tc.grpc.token_file = o_.token_file;
  tc.grpc.tls_cert_file = o_.tls_cert_file;
  tc.grpc.tls_key_file = o_.tls_key_file;
  tc.grpc_address_hint = "choose another with --telemetry=HOST:PORT; port 0 picks a free one";
  if (o_.metrics) {
    telemetry::HttpConfig hc;
    if (!o_.metrics_address.empty()) hc.address = o_.metrics_address;
    hc.token_file = o_.token_file;  // one token for both servers
    tc.http = hc;
  }
  tc.http_address_hint = "choose another with --metrics=HOST:PORT; port 0 picks a free one";
  Result<std::unique_ptr<Runtime>> rt =
      Runtime::Create(rc, services_ != nullptr ? services_() : nullptr);
  if (!rt.ok()) return rt.status();
  runtime_ = std::move(*rt);
  return Status::Ok();
}

Status Run::PrepareProcess() {
  // -a CPUSET restricts the main thread too (cyclictest 2.4). --mainaffinity, which cyclictest
  // applies after it, has moved the main thread already. The telemetry threads keep the process's
  // CPUs, so that Runtime::Start() can move them to CPUs no measurement thread uses.
  if (o_.affinity == AffinityMode::kCpuSet && o_.main_affinity.empty() &&
      !SetThreadAffinity(o_.affinity_cpus)) {
    return Status(StatusCode::kInternal, "cannot restrict the main thread to the -a CPU set");
  }
  dma_ = HoldDmaLatency(o_);
  WarnAboutClock(o_);
  if (o_.tracemark && o_.breaktrace > 0) trace_.Open();
  return Status::Ok();
}

Status Run::CreateMaxOverTime() {
  if (!max_over_time_file_.is_open()) return Status::Ok();
  MaxOverTimeConfig mc;
  mc.window = milliseconds(o_.max_window_ms);
  mc.origin = Now(o_.clock);
  mc.threads = static_cast<int>(std::max<std::size_t>(o_.threads.size(), 1));
  mc.nsecs = o_.nsecs;
  mc.break_latch = o_.breaktrace > 0 ? &latch_ : nullptr;
  Result<std::unique_ptr<MaxOverTime>> mot =
      MaxOverTime::Create(mc, std::move(max_over_time_file_));
  if (!mot.ok()) return mot.status();
  max_over_time_ = std::move(*mot);
  return Status::Ok();
}

TaskConfig Run::ThreadTaskConfig(const ThreadPlan& plan) const {
  TaskConfig tc;
  tc.name = "cyclic" + std::to_string(plan.index);
  tc.period = microseconds(plan.interval_us);
  // cyclictest's first release is one interval after the thread's start (plus -A's offset).
  tc.phase = nanoseconds(plan.phase_ns) + microseconds(plan.interval_us);
  if (plan.cpu >= 0) tc.cpus = {plan.cpu};
  tc.policy = plan.policy;
  tc.priority = plan.priority;
  tc.clock = o_.clock;
  tc.wait_mode = o_.wait_mode;
  tc.warmup_cycles = o_.warmup;
  // -l counts measured cycles; max_cycles counts the warm-up too.
  std::uint64_t max_cycles = o_.loops > 0 ? o_.loops + o_.warmup : 0;
  if (o_.duration_s > 0 && KeepsGrid(o_.wait_mode)) {
    const std::uint64_t by_time = CyclesForDuration(o_.duration_s, plan.interval_us);
    max_cycles = max_cycles == 0 ? by_time : std::min(max_cycles, by_time);
  }
  tc.max_cycles = max_cycles;
  return tc;
}

Status Run::AddThread(const ThreadPlan& plan) {
  CyclicStatsConfig sc;
  sc.index = plan.index;
  sc.nsecs = o_.nsecs;
  sc.histogram_buckets = o_.histogram;
  sc.verbose = o_.verbose;
  sc.spike_threshold = o_.spike;
  sc.spike_nodes = o_.spike_nodes;
  sc.break_threshold = o_.breaktrace;
  sc.break_latch = o_.breaktrace > 0 ? &latch_ : nullptr;
  Result<std::unique_ptr<CyclicThreadStats>> stats = CyclicThreadStats::Create(sc);
  if (!stats.ok()) return stats.status();
  stats_.push_back(std::move(*stats));
  tasks_.push_back(std::make_unique<CyclicThreadTask>(sc.break_latch));

  TaskConfig tc = ThreadTaskConfig(plan);
  if (max_over_time_ != nullptr) tc.observers.push_back(max_over_time_->Observer(plan.index));
  Result<TaskId> id = runtime_->AddTask(*tasks_.back(), tc);  // the hub joins the observers
  if (!id.ok()) {
    sched_denied_ = id.status().code() == StatusCode::kPermissionDenied;
    return id.status();
  }
  ids_.push_back(*id);
  // cyclictest's figures are computed from the hub's drained samples, off the RT thread (the RT
  // thread records only what its ring refuses): cyclic_thread_stats.h.
  if (runtime_->hub() == nullptr) return InternalError("rtloop-cyclic runs without its hub");
  RTLOOP_RETURN_IF_ERROR(runtime_->hub()->SetSampleObserver(*id, stats_.back().get()));

  ThreadReport r;
  r.index = plan.index;
  r.priority = plan.priority;
  r.interval_us = plan.interval_us;
  r.cpu = plan.cpu;
  r.node = CpuNumaNode(plan.cpu);
  r.policy = SchedPolicyName(plan.policy);
  base_.push_back(std::move(r));
  reducers_.emplace_back(plan.index, o_.oscope);
  return Status::Ok();
}

void Run::PrintThreadInfo() const {
  if (o_.verbose) {
    for (const ThreadPlan& plan : o_.threads) {
      if (o_.affinity == AffinityMode::kCpuSet) {
        std::printf("Thread %d using cpu %d.\n", plan.index, plan.cpu);
      }
      // cyclictest prints this after adding the distance: one thread ahead (quirk kept).
      std::printf("Thread %d Interval: %lld\n", plan.index,
                  static_cast<long long>(plan.interval_us) + o_.distance_us);
    }
  }
  std::fflush(stdout);
}

Status Run::StartMeasuring() {
  if (record_file_.is_open()) {
    telemetry::SampleLogConfig header;
    header.tool_name = "rtloop-cyclic";
    header.tool_version = ToolVersion();
    header.command_line = JoinCommandLine(argc_, argv_);
    RTLOOP_RETURN_IF_ERROR(runtime_->RecordTo(std::move(record_file_), header));
  }
  if (explain_file_.is_open()) {  // the trace is set up before the threads run
    explain_ = CyclicExplain::Open(o_, std::move(explain_file_), runtime_->executor(), ids_);
  }
  RTLOOP_RETURN_IF_ERROR(runtime_->Start());
  if (explain_ != nullptr) RTLOOP_RETURN_IF_ERROR(explain_->Begin(*runtime_));
  if (max_over_time_ != nullptr) RTLOOP_RETURN_IF_ERROR(max_over_time_->Start());
  end_by_time_ = EndByTime();
  if (fifo_.has_value()) {
    fifo_writer_.Start(std::move(*fifo_),
                       [this] { return FormatThreadLines(LiveReports(), format_); });
    fifo_.reset();
  }
  status_file_.Create();
  return Status::Ok();
}

std::optional<TimePoint> Run::EndByTime() const {
  if (o_.duration_s <= 0) return std::nullopt;
  // The first thread's stop time: its start (first release - interval) + duration.
  std::optional<TimePoint> first;
  std::int64_t max_interval_us = 0;
  for (const ThreadPlan& plan : o_.threads) {
    const TimePoint stop = runtime_->executor().start_time() + nanoseconds(plan.phase_ns) +
                           std::chrono::seconds(o_.duration_s);
    if (!first || stop < *first) first = stop;
    max_interval_us = std::max(max_interval_us, plan.interval_us);
  }
  // With a cycle budget the tasks end themselves; the time check is only a backstop then.
  const bool budget = KeepsGrid(o_.wait_mode);
  if (!budget) return first;
  return *first + microseconds(2 * max_interval_us) + milliseconds(20);
}

}  // namespace rtloop::cyclic::internal
