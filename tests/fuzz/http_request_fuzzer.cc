// Fuzzes the HTTP endpoint's request handling where it is rtloop's (http_request.h; civetweb
// parses the request line and headers and decodes the path before it): the input's lines are the
// method, the decoded path, the query string and the Authorization header (absent when the input
// has fewer lines), checked against a server with a token, with the header given once and
// twice. The promises: data (/metrics, /api/v1/tasks) only with exactly one header holding the
// token; the page's files without it; only GET and HEAD;
// history=N within a day; the feed renders for whatever history the query asked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_hub.h"
#include "fuzz_util.h"
#include "http_request.h"
#include "metrics.h"
#include "page_json.h"

namespace {

namespace internal = rtloop::telemetry::internal;
constexpr std::string_view kToken = "fuzz-Token_0123";

rtloop::fuzz::FuzzHub& Hub() {
  static rtloop::fuzz::FuzzHub hub;
  return hub;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> lines =
      rtloop::fuzz::Lines(std::string_view(reinterpret_cast<const char*>(data), size));
  if (lines.empty() || lines.size() > 4) return -1;
  const std::string& method = lines[0];
  const std::string path = lines.size() > 1 ? lines[1] : "";
  const char* query = lines.size() > 2 ? lines[2].c_str() : nullptr;
  const char* authorization = lines.size() > 3 ? lines[3].c_str() : nullptr;

  for (const std::string_view token : {kToken, std::string_view()}) {
    for (const bool repeated : {false, true}) {
      const internal::HttpDecision d =
          internal::RouteRequest({.method = method,
                                  .path = path,
                                  .authorization = authorization,
                                  .repeated_authorization = repeated && authorization != nullptr},
                                 token);
      const bool get = method == "GET" || method == "HEAD";
      const bool data_path = path == "/metrics" || path == "/api/v1/tasks";
      switch (d.route) {
        case internal::HttpRoute::kBadMethod:
          RTLOOP_FUZZ_CHECK(!get);
          break;
        case internal::HttpRoute::kAsset:
          RTLOOP_FUZZ_CHECK(get && d.asset != nullptr && !d.asset->body.empty());
          break;
        case internal::HttpRoute::kNotFound:
          RTLOOP_FUZZ_CHECK(get && !data_path);
          break;
        case internal::HttpRoute::kUnauthorized:
          RTLOOP_FUZZ_CHECK(get && data_path && !token.empty());
          break;
        case internal::HttpRoute::kMetrics:
        case internal::HttpRoute::kTasks:
          RTLOOP_FUZZ_CHECK(get && data_path);
          // With a token, data only for exactly one "Bearer <token>" (scheme in any case, then
          // spaces), never with a second Authorization header.
          if (!token.empty()) {
            RTLOOP_FUZZ_CHECK(authorization != nullptr && !repeated);
            const std::string_view a(authorization);
            RTLOOP_FUZZ_CHECK(a.size() >= 7 + token.size());
            RTLOOP_FUZZ_CHECK(a.substr(a.size() - token.size()) == token);
            RTLOOP_FUZZ_CHECK(a.substr(7, a.size() - 7 - token.size()).find_first_not_of(' ') ==
                              std::string_view::npos);
          }
          break;
      }
    }
  }
  const std::size_t history = internal::HistorySeconds(query);
  RTLOOP_FUZZ_CHECK(history <= internal::kMaxHistorySeconds);
  if (path == "/api/v1/tasks") {
    const internal::MetricsInput in{.hub = &Hub().hub(), .windows = &Hub().windows()};
    const std::string json = internal::RenderTasksJson(in, history);
    RTLOOP_FUZZ_CHECK(!json.empty() && json.front() == '{');
  }
  return 0;
}
