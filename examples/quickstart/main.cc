// rtloop-quickstart: the README's loop example as a complete program. The core of the motion
// example's 2 kHz position loop (examples/motion: a simulated servo with a flexible load, an LQR
// controller with feed-forward on an S-curve) on rtloop::Runtime with telemetry (gRPC on
// 127.0.0.1:50051, or the address given as an argument, "127.0.0.1:0" for any free port) until
// Ctrl-C or SIGTERM, then the task report. --metrics[=ADDR] adds the HTTP endpoint: Prometheus
// /metrics and the live page (127.0.0.1:9101 by default). rtloop-motion is the same loop with a
// second axis for comparison, progress, the tracking error and a recording.
//
//   build/bin/rtloop-quickstart                 # watch it: build/bin/rtloop-top
//   build/bin/rtloop-quickstart 127.0.0.1:0     # prints the port it serves on
//   build/bin/rtloop-quickstart --metrics       # and open http://127.0.0.1:9101/
//   kill -USR1 $(pidof rtloop-quickstart)       # the task table while it runs
//
// Exit status: 0 after a run without a fault, 3 when a task faulted (rtloop::kExitTaskFault),
// 1 when the runtime could not start, 2 for a bad argument.
//
// Without real-time privileges (root, CAP_SYS_NICE or an rtprio limit) the task runs as
// SCHED_OTHER and the runtime says so loudly (allow_non_rt_fallback); its figures are then not
// real-time figures.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "axis.h"
#include "rtloop/rtloop.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/server.h"

namespace {

// An address as its server reads it (HOST:PORT; --metrics: the HTTP server's IPv4 rule), checked
// before anything starts: exit 2 if not.
std::string CheckedAddress(std::string_view what, std::string_view address) {
  const rtloop::Status s = what == "--metrics" ? rtloop::telemetry::CheckHttpAddress(address)
                                               : rtloop::telemetry::CheckServerAddress(address);
  if (!s.ok()) {
    std::fprintf(stderr, "rtloop-quickstart: %.*s: %s\n", static_cast<int>(what.size()),
                 what.data(), s.message().c_str());
    std::exit(2);
  }
  return std::string(address);
}

// [GRPC_ADDR] [--metrics[=ADDR]]: where the gRPC API listens; the HTTP endpoint on ADDR.
// --help prints the usage; anything else that starts with '-', or an address that is not
// HOST:PORT, is an error (exit 2).
void ReadArgs(int argc, char** argv, rtloop::RuntimeConfig* config) {
  constexpr const char* kUsage =
      "usage: rtloop-quickstart [GRPC_ADDR] [--metrics[=ADDR]]\n"
      "  A 2 kHz position loop on rtloop::Runtime until Ctrl-C or SIGTERM, then the task report.\n"
      "  GRPC_ADDR         where the gRPC telemetry API listens (default 127.0.0.1:50051;\n"
      "                    127.0.0.1:0 picks a free port)\n"
      "  --metrics[=ADDR]  also serve Prometheus /metrics and the live page (127.0.0.1:9101)\n";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--metrics" || arg.starts_with("--metrics=")) {
      config->telemetry.http = rtloop::telemetry::HttpConfig{};  // 127.0.0.1:9101
      if (arg.size() > 10) {
        config->telemetry.http->address = CheckedAddress("--metrics", arg.substr(10));
      }
    } else if (arg.starts_with("-")) {
      std::fprintf(stderr, "rtloop-quickstart: unknown option '%s'\n%s", argv[i], kUsage);
      std::exit(2);
    } else {
      config->telemetry.grpc.address = CheckedAddress("GRPC_ADDR", arg);
    }
  }
}

// --- the README's example starts here ---
class Position final : public rtloop::PeriodicTask {
 public:
  explicit Position(motion::Axis& axis) : axis_(axis) {}
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    if (ctx.cycle == 0) start_ = ctx.release;               // t = 0 of the profile and the plant
    axis_.Update(ctx.release - start_, ctx.wake - start_);  // sense at W_k, control, actuate
    return rtloop::StepResult::kContinue;  // RT-safe: fixed-size Eigen, no heap, locks or I/O
  }

 private:
  motion::Axis& axis_;
  rtloop::TimePoint start_;
};

}  // namespace

int main(int argc, char** argv) {
  rtloop::RuntimeConfig config;                  // telemetry on 127.0.0.1:50051
  config.executor.allow_non_rt_fallback = true;  // no RT privilege: SCHED_OTHER, said loudly
  config.report_at_exit = true;                  // the task table when it ends
  config.monitor_signal = SIGUSR1;               // kill -USR1 PID: the task table, any time
  ReadArgs(argc, argv, &config);                 // [GRPC_ADDR] [--metrics[=ADDR]]
  auto rt = rtloop::Runtime::Create(config);     // errors say how to fix them
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  auto axis = motion::Axis::Create({});  // plant, LQR design, S-curve: set-up may allocate
  if (!axis.ok()) return rtloop::ExitCode(axis.status());
  Position position(**axis);
  rtloop::TaskConfig pc;  // name, period, CPUs, policy, priority...
  pc.name = "position";
  pc.period = (*axis)->config().period;  // 500 us: 2 kHz
  pc.priority = 90;                      // SCHED_FIFO by default
  if (auto id = (*rt)->AddTask(position, pc); !id.ok()) return rtloop::ExitCode(id.status());
  return rtloop::ExitCode((*rt)->RunUntilSignal());  // Ctrl-C / SIGTERM: orderly stop, report
}
