#include "rtloop/telemetry/proto_convert.h"

#include <limits>
#include <string>

#include "rtloop/telemetry/utf8.h"

namespace rtloop::telemetry {

v1::SchedPolicy ToProto(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::kOther:
      return v1::SCHED_POLICY_OTHER;
    case SchedPolicy::kBatch:
      return v1::SCHED_POLICY_BATCH;
    case SchedPolicy::kIdle:
      return v1::SCHED_POLICY_IDLE;
    case SchedPolicy::kFifo:
      return v1::SCHED_POLICY_FIFO;
    case SchedPolicy::kRr:
      return v1::SCHED_POLICY_RR;
    case SchedPolicy::kDeadline:
      return v1::SCHED_POLICY_DEADLINE;
  }
  return v1::SCHED_POLICY_UNSPECIFIED;
}

v1::OverrunPolicy ToProto(OverrunPolicy policy) noexcept {
  switch (policy) {
    case OverrunPolicy::kSkip:
      return v1::OVERRUN_POLICY_SKIP;
    case OverrunPolicy::kCatchUp:
      return v1::OVERRUN_POLICY_CATCH_UP;
    case OverrunPolicy::kReanchor:
      return v1::OVERRUN_POLICY_REANCHOR;
  }
  return v1::OVERRUN_POLICY_UNSPECIFIED;
}

v1::TaskState ToProto(TaskState state) noexcept {
  switch (state) {
    case TaskState::kCreated:
      return v1::TASK_STATE_CREATED;
    case TaskState::kStarting:
      return v1::TASK_STATE_STARTING;
    case TaskState::kRunning:
      return v1::TASK_STATE_RUNNING;
    case TaskState::kStopped:
      return v1::TASK_STATE_STOPPED;
    case TaskState::kFault:
      return v1::TASK_STATE_FAULT;
  }
  return v1::TASK_STATE_UNSPECIFIED;
}

v1::ClockId ToProto(Clock clock) noexcept {
  switch (clock) {
    case Clock::kMonotonic:
      return v1::CLOCK_ID_MONOTONIC;
    case Clock::kRealtime:
      return v1::CLOCK_ID_REALTIME;
  }
  return v1::CLOCK_ID_UNSPECIFIED;
}

v1::WatchdogAction ToProto(WatchdogAction action) noexcept {
  switch (action) {
    case WatchdogAction::kFaultTask:
      return v1::WATCHDOG_ACTION_FAULT_TASK;
    case WatchdogAction::kStopAll:
      return v1::WATCHDOG_ACTION_STOP_ALL;
    case WatchdogAction::kContinue:
      return v1::WATCHDOG_ACTION_CONTINUE;
  }
  return v1::WATCHDOG_ACTION_UNSPECIFIED;
}

v1::FaultReason ToProto(FaultReason reason) noexcept {
  switch (reason) {
    case FaultReason::kNone:
      return v1::FAULT_REASON_UNSPECIFIED;
    case FaultReason::kOverruns:
      return v1::FAULT_REASON_OVERRUNS;
    case FaultReason::kWatchdog:
      return v1::FAULT_REASON_WATCHDOG;
    case FaultReason::kWatchdogSingle:
      return v1::FAULT_REASON_WATCHDOG_SINGLE;
    case FaultReason::kStep:
      return v1::FAULT_REASON_STEP;
  }
  return v1::FAULT_REASON_UNSPECIFIED;
}

void ToProto(const SystemInfo& info, v1::SystemInfo* out) {
  out->Clear();
  out->set_host_name(ToValidUtf8(info.host_name));
  out->set_kernel_release(ToValidUtf8(info.kernel_release));
  out->set_kernel_version(ToValidUtf8(info.kernel_version));
  out->set_machine(ToValidUtf8(info.machine));
  out->set_preempt_model(PreemptModelName(info.preempt_model));
  out->set_realtime(info.realtime);
  for (int c : info.online_cpus) out->add_online_cpus(c);
  for (int c : info.isolated_cpus) out->add_isolated_cpus(c);
  for (int c : info.affinity_cpus) out->add_affinity_cpus(c);
}

void ToProto(TaskId id, const TaskConfig& config, TaskState state, v1::TaskDescriptor* out) {
  out->Clear();
  out->set_id(id);
  out->set_name(ToValidUtf8(config.name));  // proto3 strings are UTF-8
  out->set_period_ns(config.period.count());
  out->set_phase_ns(config.phase.count());
  for (int c : config.cpus) out->add_cpus(c);
  out->set_policy(ToProto(config.policy));
  out->set_priority(config.priority);
  out->set_nice(config.nice);
  out->set_overrun_policy(ToProto(config.overrun_policy));
  out->set_state(ToProto(state));
  out->set_clock(ToProto(config.clock));
  out->set_watchdog_max_consecutive_overruns(config.watchdog.max_consecutive_overruns);
  out->set_max_cycles(config.max_cycles);
  out->set_watchdog_time_ns(config.watchdog.time.count());
  out->set_watchdog_sensitivity(config.watchdog.sensitivity);
  out->set_watchdog_action(ToProto(config.watchdog.effective_action()));
}

void ToProto(const Percentiles& percentiles, v1::LatencyStats* out) {
  out->clear_percentiles();
  if (!percentiles.valid) return;  // no data: no entries (never zeros)
  for (std::size_t i = 0; i < Percentiles::kLevels.size(); ++i) {
    v1::Percentile* p = out->add_percentiles();
    p->set_percentile(Percentiles::kLevels[i]);
    p->set_value_ns(percentiles.at(i));
  }
}

void ToProto(const HistogramSummary& summary, v1::LatencyStats* out) {
  out->Clear();
  out->set_count(summary.count);
  if (summary.count > 0) {  // min/max/avg have presence: absent without a value
    out->set_min_ns(summary.min_ns);
    out->set_max_ns(summary.max_ns);
    out->set_avg_ns(summary.mean_ns);
  }
  out->set_sum_ns(summary.sum_ns);
  ToProto(summary.percentiles, out);
  out->set_negative_count(summary.negative_count);
  out->set_overflow_count(summary.overflow_count);
}

namespace {

// One quantity of a task: count/min/max/sum/avg from the executor's statistics (their one owner),
// percentiles and the negative/overflow counts from telemetry's histogram.
void FillQuantity(const TaskStatsSnapshot& stats, std::int64_t min_ns, std::int64_t max_ns,
                  std::int64_t sum_ns, const HistogramSummary& histogram, v1::LatencyStats* out) {
  out->Clear();
  out->set_count(stats.cycles);
  if (stats.has_data()) {
    if (stats.has_min_max()) {  // absent after a reset until the next cycle
      out->set_min_ns(min_ns);
      out->set_max_ns(max_ns);
    }
    out->set_sum_ns(sum_ns);
    out->set_avg_ns(static_cast<double>(sum_ns) / static_cast<double>(stats.cycles));
  }
  ToProto(histogram.percentiles, out);
  out->set_negative_count(histogram.negative_count);
  out->set_overflow_count(histogram.overflow_count);
}

}  // namespace

void ToProto(const TaskReport& report, v1::TaskStats* out) {
  out->Clear();
  out->set_task_id(report.id);
  out->set_task_name(ToValidUtf8(report.name));
  out->set_state(ToProto(report.stats.state));
  out->set_tid(report.stats.tid);
  out->set_cycles(report.stats.cycles);
  const TaskStatsSnapshot& st = report.stats;
  FillQuantity(st, st.latency_min_ns, st.latency_max_ns, st.latency_sum_ns, report.latency,
               out->mutable_latency());
  FillQuantity(st, st.execution_min_ns, st.execution_max_ns, st.execution_sum_ns, report.execution,
               out->mutable_execution());
  if (st.has_jitter_min_max()) {
    out->set_jitter_min_ns(st.jitter_min_ns);
    out->set_jitter_max_ns(st.jitter_max_ns);
  }
  out->set_resets(st.resets);
  out->set_overruns(report.stats.overruns);
  out->set_missed_releases(report.stats.missed_releases);
  out->set_faults(report.stats.faults);
  const FaultRecord& f = st.last_fault;
  out->set_last_fault_reason(ToProto(f.reason));
  out->set_last_fault_cycle(f.cycle);
  out->set_last_fault_time_ns(f.time_ns);
  out->set_last_fault_since_start_ns(f.since_start_ns);
  out->set_last_fault_execution_ns(f.execution_ns);
  out->set_last_fault_consecutive(f.consecutive);
  out->set_last_fault_limit_ns(f.limit_ns);
  out->set_watchdog_violations(st.watchdog_violations);
  out->set_watchdog_trips(st.watchdog_trips);
  out->set_ring_dropped(report.ring_dropped);
  out->set_ring_pushed(report.ring_pushed);
  out->set_delivered(report.delivered);
}

void ToProto(TaskId task, v1::Quantity quantity, const LatencyHistogram& histogram,
             v1::Histogram* out) {
  out->Clear();
  out->set_task_id(task);
  out->set_quantity(quantity);
  std::vector<HistogramBucket> buckets;
  histogram.ExportBuckets(&buckets);
  out->mutable_buckets()->Reserve(static_cast<int>(buckets.size()));
  for (const HistogramBucket& b : buckets) {
    v1::HistogramBucket* pb = out->add_buckets();
    pb->set_lower_ns(b.lower_ns);
    pb->set_upper_ns(b.upper_ns);
    pb->set_count(b.count);
  }
}

void ToProto(TaskId task, std::uint64_t lost_before, std::span<const Sample> samples,
             v1::SampleBatch* out) {
  out->Clear();
  out->set_task_id(task);
  out->set_first_seq(samples.empty() ? 0 : samples.front().seq);
  out->set_lost_before(lost_before);
  const int n = static_cast<int>(samples.size());
  out->mutable_release_ns()->Reserve(n);
  out->mutable_latency_ns()->Reserve(n);
  out->mutable_execution_ns()->Reserve(n);
  out->mutable_missed_releases()->Reserve(n);
  out->mutable_flags()->Reserve(n);
  for (const Sample& s : samples) {
    out->add_release_ns(s.release_ns);
    out->add_latency_ns(s.latency_ns);
    out->add_execution_ns(s.execution_ns);
    out->add_missed_releases(s.missed_releases);
    out->add_flags(s.flags);
  }
}

void ToProto(const SampleBatch& batch, v1::SampleBatch* out) {
  ToProto(batch.task, batch.lost_before, batch.samples, out);
  out->set_first_seq(batch.first_seq);
}

Status FromProto(const v1::SampleBatch& batch, std::vector<Sample>* out) {
  const int n = batch.release_ns_size();
  if (batch.latency_ns_size() != n || batch.execution_ns_size() != n ||
      batch.missed_releases_size() != n || batch.flags_size() != n) {
    return InvalidArgumentError("sample batch of task " + std::to_string(batch.task_id()) +
                                " has columns of different lengths (release " + std::to_string(n) +
                                ", latency " + std::to_string(batch.latency_ns_size()) +
                                ", execution " + std::to_string(batch.execution_ns_size()) +
                                ", missed " + std::to_string(batch.missed_releases_size()) +
                                ", flags " + std::to_string(batch.flags_size()) + ")");
  }
  if (batch.task_id() > kMaxSampleTaskId) {
    return InvalidArgumentError("sample batch has task id " + std::to_string(batch.task_id()) +
                                ": samples carry task ids up to " +
                                std::to_string(kMaxSampleTaskId));
  }
  // A Sample's columns are narrower than the wire's: a value that does not fit was not written by
  // rtloop (which saturates first) and is rejected rather than silently wrapped.
  for (int i = 0; i < n; ++i) {
    const std::int64_t lat = batch.latency_ns(i);
    const char* bad = nullptr;
    if (lat < std::numeric_limits<std::int32_t>::min() ||
        lat > std::numeric_limits<std::int32_t>::max()) {
      bad = "latency_ns";
    } else if (batch.execution_ns(i) > std::numeric_limits<std::uint32_t>::max()) {
      bad = "execution_ns";
    } else if (batch.flags(i) > std::numeric_limits<std::uint16_t>::max()) {
      bad = "flags";
    }
    if (bad != nullptr) {
      return InvalidArgumentError("sample batch of task " + std::to_string(batch.task_id()) + ": " +
                                  bad + "[" + std::to_string(i) +
                                  "] is out of the range a Sample can hold");
    }
  }
  out->reserve(out->size() + static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.seq = batch.first_seq() + static_cast<std::uint64_t>(i);
    s.release_ns = batch.release_ns(i);
    s.latency_ns = static_cast<std::int32_t>(batch.latency_ns(i));
    s.execution_ns = static_cast<std::uint32_t>(batch.execution_ns(i));
    s.missed_releases = batch.missed_releases(i);
    s.task = static_cast<std::uint16_t>(batch.task_id());
    s.flags = static_cast<std::uint16_t>(batch.flags(i));
    out->push_back(s);
  }
  return Status::Ok();
}

}  // namespace rtloop::telemetry
