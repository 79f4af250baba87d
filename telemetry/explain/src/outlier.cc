#include "rtloop/explain/outlier.h"

#include <algorithm>
#include <utility>

namespace rtloop::explain {

const char* CauseKindName(CauseKind kind) noexcept {
  switch (kind) {
    case CauseKind::kThread:
      return "thread";
    case CauseKind::kIrq:
      return "irq";
    case CauseKind::kSoftirq:
      return "softirq";
    case CauseKind::kTimerDelay:
      return "timer-delay";
    case CauseKind::kPageFaults:
      return "page-faults";
    case CauseKind::kPreemption:
      return "preemption";
    case CauseKind::kSteal:
      return "steal";
  }
  return "unknown";
}

const char* EvidenceKindName(EvidenceKind kind) noexcept {
  switch (kind) {
    case EvidenceKind::kNone:
      return "none";
    case EvidenceKind::kTrace:
      return "trace";
    case EvidenceKind::kCounters:
      return "counters";
  }
  return "unknown";
}

OutlierWindow LatencyWindow(TaskId task, std::string task_name, int tid, int cpu,
                            std::uint64_t cycle, std::int64_t release_ns, std::int64_t wake_ns,
                            std::int64_t done_ns, bool execution) {
  OutlierWindow w;
  w.task = task;
  w.task_name = std::move(task_name);
  w.tid = tid;
  w.cpu = cpu;
  w.cycle = cycle;
  w.release_ns = release_ns;
  w.wake_ns = wake_ns;
  w.done_ns = done_ns;
  w.execution = execution;
  return w;
}

OutlierRecord MakeRecord(const OutlierWindow& window) {
  OutlierRecord r;
  r.window = window;
  return r;
}

void FinishRecord(OutlierRecord* record) {
  std::vector<Cause>& causes = record->causes;
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) {
    const bool a_timed = a.ns >= 0;
    const bool b_timed = b.ns >= 0;
    if (a_timed != b_timed) return a_timed;
    return a_timed ? a.ns > b.ns : a.count > b.count;
  });
  const std::int64_t length = std::max<std::int64_t>(record->window.length_ns(), 0);
  std::int64_t explained = 0;
  for (const Cause& c : causes) {
    if (c.ns > 0) explained += c.ns;
  }
  record->explained_ns = std::min(explained, length);
  record->unexplained_ns = length - record->explained_ns;
  if (record->raw.size() > kMaxRawLines) {
    record->raw.resize(kMaxRawLines);
  }
}

}  // namespace rtloop::explain
