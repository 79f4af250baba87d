// The evidence sources a program uses, chosen the way rtloop's tools choose them: the kernel's
// trace when tracefs can be had, the /proc counters always (they are the evidence when the trace
// is not, and they cover what a trace of scheduling events does not: steal time).
//
//   std::string why_not, notes;
//   std::unique_ptr<EvidenceSource> trace = OpenTraceOrSayWhy({1}, &why_not, &notes);
//   ... the tasks start ...
//   Result<std::unique_ptr<EvidenceSource>> counters =
//       CreateCounters({{.tid = tid, .cpu = 1, .policy = SCHED_FIFO, .priority = 80}}, why_not);
//
// Threading: call from one non-RT thread (they open files, create a trace instance).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rtloop/explain/counter_evidence.h"
#include "rtloop/explain/outlier.h"
#include "rtloop/framework/status.h"

namespace rtloop::explain {

// The trace on `cpus` (empty: every online CPU), or nullptr with `*why_not` saying why not and
// how to have it (e.g. run as root). `*notes` gets what opening it did that a user should hear
// of (a killed run's stale trace instance removed).
std::unique_ptr<EvidenceSource> OpenTraceOrSayWhy(const std::vector<int>& cpus,
                                                  std::string* why_not, std::string* notes);

// The /proc counters of `threads`; `why_not_trace` goes into their records' notes when the trace
// is not used (empty when it is).
Result<std::unique_ptr<EvidenceSource>> CreateCounters(const std::vector<WatchedThread>& threads,
                                                       const std::string& why_not_trace);

}  // namespace rtloop::explain
