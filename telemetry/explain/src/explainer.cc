#include "rtloop/explain/explainer.h"

#include <time.h>

#include <algorithm>
#include <utility>

namespace rtloop::explain {
namespace {

// Windows waiting for a source at most; beyond, outliers are counted as dropped.
constexpr std::size_t kMaxPending = 256;

std::int64_t ThreadCpuNs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A source's note with its kind in front ("counters: too old ..."), unless it says it already.
std::string Labelled(EvidenceKind kind, const std::string& note) {
  const std::string label = std::string(EvidenceKindName(kind)) + ":";
  return note.rfind(label, 0) == 0 ? note : label + " " + note;
}

Status CheckConfig(const ExplainerConfig& c, std::size_t sources) {
  if (sources == 0) return InvalidArgumentError("Explainer: no evidence source was given");
  if (c.tasks.empty()) return InvalidArgumentError("ExplainerConfig::tasks is empty: name a task");
  if (c.latency_above_ns <= 0) {
    return InvalidArgumentError("ExplainerConfig::latency_above_ns must be > 0 (ns), got " +
                                std::to_string(c.latency_above_ns));
  }
  if (c.execution_above_ns < 0) {
    return InvalidArgumentError("ExplainerConfig::execution_above_ns must be >= 0 (0: off), got " +
                                std::to_string(c.execution_above_ns));
  }
  if (c.max_records == 0) return InvalidArgumentError("ExplainerConfig::max_records must be > 0");
  for (const ExplainedTask& t : c.tasks) {
    if (t.latency_above_ns < 0 || t.execution_above_ns < 0) {
      return InvalidArgumentError("ExplainedTask \"" + t.name +
                                  "\": thresholds must be >= 0 (0: the ExplainerConfig's)");
    }
  }
  if (c.poll_period < std::chrono::milliseconds(1) || c.give_up_after < c.poll_period) {
    return InvalidArgumentError(
        "ExplainerConfig: poll_period must be >= 1 ms and give_up_after >= poll_period");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Explainer>> Explainer::Start(
    const ExplainerConfig& config, std::shared_ptr<telemetry::Subscription> subscription,
    std::vector<std::unique_ptr<EvidenceSource>> sources) {
  RTLOOP_RETURN_IF_ERROR(CheckConfig(config, sources.size()));
  if (subscription == nullptr) return InvalidArgumentError("Explainer: no subscription was given");
  std::unique_ptr<Explainer> ex(new Explainer(config, std::move(subscription), std::move(sources)));
  // The sources' first look now, not a tick later: the counters cannot explain a window that
  // began before their first snapshot (the thread below does not exist yet: one poller at a time).
  const std::int64_t now = Now(Clock::kMonotonic).ns();
  for (auto& s : ex->sources_) s->Poll(now);
  HousekeepingConfig hk;
  hk.tick = config.poll_period;
  hk.name = "rtloop-explain";
  Explainer* self = ex.get();
  ex->thread_ = std::make_unique<HousekeepingThread>(
      hk, [self](HousekeepingThread::Wake) { self->Pass(/*last=*/false); });
  if (!ex->thread_->ok()) {
    Status s = ex->thread_->status();
    ex->thread_.reset();
    return s;
  }
  return ex;
}

Explainer::Explainer(const ExplainerConfig& config,
                     std::shared_ptr<telemetry::Subscription> subscription,
                     std::vector<std::unique_ptr<EvidenceSource>> sources)
    : config_(config), subscription_(std::move(subscription)), sources_(std::move(sources)) {
  for (const ExplainedTask& t : config_.tasks) {
    TaskOutlierStats ts;
    ts.task = t.task;
    ts.name = t.name;
    ts.latency_above_ns = t.latency_above_ns > 0 ? t.latency_above_ns : config_.latency_above_ns;
    ts.execution_above_ns =
        t.execution_above_ns > 0 ? t.execution_above_ns : config_.execution_above_ns;
    stats_.tasks.push_back(std::move(ts));
  }
}

Explainer::~Explainer() { Stop(); }

void Explainer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_ != nullptr) thread_->Stop();
  Pass(/*last=*/true);
}

std::vector<OutlierRecord> Explainer::Records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::vector<OutlierRecord> Explainer::Records(std::size_t first, std::size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (first >= records_.size()) return {};
  const std::size_t n = std::min(max, records_.size() - first);
  const auto begin = records_.begin() + static_cast<std::ptrdiff_t>(first);
  return std::vector<OutlierRecord>(begin, begin + static_cast<std::ptrdiff_t>(n));
}

std::size_t Explainer::record_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

ExplainerStats Explainer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

TaskOutlierStats* Explainer::TaskStats(TaskId task) {
  for (TaskOutlierStats& t : stats_.tasks) {
    if (t.task == task) return &t;
  }
  return nullptr;  // not reached: only the configured tasks' samples are judged
}

const ExplainedTask* Explainer::FindTask(TaskId task) const {
  for (const ExplainedTask& t : config_.tasks) {
    if (t.task == task) return &t;
  }
  return nullptr;
}

void Explainer::Pass(bool last) {
  const std::int64_t now = Now(Clock::kMonotonic).ns();
  for (auto& s : sources_) s->Poll(now);
  ReadSamples();
  TryPending(last);
}

void Explainer::ReadSamples() {
  // A realtime-clock task's E_k, moved onto CLOCK_MONOTONIC (the trace's and the counters' clock).
  const std::int64_t mono = Now(Clock::kMonotonic).ns();
  const std::int64_t realtime_offset = Now(Clock::kRealtime).ns() - mono;
  std::uint64_t outliers = 0;
  std::uint64_t dropped = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> per_task(
      config_.tasks.size());  // seen, dropped
  while (subscription_->Pop(&batches_, std::chrono::nanoseconds(0)) > 0) {
    for (const telemetry::SampleBatch& b : batches_) {
      const ExplainedTask* task = FindTask(b.task);
      if (task == nullptr) continue;
      auto& [task_outliers, task_dropped] =
          per_task[static_cast<std::size_t>(task - config_.tasks.data())];
      const std::int64_t offset = task->clock == Clock::kRealtime ? realtime_offset : 0;
      const std::int64_t latency_above =
          task->latency_above_ns > 0 ? task->latency_above_ns : config_.latency_above_ns;
      const std::int64_t execution_above =
          task->execution_above_ns > 0 ? task->execution_above_ns : config_.execution_above_ns;
      for (const telemetry::Sample& s : b.samples) {
        const bool late = s.latency_ns > latency_above;
        const bool long_run =
            execution_above > 0 && static_cast<std::int64_t>(s.execution_ns) > execution_above;
        if (!late && !long_run) continue;
        ++outliers;
        ++task_outliers;
        if (pending_.size() >= kMaxPending) {
          ++dropped;
          ++task_dropped;
          continue;
        }
        const std::int64_t e = s.release_ns - offset;
        const std::int64_t w = e + s.latency_ns;
        Pending p;
        p.window = LatencyWindow(task->task, task->name, task->tid, task->cpu, s.seq, e, w,
                                 w + static_cast<std::int64_t>(s.execution_ns), !late);
        p.seen_ns = mono;
        p.asked.assign(sources_.size(), false);
        p.notes.assign(sources_.size(), std::string());
        pending_.push_back(std::move(p));
      }
    }
  }
  const telemetry::SubscriptionStats sub = subscription_->stats();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.outliers += outliers;
  stats_.dropped += dropped;
  stats_.samples_lost = sub.lost;
  for (std::size_t i = 0; i < per_task.size(); ++i) {
    stats_.tasks[i].outliers += per_task[i].first;
    stats_.tasks[i].dropped += per_task[i].second;
  }
}

void Explainer::TryPending(bool last) {
  auto done = std::remove_if(pending_.begin(), pending_.end(),
                             [&](Pending& p) { return TryExplain(p, last); });
  pending_.erase(done, pending_.end());
}

bool Explainer::FaultsFromCounters(Pending& p, bool last) {
  const std::int64_t cpu0 = ThreadCpuNs();
  EvidenceSource* counters = nullptr;
  for (auto& s : sources_) {
    if (s->kind() == EvidenceKind::kCounters) counters = s.get();
  }
  bool done = counters == nullptr;
  if (counters != nullptr) {
    OutlierRecord c = MakeRecord(p.window);
    if (counters->Explain(p.window, &c)) {
      bool counted = false;
      for (Cause& cause : c.causes) {
        if (cause.kind != CauseKind::kPageFaults) continue;
        p.record.causes.push_back(std::move(cause));
        counted = true;
      }
      // The counters' line of the task's own thread goes with the record: its counts, or why
      // there are none (the thread exited before the snapshot after the window). Without a
      // page-fault cause the note says which, never leaving "no page faults" unsaid.
      const std::string prefix = "tid " + std::to_string(p.window.tid) + ":";
      std::string thread_line;
      for (std::string& line : c.raw) {
        if (line.compare(0, prefix.size(), prefix) != 0) continue;
        thread_line = line;
        p.record.raw.push_back(std::move(line));
      }
      if (!counted) {
        p.record.evidence_note += "; the task's page faults: none counted (" +
                                  (thread_line.empty() ? "the counters do not watch thread " +
                                                             std::to_string(p.window.tid)
                                                       : thread_line) +
                                  ")";
      }
      done = true;
    } else {
      const std::int64_t age = Now(Clock::kMonotonic).ns() - p.seen_ns;
      if (last || age >= std::chrono::nanoseconds(config_.give_up_after).count()) {
        p.record.evidence_note += "; the task's page faults are not known (" +
                                  Labelled(EvidenceKind::kCounters, c.evidence_note) + ")";
        done = true;
      }
    }
  }
  p.cpu_ns += ThreadCpuNs() - cpu0;
  if (!done) return false;
  FinishRecord(&p.record);
  Record(std::move(p.record), p.cpu_ns);
  return true;
}

bool Explainer::TryExplain(Pending& p, bool last) {
  if (p.traced) return FaultsFromCounters(p, last);
  const std::int64_t cpu0 = ThreadCpuNs();
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    EvidenceSource& source = *sources_[i];
    // A sampling source answers once it sampled after the window; the others know at once.
    if (p.asked[i] && source.kind() != EvidenceKind::kCounters) continue;
    p.asked[i] = true;
    OutlierRecord r = MakeRecord(p.window);
    if (source.Explain(p.window, &r)) {
      // Why a preferred source did not explain it (e.g. the trace was overwritten) stays said.
      for (std::size_t j = 0; j < i; ++j) {
        if (p.notes[j].empty()) continue;
        if (!r.evidence_note.empty()) r.evidence_note += "; ";
        r.evidence_note += Labelled(sources_[j]->kind(), p.notes[j]);
      }
      if (source.kind() == EvidenceKind::kTrace) {  // the counters add the task's page faults
        p.traced = true;
        p.record = std::move(r);
        p.cpu_ns = ThreadCpuNs() - cpu0;
        return FaultsFromCounters(p, last);
      }
      FinishRecord(&r);
      Record(std::move(r), ThreadCpuNs() - cpu0);
      return true;
    }
    p.notes[i] = r.evidence_note;
  }
  const std::int64_t age = Now(Clock::kMonotonic).ns() - p.seen_ns;
  if (!last && age < std::chrono::nanoseconds(config_.give_up_after).count()) return false;
  OutlierRecord r = MakeRecord(p.window);
  r.evidence = EvidenceKind::kNone;
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    if (p.notes[i].empty()) continue;
    if (!r.evidence_note.empty()) r.evidence_note += "; ";
    r.evidence_note += Labelled(sources_[i]->kind(), p.notes[i]);
  }
  if (r.evidence_note.empty()) r.evidence_note = "no evidence source covered this window";
  FinishRecord(&r);
  Record(std::move(r), ThreadCpuNs() - cpu0);
  return true;
}

void Explainer::Record(OutlierRecord record, std::int64_t cpu_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.explain_cpu_ns_total += cpu_ns;
  stats_.explain_cpu_ns_max = std::max(stats_.explain_cpu_ns_max, cpu_ns);
  TaskOutlierStats* task = TaskStats(record.window.task);
  if (records_.size() >= config_.max_records) {
    ++stats_.dropped;
    if (task != nullptr) ++task->dropped;
    return;
  }
  if (record.evidence == EvidenceKind::kNone) ++stats_.unexplained;
  if (record.evidence == EvidenceKind::kCounters) ++stats_.from_counters;
  ++stats_.recorded;
  if (task != nullptr) {
    ++task->recorded;
    if (record.evidence == EvidenceKind::kNone) ++task->unexplained;
    if (record.causes.empty()) {
      ++task->without_cause;
    } else {
      ++task->by_leading_cause[static_cast<std::size_t>(record.causes.front().kind)];
    }
    task->last_cycle = record.window.cycle;
  }
  records_.push_back(std::move(record));
}

}  // namespace rtloop::explain
