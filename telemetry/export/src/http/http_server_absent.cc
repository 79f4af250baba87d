// HttpServer of a build without the HTTP endpoint (-DRTLOOP_HTTP=OFF): the single-file static
// tools (cmake/README.md, "Static tools"). Debian 12 ships no static civetweb or prometheus-cpp
// library, so those tools are linked without them; Start() and CheckHttpAddress() say so and name
// what to use instead.
// Everything else of rtloop (gRPC telemetry, recordings, reports) is unchanged.
//
// Example: `rtloop-cyclic --metrics` from the static tarball stops with the
// message below. Thread contract: as http_server.h (no HttpServer is ever created).
#include <memory>
#include <string>
#include <string_view>

#include "rtloop/telemetry/http_server.h"

namespace rtloop::telemetry {

namespace {

Status Absent(std::string_view address) {
  return Status(StatusCode::kFailedPrecondition,
                "the HTTP endpoint (" + std::string(address) +
                    ") is not in this build of rtloop (RTLOOP_HTTP=OFF: the single-file static "
                    "tools, since Debian 12 has no static civetweb/prometheus-cpp); use the "
                    "rtloop Debian package for /metrics and the live page, or gRPC telemetry "
                    "(--telemetry) here");
}

}  // namespace

// Any address is refused with the reason, so an option check (rtloop-cyclic --metrics) stops
// before anything starts, as Start() would.
Status CheckHttpAddress(std::string_view address) { return Absent(address); }

class HttpServer::Impl {};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpConfig& config,
                                                      const TelemetryHub& /*hub*/,
                                                      const HttpSources& /*sources*/) {
  return Absent(config.address);
}

// Unreachable: no HttpServer exists in this build.
const std::string& HttpServer::address() const noexcept {
  static const std::string kNone;
  return kNone;
}
int HttpServer::port() const noexcept { return 0; }
std::size_t HttpServer::in_flight() const noexcept { return 0; }
std::uint64_t HttpServer::requests() const noexcept { return 0; }
std::string HttpServer::RenderMetrics() const { return {}; }
void HttpServer::Stop() {}

}  // namespace rtloop::telemetry
