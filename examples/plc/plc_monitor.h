// The PLC's task monitor, like a CODESYS runtime's task configuration view: the runtime's standard
// task table (rtloop::FormatTaskReport: per task state, cycles, last/min/avg/max wake-up latency
// and execution time, jitter, overruns, missed releases) and what a PLC adds to it: each task's
// watchdog (time x sensitivity, state, violations), the device's outputs (normal or forced safe)
// and the fault report.
//
//   std::fputs(plc::FormatPlcMonitor(plc, runtime->Reports()).c_str(), stdout);
//
//   watchdog                TIME     SENS  STATE    VIOLATIONS IN A ROW
//     io_scan              500us        3  armed             0        0
//     logic                  5ms        2  TRIPPED           2        2
//   conveyor: stopped, motor off, lamps red; 3 items delivered, 1 on the belt, 24.5 items/min ...
//   outputs: SAFE (motor off, red lamp) since the PLC fault
//   PLC FAULT: watchdog of task "logic" (10ms, watchdog 5ms x 2) tripped at cycle 100 ...
//
// The watchdog is the framework's (TaskConfig::watchdog): its state here comes from the executor's
// statistics in `reports` (watchdog_violations, watchdog_trips, last_fault), the same figures
// every other view shows (the report's "watchdog, faults" section, rtloop-top, gRPC,
// /api/v1/tasks, /metrics): a task whose watchdog tripped ends in TASK_STATE_FAULT with
// faults = 1, the others keep running.
//
// Threading: reads the Plc's thread-safe getters; any non-RT thread, while the tasks run. Not
// RT-safe: builds strings.
#pragma once

#include <span>
#include <string>

#include "plc.h"
#include "rtloop/telemetry/task_report.h"

namespace plc {

// The watchdog table (from `reports`, the runtime's), the device lines and the fault line (no
// task table).
std::string FormatPlcStatus(const Plc& plc, std::span<const rtloop::TaskReport> reports);

// The whole monitor: a title, FormatTaskReport(reports), then FormatPlcStatus(plc).
std::string FormatPlcMonitor(const Plc& plc, std::span<const rtloop::TaskReport> reports);

}  // namespace plc
