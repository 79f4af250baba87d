#include "example_cli.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/server.h"

namespace example_cli {
namespace {

std::string Number(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

}  // namespace

const char kRunOptionsUsage[] =
    "  --duration=SECONDS  run time, 0.1..86400; 0 (default unless said above): until Ctrl-C\n"
    "  --telemetry=ADDR    gRPC telemetry address (default 127.0.0.1:50051; port 0: any free\n"
    "                      port, printed on stderr), or off\n"
    "  --metrics[=ADDR]    also serve Prometheus /metrics and the live page at / over HTTP\n"
    "                      (default ADDR 127.0.0.1:9101; port 0: any free port)\n"
    "  --record=FILE       write every cycle's sample to FILE (rtloop sample log; a file,\n"
    "                      not '-': the log is binary)\n"
    "  --require-rt        fail when SCHED_FIFO is not permitted (default: run as SCHED_OTHER\n"
    "                      and say so loudly)\n";

Args::Args(int argc, char** argv, std::string_view usage)
    : argc_(argc), argv_(argv), usage_(usage) {
  const std::string s = argc > 0 && argv[0] != nullptr ? argv[0] : "example";
  const std::size_t slash = s.rfind('/');
  program_ = slash == std::string::npos ? s : s.substr(slash + 1);
}

bool Args::Next() {
  if (!ok_ || ++index_ >= argc_) return false;
  arg_ = argv_[index_];
  return true;
}

bool Args::Help() {
  if (arg_ != "--help" && arg_ != "-h") return false;
  std::fwrite(usage_.data(), 1, usage_.size(), stdout);
  std::fputs(kRunOptionsUsage, stdout);
  help_ = true;
  ok_ = false;
  return true;
}

bool Args::Standard(RunOptions* options) { return Help() || ParseRunOption(*this, options); }

bool Args::Optional(std::string_view name, std::string* value, std::string_view bare) {
  if (arg_ == name) {
    *value = std::string(bare);
    return true;
  }
  return Flag(name, value);
}

bool Args::Flag(std::string_view name, std::string* value) {
  bool matched = false;
  const std::string* v = ValueOf(name, &matched);
  if (v == nullptr) return matched;
  if (v->empty()) return Bad(name, *v, "give a value");
  *value = *v;
  return true;
}

bool Args::Flag(std::string_view name, double* value, double min, double max) {
  bool matched = false;
  const std::string* v = ValueOf(name, &matched);
  if (v == nullptr) return matched;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || errno != 0 || !(d >= min) || !(d <= max)) {
    return Bad(name, *v, "give a number from " + Number(min) + " to " + Number(max));
  }
  *value = d;
  return true;
}

bool Args::Flag(std::string_view name, long* value, long min, long max) {
  bool matched = false;
  const std::string* v = ValueOf(name, &matched);
  if (v == nullptr) return matched;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0 || n < min || n > max) {
    return Bad(name, *v,
               "give a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  *value = n;
  return true;
}

int Args::Unknown() {
  std::fprintf(stderr, "%s: unknown argument \"%s\" — see %s --help\n", program_.c_str(),
               arg_.c_str(), program_.c_str());
  ok_ = false;
  return 2;
}

int Args::Fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_.c_str(), message.c_str());
  ok_ = false;
  return 2;
}

// The value of "--name=value"; nullptr when the argument is another one, or when it is a bare
// "--name" (then the error is printed and *matched is true too).
const std::string* Args::ValueOf(std::string_view name, bool* matched) {
  *matched = false;
  if (arg_ == name) {
    *matched = true;
    Bad(name, "", "give a value: " + std::string(name) + "=VALUE");
    return nullptr;
  }
  if (arg_.size() <= name.size() || arg_.compare(0, name.size(), name) != 0 ||
      arg_[name.size()] != '=') {
    return nullptr;
  }
  *matched = true;
  value_ = arg_.substr(name.size() + 1);
  return &value_;
}

bool Args::Bad(std::string_view name, const std::string& value, const std::string& fix) {
  std::fprintf(stderr, "%s: bad %.*s \"%s\": %s\n", program_.c_str(), static_cast<int>(name.size()),
               name.data(), value.c_str(), fix.c_str());
  ok_ = false;
  return true;  // the argument was this flag (badly given): stop looking further
}

bool ParseRunOption(Args& args, RunOptions* options) {
  if (args.Switch("--require-rt")) {
    options->require_rt = true;
    return true;
  }
  if (args.Flag("--record", &options->record) || args.Flag("--telemetry", &options->telemetry)) {
    return true;
  }
  if (std::string address; args.Optional("--metrics", &address, "")) {
    options->metrics = address;
    return true;
  }
  double d = options->duration_s;
  if (!args.Flag("--duration", &d, 0.0, 86400.0)) return false;
  if (d > 0.0 && d < 0.1) {
    args.Fail("bad --duration \"" + Number(d) + "\": give 0 (until Ctrl-C) or 0.1..86400 seconds");
    return true;
  }
  options->duration_s = d;
  return true;
}

std::optional<int> Done(Args& args, const RunOptions& options,
                        const std::vector<rtloop::telemetry::InputPath>& inputs) {
  if (args.help()) return 0;
  if (!args.ok()) return 2;
  if (!options.record.empty() && options.telemetry == "off") {
    return args.Fail("--record needs telemetry: drop --telemetry=off (or give --telemetry=ADDR)");
  }
  if (options.metrics && options.telemetry == "off") {
    return args.Fail("--metrics needs telemetry: drop --telemetry=off (or give --telemetry=ADDR)");
  }
  // Each value as the part that takes it checks it, before anything starts.
  if (options.telemetry != "off") {
    if (rtloop::Status s = rtloop::telemetry::CheckServerAddress(options.telemetry); !s.ok()) {
      return args.Fail("--telemetry: " + s.message());
    }
  }
  if (options.metrics && !options.metrics->empty()) {
    if (rtloop::Status s = rtloop::telemetry::CheckHttpAddress(*options.metrics); !s.ok()) {
      return args.Fail("--metrics: " + s.message());
    }
  }
  if (!options.record.empty()) {
    // The sample log is binary and the examples print their text on stdout: no "-"; and no
    // output may name an input (the --config), under any name.
    rtloop::Result<rtloop::telemetry::OutputTarget> log = rtloop::telemetry::ResolveOutputPath(
        options.record, {.what = "--record", .allow_stdout = false});
    if (!log.ok()) return args.Fail(log.status().message());
    if (rtloop::Status s = rtloop::telemetry::CheckOutputsApart({*log}, inputs); !s.ok()) {
      return args.Fail(s.message());
    }
  }
  return std::nullopt;
}

void Apply(const RunOptions& options, const std::string& app_name, rtloop::RuntimeConfig* config) {
  config->app_name = app_name;
  config->duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(options.duration_s));
  config->executor.lock_memory = true;
  // An example should run anywhere, loudly; a production application decides this explicitly.
  config->executor.allow_non_rt_fallback = !options.require_rt;
  if (options.telemetry == "off") {
    config->telemetry.enabled = false;
  } else {
    config->telemetry.grpc.address = options.telemetry;
  }
  config->telemetry.record_path = options.record;
  if (options.metrics) {
    config->telemetry.http = rtloop::telemetry::HttpConfig{};  // 127.0.0.1:9101
    if (!options.metrics->empty()) config->telemetry.http->address = *options.metrics;
  }
}

std::string DescribeDuration(const RunOptions& options) {
  if (options.duration_s <= 0.0) return "until Ctrl-C";
  return "for " + Number(options.duration_s) + " s";
}

int DefaultRtCpu() {
  const rtloop::SystemInfo sys = rtloop::ReadSystemInfo();
  if (!sys.isolated_cpus.empty()) return sys.isolated_cpus.back();
  if (!sys.affinity_cpus.empty()) return sys.affinity_cpus.back();
  if (!sys.online_cpus.empty()) return sys.online_cpus.back();
  return 0;
}

}  // namespace example_cli
