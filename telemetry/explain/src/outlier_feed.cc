#include "rtloop/explain/outlier_feed.h"

#include <algorithm>
#include <utility>

#include "rtloop/explain/session.h"

namespace rtloop::explain {

void OutlierFeed::Attach(std::shared_ptr<const ExplainSession> session) {
  std::lock_guard<std::mutex> lock(mu_);
  session_ = std::move(session);
}

std::shared_ptr<const ExplainSession> OutlierFeed::Session() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_;
}

OutlierFeed::Page OutlierFeed::Read(std::size_t first, std::size_t max) const {
  Page p;
  const std::shared_ptr<const ExplainSession> s = Session();
  if (s == nullptr) return p;
  p.explaining = true;
  p.evidence = s->evidence_note();
  // Counts first: a record made between the two reads is then in the records, never counted
  // before it exists.
  p.stats = s->stats();
  p.records = s->Records(first, max);
  // At least the records returned (one may have been made after the count was read); a `first`
  // past the end returns none and leaves the count as it is.
  p.total =
      p.records.empty() ? s->record_count() : std::max(s->record_count(), first + p.records.size());
  p.first = first;
  return p;
}

OutlierFeed::Page OutlierFeed::Last(std::size_t n) const {
  const std::shared_ptr<const ExplainSession> s = Session();
  const std::size_t total = s != nullptr ? s->record_count() : 0;
  return Read(total > n ? total - n : 0, n);
}

}  // namespace rtloop::explain
