// rtloop::telemetry::Server: builds the grpc::Server around a ServerCore (server_core.h: streams,
// reactors, the service), restarts it when accepting connections failed, stops or finishes it.
// With server_core.cc and client.cc, the only translation units of rtloop that include gRPC's C++
// headers (each costs seconds to compile).
#include "rtloop/telemetry/server.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <utility>

#include "grpc_log.h"
#include "net_util.h"
#include "rate_limiter.h"
#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "server_core.h"
#include "service_fill.h"

namespace rtloop::telemetry {
namespace {

using internal::ServerCore;
using internal::SteadyClock;

constexpr char kStopping[] = "server stopping";
constexpr char kRestarting[] =
    "telemetry server restarting: accepting connections failed (the process ran out of file "
    "descriptors); reconnect";
// TLS files: a CA bundle of a whole distribution is ~200 KiB.
constexpr std::size_t kMaxTlsFileBytes = 1u << 20;

Status ValidateConfig(const ServerConfig& c) {
  if (c.max_streams < 1) return InvalidArgumentError("ServerConfig.max_streams must be >= 1");
  if (c.stream_buffer_samples < 1 || c.max_stream_buffer_samples < c.stream_buffer_samples) {
    return InvalidArgumentError(
        "ServerConfig.stream_buffer_samples must be >= 1 and <= max_stream_buffer_samples");
  }
  if (c.max_batch_samples < 1 || c.max_batch_samples > internal::kMaxBatchSamples) {
    return InvalidArgumentError("ServerConfig.max_batch_samples must be 1..65536");
  }
  if (c.min_watch_interval.count() < 1) {
    return InvalidArgumentError("ServerConfig.min_watch_interval must be >= 1 ms");
  }
  if (c.poll_period < std::chrono::milliseconds(1) || c.poll_period > std::chrono::seconds(1)) {
    return InvalidArgumentError("ServerConfig.poll_period must be 1..1000 ms");
  }
  if (c.stall_timeout.count() < 0) {
    return InvalidArgumentError("ServerConfig.stall_timeout must be >= 0 ms (0: never)");
  }
  if (c.handshake_timeout.count() < 1 || c.max_connection_idle.count() < 1 ||
      c.min_client_ping_interval.count() < 1) {
    return InvalidArgumentError(
        "ServerConfig.handshake_timeout, max_connection_idle and min_client_ping_interval must "
        "be >= 1 ms");
  }
  if (c.max_calls_per_connection < 1) {
    return InvalidArgumentError("ServerConfig.max_calls_per_connection must be >= 1");
  }
  if (Status s =
          internal::ValidateRateLimit({.rate = c.max_calls_per_second, .burst = c.max_calls_burst},
                                      "ServerConfig.max_calls_per_second", "max_calls_burst");
      !s.ok()) {
    return s;
  }
  if (c.memory_limit_bytes < (1u << 20)) {
    return InvalidArgumentError("ServerConfig.memory_limit_bytes must be >= 1 MiB");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return InvalidArgumentError(
        "TLS needs both a certificate file and a key file (ServerConfig.tls_cert_file and "
        "tls_key_file, or --tls-cert and --tls-key)");
  }
  return Status::Ok();
}

// More descriptors before gRPC ever sees EMFILE (it stops accepting for good then).
void RaiseFdLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Gives memory back to the system after bursts of connections. gRPC allocates per connection
// on its own threads; once a flood of connections is over, glibc keeps most of that memory in its
// arenas (a 24k connect/reset flood left ~450 MB resident, ~150 MB after malloc_trim). Every
// kTrimCheckPeriod the supervisor looks at the resident size: above what it was at Start() plus
// kTrimGrowthBytes it trims, and backs off (up to a minute) while trimming frees little, so a
// process that legitimately grew is left alone.
constexpr std::chrono::seconds kTrimCheckPeriod{5};
constexpr std::uint64_t kTrimGrowthBytes = 64u << 20;
constexpr std::uint64_t kTrimWorthBytes = 16u << 20;

class MemoryTrimmer {
 public:
  MemoryTrimmer() : floor_(ResidentBytes()) {}
  void Check() {
    const SteadyClock::time_point now = SteadyClock::now();
    const std::uint64_t resident = ResidentBytes();
    if (resident < floor_ + kTrimGrowthBytes) {
      backoff_ = kTrimCheckPeriod;
      return;
    }
    if (now < next_) return;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    const std::uint64_t after = ResidentBytes();
    backoff_ = resident - std::min(resident, after) >= kTrimWorthBytes
                   ? kTrimCheckPeriod
                   : std::min<std::chrono::seconds>(backoff_ * 2, std::chrono::seconds(60));
    next_ = now + backoff_;
  }

 private:
  static std::uint64_t ResidentBytes() {
    unsigned long long pages_total = 0;
    unsigned long long pages_resident = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "re");
    if (f == nullptr) return 0;
    const int n = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
    std::fclose(f);
    if (n != 2) return 0;
    return pages_resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  }
  const std::uint64_t floor_;
  std::chrono::seconds backoff_ = kTrimCheckPeriod;
  SteadyClock::time_point next_;
};

int Millis(std::chrono::milliseconds ms) {
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(ms.count(), INT32_MAX));
}

}  // namespace

class Server::Impl {
 public:
  ServerConfig config;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<ServerCore> core;
  std::string address;  // bound, with the chosen port
  int port = 0;
  std::atomic<std::uint64_t> restarts{0};

  ~Impl() { Stop(); }

  // Builds and starts a grpc::Server on `listen` (config.address at first, then the bound port).
  // On the calling thread, which must be a housekeeping thread; with mu_ held, or from Start()
  // before the supervisor exists. Returns the port, 0 on failure.
  int Build(const std::string& listen) {
    auto service = internal::MakeTelemetryService(core.get());
    grpc::ServerBuilder builder;
    // Without this, gRPC sets SO_REUSEPORT and a second server on the same port would not fail.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Ping idle connections so a client that vanished without closing its socket (a board's
    // network cable pulled) frees its stream within ~15 s instead of TCP's minutes.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
    // What one client can hold (server.h "What a client can hold").
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               Millis(config.handshake_timeout));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, Millis(config.max_connection_idle));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.max_calls_per_connection);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                               Millis(config.min_client_ping_interval));
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    grpc::ResourceQuota quota("rtloop-telemetry");
    quota.Resize(config.memory_limit_bytes);
    builder.SetResourceQuota(quota);
    int selected_port = 0;
    builder.AddListeningPort(listen, credentials, &selected_port);
    builder.RegisterService(service.get());
    std::unique_ptr<grpc::Server> built = builder.BuildAndStart();
    if (built == nullptr || selected_port == 0) {
      if (built != nullptr) built->Shutdown();
      return 0;
    }
    server_ = std::move(built);
    service_ = std::move(service);
    return selected_port;
  }

  // After Build(): watches for accept failures and restarts the server then.
  void StartSupervisor() {
    listener_id_ = internal::AddAcceptFailureListener([this](const std::string& /*message*/) {
      {
        std::lock_guard lock(flag_mu_);
        restart_requested_ = true;
      }
      flag_cv_.notify_all();
    });
    supervisor_ = std::thread([this] { Supervise(); });
  }

  void Finish() {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    core->EndAll(SteadyClock::now() + config.stop_grace);
    // Streams deliver their tail and final message; a stream that cannot take it (its client
    // reads nothing) is cancelled by StopLocked()'s Shutdown deadline.
    (void)core->WaitIdle(config.stop_grace + std::chrono::milliseconds(200));
    StopLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, kStopping),
               std::chrono::milliseconds(0));
  }

  void Stop() {
    std::lock_guard lock(mu_);
    StopLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, kStopping), config.stop_grace);
  }

 private:
  void StopLocked(const grpc::Status& status, std::chrono::milliseconds grace) {
    if (stopped_) return;
    stopped_ = true;
    if (listener_id_ != 0) internal::RemoveAcceptFailureListener(listener_id_);
    {
      std::lock_guard flags(flag_mu_);
      stop_requested_ = true;
    }
    flag_cv_.notify_all();
    if (supervisor_.joinable() && supervisor_.get_id() != std::this_thread::get_id()) {
      // The supervisor takes mu_ only with try_lock loops (see Supervise()): no deadlock here.
      supervisor_.join();
    }
    ShutdownServer(status, grace);
    core->StopPump();
  }

  // Ends every stream with `status`, shuts the grpc::Server down (cancelling what did not end
  // within `grace`) and waits for it. Under mu_.
  void ShutdownServer(const grpc::Status& status, std::chrono::milliseconds grace) {
    core->FinishAll(status);
    if (server_ != nullptr) {
      // Streams whose last write cannot complete (a stalled client) are cancelled at the deadline.
      server_->Shutdown(std::chrono::system_clock::now() + grace);
      if (!core->WaitIdle(std::chrono::seconds(5))) {
        std::fprintf(stderr,
                     "rtloop telemetry: a stream handler did not end within 5 s of stopping\n");
      }
      server_->Wait();
      server_.reset();
    }
    service_.reset();
  }

  void Supervise() {
    pthread_setname_np(pthread_self(), "rtloop-grpc-sup");
    MemoryTrimmer trimmer;
    for (;;) {
      {
        std::unique_lock flags(flag_mu_);
        const bool woken = flag_cv_.wait_for(
            flags, kTrimCheckPeriod, [this] { return restart_requested_ || stop_requested_; });
        if (stop_requested_) return;
        if (!woken) {
          flags.unlock();
          if (config.trim_memory) trimmer.Check();
          continue;
        }
        restart_requested_ = false;
      }
      Restart();
    }
  }

  // Called on the supervisor thread. Stop() may want mu_ meanwhile: it sets stop_requested_
  // first, and every wait here checks it.
  void Restart() {
    // Rebuilding needs descriptors (epoll, the listening socket, ...): wait until some are free
    // (connections that never handshake are closed after handshake_timeout), then restart.
    while (!DescriptorsFree()) {
      std::unique_lock flags(flag_mu_);
      if (flag_cv_.wait_for(flags, std::chrono::milliseconds(100),
                            [this] { return stop_requested_; })) {
        return;
      }
    }
    std::unique_lock lock(mu_, std::defer_lock);
    while (!lock.try_lock()) {
      if (StopRequested()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (stopped_) return;
    if (config.log_to_stderr) {
      std::fprintf(stderr,
                   "rtloop telemetry: accepting connections on %s failed (%s); restarting the "
                   "server there\n",
                   address.c_str(), internal::LastGrpcError().c_str());
    }
    ShutdownServer(grpc::Status(grpc::StatusCode::UNAVAILABLE, kRestarting),
                   std::chrono::milliseconds(100));
    core->Resume();
    // Descriptors may still be short: retry until the port is served again or Stop() is called.
    for (int attempt = 0; !StopRequested(); ++attempt) {
      if (Build(address) != 0) {
        restarts.fetch_add(1, std::memory_order_relaxed);
        if (config.log_to_stderr) {
          std::fprintf(stderr, "rtloop telemetry: serving on %s again\n", address.c_str());
        }
        return;
      }
      if (attempt == 0 && config.log_to_stderr) {
        std::fprintf(stderr,
                     "rtloop telemetry: cannot listen on %s yet (%s); retrying every 0.5 s\n",
                     address.c_str(), internal::LastGrpcError().c_str());
      }
      lock.unlock();
      {
        std::unique_lock flags(flag_mu_);
        flag_cv_.wait_for(flags, std::chrono::milliseconds(500),
                          [this] { return stop_requested_; });
      }
      while (!lock.try_lock()) {
        if (StopRequested()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (stopped_) return;
    }
  }

  // True when a few descriptors can be opened now.
  static bool DescriptorsFree() {
    constexpr int kNeeded = 16;
    int fds[kNeeded];
    int opened = 0;
    while (opened < kNeeded) {
      fds[opened] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fds[opened] < 0) break;
      ++opened;
    }
    for (int i = 0; i < opened; ++i) ::close(fds[i]);
    return opened == kNeeded;
  }

  bool StopRequested() {
    std::lock_guard flags(flag_mu_);
    return stop_requested_;
  }

  std::mutex mu_;  // the grpc::Server's life: Build (after Start), Restart, Finish, Stop
  std::unique_ptr<grpc::Service> service_;  // guarded by mu_; outlives server_
  std::unique_ptr<grpc::Server> server_;    // guarded by mu_
  bool stopped_ = false;                    // guarded by mu_
  int listener_id_ = 0;
  std::mutex flag_mu_;
  std::condition_variable flag_cv_;
  bool restart_requested_ = false;  // guarded by flag_mu_
  bool stop_requested_ = false;     // guarded by flag_mu_
  std::thread supervisor_;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

const std::string& Server::address() const noexcept { return impl_->address; }
int Server::port() const noexcept { return impl_->port; }
std::size_t Server::open_streams() const { return impl_->core->open_streams(); }
std::uint64_t Server::stalled_streams_cancelled() const {
  return impl_->core->stalled_streams_cancelled();
}
std::uint64_t Server::restarts() const { return impl_->restarts.load(std::memory_order_relaxed); }

void Server::Finish() {
  if (impl_ != nullptr) impl_->Finish();
}

void Server::Stop() {
  if (impl_ != nullptr) impl_->Stop();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerConfig& config, TelemetryHub& hub,
                                              Collector& collector, Executor* executor,
                                              const explain::OutlierFeed* outliers) {
  RTLOOP_RETURN_IF_ERROR(ValidateConfig(config));
  // The hub keeps no statistics of its own: they come from the executor.
  if (!hub.has_stats()) {
    if (executor == nullptr) {
      return FailedPreconditionError(
          "the telemetry hub has no task statistics: call TelemetryHub::AttachStats(executor) or "
          "pass the executor to Server::Start (rtloop::Runtime does both)");
    }
    hub.AttachStats(*executor);
  }
  Result<internal::HostPort> hp =
      internal::ParseAddress(config.address, internal::AddressRole::kListen);
  if (!hp.ok()) return hp.status();
  // gRPC gets the parsed address: ":PORT" is loopback here, where gRPC would take every interface.
  const std::string listen = internal::FormatAddress(hp->host, hp->port);
  std::string token;
  if (!config.token_file.empty()) {
    Result<std::string> t = ReadTokenFile(config.token_file);
    if (!t.ok()) return t.status();
    token = *t;
  }
  grpc::SslServerCredentialsOptions ssl;
  const bool tls = !config.tls_cert_file.empty();
  if (tls) {
    Result<std::string> cert = ReadInputFile(
        config.tls_cert_file, {.what = "TLS certificate", .max_bytes = kMaxTlsFileBytes});
    if (!cert.ok()) return cert.status();
    Result<std::string> key =
        ReadInputFile(config.tls_key_file, {.what = "TLS key", .max_bytes = kMaxTlsFileBytes});
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
  internal::SetUpGrpcLogging();
  if (config.raise_fd_limit) RaiseFdLimit();

  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->core = std::make_unique<ServerCore>(config, token, hub, collector, executor, outliers);

  // Everything that touches gRPC runs on a SCHED_OTHER helper thread: the first gRPC call of the
  // process (credentials, service, builder) starts gRPC's own threads, and they, the server's
  // threads, the pump and the supervisor inherit the helper's scheduling and affinity, whatever
  // the caller's.
  Status status;
  int selected_port = 0;
  std::thread builder_thread([&] {
    status = internal::MakeHousekeepingThread(config.cpus, "ServerConfig.cpus");
    if (!status.ok()) return;
    impl->credentials = tls ? grpc::SslServerCredentials(ssl) : grpc::InsecureServerCredentials();
    selected_port = impl->Build(listen);
    if (selected_port != 0) {
      impl->port = selected_port;
      impl->address = internal::FormatAddress(hp->host, selected_port);
      impl->core->set_address(impl->address);
      impl->core->StartPump();
      impl->StartSupervisor();
    }
  });
  builder_thread.join();
  if (!status.ok()) return status;
  if (selected_port == 0) {
    Status probe = internal::ProbeBind(*hp);
    if (!probe.ok()) return probe;
    if (tls) {
      return InvalidArgumentError(
          "cannot serve TLS on " + listen + ": gRPC rejected the certificate or key (are \"" +
          config.tls_cert_file + "\" and \"" + config.tls_key_file + "\" a matching PEM pair?)");
    }
    const std::string why = internal::LastGrpcError();
    return Status(StatusCode::kUnavailable, "cannot listen on " + listen +
                                                (why.empty() ? std::string(" (gRPC gave no reason)")
                                                             : " (gRPC: " + why + ")"));
  }
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
