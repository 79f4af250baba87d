// The PLC: its three programs as rtloop tasks that share one process image, the framework's
// execution-time watchdog per task (TaskConfig::watchdog), and the fault state a trip puts the
// PLC in.
//
//   plc::Plc plc(config);                                   // a validated PlcConfig
//   for (plc::Program p : plc::kPrograms) {
//     rtloop::TaskConfig tc = plc.TaskConfigFor(p);        // name, period, CPU, priority, watchdog
//     if (auto id = runtime->AddTask(plc.task(p), tc); !id.ok()) return Fail(id.status());
//   }
//   runtime->RunUntilSignal();
//   if (plc.faulted()) std::puts(plc::FormatFaultReport(plc.fault(), plc.config()).c_str());
//
// The tasks (periods, CPUs and priorities from the configuration):
//   io_scan       every cycle: advance the device, publish the inputs, apply the latest outputs
//                 (safe outputs instead once the PLC is faulted), publish the device's state
//   logic         take the latest inputs, run the conveyor state machine, publish the outputs and
//                 the whole image
//   housekeeping  read the image, compute throughput and motor duty, supervise the logic task
//                 (its image must keep changing)
// They exchange data only through ProcessImageExchange (process_image.h) and the SeqLockValues
// below: no locks, no allocation, no waiting on each other.
//
// Watchdog: the framework's (TaskConfig::watchdog, CODESYS semantics: `time` x `sensitivity`
// from the configuration, action kFaultTask). On a trip the executor records the fault, calls the
// task's OnWatchdog() on its own RT thread and then ends the task in TaskState::kFault (a CODESYS
// task in exception runs no further cycle; every view shows the fault, and rtloop::Runtime prints
// it on stderr and makes RunUntilSignal() return kAborted). OnWatchdog() latches the PLC's first
// fault and its FaultReport, and the outputs go to SafeOutputs(): at once when io_scan itself
// tripped, otherwise from io_scan's next cycle (<= its period later). The other tasks keep
// running, so the device keeps being scanned and held safe. Only a restart clears the fault.
//
// Threading: construct and configure (InjectOverrun) before the tasks start; each task's
// PeriodicTask and observer run on that task's RT thread only. The getters (faulted(), fault(),
// device(), diagnostics(), image()) may be called from any thread at any time: they
// read single-writer atomics and SeqLockValues. The SeqLockValue getters use Load(), which
// retries, so they are for non-RT threads (the monitor, tests); the tasks themselves read each
// other's data with the bounded TryLoad().
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "conveyor.h"
#include "plc_config.h"
#include "process_image.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/seqlock_value.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"

namespace plc {

inline constexpr std::array<Program, kProgramCount> kPrograms = {Program::kIoScan, Program::kLogic,
                                                                 Program::kHousekeeping};

// What the device is doing, published by io_scan every cycle.
struct DeviceStatus {
  InputImage inputs;
  OutputImage outputs;               // what the actuators were last given
  bool outputs_forced_safe = false;  // the PLC is faulted: outputs are SafeOutputs()
  std::int32_t items_on_belt = 0;
  std::uint32_t items_loaded = 0;
  std::uint32_t items_removed = 0;
  std::int64_t sim_time_ns = 0;
  std::uint64_t scans = 0;
};

// Housekeeping's view, published every housekeeping cycle.
struct Diagnostics {
  std::uint64_t samples = 0;          // housekeeping cycles that read an image
  double items_per_minute = 0.0;      // delivered items over the run so far
  double motor_duty = 0.0;            // fraction of samples with the device's motor running
  bool logic_stalled = false;         // the logic's image stopped changing (> 3 logic periods)
  std::uint64_t image_version = 0;    // SeqLockValue::version() of the image at the last sample
  std::uint64_t read_collisions = 0;  // reads (image, device) that lost to a Store() 4 times
};

// The first watchdog trip. faulted == false: none.
struct FaultReport {
  bool faulted = false;
  Program program = Program::kLogic;
  std::uint64_t cycle = 0;          // the task's cycle that tripped it
  std::int64_t since_start_ns = 0;  // that cycle's end, from the task's first release
  std::int64_t execution_ns = 0;    // its execution time
  std::int64_t watchdog_ns = 0;
  std::uint32_t sensitivity = 1;
  std::uint32_t consecutive = 0;  // violations in a row, that cycle included
  bool single_cycle = false;      // one cycle > watchdog x sensitivity
};

// "PLC FAULT: watchdog of task "logic" (10ms, watchdog 5ms x 2) tripped at cycle 101 (t=1.010s):
// execution 6.2ms, 2 consecutive violations; outputs set to safe values (motor off, red lamp)".
// "no fault" when there is none.
std::string FormatFaultReport(const FaultReport& fault, const PlcConfig& config);

class Plc;

// io_scan: the only owner of the (simulated) device.
class IoScanTask final : public rtloop::PeriodicTask {
 public:
  IoScanTask(Plc& plc, const ConveyorConfig& conveyor) noexcept : plc_(plc), sim_(conveyor) {}
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override;
  void OnWatchdog(const rtloop::CycleContext& ctx,
                  const rtloop::FaultRecord& fault) noexcept override;
  // On this task's thread: outputs to SafeOutputs() now, and publish it. RT-safe.
  void ForceSafeOutputs() noexcept;

 private:
  void Publish() noexcept;
  Plc& plc_;
  ConveyorSim sim_;
  rtloop::TimePoint first_release_;
  std::uint64_t scans_ = 0;
  bool forced_safe_ = false;
};

class LogicTask final : public rtloop::PeriodicTask {
 public:
  explicit LogicTask(Plc& plc) noexcept : plc_(plc) {}
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override;
  void OnWatchdog(const rtloop::CycleContext& ctx,
                  const rtloop::FaultRecord& fault) noexcept override;

 private:
  Plc& plc_;
  MemoryImage memory_;
};

class HousekeepingTask final : public rtloop::PeriodicTask {
 public:
  explicit HousekeepingTask(Plc& plc) noexcept : plc_(plc) {}
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override;
  void OnWatchdog(const rtloop::CycleContext& ctx,
                  const rtloop::FaultRecord& fault) noexcept override;

 private:
  Plc& plc_;
  ProcessImage last_;
  DeviceStatus device_;
  Diagnostics diag_;
  std::uint64_t motor_samples_ = 0;
  rtloop::TimePoint first_release_;
  rtloop::TimePoint last_change_;
};

class Plc {
 public:
  // `config` must be valid (ParsePlcConfig() succeeded). Not RT-safe: allocates.
  explicit Plc(const PlcConfig& config);
  Plc(const Plc&) = delete;
  Plc& operator=(const Plc&) = delete;

  const PlcConfig& config() const noexcept { return config_; }
  rtloop::PeriodicTask& task(Program program) noexcept;
  // The rtloop task for `program`: name, period, pinned to its CPU, SCHED_FIFO at its priority,
  // kSkip overruns (a PLC skips a missed cycle), the framework's execution-time watchdog with the
  // configuration's time and sensitivity (none when the time is 0) and action kFaultTask.
  rtloop::TaskConfig TaskConfigFor(Program program);

  // Testing the watchdog: from `program`'s cycle `at_cycle` on, `cycles` consecutive cycles
  // busy-wait 1.2 x the watchdog time (plus 200 us), so that `cycles` = sensitivity trips it by
  // the consecutive rule. Before Start() only.
  void InjectOverrun(Program program, std::uint64_t at_cycle, std::uint32_t cycles) noexcept;

  // Any thread; faulted() is RT-safe, the others retry (non-RT threads).
  bool faulted() const noexcept { return fault_owner_.load(std::memory_order_acquire) >= 0; }
  FaultReport fault() const noexcept { return fault_.Load(); }
  DeviceStatus device() const noexcept { return device_.Load(); }
  Diagnostics diagnostics() const noexcept { return diagnostics_.Load(); }
  ProcessImage image() const noexcept { return exchange_.image.Load(); }

 private:
  friend class IoScanTask;
  friend class LogicTask;
  friend class HousekeepingTask;

  struct Injection {
    std::uint64_t at_cycle = 0;
    std::uint32_t cycles = 0;  // 0: none
    std::chrono::nanoseconds busy{0};
  };
  // From the faulting task's OnWatchdog(), on its RT thread: latches the first fault. RT-safe.
  void OnWatchdogTrip(Program program, const rtloop::FaultRecord& fault) noexcept;
  // In `program`'s Step(): busy-waits when an injection covers `cycle`. RT-safe.
  void MaybeInject(Program program, std::uint64_t cycle) const noexcept;

  const PlcConfig config_;
  ProcessImageExchange exchange_;
  rtloop::SeqLockValue<DeviceStatus> device_;      // writer: io_scan
  rtloop::SeqLockValue<Diagnostics> diagnostics_;  // writer: housekeeping
  rtloop::SeqLockValue<FaultReport> fault_;        // writer: the task that won fault_owner_
  std::atomic<int> fault_owner_{-1};               // Program of the first trip; -1: none
  std::array<Injection, kProgramCount> injections_{};
  IoScanTask io_scan_;
  LogicTask logic_;
  HousekeepingTask housekeeping_;
};

}  // namespace plc
