// Helpers shared by the telemetry tests.
#pragma once

#include <chrono>
#include <cstdint>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/task_config.h"

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

}  // namespace rtloop::telemetry::testing
