// Outlier records: why one cycle of a task was late, as rtloop's explanation library states it
// (telemetry/explain/README.md). A record names the cycle and its times, the causes ranked by the
// time they took inside the cycle's window, the unexplained remainder, the kind of evidence and
// the raw evidence around the window (bounded).
//
//   OutlierWindow w = LatencyWindow(task, "cyclic0", tid, cpu, cycle, e_ns, w_ns, d_ns);
//   OutlierRecord r = MakeRecord(w);
//   trace_source.Explain(w, &r);   // adds causes and raw lines (trace_evidence.h,
//                                  // counter_evidence.h)
//   FinishRecord(&r);              // ranks the causes, states the unexplained remainder
//
// Times are CLOCK_MONOTONIC nanoseconds (a task on CLOCK_REALTIME is converted by the caller).
// Thread contract: value types and free functions; an EvidenceSource is used by one non-RT thread
// at a time (never an RT thread: sources read files and allocate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"

namespace rtloop::explain {

// What a cause is. The trace evidence gives each its time in the window; the counter evidence
// gives counts (and steal time), and says so.
enum class CauseKind {
  kThread,      // another thread ran on the task's CPU inside the window (comm, tid, policy/prio)
  kIrq,         // a hard IRQ handler ran on the CPU (its name, e.g. "virtio0-input.0", number)
  kSoftirq,     // a softirq ran on the CPU ("NET_RX", "TIMER", "RCU", ...)
  kTimerDelay,  // the task's timer fired late against E_k (hrtimer expiry minus E_k)
  kPageFaults,  // the task's thread took page faults inside the window (minor/major)
  kPreemption,  // the task's thread was switched out involuntarily (no trace: who is unknown)
  kSteal,       // the hypervisor ran another guest or itself (steal time on the CPU)
};
inline constexpr std::size_t kCauseKindCount = 7;  // CauseKind's values, 0..6

// "thread", "irq", "softirq", "timer-delay", "page-faults", "preemption", "steal".
const char* CauseKindName(CauseKind kind) noexcept;

// Where a record's causes come from (README.md, "Evidence").
enum class EvidenceKind {
  kNone,      // nothing could be read: the note says why
  kTrace,     // the kernel's trace events in rtloop's own tracefs instance: who ran, for how long
  kCounters,  // /proc counters over the interval around the window: coarser, counts not times
};
// "none", "trace", "counters".
const char* EvidenceKindName(EvidenceKind kind) noexcept;

struct Cause {
  CauseKind kind = CauseKind::kThread;
  std::string name;         // thread comm, IRQ or softirq name, "steal", "minor faults"...
  std::int64_t ns = -1;     // time inside the window; -1 when the evidence has a count only
  std::uint64_t count = 0;  // occurrences inside the window (runs, IRQs, faults, switches)
  int id = -1;              // kThread: the thread's tid; kIrq: the IRQ number; else -1
  std::string detail;       // e.g. "FIFO 95" for a thread, "major 2, minor 30" for faults
};

// The cycle to explain and the interval of it that was late: [E_k, W_k] for a wake-up latency
// outlier, [W_k, D_k] for an execution-time outlier.
struct OutlierWindow {
  TaskId task = 0;
  std::string task_name;
  int tid = 0;                  // the task's RT thread
  int cpu = -1;                 // the CPU the task is pinned to; -1 when not pinned
  std::uint64_t cycle = 0;      // k, 0-based
  std::int64_t release_ns = 0;  // E_k
  std::int64_t wake_ns = 0;     // W_k
  std::int64_t done_ns = 0;     // D_k
  bool execution = false;       // true: the execution time was the outlier, not the latency
  std::int64_t begin_ns() const noexcept { return execution ? wake_ns : release_ns; }
  std::int64_t end_ns() const noexcept { return execution ? done_ns : wake_ns; }
  std::int64_t length_ns() const noexcept { return end_ns() - begin_ns(); }
};

// At most this many raw evidence lines are kept per record (the lines nearest the window).
inline constexpr std::size_t kMaxRawLines = 64;

struct OutlierRecord {
  OutlierWindow window;
  EvidenceKind evidence = EvidenceKind::kNone;
  std::string evidence_note;        // what the evidence is, and why it is not the trace when not
  std::vector<Cause> causes;        // after FinishRecord: timed causes by time, then counted ones
  std::int64_t explained_ns = 0;    // sum of the timed causes, at most the window's length
  std::int64_t unexplained_ns = 0;  // the window's length minus explained_ns, never hidden
  std::vector<std::string> raw;     // raw evidence around the window, at most kMaxRawLines
};

// The window of a wake-up latency (execution = false) or execution-time outlier.
OutlierWindow LatencyWindow(TaskId task, std::string task_name, int tid, int cpu,
                            std::uint64_t cycle, std::int64_t release_ns, std::int64_t wake_ns,
                            std::int64_t done_ns, bool execution = false);

// A record for `window` with no evidence yet.
OutlierRecord MakeRecord(const OutlierWindow& window);

// Ranks the causes (timed ones by time, descending; then count-only ones by count), clamps the
// explained time to the window and states the unexplained remainder; trims raw to kMaxRawLines.
void FinishRecord(OutlierRecord* record);

// One source of evidence. Explain() adds the causes it finds inside the window (and raw lines),
// sets record->evidence and evidence_note, and returns false when it has nothing for this window
// (not available, or the window is no longer covered: overwritten, too old), saying why in
// evidence_note. Called on a non-RT thread, soon after the cycle (within about a second).
class EvidenceSource {
 public:
  virtual ~EvidenceSource() = default;
  virtual EvidenceKind kind() const noexcept = 0;
  // Called regularly (every 10-50 ms) by the thread that calls Explain(): a source that samples
  // (the counters) takes its snapshot here. Never on an RT thread.
  virtual void Poll(std::int64_t now_ns) { (void)now_ns; }
  virtual bool Explain(const OutlierWindow& window, OutlierRecord* record) = 0;
};

}  // namespace rtloop::explain
