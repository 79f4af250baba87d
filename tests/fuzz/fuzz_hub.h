// A TelemetryHub with data for the fuzzers of the request handlers (gRPC, HTTP): tasks 0, 1 and 3
// (id 2 left free, so that unknown ids between known ones are tried), each with cycles recorded
// through the hub as a task's RT thread records them, the hub's TaskStatsReader standing in for
// the executor, and WindowedStats ticked over them.
//
// Threading: build it once (a function-local static) and read it from the fuzzing thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/windowed_stats.h"

namespace rtloop::fuzz {

class FuzzHub final : public TaskStatsReader {
 public:
  static constexpr std::array<TaskId, 3> kTasks = {0, 1, 3};

  FuzzHub() : hub_(telemetry::TelemetryHubConfig{.max_tasks = 8}), windows_(hub_) {
    hub_.AttachStats(*this);
    for (const TaskId id : kTasks) {
      TaskConfig c;
      c.name = "task" + std::to_string(id);
      c.period = std::chrono::microseconds(250 * (id + 1));
      (void)hub_.AddTask(id, c);
      hub_.OnRtThreadStart(id);
      for (std::uint64_t seq = 0; seq < 500; ++seq) {
        CycleSample s;
        s.task = id;
        s.seq = seq;
        s.release = TimePoint(std::chrono::microseconds(250 * (id + 1) * seq));
        s.wakeup_latency_ns = static_cast<std::int64_t>((seq * 7919) % 50'000) - 2'000;
        s.execution_ns = static_cast<std::int64_t>((seq * 104729) % 20'000);
        s.flags = seq == 0 ? kCycleFirst : 0u;
        stats_[id].Record(s.wakeup_latency_ns, s.execution_ns, 0, seq == 0, false, 0);
        hub_.OnCycle(s);
        if (seq % 100 == 99) windows_.Tick();
      }
    }
  }

  TaskStatsSnapshot Stats(TaskId id) const noexcept override {
    return id < stats_.size() ? stats_[id].Snapshot() : TaskStatsSnapshot{};
  }
  telemetry::TelemetryHub& hub() { return hub_; }
  const telemetry::WindowedStats& windows() const { return windows_; }

 private:
  std::array<TaskStats, 8> stats_;
  telemetry::TelemetryHub hub_;
  telemetry::WindowedStats windows_;
};

}  // namespace rtloop::fuzz
