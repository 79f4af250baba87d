#include "outlier_fill.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "rtloop/explain/explainer.h"
#include "rtloop/telemetry/proto_convert.h"
#include "rtloop/telemetry/utf8.h"

namespace rtloop::telemetry::internal {
namespace {

// Records read at a time while catching up with the feed (each read copies them).
constexpr std::size_t kCatchUpChunk = 256;

bool Wanted(const std::vector<TaskId>& tasks, TaskId task) {
  return tasks.empty() || std::find(tasks.begin(), tasks.end(), task) != tasks.end();
}

}  // namespace

void OutlierFill::CatchUp(std::size_t total) {
  // mu_ held by the caller.
  if (total < read_) {  // another session: its records start again at 0
    read_ = 0;
    last_.clear();
  }
  while (read_ < total) {
    const explain::OutlierFeed::Page page =
        feed_->Read(read_, std::min(total - read_, kCatchUpChunk));
    if (page.records.empty()) break;
    for (const explain::OutlierRecord& r : page.records) {
      v1::OutlierRecord& last = last_[r.window.task];
      last.Clear();
      ToProto(r, read_, /*include_raw=*/false, &last, /*max_causes=*/1);
      ++read_;
    }
  }
}

void OutlierFill::FillCounts(const explain::ExplainerStats& stats, const std::vector<TaskId>& tasks,
                             google::protobuf::RepeatedPtrField<v1::TaskOutlierCounts>* out) {
  for (const explain::TaskOutlierStats& t : stats.tasks) {
    if (!Wanted(tasks, t.task)) continue;
    v1::TaskOutlierCounts* counts = out->Add();
    ToProto(t, counts);
    const auto it = last_.find(t.task);
    if (it != last_.end()) *counts->mutable_last() = it->second;
  }
}

void OutlierFill::List(const v1::ListOutliersRequest& request, const std::vector<TaskId>& tasks,
                       v1::ListOutliersResponse* out) {
  out->set_first(request.first());
  out->set_next(request.first());
  if (feed_ == nullptr) return;
  const std::size_t max = request.max() == 0
                              ? kDefaultOutliersPerCall
                              : std::min<std::size_t>(request.max(), kMaxOutliersPerCall);
  // A first index beyond what size_t holds (32-bit targets) is past every record, not wrapped.
  const std::size_t first = request.first() > std::numeric_limits<std::size_t>::max()
                                ? std::numeric_limits<std::size_t>::max()
                                : static_cast<std::size_t>(request.first());
  const explain::OutlierFeed::Page page = feed_->Read(first, max);
  if (!page.explaining) return;
  out->set_explaining(true);
  out->set_evidence(ToValidUtf8(page.evidence));
  out->set_total(page.total);
  out->set_next(request.first() + page.records.size());
  for (std::size_t i = 0; i < page.records.size(); ++i) {
    const explain::OutlierRecord& r = page.records[i];
    if (!Wanted(tasks, r.window.task)) continue;
    ToProto(r, request.first() + i, request.include_raw(), out->add_records());
  }
  const explain::ExplainerStats& s = page.stats;
  out->set_outliers(s.outliers);
  out->set_recorded(s.recorded);
  out->set_unexplained(s.unexplained);
  out->set_dropped(s.dropped);
  out->set_samples_lost(s.samples_lost);
  out->set_analysis_cpu_ns_max(s.explain_cpu_ns_max);
  out->set_analysis_cpu_ns_total(s.explain_cpu_ns_total);
  std::lock_guard lock(mu_);
  CatchUp(page.total);
  FillCounts(s, tasks, out->mutable_tasks());
}

void OutlierFill::AddToStats(v1::GetStatsResponse* out) {
  if (feed_ == nullptr) return;
  const explain::OutlierFeed::Page page = feed_->Counts();
  if (!page.explaining) return;
  std::lock_guard lock(mu_);
  CatchUp(page.total);
  for (v1::TaskStats& t : *out->mutable_tasks()) {
    for (const explain::TaskOutlierStats& s : page.stats.tasks) {
      if (s.task != t.task_id()) continue;
      v1::TaskOutlierCounts* counts = t.mutable_outliers();
      ToProto(s, counts);
      const auto it = last_.find(s.task);
      if (it != last_.end()) *counts->mutable_last() = it->second;
    }
  }
}

}  // namespace rtloop::telemetry::internal
