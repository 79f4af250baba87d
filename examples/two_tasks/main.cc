// rtloop-two-tasks: two periodic tasks on the rtloop executor for ~10 s, then their statistics.
//
//   rtloop-two-tasks [--duration=SECONDS]
//
// "control" runs at 1 kHz and does a small fixed-size Eigen computation (a 6-state discrete
// state-space model with state feedback), "logger" runs at 250 Hz and samples what control
// publishes. Both ask for SCHED_FIFO; without the privilege the executor runs them as SCHED_OTHER
// and says so loudly. Ctrl-C (SIGINT) or SIGTERM stops both in order; the statistics follow.
#include <Eigen/Core>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/system_info.h"

namespace {

using Matrix6 = Eigen::Matrix<double, 6, 6>;  // fixed size: lives inside the task, no heap
using Vector6 = Eigen::Matrix<double, 6, 1>;

class ControlTask final : public rtloop::PeriodicTask {
 public:
  // Set-up may allocate; nothing here does, but this is where it would.
  rtloop::Status OnStart() override {
    a_.setIdentity();
    for (int i = 0; i < 5; ++i) a_(i, i + 1) = 0.001;  // chain of integrators, dt = 1 ms
    b_.setZero();
    b_(5) = 0.001;
    k_ << 1.0, 2.0, 3.0, 3.0, 2.0, 1.0;
    x_.setZero();
    x_(0) = 1.0;
    return rtloop::Status::Ok();
  }

  // RT-safe: fixed-size arithmetic only.
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    const double reference = std::sin(static_cast<double>(ctx.cycle) * 0.001);
    const double u = k_.dot(Vector6::Constant(reference) - x_);
    x_ = a_ * x_ + b_ * u;
    output_.store(x_(0), std::memory_order_relaxed);
    return rtloop::StepResult::kContinue;
  }

  double output() const noexcept { return output_.load(std::memory_order_relaxed); }

 private:
  Matrix6 a_;
  Vector6 b_;
  Vector6 k_;
  Vector6 x_;
  std::atomic<double> output_{0.0};
};

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
  std::fprintf(out,
               "usage: rtloop-two-tasks [--duration=SECONDS]\n"
               "  Runs a 1 kHz \"control\" task and a 250 Hz \"logger\" task on the rtloop\n"
               "  executor (SCHED_FIFO 80/70, SCHED_OTHER with a warning when not permitted),\n"
               "  then prints per-task statistics. Ctrl-C stops early.\n"
               "  --duration=SECONDS  run time, 0.1..86400 (default 10)\n");
}

double Us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

void PrintStats(const rtloop::Executor& ex, rtloop::TaskId id) {
  const rtloop::TaskInfo info = ex.Info(id);
  const rtloop::TaskStatsSnapshot s = ex.Stats(id);
  std::printf("%-8s %-9s %4d%s  period %6.0f us  state %s\n", info.config.name.c_str(),
              rtloop::SchedPolicyName(info.effective_policy), info.effective_priority,
              info.fell_back_to_non_rt ? " (FELL BACK: not real-time)" : "",
              Us(info.config.period.count()), rtloop::TaskStateName(s.state));
  std::printf("  cycles %llu  overruns %llu  missed releases %llu\n",
              static_cast<unsigned long long>(s.cycles),
              static_cast<unsigned long long>(s.overruns),
              static_cast<unsigned long long>(s.missed_releases));
  std::printf("  wake-up latency us  min %9.1f  avg %9.1f  max %9.1f\n", Us(s.latency_min_ns),
              s.latency_avg_ns().value_or(0.0) / 1000.0, Us(s.latency_max_ns));
  std::printf("  execution time  us  min %9.1f  avg %9.1f  max %9.1f\n", Us(s.execution_min_ns),
              s.execution_avg_ns().value_or(0.0) / 1000.0, Us(s.execution_max_ns));
  std::printf("  period jitter   us  min %9.1f               max %9.1f\n", Us(s.jitter_min_ns),
              Us(s.jitter_max_ns));
}

}  // namespace

int main(int argc, char** argv) {
  double duration_s = 10.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout);
      return 0;
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
    std::fprintf(stderr, "rtloop-two-tasks: unknown argument \"%s\"\n", arg.c_str());
    PrintUsage(stderr);
    return 2;
  }

  rtloop::ExecutorConfig ec;
  ec.lock_memory = true;
  ec.allow_non_rt_fallback = true;  // an example should run anywhere, loudly when not RT
  rtloop::Result<std::unique_ptr<rtloop::Executor>> ex = rtloop::Executor::Create(ec);
  if (!ex.ok()) {
    std::fprintf(stderr, "rtloop-two-tasks: %s\n", ex.status().ToString().c_str());
    return 1;
  }

  ControlTask control;
  LoggerTask logger(control);
  rtloop::TaskConfig control_cfg;
  control_cfg.name = "control";
  control_cfg.period = std::chrono::milliseconds(1);
  control_cfg.policy = rtloop::SchedPolicy::kFifo;
  control_cfg.priority = 80;
  control_cfg.max_cycles = static_cast<std::uint64_t>(std::llround(duration_s * 1000.0));
  rtloop::TaskConfig logger_cfg;
  logger_cfg.name = "logger";
  logger_cfg.period = std::chrono::milliseconds(4);
  logger_cfg.policy = rtloop::SchedPolicy::kFifo;
  logger_cfg.priority = 70;
  logger_cfg.max_cycles = static_cast<std::uint64_t>(std::llround(duration_s * 250.0));
  if (logger_cfg.max_cycles == 0) logger_cfg.max_cycles = 1;

  rtloop::Result<rtloop::TaskId> control_id = (*ex)->AddTask(control, control_cfg);
  if (!control_id.ok()) {
    std::fprintf(stderr, "rtloop-two-tasks: %s\n", control_id.status().ToString().c_str());
    return 1;
  }
  rtloop::Result<rtloop::TaskId> logger_id = (*ex)->AddTask(logger, logger_cfg);
  if (!logger_id.ok()) {
    std::fprintf(stderr, "rtloop-two-tasks: %s\n", logger_id.status().ToString().c_str());
    return 1;
  }

  const rtloop::SystemInfo sys = rtloop::ReadSystemInfo();
  std::printf(
      "rtloop-two-tasks: kernel %s (preempt %s), CPUs %s, isolated %s; running %.1f s "
      "(Ctrl-C stops early)\n",
      sys.kernel_release.c_str(), rtloop::PreemptModelName(sys.preempt_model),
      rtloop::FormatCpuList(sys.online_cpus).c_str(),
      sys.isolated_cpus.empty() ? "none" : rtloop::FormatCpuList(sys.isolated_cpus).c_str(),
      duration_s);
  std::fflush(stdout);

  if (rtloop::Status s = (*ex)->RunUntilSignal(); !s.ok()) {
    std::fprintf(stderr, "rtloop-two-tasks: %s\n", s.ToString().c_str());
    return 1;
  }

  std::printf("\n");
  PrintStats(**ex, *control_id);
  PrintStats(**ex, *logger_id);
  std::printf("logger saw control output in [%.4f, %.4f] over %llu samples\n", logger.min(),
              logger.max(), static_cast<unsigned long long>(logger.samples()));
  return 0;
}
