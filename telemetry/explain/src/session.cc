#include "rtloop/explain/session.h"

#include <sched.h>

#include <algorithm>
#include <utility>

#include "rtloop/explain/evidence.h"
#include "rtloop/framework/rt_setup.h"

namespace rtloop::explain {
namespace {

// The CPUs to trace: every task's pins; none (all online CPUs) when one is not pinned.
std::vector<int> TracedCpus(const Executor& executor, const std::vector<ExplainPlan>& tasks) {
  std::vector<int> cpus;
  for (const ExplainPlan& t : tasks) {
    const std::vector<int> pins = executor.Info(t.id).config.cpus;
    if (pins.empty()) return {};
    cpus.insert(cpus.end(), pins.begin(), pins.end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

void MoveThread(int tid, const std::vector<int>& cpus) {
  if (tid <= 0 || cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  (void)sched_setaffinity(tid, sizeof(set), &set);  // best effort, as the Runtime's own threads
}

}  // namespace

std::unique_ptr<ExplainSession> ExplainSession::Prepare(const Executor& executor,
                                                        std::vector<ExplainPlan> tasks) {
  std::unique_ptr<ExplainSession> s(new ExplainSession());
  s->trace_ = OpenTraceOrSayWhy(TracedCpus(executor, tasks), &s->why_not_trace_, &s->open_notes_);
  s->tasks_ = std::move(tasks);
  return s;
}

ExplainSession::~ExplainSession() { Stop(); }

Status ExplainSession::Begin(const Executor& executor, telemetry::Collector& collector,
                             const std::vector<int>& cpus) {
  ExplainerConfig c;
  std::vector<WatchedThread> watched;
  for (const ExplainPlan& plan : tasks_) {
    const TaskInfo info = executor.Info(plan.id);
    ExplainedTask t;
    t.task = plan.id;
    t.name = info.config.name;
    t.tid = executor.Stats(plan.id).tid;
    t.cpu = info.config.cpus.size() == 1 ? info.config.cpus.front() : -1;
    t.clock = info.config.clock;
    t.latency_above_ns = plan.latency_above.count();
    t.execution_above_ns = plan.execution_above.count();
    c.tasks.push_back(t);
    watched.push_back({.tid = t.tid,
                       .cpu = t.cpu,
                       .policy = ToLinuxPolicy(info.effective_policy),
                       .priority = info.effective_priority});
  }
  std::vector<std::unique_ptr<EvidenceSource>> sources;
  if (trace_ != nullptr) sources.push_back(std::move(trace_));
  Result<std::unique_ptr<EvidenceSource>> counters = CreateCounters(watched, why_not_trace_);
  if (!counters.ok()) return counters.status();
  sources.push_back(std::move(*counters));
  trace_first_ = sources.front()->kind() == EvidenceKind::kTrace;
  note_ = trace_first_ ? "the kernel's trace events" : "/proc counters (" + why_not_trace_ + ")";
  if (!open_notes_.empty()) note_ += "; " + open_notes_;
  Result<std::unique_ptr<Explainer>> ex =
      Explainer::Start(c, collector.Subscribe({.count_loss_in_hub = false}), std::move(sources));
  if (!ex.ok()) return ex.status();
  explainer_ = std::move(*ex);
  MoveThread(explainer_->tid(), cpus);
  return Status::Ok();
}

void ExplainSession::Stop() {
  if (explainer_ != nullptr) explainer_->Stop();
  trace_.reset();  // a session that never began removes its trace instance
}

std::vector<OutlierRecord> ExplainSession::Records() const {
  return explainer_ != nullptr ? explainer_->Records() : std::vector<OutlierRecord>();
}

std::vector<OutlierRecord> ExplainSession::Records(std::size_t first, std::size_t max) const {
  return explainer_ != nullptr ? explainer_->Records(first, max) : std::vector<OutlierRecord>();
}

std::size_t ExplainSession::record_count() const {
  return explainer_ != nullptr ? explainer_->record_count() : 0;
}

ExplainerStats ExplainSession::stats() const {
  return explainer_ != nullptr ? explainer_->stats() : ExplainerStats();
}

std::string ExplainSession::evidence_note() const {
  if (!trace_first_ || explainer_ == nullptr) return note_;
  const ExplainerStats s = explainer_->stats();
  if (s.from_counters == 0) return note_;
  return note_ + "; " + std::to_string(s.from_counters) + " of " + std::to_string(s.recorded) +
         " records from the /proc counters (the trace did not cover their window: each record's "
         "evidence_note says why)";
}

}  // namespace rtloop::explain
