// rtloop-two-tasks: two periodic tasks on rtloop::Runtime for ~10 s, with telemetry, then the
// standard task report.
//
//   rtloop-two-tasks [--duration=SECONDS] [--telemetry=ADDR|off] [--metrics[=ADDR]]
//
// "control" runs at 1 kHz and does a small fixed-size Eigen computation (a 6-state discrete
// state-space model with state feedback), "logger" runs at 250 Hz and samples what control
// publishes. Both ask for SCHED_FIFO; without the privilege the runtime runs them as SCHED_OTHER
// and says so loudly. Ctrl-C (SIGINT) or SIGTERM stops both in order; the report follows.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "control_task.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/server.h"

namespace {

using two_tasks::ControlTask;  // control_task.h: the Eigen state-space loop

class LoggerTask final : public rtloop::PeriodicTask {
 public:
  explicit LoggerTask(const ControlTask& control) : control_(control) {}

  // RT-safe: reads an atomic and keeps a running range; printing happens after the run.
  rtloop::StepResult Step(const rtloop::CycleContext& /*ctx*/) noexcept override {
    const double y = control_.output();
    if (y < min_) min_ = y;
    if (y > max_) max_ = y;
    ++samples_;
    return rtloop::StepResult::kContinue;
  }

  double min() const { return min_; }
  double max() const { return max_; }
  std::uint64_t samples() const { return samples_; }

 private:
  const ControlTask& control_;
  double min_ = 1e300;
  double max_ = -1e300;
  std::uint64_t samples_ = 0;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: rtloop-two-tasks [--duration=SECONDS] [--telemetry=ADDR|off] [--metrics[=ADDR]]\n"
      "  Runs a 1 kHz \"control\" task and a 250 Hz \"logger\" task on rtloop::Runtime\n"
      "  (SCHED_FIFO 80/70, SCHED_OTHER with a warning when not permitted), then prints\n"
      "  the task report. Ctrl-C stops early.\n"
      "  --duration=SECONDS  run time, 0.1..86400 (default 10)\n"
      "  --telemetry=ADDR    gRPC telemetry address (default 127.0.0.1:50051; port 0: any\n"
      "                      free port), or off\n"
      "  --metrics[=ADDR]    also serve Prometheus /metrics and the live page at / over\n"
      "                      HTTP (default 127.0.0.1:9101; port 0: any free port)\n");
}

// Checks a server address as its server will (HOST:PORT; --metrics: the HTTP server's IPv4 rule)
// before anything starts; false after printing the problem.
bool CheckAddress(const char* option, const std::string& address) {
  const rtloop::Status s = std::string_view(option) == "--metrics"
                               ? rtloop::telemetry::CheckHttpAddress(address)
                               : rtloop::telemetry::CheckServerAddress(address);
  if (!s.ok()) std::fprintf(stderr, "rtloop-two-tasks: %s: %s\n", option, s.message().c_str());
  return s.ok();
}

// Parses the arguments into `config`; returns 0 to run, or the exit status.
int ParseArgs(int argc, char** argv, rtloop::RuntimeConfig* config) {
  double duration_s = 10.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout);
      return -1;
    }
    if (arg.rfind("--duration=", 0) == 0) {
      const std::string value = arg.substr(11);
      char* end = nullptr;
      duration_s = std::strtod(value.c_str(), &end);
      if (value.empty() || end == nullptr || *end != '\0' || !(duration_s >= 0.1) ||
          !(duration_s <= 86400.0)) {
        std::fprintf(stderr,
                     "rtloop-two-tasks: bad --duration \"%s\": give seconds between 0.1 and "
                     "86400, e.g. --duration=10\n",
                     value.c_str());
        return 2;
      }
      continue;
    }
    if (arg.rfind("--telemetry=", 0) == 0) {
      const std::string value = arg.substr(12);
      if (value == "off") {
        config->telemetry.enabled = false;
      } else if (!CheckAddress("--telemetry", value)) {
        return 2;
      } else {
        config->telemetry.grpc.address = value;
      }
      continue;
    }
    if (arg == "--metrics" || arg.rfind("--metrics=", 0) == 0) {
      config->telemetry.http = rtloop::telemetry::HttpConfig{};  // 127.0.0.1:9101
      if (arg.size() > 10) {
        if (!CheckAddress("--metrics", arg.substr(10))) return 2;
        config->telemetry.http->address = arg.substr(10);
      }
      continue;
    }
    std::fprintf(stderr, "rtloop-two-tasks: unknown argument \"%s\"\n", arg.c_str());
    PrintUsage(stderr);
    return 2;
  }
  config->duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(duration_s));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rtloop::RuntimeConfig config;
  config.app_name = "rtloop-two-tasks";
  config.executor.lock_memory = true;
  config.executor.allow_non_rt_fallback = true;  // an example should run anywhere, loudly
  config.report_at_exit = true;                  // the standard task report at the end
  if (const int rc = ParseArgs(argc, argv, &config); rc != 0) return rc < 0 ? 0 : rc;

  auto rt = rtloop::Runtime::Create(config);
  if (!rt.ok()) return rtloop::ExitCode(rt.status());
  ControlTask control;
  LoggerTask logger(control);
  rtloop::TaskConfig control_cfg;
  control_cfg.name = "control";
  control_cfg.period = std::chrono::milliseconds(1);
  control_cfg.policy = rtloop::SchedPolicy::kFifo;
  control_cfg.priority = 80;
  rtloop::TaskConfig logger_cfg;
  logger_cfg.name = "logger";
  logger_cfg.period = std::chrono::milliseconds(4);
  logger_cfg.policy = rtloop::SchedPolicy::kFifo;
  logger_cfg.priority = 70;
  if (auto id = (*rt)->AddTask(control, control_cfg); !id.ok())
    return rtloop::ExitCode(id.status());
  if (auto id = (*rt)->AddTask(logger, logger_cfg); !id.ok()) return rtloop::ExitCode(id.status());

  const rtloop::SystemInfo sys = rtloop::ReadSystemInfo();
  std::printf(
      "rtloop-two-tasks: kernel %s (preempt %s), CPUs %s, isolated %s; running %.1f s "
      "(Ctrl-C stops early), telemetry %s, metrics %s\n",
      sys.kernel_release.c_str(), rtloop::PreemptModelName(sys.preempt_model),
      rtloop::FormatCpuList(sys.online_cpus).c_str(),
      sys.isolated_cpus.empty() ? "none" : rtloop::FormatCpuList(sys.isolated_cpus).c_str(),
      std::chrono::duration<double>(config.duration).count(),
      (*rt)->grpc_address().empty() ? "off" : (*rt)->grpc_address().c_str(),
      (*rt)->http_address().empty() ? "off" : (*rt)->http_address().c_str());
  std::fflush(stdout);

  if (rtloop::Status s = (*rt)->RunUntilSignal(); !s.ok()) return rtloop::ExitCode(s);
  std::printf("logger saw control output in [%.4f, %.4f] over %llu samples\n", logger.min(),
              logger.max(), static_cast<unsigned long long>(logger.samples()));
  return 0;
}
