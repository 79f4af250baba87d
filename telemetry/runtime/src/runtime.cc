#include "rtloop/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "fault_watcher.h"
#include "rtloop/framework/stop_signals.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop {
namespace {

// Kernel thread ids of this process, ascending.
std::vector<int> ThreadIds() {
  std::vector<int> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (const dirent* e = readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

cpu_set_t ToCpuSet(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  return set;
}

// Moves threads `tids` to `cpus`; threads that have ended meanwhile are skipped.
void PinThreads(const std::vector<int>& tids, const std::vector<int>& cpus) {
  const cpu_set_t set = ToCpuSet(cpus);
  for (int tid : tids) (void)sched_setaffinity(tid, sizeof(set), &set);
}

// The threads created since `before` (a ThreadIds() result).
std::vector<int> ThreadsSince(const std::vector<int>& before) {
  std::vector<int> created;
  for (int tid : ThreadIds()) {
    if (!std::binary_search(before.begin(), before.end(), tid)) created.push_back(tid);
  }
  return created;
}

// A server's start error as the runtime reports it: prefixed with `what`, and for a port in use
// or not permitted, `fix` (the config field to change).
Status ServerStartError(const Status& s, const char* what, const char* fix) {
  std::string message = s.message();
  if (s.code() == StatusCode::kAlreadyExists || s.code() == StatusCode::kPermissionDenied) {
    message += std::string(" (") + fix + ")";
  }
  return Status(s.code(), std::string(what) + ": " + message, s.sys_errno());
}

constexpr std::size_t kMinRing = 256;  // the ring's block size
constexpr std::size_t kMaxRing = std::size_t{1} << 31;
constexpr std::size_t kMinThreadStack = std::size_t{64} << 10;
constexpr std::size_t kMaxThreadStack = std::size_t{64} << 20;

Status CheckValues(const RuntimeConfig& c) {
  if (c.fault_check_period.count() <= 0) {
    return InvalidArgumentError("RuntimeConfig::fault_check_period must be > 0 (got " +
                                std::to_string(c.fault_check_period.count()) +
                                " ns) — e.g. std::chrono::milliseconds(100)");
  }
  if (c.duration.count() < 0) {
    return InvalidArgumentError("RuntimeConfig::duration is negative (" +
                                std::to_string(c.duration.count()) +
                                " ns) — use 0 (until a signal) or a positive duration");
  }
  if (c.monitor_signal != 0) {
    if (Status s = HousekeepingThread::Check({.tick = {}, .signal = c.monitor_signal}); !s.ok()) {
      return InvalidArgumentError("RuntimeConfig::monitor_signal: " + s.message());
    }
  }
  const TelemetryConfig& t = c.telemetry;
  if (!t.enabled) {
    if (t.http.has_value()) {
      return InvalidArgumentError(
          "RuntimeConfig::telemetry.http needs telemetry.enabled — the HTTP endpoint serves the "
          "telemetry hub's figures");
    }
    return Status::Ok();
  }
  if (t.drain_period.count() <= 0) {
    return InvalidArgumentError("RuntimeConfig::telemetry.drain_period must be > 0 (got " +
                                std::to_string(t.drain_period.count()) +
                                " ns) — e.g. std::chrono::milliseconds(10)");
  }
  if (t.max_tasks < 1 || t.max_tasks > std::size_t{telemetry::kMaxSampleTaskId} + 1) {
    return InvalidArgumentError("RuntimeConfig::telemetry.max_tasks is " +
                                std::to_string(t.max_tasks) + " — use 1..65536");
  }
  if (t.min_ring_capacity < kMinRing || t.min_ring_capacity > kMaxRing) {
    return InvalidArgumentError("RuntimeConfig::telemetry.min_ring_capacity is " +
                                std::to_string(t.min_ring_capacity) +
                                " samples — use 256..2147483648");
  }
  if (t.ring_capacity != 0 && (t.ring_capacity < kMinRing || t.ring_capacity > kMaxRing)) {
    return InvalidArgumentError(
        "RuntimeConfig::telemetry.ring_capacity is " + std::to_string(t.ring_capacity) +
        " samples — use 256..2147483648, or 0 to size rings by the task rate");
  }
  if (Result<telemetry::HistogramLayout> layout = telemetry::HistogramLayout::Create(
          t.histogram_layout, "RuntimeConfig::telemetry.histogram_layout.");
      !layout.ok()) {
    return layout.status();
  }
  if (t.thread_stack_size != 0 &&
      (t.thread_stack_size < kMinThreadStack || t.thread_stack_size > kMaxThreadStack)) {
    return InvalidArgumentError("RuntimeConfig::telemetry.thread_stack_size is " +
                                std::to_string(t.thread_stack_size) +
                                " bytes — use 0 (the process default) or 65536..67108864");
  }
  return Status::Ok();
}

// The default stack of threads created from now on (gRPC's and civetweb's use the default).
Status SetDefaultThreadStack(std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
#if defined(__SANITIZE_THREAD__)
  // TSan's pthread_create interceptor fails (EINVAL) for every thread while the default stack is
  // below 1 MiB (gcc 12's libtsan; measured: 256..768 KiB fail, 1 MiB works): a TSan build takes
  // at least that.
  bytes = std::max(bytes, std::size_t{1} << 20);
#endif
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, bytes);
  if (rc == 0) rc = pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    return ErrnoError(rc,
                      "cannot set the default thread stack to " + std::to_string(bytes) + " bytes",
                      "use another RuntimeConfig::telemetry.thread_stack_size, or 0");
  }
  return Status::Ok();
}

// `s` with `field` (the RuntimeConfig field it is about) in front of its message.
Status About(const char* field, const Status& s) {
  if (s.ok()) return s;
  return Status(s.code(), std::string("RuntimeConfig::") + field + ": " + s.message(),
                s.sys_errno());
}

// What the user of a program names (the servers' addresses and token files, the sample log), each
// through the check its consumer makes, so that none of them fails after a server started.
Status CheckUserInputs(const TelemetryConfig& t) {
  if (t.serve_grpc) {
    RTLOOP_RETURN_IF_ERROR(
        About("telemetry.grpc.address", telemetry::CheckServerAddress(t.grpc.address)));
    if (!t.grpc.token_file.empty()) {
      RTLOOP_RETURN_IF_ERROR(
          About("telemetry.grpc.token_file", telemetry::ReadTokenFile(t.grpc.token_file).status()));
    }
  }
  if (t.http.has_value()) {
    // The HTTP endpoint reads its address as the gRPC server does (HOST:PORT, port 0: any).
    RTLOOP_RETURN_IF_ERROR(
        About("telemetry.http->address", telemetry::CheckHttpAddress(t.http->address)));
    if (!t.http->token_file.empty()) {
      RTLOOP_RETURN_IF_ERROR(About("telemetry.http->token_file",
                                   telemetry::ReadTokenFile(t.http->token_file).status()));
    }
  }
  if (!t.record_path.empty()) {
    // The sample log is binary; the runtime's and the application's text goes to stdout.
    Result<telemetry::OutputTarget> log =
        telemetry::ResolveOutputPath(t.record_path, {.what = "sample log", .allow_stdout = false});
    RTLOOP_RETURN_IF_ERROR(About("telemetry.record_path", log.status()));
  }
  return Status::Ok();
}

// Create(config, nullptr): a config that asks for a part only the services have.
Status CheckWithoutServices(const TelemetryConfig& t) {
  if (!t.enabled) return Status::Ok();
  const char* what = t.serve_grpc             ? "telemetry.serve_grpc (the gRPC API)"
                     : t.http.has_value()     ? "telemetry.http (the HTTP endpoint)"
                     : !t.record_path.empty() ? "telemetry.record_path (the sample log)"
                                              : nullptr;
  if (what == nullptr) return Status::Ok();
  return FailedPreconditionError(std::string("RuntimeConfig::") + what +
                                 " needs the telemetry services, and this runtime was created "
                                 "without them (Runtime::Create(config, nullptr)) — use "
                                 "Runtime::Create(config), or turn the setting off");
}

// OK without faults; else kAborted naming each faulted task, its fault count and its last fault.
Status FaultStatus(const std::vector<TaskReport>& faulted) {
  if (faulted.empty()) return Status::Ok();
  std::string message = std::to_string(faulted.size()) + " task" +
                        (faulted.size() == 1 ? "" : "s") + " faulted (exit status 3):";
  for (const TaskReport& r : faulted) {
    message += " task \"" + r.name + "\" state " + TaskStateName(r.stats.state) + ", " +
               std::to_string(r.stats.faults) + " fault" + (r.stats.faults == 1 ? "" : "s") +
               ", last at " + DescribeFault(r) + ";";
  }
  message.pop_back();
  return Status(StatusCode::kAborted, message);
}

}  // namespace

Runtime::Runtime(const RuntimeConfig& config, std::unique_ptr<RuntimeServices> services)
    : config_(config), services_(std::move(services)) {}

Runtime::~Runtime() { (void)Stop(); }

Status Runtime::Check(const RuntimeConfig& config) {
  RTLOOP_RETURN_IF_ERROR(CheckValues(config));
  if (!config.telemetry.enabled) return Status::Ok();
  return CheckUserInputs(config.telemetry);
}

Result<std::unique_ptr<Runtime>> Runtime::Create(const RuntimeConfig& config,
                                                 std::unique_ptr<RuntimeServices> services) {
  RTLOOP_RETURN_IF_ERROR(Check(config));  // before anything is created, started or bound
  if (services == nullptr) RTLOOP_RETURN_IF_ERROR(CheckWithoutServices(config.telemetry));
  std::unique_ptr<Runtime> rt(new Runtime(config, std::move(services)));
  RTLOOP_RETURN_IF_ERROR(rt->Init());
  return rt;
}

Status Runtime::Init() {
  process_cpus_ = CurrentAffinity();
  Result<std::unique_ptr<Executor>> ex = Executor::Create(config_.executor);
  if (!ex.ok()) return ex.status();
  executor_ = std::move(*ex);
  if (config_.telemetry.enabled) RTLOOP_RETURN_IF_ERROR(InitTelemetry());
  // Last: the monitor's job reads what the lines above build (the hub, the servers), and its
  // thread may run it as soon as it exists (TSan caught the hub being assigned meanwhile).
  if (config_.monitor_signal != 0) {
    monitor_ = std::make_unique<HousekeepingThread>(
        HousekeepingConfig{.signal = config_.monitor_signal, .name = "rtloop-monitor"},
        [this](HousekeepingThread::Wake) { PrintMonitor(); });
    if (!monitor_->ok()) return About("monitor_signal", monitor_->status());
  }
  return Status::Ok();
}

Status Runtime::InitTelemetry() {
  RTLOOP_RETURN_IF_ERROR(SetDefaultThreadStack(config_.telemetry.thread_stack_size));
  telemetry::TelemetryHubConfig hc;
  hc.max_tasks = config_.telemetry.max_tasks;
  hc.drain_period = config_.telemetry.drain_period;
  hc.min_ring_capacity = config_.telemetry.min_ring_capacity;
  hc.ring_capacity = config_.telemetry.ring_capacity;
  Result<telemetry::HistogramLayout> layout =
      telemetry::HistogramLayout::Create(config_.telemetry.histogram_layout);
  RTLOOP_RETURN_IF_ERROR(layout.status());  // Check() refused a bad one already
  hc.histogram_layout = *layout;
  hub_ = std::make_unique<telemetry::TelemetryHub>(hc);
  hub_->AttachStats(*executor_);
  collector_ = std::make_unique<telemetry::Collector>(*hub_);  // drains at the hub's period
  if (config_.telemetry.serve_grpc) RTLOOP_RETURN_IF_ERROR(StartServer());
  if (config_.telemetry.http.has_value()) RTLOOP_RETURN_IF_ERROR(StartHttp());
  return Status::Ok();
}

Status Runtime::StartServer() {
  const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
  const std::vector<int> before = ThreadIds();
  const Status started = services_->StartGrpc(config_.telemetry.grpc, *hub_, *collector_,
                                              executor_.get(), &outlier_feed_);
  if (!started.ok()) {
    const std::string& hint = config_.telemetry.grpc_address_hint;
    return ServerStartError(started, "telemetry",
                            !hint.empty() ? hint.c_str()
                                          : "set RuntimeConfig::telemetry.grpc.address, e.g. "
                                            "\"127.0.0.1:0\" for any free port, or "
                                            "telemetry.serve_grpc = false");
  }
  server_tids_ = ThreadsSince(before);
  return Status::Ok();
}

Status Runtime::StartHttp() {
  const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
  const std::vector<int> before = ThreadIds();
  const Status started = services_->StartHttp(
      *config_.telemetry.http, *hub_,
      {.executor = executor_.get(), .collector = collector_.get(), .outliers = &outlier_feed_});
  if (!started.ok()) {
    const std::string& hint = config_.telemetry.http_address_hint;
    return ServerStartError(started, "telemetry http",
                            !hint.empty() ? hint.c_str()
                                          : "set RuntimeConfig::telemetry.http->address, e.g. "
                                            "\"127.0.0.1:0\" for any free port, or leave "
                                            "telemetry.http unset");
  }
  http_tids_ = ThreadsSince(before);
  return Status::Ok();
}

Result<TaskId> Runtime::AddTask(PeriodicTask& task, const TaskConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kCreated) {
    return FailedPreconditionError("cannot add task \"" + config.name +
                                   "\" after Start(): add every task before starting");
  }
  const bool explained =
      config.explain_latency_above.count() > 0 || config.explain_execution_above.count() > 0;
  if (explained && hub_ == nullptr) {
    return InvalidArgumentError("task \"" + config.name +
                                "\": TaskConfig::explain_latency_above/explain_execution_above "
                                "need telemetry (the explanation reads the task's samples) — set "
                                "RuntimeConfig::telemetry.enabled");
  }
  TaskConfig with_hub = config;
  if (hub_ != nullptr) {
    if (executor_->TaskCount() >= hub_->max_tasks()) {
      return InvalidArgumentError("task \"" + config.name + "\" would be task " +
                                  std::to_string(executor_->TaskCount() + 1) +
                                  " but telemetry holds " + std::to_string(hub_->max_tasks()) +
                                  " — raise RuntimeConfig::telemetry.max_tasks");
    }
    with_hub.observers.push_back(hub_.get());
  }
  Result<TaskId> id = executor_->AddTask(task, with_hub);
  if (!id.ok()) return id.status();
  if (hub_ != nullptr) {
    if (Status s = hub_->AddTask(*id, with_hub); !s.ok()) {
      // The executor has the task and cannot give it back: this runtime cannot start.
      broken_ = Status(s.code(), "telemetry for task \"" + config.name + "\": " + s.message() +
                                     " — fix it and create the Runtime again");
      return broken_;
    }
  }
  if (explained) {
    // Only an execution threshold: latency is not judged (the largest value never is exceeded).
    const std::chrono::nanoseconds latency = config.explain_latency_above.count() > 0
                                                 ? config.explain_latency_above
                                                 : std::chrono::nanoseconds::max();
    explain_plans_.push_back({*id, latency, config.explain_execution_above});
  }
  return id;
}

// CPUs no pinned task uses, when tasks are pinned and such CPUs exist; otherwise none (leave the
// telemetry threads where they are).
std::vector<int> Runtime::ChooseTelemetryCpus() const {
  if (!config_.executor.housekeeping_cpus.empty()) return {};  // inherited from Create()
  std::vector<int> pinned;
  for (std::size_t i = 0; i < executor_->TaskCount(); ++i) {
    const TaskInfo info = executor_->Info(static_cast<TaskId>(i));
    pinned.insert(pinned.end(), info.config.cpus.begin(), info.config.cpus.end());
  }
  if (pinned.empty()) return {};
  std::vector<int> free;
  for (int cpu : process_cpus_) {
    if (std::find(pinned.begin(), pinned.end(), cpu) == pinned.end()) free.push_back(cpu);
  }
  return free;
}

Status Runtime::RecordTo(telemetry::OutputFile file, const telemetry::SampleLogConfig& header) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kCreated) {
    return FailedPreconditionError("RecordTo() after Start(): give the sample log before starting");
  }
  if (hub_ == nullptr) {
    return FailedPreconditionError(
        "RecordTo() without telemetry: the sample log needs RuntimeConfig::telemetry.enabled");
  }
  if (services_ == nullptr) {
    return FailedPreconditionError(
        "RecordTo(): the sample log needs the telemetry services, and this runtime was created "
        "without them (Runtime::Create(config, nullptr)) — use Runtime::Create(config)");
  }
  if (!config_.telemetry.record_path.empty() || record_file_.has_value()) {
    return FailedPreconditionError(
        "RecordTo() with a sample log already set (telemetry.record_path or an earlier "
        "RecordTo()): one sample log per run");
  }
  record_file_ = std::move(file);
  record_header_ = header;
  return Status::Ok();
}

Status Runtime::OpenSampleLog() {
  if (hub_ == nullptr) return Status::Ok();
  const bool given = record_file_.has_value();
  if (!given && config_.telemetry.record_path.empty()) return Status::Ok();
  // Here with a sample log only with the services: Create() and RecordTo() refuse one without.
  if (services_ == nullptr) return InternalError("sample log without the telemetry services");
  if (given) {
    std::optional<telemetry::OutputFile> file = std::move(record_file_);
    record_file_.reset();
    return services_->OpenSampleLog(record_header_, std::move(file), *hub_, *collector_);
  }
  telemetry::SampleLogConfig lc;
  lc.path = config_.telemetry.record_path;
  lc.tool_name = config_.app_name;
  return services_->OpenSampleLog(lc, std::nullopt, *hub_, *collector_);
}

// The collector thread inherits the affinity of the thread that starts it: start it from a helper
// thread placed on the telemetry CPUs.
Status Runtime::StartCollector() {
  Status status;
  std::thread starter([&] {
    if (!telemetry_cpus_.empty()) {
      const cpu_set_t set = ToCpuSet(telemetry_cpus_);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    status = collector_->Start();
  });
  starter.join();
  return status;
}

Status Runtime::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  if (phase_ == Phase::kStarted) {
    return FailedPreconditionError("Start() called twice — the runtime is running");
  }
  if (phase_ == Phase::kStopped) {
    return FailedPreconditionError("Start() after Stop(): create a new Runtime");
  }
  if (executor_->TaskCount() == 0) {
    return FailedPreconditionError("Start() with no tasks — call AddTask() first");
  }
  phase_ = Phase::kStarted;
  if (collector_ != nullptr) {
    telemetry_cpus_ = ChooseTelemetryCpus();
    const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
    if (!telemetry_cpus_.empty() && config_.telemetry.grpc.cpus.empty()) {
      PinThreads(server_tids_, telemetry_cpus_);
    }
    if (!telemetry_cpus_.empty() && http() != nullptr && config_.telemetry.http->cpus.empty()) {
      PinThreads(http_tids_, telemetry_cpus_);
    }
    Status s = OpenSampleLog();
    if (s.ok()) s = StartCollector();
    // Before the tasks run: the trace instance is set up outside the measurement.
    if (s.ok() && !explain_plans_.empty()) {
      explain_ = explain::ExplainSession::Prepare(*executor_, explain_plans_);
    }
    if (!s.ok()) {
      (void)StopLocked(/*abandon=*/true);
      return s;
    }
  }
  Status started;
  {
    // The RT threads inherit the monitor signal blocked: it never interrupts them.
    const SignalBlockScope blocked({config_.monitor_signal});
    started = executor_->Start();
  }
  if (started.ok()) started = StartHousekeeping();
  if (started.ok() && explain_ != nullptr) {
    const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
    started = explain_->Begin(*executor_, *collector_, telemetry_cpus_);
    if (started.ok()) outlier_feed_.Attach(explain_);
  }
  if (!started.ok()) {
    (void)StopLocked(/*abandon=*/true);  // no task ran: nothing to keep
    return started;
  }
  const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
  fault_watcher_ = std::make_unique<internal::FaultWatcher>(
      *executor_, hub_.get(),
      internal::FaultWatcherConfig{.app_name = config_.app_name,
                                   .period = config_.fault_check_period,
                                   .cpus = telemetry_cpus_,
                                   .on_fault = config_.on_fault});
  fault_watcher_->Start();
  return Status::Ok();
}

Status Runtime::StartHousekeeping() {
  std::vector<int> tids;
  if (monitor_ != nullptr) tids.push_back(monitor_->tid());
  const SignalBlockScope blocked({SIGINT, SIGTERM, config_.monitor_signal});
  for (const HousekeepingJob& h : housekeeping_) {
    auto thread = std::make_unique<HousekeepingThread>(
        h.config, [job = h.job](HousekeepingThread::Wake) { job(); });
    if (!thread->ok()) return thread->status();
    housekeeping_threads_.push_back(std::move(thread));
  }
  // Moved off the RT CPUs like the telemetry threads.
  if (telemetry_cpus_.empty()) return Status::Ok();
  for (const auto& t : housekeeping_threads_) tids.push_back(t->tid());
  PinThreads(tids, telemetry_cpus_);
  return Status::Ok();
}

Status Runtime::AddHousekeeping(std::string name, std::chrono::nanoseconds tick,
                                std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kCreated) {
    return FailedPreconditionError("AddHousekeeping(\"" + name +
                                   "\") after Start(): add every job before starting");
  }
  if (!job) return InvalidArgumentError("AddHousekeeping(\"" + name + "\"): no job given");
  if (tick < std::chrono::milliseconds(1)) {
    return InvalidArgumentError("AddHousekeeping(\"" + name + "\"): tick is " +
                                std::to_string(tick.count()) + " ns — use at least 1 ms");
  }
  housekeeping_.push_back(
      {HousekeepingConfig{.tick = tick, .name = std::move(name)}, std::move(job)});
  return Status::Ok();
}

void Runtime::ResetStats() {
  for (std::size_t i = 0; i < executor_->TaskCount(); ++i) {
    (void)executor_->ResetStats(static_cast<TaskId>(i));
  }
}

Status Runtime::ResetStats(TaskId id) {
  if (!executor_->ResetStats(id)) {
    return NotFoundError("ResetStats(" + std::to_string(id) + "): no such task (there are " +
                         std::to_string(executor_->TaskCount()) + ")");
  }
  return Status::Ok();
}

void Runtime::PrintMonitor() {
  const std::string text =
      config_.monitor_text ? config_.monitor_text(*this) : FormatTaskReport(Reports());
  std::string out = "\n" + config_.app_name + ": task monitor (" +
                    SignalName(config_.monitor_signal) + ")\n" + text;
  if (out.back() != '\n') out += '\n';
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

std::vector<explain::OutlierRecord> Runtime::Outliers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return explain_ != nullptr ? explain_->Records() : std::vector<explain::OutlierRecord>();
}

explain::ExplainerStats Runtime::OutlierStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return explain_ != nullptr ? explain_->stats() : explain::ExplainerStats();
}

std::string Runtime::OutlierEvidence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return explain_ != nullptr ? explain_->evidence_note() : std::string();
}

Status Runtime::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  return StopLocked(/*abandon=*/false);
}

void Runtime::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  (void)StopLocked(/*abandon=*/true);
}

Status Runtime::StopLocked(bool abandon) {
  if (phase_ == Phase::kStopped) return Status::Ok();
  const bool started = phase_ == Phase::kStarted;
  phase_ = Phase::kStopped;
  // The side threads first: their jobs read what the rest of the stop takes down.
  for (const auto& t : housekeeping_threads_) t->Stop();
  if (monitor_ != nullptr) monitor_->Stop();
  if (started) (void)executor_->Stop();  // FailedPrecondition only if it never started
  if (fault_watcher_ != nullptr) fault_watcher_->Stop();  // and says a fault of the last moment
  if (collector_ != nullptr) collector_->Stop();  // the rings' tail reaches streams and the log
  if (explain_ != nullptr) explain_->Stop();      // the last cycles' records
  // A run that started ends normally: every stream gets its tail, a final message and OK.
  // The HTTP endpoint after it: the page's last poll gets the final figures.
  if (services_ != nullptr) services_->StopServers(/*finish=*/started && !abandon);
  if (record_file_.has_value()) record_file_->Discard();  // RecordTo() without a Start()
  return services_ != nullptr ? services_->CloseSampleLog(abandon) : Status::Ok();
}

Status Runtime::RunUntilSignal() {
  Result<std::unique_ptr<StopSignals>> signals = StopSignals::Install();
  if (!signals.ok()) return signals.status();
  bool started = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    started = phase_ == Phase::kStarted;
  }
  if (!started) RTLOOP_RETURN_IF_ERROR(Start());
  const StopSignals::Outcome end =
      (*signals)->WaitForStop(config_.duration, [this] { return executor_->AllTasksEnded(); });
  if (end.cause == StopSignals::Cause::kSignal) {
    std::fprintf(stderr, "%s: %s: stopping\n", config_.app_name.c_str(),
                 StopSignalName(end.signal));
  }
  Status stopped = Stop();
  if (config_.report_at_exit) {
    std::fputs(FormatTaskReport(Reports()).c_str(), stdout);
    std::fflush(stdout);
  }
  if (!stopped.ok()) return stopped;
  return FaultStatus(FaultedTasks());
}

bool Runtime::AnyTaskFaulted() const {
  for (std::size_t i = 0; i < executor_->TaskCount(); ++i) {
    if (executor_->Stats(static_cast<TaskId>(i)).faults != 0) return true;
  }
  return false;
}

std::vector<TaskReport> Runtime::FaultedTasks() const {
  std::vector<TaskReport> out;
  for (TaskReport& r : Reports()) {
    if (r.stats.faults != 0) out.push_back(std::move(r));
  }
  return out;
}

TaskReport Runtime::Report(TaskId id) const {
  return MakeTaskReport(executor_.get(), hub_.get(), id);
}

std::vector<TaskReport> Runtime::Reports() const {
  return MakeTaskReports(executor_.get(), hub_.get());
}

std::string Runtime::grpc_address() const {
  return services_ != nullptr ? services_->grpc_address() : std::string();
}

std::string Runtime::http_address() const {
  return services_ != nullptr ? services_->http_address() : std::string();
}

int ExitCode(const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, status.message().c_str());
  return status.code() == StatusCode::kAborted ? kExitTaskFault : kExitError;
}

}  // namespace rtloop
