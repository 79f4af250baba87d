// rtloop::telemetry::Client over gRPC's synchronous client API. One of the two translation units
// of rtloop that include gRPC headers (with server.cc): they are slow to compile.
#include "rtloop/telemetry/client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "grpc_log.h"
#include "grpc_status.h"
#include "net_util.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/v1/telemetry.grpc.pb.h"

namespace rtloop::telemetry {
namespace {

std::chrono::system_clock::time_point DeadlineAfter(std::chrono::milliseconds timeout) {
  return std::chrono::system_clock::now() + timeout;
}

// A failed call or connection to `address`, said by what a TCP connection to it does now:
// nothing listens (ECONNREFUSED in sys_errno: the server is gone), no answer, or something that
// accepts but did not take the call (no rtloop server there, or TLS on one side only).
Status Unreachable(const std::string& what, const std::string& address,
                   const std::string& grpc_message) {
  Result<internal::HostPort> hp = internal::ParseAddress(address, internal::AddressRole::kConnect);
  const int err = hp.ok() ? internal::ProbeConnect(*hp, std::chrono::milliseconds(1000)) : EINVAL;
  if (err == ECONNREFUSED) {
    return Status(StatusCode::kUnavailable,
                  what + ": nothing listens on " + address + ": has the run ended?", err);
  }
  std::string hint;
  if (err == 0) {
    hint = " — something listens on " + address +
           " but did not take the call: is it an rtloop telemetry server, and do both sides agree "
           "on TLS (--tls-ca)?";
  } else {
    hint = " — cannot reach " + address + ": " + std::strerror(err) +
           (err == ETIMEDOUT ? " (no answer within 1 s)" : "");
  }
  return Status(StatusCode::kUnavailable,
                what + (grpc_message.empty() ? "" : ": " + grpc_message) + hint, err);
}

}  // namespace

Status FromGrpcStatus(const grpc::Status& status, std::string_view what,
                      const std::string& address) {
  if (status.ok()) return Status::Ok();
  StatusCode code = StatusCode::kInternal;
  std::string hint;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      code = StatusCode::kInvalidArgument;
      break;
    case grpc::StatusCode::NOT_FOUND:
      code = StatusCode::kNotFound;
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
      code = StatusCode::kUnauthenticated;
      hint = " — give the server's token (--token-file)";
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
      code = StatusCode::kPermissionDenied;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      code = StatusCode::kResourceExhausted;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      code = StatusCode::kFailedPrecondition;
      break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Unreachable(std::string(what) + " on " + address, address, status.error_message());
    case grpc::StatusCode::CANCELLED:
      code = StatusCode::kUnavailable;
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      // A server of an older API revision (telemetry.proto, "What a server has").
      code = StatusCode::kFailedPrecondition;
      hint =
          " — the server does not serve this call: it predates it (see GetSystemInfo's "
          "api_revision and api_features); update the server";
      break;
    default:
      break;
  }
  return Status(code, std::string(what) + " on " + address + ": " + status.error_message() + hint);
}

// ---------------------------------------------------------------------------------------------
// Streams

// A message that only marks the end (a sample stream's last message has no batch) is not handed
// out; a stats stream's last message holds the final statistics and is.
bool OnlyMarksTheEnd(const v1::StreamSamplesResponse& m) { return !m.has_batch(); }
bool OnlyMarksTheEnd(const v1::GetStatsResponse& /*m*/) { return false; }
bool OnlyMarksTheEnd(const v1::ListOutliersResponse& /*m*/) { return false; }

template <typename Message>
class ClientStream<Message>::Impl {
 public:
  Impl(std::string what, std::string address)
      : what_(std::move(what)), address_(std::move(address)) {}
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<Message>> reader;

  bool WaitForReady() {
    if (done_) return false;
    reader->WaitForInitialMetadata();
    return true;
  }
  bool Next(Message* message) {
    if (done_ || end_.has_value()) return Drain();
    if (!reader->Read(message)) {
      MarkDone();
      return false;
    }
    ++received_;
    if (!message->has_end()) return true;
    end_ = message->end();
    if (!OnlyMarksTheEnd(*message)) return true;
    return Drain();
  }
  Status Finish() {
    if (!finished_) {
      if (!done_) {  // drain what is left, as gRPC requires before Finish()
        if (!end_.has_value()) context.TryCancel();
        Message discard;
        while (reader->Read(&discard)) {
        }
        MarkDone();
      }
      const grpc::Status s = reader->Finish();
      // A stream that was served and then ended by the server: no connectivity hint.
      final_ = received_ > 0 && s.error_code() == grpc::StatusCode::UNAVAILABLE
                   ? Status(StatusCode::kUnavailable,
                            what_ + " on " + address_ +
                                ": the server ended the stream: " + s.error_message())
                   : FromGrpcStatus(s, what_, address_);
      finished_ = true;
    }
    return final_;
  }
  const v1::StreamEnd* end() const { return end_.has_value() ? &*end_ : nullptr; }
  // Any thread. A stream whose reads ended keeps its outcome: cancelling it then would replace
  // the server's status (a refusal, the final OK) by CANCELLED.
  void Cancel() {
    if (!read_ended_.load(std::memory_order_acquire)) context.TryCancel();
  }

 private:
  void MarkDone() {
    done_ = true;
    read_ended_.store(true, std::memory_order_release);
  }
  // After the final message only the stream's end (OK) may follow.
  bool Drain() {
    if (!done_) {
      Message extra;
      while (reader->Read(&extra)) {
      }
      MarkDone();
    }
    return false;
  }

  std::string what_;
  std::string address_;
  bool done_ = false;                    // the reading thread's
  std::atomic<bool> read_ended_{false};  // done_, for Cancel() on other threads
  bool finished_ = false;
  std::uint64_t received_ = 0;
  std::optional<v1::StreamEnd> end_;
  Status final_;
};

template <typename Message>
ClientStream<Message>::ClientStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

template <typename Message>
ClientStream<Message>::~ClientStream() {
  if (impl_ != nullptr) (void)impl_->Finish();
}

template <typename Message>
bool ClientStream<Message>::WaitForReady() {
  return impl_->WaitForReady();
}

template <typename Message>
bool ClientStream<Message>::Next(Message* message) {
  return impl_->Next(message);
}

template <typename Message>
Status ClientStream<Message>::Finish() {
  return impl_->Finish();
}

template <typename Message>
void ClientStream<Message>::Cancel() {
  impl_->Cancel();
}

template <typename Message>
const v1::StreamEnd* ClientStream<Message>::end() const {
  return impl_->end();
}

template class ClientStream<v1::StreamSamplesResponse>;
template class ClientStream<v1::GetStatsResponse>;
template class ClientStream<v1::ListOutliersResponse>;

// ---------------------------------------------------------------------------------------------
// Client

class Client::Impl {
 public:
  ClientConfig config;
  std::string token;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Telemetry::Stub> stub;

  void Prepare(grpc::ClientContext& context, bool unary) const {
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    if (unary) context.set_deadline(DeadlineAfter(config.call_timeout));
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(const ClientConfig& config) {
  Result<internal::HostPort> hp =
      internal::ParseAddress(config.address, internal::AddressRole::kConnect);
  if (!hp.ok()) return hp.status();
  if (config.call_timeout.count() <= 0) {
    return InvalidArgumentError("ClientConfig.call_timeout must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->config.address = internal::FormatAddress(hp->host, hp->port);  // ":PORT": loopback
  impl->token = config.token;
  if (!impl->token.empty()) {
    RTLOOP_RETURN_IF_ERROR(CheckBearerToken(impl->token, "ClientConfig.token"));
  } else if (!config.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(config.token_file);
    if (!token.ok()) return token.status();
    impl->token = *token;
  }
  internal::SetUpGrpcLogging();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  if (!config.bdp_probe) args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // Reconnect quickly after a server restart (rtloop-top retries with its own backoff). gRPC takes
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the time one connection attempt may take (TCP, TLS and
  // the server's HTTP/2 SETTINGS): 5 s, the server's own handshake_timeout. At 200 ms a server on
  // a loaded board that answered its handshake late made streams fail UNAVAILABLE ("timed out
  // before receiving SETTINGS frame").
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!config.tls_ca_file.empty()) {
    Result<std::string> ca =
        ReadInputFile(config.tls_ca_file, {.what = "TLS CA file", .max_bytes = 1u << 20});
    if (!ca.ok()) return ca.status();
    if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return InvalidArgumentError("TLS CA file \"" + config.tls_ca_file +
                                  "\" holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;
    credentials = grpc::SslCredentials(ssl);
    if (!config.tls_server_name.empty()) args.SetSslTargetNameOverride(config.tls_server_name);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  impl->channel = grpc::CreateCustomChannel(impl->config.address, credentials, args);
  impl->stub = v1::Telemetry::NewStub(impl->channel);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const std::string& Client::address() const noexcept { return impl_->config.address; }

Status Client::WaitForConnected(std::chrono::milliseconds timeout) {
  if (impl_->channel->WaitForConnected(DeadlineAfter(timeout))) return Status::Ok();
  return Unreachable("cannot connect to " + impl_->config.address + " within " +
                         std::to_string(timeout.count()) + " ms",
                     impl_->config.address, "");
}

Result<v1::GetSystemInfoResponse> Client::GetSystemInfo() {
  grpc::ClientContext context;
  impl_->Prepare(context, true);
  v1::GetSystemInfoResponse response;
  grpc::Status s = impl_->stub->GetSystemInfo(&context, v1::GetSystemInfoRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s, "GetSystemInfo", impl_->config.address);
  return response;
}

Result<v1::ListTasksResponse> Client::ListTasks() {
  grpc::ClientContext context;
  impl_->Prepare(context, true);
  v1::ListTasksResponse response;
  grpc::Status s = impl_->stub->ListTasks(&context, v1::ListTasksRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s, "ListTasks", impl_->config.address);
  return response;
}

Result<v1::GetStatsResponse> Client::GetStats(const std::vector<std::uint32_t>& task_ids,
                                              bool include_histogram) {
  grpc::ClientContext context;
  impl_->Prepare(context, true);
  v1::GetStatsRequest request;
  for (const std::uint32_t id : task_ids) request.add_task_ids(id);
  request.set_include_histogram(include_histogram);
  v1::GetStatsResponse response;
  grpc::Status s = impl_->stub->GetStats(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s, "GetStats", impl_->config.address);
  return response;
}

Result<v1::ResetStatsResponse> Client::ResetStats(const std::vector<std::uint32_t>& task_ids) {
  grpc::ClientContext context;
  impl_->Prepare(context, true);
  v1::ResetStatsRequest request;
  for (const std::uint32_t id : task_ids) request.add_task_ids(id);
  v1::ResetStatsResponse response;
  grpc::Status s = impl_->stub->ResetStats(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s, "ResetStats", impl_->config.address);
  return response;
}

Result<v1::ListOutliersResponse> Client::ListOutliers(const v1::ListOutliersRequest& request) {
  grpc::ClientContext context;
  impl_->Prepare(context, true);
  v1::ListOutliersResponse response;
  grpc::Status s = impl_->stub->ListOutliers(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s, "ListOutliers", impl_->config.address);
  return response;
}

std::unique_ptr<StatsStream> Client::WatchStats(const v1::WatchStatsRequest& request) {
  auto impl = std::make_unique<StatsStream::Impl>("WatchStats", impl_->config.address);
  impl_->Prepare(impl->context, false);
  impl->reader = impl_->stub->WatchStats(&impl->context, request);
  return std::make_unique<StatsStream>(std::move(impl));
}

std::unique_ptr<OutlierStream> Client::WatchOutliers(const v1::WatchOutliersRequest& request) {
  auto impl = std::make_unique<OutlierStream::Impl>("WatchOutliers", impl_->config.address);
  impl_->Prepare(impl->context, false);
  impl->reader = impl_->stub->WatchOutliers(&impl->context, request);
  return std::make_unique<OutlierStream>(std::move(impl));
}

std::unique_ptr<SampleStream> Client::StreamSamples(const v1::StreamSamplesRequest& request) {
  auto impl = std::make_unique<SampleStream::Impl>("StreamSamples", impl_->config.address);
  impl_->Prepare(impl->context, false);
  impl->reader = impl_->stub->StreamSamples(&impl->context, request);
  return std::make_unique<SampleStream>(std::move(impl));
}

}  // namespace rtloop::telemetry
