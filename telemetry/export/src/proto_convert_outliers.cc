// The outlier records' conversions of proto_convert.h (rtloop::explain -> rtloop.telemetry.v1):
// compiled into rtloop::telemetry, which sees rtloop::explain (the core's proto_convert.cc does
// not). Every string goes through ToValidUtf8: thread names and raw trace lines come from the
// kernel and may hold any bytes, which protobuf would refuse to serialise.
#include <algorithm>
#include <cstddef>

#include "rtloop/explain/explainer.h"
#include "rtloop/explain/outlier.h"
#include "rtloop/telemetry/proto_convert.h"
#include "rtloop/telemetry/utf8.h"

namespace rtloop::telemetry {

v1::CauseKind ToProto(explain::CauseKind kind) noexcept {
  switch (kind) {
    case explain::CauseKind::kThread:
      return v1::CAUSE_KIND_THREAD;
    case explain::CauseKind::kIrq:
      return v1::CAUSE_KIND_IRQ;
    case explain::CauseKind::kSoftirq:
      return v1::CAUSE_KIND_SOFTIRQ;
    case explain::CauseKind::kTimerDelay:
      return v1::CAUSE_KIND_TIMER_DELAY;
    case explain::CauseKind::kPageFaults:
      return v1::CAUSE_KIND_PAGE_FAULTS;
    case explain::CauseKind::kPreemption:
      return v1::CAUSE_KIND_PREEMPTION;
    case explain::CauseKind::kSteal:
      return v1::CAUSE_KIND_STEAL;
  }
  return v1::CAUSE_KIND_UNSPECIFIED;
}

v1::EvidenceKind ToProto(explain::EvidenceKind kind) noexcept {
  switch (kind) {
    case explain::EvidenceKind::kNone:
      return v1::EVIDENCE_KIND_NONE;
    case explain::EvidenceKind::kTrace:
      return v1::EVIDENCE_KIND_TRACE;
    case explain::EvidenceKind::kCounters:
      return v1::EVIDENCE_KIND_COUNTERS;
  }
  return v1::EVIDENCE_KIND_UNSPECIFIED;
}

void ToProto(const explain::Cause& cause, v1::OutlierCause* out) {
  out->set_kind(ToProto(cause.kind));
  out->set_name(ToValidUtf8(cause.name));
  if (cause.ns >= 0) out->set_ns(cause.ns);  // -1: counted only, absent
  out->set_count(cause.count);
  if (cause.id >= 0) out->set_id(cause.id);
  out->set_detail(ToValidUtf8(cause.detail));
}

void ToProto(const explain::OutlierRecord& record, std::uint64_t index, bool include_raw,
             v1::OutlierRecord* out, std::size_t max_causes) {
  const explain::OutlierWindow& w = record.window;
  out->set_index(index);
  out->set_task_id(w.task);
  out->set_task_name(ToValidUtf8(w.task_name));
  out->set_tid(w.tid);
  if (w.cpu >= 0) out->set_cpu(w.cpu);
  out->set_cycle(w.cycle);
  out->set_kind(w.execution ? v1::OUTLIER_KIND_EXECUTION : v1::OUTLIER_KIND_LATENCY);
  out->set_release_ns(w.release_ns);
  out->set_wake_ns(w.wake_ns);
  out->set_done_ns(w.done_ns);
  out->set_latency_ns(w.wake_ns - w.release_ns);
  out->set_execution_ns(w.done_ns - w.wake_ns);
  out->set_evidence(ToProto(record.evidence));
  out->set_evidence_note(ToValidUtf8(record.evidence_note));
  const std::size_t causes = std::min(record.causes.size(), max_causes);
  for (std::size_t i = 0; i < causes; ++i) ToProto(record.causes[i], out->add_causes());
  out->set_explained_ns(record.explained_ns);
  out->set_unexplained_ns(record.unexplained_ns);
  if (include_raw) {
    for (const std::string& line : record.raw) out->add_raw(ToValidUtf8(line));
  }
}

void ToProto(const explain::TaskOutlierStats& stats, v1::TaskOutlierCounts* out) {
  out->set_task_id(stats.task);
  out->set_task_name(ToValidUtf8(stats.name));
  out->set_latency_above_ns(stats.latency_above_ns);
  out->set_execution_above_ns(stats.execution_above_ns);
  out->set_outliers(stats.outliers);
  out->set_recorded(stats.recorded);
  out->set_unexplained(stats.unexplained);
  out->set_dropped(stats.dropped);
  for (std::size_t k = 0; k < stats.by_leading_cause.size(); ++k) {
    if (stats.by_leading_cause[k] == 0) continue;
    v1::CauseKindCount* c = out->add_by_leading_cause();
    c->set_kind(ToProto(static_cast<explain::CauseKind>(k)));
    c->set_records(stats.by_leading_cause[k]);
  }
  out->set_without_cause(stats.without_cause);
}

}  // namespace rtloop::telemetry
