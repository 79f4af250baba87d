#include "cyclic_option_checks.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/server.h"

namespace rtloop::cyclic {
namespace {

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// A -D run gives each thread ceil(D / interval) cycles; a --warmup that eats all of a thread's
// would leave it without a statistic.
Status CheckWarmup(const CyclicOptions& o) {
  if (o.warmup == 0 || o.duration_s <= 0) return Status::Ok();
  for (const ThreadPlan& t : o.threads) {
    const std::uint64_t d_us = static_cast<std::uint64_t>(o.duration_s) * 1'000'000u;
    const auto i_us = static_cast<std::uint64_t>(t.interval_us);
    const std::uint64_t cycles = (d_us + i_us - 1) / i_us;
    if (o.warmup >= cycles) {
      return Invalid("--warmup=" + std::to_string(o.warmup) + " leaves nothing to measure: -D " +
                     std::to_string(o.duration_s) + "s gives thread " + std::to_string(t.index) +
                     " " + std::to_string(cycles) + " cycles at " + std::to_string(t.interval_us) +
                     " us; lower --warmup or lengthen -D");
    }
  }
  return Status::Ok();
}

// The servers' address, token and TLS files, checked with the other options. The token guards
// both servers (--telemetry and --metrics); TLS is the gRPC server's alone.
Status CheckTelemetry(const CyclicOptions& o) {
  if (!o.telemetry && (!o.tls_cert_file.empty() || !o.tls_key_file.empty())) {
    return Invalid(
        "--tls-cert and --tls-key configure the telemetry server: add --telemetry[=ADDR]");
  }
  if (!o.telemetry && !o.metrics && !o.token_file.empty()) {
    return Invalid(
        "--token-file guards the servers of --telemetry[=ADDR] and --metrics[=ADDR]: add one");
  }
  if (!o.token_file.empty()) {
    Result<std::string> token = telemetry::ReadTokenFile(o.token_file);
    if (!token.ok()) return Invalid("--token-file: " + token.status().message());
  }
  // Both addresses by the servers' own checks (":PORT" is loopback), so a bad one is a usage
  // error (exit 2) before anything starts, whichever server it is for.
  if (o.metrics && !o.metrics_address.empty()) {
    if (Status s = telemetry::CheckHttpAddress(o.metrics_address); !s.ok()) {
      return Invalid("invalid value '" + o.metrics_address + "' for --metrics: " + s.message());
    }
  }
  if (!o.telemetry) return Status::Ok();
  if (!o.telemetry_address.empty()) {
    if (Status s = telemetry::CheckServerAddress(o.telemetry_address); !s.ok()) {
      return Invalid("invalid value '" + o.telemetry_address + "' for --telemetry: " + s.message());
    }
  }
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return Invalid(
        "--tls-cert and --tls-key go together: give both (PEM certificate chain "
        "and its private key)");
  }
  for (const auto& [option, path] :
       {std::pair<const char*, const std::string*>{"--tls-cert", &o.tls_cert_file},
        {"--tls-key", &o.tls_key_file}}) {
    if (path->empty()) continue;
    Result<std::string> pem = telemetry::ReadInputFile(*path, {.what = "PEM file"});
    if (!pem.ok()) return Invalid(std::string(option) + ": " + pem.status().message());
  }
  return Status::Ok();
}

// The thresholds of --explain say what to explain; without it there is nothing to write them to.
Status CheckExplain(const CyclicOptions& o) {
  if (!o.explain_path.empty()) return Status::Ok();
  for (const auto& [option, given] :
       {std::pair<const char*, bool>{"--explain-above", o.explain_above_us.has_value()},
        {"--explain-execution-above", o.explain_execution_above_us.has_value()}}) {
    if (given) {
      return Invalid(std::string(option) +
                     " needs --explain=FILE, where the outlier records go (- for standard "
                     "output)");
    }
  }
  return Status::Ok();
}

// No output may name an input (a token or PEM file) or another output: the rule of every rtloop
// tool (output_file.h CheckOutputsApart). Several on stdout ("-") are printed one after the
// other, in cyclictest's order.
Status CheckOutputsApart(const CyclicOptions& o) {
  std::vector<telemetry::OutputTarget> outputs;
  const auto add = [&](Result<telemetry::OutputTarget> target) {
    if (target.ok()) outputs.push_back(std::move(*target));
  };
  for (const auto& [option, path] :
       {std::pair<const char*, const std::string*>{"--json", &o.json_path},
        {"--histfile", &o.histfile},
        {"--record", &o.record_path},
        {"--max-over-time", &o.max_over_time_path},
        {"--explain", &o.explain_path}}) {
    if (!path->empty()) add(telemetry::ResolveOutputPath(*path, {.what = option}));
  }
  if (!o.fifo_path.empty()) {
    add(telemetry::OutputFifo::ResolveFifoPath(o.fifo_path, "-F/--fifo"));
  }
  const Status s = telemetry::CheckOutputsApart(outputs, {{"--token-file", o.token_file},
                                                          {"--tls-cert", o.tls_cert_file},
                                                          {"--tls-key", o.tls_key_file}});
  return s.ok() ? s : Invalid(s.message());
}

// --timerlat: the kernel's timer releases the threads (WaitMode::kTimerlat), so what it needs is
// checked here, before anything is created: one CPU per thread, one thread per CPU, the tracer's
// one period for all, CLOCK_MONOTONIC.
Status CheckTimerlat(const CyclicOptions& o) {
  if (!o.timerlat) return Status::Ok();
  if (o.relative || o.system_sleep || o.posix_timers) {
    return Invalid("--timerlat is a wait mode of its own: leave out -r, -s and -x");
  }
  if (o.clock != Clock::kMonotonic) {
    return Invalid("--timerlat releases on CLOCK_MONOTONIC (the tracer's timer): leave out -c 1");
  }
  std::vector<int> cpus;
  for (const ThreadPlan& t : o.threads) {
    if (t.cpu < 0) {
      return Invalid(
          "--timerlat needs every thread pinned to one CPU (the kernel's timerlat_fd "
          "is per CPU): give -a CPU, e.g. -t1 -a1");
    }
    if (std::find(cpus.begin(), cpus.end(), t.cpu) != cpus.end()) {
      return Invalid("--timerlat takes one thread per CPU, and two threads would share CPU " +
                     std::to_string(t.cpu) + ": give as many CPUs in -a as threads");
    }
    cpus.push_back(t.cpu);
    if (t.interval_us != o.threads.front().interval_us) {
      return Invalid(
          "--timerlat: the tracer has one period for every CPU, but the threads' "
          "intervals differ (-d): give -d0");
    }
    if (t.interval_us < 100 || t.interval_us > 1'000'000) {
      return Invalid(
          "--timerlat needs an interval from 100 to 1000000 us (the tracer's "
          "timerlat_period_us): change -i");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckOptionsTogether(const CyclicOptions& o) {
  RTLOOP_RETURN_IF_ERROR(CheckTimerlat(o));
  RTLOOP_RETURN_IF_ERROR(CheckWarmup(o));
  RTLOOP_RETURN_IF_ERROR(CheckExplain(o));
  RTLOOP_RETURN_IF_ERROR(CheckTelemetry(o));
  return CheckOutputsApart(o);
}

}  // namespace rtloop::cyclic
