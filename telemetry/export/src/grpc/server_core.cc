// ServerCore and the Telemetry service's reactors (see server_core.h).
#include "server_core.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <span>
#include <utility>

#include "net_util.h"
#include "outlier_stream.h"
#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/task_report.h"
#include "rtloop/telemetry/v1/telemetry.grpc.pb.h"
#include "service_fill.h"
#include "stream_reactor.h"

namespace rtloop::telemetry::internal {
namespace {

grpc::Status Unauthenticated(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
}

class WatchStatsReactor final : public StreamReactor<v1::GetStatsResponse> {
 public:
  WatchStatsReactor(ServerCore* core, grpc::CallbackServerContext* context, StatsWatchPlan plan)
      : StreamReactor(core, context),
        ids_(std::move(plan.tasks)),
        every_task_(plan.every_task),
        histogram_(plan.include_histogram),
        interval_(plan.interval),
        next_(SteadyClock::now()) {}

 protected:
  bool Fill(v1::GetStatsResponse* out) override {
    const SteadyClock::time_point now = SteadyClock::now();
    if (now < next_) return false;
    next_ += interval_;
    if (next_ < now) next_ = now + interval_;  // fell behind (slow client): no burst
    Snapshot(out);
    return true;
  }
  bool FillQueued(v1::GetStatsResponse* /*out*/) override { return false; }
  SteadyClock::time_point DueLocked() const override { return next_; }
  // The final statistics, marked as the end.
  void FillEnd(v1::GetStatsResponse* out) override {
    Snapshot(out);
    out->mutable_end()->set_reason(v1::STREAM_END_REASON_RUN_ENDED);
  }

 private:
  void Snapshot(v1::GetStatsResponse* out) {
    out->Clear();
    if (every_task_) {
      core_->FillStats(core_->hub().TaskIds(), histogram_, out);
    } else {
      core_->FillStats(ids_, histogram_, out);  // not copied: a ?: with TaskIds() would copy it
    }
  }

  const std::vector<TaskId> ids_;
  const bool every_task_;  // none named: the hub's tasks at each snapshot, not those at the request
  const bool histogram_;
  const std::chrono::milliseconds interval_;
  SteadyClock::time_point next_;
};

class SampleStreamReactor final : public StreamReactor<v1::StreamSamplesResponse> {
 public:
  SampleStreamReactor(ServerCore* core, grpc::CallbackServerContext* context,
                      std::shared_ptr<Subscription> subscription, SampleStreamPlan plan)
      : StreamReactor(core, context),
        subscription_(std::move(subscription)),
        tasks_(std::move(plan.tasks)),
        every_task_(plan.every_task),
        max_batch_(plan.max_batch_samples) {}

 protected:
  bool Fill(v1::StreamSamplesResponse* out) override {
    if (next_ >= pending_.size()) {
      next_ = 0;
      if (subscription_->Pop(&pending_, std::chrono::nanoseconds(0), max_batch_) == 0) {
        pending_.clear();
        return false;
      }
    }
    const SampleBatch& batch = pending_[next_++];
    Count(lost_total_, batch.task, batch.lost_before);  // counted in the hub when dropped
    Count(sent_, batch.task, batch.samples.size());
    out->Clear();
    internal::FillSampleBatch(batch, lost_total_[batch.task], out);
    return true;
  }
  bool FillQueued(v1::StreamSamplesResponse* out) override { return Fill(out); }
  void FillEnd(v1::StreamSamplesResponse* out) override {
    // Whatever this stream holds or has queued now was not delivered in time: lost (counted by
    // the subscription, in the hub too), and reported with the loss no batch reported.
    const std::span<const SampleBatch> undelivered =
        std::span<const SampleBatch>(pending_).subspan(std::min(next_, pending_.size()));
    const std::vector<std::uint64_t> unreported = subscription_->Abandon(undelivered);
    pending_.clear();
    next_ = 0;
    for (std::size_t t = 0; t < unreported.size(); ++t) {
      Count(lost_total_, static_cast<TaskId>(t), unreported[t]);
    }
    out->Clear();
    v1::StreamEnd* end = out->mutable_end();
    end->set_reason(v1::STREAM_END_REASON_RUN_ENDED);
    for (const TaskId id : every_task_ ? core_->hub().TaskIds() : tasks_) {
      const TaskReport r = MakeTaskReport(nullptr, &core_->hub(), id, {.histograms = false});
      v1::TaskStreamEnd* t = end->add_tasks();
      t->set_task_id(id);
      if (r.telemetry) {
        t->set_samples(r.samples);
        t->set_last_seq(r.samples > 0 ? r.samples - 1 : 0);
        t->set_ring_dropped(r.ring_dropped);
      }
      t->set_sent(At(sent_, id));
      t->set_lost_total(At(lost_total_, id));
    }
  }
  void Closing() override {
    subscription_->SetOnSamples(nullptr);
    core_->collector().Unsubscribe(subscription_);
  }

 private:
  static void Count(std::vector<std::uint64_t>& v, TaskId task, std::uint64_t n) {
    if (v.size() <= task) v.resize(std::size_t{task} + 1, 0);
    v[task] += n;
  }
  static std::uint64_t At(const std::vector<std::uint64_t>& v, TaskId task) {
    return task < v.size() ? v[task] : 0;
  }

  const std::shared_ptr<Subscription> subscription_;
  const std::vector<TaskId> tasks_;  // the stream's tasks, for the final message
  const bool every_task_;            // none named: the hub's tasks at the end (added since, too)
  const std::size_t max_batch_;
  std::vector<SampleBatch> pending_;
  std::size_t next_ = 0;
  // Per task id: what this stream lost (its own account for lost_total; the hub counts all).
  std::vector<std::uint64_t> lost_total_;
  std::vector<std::uint64_t> sent_;  // per task id
};

class TelemetryService final : public v1::Telemetry::CallbackService {
 public:
  explicit TelemetryService(ServerCore* core) : core_(core) {}

  grpc::ServerUnaryReactor* GetSystemInfo(grpc::CallbackServerContext* context,
                                          const v1::GetSystemInfoRequest* /*request*/,
                                          v1::GetSystemInfoResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Admit(context);
    if (status.ok()) internal::FillSystemInfo(core_->address(), response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const v1::ListTasksRequest* /*request*/,
                                      v1::ListTasksResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Admit(context);
    if (status.ok()) internal::FillTaskList(core_->hub(), core_->executor(), response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::GetStatsResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Admit(context);
    if (status.ok()) {
      Result<std::vector<TaskId>> ids = internal::ResolveTaskIds(core_->hub(), request->task_ids());
      if (ids.ok()) {
        core_->FillStats(*ids, request->include_histogram(), response);
      } else {
        status = ToGrpc(ids.status());
      }
    }
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* ResetStats(grpc::CallbackServerContext* context,
                                       const v1::ResetStatsRequest* request,
                                       v1::ResetStatsResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Admit(context);
    if (status.ok()) status = core_->ResetStats(request->task_ids(), response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* ListOutliers(grpc::CallbackServerContext* context,
                                         const v1::ListOutliersRequest* request,
                                         v1::ListOutliersResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status = core_->Admit(context);
    if (status.ok()) status = core_->ListOutliers(*request, response);
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerWriteReactor<v1::ListOutliersResponse>* WatchOutliers(
      grpc::CallbackServerContext* context, const v1::WatchOutliersRequest* request) override {
    return StartOutlierStream(core_, context, *request);
  }

  grpc::ServerWriteReactor<v1::GetStatsResponse>* WatchStats(
      grpc::CallbackServerContext* context, const v1::WatchStatsRequest* request) override {
    using Error = ErrorReactor<v1::GetStatsResponse>;
    if (grpc::Status s = core_->Admit(context); !s.ok()) return new Error(core_, s);
    Result<StatsWatchPlan> plan = PlanStatsWatch(core_->hub(), *request, core_->config());
    if (!plan.ok()) return new Error(core_, ToGrpc(plan.status()));
    if (grpc::Status s = core_->ReserveStream(); !s.ok()) return new Error(core_, s);
    auto reactor = std::make_shared<WatchStatsReactor>(core_, context, std::move(*plan));
    WatchStatsReactor* raw = reactor.get();
    core_->Register(reactor);
    raw->Kick();  // the first snapshot right away
    HandOver(raw);
    return raw;
  }

  grpc::ServerWriteReactor<v1::StreamSamplesResponse>* StreamSamples(
      grpc::CallbackServerContext* context, const v1::StreamSamplesRequest* request) override {
    using Error = ErrorReactor<v1::StreamSamplesResponse>;
    if (grpc::Status s = core_->Admit(context); !s.ok()) return new Error(core_, s);
    Result<SampleStreamPlan> plan = PlanSampleStream(core_->hub(), *request, core_->config());
    if (!plan.ok()) return new Error(core_, ToGrpc(plan.status()));
    if (grpc::Status s = core_->ReserveStream(); !s.ok()) return new Error(core_, s);
    std::shared_ptr<Subscription> subscription = core_->collector().Subscribe(plan->subscription);
    auto reactor =
        std::make_shared<SampleStreamReactor>(core_, context, subscription, std::move(*plan));
    SampleStreamReactor* raw = reactor.get();
    // Send the response headers now: the client then knows the subscription exists (every sample
    // from here on reaches it) even before the first batch. Before Register(): no other thread
    // can reach the reactor yet.
    raw->StartSendInitialMetadata();
    core_->Register(reactor);
    // From now on each drain pass that brings samples writes them out; the stream holds itself
    // only weakly here (the registry owns it).
    subscription->SetOnSamples([weak = std::weak_ptr<SampleStreamReactor>(reactor)] {
      if (std::shared_ptr<SampleStreamReactor> stream = weak.lock()) stream->Kick();
    });
    HandOver(raw);
    return raw;
  }

 private:
  ServerCore* const core_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// ServerCore

ServerCore::ServerCore(const ServerConfig& config, std::string token, TelemetryHub& hub,
                       Collector& collector, Executor* executor,
                       const explain::OutlierFeed* outliers)
    : config_(config),
      token_(std::move(token)),
      hub_(hub),
      collector_(collector),
      executor_(executor),
      outliers_(outliers),
      rate_limiter_({.rate = config.max_calls_per_second, .burst = config.max_calls_burst}) {}

ServerCore::~ServerCore() { StopPump(); }

std::string ServerCore::address() const {
  std::lock_guard lock(mu_);
  return address_;
}

void ServerCore::set_address(std::string address) {
  std::lock_guard lock(mu_);
  address_ = std::move(address);
}

grpc::Status ServerCore::Admit(const grpc::CallbackServerContext* context) {
  const std::string peer = context->peer();
  const std::string_view client = internal::ClientAddress(peer);
  if (!rate_limiter_.Allow(client)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "more than " + internal::FormatRate(config_.max_calls_per_second) +
                " calls per second from " + std::string(client) +
                " (ServerConfig::max_calls_per_second); retry in a second"};
  }
  if (token_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto [first, last] = metadata.equal_range("authorization");
  const auto count = std::distance(first, last);
  if (count == 0) {
    return Unauthenticated(
        "this server requires a bearer token (\"authorization: Bearer <token>\" metadata, e.g. "
        "rtloop-top --token-file FILE)");
  }
  if (count > 1) {
    return Unauthenticated("the call carries " + std::to_string(count) +
                           " authorization values; send exactly one \"Bearer <token>\"");
  }
  const std::optional<std::string_view> given =
      internal::BearerToken(std::string_view(first->second.data(), first->second.size()));
  if (!given) {
    return Unauthenticated(
        "malformed authorization value: expected \"Bearer <token>\" (one space, no other "
        "characters)");
  }
  if (!internal::ConstantTimeEquals(*given, token_)) return Unauthenticated("wrong bearer token");
  return grpc::Status::OK;
}

grpc::Status ServerCore::ResetStats(const google::protobuf::RepeatedField<std::uint32_t>& ids,
                                    v1::ResetStatsResponse* out) {
  if (token_.empty()) {
    return {grpc::StatusCode::PERMISSION_DENIED,
            "ResetStats changes the statistics: this server has no bearer token, so it is "
            "read-only — start it with a token (ServerConfig::token_file, e.g. rtloop-cyclic "
            "--token-file FILE) and call with it"};
  }
  if (executor_ == nullptr) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "this server has no executor to reset (Server::Start without one)"};
  }
  Result<std::vector<TaskId>> resolved = internal::ResolveTaskIds(hub_, ids);
  if (!resolved.ok()) return ToGrpc(resolved.status());
  for (const TaskId id : *resolved) {
    if (executor_->ResetStats(id)) out->add_task_ids(id);
  }
  return grpc::Status::OK;
}

grpc::Status ServerCore::ReserveStream() {
  std::lock_guard lock(mu_);
  if (stopping_) {
    return stop_status_.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "server stopping")
                             : stop_status_;
  }
  if (live_streams_ >= config_.max_streams) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "too many open streams (" + std::to_string(config_.max_streams) +
                            "): close one or raise ServerConfig::max_streams");
  }
  ++live_streams_;
  return grpc::Status::OK;
}

void ServerCore::ReleaseStream() {
  std::lock_guard lock(mu_);
  --live_streams_;
  idle_cv_.notify_all();
}

void ServerCore::Register(const std::shared_ptr<StreamBase>& stream) {
  bool stopping = false;
  std::optional<SteadyClock::time_point> end;
  grpc::Status status;
  {
    std::lock_guard lock(mu_);
    streams_.emplace(stream.get(), stream);
    pump_wake_ = true;
    stopping = stopping_;
    end = end_deadline_;
    status = stop_status_;
  }
  pump_cv_.notify_all();
  if (!stopping) return;
  if (end) {
    stream->RequestEnd(*end);
  } else {
    stream->RequestFinish(status);
  }
}

void ServerCore::Unregister(StreamBase* stream) {
  std::shared_ptr<StreamBase> keep;
  {
    std::lock_guard lock(mu_);
    const auto it = streams_.find(stream);
    if (it == streams_.end()) return;
    keep = std::move(it->second);
    streams_.erase(it);
  }
  // `keep` goes out of scope here, outside the lock (the destructor takes the lock).
}

void ServerCore::HandlerStarted() {
  std::lock_guard lock(mu_);
  ++live_handlers_;
}

void ServerCore::HandlerDone() {
  std::lock_guard lock(mu_);
  --live_handlers_;
  idle_cv_.notify_all();
}

std::size_t ServerCore::open_streams() const {
  std::lock_guard lock(mu_);
  return live_streams_;
}

std::uint64_t ServerCore::stalled_streams_cancelled() const {
  std::lock_guard lock(mu_);
  return stalled_cancelled_;
}

void ServerCore::FillStats(const std::vector<TaskId>& ids, bool histogram,
                           v1::GetStatsResponse* out) {
  internal::FillStats(hub_, ids, histogram, out);
  outliers_.AddToStats(out);
  // The hub's count, as /metrics and the task report show it (collector.h, "Loss").
  for (const v1::TaskStats& t : out->tasks()) {
    v1::StreamLoss* loss = out->add_stream_loss();
    loss->set_task_id(t.task_id());
    const TaskTelemetry* tt = hub_.task(t.task_id());
    loss->set_lost(tt == nullptr ? 0 : tt->subscriber_lost());
  }
  std::lock_guard lock(mu_);
  out->set_open_streams(static_cast<std::uint32_t>(live_streams_));
  out->set_stalled_streams_cancelled(stalled_cancelled_);
  out->set_calls_rate_limited(rate_limiter_.refused());
}

grpc::Status ServerCore::ListOutliers(const v1::ListOutliersRequest& request,
                                      v1::ListOutliersResponse* out) {
  Result<std::vector<TaskId>> ids = internal::ResolveTaskIds(hub_, request.task_ids());
  if (!ids.ok()) return ToGrpc(ids.status());
  // No filter: every task, those added later too (an empty list is "all" to OutlierFill).
  outliers_.List(request, request.task_ids().empty() ? std::vector<TaskId>() : *ids, out);
  return grpc::Status::OK;
}

void ServerCore::StartPump() {
  {
    std::lock_guard lock(mu_);
    pump_stop_ = false;
  }
  pump_ = std::thread([this] { PumpLoop(); });
}

void ServerCore::StopPump() {
  {
    std::lock_guard lock(mu_);
    pump_stop_ = true;
  }
  pump_cv_.notify_all();
  if (pump_.joinable()) pump_.join();
}

void ServerCore::FinishAll(const grpc::Status& status) {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_status_ = status;
    end_deadline_.reset();
  }
  for (const std::shared_ptr<StreamBase>& s : Snapshot()) s->RequestFinish(status);
}

void ServerCore::EndAll(SteadyClock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    end_deadline_ = deadline;
  }
  for (const std::shared_ptr<StreamBase>& s : Snapshot()) s->RequestEnd(deadline);
}

void ServerCore::Resume() {
  std::lock_guard lock(mu_);
  stopping_ = false;
  stop_status_ = grpc::Status::OK;
  end_deadline_.reset();
}

bool ServerCore::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout,
                           [this] { return live_streams_ == 0 && live_handlers_ == 0; });
}

std::vector<std::shared_ptr<StreamBase>> ServerCore::Snapshot() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<StreamBase>> out;
  out.reserve(streams_.size());
  for (const auto& [key, stream] : streams_) out.push_back(stream);
  return out;
}

void ServerCore::PumpLoop() {
  pthread_setname_np(pthread_self(), "rtloop-pump");
  std::unique_lock lock(mu_);
  while (!pump_stop_) {
    if (streams_.empty()) {
      pump_cv_.wait(lock, [this] { return pump_stop_ || !streams_.empty(); });
      continue;
    }
    pump_wake_ = false;
    lock.unlock();
    const SteadyClock::time_point now = SteadyClock::now();
    SteadyClock::time_point next = now + config_.poll_period;  // the next stall check
    std::uint64_t stalled = 0;
    for (const std::shared_ptr<StreamBase>& s : Snapshot()) {
      if (config_.stall_timeout.count() > 0 && s->CancelIfStalled(now, config_.stall_timeout)) {
        ++stalled;
        continue;
      }
      if (s->NextDue() <= now) s->Kick();
      next = std::min(next, s->NextDue());
    }
    if (stalled > 0 && config_.log_to_stderr) {
      std::fprintf(stderr,
                   "rtloop telemetry: cancelled %llu stream(s) whose client read nothing for "
                   "%lld ms; their slots are free again\n",
                   static_cast<unsigned long long>(stalled),
                   static_cast<long long>(config_.stall_timeout.count()));
    }
    lock.lock();
    stalled_cancelled_ += stalled;
    pump_cv_.wait_until(lock, std::max(next, now), [this] { return pump_stop_ || pump_wake_; });
  }
}

std::unique_ptr<grpc::Service> MakeTelemetryService(ServerCore* core) {
  return std::make_unique<TelemetryService>(core);
}

}  // namespace rtloop::telemetry::internal
