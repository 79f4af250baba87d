// The per-call half of rtloop::telemetry::Server: ServerCore (configuration, data sources, the
// registry of open streams, the pump thread) and the Telemetry service whose reactors it runs.
// server.cc owns the grpc::Server around them (build, restart, stop). Internal to
// rtloop_telemetry; includes gRPC headers (slow to compile), so only server.cc and
// server_core.cc include it.
//
// Streams: each open stream is a ServerWriteReactor registered with the ServerCore. A message is
// written when one is ready and no write is in flight, and something wakes only when there is
// work: right after the previous write completed (OnWriteDone, on a gRPC thread); for a sample
// stream, when the collector's drain pass queued samples for it (Subscription::SetOnSamples, on
// the collector thread); for a WatchStats stream, when its next snapshot is due (the core's pump
// thread sleeps until then). The pump also looks every ServerConfig::poll_period for streams whose
// write has been stuck for ServerConfig::stall_timeout, and cancels them.
// gRPC calls (StartWrite, Finish, TryCancel) are never made under a reactor's lock, because gRPC
// may run a reaction inline.
//
// How streams end: EndAll() (the run ended) lets each stream send what is queued, then a final
// message with StreamEnd, then finish with OK; FinishAll() (stop, restart) finishes them at once
// with the status given.
//
// Threading: every ServerCore method is thread-safe. Not RT-safe.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/service_type.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "outlier_fill.h"
#include "rate_limiter.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/v1/telemetry.pb.h"

namespace rtloop::telemetry::internal {

using SteadyClock = std::chrono::steady_clock;

// A registered stream, seen by the pump thread, Stop() and Finish().
class StreamBase {
 public:
  virtual ~StreamBase() = default;
  // Writes the next message if one is ready and no write is in flight.
  virtual void Kick() = 0;
  // Finishes with `status` after the write in flight (if any); queued messages are not sent.
  virtual void RequestFinish(const grpc::Status& status) = 0;
  // The run ended: send what is queued until `deadline`, then the final message, then OK.
  virtual void RequestEnd(SteadyClock::time_point deadline) = 0;
  // Cancels the call when a write has been in flight for `timeout` or longer; true if it did.
  virtual bool CancelIfStalled(SteadyClock::time_point now, std::chrono::milliseconds timeout) = 0;
  // When the pump must Kick() this stream next; time_point::max() when something else will (a
  // write completion, the collector) or never.
  virtual SteadyClock::time_point NextDue() = 0;
};

class ServerCore {
 public:
  ServerCore(const ServerConfig& config, std::string token, TelemetryHub& hub, Collector& collector,
             Executor* executor, const explain::OutlierFeed* outliers);
  ~ServerCore();

  const ServerConfig& config() const { return config_; }
  std::string address() const;
  void set_address(std::string address);
  TelemetryHub& hub() { return hub_; }
  Collector& collector() { return collector_; }
  const Executor* executor() const { return executor_; }
  OutlierFill& outliers() { return outliers_; }
  // The ResetStats call after Admit(): PERMISSION_DENIED on a server without a token (it is the
  // one call that changes something; read-only unless a token is configured), FAILED_PRECONDITION
  // without an executor, NOT_FOUND for an unknown task id; else resets `ids` (all when empty).
  grpc::Status ResetStats(const google::protobuf::RepeatedField<std::uint32_t>& ids,
                          v1::ResetStatsResponse* out);

  // Every call's first check. RESOURCE_EXHAUSTED when the client's address started more calls
  // than max_calls_per_second allows (before the token: probing tokens is rate-limited too);
  // then UNAUTHENTICATED unless the call carries exactly one well-formed
  // "authorization: Bearer <token>" with the configured token (compared in constant time); OK.
  grpc::Status Admit(const grpc::CallbackServerContext* context);

  // Reserves a stream slot: OK, RESOURCE_EXHAUSTED beyond max_streams, UNAVAILABLE when stopping.
  grpc::Status ReserveStream();
  // The stream reactor's destructor gives its slot back.
  void ReleaseStream();
  // Adds a stream to the registry. A stream reserved before Stop()/Finish() began but registered
  // after their snapshot of the registry is asked to finish (or end) here.
  void Register(const std::shared_ptr<StreamBase>& stream);
  // From OnDone: drops the registry's reference, which may destroy `stream`.
  void Unregister(StreamBase* stream);
  // Error-only reactors (bad request, no token) are counted so Stop() waits for them too.
  void HandlerStarted();
  void HandlerDone();
  std::size_t open_streams() const;

  std::uint64_t stalled_streams_cancelled() const;
  // A stats snapshot plus this server's stream facts, the tasks' subscriber loss (the hub's
  // count: TaskTelemetry::subscriber_lost) and outlier counts.
  void FillStats(const std::vector<TaskId>& ids, bool histogram, v1::GetStatsResponse* out);
  // The ListOutliers call after Admit(): INVALID_ARGUMENT for an unknown task id; else the page.
  grpc::Status ListOutliers(const v1::ListOutliersRequest& request, v1::ListOutliersResponse* out);

  void StartPump();
  void StopPump();

  // Refuses new streams and asks every open one to finish with `status`.
  void FinishAll(const grpc::Status& status);
  // Refuses new streams and asks every open one to deliver what is queued until `deadline`, then
  // send its final message and finish with OK.
  void EndAll(SteadyClock::time_point deadline);
  // Accepts streams again (after a restart).
  void Resume();
  // Waits until no stream or error handler is alive; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  std::vector<std::shared_ptr<StreamBase>> Snapshot();
  void PumpLoop();

  const ServerConfig config_;
  const std::string token_;
  TelemetryHub& hub_;
  Collector& collector_;
  Executor* const executor_;
  OutlierFill outliers_;
  internal::RateLimiter rate_limiter_;

  mutable std::mutex mu_;
  std::string address_;  // guarded by mu_
  std::condition_variable idle_cv_;
  std::condition_variable pump_cv_;
  std::unordered_map<StreamBase*, std::shared_ptr<StreamBase>> streams_;
  std::size_t live_streams_ = 0;
  std::size_t live_handlers_ = 0;
  bool stopping_ = false;
  std::optional<SteadyClock::time_point> end_deadline_;  // set by EndAll()
  grpc::Status stop_status_;                             // set by FinishAll()
  std::uint64_t stalled_cancelled_ = 0;
  bool pump_stop_ = false;
  bool pump_wake_ = false;  // a stream was registered: the pump recomputes its next due time
  std::thread pump_;
};

// The Telemetry service, answering from `core` (which must outlive it).
std::unique_ptr<grpc::Service> MakeTelemetryService(ServerCore* core);

}  // namespace rtloop::telemetry::internal
