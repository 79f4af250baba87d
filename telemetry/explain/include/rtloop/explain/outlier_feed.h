// OutlierFeed: a running program's outlier records for the views that show them while it runs
// (gRPC, /metrics, the live page, rtloop-top). The servers start before the tasks, and so before
// the explanation session exists: they hold the feed, and the program attaches the session to it
// once the session began (rtloop::Runtime does this in Start()).
//
//   explain::OutlierFeed feed;                         // the Runtime's, outlives its servers
//   ... server started with &feed ...
//   feed.Attach(session);                               // std::shared_ptr<const ExplainSession>
//   OutlierFeed::Page p = feed.Read(/*first=*/0, /*max=*/50);
//   if (!p.explaining) ... "not explained" (no task has a threshold), never zeros
//   for (const OutlierRecord& r : p.records) ...       // records p.first, p.first + 1, ...
//
// Threading: every member from any non-RT thread, concurrently (a mutex guards the session
// pointer; the session guards its records). Not RT-safe: it allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rtloop/explain/explainer.h"
#include "rtloop/explain/outlier.h"

namespace rtloop::explain {

class ExplainSession;

class OutlierFeed {
 public:
  struct Page {
    bool explaining = false;  // a session is attached: some task has a threshold
    std::string evidence;     // which evidence is used, and why (ExplainSession::evidence_note)
    ExplainerStats stats;     // the counts so far, per task in stats.tasks
    std::size_t total = 0;    // records made so far
    std::size_t first = 0;    // the index (0-based, in recording order) of records[0]
    std::vector<OutlierRecord> records;
  };

  // The session whose records the feed shows; nullptr detaches.
  void Attach(std::shared_ptr<const ExplainSession> session);

  // At most `max` records from the `first`-th on, with the counts.
  Page Read(std::size_t first, std::size_t max) const;
  // The last `n` records (fewer when fewer were made), with the counts.
  Page Last(std::size_t n) const;
  // The counts alone (no record is copied): what /metrics reads.
  Page Counts() const { return Read(0, 0); }

 private:
  std::shared_ptr<const ExplainSession> Session() const;

  mutable std::mutex mu_;  // guards session_
  std::shared_ptr<const ExplainSession> session_;
};

}  // namespace rtloop::explain
