// rtloop-motion: a 2 kHz position loop on rtloop::Runtime. A simulated servo motor drives a load
// through a flexible coupling (a discrete state-space plant in fixed-size Eigen matrices), an LQR
// controller with feed-forward follows an S-curve out and back, and a second, "shadow" axis runs
// on the same wake-up times with its setpoint taken at the release time instead: side by side they
// show what the loop's wake-up latency costs in tracking error.
//
//   rtloop-motion [--period-us=N] [--cpu=N] [--priority=N] [run options]
//
//   build/bin/rtloop-motion                          # 10 s, progress every second, then the report
//   build/bin/rtloop-motion --record=motion.rtlog    # and every cycle's sample in a file
//
// Exit status: 0 after a run, 1 when the runtime could not start (the message says why), 2 for a
// bad argument.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "axis.h"
#include "example_cli.h"
#include "rtloop/runtime.h"

namespace {

constexpr char kUsage[] =
    "usage: rtloop-motion [--period-us=N] [--cpu=N] [--priority=N] [run options]\n"
    "  A position loop for a simulated servo with a flexible load (LQR + feed-forward on an\n"
    "  S-curve), and a shadow axis that takes its setpoint at the release time instead of the\n"
    "  wake-up time; progress every second, tracking error and latency at the end.\n"
    "  --period-us=N    loop period, 100..10000 us (default 500: 2 kHz)\n"
    "  --cpu=N          CPU to pin the loop to (default: the highest isolated CPU, else the\n"
    "                   highest one this process may use)\n"
    "  --priority=N     SCHED_FIFO priority 1..99 (default 90)\n"
    "  kill -USR1 PID prints the report while it runs; Ctrl-C or SIGTERM stops it early.\n"
    "run options (default --duration=10):\n";

struct Options {
  long period_us = 500;
  long cpu = -1;
  long priority = 90;
  example_cli::RunOptions run;
};

std::optional<int> Parse(int argc, char** argv, Options* o) {
  o->run.duration_s = 10.0;
  example_cli::Args args(argc, argv, kUsage);
  while (args.Next()) {
    if (args.Standard(&o->run)) continue;
    if (args.Flag("--period-us", &o->period_us, 100, 10'000)) continue;
    if (args.Flag("--cpu", &o->cpu, 0, 1023)) continue;
    if (args.Flag("--priority", &o->priority, 1, 99)) continue;
    return args.Unknown();
  }
  return example_cli::Done(args, o->run);
}

double Mrad(double rad) { return rad * 1e3; }

// One progress line from what the loop published (a SeqLockValue: the RT thread never waits).
void PrintProgress(const motion::MotionTask& task, std::chrono::nanoseconds period) {
  const motion::AxisStatus s = task.status();
  const double t = std::chrono::duration<double>(period * (s.cycle + 1)).count();
  std::printf(
      "t=%6.1fs cycle %8llu  setpoint %7.3f rad  error %7.3f mrad  RMS/max %.3f/%.3f mrad "
      "(shadow %.3f/%.3f)\n",
      t, static_cast<unsigned long long>(s.cycle), s.sample.setpoint_rad, Mrad(s.sample.error_rad),
      Mrad(s.rms_error_rad), Mrad(s.max_error_rad), Mrad(s.shadow_rms_error_rad),
      Mrad(s.shadow_max_error_rad));
  std::fflush(stdout);
}

// The tracking summary; after the run (the axes are no longer written).
void PrintTracking(const motion::Axis& axis, const motion::Axis& shadow) {
  std::printf("\ntracking error (load angle - setpoint at the wake-up time), %llu cycles\n",
              static_cast<unsigned long long>(axis.tracking().count()));
  std::printf("  %-44s %9s %9s\n", "loop", "RMS mrad", "max mrad");
  std::printf("  %-44s %9.3f %9.3f\n", "setpoint at the wake-up time W_k (this loop)",
              Mrad(axis.tracking().rms()), Mrad(axis.tracking().max_abs()));
  std::printf("  %-44s %9.3f %9.3f\n", "setpoint at the release time E_k (shadow)",
              Mrad(shadow.tracking().rms()), Mrad(shadow.tracking().max_abs()));
  if (const std::uint64_t n = axis.plant().clamped_advances(); n != 0) {
    std::printf("  the process stalled for more than 0.5 s %llu times (the plant was clamped)\n",
                static_cast<unsigned long long>(n));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  rtloop::BlockSignal(SIGUSR1);  // before any thread: SIGUSR1 is the runtime's monitor's only
  Options o;
  if (std::optional<int> rc = Parse(argc, argv, &o)) return *rc;

  // Set-up: discretise the plant, design the controller, plan the profile (may allocate).
  motion::AxisConfig ac;
  ac.period = std::chrono::microseconds(o.period_us);
  ac.setpoint_at = motion::SetpointAt::kWake;
  auto axis = motion::Axis::Create(ac);
  if (!axis.ok()) return rtloop::ExitCode(axis.status());
  ac.setpoint_at = motion::SetpointAt::kRelease;
  auto shadow = motion::Axis::Create(ac);
  if (!shadow.ok()) return rtloop::ExitCode(shadow.status());
  motion::MotionTask task(**axis, shadow->get(), /*cycles=*/0);

  rtloop::RuntimeConfig rc;
  example_cli::Apply(o.run, "rtloop-motion", &rc);
  rc.monitor_signal =
      SIGUSR1;  // the runtime's task monitor: kill -USR1 prints the progress and table
  rc.monitor_text = [&task, period = ac.period](const rtloop::Runtime& runtime) {
    PrintProgress(task, period);
    return rtloop::FormatTaskReport(runtime.Reports());
  };
  auto rt = rtloop::Runtime::Create(rc);
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  rtloop::TaskConfig tc;
  tc.name = "position";
  tc.period = ac.period;
  tc.cpus = {o.cpu >= 0 ? static_cast<int>(o.cpu) : example_cli::DefaultRtCpu()};
  tc.policy = rtloop::SchedPolicy::kFifo;
  tc.priority = static_cast<int>(o.priority);
  if (auto id = (*rt)->AddTask(task, tc); !id.ok()) return rtloop::ExitCode(id.status());

  const motion::BackAndForth& profile = (*axis)->profile();
  std::printf(
      "rtloop-motion: %s loop on CPU %d (SCHED_FIFO %ld), %s; plant resonance %.0f Hz, "
      "profile %.2f rad out and back every %.2f s, peak %.1f rad/s%s%s\n",
      rtloop::FormatPeriod(tc.period).c_str(), tc.cpus[0], o.priority,
      example_cli::DescribeDuration(o.run).c_str(),
      ac.plant.resonance_rad_per_s() / (2.0 * 3.141592653589793), profile.distance(),
      std::chrono::duration<double>(profile.cycle()).count(), profile.peak_velocity(),
      o.run.record.empty() ? "" : "; recording to ", o.run.record.c_str());
  std::fflush(stdout);

  // The progress line every second: a housekeeping job (non-RT, not measured).
  if (rtloop::Status s = (*rt)->AddHousekeeping("progress", std::chrono::seconds(1),
                                                [&] { PrintProgress(task, tc.period); });
      !s.ok()) {
    return rtloop::ExitCode(s);
  }
  const rtloop::Status status = (*rt)->RunUntilSignal();
  PrintTracking(**axis, **shadow);
  std::fputs(rtloop::FormatTaskReport((*rt)->Reports()).c_str(), stdout);
  return rtloop::ExitCode(status);
}
