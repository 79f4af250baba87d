// Trace evidence: why a cycle was late, from the kernel's own trace events (README.md, "Trace
// evidence"). Open() creates rtloop's own tracefs instance (never the global buffer) that records
// scheduling, IRQ, softirq and hrtimer events on the tasks' CPUs into a bounded, overwriting
// per-CPU buffer; Explain() reads the outlier window's CPU buffer without consuming it and splits
// the window into exclusive segments: the threads that ran (comm, tid, policy and priority), the
// hard IRQ handlers, the softirqs, and the task's timer delay.
//
//   Result<std::unique_ptr<TraceEvidence>> trace = TraceEvidence::Open({.cpus = {1}});
//   if (!trace.ok()) use_counters(trace.status().message());   // the reason, with the fix
//   for (const std::string& note : (*trace)->open_notes()) log(note);  // e.g. a stale instance
//   OutlierRecord r = MakeRecord(window);
//   (*trace)->Explain(window, &r);
//   FinishRecord(&r);
//
// Thread contract: Open() and the destructor on any non-RT thread; Explain() from one non-RT
// thread at a time. Nothing here runs on an RT thread: the RT thread does nothing extra, the
// kernel records the events. Not RT-safe: reads tracefs files and allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/framework/status.h"

namespace rtloop::explain {

struct TraceConfig {
  // The CPUs to trace (the tasks' CPUs); empty = all online CPUs.
  std::vector<int> cpus;
  // Per-CPU ring buffer. Explain() reads the CPU's whole buffer as text (~1.5 us of kernel time
  // per line on the reference VM), so its size sets both the history kept and the CPU time per
  // outlier: 256 KiB holds ~5300 events, ~1.1 s of a 1 kHz task's CPU, read in ~10 ms
  // (README.md, "Trace evidence": the measurement and its command).
  int buffer_size_kb = 256;
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
  // The CPU time (CLOCK_THREAD_CPUTIME_ID) of the last Explain() and the largest so far, ns.
  std::int64_t last_explain_cpu_ns() const noexcept { return last_cpu_ns_; }
  std::int64_t max_explain_cpu_ns() const noexcept { return max_cpu_ns_; }

 private:
  TraceEvidence(std::string name, std::string path, int buffer_kb, std::vector<int> cpus);
  Status Configure();
  bool ExplainOn(const OutlierWindow& window, OutlierRecord* record);
  Status ReadCpu(std::size_t index, std::int64_t until_ns);
  std::size_t LocateCpu(const OutlierWindow& window, std::string* why);
  std::string Note(int cpu) const;

  std::string name_;
  std::string path_;
  int buffer_kb_;
  std::vector<int> cpus_;
  std::vector<std::string> notes_;
  std::vector<std::string> texts_;    // one read buffer per CPU, reused across Explain() calls
  std::vector<std::int64_t> newest_;  // the newest event in texts_[i], -1 when not read
  std::int64_t last_cpu_ns_ = 0;
  std::int64_t max_cpu_ns_ = 0;
};

}  // namespace rtloop::explain
