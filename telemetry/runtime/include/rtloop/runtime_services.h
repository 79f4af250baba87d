// RuntimeServices: the parts of a Runtime that bring large libraries with them, reached through
// this interface so that a program that does not use them neither links nor maps (nor, with
// locked memory, locks) those libraries: the gRPC server (gRPC, protobuf, abseil, OpenSSL,
// c-ares, re2), the HTTP endpoint (civetweb) and the sample log writer (protobuf).
//
// Runtime::Create(config) uses the linked ones (LinkedRuntimeServices(), in rtloop::runtime,
// runtime_services.cc): what every application gets. Runtime::Create(config, nullptr) has none; a
// config that asks for one of them then fails with a message that names it. rtloop-cyclic's lean
// build (bench/cyclic/README.md, "Two binaries") runs that way and hands a run that serves or
// records over to rtloop-cyclic-full, so that `rtloop-cyclic -m -t1` maps no server library.
//
//   auto rt = rtloop::Runtime::Create(config, nullptr);  // config.telemetry.serve_grpc = false
//
// Threading: the Runtime calls these from its controlling thread (Start*, OpenSampleLog), from
// Stop()'s thread (StopServers, CloseSampleLog) and from any thread (the accessors), always with
// its own lock held or after the servers started; an implementation needs no lock of its own.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/sample_log.h"
#include "rtloop/telemetry/server.h"

namespace rtloop::explain {
class OutlierFeed;
}  // namespace rtloop::explain

namespace rtloop {

class RuntimeServices {
 public:
  virtual ~RuntimeServices() = default;

  // Starts the gRPC server (Server::Start) / the HTTP endpoint (HttpServer::Start); the error
  // is the server's.
  virtual Status StartGrpc(const telemetry::ServerConfig& config, telemetry::TelemetryHub& hub,
                           telemetry::Collector& collector, Executor* executor,
                           const explain::OutlierFeed* outliers) = 0;
  virtual Status StartHttp(const telemetry::HttpConfig& config, const telemetry::TelemetryHub& hub,
                           const telemetry::HttpSources& sources) = 0;
  // Opens the sample log (SampleLogWriter::Open) into `file` when given, else at header.path, and
  // adds it to `collector`'s sinks.
  virtual Status OpenSampleLog(const telemetry::SampleLogConfig& header,
                               std::optional<telemetry::OutputFile> file,
                               const telemetry::TelemetryHub& hub,
                               telemetry::Collector& collector) = 0;
  // The gRPC server's streams end with their final message (`finish`, a run that started and
  // ends normally) or with UNAVAILABLE; then it stops, and the HTTP endpoint stops. Idempotent.
  virtual void StopServers(bool finish) = 0;
  // The sample log's trailer and close, or (`abandon`) its removal; OK without a sample log.
  virtual Status CloseSampleLog(bool abandon) = 0;

  virtual telemetry::Server* server() noexcept = 0;    // nullptr: not serving
  virtual telemetry::HttpServer* http() noexcept = 0;  // nullptr: no HTTP endpoint
  virtual std::string grpc_address() const = 0;        // "" when not serving
  virtual std::string http_address() const = 0;        // "" without the HTTP endpoint
};

// The servers and the sample log writer of rtloop::telemetry (what Runtime::Create(config) uses).
std::unique_ptr<RuntimeServices> LinkedRuntimeServices();

}  // namespace rtloop
