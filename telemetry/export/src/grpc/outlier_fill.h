// The outlier part of the Telemetry service (API revision 2): the ListOutliers response and the
// `outliers` of each GetStats task, read from an explain::OutlierFeed. No gRPC headers (like
// service_fill.h). Internal to rtloop_telemetry.
//
//   OutlierFill fill(&runtime.outlier_feed());        // nullptr: nothing is explained
//   v1::ListOutliersResponse r;
//   fill.List(request, /*tasks=*/{}, &r);             // records request.first.., the counts
//   fill.AddToStats(&stats_response);                 // TaskStats.outliers of explained tasks
//
// Each task's last record (TaskOutlierCounts.last) is kept here: the feed pages by index only, so
// the records made since the previous call are read once (OutlierFeed::Read from the index
// reached) and each task's latest remembered, with its leading cause only. A feed whose record
// count went down (another session attached) is read again from 0.
//
// Threading: every member from any non-RT thread, concurrently (a mutex guards the last
// records). Not RT-safe: allocates, locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "rtloop/explain/outlier_feed.h"
#include "rtloop/framework/cycle_observer.h"
#include "rtloop/telemetry/v1/telemetry.pb.h"

namespace rtloop::telemetry::internal {

// Records one ListOutliers call sends at most (a larger `max` is taken as this), and the number
// when the request names none.
inline constexpr std::size_t kMaxOutliersPerCall = 1000;
inline constexpr std::size_t kDefaultOutliersPerCall = 100;
// The API revision served and its features (telemetry.proto, "What a server has").
inline constexpr std::uint32_t kApiRevision = 2;
inline constexpr const char* kApiFeatures[] = {"list_outliers", "watch_outliers"};

class OutlierFill {
 public:
  explicit OutlierFill(const explain::OutlierFeed* feed) : feed_(feed) {}

  // The ListOutliers response: records from request.first (at most request.max, bounded by
  // kMaxOutliersPerCall) of `tasks` (empty: every task), the counts of those tasks and the
  // totals. Without a feed, or before the explanation began: explaining = false, nothing else.
  void List(const v1::ListOutliersRequest& request, const std::vector<TaskId>& tasks,
            v1::ListOutliersResponse* out);
  // Sets `outliers` on every task of `out` that is explained; the others stay without.
  void AddToStats(v1::GetStatsResponse* out);

 private:
  // Reads the records made since the last call (up to `total`) into last_; returns each task's
  // last record as a copy (under mu_).
  void CatchUp(std::size_t total);
  void FillCounts(const explain::ExplainerStats& stats, const std::vector<TaskId>& tasks,
                  google::protobuf::RepeatedPtrField<v1::TaskOutlierCounts>* out);

  const explain::OutlierFeed* const feed_;
  std::mutex mu_;
  std::size_t read_ = 0;                      // guarded by mu_: records read into last_
  std::map<TaskId, v1::OutlierRecord> last_;  // guarded by mu_: each task's last record
};

}  // namespace rtloop::telemetry::internal
