// ExplainSession: outlier explanation for some tasks of an Executor, from before their start to
// after their stop: what rtloop::Runtime (TaskConfig::explain_latency_above) and rtloop-cyclic
// (--explain) run. Before the start it opens the trace on the tasks' CPUs (or notes why it
// cannot: the /proc counters are then the evidence); after the start, when the threads' ids are
// known, it starts the counters and an Explainer on a collector subscription.
//
//   std::unique_ptr<ExplainSession> s = ExplainSession::Prepare(executor, {{.id = 0,
//       .latency_above = std::chrono::microseconds(100)}});
//   executor.Start();  collector.Start();
//   Status st = s->Begin(executor, collector, housekeeping_cpus);
//   ... executor.Stop(); collector.Stop();
//   s->Stop();
//   for (const OutlierRecord& r : s->Records()) ...
//
// Threading: Prepare(), Begin() and Stop() on the controlling thread; Records(), stats() and
// evidence_note() from any non-RT thread once Begin() returned (before that, under the lock the
// caller holds around Begin(), as rtloop::Runtime does). Not RT-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/explain/explainer.h"
#include "rtloop/explain/outlier.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/collector.h"

namespace rtloop::explain {

struct ExplainPlan {
  TaskId id = 0;
  std::chrono::nanoseconds latency_above{0};    // > 0
  std::chrono::nanoseconds execution_above{0};  // 0: not judged
};

class ExplainSession {
 public:
  // Opens the trace on the CPUs of `tasks` (as added to `executor`); never fails for lack of
  // tracefs or privilege (evidence_note() says what is used and why).
  static std::unique_ptr<ExplainSession> Prepare(const Executor& executor,
                                                 std::vector<ExplainPlan> tasks);
  ~ExplainSession();  // Stop()
  ExplainSession(const ExplainSession&) = delete;
  ExplainSession& operator=(const ExplainSession&) = delete;

  // After `executor` started: the counters, and the Explainer on a subscription of `collector`,
  // its thread moved to `cpus` (empty: left where the caller runs).
  Status Begin(const Executor& executor, telemetry::Collector& collector,
               const std::vector<int>& cpus);
  // After the tasks and the collector stopped: the last samples are explained. Idempotent.
  void Stop();

  std::vector<OutlierRecord> Records() const;  // empty before Begin()
  std::vector<OutlierRecord> Records(std::size_t first, std::size_t max) const;  // Explainer's
  std::size_t record_count() const;
  ExplainerStats stats() const;
  // "the kernel's trace events" or "/proc counters (<why the trace is not used>)"; set by Begin().
  // With the trace, once records fell back to the counters it adds how many ("; 3 of 12 records
  // from the /proc counters ...").
  std::string evidence_note() const;

 private:
  ExplainSession() = default;

  std::vector<ExplainPlan> tasks_;
  std::unique_ptr<EvidenceSource> trace_;  // until Begin(); null: none (why_not_trace_)
  std::string why_not_trace_;
  std::string open_notes_;  // what opening the trace did (a stale instance removed)
  std::string note_;
  bool trace_first_ = false;  // the trace is the preferred source (set by Begin())
  std::unique_ptr<Explainer> explainer_;
};

}  // namespace rtloop::explain
