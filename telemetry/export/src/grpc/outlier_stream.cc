#include "outlier_stream.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "outlier_fill.h"
#include "service_fill.h"
#include "stream_reactor.h"

namespace rtloop::telemetry::internal {
namespace {

class OutlierStreamReactor final : public StreamReactor<v1::ListOutliersResponse> {
 public:
  OutlierStreamReactor(ServerCore* core, grpc::CallbackServerContext* context,
                       const v1::WatchOutliersRequest& request, std::vector<TaskId> tasks,
                       std::chrono::milliseconds interval)
      : StreamReactor(core, context),
        tasks_(std::move(tasks)),
        include_raw_(request.include_raw()),
        interval_(interval),
        next_index_(request.first()),
        due_(SteadyClock::now()) {}

 protected:
  bool Fill(v1::ListOutliersResponse* out) override {
    const SteadyClock::time_point now = SteadyClock::now();
    if (!more_ && now < due_) return false;
    if (!more_) due_ = now + interval_;
    return Page(out, /*always=*/false);
  }
  // The run ended: the records still to come, as fast as the client takes them. Looked up
  // afresh, not by more_: that says what waited at the last look, and the last records of a
  // run are made after it (the explanation's final pass runs just before the end).
  bool FillQueued(v1::ListOutliersResponse* out) override { return Page(out, /*always=*/false); }
  void FillEnd(v1::ListOutliersResponse* out) override {
    (void)Page(out, /*always=*/true);
    out->mutable_end()->set_reason(v1::STREAM_END_REASON_RUN_ENDED);
  }
  SteadyClock::time_point DueLocked() const override {
    return more_ ? SteadyClock::time_point::min() : due_;
  }

 private:
  // The next page from next_index_ into `out`; false (nothing to send) when it has no record and
  // the counts did not change since the last message, unless `always`.
  bool Page(v1::ListOutliersResponse* out, bool always) {
    v1::ListOutliersRequest request;
    request.set_first(next_index_);
    request.set_max(static_cast<std::uint32_t>(kDefaultOutliersPerCall));
    request.set_include_raw(include_raw_);
    out->Clear();
    core_->outliers().List(request, tasks_, out);
    next_index_ = out->next();
    more_ = out->next() < out->total();
    const std::vector<std::uint64_t> counts = {
        out->explaining(),  out->total(),   out->outliers(),    out->recorded(),
        out->unexplained(), out->dropped(), out->samples_lost()};
    const bool changed = !sent_any_ || counts != last_counts_ || out->records_size() > 0;
    if (!changed && !always) return false;
    sent_any_ = true;
    last_counts_ = counts;
    return true;
  }

  const std::vector<TaskId> tasks_;  // empty: every task
  const bool include_raw_;
  const std::chrono::milliseconds interval_;
  std::uint64_t next_index_;
  SteadyClock::time_point due_;
  bool more_ = false;  // records wait beyond the last message
  bool sent_any_ = false;
  std::vector<std::uint64_t> last_counts_;
};

}  // namespace

grpc::ServerWriteReactor<v1::ListOutliersResponse>* StartOutlierStream(
    ServerCore* core, grpc::CallbackServerContext* context,
    const v1::WatchOutliersRequest& request) {
  using Error = ErrorReactor<v1::ListOutliersResponse>;
  if (grpc::Status s = core->Admit(context); !s.ok()) return new Error(core, s);
  Result<std::vector<TaskId>> ids = ResolveTaskIds(core->hub(), request.task_ids());
  if (!ids.ok()) return new Error(core, ToGrpc(ids.status()));
  Result<std::chrono::milliseconds> interval =
      CheckWatchInterval(request.interval_ms(), core->config());
  if (!interval.ok()) return new Error(core, ToGrpc(interval.status()));
  if (grpc::Status s = core->ReserveStream(); !s.ok()) return new Error(core, s);
  auto reactor = std::make_shared<OutlierStreamReactor>(
      core, context, request, request.task_ids().empty() ? std::vector<TaskId>() : std::move(*ids),
      *interval);
  OutlierStreamReactor* raw = reactor.get();
  core->Register(reactor);
  raw->Kick();  // the first page right away
  HandOver(raw);
  return raw;
}

}  // namespace rtloop::telemetry::internal
