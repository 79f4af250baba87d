// The PLC's configuration: its tasks, like an IEC 61131-3 CONFIGURATION / RESOURCE / TASK block,
// and the simulated conveyor, read from a TOML file (toml++).
//
//   [[task]]
//   name = "io_scan"        # unique; shown in the monitor and in telemetry
//   program = "io_scan"     # what it runs: "io_scan", "logic" or "housekeeping", once each
//   period = "1ms"          # a duration: 500us, 1ms, 0.5s, T#10ms
//   cpu = 1                 # the CPU the task's thread is pinned to (must be online)
//   priority = 90           # SCHED_FIFO 1..99, higher preempts lower (IEC counts 0 as highest)
//   watchdog = "500us"      # optional: execution-time limit per cycle
//   sensitivity = 3         # optional (default 1): consecutive violations that trip it
//
//   rtloop::Result<plc::PlcConfig> config =
//       plc::LoadPlcConfig("examples/plc/conveyor.toml", rtloop::ReadSystemInfo().online_cpus);
//   if (!config.ok()) { std::fprintf(stderr, "%s\n", config.status().message().c_str()); ... }
//
// Every error is one line that names the file, the line, the key and the fix, e.g.
//   conveyor.toml:16: task "logic": key "priority" = 120 is out of range — use 1..99 (SCHED_FIFO
//   priority, higher runs first)
// and the caller starts nothing. Checked: unknown keys and tables, wrong value types, missing
// required keys, period or watchdog 0, duplicate task names, a program run by no task or by two,
// a CPU that is not online, a priority or sensitivity out of range, TOML syntax.
//
// Threading: plain functions and value types; any thread. Not RT-safe: parsing allocates; load
// the configuration before anything starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rtloop/framework/status.h"

namespace plc {

// The three programs of this PLC; each task runs exactly one of them.
enum class Program {
  kIoScan,        // copies device inputs into the process image and outputs back to the device
  kLogic,         // the conveyor's state machine
  kHousekeeping,  // throughput statistics and supervision of the logic task
};
inline constexpr int kProgramCount = 3;

// "io_scan", "logic", "housekeeping".
const char* ProgramName(Program program) noexcept;

struct TaskSpec {
  std::string name;
  Program program = Program::kLogic;
  std::chrono::nanoseconds period{0};    // > 0
  int cpu = 0;                           // an online CPU
  int priority = 0;                      // SCHED_FIFO 1..99
  std::chrono::nanoseconds watchdog{0};  // 0: no watchdog
  std::uint32_t sensitivity = 1;         // 1..1000; with watchdog only
  int line = 0;                          // line of the task's [[task]] header
};

// The simulated device (conveyor.h). Every key of the [conveyor] table is optional.
struct ConveyorConfig {
  double belt_length_mm = 2000.0;
  double speed_mm_per_s = 500.0;  // belt speed while the motor runs
  double item_length_mm = 200.0;  // boxes placed at the belt's entry
  std::chrono::nanoseconds item_interval{std::chrono::milliseconds(2500)};  // a new box this often
  std::chrono::nanoseconds removal_delay{std::chrono::milliseconds(800)};   // operator at the end
  std::chrono::nanoseconds start_press_at{
      std::chrono::milliseconds(200)};  // operator presses start
};

struct PlcConfig {
  std::string name = "plc";     // [plc] name
  std::string source;           // the file it came from
  std::vector<TaskSpec> tasks;  // in file order, one per program
  ConveyorConfig conveyor;

  // The task that runs `program` (validated to exist).
  const TaskSpec& task(Program program) const;
};

// Parses `text` as the content of `source_name` (used in messages). `online_cpus`: the CPUs a task
// may name (rtloop::ReadSystemInfo().online_cpus).
rtloop::Result<PlcConfig> ParsePlcConfig(std::string_view text, std::string_view source_name,
                                         const std::vector<int>& online_cpus);

// Reads and parses the file at `path` through rtloop's input reader (input_file.h): a regular
// file of at most 256 KiB, read without ever blocking. A missing file is NotFound, an unreadable
// one PermissionDenied, a directory, FIFO, device or socket InvalidArgument and a bigger file
// ResourceExhausted, each naming the file and the fix; nothing is parsed then.
rtloop::Result<PlcConfig> LoadPlcConfig(const std::string& path,
                                        const std::vector<int>& online_cpus);

// "500us", "1ms", "1.5ms", "2s", "250000ns", "T#10ms" (IEC style) -> nanoseconds, >= 0.
// InvalidArgument for anything else.
rtloop::Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// 1500000ns -> "1.5ms", 500000ns -> "500us": the shortest exact form ParseDuration() reads back.
std::string FormatDuration(std::chrono::nanoseconds d);

}  // namespace plc
