#include "cyclic_explain.h"

#include <utility>

namespace rtloop::cyclic {

std::unique_ptr<CyclicExplain> CyclicExplain::Open(const CyclicOptions& options,
                                                   telemetry::OutputFile file,
                                                   const Executor& executor,
                                                   const std::vector<TaskId>& ids) {
  std::unique_ptr<CyclicExplain> e(new CyclicExplain(options, std::move(file)));
  const explain::Thresholds t = e->thresholds();
  std::vector<explain::ExplainPlan> plans;
  plans.reserve(ids.size());
  for (TaskId id : ids) {
    plans.push_back({.id = id,
                     .latency_above = std::chrono::nanoseconds(t.latency_above_ns),
                     .execution_above = std::chrono::nanoseconds(t.execution_above_ns)});
  }
  e->session_ = explain::ExplainSession::Prepare(executor, std::move(plans));
  return e;
}

explain::Thresholds CyclicExplain::thresholds() const {
  explain::Thresholds t;
  t.latency_above_ns = o_.explain_above_us.value_or(100) * 1000;
  t.execution_above_ns = o_.explain_execution_above_us.value_or(0) * 1000;
  return t;
}

Status CyclicExplain::Begin(Runtime& runtime) {
  telemetry::Collector* collector = runtime.collector();
  if (collector == nullptr) {
    return Status(StatusCode::kInternal, "--explain: the runtime has no collector");
  }
  RTLOOP_RETURN_IF_ERROR(session_->Begin(runtime.executor(), *collector, runtime.telemetry_cpus()));
  runtime.outlier_feed().Attach(session_);  // --telemetry / --metrics show the records too
  begun_ = true;
  return Status::Ok();
}

void CyclicExplain::End() { session_->Stop(); }

Status CyclicExplain::Write(std::FILE* summary) {
  if (!begun_) return Status::Ok();
  const std::vector<explain::OutlierRecord> records = session_->Records();
  const explain::ExplainerStats stats = session_->stats();
  Status s = file_.Write(explain::OutliersJson(records, stats, thresholds()));
  if (s.ok()) s = file_.Commit();
  std::FILE* out = o_.explain_path == "-" ? stderr : summary;
  std::fprintf(out, "# explained with %s\n", session_->evidence_note().c_str());
  std::fputs(explain::OutliersSummary(records, stats, thresholds()).c_str(), out);
  return s;
}

void CyclicExplain::Abandon() {
  session_->Stop();
  file_.Discard();
}

}  // namespace rtloop::cyclic
