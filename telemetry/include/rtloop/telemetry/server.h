// Server: the gRPC service rtloop.telemetry.v1.Telemetry (proto/rtloop/telemetry/v1/
// telemetry.proto) over a TelemetryHub (task statistics and histograms) and a Collector (sample
// streams), on gRPC's callback API.
//
//   rtloop::telemetry::ServerConfig sc;                 // 127.0.0.1:50051, no token, no TLS
//   sc.address = "127.0.0.1:0";                         // port 0: the kernel picks a free port
//   rtloop::Result<std::unique_ptr<rtloop::telemetry::Server>> server =
//       rtloop::telemetry::Server::Start(sc, hub, collector, executor.get());
//   if (!server.ok()) return Fail(server.status());     // port in use, bad TLS file, ...
//   std::printf("telemetry on %s\n", (*server)->address().c_str());
//   ...
//   (*server)->Stop();                                  // open streams end with UNAVAILABLE
//
// Safety: the server only reads. It binds loopback unless another address is named; on a
// non-loopback address without a token it prints a warning. With a token file, every call must
// carry "authorization: Bearer <token>" (compared in constant time) or fails with UNAUTHENTICATED.
// Each stream has its own bounded drop-oldest queue (a Collector Subscription): a slow or stalled
// client loses its own oldest samples (reported in the stream as lost_before) and never slows an
// RT task or another client. Beyond max_streams concurrent streams, calls fail with
// RESOURCE_EXHAUSTED.
//
// Threads: gRPC's threads and the server's pump thread are created from a helper thread that
// Start() switches to SCHED_OTHER (nice unchanged) and, when `cpus` is set, to those CPUs; else
// they inherit the caller's affinity (gRPC threads inherit the affinity of the thread that creates
// them). Never call Start() from an RT-pinned thread without setting `cpus`. Note that gRPC may
// also create threads from the first thread that uses gRPC in the process (e.g. a Client created
// earlier).
//
// Threading: Start(), Stop() and the destructor are for one controlling thread; address() and
// port() any thread. Not RT-safe: everything here allocates, locks and does I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop {
class Executor;
}  // namespace rtloop

namespace rtloop::telemetry {

class TelemetryHub;
class Collector;

struct ServerConfig {
  // HOST:PORT to listen on. Port 0 picks a free port (see Server::address()). A non-loopback host
  // (0.0.0.0, a LAN address) exposes telemetry to the network: set a token (and TLS) then.
  std::string address = "127.0.0.1:50051";
  // File holding the bearer token clients must send; empty: no authentication.
  std::string token_file;
  // PEM certificate chain and private key: serve TLS. Both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Concurrent streams (WatchStats + StreamSamples) at most; RESOURCE_EXHAUSTED beyond. >= 1.
  std::size_t max_streams = 16;
  // Samples each StreamSamples client may have queued before its oldest are dropped, unless its
  // request asks for another size (StreamSamplesRequest.buffer_samples). >= 1.
  std::size_t stream_buffer_samples = 1 << 16;
  // The largest buffer_samples a request may ask for. >= stream_buffer_samples. Buffers are
  // allocated when the stream opens (32 bytes a sample), so this bounds what unauthenticated
  // clients can make the process allocate: 8 MiB a stream, 128 MiB at max_streams, by default.
  std::size_t max_stream_buffer_samples = 1 << 18;
  // Samples per StreamSamples message unless the request asks for fewer. 1..65536.
  std::size_t max_batch_samples = 4096;
  // Shortest WatchStats interval accepted; shorter requests are INVALID_ARGUMENT.
  std::chrono::milliseconds min_watch_interval{10};
  // How often the server's pump thread looks at streams that have nothing in flight (new samples,
  // due WatchStats snapshots). Streams that keep writing are driven by their write completions;
  // this bounds the delivery delay of an idle stream. Every wake-up of a telemetry thread on a CPU
  // that also runs RT tasks costs them latency (measured: bench/cyclic/README.md), so keep it
  // coarse there. 1..1000 ms.
  std::chrono::milliseconds poll_period{10};
  // How long Stop() lets open streams flush their last message before cancelling them.
  std::chrono::milliseconds stop_grace{300};
  // CPUs for the server's threads; empty: the caller's affinity.
  std::vector<int> cpus;
  // Print "serving on ADDR" to stderr. Warnings about exposure (a non-loopback address without a
  // token, or a token without TLS) are printed in any case.
  bool log_to_stderr = true;
};

class Server {
 public:
  // Validates the config, reads the token and TLS files, binds and starts serving. `hub` and
  // `collector` (and `executor`, optional: effective scheduling after a fallback) must outlive the
  // server. A hub without a stats source is attached to `executor`; with neither, Start() fails
  // (FailedPrecondition). Errors say what failed and how to fix it: bad address, port in use,
  // unreadable or invalid TLS/token file, bad limits.
  static Result<std::unique_ptr<Server>> Start(const ServerConfig& config, TelemetryHub& hub,
                                               Collector& collector,
                                               const Executor* executor = nullptr);

  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The address actually bound, with the chosen port ("127.0.0.1:41235").
  const std::string& address() const noexcept;
  int port() const noexcept;
  // Streams open now.
  std::size_t open_streams() const;

  // Ends every open stream with UNAVAILABLE ("server stopping"; within stop_grace plus a little),
  // stops accepting calls and returns once no handler runs any more. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtloop::telemetry
