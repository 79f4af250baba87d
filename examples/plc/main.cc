// rtloop-plc: a PLC-style runtime on rtloop::Runtime. Three tasks from a TOML configuration (an
// I/O scan, the conveyor logic, housekeeping) share a process image through lock-free buffers; a
// CODESYS-style task monitor is printed on SIGUSR1 and at exit and served over gRPC telemetry; a
// watchdog trip puts the PLC in its fault state with safe outputs.
//
//   rtloop-plc [--config=FILE] [--inject-overrun[=TASK]] [run options]
//
//   build/bin/rtloop-plc                              # examples/plc/conveyor.toml, until Ctrl-C
//   kill -USR1 $(pidof rtloop-plc)                    # the task monitor, while it runs
//   build/bin/rtloop-plc --duration=3 --inject-overrun=logic    # a watchdog trip at t = 1 s
//
// Exit status: 0 after a run without a fault, 3 when the PLC faulted (a task's watchdog tripped:
// rtloop::Runtime's kExitTaskFault), 1 when the runtime could not start (the message says why),
// 2 for a bad argument or configuration.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "example_cli.h"
#include "plc.h"
#include "plc_config.h"
#include "plc_monitor.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/runtime.h"

namespace {

constexpr char kUsage[] =
    "usage: rtloop-plc [--config=FILE] [--inject-overrun[=TASK]] [run options]\n"
    "  A PLC runtime: the tasks of FILE (an I/O scan, the conveyor logic, housekeeping) on\n"
    "  rtloop::Runtime, a task monitor on SIGUSR1 and at exit, a watchdog per task.\n"
    "  --config=FILE            the PLC configuration (default examples/plc/conveyor.toml)\n"
    "  --inject-overrun[=TASK]  make TASK (default: the logic task) overrun its watchdog from\n"
    "                           t = 1 s on, sensitivity times in a row: a watchdog trip\n"
    "  kill -USR1 PID prints the task monitor while it runs; Ctrl-C or SIGTERM stops it, and\n"
    "  it is printed again.\n"
    "run options:\n";

struct Options {
  std::string config_path = "examples/plc/conveyor.toml";
  std::optional<std::string> inject;  // a task name; "" for the logic task
  example_cli::RunOptions run;
};

std::optional<int> Parse(int argc, char** argv, Options* o) {
  example_cli::Args args(argc, argv, kUsage);
  while (args.Next()) {
    if (args.Standard(&o->run)) continue;
    if (args.Flag("--config", &o->config_path)) continue;
    std::string task;
    if (args.Optional("--inject-overrun", &task, "")) {
      o->inject = task;
      continue;
    }
    return args.Unknown();
  }
  return example_cli::Done(args, o->run, {{"--config", o->config_path}});
}

// Arms the injection for the task named `name` ("" = the one running the logic); false with a
// message when there is no such task.
bool InjectOverrun(plc::Plc& plc, const std::string& name) {
  const plc::PlcConfig& c = plc.config();
  const plc::TaskSpec* spec = name.empty() ? &c.task(plc::Program::kLogic) : nullptr;
  std::string names;
  for (const plc::TaskSpec& t : c.tasks) {
    if (t.name == name) spec = &t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  if (spec == nullptr) {
    std::fprintf(stderr,
                 "rtloop-plc: bad --inject-overrun \"%s\": no such task in %s — use one of %s\n",
                 name.c_str(), c.source.c_str(), names.c_str());
    return false;
  }
  if (spec->watchdog.count() == 0) {
    std::fprintf(
        stderr,
        "rtloop-plc: bad --inject-overrun \"%s\": the task has no watchdog in %s — set its "
        "watchdog, or name another task\n",
        spec->name.c_str(), c.source.c_str());
    return false;
  }
  const std::chrono::nanoseconds from = std::chrono::seconds(1);
  const auto at = static_cast<std::uint64_t>((from + spec->period - std::chrono::nanoseconds(1)) /
                                             spec->period);  // the first release at t >= 1 s
  plc.InjectOverrun(spec->program, at, spec->sensitivity);
  std::printf(
      "rtloop-plc: will inject %u overrun%s of task \"%s\" (watchdog %s x %u) from cycle %llu "
      "(t=1s)\n",
      spec->sensitivity, spec->sensitivity == 1 ? "" : "s", spec->name.c_str(),
      plc::FormatDuration(spec->watchdog).c_str(), spec->sensitivity,
      static_cast<unsigned long long>(at));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  rtloop::BlockSignal(SIGUSR1);  // before any thread: SIGUSR1 is the runtime's monitor's only
  Options o;
  if (std::optional<int> rc = Parse(argc, argv, &o)) return *rc;

  const rtloop::Result<plc::PlcConfig> config =
      plc::LoadPlcConfig(o.config_path, rtloop::ReadSystemInfo().online_cpus);
  if (!config.ok()) {
    const bool missing = config.status().code() == rtloop::StatusCode::kNotFound;
    std::fprintf(stderr, "rtloop-plc: %s%s\n", config.status().message().c_str(),
                 missing ? " (--config=FILE; the default is relative to the repository root)" : "");
    return 2;
  }
  plc::Plc plc(*config);
  if (o.inject && !InjectOverrun(plc, *o.inject)) return 2;

  rtloop::RuntimeConfig rc;
  example_cli::Apply(o.run, "rtloop-plc", &rc);
  rc.monitor_signal = SIGUSR1;  // the runtime's task monitor, with the PLC's view around the table
  rc.monitor_text = [&plc](const rtloop::Runtime& runtime) {
    return plc::FormatPlcMonitor(plc, runtime.Reports());
  };
  auto rt = rtloop::Runtime::Create(rc);
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  std::string tasks;
  for (const plc::TaskSpec& t : config->tasks) {  // in file order: the monitor's order
    if (auto id = (*rt)->AddTask(plc.task(t.program), plc.TaskConfigFor(t.program)); !id.ok()) {
      return rtloop::ExitCode(id.status());
    }
    tasks += (tasks.empty() ? "" : ", ") + t.name + " " + plc::FormatDuration(t.period) + " cpu " +
             std::to_string(t.cpu) + " prio " + std::to_string(t.priority);
  }
  std::printf(
      "rtloop-plc: PLC \"%s\" from %s: %s; running %s; kill -USR1 %d prints the task "
      "monitor\n",
      config->name.c_str(), config->source.c_str(), tasks.c_str(),
      example_cli::DescribeDuration(o.run).c_str(), static_cast<int>(getpid()));
  std::fflush(stdout);

  // A housekeeping job (non-RT, not measured): the fault report once, when it happens.
  bool fault_reported = false;
  if (rtloop::Status s = (*rt)->AddHousekeeping(
          "plc-faults", std::chrono::milliseconds(100),
          [&] {
            if (!fault_reported && plc.faulted()) {
              fault_reported = true;
              std::fprintf(stderr, "rtloop-plc: %s\n",
                           plc::FormatFaultReport(plc.fault(), plc.config()).c_str());
            }
          });
      !s.ok()) {
    return rtloop::ExitCode(s);
  }
  const rtloop::Status status = (*rt)->RunUntilSignal();  // stops the job (joined) first
  if (!fault_reported && plc.faulted()) {                 // in the monitor's last 100 ms
    std::fprintf(stderr, "rtloop-plc: %s\n",
                 plc::FormatFaultReport(plc.fault(), plc.config()).c_str());
  }
  std::fputs(("\n" + plc::FormatPlcMonitor(plc, (*rt)->Reports())).c_str(), stdout);
  std::fflush(stdout);
  // A task fault makes RunUntilSignal() return kAborted: exit status 3 (rtloop::kExitTaskFault).
  return rtloop::ExitCode(status);
}
