// Helpers shared by the telemetry tests.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry::testing {

inline CycleSample MakeCycle(TaskId task, std::uint64_t seq, std::int64_t latency_ns,
                             std::int64_t execution_ns, std::int64_t period_ns = 1'000'000) {
  CycleSample c;
  c.task = task;
  c.seq = seq;
  c.release = TimePoint(std::chrono::nanoseconds(static_cast<std::int64_t>(seq) * period_ns));
  c.wakeup_latency_ns = latency_ns;
  c.execution_ns = execution_ns;
  c.period_jitter_ns = seq == 0 ? 0 : latency_ns % 1000;
  c.flags = seq == 0 ? kCycleFirst : 0u;
  return c;
}

inline TaskConfig MakeTaskConfig(const char* name,
                                 std::chrono::nanoseconds period = std::chrono::milliseconds(1)) {
  TaskConfig c;
  c.name = name;
  c.period = period;
  return c;
}

// One TaskStats, driven by the test, read for every task id.
class OneTaskStats final : public TaskStatsReader {
 public:
  explicit OneTaskStats(const TaskStats& stats) : stats_(stats) {}
  TaskStatsSnapshot Stats(TaskId) const noexcept override { return stats_.Snapshot(); }

 private:
  const TaskStats& stats_;
};

// Stands in for the executor in hub-only tests: the owner of each task's TaskStats (the hub keeps
// none and reads them through the TaskStatsReader attached to it). Record() books a cycle as the
// executor's CycleEngine does. One writer thread per task at a time, as in the executor.
class ExecutorStatsStub final : public TaskStatsReader {
 public:
  static constexpr TaskId kMaxTasks = 64;
  void Record(const CycleSample& c) noexcept {
    if (c.task >= kMaxTasks) return;
    TaskStats& s = stats_[c.task];
    s.Record(c.wakeup_latency_ns, c.execution_ns, c.period_jitter_ns, (c.flags & kCycleFirst) != 0,
             (c.flags & kCycleOverrun) != 0, c.missed_releases);
    if ((c.flags & kCycleFault) != 0)
      s.RecordFault({FaultReason::kStep, c.seq, c.release.ns(), 0, c.execution_ns, 0, 0});
  }
  TaskStatsSnapshot Stats(TaskId id) const noexcept override {
    return id < kMaxTasks ? stats_[id].Snapshot() : TaskStatsSnapshot{};
  }
  // Makes this `hub`'s task statistics; it must outlive the hub's use of it.
  void AttachTo(TelemetryHub& hub) { hub.AttachStats(*this); }

 private:
  std::array<TaskStats, kMaxTasks> stats_;
};

// A hub with its stand-in executor: OnCycle() books the cycle in both, as a real task does.
struct HubWithStats {
  explicit HubWithStats(const TelemetryHubConfig& config = {}) : hub(config) {
    stats.AttachTo(hub);
  }
  void OnCycle(const CycleSample& c) noexcept {
    stats.Record(c);
    hub.OnCycle(c);
  }
  TelemetryHub hub;
  ExecutorStatsStub stats;
};

}  // namespace rtloop::telemetry::testing
