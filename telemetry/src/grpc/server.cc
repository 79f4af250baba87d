// rtloop::telemetry::Server: the Telemetry service on gRPC's callback API. With client.cc, the only
// translation units of rtloop that include gRPC headers (each costs seconds to compile); the
// message contents come from service_fill.cc.
//
// Streams: each open stream is a ServerWriteReactor registered with the ServerCore. A message is
// written when one is ready and no write is in flight: right after the previous write completed
// (OnWriteDone, on a gRPC thread) or from the core's pump thread, which polls idle streams every
// ServerConfig::poll_period (sample subscriptions fill every collector drain period; stats are due
// every interval). gRPC calls (StartWrite, Finish) are never made under the reactor's lock, because
// gRPC may run a reaction inline.
#include "rtloop/telemetry/server.h"

#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "net_util.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/v1/telemetry.grpc.pb.h"
#include "service_fill.h"

namespace rtloop::telemetry {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr std::size_t kMaxBatchSamples = 65536;
constexpr std::uint32_t kDefaultWatchIntervalMs = 1000;
constexpr char kStopping[] = "server stopping";

grpc::Status ToGrpc(const Status& s) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case StatusCode::kUnauthenticated:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    default:
      break;
  }
  return grpc::Status(code, s.message());
}

// A registered stream, seen by the core's pump thread and by Stop().
class StreamBase {
 public:
  virtual ~StreamBase() = default;
  virtual void Kick() = 0;
  virtual void RequestFinish(const grpc::Status& status) = 0;
};

// State shared by the service, the reactors and the server: configuration, data sources, the
// registry of open streams and the pump thread.
class ServerCore {
 public:
  ServerCore(const ServerConfig& config, std::string token, TelemetryHub& hub, Collector& collector,
             const Executor* executor)
      : config_(config),
        token_(std::move(token)),
        hub_(hub),
        collector_(collector),
        executor_(executor) {}

  const ServerConfig& config() const { return config_; }
  // The bound address; set once before serving starts.
  std::string address() const {
    std::lock_guard lock(mu_);
    return address_;
  }
  void set_address(std::string address) {
    std::lock_guard lock(mu_);
    address_ = std::move(address);
  }
  TelemetryHub& hub() { return hub_; }
  Collector& collector() { return collector_; }
  const Executor* executor() const { return executor_; }

  // OK, or UNAUTHENTICATED when a token is configured and the call does not carry it.
  grpc::Status Authorize(const grpc::CallbackServerContext* context) const {
    if (token_.empty()) return grpc::Status::OK;
    const auto& metadata = context->client_metadata();
    const auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this server requires a bearer token (\"authorization: Bearer <token>\" "
                          "metadata, e.g. rtloop-top --token-file FILE)");
    }
    const std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    const std::string_view given =
        value.substr(0, kBearer.size()) == kBearer ? value.substr(kBearer.size()) : value;
    if (!internal::ConstantTimeEquals(given, token_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
    }
    return grpc::Status::OK;
  }

  // Reserves a stream slot: OK, RESOURCE_EXHAUSTED beyond max_streams, UNAVAILABLE when stopping.
  grpc::Status ReserveStream() {
    std::lock_guard lock(mu_);
    if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, kStopping);
    if (live_streams_ >= config_.max_streams) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many open streams (" + std::to_string(config_.max_streams) +
                              "): close one or raise ServerConfig::max_streams");
    }
    ++live_streams_;
    return grpc::Status::OK;
  }
  // The stream reactor's destructor gives its slot back.
  void ReleaseStream() {
    std::lock_guard lock(mu_);
    --live_streams_;
    idle_cv_.notify_all();
  }
  // A stream reserved before Stop() began but registered after FinishAll() took its snapshot is
  // asked to finish here, so it too ends with "server stopping" instead of waiting for the
  // cancellation at the stop_grace deadline.
  void Register(const std::shared_ptr<StreamBase>& stream) {
    bool stopping = false;
    {
      std::lock_guard lock(mu_);
      streams_.emplace(stream.get(), stream);
      stopping = stopping_;
    }
    pump_cv_.notify_all();
    if (stopping) stream->RequestFinish(grpc::Status(grpc::StatusCode::UNAVAILABLE, kStopping));
  }
  // From OnDone: drops the registry's reference, which may destroy `stream`.
  void Unregister(StreamBase* stream) {
    std::shared_ptr<StreamBase> keep;
    {
      std::lock_guard lock(mu_);
      const auto it = streams_.find(stream);
      if (it == streams_.end()) return;
      keep = std::move(it->second);
      streams_.erase(it);
    }
    // `keep` goes out of scope here, outside the lock (the destructor takes the lock).
  }
  // Error-only reactors (bad request, no token) are counted so Stop() waits for them too.
  void HandlerStarted() {
    std::lock_guard lock(mu_);
    ++live_handlers_;
  }
  void HandlerDone() {
    std::lock_guard lock(mu_);
    --live_handlers_;
    idle_cv_.notify_all();
  }
  std::size_t open_streams() const {
    std::lock_guard lock(mu_);
    return live_streams_;
  }

  void AddStreamLoss(TaskId task, std::uint64_t lost) {
    std::lock_guard lock(mu_);
    stream_loss_[task] += lost;
  }

  // A stats snapshot plus this server's stream facts.
  void FillStats(const std::vector<TaskId>& ids, bool histogram, v1::GetStatsResponse* out) {
    internal::FillStats(hub_, ids, histogram, out);
    std::lock_guard lock(mu_);
    for (const v1::TaskStats& t : out->tasks()) {
      v1::StreamLoss* loss = out->add_stream_loss();
      loss->set_task_id(t.task_id());
      const auto it = stream_loss_.find(t.task_id());
      loss->set_lost(it == stream_loss_.end() ? 0 : it->second);
    }
    out->set_open_streams(static_cast<std::uint32_t>(live_streams_));
  }

  void StartPump() {
    pump_ = std::thread([this] { PumpLoop(); });
  }

  // Refuses new streams and asks every open one to finish with `status`.
  void FinishAll(const grpc::Status& status) {
    for (const std::shared_ptr<StreamBase>& s : Snapshot(true)) s->RequestFinish(status);
  }

  // Waits until no stream or error handler is alive; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return idle_cv_.wait_for(lock, timeout,
                             [this] { return live_streams_ == 0 && live_handlers_ == 0; });
  }

  void StopPump() {
    {
      std::lock_guard lock(mu_);
      pump_stop_ = true;
    }
    pump_cv_.notify_all();
    if (pump_.joinable()) pump_.join();
  }

 private:
  std::vector<std::shared_ptr<StreamBase>> Snapshot(bool stop) {
    std::lock_guard lock(mu_);
    if (stop) stopping_ = true;
    std::vector<std::shared_ptr<StreamBase>> out;
    out.reserve(streams_.size());
    for (const auto& [key, stream] : streams_) out.push_back(stream);
    return out;
  }

  void PumpLoop() {
    std::unique_lock lock(mu_);
    while (!pump_stop_) {
      if (streams_.empty()) {
        pump_cv_.wait(lock, [this] { return pump_stop_ || !streams_.empty(); });
        continue;
      }
      lock.unlock();
      for (const std::shared_ptr<StreamBase>& s : Snapshot(false)) s->Kick();
      lock.lock();
      pump_cv_.wait_for(lock, config_.poll_period, [this] { return pump_stop_; });
    }
  }

  const ServerConfig config_;
  const std::string token_;
  TelemetryHub& hub_;
  Collector& collector_;
  const Executor* const executor_;

  mutable std::mutex mu_;
  std::string address_;  // guarded by mu_
  std::condition_variable idle_cv_;
  std::condition_variable pump_cv_;
  std::unordered_map<StreamBase*, std::shared_ptr<StreamBase>> streams_;
  std::unordered_map<TaskId, std::uint64_t> stream_loss_;  // all streams, per task
  std::size_t live_streams_ = 0;
  std::size_t live_handlers_ = 0;
  bool stopping_ = false;
  bool pump_stop_ = false;
  std::thread pump_;
};

// A stream that fails at once (bad request, missing token, stream limit).
template <typename Response>
class ErrorReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  ErrorReactor(ServerCore* core, const grpc::Status& status) : core_(core) {
    core_->HandlerStarted();
    this->Finish(status);
  }
  void OnDone() override {
    ServerCore* core = core_;
    delete this;
    core->HandlerDone();
  }

 private:
  ServerCore* core_;
};

// The write/finish state machine shared by both streams. Subclasses fill the next message.
template <typename Response>
class StreamReactor : public grpc::ServerWriteReactor<Response>, public StreamBase {
 public:
  explicit StreamReactor(ServerCore* core) : core_(core) {}
  ~StreamReactor() override { core_->ReleaseStream(); }

  void Kick() override {
    enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
    grpc::Status status;
    {
      std::lock_guard lock(mu_);
      if (writing_ || finished_) return;
      if (finish_requested_) {
        finished_ = true;
        status = finish_status_;
        action = Action::kFinish;
      } else if (Fill(&message_)) {
        writing_ = true;
        action = Action::kWrite;
      }
    }
    if (action == Action::kWrite) {
      this->StartWrite(&message_);
    } else if (action == Action::kFinish) {
      this->Finish(status);
    }
  }

  void RequestFinish(const grpc::Status& status) override {
    {
      std::lock_guard lock(mu_);
      if (!finish_requested_) {
        finish_requested_ = true;
        finish_status_ = status;
      }
    }
    Kick();
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      if (!ok && !finish_requested_) {
        finish_requested_ = true;
        finish_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
      }
    }
    Kick();
  }

  void OnCancel() override {
    RequestFinish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    Closing();
    core_->Unregister(this);  // may destroy this
  }

 protected:
  // Under the lock, with no write in flight: puts the next message into `out`, or returns false
  // when none is ready yet.
  virtual bool Fill(Response* out) = 0;
  // Once, from OnDone, before the reactor is released.
  virtual void Closing() {}

  ServerCore* const core_;

 private:
  std::mutex mu_;
  bool writing_ = false;
  bool finished_ = false;
  bool finish_requested_ = false;
  grpc::Status finish_status_;
  Response message_;  // the message being written; untouched until OnWriteDone
};

class WatchStatsReactor final : public StreamReactor<v1::GetStatsResponse> {
 public:
  WatchStatsReactor(ServerCore* core, std::vector<TaskId> ids, bool histogram,
                    std::chrono::milliseconds interval)
      : StreamReactor(core),
        ids_(std::move(ids)),
        histogram_(histogram),
        interval_(interval),
        next_(SteadyClock::now()) {}

 protected:
  bool Fill(v1::GetStatsResponse* out) override {
    const SteadyClock::time_point now = SteadyClock::now();
    if (now < next_) return false;
    next_ += interval_;
    if (next_ < now) next_ = now + interval_;  // fell behind (slow client): no burst
    out->Clear();
    core_->FillStats(ids_, histogram_, out);
    return true;
  }

 private:
  const std::vector<TaskId> ids_;
  const bool histogram_;
  const std::chrono::milliseconds interval_;
  SteadyClock::time_point next_;
};

class SampleStreamReactor final : public StreamReactor<v1::StreamSamplesResponse> {
 public:
  SampleStreamReactor(ServerCore* core, std::shared_ptr<Subscription> subscription,
                      std::size_t max_batch)
      : StreamReactor(core), subscription_(std::move(subscription)), max_batch_(max_batch) {}

 protected:
  bool Fill(v1::StreamSamplesResponse* out) override {
    if (next_ >= pending_.size()) {
      next_ = 0;
      if (subscription_->Pop(&pending_, std::chrono::nanoseconds(0), max_batch_) == 0) {
        pending_.clear();
        return false;
      }
    }
    const SampleBatch& batch = pending_[next_++];
    if (lost_total_.size() <= batch.task) lost_total_.resize(batch.task + 1, 0);
    lost_total_[batch.task] += batch.lost_before;
    if (batch.lost_before > 0) core_->AddStreamLoss(batch.task, batch.lost_before);
    out->Clear();
    internal::FillSampleBatch(batch, lost_total_[batch.task], out);
    return true;
  }
  void Closing() override { core_->collector().Unsubscribe(subscription_); }

 private:
  const std::shared_ptr<Subscription> subscription_;
  const std::size_t max_batch_;
  std::vector<SampleBatch> pending_;
  std::size_t next_ = 0;
  std::vector<std::uint64_t> lost_total_;  // per task id
};

class TelemetryService final : public v1::Telemetry::CallbackService {
 public:
  explicit TelemetryService(ServerCore* core) : core_(core) {}

  grpc::ServerUnaryReactor* GetSystemInfo(grpc::CallbackServerContext* context,
                                          const v1::GetSystemInfoRequest* /*request*/,
                                          v1::GetSystemInfoResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Authorize(context);
    if (status.ok()) internal::FillSystemInfo(core_->address(), response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const v1::ListTasksRequest* /*request*/,
                                      v1::ListTasksResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Authorize(context);
    if (status.ok()) internal::FillTaskList(core_->hub(), core_->executor(), response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::GetStatsResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Authorize(context);
    if (status.ok()) {
      Result<std::vector<TaskId>> ids = internal::ResolveTaskIds(core_->hub(), request->task_ids());
      if (ids.ok()) {
        core_->FillStats(*ids, request->include_histogram(), response);
      } else {
        status = ToGrpc(ids.status());
      }
    }
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerWriteReactor<v1::GetStatsResponse>* WatchStats(
      grpc::CallbackServerContext* context, const v1::WatchStatsRequest* request) override {
    using Error = ErrorReactor<v1::GetStatsResponse>;
    if (grpc::Status s = core_->Authorize(context); !s.ok()) return new Error(core_, s);
    Result<std::vector<TaskId>> ids = internal::ResolveTaskIds(core_->hub(), request->task_ids());
    if (!ids.ok()) return new Error(core_, ToGrpc(ids.status()));
    const std::uint32_t interval_ms =
        request->interval_ms() == 0 ? kDefaultWatchIntervalMs : request->interval_ms();
    const auto min_ms = core_->config().min_watch_interval.count();
    if (interval_ms < min_ms) {
      return new Error(
          core_, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "interval_ms " + std::to_string(interval_ms) +
                                  " is below the minimum of " + std::to_string(min_ms) + " ms"));
    }
    if (grpc::Status s = core_->ReserveStream(); !s.ok()) return new Error(core_, s);
    auto reactor =
        std::make_shared<WatchStatsReactor>(core_, std::move(*ids), request->include_histogram(),
                                            std::chrono::milliseconds(interval_ms));
    WatchStatsReactor* raw = reactor.get();
    core_->Register(reactor);
    raw->Kick();  // the first snapshot right away
    return raw;
  }

  grpc::ServerWriteReactor<v1::StreamSamplesResponse>* StreamSamples(
      grpc::CallbackServerContext* context, const v1::StreamSamplesRequest* request) override {
    using Error = ErrorReactor<v1::StreamSamplesResponse>;
    if (grpc::Status s = core_->Authorize(context); !s.ok()) return new Error(core_, s);
    Result<std::vector<TaskId>> ids = internal::ResolveTaskIds(core_->hub(), request->task_ids());
    if (!ids.ok()) return new Error(core_, ToGrpc(ids.status()));
    if (request->max_batch_samples() > kMaxBatchSamples) {
      return new Error(
          core_, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "max_batch_samples " + std::to_string(request->max_batch_samples()) +
                                  " is above the limit of " + std::to_string(kMaxBatchSamples)));
    }
    const std::size_t max_buffer = core_->config().max_stream_buffer_samples;
    if (request->buffer_samples() > max_buffer) {
      return new Error(
          core_, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "buffer_samples " + std::to_string(request->buffer_samples()) +
                                  " is above the server's limit of " + std::to_string(max_buffer)));
    }
    const std::size_t max_batch = request->max_batch_samples() == 0
                                      ? core_->config().max_batch_samples
                                      : request->max_batch_samples();
    if (grpc::Status s = core_->ReserveStream(); !s.ok()) return new Error(core_, s);
    SubscriptionConfig sc;
    if (request->task_ids_size() > 0) sc.tasks = std::move(*ids);
    sc.capacity = request->buffer_samples() == 0 ? core_->config().stream_buffer_samples
                                                 : request->buffer_samples();
    auto reactor =
        std::make_shared<SampleStreamReactor>(core_, core_->collector().Subscribe(sc), max_batch);
    SampleStreamReactor* raw = reactor.get();
    // Send the response headers now: the client then knows the subscription exists (every sample
    // from here on reaches it) even before the first batch. Before Register(): no other thread
    // can reach the reactor yet.
    raw->StartSendInitialMetadata();
    core_->Register(reactor);
    return raw;
  }

 private:
  ServerCore* const core_;
};

Status ValidateConfig(const ServerConfig& c) {
  if (c.max_streams < 1) return InvalidArgumentError("ServerConfig.max_streams must be >= 1");
  if (c.stream_buffer_samples < 1 || c.max_stream_buffer_samples < c.stream_buffer_samples) {
    return InvalidArgumentError(
        "ServerConfig.stream_buffer_samples must be >= 1 and <= max_stream_buffer_samples");
  }
  if (c.max_batch_samples < 1 || c.max_batch_samples > kMaxBatchSamples) {
    return InvalidArgumentError("ServerConfig.max_batch_samples must be 1..65536");
  }
  if (c.min_watch_interval.count() < 1) {
    return InvalidArgumentError("ServerConfig.min_watch_interval must be >= 1 ms");
  }
  if (c.poll_period < std::chrono::milliseconds(1) || c.poll_period > std::chrono::seconds(1)) {
    return InvalidArgumentError("ServerConfig.poll_period must be 1..1000 ms");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return InvalidArgumentError(
        "TLS needs both a certificate file and a key file (ServerConfig.tls_cert_file and "
        "tls_key_file, or --tls-cert and --tls-key)");
  }
  return Status::Ok();
}

// Moves the calling thread to SCHED_OTHER (nice unchanged) and, when given, onto `cpus`.
Status MakeHousekeepingThread(const std::vector<int>& cpus) {
  sched_param param{};
  param.sched_priority = 0;
  if (const int rc = pthread_setschedparam(pthread_self(), SCHED_OTHER, &param); rc != 0) {
    return ErrnoError(rc, "cannot switch the telemetry server's set-up thread to SCHED_OTHER");
  }
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int cpu : cpus) {
      if (cpu < 0 || cpu >= CPU_SETSIZE) {
        return InvalidArgumentError("ServerConfig.cpus: CPU " + std::to_string(cpu) +
                                    " is out of range");
      }
      CPU_SET(static_cast<std::size_t>(cpu), &set);
    }
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
      return ErrnoError(rc, "cannot pin the telemetry server's threads to the CPUs given",
                        "use online CPUs of this process' affinity");
    }
  }
  return Status::Ok();
}

}  // namespace

class Server::Impl {
 public:
  std::unique_ptr<ServerCore> core;
  std::unique_ptr<TelemetryService> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
  int port = 0;
  bool stopped = false;

  void Stop() {
    if (stopped) return;
    stopped = true;
    core->FinishAll(grpc::Status(grpc::StatusCode::UNAVAILABLE, kStopping));
    // Streams whose last write cannot complete (a stalled client) are cancelled at the deadline.
    server->Shutdown(std::chrono::system_clock::now() + core->config().stop_grace);
    if (!core->WaitIdle(std::chrono::seconds(5))) {
      std::fprintf(stderr, "rtloop telemetry: a stream handler did not end within 5 s of Stop()\n");
    }
    core->StopPump();
    server->Wait();
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

const std::string& Server::address() const noexcept { return impl_->address; }
int Server::port() const noexcept { return impl_->port; }
std::size_t Server::open_streams() const { return impl_->core->open_streams(); }

void Server::Stop() {
  if (impl_ != nullptr) impl_->Stop();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerConfig& config, TelemetryHub& hub,
                                              Collector& collector, const Executor* executor) {
  RTLOOP_RETURN_IF_ERROR(ValidateConfig(config));
  // The hub keeps no statistics of its own: they come from the executor.
  if (!hub.has_stats_source()) {
    if (executor == nullptr) {
      return FailedPreconditionError(
          "the telemetry hub has no stats source: call TelemetryHub::AttachExecutor(executor) or "
          "pass the executor to Server::Start (rtloop::Runtime does both)");
    }
    hub.AttachExecutor(*executor);
  }
  Result<internal::HostPort> hp = internal::ParseAddress(config.address);
  if (!hp.ok()) return hp.status();
  std::string token;
  if (!config.token_file.empty()) {
    Result<std::string> t = internal::ReadTokenFile(config.token_file);
    if (!t.ok()) return t.status();
    token = *t;
  }
  grpc::SslServerCredentialsOptions ssl;
  const bool tls = !config.tls_cert_file.empty();
  if (tls) {
    Result<std::string> cert = internal::ReadFileContent(config.tls_cert_file, "TLS certificate");
    if (!cert.ok()) return cert.status();
    Result<std::string> key = internal::ReadFileContent(config.tls_key_file, "TLS key");
    if (!key.ok()) return key.status();
    if (cert->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return InvalidArgumentError("TLS certificate \"" + config.tls_cert_file +
                                  "\" holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    if (key->find("PRIVATE KEY-----") == std::string::npos) {
      return InvalidArgumentError("TLS key \"" + config.tls_key_file +
                                  "\" holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
    }
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
  }

  auto impl = std::make_unique<Impl>();
  impl->core = std::make_unique<ServerCore>(config, token, hub, collector, executor);

  // Everything that touches gRPC runs on a SCHED_OTHER helper thread: the first gRPC call of the
  // process (credentials, service, builder) starts gRPC's own threads, and they, the server's
  // threads and the pump inherit the helper's scheduling and affinity, whatever the caller's.
  Status status;
  int selected_port = 0;
  std::thread builder_thread([&] {
    status = MakeHousekeepingThread(config.cpus);
    if (!status.ok()) return;
    std::shared_ptr<grpc::ServerCredentials> credentials =
        tls ? grpc::SslServerCredentials(ssl) : grpc::InsecureServerCredentials();
    impl->service = std::make_unique<TelemetryService>(impl->core.get());
    grpc::ServerBuilder builder;
    // Without this, gRPC sets SO_REUSEPORT and a second server on the same port would not fail.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Ping idle connections so a client that vanished without closing its socket (a board's
    // network cable pulled) frees its stream within ~15 s instead of TCP's minutes.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
    builder.AddListeningPort(config.address, credentials, &selected_port);
    builder.RegisterService(impl->service.get());
    impl->server = builder.BuildAndStart();
    if (impl->server != nullptr && selected_port != 0) impl->core->StartPump();
  });
  builder_thread.join();
  if (!status.ok()) return status;
  if (impl->server == nullptr || selected_port == 0) {
    if (impl->server != nullptr) impl->server->Shutdown();
    Status probe = internal::ProbeBind(*hp);
    if (!probe.ok()) return probe;
    if (tls) {
      return InvalidArgumentError("cannot serve TLS on " + config.address +
                                  ": gRPC rejected the certificate or key (are \"" +
                                  config.tls_cert_file + "\" and \"" + config.tls_key_file +
                                  "\" a matching PEM pair?)");
    }
    return Status(StatusCode::kUnavailable,
                  "cannot listen on " + config.address + " (gRPC gave no reason; see its log)");
  }
  impl->port = selected_port;
  impl->address = internal::FormatAddress(hp->host, selected_port);
  impl->core->set_address(impl->address);
  if (config.log_to_stderr) {
    std::fprintf(stderr, "rtloop telemetry: serving on %s (%s, %s)\n", impl->address.c_str(),
                 tls ? "TLS" : "plaintext", token.empty() ? "no token" : "bearer token");
  }
  {  // Exposure warnings are printed whatever log_to_stderr says.
    if (!internal::IsLoopbackHost(hp->host)) {
      if (token.empty()) {
        std::fprintf(stderr,
                     "rtloop telemetry: WARNING: %s is reachable from the network and no token is "
                     "set: anyone who reaches it can read this machine's telemetry; set a token "
                     "file (and TLS)\n",
                     impl->address.c_str());
      } else if (!tls) {
        std::fprintf(stderr,
                     "rtloop telemetry: WARNING: the token travels in plaintext on %s: add TLS\n",
                     impl->address.c_str());
      }
    }
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

}  // namespace rtloop::telemetry
