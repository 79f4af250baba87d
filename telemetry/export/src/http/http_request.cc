#include "http_request.h"

#include <civetweb.h>
#include <strings.h>

#include <cstring>

#include "net_util.h"

namespace rtloop::telemetry::internal {

bool BearerMatches(const char* header, std::string_view token) noexcept {
  if (header == nullptr || token.empty()) return false;
  std::string_view h(header);
  constexpr std::string_view kBearer = "Bearer ";
  if (h.size() < kBearer.size() || strncasecmp(h.data(), kBearer.data(), kBearer.size()) != 0) {
    return false;
  }
  h.remove_prefix(kBearer.size());
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  return ConstantTimeEquals(h, token);
}

HttpDecision RouteRequest(const HttpRequestView& request, std::string_view token) noexcept {
  if (request.method != "GET" && request.method != "HEAD") return {.route = HttpRoute::kBadMethod};
  for (const WebAsset& a : WebAssets()) {
    if (request.path == a.path || (a.path == "/" && request.path == "/index.html")) {
      return {.route = HttpRoute::kAsset, .asset = &a};
    }
  }
  HttpRoute data = HttpRoute::kNotFound;
  if (request.path == "/metrics") data = HttpRoute::kMetrics;
  if (request.path == "/api/v1/tasks") data = HttpRoute::kTasks;
  if (data == HttpRoute::kNotFound) return {.route = HttpRoute::kNotFound};
  if (!token.empty() &&
      (request.repeated_authorization || !BearerMatches(request.authorization, token))) {
    return {.route = HttpRoute::kUnauthorized};
  }
  return {.route = data};
}

std::size_t HistorySeconds(const char* query) noexcept {
  if (query == nullptr) return 0;
  char value[16] = {};
  // mg_get_var: -1 absent, -2 the value does not fit (longer than any number we take).
  if (mg_get_var(query, std::strlen(query), "history", value, sizeof value) <= 0) return 0;
  std::size_t n = 0;
  for (const char* c = value; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return 0;
    n = n * 10 + static_cast<std::size_t>(*c - '0');  // at most 15 digits: no overflow
    if (n > kMaxHistorySeconds) n = kMaxHistorySeconds + 1;
  }
  return n > kMaxHistorySeconds ? kMaxHistorySeconds : n;
}

}  // namespace rtloop::telemetry::internal
