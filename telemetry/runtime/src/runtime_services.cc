// LinkedRuntimeServices and Runtime::Create(config): the Runtime with rtloop::telemetry's gRPC
// server, HTTP endpoint and sample log writer (runtime_services.h). In a file of its own so that
// runtime.cc references none of them: a program that calls Runtime::Create(config, nullptr) links
// no server library.
//
//   auto rt = rtloop::Runtime::Create(config);  // == Create(config, LinkedRuntimeServices())
//
// Threading: as RuntimeServices says (the Runtime serialises the calls).
#include "rtloop/runtime_services.h"

#include <utility>

#include "rtloop/framework/system_info.h"
#include "rtloop/runtime.h"

namespace rtloop {
namespace {

class Linked final : public RuntimeServices {
 public:
  Status StartGrpc(const telemetry::ServerConfig& config, telemetry::TelemetryHub& hub,
                   telemetry::Collector& collector, Executor* executor,
                   const explain::OutlierFeed* outliers) override {
    Result<std::unique_ptr<telemetry::Server>> server =
        telemetry::Server::Start(config, hub, collector, executor, outliers);
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
    return Status::Ok();
  }

  Status StartHttp(const telemetry::HttpConfig& config, const telemetry::TelemetryHub& hub,
                   const telemetry::HttpSources& sources) override {
    Result<std::unique_ptr<telemetry::HttpServer>> http =
        telemetry::HttpServer::Start(config, hub, sources);
    if (!http.ok()) return http.status();
    http_ = std::move(*http);
    return Status::Ok();
  }

  Status OpenSampleLog(const telemetry::SampleLogConfig& header,
                       std::optional<telemetry::OutputFile> file,
                       const telemetry::TelemetryHub& hub,
                       telemetry::Collector& collector) override {
    Result<std::unique_ptr<telemetry::SampleLogWriter>> log =
        file.has_value()
            ? telemetry::SampleLogWriter::Open(header, std::move(*file), hub, ReadSystemInfo())
            : telemetry::SampleLogWriter::Open(header, hub, ReadSystemInfo());
    if (!log.ok()) return log.status();
    sample_log_ = std::move(*log);
    return collector.AddSink(sample_log_.get());
  }

  void StopServers(bool finish) override {
    if (server_ != nullptr) finish ? server_->Finish() : server_->Stop();
    if (http_ != nullptr) http_->Stop();  // the page's last poll gets the final figures
  }

  Status CloseSampleLog(bool abandon) override {
    if (sample_log_ == nullptr) return Status::Ok();
    if (!abandon) return sample_log_->Close();
    sample_log_->Abandon();
    return Status::Ok();
  }

  telemetry::Server* server() noexcept override { return server_.get(); }
  telemetry::HttpServer* http() noexcept override { return http_.get(); }
  std::string grpc_address() const override {
    return server_ != nullptr ? server_->address() : std::string();
  }
  std::string http_address() const override {
    return http_ != nullptr ? http_->address() : std::string();
  }

 private:
  // Destroyed in reverse: the sample log, then the HTTP endpoint (it reads the hub), then gRPC.
  std::unique_ptr<telemetry::Server> server_;
  std::unique_ptr<telemetry::HttpServer> http_;
  std::unique_ptr<telemetry::SampleLogWriter> sample_log_;
};

}  // namespace

std::unique_ptr<RuntimeServices> LinkedRuntimeServices() { return std::make_unique<Linked>(); }

Result<std::unique_ptr<Runtime>> Runtime::Create(const RuntimeConfig& config) {
  return Create(config, LinkedRuntimeServices());
}

}  // namespace rtloop
