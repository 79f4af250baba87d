// Internal: every check Executor::AddTask() makes of one TaskConfig on its own (implemented in
// task_config.cc). Privileges are checked separately (sched_util.h: CheckSchedPrivilege), since a
// missing one may be allowed to fall back. Not installed.
//
//   RTLOOP_RETURN_IF_ERROR(ValidateTaskConfig(config, executor_config.start_clock, cpus));
//
// Not RT-safe: builds messages. Thread-safe (pure function of its arguments).
#pragma once

#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/time.h"
#include "sched_util.h"

namespace rtloop::internal {

// Name, period, phase, run_for, the watchdog (time >= 0, sensitivity 1..1000 and only with a
// time, time x sensitivity in 64 bits, one way of saying the action), the clock against the
// executor's `start_clock`, stack size, scheduling ranges, CPUs against `cpus`, and the observers
// (at most kMaxCycleObservers, none null, none twice). The message names the task, the field and
// the fix.
Status ValidateTaskConfig(const TaskConfig& config, Clock start_clock, const CpuFacts& cpus);

}  // namespace rtloop::internal
