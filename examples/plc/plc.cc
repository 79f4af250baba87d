#include "plc.h"

#include <cstdio>

#include "rtloop/framework/time.h"

namespace plc {

using std::chrono::nanoseconds;

namespace {

constexpr std::size_t Index(Program p) noexcept { return static_cast<std::size_t>(p); }

std::string Seconds(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", static_cast<double>(ns) * 1e-9);
  return buf;
}

// A measured time to 3 significant digits in a fitting unit: "812us", "6.2ms", "1.25s".
std::string Approx(std::int64_t ns) {
  const double d = static_cast<double>(ns);
  char buf[32];
  if (ns < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.3gus", d * 1e-3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.3gms", d * 1e-6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3gs", d * 1e-9);
  }
  return buf;
}

}  // namespace

std::string FormatFaultReport(const FaultReport& f, const PlcConfig& config) {
  if (!f.faulted) return "no fault";
  const TaskSpec& spec = config.task(f.program);
  std::string out =
      "PLC FAULT: watchdog of task \"" + spec.name + "\" (" + FormatDuration(spec.period) +
      ", watchdog " + FormatDuration(nanoseconds(f.watchdog_ns)) + " x " +
      std::to_string(f.sensitivity) + ") tripped at cycle " + std::to_string(f.cycle) +
      " (t=" + Seconds(f.since_start_ns) + "): execution " + Approx(f.execution_ns) + ", ";
  if (f.single_cycle) {
    out += "one cycle longer than watchdog x sensitivity";
  } else {
    out +=
        std::to_string(f.consecutive) + " consecutive violation" + (f.consecutive == 1 ? "" : "s");
  }
  out += "; task halted, outputs set to safe values (motor off, red lamp)";
  return out;
}

// --- io_scan ------------------------------------------------------------------------------------

rtloop::StepResult IoScanTask::Step(const rtloop::CycleContext& ctx) noexcept {
  if (ctx.cycle == 0) first_release_ = ctx.release;
  plc_.MaybeInject(Program::kIoScan, ctx.cycle);
  // Inputs: read the device into the writer's slot, whole, and publish it for the logic task.
  sim_.Advance(ctx.release - first_release_);
  InputImage& in = plc_.exchange_.inputs.WriteSlot();
  in = sim_.ReadInputs();
  in.scan = ctx.cycle;
  plc_.exchange_.inputs.Publish();
  // Outputs: the newest complete set from the logic task, unless the PLC is faulted.
  plc_.exchange_.outputs.Update();
  forced_safe_ = plc_.faulted();
  sim_.WriteOutputs(forced_safe_ ? SafeOutputs() : plc_.exchange_.outputs.ReadSlot());
  ++scans_;
  Publish();
  return rtloop::StepResult::kContinue;
}

void IoScanTask::ForceSafeOutputs() noexcept {
  forced_safe_ = true;
  sim_.WriteOutputs(SafeOutputs());
  Publish();
}

void IoScanTask::Publish() noexcept {
  DeviceStatus s;
  s.inputs = sim_.ReadInputs();
  s.outputs = sim_.outputs();
  s.outputs_forced_safe = forced_safe_;
  s.items_on_belt = sim_.items_on_belt();
  s.items_loaded = sim_.items_loaded();
  s.items_removed = sim_.items_removed();
  s.sim_time_ns = sim_.now().count();
  s.scans = scans_;
  plc_.device_.Store(s);
}

// --- logic --------------------------------------------------------------------------------------

rtloop::StepResult LogicTask::Step(const rtloop::CycleContext& ctx) noexcept {
  // One consistent input scan for the whole cycle, as a PLC task's input image.
  plc_.exchange_.inputs.Update();
  const InputImage& in = plc_.exchange_.inputs.ReadSlot();
  const OutputImage out = RunConveyorLogic(in, memory_);
  memory_.logic_cycles = ctx.cycle + 1;
  plc_.MaybeInject(Program::kLogic, ctx.cycle);
  plc_.exchange_.outputs.Write(out);
  plc_.exchange_.image.Store(ProcessImage{in, out, memory_});
  return rtloop::StepResult::kContinue;
}

// --- housekeeping -------------------------------------------------------------------------------

rtloop::StepResult HousekeepingTask::Step(const rtloop::CycleContext& ctx) noexcept {
  if (ctx.cycle == 0) first_release_ = last_change_ = ctx.release;
  plc_.MaybeInject(Program::kHousekeeping, ctx.cycle);
  // An RT reader of a SeqLockValue: a few bounded attempts, else keep the last good image.
  const std::uint64_t before = plc_.exchange_.image.version();
  if (!plc_.exchange_.image.TryLoad(last_, 4)) ++diag_.read_collisions;
  if (before != diag_.image_version) last_change_ = ctx.release;
  diag_.image_version = before;
  // The logic task must keep producing images: a stall is what its watchdog cannot see (a task
  // that never runs has no execution time to measure).
  const nanoseconds logic_period = plc_.config().task(Program::kLogic).period;
  diag_.logic_stalled = ctx.release - last_change_ > 3 * logic_period;

  ++diag_.samples;
  // The motor as the device has it (the logic's command is overridden once the PLC faults).
  if (plc_.device_.TryLoad(device_, 4)) {
    if (device_.outputs.motor_run) ++motor_samples_;
  } else {
    ++diag_.read_collisions;
  }
  diag_.motor_duty = static_cast<double>(motor_samples_) / static_cast<double>(diag_.samples);
  const double minutes = static_cast<double>((ctx.release - first_release_).count()) / 60e9;
  diag_.items_per_minute =
      minutes > 0.0 ? static_cast<double>(last_.memory.items_delivered) / minutes : 0.0;
  plc_.diagnostics_.Store(diag_);
  return rtloop::StepResult::kContinue;
}

// --- watchdog -----------------------------------------------------------------------------------
// The framework's watchdog tripped on this task's cycle; the executor ends the task after this
// hook (action kFaultTask). On the task's own RT thread, so touching that task is safe.

void IoScanTask::OnWatchdog(const rtloop::CycleContext& /*ctx*/,
                            const rtloop::FaultRecord& fault) noexcept {
  ForceSafeOutputs();  // the device goes safe now, not a cycle later
  plc_.OnWatchdogTrip(Program::kIoScan, fault);
}

void LogicTask::OnWatchdog(const rtloop::CycleContext& /*ctx*/,
                           const rtloop::FaultRecord& fault) noexcept {
  plc_.OnWatchdogTrip(Program::kLogic, fault);
}

void HousekeepingTask::OnWatchdog(const rtloop::CycleContext& /*ctx*/,
                                  const rtloop::FaultRecord& fault) noexcept {
  plc_.OnWatchdogTrip(Program::kHousekeeping, fault);
}

void Plc::OnWatchdogTrip(Program program, const rtloop::FaultRecord& fault) noexcept {
  // The first trip wins the latch and alone writes the report (SeqLockValue has one writer).
  int expected = -1;
  if (!fault_owner_.compare_exchange_strong(expected, static_cast<int>(program),
                                            std::memory_order_acq_rel)) {
    return;
  }
  FaultReport f;
  f.faulted = true;
  f.program = program;
  f.cycle = fault.cycle;
  f.since_start_ns = fault.since_start_ns;
  f.execution_ns = fault.execution_ns;
  f.watchdog_ns = fault.limit_ns;
  f.sensitivity = config_.task(program).sensitivity;
  f.consecutive = fault.consecutive;
  f.single_cycle = fault.reason == rtloop::FaultReason::kWatchdogSingle;
  fault_.Store(f);
}

// --- Plc ----------------------------------------------------------------------------------------

Plc::Plc(const PlcConfig& config)
    : config_(config), io_scan_(*this, config_.conveyor), logic_(*this), housekeeping_(*this) {}

rtloop::PeriodicTask& Plc::task(Program program) noexcept {
  switch (program) {
    case Program::kIoScan:
      return io_scan_;
    case Program::kLogic:
      return logic_;
    case Program::kHousekeeping:
      break;
  }
  return housekeeping_;
}

rtloop::TaskConfig Plc::TaskConfigFor(Program program) {
  const TaskSpec& spec = config_.task(program);
  rtloop::TaskConfig tc;
  tc.name = spec.name;
  tc.period = spec.period;
  tc.cpus = {spec.cpu};
  tc.policy = rtloop::SchedPolicy::kFifo;
  tc.priority = spec.priority;
  tc.overrun_policy = rtloop::OverrunPolicy::kSkip;
  tc.watchdog.time = spec.watchdog;  // 0: off
  tc.watchdog.sensitivity = spec.watchdog.count() > 0 ? spec.sensitivity : 1;
  tc.watchdog.action = rtloop::WatchdogAction::kFaultTask;
  return tc;
}

void Plc::InjectOverrun(Program program, std::uint64_t at_cycle, std::uint32_t cycles) noexcept {
  const TaskSpec& spec = config_.task(program);
  Injection& inj = injections_[Index(program)];
  inj.at_cycle = at_cycle;
  inj.cycles = cycles;
  inj.busy = spec.watchdog * 6 / 5 + std::chrono::microseconds(200);
}

void Plc::MaybeInject(Program program, std::uint64_t cycle) const noexcept {
  const Injection& inj = injections_[Index(program)];
  if (inj.cycles == 0 || cycle < inj.at_cycle || cycle >= inj.at_cycle + inj.cycles) return;
  rtloop::SpinFor(rtloop::Clock::kMonotonic, inj.busy);
}

}  // namespace plc
