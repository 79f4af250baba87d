// HttpServer: rtloop's HTTP endpoint for fleet monitoring. Prometheus's text format at /metrics,
// a live web page for one board at / (task-monitor table, latency histograms, max/p99 per second;
// charts by Debian's dygraphs, embedded in the binary: the page works offline), and the page's
// JSON feed under /api/v1/. Built on Debian's civetweb (HTTP) and prometheus-cpp (its
// TextSerializer writes the exposition); telemetry/export/src/http/README.md lists every metric.
//
//   rtloop::telemetry::HttpConfig hc;                     // 127.0.0.1:9101, no token
//   hc.address = "127.0.0.1:0";                           // port 0: the kernel picks one
//   rtloop::Result<std::unique_ptr<rtloop::telemetry::HttpServer>> http =
//       rtloop::telemetry::HttpServer::Start(hc, hub, {.executor = executor.get(),
//                                                      .collector = &collector});
//   if (!http.ok()) return Fail(http.status());           // port in use, bad address, token file
//   std::printf("metrics on http://%s/metrics\n", (*http)->address().c_str());
//   ...
//   (*http)->Stop();
//
// Nothing runs on an RT thread. Everything a scrape reports is read at scrape time from what the
// RT threads already keep: the executor's counters (relaxed loads) and, for histograms and
// percentiles, the WindowedStats' readings of the hub's HDR histograms, taken once per tick
// (1 s) on a housekeeping thread whatever the number of scrapers. So histogram series and
// percentile gauges are as of the last tick (<= 1 s old) while counters are live.
//
// Exposure: the same rules as the gRPC server. Loopback unless another address is named; a
// non-loopback address without a token prints a warning. With a token file, /metrics and
// /api/* need "Authorization: Bearer <token>" (constant-time compare; 401 otherwise). The page's
// static files (/, /app.js, /dygraph.min.js, /dygraph.min.css) carry no data and are served
// without it; the page asks for the token and sends it on its requests (open it as
// http://board:9101/#token=TOKEN, the fragment never leaves the browser).
// TLS: not available. Debian 12's civetweb 1.15 loads OpenSSL at run time under names OpenSSL 3
// no longer exports (SSL_get_peer_certificate): its HTTPS crashes on the first connection
// (checked on this distribution), so Start() refuses tls_cert_file/tls_key_file with that reason.
// Put a TLS-terminating proxy in front, or use the gRPC API's TLS, when the network is untrusted.
//
// Limits: civetweb serves one request per connection (no keep-alive) on `threads` worker
// threads; further connections wait in its queue (`queue` of them; beyond, the kernel's listen
// backlog). A client that sends or reads nothing is dropped after `request_timeout`. Requests
// beyond `max_in_flight` at once get 503 with Retry-After (the page's static files are not
// counted). A scrape of 64 tasks costs ~4-5 ms of CPU on the reference VM, most of it in
// prometheus-cpp's text serializer (bench/http/README.md).
//
// Threads: civetweb's threads and the WindowedStats thread (when the server owns one) are created
// from a helper thread that Start() switches to SCHED_OTHER and, when `cpus` is set, onto those
// CPUs; otherwise they inherit the caller's affinity. Never call Start() from an RT-pinned thread
// without setting `cpus`.
//
// Threading: Start(), Stop() and the destructor are for one controlling thread; the accessors
// for any thread. Not RT-safe: everything here allocates, locks and does I/O.
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

class Collector;
class TelemetryHub;
class WindowedStats;

struct HttpConfig {
  // IPv4 HOST:PORT to listen on; ":PORT" is 127.0.0.1:PORT. Port 0 picks a free port (see
  // HttpServer::address()). A non-loopback host exposes telemetry to the network: set a token.
  std::string address = "127.0.0.1:9101";
  // File holding the bearer token that /metrics and /api/* need; empty: no authentication.
  std::string token_file = {};
  // TLS: refused with the reason above (kept so a config can say what it wants).
  std::string tls_cert_file = {};
  std::string tls_key_file = {};
  // civetweb worker threads: connections served at once. 1..64.
  std::size_t threads = 4;
  // Accepted connections waiting for a worker. 1..1024.
  std::size_t queue = 64;
  // Requests handled at once beyond which a request gets 503 (Retry-After: 1). 1..threads.
  std::size_t max_in_flight = 4;
  // A connection that has not sent its request, or not taken its response, within this is
  // closed. 100 ms..60 s.
  std::chrono::milliseconds request_timeout{5000};
  // Data requests (/metrics, /api/v1/tasks, with or without the right token) one client address
  // may make per second on average, at most max_requests_burst at once; beyond: 429 with
  // Retry-After: 1 (rtloop_http_requests_total{code="429"}). Prometheus scrapes once a second and
  // the page polls once a second; behind a proxy every client shares its address: raise the rate
  // there. The page's files are not counted. 0: no limit; else 0.1..1e6, burst 1..1e6.
  double max_requests_per_second = 20;
  double max_requests_burst = 40;
  // The sliding window of the *_max_seconds / *_quantile_seconds gauges (window="10s") and the
  // per-second history the page charts. Used when the server owns its WindowedStats.
  std::chrono::seconds window{10};
  std::chrono::seconds history{300};
  // CPUs for the server's threads; empty: the caller's affinity.
  std::vector<int> cpus = {};
  // Print "serving on ADDR" to stderr. Exposure warnings are printed in any case.
  bool log_to_stderr = true;
};

// What the endpoint reads besides the hub; all optional, all must outlive the server.
struct HttpSources {
  // Effective scheduling (after an RT fallback) for the policy/priority labels and
  // rtloop_task_rt_fallback; without it the labels show the configured policy.
  const Executor* executor = nullptr;
  // rtloop_task_subscriber_lost_samples_total; without it that series is left out.
  const Collector* collector = nullptr;
  // Readings of the hub's histograms, ticking; without it the server creates and runs its own
  // (window and history from HttpConfig).
  const WindowedStats* windows = nullptr;
  // The outlier records (Runtime::outlier_feed()): /metrics gets the per-task outlier counts by
  // leading cause and the analysis's cost, the page its "Why the last cycles were late" panel.
  // Without it, or while the feed explains no task, there are no outlier series and the page says
  // "not explained".
  const explain::OutlierFeed* outliers = nullptr;
};

// Checks an HTTP address (IPv4 HOST:PORT or :PORT, port 0..65535) without binding it: the same
// check Start() makes first, for validating a command line. InvalidArgument with the expected
// form (IPv6 is refused: Debian's civetweb is built without it).
Status CheckHttpAddress(std::string_view address);

class HttpServer {
 public:
  // Validates the config, reads the token file, binds and starts serving. `hub` (and the
  // sources) must outlive the server. Errors say what failed and how to fix it: a bad address,
  // a port in use, an unreadable or invalid token file, TLS asked for, bad limits.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpConfig& config,
                                                   const TelemetryHub& hub,
                                                   const HttpSources& sources = {});

  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The address actually bound, with the chosen port ("127.0.0.1:41235").
  const std::string& address() const noexcept;
  int port() const noexcept;
  // Requests being handled now, and handled so far (every path and outcome).
  std::size_t in_flight() const noexcept;
  std::uint64_t requests() const noexcept;

  // The /metrics body as a scrape would return it now. Not RT-safe.
  std::string RenderMetrics() const;

  // Stops accepting, waits for the requests in progress (each bounded by request_timeout) and
  // joins civetweb's threads. Idempotent.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtloop::telemetry
