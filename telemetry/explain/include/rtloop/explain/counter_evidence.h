// Counter evidence: why a cycle was late when the kernel's trace cannot be used (no tracefs, not
// root, locked down). Poll() samples /proc counters into a bounded history; Explain() takes the
// two snapshots around an outlier's window and turns their differences into causes: the task
// thread's page faults and involuntary switches, the IRQs and softirqs on its CPU, the steal time,
// plus the real-time threads that MAY run on that CPU with a priority at least the task's
// (candidates, not proof). Coarser than the trace: counts over the sampling interval, not times
// inside the window (README.md, "Counter evidence").
//
//   CounterConfig config;
//   config.threads = {{.tid = rt_tid, .cpu = 1, .policy = SCHED_FIFO, .priority = 80}};
//   config.why_not_trace = "tracefs: not permitted (run as root or grant tracefs permissions)";
//   Result<std::unique_ptr<CounterEvidence>> source = CounterEvidence::Create(config);
//   ...                                   // on the explainer's (non-RT) thread:
//   (*source)->Poll(now_ns);              // every 10-50 ms
//   OutlierRecord r = MakeRecord(window);
//   if ((*source)->Explain(window, &r)) FinishRecord(&r);
//   // false with "not yet sampled" in r.evidence_note: the window ends after the newest
//   // snapshot; call Explain() again after the next Poll(). False with "too old": the history no
//   // longer reaches back to the window's beginning; the record cannot be explained by counters.
//
// Thread contract: one non-RT thread calls Poll() and Explain() (they read /proc; Explain()
// allocates). The getters may be called from that thread only. Never call any of it from an RT
// thread. The history and the read buffers are allocated by Create(); Poll() does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/framework/status.h"

namespace rtloop::explain {

// A thread whose outliers the counters explain.
struct WatchedThread {
  // A thread of this process (/proc/self/task/TID), alive while it is sampled: a thread that has
  // exited cannot be read (the record's raw line says "counters not read"), one that is exiting
  // may read as stale (seen on Linux 6.18).
  int tid = 0;
  int cpu = -1;      // the CPU it is pinned to; -1 when not pinned (then no per-CPU counters)
  int policy = 0;    // SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2, SCHED_DEADLINE 6...
  int priority = 0;  // its real-time priority (1-99) under FIFO/RR; 0 otherwise
};

struct CounterConfig {
  std::vector<WatchedThread> threads;  // at least one
  // Snapshots kept (a ring: the oldest is overwritten). At a 20 ms poll, 64 reach back ~1.3 s.
  std::size_t history = 64;
  // Why the trace is not used, copied into every record's evidence_note (e.g. "tracefs: not
  // permitted (run as root or grant tracefs permissions)").
  std::string why_not_trace;
  // /proc/interrupts is read into a buffer of this size; a longer file is cut at its last whole
  // line and the records say so (lines past the cut are not counted).
  std::size_t interrupts_bytes = std::size_t{256} * 1024;
  // IRQ lines (numbered and LOC/RES/...) remembered per snapshot; further new lines are ignored
  // and counted (irq_lines_ignored()).
  std::size_t max_irq_lines = 256;
  // Explain() examines at most this many threads when it looks for candidates (two system calls
  // each, a /proc directory per process: about 12 us a thread on a 2-vCPU VM, so 768 keep a scan
  // under the 10 ms per outlier). /proc lists the kernel's threads (migration/N,
  // irq/N-...) first; the record says when the bound cut the scan.
  std::size_t max_threads_scanned = 768;
  // At most this many candidate threads are named per record (highest priority first).
  std::size_t max_candidates = 16;
};

class CounterEvidence final : public EvidenceSource {
 public:
  // Validates the config (threads present and alive in this process, history 2..100000,
  // interrupts_bytes >= 1024, the other bounds >= 1; InvalidArgument or NotFound saying which),
  // opens the /proc files and allocates the history. Needs no privilege.
  static Result<std::unique_ptr<CounterEvidence>> Create(const CounterConfig& config);
  ~CounterEvidence() override;

  EvidenceKind kind() const noexcept override { return EvidenceKind::kCounters; }

  // Takes one snapshot of every counter, time-stamped with CLOCK_MONOTONIC before and after its
  // reads (`now_ns` is not used: the snapshot stamps its own reads). Not RT-safe: reads /proc.
  void Poll(std::int64_t now_ns) override;

  // Adds the causes found between the latest snapshot taken wholly before the window's beginning
  // and the earliest taken wholly after its end; evidence = kCounters, evidence_note = the
  // sampling interval around the window and why_not_trace. Returns false, with evidence = kNone
  // and the reason in evidence_note (and no cause added), when:
  //   - "not yet sampled": no snapshot after the window's end yet. Retry after the next Poll().
  //   - "too old": the oldest snapshot kept is after the window's beginning. Final.
  //   - neither the window's thread nor its CPU is watched. Final.
  // Not RT-safe: scans /proc for candidate threads and allocates.
  bool Explain(const OutlierWindow& window, OutlierRecord* record) override;

  // The CPU time (CLOCK_THREAD_CPUTIME_ID) of the last and the slowest Poll() and Explain().
  std::int64_t last_poll_cpu_ns() const noexcept { return last_poll_cpu_ns_; }
  std::int64_t max_poll_cpu_ns() const noexcept { return max_poll_cpu_ns_; }
  std::int64_t last_explain_cpu_ns() const noexcept { return last_explain_cpu_ns_; }
  std::int64_t max_explain_cpu_ns() const noexcept { return max_explain_cpu_ns_; }
  std::uint64_t polls() const noexcept { return polls_; }
  // Polls whose /proc/interrupts did not fit interrupts_bytes, and new IRQ lines not remembered.
  std::uint64_t interrupts_truncated() const noexcept { return interrupts_truncated_; }
  std::uint64_t irq_lines_ignored() const noexcept { return irq_lines_ignored_; }

  struct State;  // the history and the open files (src/counter_state.h)

 private:
  explicit CounterEvidence(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
  std::int64_t last_poll_cpu_ns_ = 0;
  std::int64_t max_poll_cpu_ns_ = 0;
  std::int64_t last_explain_cpu_ns_ = 0;
  std::int64_t max_explain_cpu_ns_ = 0;
  std::uint64_t polls_ = 0;
  std::uint64_t interrupts_truncated_ = 0;
  std::uint64_t irq_lines_ignored_ = 0;
};

}  // namespace rtloop::explain
