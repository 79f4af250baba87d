// What the HTTP endpoint makes of a request before it renders anything: the route (a page file,
// /metrics, the JSON feed, or a refusal), the bearer-token check and the feed's history=N
// parameter. civetweb parses the request line and the headers and decodes the path; everything
// after that is here, as pure functions, so tests/fuzz/http_request_fuzzer.cc can feed them
// whatever a client could send. Internal to rtloop_telemetry.
//
//   const HttpDecision d = RouteRequest({.method = "GET", .path = "/metrics",
//                                        .authorization = mg_get_header(conn, "Authorization")},
//                                       token);
//   if (d.route == HttpRoute::kMetrics) ...
//
// Thread-safe (no state). Not RT-safe: RouteRequest() is, HistorySeconds() parses with civetweb.
#pragma once

#include <cstddef>
#include <string_view>

#include "web_assets.h"

namespace rtloop::telemetry::internal {

// The longest history (seconds) /api/v1/tasks?history=N hands out per task: a day.
inline constexpr std::size_t kMaxHistorySeconds = 86400;

enum class HttpRoute {
  kAsset,         // one of the page's static files (no token needed: they carry no data)
  kMetrics,       // /metrics
  kTasks,         // /api/v1/tasks, the page's feed
  kBadMethod,     // 405: only GET and HEAD
  kNotFound,      // 404
  kUnauthorized,  // 401: /metrics and /api/* need the token
};

struct HttpRequestView {
  std::string_view method;              // "GET", "HEAD", ...
  std::string_view path;                // decoded, without the query ("/metrics")
  const char* authorization = nullptr;  // the (first) Authorization header's value; nullptr: absent
  // More than one Authorization header: with a token the request is refused whatever the values
  // (exactly one "Bearer <token>", as the gRPC server wants one authorization value).
  bool repeated_authorization = false;
};

struct HttpDecision {
  HttpRoute route = HttpRoute::kNotFound;
  const WebAsset* asset = nullptr;  // kAsset: which file
};

// `token`: the server's bearer token; empty: no authentication. With a token, /metrics and
// /api/v1/tasks need exactly one Authorization header holding it. RT-safe (no allocation).
HttpDecision RouteRequest(const HttpRequestView& request, std::string_view token) noexcept;

// True when `header` is "Bearer <token>" (the scheme in any case, spaces after it skipped) with
// exactly `token`, compared in constant time. False for nullptr or an empty token.
bool BearerMatches(const char* header, std::string_view token) noexcept;

// The feed's history=N query parameter: N when it is a whole number (clamped to
// kMaxHistorySeconds), 0 when absent, empty or anything else. `query` may be nullptr.
std::size_t HistorySeconds(const char* query) noexcept;

}  // namespace rtloop::telemetry::internal
