// Trace evidence: why a cycle was late, from the kernel's own trace events (README.md, "Trace
// evidence"). Open() creates rtloop's own tracefs instance (never the global buffer) that records
// scheduling, IRQ, softirq and hrtimer events on the tasks' CPUs into a bounded, overwriting
// per-CPU buffer; Poll() (the explainer's, every 20 ms) consumes each CPU's trace_pipe_raw in
// binary, without the kernel formatting text, into a bounded in-memory history of pages;
// Explain() decodes the window's CPU history from memory and splits the window into exclusive
// segments: the threads that ran (comm, tid, policy and priority), the hard IRQ handlers, the
// softirqs, and the task's timer delay.
//
//   Result<std::unique_ptr<TraceEvidence>> trace = TraceEvidence::Open({.cpus = {1}});
//   if (!trace.ok()) use_counters(trace.status().message());   // the reason, with the fix
//   for (const std::string& note : (*trace)->open_notes()) log(note);  // e.g. a stale instance
//   (*trace)->Poll(now_ns);                      // regularly: keeps the kernel's buffer drained
//   OutlierRecord r = MakeRecord(window);
//   (*trace)->Explain(window, &r);               // drains first too: the window's end is there
//   FinishRecord(&r);
//
// Thread contract: Open() and the destructor on any non-RT thread; Poll() and Explain() from one
// non-RT thread at a time. Nothing here runs on an RT thread: the RT thread does nothing extra,
// the kernel records the events. Not RT-safe: reads tracefs files and allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/framework/status.h"

namespace rtloop::explain {
namespace trace {
class RawHistory;
struct TraceEvent;
}  // namespace trace

struct TraceConfig {
  // The CPUs to trace (the tasks' CPUs); empty = all online CPUs.
  std::vector<int> cpus;
  // Per-CPU kernel ring buffer. Poll() empties it every 20 ms, so it only has to hold what comes
  // between two polls (and a late one): 256 KiB is ~1.1 s of a 1 kHz task's CPU.
  int buffer_size_kb = 256;
  // Per-CPU in-memory history (committed page bytes, the kernel's own encoding): what Explain()
  // can still attribute, ~4 s of a 1 kHz task on a quiet CPU per MiB. Explain()'s cost does not
  // grow with it (it decodes 100 ms around the window). 0 = the larger of 1024 and buffer_size_kb
  // (README.md, "Cost and buffer size").
  int history_kb = 0;
  // The tracefs instance (instances/<name>); empty = "rtloop-<pid>", which a later Open() of
  // another process removes once this process is dead.
  std::string instance;
};

class TraceEvidence final : public EvidenceSource {
 public:
  // Finds tracefs (/sys/kernel/tracing, else /sys/kernel/debug/tracing; mounts it at
  // /sys/kernel/tracing when it is not mounted and the process may), removes stale "rtloop-<pid>"
  // instances of dead processes, creates the instance and starts it. The Status says what was
  // wrong and the fix (no privilege, tracefs missing, lockdown, a CPU that is not online, a
  // required event missing); the caller then falls back to the counters with it as the reason.
  static Result<std::unique_ptr<TraceEvidence>> Open(const TraceConfig& config);
  // Stops the instance and removes it.
  ~TraceEvidence() override;
  TraceEvidence(const TraceEvidence&) = delete;
  TraceEvidence& operator=(const TraceEvidence&) = delete;

  EvidenceKind kind() const noexcept override { return EvidenceKind::kTrace; }

  // Moves what the kernel recorded on each CPU into the in-memory history (O_NONBLOCK reads of
  // trace_pipe_raw); an error is kept and said in the next record's note.
  void Poll(std::int64_t now_ns) override;

  // Adds the causes found in the window on the window's CPU (when window.cpu is -1: the CPU the
  // task's thread ran on nearest W_k), up to kMaxRawLines trace lines nearest the
  // window, and sets evidence = kTrace and the note (instance, buffer size, CPU). Returns false,
  // with evidence = kNone and the reason in evidence_note, when the window is no longer in the
  // buffer (the note gives the buffer's oldest event) or the CPU is unknown or not traced.
  bool Explain(const OutlierWindow& window, OutlierRecord* record) override;

  // Things Open() did that the caller should print (a stale instance removed, an optional event
  // this kernel lacks).
  const std::vector<std::string>& open_notes() const noexcept { return notes_; }
  const std::string& instance_name() const noexcept { return name_; }
  const std::string& instance_path() const noexcept { return path_; }  // .../instances/<name>
  int buffer_size_kb() const noexcept { return buffer_kb_; }
  const std::vector<int>& cpus() const noexcept { return cpus_; }
  int history_kb() const noexcept { return history_kb_; }
  // The CPU time (CLOCK_THREAD_CPUTIME_ID) of the last Explain() and the largest so far, ns.
  std::int64_t last_explain_cpu_ns() const noexcept { return last_cpu_ns_; }
  std::int64_t max_explain_cpu_ns() const noexcept { return max_cpu_ns_; }
  // The oldest event the in-memory history holds for `cpu`, CLOCK_MONOTONIC ns; -1: none.
  std::int64_t history_oldest_ns(int cpu) const;
  // The CPU time of every Poll() so far, ns.
  std::int64_t poll_cpu_ns() const noexcept { return poll_cpu_ns_; }

 private:
  TraceEvidence(std::string name, std::string path, int buffer_kb, int history_kb,
                std::vector<int> cpus);
  Status Configure(const std::string& tracefs);
  bool ExplainOn(const OutlierWindow& window, OutlierRecord* record);
  void Drain(std::size_t index);
  std::size_t LocateCpu(const OutlierWindow& window, std::string* why);
  std::string Note(int cpu) const;

  std::string name_;
  std::string path_;
  int buffer_kb_;
  int history_kb_;
  std::vector<int> cpus_;
  std::vector<std::string> notes_;
  bool hrtimer_filtered_ = false;
  std::unique_ptr<trace::RawHistory> history_;
  std::vector<std::string> errors_;        // per CPU: read errors not yet said in a note
  std::vector<trace::TraceEvent> events_;  // Explain()'s decode, reused
  std::int64_t last_cpu_ns_ = 0;
  std::int64_t max_cpu_ns_ = 0;
  std::int64_t poll_cpu_ns_ = 0;
};

}  // namespace rtloop::explain
