#include "cyclic_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cyclic_memory.h"
#include "cyclic_recorder.h"
#include "max_over_time.h"
#include "rtloop/framework/cyclic_task.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/framework/time.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::cyclic {
namespace {

// The collector's drain period under --telemetry/--record. rtloop-cyclic usually measures every
// CPU, so the collector shares CPUs with the measurement threads, and each of its wake-ups shows
// in their latency: draining every 10 ms instead of the library's 1 ms default brought the
// side-by-side avg ratio against cyclictest from 1.14 to 1.05 (bench/cyclic/README.md).
constexpr std::chrono::milliseconds kTelemetryDrainPeriod{10};

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

#ifdef RTLOOP_VERSION_STRING
constexpr const char* kToolVersion = RTLOOP_VERSION_STRING;
#else
constexpr const char* kToolVersion = "0.1.0";
#endif

// The NUMA node of `cpu` (the nodeN entry in /sys/devices/system/cpu/cpuC/, what libnuma's
// numa_node_of_cpu reads), for JSON "node" as cyclictest 2.4 built with libnuma (Debian's) reports
// it; -1 when `cpu` < 0 (not pinned) or the kernel shows no node.
int CpuNumaNode(int cpu) {
  if (cpu < 0) return -1;
  const std::string path = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return -1;
  int node = -1;
  while (const dirent* e = readdir(dir)) {
    int n = -1;
    char rest = 0;
    if (std::sscanf(e->d_name, "node%d%c", &n, &rest) == 1 && n >= 0) {
      node = n;
      break;
    }
  }
  closedir(dir);
  return node;
}

void WriteAll(std::FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

// One line on stderr (control characters in paths and values escaped).
void Complain(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "rtloop-cyclic: %s\n", telemetry::EscapeControlCharacters(message).c_str());
}

int Fatal(const std::string& message) {
  Complain(message);
  return kExitFatal;
}

std::string ReadLoadavg() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

bool IsRtPolicy(SchedPolicy p) { return p == SchedPolicy::kFifo || p == SchedPolicy::kRr; }

int LinuxPolicy(SchedPolicy p) {
  switch (p) {
    case SchedPolicy::kFifo:
      return SCHED_FIFO;
    case SchedPolicy::kRr:
      return SCHED_RR;
    case SchedPolicy::kBatch:
      return SCHED_BATCH;
    case SchedPolicy::kIdle:
      return SCHED_IDLE;
    default:
      return SCHED_OTHER;
  }
}

// cyclictest's check_privs(): can this process use the RT policy at the priority asked for? Tries
// it on the calling thread (raising RLIMIT_RTPRIO's soft limit to the hard one, as cyclictest's
// threads do) and restores the thread's scheduling.
Status CheckPrivileges(const CyclicOptions& o) {
  int priority = 0;
  SchedPolicy policy = SchedPolicy::kOther;
  for (const ThreadPlan& t : o.threads) {
    if (IsRtPolicy(t.policy) && t.priority >= priority) {
      priority = t.priority;
      policy = t.policy;
    }
  }
  if (priority == 0) return Status::Ok();
  const int old_policy = sched_getscheduler(0);
  sched_param old_param{};
  sched_getparam(0, &old_param);
  sched_param param{};
  param.sched_priority = priority;
  int rc = sched_setscheduler(0, LinuxPolicy(policy), &param);
  if (rc != 0 && errno == EPERM) {
    rlimit rl{};
    if (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_RTPRIO, &rl);
      rc = sched_setscheduler(0, LinuxPolicy(policy), &param);
    }
  }
  if (rc != 0) {
    const int err = errno;
    rlimit rl{};
    getrlimit(RLIMIT_RTPRIO, &rl);
    const std::string name = policy == SchedPolicy::kRr ? "SCHED_RR" : "SCHED_FIFO";
    return Status(StatusCode::kPermissionDenied,
                  name + " priority " + std::to_string(priority) + ": " + std::strerror(err) +
                      " (rtprio limit " + std::to_string(rl.rlim_cur) +
                      ") — run as root, grant CAP_SYS_NICE (sudo setcap cap_sys_nice+ep "
                      "$(command -v rtloop-cyclic)), or raise the rtprio limit to " +
                      std::to_string(priority) +
                      " (ulimit -r, or rtprio in /etc/security/limits.conf); --policy=other "
                      "measures without real-time scheduling",
                  err);
  }
  sched_setscheduler(0, old_policy, &old_param);
  return Status::Ok();
}

// cyclictest's set_latency_target(). Returns the fd to hold open, or -1.
int SetLatencyTarget(const CyclicOptions& o) {
  if (o.laptop) {
    std::fprintf(stderr, "WARN: not setting cpu_dma_latency to save battery power\n");
    return -1;
  }
  if (o.default_system) {
    std::fprintf(stderr, "WARN: not setting cpu_dma_latency from cyclictest\n");
    return -1;
  }
  struct stat st {};
  if (stat("/dev/cpu_dma_latency", &st) != 0) {
    std::fprintf(stderr, "WARN: stat /dev/cpu_dma_latency failed: %s\n", std::strerror(errno));
    return -1;
  }
  const int fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "WARN: open /dev/cpu_dma_latency: %s\n", std::strerror(errno));
    return -1;
  }
  const std::int32_t value = o.latency_us;
  if (write(fd, &value, sizeof(value)) < 1) {
    std::fprintf(stderr, "# error setting cpu_dma_latency to %d!: %s\n", value,
                 std::strerror(errno));
    close(fd);
    return -1;
  }
  WriteAll(stdout, FormatDmaLatencyLine(value));
  return fd;
}

// cyclictest -R: compares clock_getres with the smallest step seen over ~1 ms of clock_gettime.
void CheckClockResolution(const CyclicOptions& o) {
  const clockid_t clock = ToClockId(o.clock);
  std::uint64_t reported = UINT64_MAX;
  timespec res{};
  if (clock_getres(clock, &res) != 0) {
    std::fprintf(stderr, "WARN: clock_getres failed");
  } else {
    reported = static_cast<std::uint64_t>(res.tv_sec) * 1'000'000'000u +
               static_cast<std::uint64_t>(res.tv_nsec);
  }
  int times = 1000;
  const TimePoint first = Now(o.clock);
  TimePoint last = first;
  for (int k = 0; k < times; ++k) last = Now(o.clock);
  const std::int64_t total = (last - first).count();
  if (total > 0) {
    const std::int64_t per_call = std::max<std::int64_t>(total / times, 1);
    times =
        static_cast<int>(std::clamp<std::int64_t>(1'000'000'000 / per_call / 1000, 1000, 100000));
  } else {
    times = 100000;
  }
  std::vector<TimePoint> stamps(static_cast<std::size_t>(times));
  for (TimePoint& t : stamps) t = Now(o.clock);
  std::uint64_t min_step = UINT64_MAX;
  for (std::size_t k = 1; k < stamps.size(); ++k) {
    const std::int64_t d = (stamps[k] - stamps[k - 1]).count();
    if (d > 0 && static_cast<std::uint64_t>(d) < min_step) min_step = static_cast<std::uint64_t>(d);
  }
  if (o.verbose || (min_step != UINT64_MAX && min_step > reported)) {
    std::fprintf(stderr, "WARN: reported clock resolution: %" PRIu64 " nsec\n", reported);
    std::fprintf(stderr, "WARN: measured clock resolution approximately: %" PRIu64 " nsec\n",
                 min_step);
  }
}

// --smi: MSR_SMI_COUNT (0x34) exists on Intel family-6 CPUs only; rtloop-cyclic does not read it
// on any CPU yet, so the message says which of the two stops it.
Status CheckSmi() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string vendor;
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      vendor = line.substr(line.find(':') + 2);
      break;
    }
  }
  if (vendor != "GenuineIntel") {
    return Status(StatusCode::kFailedPrecondition,
                  "FATAL: SMI counter is not supported on this processor (" +
                      (vendor.empty() ? std::string("unknown vendor") : vendor) +
                      "; the SMI counter MSR 0x34 exists on Intel CPUs only) — drop --smi");
  }
  return Status(StatusCode::kFailedPrecondition,
                "--smi: reading the SMI counter (MSR 0x34 via /dev/cpu/N/msr) is not supported "
                "by rtloop-cyclic yet — drop --smi, or use cyclictest --smi for SMI counts");
}

bool SetThreadAffinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The --tracemark files, opened up front as cyclictest does.
struct TraceMarker {
  int marker_fd = -1;
  int tracing_on_fd = -1;

  void Open() {
    for (const char* dir : {"/sys/kernel/debug/tracing/", "/sys/kernel/tracing/"}) {
      const std::string d = dir;
      const int fd = open((d + "trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) continue;
      marker_fd = fd;
      tracing_on_fd = open((d + "tracing_on").c_str(), O_WRONLY | O_CLOEXEC);
      std::fprintf(stderr, "INFO: debugfs mountpoint: %s\n", dir);
      return;
    }
    std::fprintf(stderr,
                 "WARN: --tracemark: cannot open trace_marker under /sys/kernel/debug/tracing or "
                 "/sys/kernel/tracing (mount tracefs, run as root); no trace mark will be "
                 "written\n");
  }
  void Mark(std::int64_t value, std::int64_t limit) const {
    if (marker_fd >= 0) {
      char buf[128];
      const int n = std::snprintf(buf, sizeof(buf), "hit latency threshold (%lld > %lld)",
                                  static_cast<long long>(value), static_cast<long long>(limit));
      if (n > 0 && write(marker_fd, buf, static_cast<std::size_t>(n)) < 0) {
        // Best effort, as cyclictest.
      }
    }
    if (tracing_on_fd >= 0 && write(tracing_on_fd, "0", 1) < 0) {
      // Best effort.
    }
  }
  ~TraceMarker() {
    if (marker_fd >= 0) close(marker_fd);
    if (tracing_on_fd >= 0) close(tracing_on_fd);
  }
};

class Run {
 public:
  Run(int argc, const char* const* argv, CyclicOptions options)
      : argc_(argc), argv_(argv), o_(std::move(options)) {}
  ~Run() {
    TearDown(/*abandon_outputs=*/true);
    if (dma_fd_ >= 0) close(dma_fd_);
    if (!status_file_.empty()) unlink(status_file_.c_str());
  }

  int Execute();

 private:
  Status Setup();
  // Every output file, opened (or refused) before anything is measured.
  Status OpenOutputs();
  void MainLoop();
  int Finish();
  // Stops everything that runs, in dependency order: the executor (no more samples), the -F
  // writer, the collector (drains the rings), the server, then the sample log, which reads the
  // executor's final statistics and so is closed (or, with `abandon_outputs`, removed) while the
  // executor still exists. With `abandon_outputs` (a set-up error) no output file is left.
  // Idempotent.
  void TearDown(bool abandon_outputs);
  void StopAll(bool abandon_outputs);
  bool torn_down_ = false;
  // Reports an output failure (message on stderr) and remembers it for the exit status.
  void OutputFailed(const Status& status);

  // Waits until `deadline` (monotonic) while taking signals; returns early only for a stop
  // signal. SIGUSR1/SIGUSR2 print the status block.
  void Tick(std::chrono::steady_clock::time_point deadline);
  bool EndRequested();
  std::vector<ThreadReport> LiveReports() const;
  void DrainVerbose();
  void StartFifo();
  void StopFifo();
  // SIGUSR2: the status block into /dev/shm/cyclictest<pid>, where rt-tests'
  // get_cyclictest_snapshot looks (the file exists from set-up to exit, as cyclictest's).
  void CreateStatusFile();
  bool WriteStatusFile(const std::string& block);
  std::string status_file_;
  bool status_file_warned_ = false;
  bool sched_denied_ = false;   // set-up failed for lack of scheduling privilege
  bool output_failed_ = false;  // a result could not be written: exit kExitOutput

  int argc_;
  const char* const* argv_;
  CyclicOptions o_;
  ReportFormat format_;
  std::string start_time_;
  int dma_fd_ = -1;
  TraceMarker trace_;
  bool break_marked_ = false;

  sigset_t signals_{};
  bool stop_signal_ = false;

  std::vector<CyclicTask> tasks_;
  std::vector<std::unique_ptr<CyclicRecorder>> recorders_;
  std::vector<std::unique_ptr<CyclicThreadObserver>> observers_;
  std::vector<TaskId> ids_;
  // --telemetry / --record: hub (an observer of every task), collector, sinks, server. Declared
  // in dependency order: each is destroyed before what it uses.
  std::unique_ptr<telemetry::TelemetryHub> hub_;
  std::unique_ptr<telemetry::SampleLogWriter> sample_log_;
  std::unique_ptr<telemetry::Collector> collector_;
  std::unique_ptr<telemetry::Server> server_;
  std::unique_ptr<MaxOverTime> max_over_time_;  // --max-over-time
  // Declared after everything its threads use, so that it is destroyed (stopped) first.
  std::unique_ptr<Executor> executor_;
  // --metrics: reads the hub, the collector and the executor, so it is destroyed before them.
  std::unique_ptr<telemetry::HttpServer> http_;
  std::vector<ThreadReport> base_;  // the static fields of every thread's report
  std::vector<VerboseReducer> reducers_;
  BreakLatch latch_;
  std::optional<TimePoint> end_by_time_;  // -D end for the wait modes that drift

  std::thread fifo_thread_;
  std::atomic<bool> fifo_stop_{false};

  // Output files, opened by OpenOutputs(); the sample log's file moves into sample_log_.
  telemetry::OutputFile json_file_;
  telemetry::OutputFile hist_file_;
  telemetry::OutputFile record_file_;
  telemetry::OutputFifo fifo_;
};

Status Run::Setup() {
  format_.nsecs = o_.nsecs;
  format_.histogram_buckets = o_.histogram;
  format_.histofall = o_.histofall;
  format_.histogram_style = o_.histogram_style;
  format_.smi = o_.smi;
  start_time_ = FormatJsonTime(std::time(nullptr));

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
  // -a CPUSET restricts the main thread too (cyclictest 2.4), before any thread is created.
  if (o_.affinity == AffinityMode::kCpuSet && !SetThreadAffinity(o_.affinity_cpus)) {
    return Status(StatusCode::kInternal, "cannot restrict the main thread to the -a CPU set");
  }
  const std::size_t n = o_.threads.size();
  // Everything big is allocated below: check first that it can be (a clear error, not bad_alloc).
  RTLOOP_RETURN_IF_ERROR(CheckMemory(
      PlanMemory(o_),
      ReadMemoryLimits(static_cast<int>(n), o_.telemetry || !o_.record_path.empty()), o_));
  RTLOOP_RETURN_IF_ERROR(OpenOutputs());

  ExecutorConfig ec;
  ec.lock_memory = o_.mlockall;
  ec.cpu_dma_latency_us = std::nullopt;  // handled here, with cyclictest's messages
  ec.start_delay = milliseconds(1);
  ec.start_clock = o_.clock;
  if (o_.secaligned) ec.align_start_to = std::chrono::seconds(1);
  Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
  if (!ex.ok()) return ex.status();
  executor_ = std::move(*ex);

  dma_fd_ = SetLatencyTarget(o_);
  {
    timespec res{};
    if (clock_getres(ToClockId(o_.clock), &res) == 0 && (res.tv_sec != 0 || res.tv_nsec != 1)) {
      std::fprintf(stderr, "WARN: High resolution timers not available\n");
    }
  }
  if (o_.resolution) CheckClockResolution(o_);
  if (o_.tracemark && o_.breaktrace > 0) trace_.Open();

  if (o_.telemetry || o_.metrics || !o_.record_path.empty()) {
    telemetry::TelemetryHubConfig hc;
    hc.max_tasks = std::max<std::size_t>(n, 1);
    hc.drain_period = kTelemetryDrainPeriod;  // rings sized for it
    hub_ = std::make_unique<telemetry::TelemetryHub>(hc);
  }
  if (!o_.max_over_time_path.empty()) {
    MaxOverTimeConfig mc;
    mc.path = o_.max_over_time_path;
    mc.window = milliseconds(o_.max_window_ms);
    mc.origin = Now(o_.clock);
    mc.threads = static_cast<int>(std::max<std::size_t>(n, 1));
    mc.nsecs = o_.nsecs;
    mc.warmup_cycles = o_.warmup;
    Result<std::unique_ptr<MaxOverTime>> mot = MaxOverTime::Create(mc);
    if (!mot.ok()) return mot.status();
    max_over_time_ = std::move(*mot);
  }
  tasks_ = std::vector<CyclicTask>(n);
  // Stable addresses: observers are handed out as raw pointers.
  recorders_.reserve(n);
  observers_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const ThreadPlan& plan = o_.threads[i];
    RecorderConfig rc;
    rc.index = plan.index;
    rc.nsecs = o_.nsecs;
    rc.histogram_buckets = o_.histogram;
    rc.verbose = o_.verbose;
    rc.spike_threshold = o_.spike;
    rc.spike_nodes = o_.spike_nodes;
    rc.break_threshold = o_.breaktrace;
    rc.break_latch = &latch_;
    rc.warmup_cycles = o_.warmup;
    Result<std::unique_ptr<CyclicRecorder>> rec = CyclicRecorder::Create(rc);
    if (!rec.ok()) return rec.status();
    recorders_.push_back(std::move(*rec));
    CycleObserver* extra = hub_.get();
    if (max_over_time_ != nullptr) extra = max_over_time_->Observer(plan.index, extra);
    observers_.push_back(std::make_unique<CyclicThreadObserver>(
        recorders_.back().get(), o_.breaktrace > 0 ? &latch_ : nullptr, extra));

    TaskConfig tc;
    tc.name = "cyclic" + std::to_string(plan.index);
    tc.period = std::chrono::microseconds(plan.interval_us);
    // cyclictest's first release is one interval after the thread's start (plus -A's offset).
    tc.phase = nanoseconds(plan.phase_ns) + std::chrono::microseconds(plan.interval_us);
    if (plan.cpu >= 0) tc.cpus = {plan.cpu};
    tc.policy = plan.policy;
    tc.priority = plan.priority;
    tc.clock = o_.clock;
    tc.wait_mode = o_.wait_mode;
    std::uint64_t max_cycles = o_.loops > 0 ? o_.loops + o_.warmup : 0;
    if (o_.duration_s > 0 &&
        (o_.wait_mode == WaitMode::kAbsolute || o_.wait_mode == WaitMode::kPosixTimer)) {
      const std::uint64_t by_time = CyclesForDuration(o_.duration_s, plan.interval_us);
      max_cycles = max_cycles == 0 ? by_time : std::min(max_cycles, by_time);
    }
    tc.max_cycles = max_cycles;
    tc.observers = {observers_.back().get()};
    Result<TaskId> id = executor_->AddTask(tasks_[i], tc);
    if (!id.ok()) {
      sched_denied_ = id.status().code() == StatusCode::kPermissionDenied;
      return id.status();
    }
    ids_.push_back(*id);
    if (hub_ != nullptr) RTLOOP_RETURN_IF_ERROR(hub_->AddTask(*id, tc));

    ThreadReport r;
    r.index = plan.index;
    r.priority = plan.priority;
    r.interval_us = plan.interval_us;
    r.cpu = plan.cpu;
    r.node = CpuNumaNode(plan.cpu);
    r.policy = SchedPolicyName(plan.policy);  // the histogram is filled (allocated) at the end
    base_.push_back(std::move(r));
    reducers_.emplace_back(plan.index, o_.oscope);
  }

  if (o_.verbose) {
    for (std::size_t i = 0; i < n; ++i) {
      const ThreadPlan& plan = o_.threads[i];
      if (o_.affinity == AffinityMode::kCpuSet) {
        std::printf("Thread %d using cpu %d.\n", plan.index, plan.cpu);
      }
      // cyclictest prints this after adding the distance: one thread ahead (quirk kept).
      std::printf("Thread %d Interval: %lld\n", plan.index,
                  static_cast<long long>(plan.interval_us + o_.distance_us));
    }
  }
  std::fflush(stdout);

  if (hub_ != nullptr) {
    hub_->AttachExecutor(*executor_);
    telemetry::CollectorConfig cc;
    cc.drain_period = kTelemetryDrainPeriod;
    collector_ = std::make_unique<telemetry::Collector>(*hub_, cc);
    if (!o_.record_path.empty()) {
      telemetry::SampleLogConfig lc;
      lc.path = o_.record_path;
      lc.tool_name = "rtloop-cyclic";
      lc.tool_version = kToolVersion;
      lc.command_line = JoinCommandLine(argc_, argv_);
      Result<std::unique_ptr<telemetry::SampleLogWriter>> rec =
          telemetry::SampleLogWriter::Open(lc, std::move(record_file_), *hub_, ReadSystemInfo());
      if (!rec.ok()) return rec.status();
      sample_log_ = std::move(*rec);
      RTLOOP_RETURN_IF_ERROR(collector_->AddSink(sample_log_.get()));
    }
  }

  // The server binds before anything is measured, so that a port in use stops the run early. Its
  // threads go to --mainaffinity's CPUs when given (they are created here, before the main thread
  // moves there).
  if (o_.telemetry) {
    telemetry::ServerConfig sc;
    if (!o_.telemetry_address.empty()) sc.address = o_.telemetry_address;
    sc.token_file = o_.token_file;
    sc.tls_cert_file = o_.tls_cert_file;
    sc.tls_key_file = o_.tls_key_file;
    sc.cpus = o_.main_affinity;
    Result<std::unique_ptr<telemetry::Server>> server =
        telemetry::Server::Start(sc, *hub_, *collector_, executor_.get());
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
  }
  if (o_.metrics) {  // binds here too: a port in use stops the run before it measures
    telemetry::HttpConfig hc;
    if (!o_.metrics_address.empty()) hc.address = o_.metrics_address;
    hc.token_file = o_.token_file;  // one token for both servers
    hc.cpus = o_.main_affinity;
    Result<std::unique_ptr<telemetry::HttpServer>> http = telemetry::HttpServer::Start(
        hc, *hub_, {.executor = executor_.get(), .collector = collector_.get()});
    if (!http.ok()) return http.status();
    http_ = std::move(*http);
  }

  RTLOOP_RETURN_IF_ERROR(executor_->Start());
  if (!o_.main_affinity.empty() && !SetThreadAffinity(o_.main_affinity)) {
    std::fprintf(stderr, "WARN: could not set the main thread's affinity (--mainaffinity)\n");
  }
  // Non-RT helpers start from the main thread, after --mainaffinity: they inherit its CPUs.
  if (collector_ != nullptr) RTLOOP_RETURN_IF_ERROR(collector_->Start());
  if (max_over_time_ != nullptr) RTLOOP_RETURN_IF_ERROR(max_over_time_->Start());

  if (o_.duration_s > 0) {
    // The first thread's stop time: its start (first release - interval) + duration.
    std::optional<TimePoint> first;
    for (const ThreadPlan& plan : o_.threads) {
      const TimePoint stop = executor_->start_time() + nanoseconds(plan.phase_ns) +
                             std::chrono::seconds(o_.duration_s);
      if (!first || stop < *first) first = stop;
    }
    // With a cycle budget the tasks end themselves; the time check is only a backstop then.
    const bool budget =
        o_.wait_mode == WaitMode::kAbsolute || o_.wait_mode == WaitMode::kPosixTimer;
    std::int64_t max_interval_us = 0;
    for (const ThreadPlan& plan : o_.threads) {
      max_interval_us = std::max(max_interval_us, plan.interval_us);
    }
    end_by_time_ = budget
                       ? *first + std::chrono::microseconds(2 * max_interval_us) + milliseconds(20)
                       : *first;
  }
  if (!o_.fifo_path.empty()) StartFifo();
  CreateStatusFile();
  return Status::Ok();
}

std::vector<ThreadReport> Run::LiveReports() const {
  std::vector<ThreadReport> out;
  out.reserve(base_.size());
  for (std::size_t i = 0; i < base_.size(); ++i) {
    ThreadReport r;
    r.index = base_[i].index;
    r.priority = base_[i].priority;
    r.interval_us = base_[i].interval_us;
    r.cpu = base_[i].cpu;
    r.node = base_[i].node;
    const RecorderSnapshot s = recorders_[i]->Snapshot();
    r.tid = s.tid;
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
      (void)WriteStatusFile(FormatStatusBlock(LiveReports(), format_));
    }
  }
}

bool Run::EndRequested() {
  if (stop_signal_) return true;
  if (o_.breaktrace > 0 && latch_.hit()) {
    if (!break_marked_) {
      trace_.Mark(latch_.Get().value, o_.breaktrace);
      break_marked_ = true;
    }
    return true;
  }
  for (TaskId id : ids_) {
    const TaskState st = executor_->State(id);
    if (st == TaskState::kStopped || st == TaskState::kFault) return true;
  }
  if (end_by_time_ && Now(o_.clock) >= *end_by_time_) return true;
  return false;
}

void Run::DrainVerbose() {
  std::string out;
  for (std::size_t i = 0; i < recorders_.size(); ++i) {
    recorders_[i]->DrainValues(
        [&](std::uint64_t cycle, std::int64_t value) { reducers_[i].Add(cycle, value, out); });
  }
  WriteAll(stdout, out);
}

void Run::MainLoop() {
  const bool live = !o_.quiet && !o_.verbose;
  const int n = static_cast<int>(base_.size());
  std::uint64_t seen_max = 0;
  for (;;) {
    if (live) {
      std::string screen = FormatLiveHeader(
          o_.policy_name,
          std::any_of(o_.threads.begin(), o_.threads.end(),
                      [](const ThreadPlan& t) { return t.policy == SchedPolicy::kOther; })
              ? "other"
              : "",
          ReadLoadavg());
      screen += FormatThreadLines(LiveReports(), format_);
      WriteAll(stdout, screen);
      std::fflush(stdout);
    }
    if (o_.verbose) DrainVerbose();
    Tick(std::chrono::steady_clock::now() + milliseconds(10));
    if (EndRequested()) break;
    if (live) WriteAll(stdout, FormatCursorUp(n));
    if (o_.refresh_on_max) {
      std::fflush(stdout);
      for (;;) {
        std::uint64_t total = 0;
        for (const auto& r : recorders_) total += r->new_max_count();
        if (total != seen_max) {
          seen_max = total;
          break;
        }
        if (o_.verbose) DrainVerbose();
        Tick(std::chrono::steady_clock::now() + milliseconds(10));
        if (EndRequested()) break;
      }
      if (EndRequested()) break;
    }
  }
  if (o_.refresh_on_max) WriteAll(stdout, FormatCursorDown(n));
}

Status Run::OpenOutputs() {
  // The paths were checked with the options (exit 2); what can still fail here is the system
  // (a full disk, permissions changed meanwhile): a runtime error before anything is measured.
  if (!o_.json_path.empty()) {
    Result<telemetry::OutputFile> f = telemetry::OutputFile::Open(o_.json_path, {.what = "--json"});
    if (!f.ok()) return f.status();
    json_file_ = std::move(*f);
  }
  if (o_.histogram > 0 && !o_.histfile.empty() && o_.histfile != "-") {
    Result<telemetry::OutputFile> f =
        telemetry::OutputFile::Open(o_.histfile, {.what = "--histfile"});
    if (!f.ok()) return f.status();
    hist_file_ = std::move(*f);
  }
  if (!o_.record_path.empty()) {
    Result<telemetry::OutputFile> f =
        telemetry::OutputFile::Open(o_.record_path, {.what = "--record", .allow_stdout = false});
    if (!f.ok()) return f.status();
    record_file_ = std::move(*f);
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

void Run::TearDown(bool abandon_outputs) {
  if (!torn_down_) {
    torn_down_ = true;
    StopAll(abandon_outputs);
  }
  if (abandon_outputs) {
    json_file_.Discard();
    hist_file_.Discard();
    record_file_.Discard();
  }
}

void Run::StopAll(bool abandon_outputs) {
  if (executor_ != nullptr) (void)executor_->Stop();  // FailedPrecondition when not running
  StopFifo();
  if (collector_ != nullptr) collector_->Stop();  // every sample reaches the sinks
  if (server_ != nullptr) server_->Stop();
  if (http_ != nullptr) http_->Stop();
  if (sample_log_ != nullptr) {
    if (abandon_outputs) {
      sample_log_->Abandon();
    } else if (Status s = sample_log_->Close(); !s.ok()) {
      OutputFailed(s);
    }
    // Before the executor and the hub it reads go away (the collector, stopped, calls it no more).
    sample_log_.reset();
  }
}

void Run::OutputFailed(const Status& status) {
  output_failed_ = true;
  Complain(status.message());
}

int Run::Finish() {
  const Status stopped = executor_->Stop();
  (void)stopped;  // FailedPrecondition only if already stopped
  StopFifo();
  if (collector_ != nullptr) collector_->Stop();  // every sample reaches the sinks
  // A normal end: open streams get every remaining sample, then the final message and OK.
  if (server_ != nullptr) server_->Finish();
  TearDown(/*abandon_outputs=*/false);  // closes the sample log (and reports a failure)
  if (max_over_time_ != nullptr) {
    if (Status s = max_over_time_->Close(); !s.ok()) OutputFailed(s);
  }
  if (o_.verbose) DrainVerbose();

  std::vector<ThreadReport> reports = base_;
  std::vector<std::vector<std::int64_t>> pct_values(reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    recorders_[i]->FillReport(reports[i]);
    if (hub_ != nullptr) {
      if (Result<telemetry::TaskTelemetrySnapshot> snap = hub_->Snapshot(ids_[i]); snap.ok()) {
        reports[i].ring_drops = snap->ring_dropped;
      }
    }
    if (reports[i].cycles > 0) {
      for (const PercentileBound& b : o_.fail_percentiles) {
        pct_values[i].push_back(recorders_[i]->LatencyAtPercentile(b.percentile));
      }
    }
  }
  const std::vector<std::string> breaches = CheckFailBounds(o_, reports, pct_values);
  const auto exit_code = [&] {
    if (output_failed_) return kExitOutput;
    return breaches.empty() ? kExitOk : kExitThreshold;
  };
  const auto commit = [this](telemetry::OutputFile& file, const std::string& text) {
    Status s = file.Write(text);
    if (s.ok()) s = file.Commit();
    if (!s.ok()) OutputFailed(s);
  };

  // A histogram file first: files are not ordered, and the JSON's return_code then covers it.
  const bool hist_to_file = hist_file_.is_open();
  if (o_.histogram > 0 && hist_to_file) commit(hist_file_, FormatHistogram(reports, format_));

  // cyclictest's order on stdout: JSON, final T: lines (-q without -h), spikes, histogram, break
  // trace.
  if (json_file_.is_open()) {
    JsonRunInfo run;
    run.cmdline = JoinCommandLine(argc_, argv_);
    run.start_time = start_time_;
    run.end_time = FormatJsonTime(std::time(nullptr));
    run.return_code = exit_code();
    run.sysinfo = CollectSysInfo();
    JsonExtras extras;
    extras.tool_version = kToolVersion;
    commit(json_file_, FormatJson(run, reports, format_, extras));
  }
  if (o_.quiet && o_.histogram == 0) WriteAll(stdout, FormatThreadLines(reports, format_));
  if (o_.spike > 0) {
    std::vector<std::vector<SpikeEvent>> per_thread;
    std::uint64_t total = 0;
    for (const auto& r : recorders_) {
      per_thread.push_back(r->Spikes());
      total += r->Snapshot().spikes;
    }
    WriteAll(stdout, FormatSpikes(MergeSpikes(per_thread, o_.spike_nodes), total));
  }
  if (o_.histogram > 0 && !hist_to_file) WriteAll(stdout, FormatHistogram(reports, format_));
  if (o_.breaktrace > 0) WriteAll(stdout, FormatBreakTrace(reports, latch_.Get()));
  std::fflush(stdout);
  if (o_.percentiles) WriteAll(o_.quiet ? stderr : stdout, FormatPercentileTable(reports, format_));
  // stdout is an output too: a full disk or a closed pipe behind it loses results.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    OutputFailed(
        ErrnoError(errno != 0 ? errno : EIO, "cannot write the results to standard output"));
  }
  if (o_.warmup > 0) {
    std::fprintf(stderr,
                 "rtloop-cyclic: note: the first %llu cycles of each thread were left out of the "
                 "statistics (--warmup)\n",
                 static_cast<unsigned long long>(o_.warmup));
  }
  for (const std::string& b : breaches)
    std::fprintf(stderr, "rtloop-cyclic: FAIL: %s\n", b.c_str());
  return exit_code();
}

// SIGUSR2's status file, /dev/shm/cyclictest<pid>: through OutputFile like every output, so a
// snapshot is replaced whole (a reader never sees half of one) and a FIFO or device planted there
// is refused instead of blocking. Best effort: a failure is one warning, the run goes on.
void Run::CreateStatusFile() {
  const std::string path = "/dev/shm/cyclictest" + std::to_string(getpid());
  struct stat st {};
  if (stat("/dev/shm", &st) != 0) return;  // no /dev/shm: SIGUSR2 writes nothing, as cyclictest
  status_file_ = path;
  if (!WriteStatusFile("")) status_file_.clear();  // not ours: never removed at exit
}

bool Run::WriteStatusFile(const std::string& block) {
  if (status_file_.empty()) return false;
  Result<telemetry::OutputFile> f =
      telemetry::OutputFile::Open(status_file_, {.what = "SIGUSR2 status file"});
  Status s = f.ok() ? f->Write(block) : f.status();
  if (s.ok()) s = f->Commit(/*sync=*/false);
  if (!s.ok() && !status_file_warned_) {
    status_file_warned_ = true;
    std::fprintf(stderr, "WARN: %s\n", telemetry::EscapeControlCharacters(s.message()).c_str());
  }
  return s.ok();
}

void Run::StartFifo() {
  fifo_thread_ = std::thread([this] {
    while (!fifo_stop_.load(std::memory_order_acquire)) {
      // Never blocks: without a reader (or with a full pipe) this round's lines are dropped.
      (void)fifo_.TryWrite(FormatThreadLines(LiveReports(), format_));
      for (int i = 0; i < 10 && !fifo_stop_.load(std::memory_order_acquire); ++i) {
        std::this_thread::sleep_for(milliseconds(50));
      }
    }
  });
}

void Run::StopFifo() {
  if (fifo_thread_.joinable()) {
    fifo_stop_.store(true, std::memory_order_release);
    fifo_thread_.join();
  }
  fifo_.Remove();  // only the pipe this run created, if it is still there
}

// After the main loop SIGINT/SIGTERM are taken by default again: a second one ends the process
// even if writing the final output were to hang (a stdout pipe nobody reads).
void RestoreStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGINT, &dfl, nullptr);
  sigaction(SIGTERM, &dfl, nullptr);
  pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
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
    return Fatal(s.message());
  }
  MainLoop();
  RestoreStopSignals();
  try {
    return Finish();
  } catch (const std::bad_alloc&) {
    TearDown(/*abandon_outputs=*/true);
    return Fatal("out of memory while writing the results");
  }
}

}  // namespace

CyclicThreadObserver::CyclicThreadObserver(CyclicRecorder* recorder, const BreakLatch* latch,
                                           CycleObserver* extra) noexcept
    : recorder_(recorder), latch_(latch), extra_(extra) {}

void CyclicThreadObserver::OnRtThreadStart(TaskId task) {
  recorder_->OnRtThreadStart(task);
  if (extra_ != nullptr) extra_->OnRtThreadStart(task);
}

void CyclicThreadObserver::OnCycle(const CycleSample& sample) noexcept {
  // -b: cyclictest's threads stop with the sample that broke the limit; the executor stops ours a
  // few ms later, so later samples are left out of every statistic.
  if (latch_ != nullptr && latch_->hit()) return;
  recorder_->OnCycle(sample);
  if (extra_ != nullptr) extra_->OnCycle(sample);
}

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

int RunCyclic(int argc, const char* const* argv) {
  const MachineCpus machine = MachineCpus::Read();
  Result<CyclicOptions> parsed = ParseCyclicOptions(argc, argv, machine);
  if (!parsed.ok()) return PrintUsageError(parsed.status());
  CyclicOptions& o = *parsed;
  if (o.help) {
    WriteAll(stdout, UsageText());
    return kExitOk;
  }
  if (o.unbuffered) std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (const std::string& note : o.stderr_notes) WriteAll(stderr, note);
  for (const std::string& note : o.stdout_notes) WriteAll(stdout, note);
  Run run(argc, argv, std::move(o));
  return run.Execute();
}

}  // namespace rtloop::cyclic
