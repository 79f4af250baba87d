// Server: the gRPC service rtloop.telemetry.v1.Telemetry (proto/rtloop/telemetry/v1/
// telemetry.proto) over a TelemetryHub (task statistics and histograms) and a Collector (sample
// streams), on gRPC's callback API.
//
//   rtloop::telemetry::ServerConfig sc;                 // 127.0.0.1:50051, no token, no TLS
//   sc.address = "127.0.0.1:0";                         // port 0: the kernel picks a free port
//   rtloop::Result<std::unique_ptr<rtloop::telemetry::Server>> server =
//       rtloop::telemetry::Server::Start(sc, hub, collector, executor.get(),
//                                        &runtime_feed);  // optional: outlier records
//   if (!server.ok()) return Fail(server.status());     // port in use, bad TLS file, ...
//   std::printf("telemetry on %s\n", (*server)->address().c_str());
//   ...
//   ... executor->Stop(); collector.Stop();           // the run ended, the rings are drained
//   (*server)->Finish();                                // streams get the tail, a final message
//                                                       // (last seq per task) and OK
//   // or (*server)->Stop();                            // abort: streams end with UNAVAILABLE
//
// Safety: the server only reads. It binds loopback unless another address is named; on a
// non-loopback address without a token it prints a warning. With a token file, every call must
// carry exactly one "authorization: Bearer <token>" value (the token compared in constant time) or
// fails with UNAUTHENTICATED. Each stream has its own bounded drop-oldest queue (a Collector
// Subscription): a slow client loses its own oldest samples (reported in the stream as
// lost_before) and never slows an RT task or another client. Beyond max_streams concurrent
// streams, calls fail with RESOURCE_EXHAUSTED.
//
// What a client can hold: a stream whose write has not completed for stall_timeout (its client
// reads nothing) is cancelled and its slot freed; a connection that does not finish its handshake
// within handshake_timeout, or carries no call for max_connection_idle, is closed; a connection
// carries at most max_calls_per_connection calls at once; a client pinging more often than
// min_client_ping_interval without calls is sent away (GOAWAY too_many_pings); gRPC's memory for
// connections is bounded by memory_limit_bytes (beyond it new connections are closed at once); a
// client address starts at most max_calls_per_second calls per second (bursts of
// max_calls_burst), beyond which calls fail with RESOURCE_EXHAUSTED.
// gRPC 1.51 has no limit on the number of connections: their number, and so the memory they take
// at the peak of a flood, is bounded by the descriptor limit and handshake_timeout; afterwards the
// freed memory is given back (trim_memory).
//
// Descriptors: gRPC 1.51 stops accepting on a port for good once accept() fails (EMFILE: the
// process ran out of file descriptors). The server raises RLIMIT_NOFILE's soft limit to the hard
// limit at Start() (raise_fd_limit), and when accepting fails anyway it restarts its gRPC server
// on the same port (open streams end with UNAVAILABLE, clients reconnect), retrying until
// descriptors are free again. gRPC's own log lines stay off stderr unless RTLOOP_GRPC_VERBOSE=1
// (or GRPC_VERBOSITY/GRPC_TRACE) is set in the environment; rtloop then also sets gRPC's log
// function for the whole process.
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
#include <string_view>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop {
class Executor;
}  // namespace rtloop

namespace rtloop::explain {
class OutlierFeed;
}  // namespace rtloop::explain

namespace rtloop::telemetry {

class TelemetryHub;
class Collector;

struct ServerConfig {
  // HOST:PORT to listen on; ":PORT" is 127.0.0.1:PORT. Port 0 picks a free port (see
  // Server::address()). A non-loopback host (0.0.0.0, a LAN address) exposes telemetry to the
  // network: set a token (and TLS) then.
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
  // How often the server's pump thread looks for streams whose write is stuck (stall_timeout
  // below). Nothing else polls: a sample stream writes when the collector's drain pass queued
  // samples for it and when its previous write completed, a WatchStats stream when its next
  // snapshot is due, so a server without open streams, or with streams that have nothing to send,
  // does not wake. (Every wake-up of a telemetry thread on a CPU that also runs RT tasks costs
  // them latency: bench/cyclic/telemetry_cost.py measures it.) 1..1000 ms.
  std::chrono::milliseconds poll_period{1000};
  // How long Stop() lets open streams flush their last message before cancelling them, and how
  // long Finish() lets them deliver what is queued (the rest then counts as lost).
  std::chrono::milliseconds stop_grace{300};
  // A stream whose write has been in flight this long (its client reads nothing, the transport's
  // windows are full) is cancelled: the client sees CANCELLED, its slot is free for the next one,
  // GetStats counts it (stalled_streams_cancelled). 0: never.
  std::chrono::milliseconds stall_timeout{30'000};
  // A connection that has not finished its HTTP/2 (and TLS) handshake after this is closed. > 0.
  std::chrono::milliseconds handshake_timeout{5'000};
  // A connection that carries no call for this long is closed (gRPC clients reconnect by
  // themselves). > 0.
  std::chrono::milliseconds max_connection_idle{60'000};
  // Calls open at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). >= 1.
  int max_calls_per_connection = 64;
  // Clients that ping more often than this without a call get GOAWAY after 2 strikes. > 0.
  std::chrono::milliseconds min_client_ping_interval{10'000};
  // Calls one client address may start per second on average (every RPC; opening a stream is
  // one), at most max_calls_burst at once; beyond, a call fails with RESOURCE_EXHAUSTED until
  // the client's budget refills (GetStatsResponse.calls_rate_limited counts them). Checked before
  // the token, so token guessing is bounded too. Behind a proxy all its clients share its
  // address: raise the rate there. 0: no limit; else 0.1..1e6, burst 1..1e6.
  double max_calls_per_second = 100;
  double max_calls_burst = 200;
  // Memory gRPC may use for this server's connections and calls (a grpc::ResourceQuota); under
  // pressure gRPC closes new connections at once. >= 1 MiB.
  std::size_t memory_limit_bytes = 64u << 20;
  // Raise RLIMIT_NOFILE's soft limit to the hard limit at Start() (see "Descriptors" above). Keep
  // false in a process that uses select() with descriptors of its own.
  bool raise_fd_limit = true;
  // Every 5 s, when the process' resident memory is 64 MiB above what it was at Start(), give
  // freed heap memory back to the system (glibc's malloc_trim; backing off to once a minute while
  // that frees little): after a flood of connections gRPC's freed per-connection memory otherwise
  // stays resident. Process-wide; false: never.
  bool trim_memory = true;
  // CPUs for the server's threads; empty: the caller's affinity.
  std::vector<int> cpus;
  // Print "serving on ADDR" to stderr. Warnings about exposure (a non-loopback address without a
  // token, or a token without TLS) are printed in any case.
  bool log_to_stderr = true;
};

// Checks a server address (HOST:PORT or :PORT, port 0..65535) without binding it: the same check
// Start() makes first, for validating a command line. InvalidArgument with the expected form.
Status CheckServerAddress(std::string_view address);

class Server {
 public:
  // Validates the config, reads the token and TLS files (input_file.h: bounded, never blocking),
  // binds and starts serving. `hub` and
  // `collector` (and `executor`, optional: effective scheduling after a fallback, and the target
  // of the ResetStats call, which without it answers FAILED_PRECONDITION) must outlive the
  // server. A hub without task statistics is attached to `executor`; with neither, Start() fails
  // (FailedPrecondition). Errors say what failed and how to fix it: bad address, port in use,
  // unreadable or invalid TLS/token file, bad limits. `outliers` (optional; it must outlive the
  // server) is what ListOutliers and TaskStats.outliers show (Runtime::outlier_feed()); without
  // it ListOutliers answers explaining = false and no task has outlier counts.
  static Result<std::unique_ptr<Server>> Start(const ServerConfig& config, TelemetryHub& hub,
                                               Collector& collector, Executor* executor = nullptr,
                                               const explain::OutlierFeed* outliers = nullptr);

  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The address actually bound, with the chosen port ("127.0.0.1:41235").
  const std::string& address() const noexcept;
  int port() const noexcept;
  // Streams open now.
  std::size_t open_streams() const;
  // Streams cancelled so far because their client read nothing for stall_timeout.
  std::uint64_t stalled_streams_cancelled() const;
  // How often the server restarted after accepting connections failed (descriptors ran out).
  std::uint64_t restarts() const;

  // The normal end of a run; call once the tasks stopped and the collector drained the rings
  // (Collector::Stop()). Every open stream first sends what is queued for it (within stop_grace;
  // what is still queued then counts as lost), then a final message with StreamEnd (the run
  // ended; per task the last seq and what the stream sent and lost), then ends with OK. New
  // streams are refused with UNAVAILABLE meanwhile. Then stops as Stop() does. Idempotent.
  void Finish();
  // Ends every open stream with UNAVAILABLE ("server stopping"; within stop_grace plus a little),
  // stops accepting calls and returns once no handler runs any more. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtloop::telemetry
