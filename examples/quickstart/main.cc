// rtloop-quickstart: the README's loop example as a complete program. One 2 kHz position loop on
// rtloop::Runtime with telemetry (gRPC on 127.0.0.1:50051, or the address given as the first
// argument, "127.0.0.1:0" for any free port) until Ctrl-C or SIGTERM, then the task report.
//
//   build/bin/rtloop-quickstart                 # watch it: build/bin/rtloop-top
//   build/bin/rtloop-quickstart 127.0.0.1:0     # prints the port it serves on
//
// Without real-time privileges (root, CAP_SYS_NICE or an rtprio limit) the task runs as
// SCHED_OTHER and the runtime says so loudly (allow_non_rt_fallback); its figures are then not
// real-time figures.
#include <chrono>

#include "rtloop/telemetry/runtime.h"

namespace {

// A simulated axis under PD control: fixed-size state, no heap, no locks, no I/O (RT-safe).
class Axis {
 public:
  void Update(std::chrono::nanoseconds dt) noexcept {
    const double t = std::chrono::duration<double>(dt).count();
    const double force = 400.0 * (target_ - position_) - 40.0 * velocity_;
    velocity_ += force * t;
    position_ += velocity_ * t;
  }

 private:
  double target_ = 1.0;
  double position_ = 0.0;
  double velocity_ = 0.0;
};

// --- the README's example starts here ---
class Position final : public rtloop::PeriodicTask {
 public:
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    axis_.Update(ctx.period);  // your RT-safe work: no heap, no locks, no I/O
    return rtloop::StepResult::kContinue;
  }
  Axis axis_;
};

}  // namespace

int main(int argc, char** argv) {
  rtloop::RuntimeConfig config;                  // telemetry on 127.0.0.1:50051
  config.executor.allow_non_rt_fallback = true;  // no RT privilege: SCHED_OTHER, said loudly
  config.report_at_exit = true;                  // the task table when it ends
  if (argc > 1) config.telemetry.grpc.address = argv[1];
  auto rt = rtloop::Runtime::Create(config);  // errors say how to fix them
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  Position position;
  rtloop::TaskConfig pc;  // name, period, CPUs, policy, priority...
  pc.name = "position";
  pc.period = std::chrono::microseconds(500);
  pc.priority = 90;  // SCHED_FIFO by default
  if (auto id = (*rt)->AddTask(position, pc); !id.ok()) return rtloop::ExitCode(id.status());
  return rtloop::ExitCode((*rt)->RunUntilSignal());  // Ctrl-C / SIGTERM: orderly stop, report
}
