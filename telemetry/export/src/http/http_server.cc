#include "rtloop/telemetry/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "http_request.h"
#include "metrics.h"
#include "net_util.h"
#include "page_json.h"
#include "rate_limiter.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "web_assets.h"

namespace rtloop::telemetry {
namespace {

constexpr const char* kLogPrefix = "rtloop http";

std::int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

Status ValidateConfig(const HttpConfig& c) {
  using std::chrono::milliseconds;
  if (!c.tls_cert_file.empty() || !c.tls_key_file.empty()) {
    return InvalidArgumentError(
        "HttpConfig.tls_cert_file/tls_key_file: TLS is not available for the HTTP endpoint: "
        "Debian 12's civetweb 1.15 cannot use OpenSSL 3 (it looks up SSL_get_peer_certificate, "
        "which OpenSSL 3 no longer exports, and crashes on the first HTTPS connection); serve on "
        "loopback, put a TLS proxy in front, or use the gRPC API's TLS");
  }
  if (c.threads < 1 || c.threads > 64) {
    return InvalidArgumentError("HttpConfig.threads must be 1..64, not " +
                                std::to_string(c.threads));
  }
  if (c.queue < 1 || c.queue > 1024) {
    return InvalidArgumentError("HttpConfig.queue must be 1..1024, not " + std::to_string(c.queue));
  }
  if (c.max_in_flight < 1 || c.max_in_flight > c.threads) {
    return InvalidArgumentError("HttpConfig.max_in_flight must be 1..threads (" +
                                std::to_string(c.threads) + "), not " +
                                std::to_string(c.max_in_flight));
  }
  if (Status s = internal::ValidateRateLimit(
          {.rate = c.max_requests_per_second, .burst = c.max_requests_burst},
          "HttpConfig.max_requests_per_second", "max_requests_burst");
      !s.ok()) {
    return s;
  }
  if (c.request_timeout < milliseconds(100) || c.request_timeout > milliseconds(60'000)) {
    return InvalidArgumentError("HttpConfig.request_timeout must be 100 ms .. 60 s, not " +
                                std::to_string(c.request_timeout.count()) + " ms");
  }
  return WindowedStats::Validate({.window = c.window, .history = c.history});
}

const char* ReasonPhrase(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Internal Server Error";
  }
}

// Marks a connection whose request was answered (civetweb resets it for each connection).
char g_answered_mark;

// Answers with `code`, `type` and `body` (HEAD: headers only), in one write, with our own status
// line whatever civetweb thinks the connection is (it writes no status line on a connection it
// took for a WebSocket upgrade). One write: civetweb stops writing once mg_stop() set its flag,
// and a reply written in two parts could then lose its body after its headers. Returns the code.
int Send(mg_connection* conn, int code, std::string_view type, std::string_view body,
         const char* extra_headers = "") {
  std::string reply = "HTTP/1.1 " + std::to_string(code) + " " + ReasonPhrase(code) +
                      "\r\nContent-Type: " + std::string(type) +
                      "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n" +
                      extra_headers + "Connection: close\r\n\r\n";
  const mg_request_info* ri = mg_get_request_info(conn);
  if (ri == nullptr || ri->request_method == nullptr ||
      std::string_view(ri->request_method) != "HEAD") {
    reply += body;
  }
  mg_set_user_connection_data(conn, &g_answered_mark);
  // A client that does not read makes this wait up to request_timeout, then fail: fine, the
  // worker is released either way.
  mg_write(conn, reply.data(), reply.size());
  return code;
}

// What the router sees of a request. `path`: the decoded local path, or, for a request civetweb
// did not map to one ("OPTIONS *", an absolute URI for another server), the target as sent.
internal::HttpRequestView ViewOf(const mg_request_info* ri) {
  internal::HttpRequestView view{.method = ri->request_method != nullptr ? ri->request_method : "",
                                 .path = ri->local_uri != nullptr     ? ri->local_uri
                                         : ri->request_uri != nullptr ? ri->request_uri
                                                                      : ""};
  for (int i = 0; i < ri->num_headers; ++i) {
    const mg_header& h = ri->http_headers[i];
    if (h.name == nullptr || strcasecmp(h.name, "Authorization") != 0) continue;
    if (view.authorization != nullptr) view.repeated_authorization = true;
    if (view.authorization == nullptr) view.authorization = h.value != nullptr ? h.value : "";
  }
  return view;
}

}  // namespace

class HttpServer::Impl {
 public:
  HttpConfig config;
  const TelemetryHub* hub = nullptr;
  HttpSources sources;
  std::unique_ptr<WindowedStats> own_windows;
  std::string token;
  std::string address;
  std::string host;
  int port = 0;
  mg_context* ctx = nullptr;
  internal::HttpCounters counters;
  std::atomic<std::size_t> in_flight{0};
  std::atomic<std::uint64_t> requests{0};
  std::unique_ptr<internal::RateLimiter> rate_limiter;  // set before mg_start
  // Stop() lets the requests being answered (`active`, every route) finish before mg_stop(),
  // which cuts replies short; requests that come after it began get 503.
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> active{0};
  std::mutex stop_mu;

  internal::MetricsInput Input() const {
    return {.hub = hub,
            .windows = sources.windows,
            .executor = sources.executor,
            .collector = sources.collector,
            .http = &counters,
            .outliers = sources.outliers};
  }

  // Sends a reply and counts it (rtloop_http_requests_total, requests()): every reply goes
  // through here, so what clients get and what is counted cannot differ.
  int Reply(mg_connection* conn, int code, std::string_view type, std::string_view body,
            const char* extra_headers = "") {
    code = internal::KnownHttpStatus(code);
    requests.fetch_add(1, std::memory_order_relaxed);
    counters.Count(code);
    return Send(conn, code, type, body, extra_headers);
  }
  int ReplyText(mg_connection* conn, int code, std::string_view text,
                const char* extra_headers = "") {
    return Reply(conn, code, "text/plain; charset=utf-8", text, extra_headers);
  }

  int Handle(mg_connection* conn) {
    active.fetch_add(1);  // seq_cst with `stopping`: Stop() either waits for this or it sees 503
    struct Done {
      std::atomic<std::size_t>& active;
      ~Done() { active.fetch_sub(1); }
    } done{active};
    if (stopping.load()) return ReplyText(conn, 503, "the server is stopping\n");
    const mg_request_info* ri = mg_get_request_info(conn);
    const internal::HttpDecision d = internal::RouteRequest(ViewOf(ri), token);
    const bool data = d.route == internal::HttpRoute::kMetrics ||
                      d.route == internal::HttpRoute::kTasks ||
                      d.route == internal::HttpRoute::kUnauthorized;
    if (data && !rate_limiter->Allow(ri->remote_addr)) {  // before the token: no fast guessing
      return ReplyText(conn, 429,
                       "more than " + internal::FormatRate(config.max_requests_per_second) +
                           " requests per second from " + ri->remote_addr +
                           " (HttpConfig.max_requests_per_second); retry in a second\n",
                       "Retry-After: 1\r\n");
    }
    switch (d.route) {
      case internal::HttpRoute::kBadMethod:
        return ReplyText(conn, 405, "only GET and HEAD\n", "Allow: GET, HEAD\r\n");
      case internal::HttpRoute::kAsset:
        // The page's files carry no data: served without the token, and without counting
        // against max_in_flight (they are constant and cheap).
        return Reply(conn, 200, d.asset->content_type, d.asset->body);
      case internal::HttpRoute::kNotFound:
        return ReplyText(conn, 404,
                         "not found: rtloop serves /metrics, /api/v1/tasks and the page at /\n");
      case internal::HttpRoute::kUnauthorized:
        return ReplyText(conn, 401,
                         "this endpoint needs one \"Authorization: Bearer <token>\" header (the "
                         "server's token file)\n",
                         "WWW-Authenticate: Bearer realm=\"rtloop\"\r\n");
      case internal::HttpRoute::kMetrics:
      case internal::HttpRoute::kTasks:
        break;
    }
    // Bounded work at once: beyond max_in_flight a request is refused at once, never queued.
    if (in_flight.fetch_add(1, std::memory_order_acq_rel) >= config.max_in_flight) {
      in_flight.fetch_sub(1, std::memory_order_acq_rel);
      return ReplyText(conn, 503, "too many requests at once (HttpConfig.max_in_flight); retry\n",
                       "Retry-After: 1\r\n");
    }
    int code = 0;
    if (d.route == internal::HttpRoute::kMetrics) {
      const std::int64_t cpu0 = ThreadCpuNs();
      const std::string body = internal::RenderMetrics(Input());
      counters.last_scrape_cpu_ns.store(ThreadCpuNs() - cpu0, std::memory_order_relaxed);
      code = Reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", body);
    } else {
      const std::string body =
          internal::RenderTasksJson(Input(), internal::HistorySeconds(ri->query_string));
      code = Reply(conn, 200, "application/json", body);
    }
    in_flight.fetch_sub(1, std::memory_order_acq_rel);
    return code;
  }

  // civetweb's callbacks. Every request civetweb parses reaches exactly one of them:
  //  - begin_request: every request civetweb maps to a local path, before its own handling (a
  //    WebSocket upgrade included: served as the plain request, RFC 7230 §6.7 lets a server
  //    ignore Upgrade). The return value (the code) tells civetweb the request is answered.
  //  - http_error: a request civetweb refuses itself (malformed, headers too large, bad
  //    Content-Length, HTTP version, a target that is no URI): answered with its code and reason.
  //  - connection_close: a request civetweb parsed and then dropped without a word ("OPTIONS *",
  //    an absolute URI for another server: civetweb 1.15 leaves those to a proxy); routed as
  //    any other request, with the target as sent.
  // A connection that sent nothing gets nothing. (civetweb 1.15, src/civetweb.c:
  // process_new_connection, handle_request.)
  static Impl* Of(const mg_connection* conn) {
    return static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)));
  }
  static int OnBeginRequest(mg_connection* conn) { return Of(conn)->Handle(conn); }
  static int OnHttpError(mg_connection* conn, int status, const char* message) {
    Of(conn)->ReplyText(
        conn, status,
        std::string(message != nullptr && *message != '\0' ? message : ReasonPhrase(status)) +
            "\n");
    return 0;  // answered: civetweb sends nothing more
  }
  static void OnConnectionClose(const mg_connection* conn) {
    const mg_request_info* ri = mg_get_request_info(conn);
    if (mg_get_user_connection_data(conn) != nullptr || ri == nullptr ||
        ri->request_method == nullptr) {
      return;  // answered, or no request
    }
    // civetweb passes its own (non-const) connection; answering it is what mg_write is for.
    Of(conn)->Handle(const_cast<mg_connection*>(conn));
  }
  // civetweb's own messages (a client that sent garbage, a timeout): not ours to print.
  static int OnLog(const mg_connection* /*conn*/, const char* /*message*/) { return 1; }

  // mg_start2 with our options and handlers; nullptr with civetweb's reason in `error`.
  mg_context* StartCivetweb(const internal::HostPort& hp, std::string* error) {
    const std::string ports = internal::FormatAddress(hp.host, hp.port);
    const std::string threads = std::to_string(config.threads);
    const std::string queue = std::to_string(config.queue);
    const std::string timeout = std::to_string(config.request_timeout.count());
    const char* options[] = {"listening_ports", ports.c_str(), "num_threads", threads.c_str(),
                             "connection_queue", queue.c_str(), "request_timeout_ms",
                             timeout.c_str(), "enable_keep_alive", "no", "decode_url", "yes",
                             // An absolute URI for this port is this server's (RFC 7230 §5.3.2),
                             // whatever host it names: no "authentication domain" to match.
                             "enable_auth_domain_check", "no", nullptr};
    mg_callbacks callbacks{};
    callbacks.log_message = &Impl::OnLog;
    callbacks.begin_request = &Impl::OnBeginRequest;
    callbacks.http_error = &Impl::OnHttpError;
    callbacks.connection_close = &Impl::OnConnectionClose;
    mg_init_data init{};
    init.callbacks = &callbacks;
    init.user_data = this;
    init.configuration_options = options;
    char error_text[256] = {};
    mg_error_data error_data{};
    error_data.text = error_text;
    error_data.text_buffer_size = sizeof error_text;
    mg_context* started = mg_start2(&init, &error_data);
    if (started == nullptr) {
      *error = error_text[0] != '\0' ? error_text : "no reason given";
      return nullptr;
    }
    return started;
  }

  // "serving on" (when asked) and the exposure warnings (always).
  void PrintExposure() const {
    if (config.log_to_stderr) {
      std::fprintf(stderr, "%s: serving /metrics and the live page on http://%s/ (%s)\n",
                   kLogPrefix, address.c_str(), token.empty() ? "no token" : "bearer token");
    }
    if (internal::IsLoopbackHost(host)) return;
    if (token.empty()) {
      std::fprintf(stderr,
                   "%s: WARNING: %s is reachable from the network and no token is set: anyone "
                   "who reaches it can read this machine's telemetry; set a token file\n",
                   kLogPrefix, address.c_str());
    } else {
      std::fprintf(stderr,
                   "%s: WARNING: the token travels in plaintext on %s (no TLS with Debian's "
                   "civetweb): use a trusted network or a TLS proxy\n",
                   kLogPrefix, address.c_str());
    }
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(stop_mu);
    if (ctx != nullptr) {
      // Replies being written finish first (bounded: a client that reads nothing holds its
      // worker request_timeout at most, as mg_stop() would wait for it too).
      stopping.store(true);
      const auto drain_until = std::chrono::steady_clock::now() + config.request_timeout;
      while (active.load() > 0 && std::chrono::steady_clock::now() < drain_until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      // mg_stop() joins civetweb's threads; each open request ends within request_timeout. Its
      // master thread only sees the stop flag when its poll() returns, every 2 s
      // (SOCKET_TIMEOUT_QUANTUM) when idle: a connection to the listening socket wakes it at once.
      // The connection must come after mg_stop() set the flag (then the master no longer accepts
      // it): civetweb 1.15 never closes a socket it accepted but did not hand to a worker before
      // the flag was set. Hence the handshake and the pause before the first wake-up.
      std::atomic<bool> entering{false};
      std::atomic<bool> stopped{false};
      std::thread stopper([this, &entering, &stopped] {
        entering.store(true, std::memory_order_release);
        mg_stop(ctx);
        stopped.store(true, std::memory_order_release);
      });
      while (!entering.load(std::memory_order_acquire)) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      while (!stopped.load(std::memory_order_acquire)) {
        WakeListener();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      stopper.join();
      ctx = nullptr;
    }
    if (own_windows != nullptr) own_windows->Stop();
  }

  // Opens and closes one connection to the listening socket (0.0.0.0 is reached on loopback).
  void WakeListener() const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 || addr.sin_addr.s_addr == 0) {
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // "localhost", 0.0.0.0
    }
    (void)connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    close(fd);
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }

const std::string& HttpServer::address() const noexcept { return impl_->address; }
int HttpServer::port() const noexcept { return impl_->port; }
std::size_t HttpServer::in_flight() const noexcept {
  return impl_->in_flight.load(std::memory_order_relaxed);
}
std::uint64_t HttpServer::requests() const noexcept {
  return impl_->requests.load(std::memory_order_relaxed);
}
std::string HttpServer::RenderMetrics() const { return internal::RenderMetrics(impl_->Input()); }
void HttpServer::Stop() { impl_->Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpConfig& config,
                                                      const TelemetryHub& hub,
                                                      const HttpSources& sources) {
  RTLOOP_RETURN_IF_ERROR(ValidateConfig(config));
  Result<internal::HostPort> hp = internal::ParseHttpAddress(config.address);
  if (!hp.ok()) return InvalidArgumentError("HttpConfig.address: " + hp.status().message());
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->rate_limiter = std::make_unique<internal::RateLimiter>(internal::RateLimit{
      .rate = config.max_requests_per_second, .burst = config.max_requests_burst});
  impl->hub = &hub;
  impl->sources = sources;
  if (!config.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(config.token_file);
    if (!token.ok()) return token.status();
    impl->token = std::move(token).value();
  }
  // Port in use, unknown host, address not on this machine: errno-based messages first.
  RTLOOP_RETURN_IF_ERROR(internal::ProbeBind(*hp));

  static std::once_flag civetweb_init;
  std::call_once(civetweb_init, [] { mg_init_library(0); });

  // civetweb's threads (and our WindowedStats thread) inherit the helper's scheduling/affinity.
  Status status;
  std::string start_error;
  std::thread builder([&] {
    status = internal::MakeHousekeepingThread(config.cpus, "HttpConfig.cpus");
    if (!status.ok()) return;
    if (impl->sources.windows == nullptr) {
      impl->own_windows = std::make_unique<WindowedStats>(
          hub, WindowedStatsConfig{.window = config.window, .history = config.history});
      status = impl->own_windows->Start();
      if (!status.ok()) return;
      impl->sources.windows = impl->own_windows.get();
    }
    impl->ctx = impl->StartCivetweb(*hp, &start_error);
  });
  builder.join();
  if (!status.ok()) return status;
  if (impl->ctx == nullptr) {
    if (impl->own_windows != nullptr) impl->own_windows->Stop();
    return Status(StatusCode::kUnavailable,
                  "cannot serve HTTP on " + config.address + ": civetweb: " + start_error);
  }
  mg_server_port bound{};
  if (mg_get_server_ports(impl->ctx, 1, &bound) != 1) {
    impl->Stop();
    return InternalError("civetweb started but reports no listening port for " + config.address);
  }
  impl->port = bound.port;
  impl->host = hp->host;
  impl->address = internal::FormatAddress(hp->host, bound.port);
  impl->PrintExposure();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace rtloop::telemetry
