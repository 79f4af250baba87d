#include "rtloop/explain/evidence.h"

#include <utility>

#include "rtloop/explain/trace_evidence.h"

namespace rtloop::explain {

std::unique_ptr<EvidenceSource> OpenTraceOrSayWhy(const std::vector<int>& cpus,
                                                  std::string* why_not, std::string* notes) {
  TraceConfig c;
  c.cpus = cpus;
  Result<std::unique_ptr<TraceEvidence>> trace = TraceEvidence::Open(c);
  if (!trace.ok()) {
    *why_not = trace.status().message();
    return nullptr;
  }
  why_not->clear();
  for (const std::string& n : (*trace)->open_notes()) {
    if (!notes->empty()) *notes += "; ";
    *notes += n;
  }
  return std::move(*trace);
}

Result<std::unique_ptr<EvidenceSource>> CreateCounters(const std::vector<WatchedThread>& threads,
                                                       const std::string& why_not_trace) {
  CounterConfig c;
  c.threads = threads;
  c.why_not_trace = why_not_trace;
  Result<std::unique_ptr<CounterEvidence>> counters = CounterEvidence::Create(c);
  if (!counters.ok()) return counters.status();
  return std::unique_ptr<EvidenceSource>(std::move(*counters));
}

}  // namespace rtloop::explain
