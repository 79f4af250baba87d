// rtloop-gpio-toggle: the vendor document's rt_gpio_ctrl case on rtloop::Runtime. An RT task
// flips an output every period and then busy-waits a fixed delay (100 us, as the vendor's case):
// on a scope the output is a square wave of twice the period whose edges move by the task's
// wake-up latency, which the runtime measures at the same time and reports on Ctrl-C.
//
//   rtloop-gpio-toggle (--sim | --led=NAME [--leds-dir=DIR] | --chip=CHIP --line=LINE)
//                      [--period-us=N] [--delay-us=N] [--cpu=N] [--priority=N] [run options]
//
//   build/bin/rtloop-gpio-toggle --chip=gpiochip3 --line=12     # a GPIO line through libgpiod
//   build/bin/rtloop-gpio-toggle --led=user-led                 # /sys/class/leds/user-led
//   build/bin/rtloop-gpio-toggle --sim --duration=5             # memory only: any machine
//
// Exit status: 0 after a run, 1 when the output or the runtime could not start (the message says
// why and lists what exists), 2 for a bad argument.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "example_cli.h"
#include "gpio_output.h"
#include "rtloop/runtime.h"
#include "toggle_task.h"

namespace {

constexpr char kUsage[] =
    "usage: rtloop-gpio-toggle (--sim | --led=NAME [--leds-dir=DIR] | --chip=CHIP --line=LINE)\n"
    "                          [--period-us=N] [--delay-us=N] [--cpu=N] [--priority=N]\n"
    "                          [run options]\n"
    "  Toggles an output every period from an RT task (then busy-waits the delay), and reports\n"
    "  the task's latency on Ctrl-C.\n"
    "  --sim             a memory output (no hardware)\n"
    "  --led=NAME        the LED /sys/class/leds/NAME (its trigger is set to none meanwhile)\n"
    "  --leds-dir=DIR    where the LEDs are (default /sys/class/leds)\n"
    "  --chip=CHIP       a GPIO chip: gpiochip0, /dev/gpiochip0, its label or number (libgpiod)\n"
    "  --line=LINE       the line on it: an offset or a line name\n"
    "  --period-us=N     toggle period, 50..1000000 us (default 1000)\n"
    "  --delay-us=N      busy wait after each toggle, 0..10000 us (default 100, as the vendor)\n"
    "  --cpu=N           CPU to pin the task to (default: the highest isolated CPU, else the\n"
    "                    highest one this process may use)\n"
    "  --priority=N      SCHED_FIFO priority 1..99 (default 90)\n"
    "  kill -USR1 PID prints the report while it runs; Ctrl-C or SIGTERM stops it and\n"
    "  prints it.\n"
    "run options:\n";

struct Options {
  bool sim = false;
  std::string led;
  std::string leds_dir = "/sys/class/leds";
  std::string chip;
  std::string line;
  long period_us = 1000;
  long delay_us = 100;
  long cpu = -1;
  long priority = 90;
  example_cli::RunOptions run;
};

std::optional<int> Parse(int argc, char** argv, Options* o) {
  example_cli::Args args(argc, argv, kUsage);
  while (args.Next()) {
    if (args.Standard(&o->run)) continue;
    if (args.Switch("--sim")) {
      o->sim = true;
      continue;
    }
    if (args.Flag("--led", &o->led) || args.Flag("--leds-dir", &o->leds_dir) ||
        args.Flag("--chip", &o->chip) || args.Flag("--line", &o->line)) {
      continue;
    }
    if (args.Flag("--period-us", &o->period_us, 50, 1'000'000) ||
        args.Flag("--delay-us", &o->delay_us, 0, 10'000) || args.Flag("--cpu", &o->cpu, 0, 1023) ||
        args.Flag("--priority", &o->priority, 1, 99)) {
      continue;
    }
    return args.Unknown();
  }
  if (std::optional<int> rc = example_cli::Done(args, o->run)) return rc;
  const int outputs =
      (o->sim ? 1 : 0) + (o->led.empty() ? 0 : 1) + (o->chip.empty() && o->line.empty() ? 0 : 1);
  if (outputs != 1) {
    return args.Fail(std::string(outputs == 0 ? "choose an output" : "choose one output") +
                     ": --sim, --led=NAME (" + gpio_toggle::ListLeds(o->leds_dir) +
                     "), or --chip=CHIP --line=LINE (" + gpio_toggle::ListGpioChips() + ")");
  }
  if (!o->chip.empty() && o->line.empty()) return args.Fail("--chip needs --line=LINE too");
  if (o->chip.empty() && !o->line.empty()) return args.Fail("--line needs --chip=CHIP too");
  if (o->delay_us >= o->period_us) {
    return args.Fail("--delay-us=" + std::to_string(o->delay_us) +
                     " leaves no time in --period-us=" + std::to_string(o->period_us) +
                     ": give a delay shorter than the period");
  }
  return std::nullopt;
}

rtloop::Result<std::unique_ptr<gpio_toggle::Output>> OpenOutput(const Options& o) {
  if (o.sim) return std::unique_ptr<gpio_toggle::Output>(new gpio_toggle::SimOutput());
  if (!o.led.empty()) return gpio_toggle::OpenLed(o.leds_dir, o.led);
  return gpio_toggle::OpenGpioLine(o.chip, o.line, "rtloop-gpio-toggle");
}

void PrintOutputSummary(const gpio_toggle::ToggleTask& task, const gpio_toggle::Output& out,
                        std::chrono::nanoseconds period) {
  std::printf(
      "\ntoggled %llu times: %s, %llu writes, %llu failed; on a scope, a square wave of "
      "period %s whose edges are late by the wake-up latency below\n\n",
      static_cast<unsigned long long>(task.toggles()), out.Describe().c_str(),
      static_cast<unsigned long long>(out.writes()), static_cast<unsigned long long>(out.errors()),
      rtloop::FormatPeriod(2 * period).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  rtloop::BlockSignal(SIGUSR1);  // before any thread: SIGUSR1 is the runtime's monitor's only
  Options o;
  if (std::optional<int> rc = Parse(argc, argv, &o)) return *rc;

  rtloop::Result<std::unique_ptr<gpio_toggle::Output>> output = OpenOutput(o);
  if (!output.ok()) return rtloop::ExitCode(output.status());
  gpio_toggle::ToggleTask task(**output, std::chrono::microseconds(o.delay_us), /*cycles=*/0);

  rtloop::RuntimeConfig rc;
  example_cli::Apply(o.run, "rtloop-gpio-toggle", &rc);
  const std::chrono::nanoseconds period = std::chrono::microseconds(o.period_us);
  rc.monitor_signal = SIGUSR1;  // the runtime's task monitor: the output summary and the table
  rc.monitor_text = [&task, &output, period](const rtloop::Runtime& runtime) {
    PrintOutputSummary(task, **output, period);
    return rtloop::FormatTaskReport(runtime.Reports());
  };
  auto rt = rtloop::Runtime::Create(rc);
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  rtloop::TaskConfig tc;
  tc.name = "toggle";
  tc.period = period;
  tc.cpus = {o.cpu >= 0 ? static_cast<int>(o.cpu) : example_cli::DefaultRtCpu()};
  tc.policy = rtloop::SchedPolicy::kFifo;
  tc.priority = static_cast<int>(o.priority);
  if (auto id = (*rt)->AddTask(task, tc); !id.ok()) return rtloop::ExitCode(id.status());
  std::printf(
      "rtloop-gpio-toggle: toggling %s every %s on CPU %d (SCHED_FIFO %ld), %ld us busy "
      "after each toggle, %s\n",
      (*output)->Describe().c_str(), rtloop::FormatPeriod(tc.period).c_str(), tc.cpus[0],
      o.priority, o.delay_us, example_cli::DescribeDuration(o.run).c_str());
  std::fflush(stdout);

  const rtloop::Status status = (*rt)->RunUntilSignal();
  PrintOutputSummary(task, **output, tc.period);
  std::fputs(rtloop::FormatTaskReport((*rt)->Reports()).c_str(), stdout);
  return rtloop::ExitCode(status);
}
