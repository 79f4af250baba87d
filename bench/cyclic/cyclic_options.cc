#include "cyclic_options.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string_view>
#include <utility>

#include "cyclic_option_checks.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {
namespace {

constexpr std::uint32_t kHistMax = 1000000;  // cyclictest's HIST_MAX
constexpr int kMaxThreads = 256;             // the executor runs at most 256 tasks

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// "0-3,6", or "none" for no CPU (the words of our messages).
std::string FormatCpus(const std::vector<int>& cpus) {
  return cpus.empty() ? "none" : FormatCpuList(cpus);
}

// Strict integer: optional sign, decimal digits, nothing else.
std::optional<std::int64_t> ParseInt(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::size_t i = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) return std::nullopt;
  std::int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return negative ? -value : value;
}

std::optional<double> ParseDouble(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// An output path under output_file.h's rules (the directory exists and is one, the name fits, no
// FIFO, device or kernel file), checked before anything is measured.
Status CheckOutputPath(const std::string& option, const std::string& path,
                       bool allow_stdout = true) {
  const Status s =
      telemetry::ResolveOutputPath(path, {.what = option, .allow_stdout = allow_stdout}).status();
  return s.ok() ? s : Invalid(s.message());
}

enum class Arg { kNone, kRequired, kOptional };

enum OptionId {
  kOptAffinity,
  kOptAligned,
  kOptBreaktrace,
  kOptClock,
  kOptDefaultSystem,
  kOptDistance,
  kOptDuration,
  kOptLatency,
  kOptFifo,
  kOptHistogram,
  kOptHistofall,
  kOptHistfile,
  kOptInterval,
  kOptJson,
  kOptLaptop,
  kOptLoops,
  kOptMainAffinity,
  kOptMlockall,
  kOptRefresh,
  kOptNsecs,
  kOptOscope,
  kOptPriority,
  kOptQuiet,
  kOptPriospread,
  kOptRelative,
  kOptResolution,
  kOptSecaligned,
  kOptSystem,
  kOptSmi,
  kOptSmp,
  kOptSpike,
  kOptSpikeNodes,
  kOptThreads,
  kOptTracemark,
  kOptUnbuffered,
  kOptVerbose,
  kOptDbg,
  kOptPolicy,
  kOptHelp,
  kOptPosixTimers,
  kOptNoop,  // -n
  // rtloop extensions
  kOptTelemetry,
  kOptMetrics,
  kOptRecord,
  kOptPercentiles,
  kOptFailAbove,
  kOptFailPercentile,
  kOptFailMissed,
  kOptWarmup,
  kOptHistogramStyle,
  kOptMaxOverTime,
  kOptMaxWindow,
  kOptKeepDistance,
  kOptTokenFile,
  kOptTlsCert,
  kOptTlsKey,
};

struct OptionSpec {
  char short_name;        // 0: long only
  const char* long_name;  // nullptr: short only
  Arg arg;
  OptionId id;
  bool look_ahead;  // optional argument may be the next word (cyclictest's own look-ahead)
};

constexpr OptionSpec kOptions[] = {
    {'a', "affinity", Arg::kOptional, kOptAffinity, true},
    {'A', "aligned", Arg::kOptional, kOptAligned, true},
    {'b', "breaktrace", Arg::kRequired, kOptBreaktrace, false},
    {'c', "clock", Arg::kRequired, kOptClock, false},
    {0, "default-system", Arg::kNone, kOptDefaultSystem, false},
    {'d', "distance", Arg::kRequired, kOptDistance, false},
    {'D', "duration", Arg::kRequired, kOptDuration, false},
    {0, "latency", Arg::kRequired, kOptLatency, false},
    {'F', "fifo", Arg::kRequired, kOptFifo, false},
    {'h', "histogram", Arg::kRequired, kOptHistogram, false},
    {'H', "histofall", Arg::kRequired, kOptHistofall, false},
    {0, "histfile", Arg::kRequired, kOptHistfile, false},
    {'i', "interval", Arg::kRequired, kOptInterval, false},
    {0, "json", Arg::kRequired, kOptJson, false},
    {0, "laptop", Arg::kNone, kOptLaptop, false},
    {'l', "loops", Arg::kRequired, kOptLoops, false},
    {0, "mainaffinity", Arg::kRequired, kOptMainAffinity, false},
    {'m', "mlockall", Arg::kNone, kOptMlockall, false},
    {'M', "refresh_on_max", Arg::kNone, kOptRefresh, false},
    {'N', "nsecs", Arg::kNone, kOptNsecs, false},
    {'o', "oscope", Arg::kRequired, kOptOscope, false},
    {'p', "priority", Arg::kRequired, kOptPriority, false},
    {'q', "quiet", Arg::kNone, kOptQuiet, false},
    {0, "priospread", Arg::kNone, kOptPriospread, false},
    {'r', "relative", Arg::kNone, kOptRelative, false},
    {'R', "resolution", Arg::kNone, kOptResolution, false},
    {0, "secaligned", Arg::kOptional, kOptSecaligned, true},
    {'s', "system", Arg::kNone, kOptSystem, false},
    {0, "smi", Arg::kNone, kOptSmi, false},
    {'S', "smp", Arg::kNone, kOptSmp, false},
    {0, "spike", Arg::kRequired, kOptSpike, false},
    {0, "spike-nodes", Arg::kRequired, kOptSpikeNodes, false},
    {'t', "threads", Arg::kOptional, kOptThreads, true},
    {0, "tracemark", Arg::kNone, kOptTracemark, false},
    {'u', "unbuffered", Arg::kNone, kOptUnbuffered, false},
    {'v', "verbose", Arg::kNone, kOptVerbose, false},
    {0, "dbg_cyclictest", Arg::kNone, kOptDbg, false},
    {0, "policy", Arg::kRequired, kOptPolicy, false},
    {'?', "help", Arg::kNone, kOptHelp, false},
    {'x', "posix_timers", Arg::kNone, kOptPosixTimers, false},
    {'n', nullptr, Arg::kNone, kOptNoop, false},
    {0, "telemetry", Arg::kOptional, kOptTelemetry, false},
    {0, "metrics", Arg::kOptional, kOptMetrics, false},
    {0, "record", Arg::kRequired, kOptRecord, false},
    {0, "percentiles", Arg::kNone, kOptPercentiles, false},
    {0, "fail-above", Arg::kRequired, kOptFailAbove, false},
    {0, "fail-percentile", Arg::kRequired, kOptFailPercentile, false},
    {0, "fail-missed", Arg::kRequired, kOptFailMissed, false},
    {0, "warmup", Arg::kRequired, kOptWarmup, false},
    {0, "histogram-style", Arg::kRequired, kOptHistogramStyle, false},
    {0, "max-over-time", Arg::kRequired, kOptMaxOverTime, false},
    {0, "max-window", Arg::kRequired, kOptMaxWindow, false},
    {0, "keep-distance", Arg::kNone, kOptKeepDistance, false},
    {0, "token-file", Arg::kRequired, kOptTokenFile, false},
    {0, "tls-cert", Arg::kRequired, kOptTlsCert, false},
    {0, "tls-key", Arg::kRequired, kOptTlsKey, false},
};

// "-i/--interval", "--json", "-n".
std::string OptionName(const OptionSpec& spec) {
  std::string name;
  if (spec.short_name != 0) name = std::string("-") + spec.short_name;
  if (spec.long_name != nullptr) {
    if (!name.empty()) name += '/';
    name += std::string("--") + spec.long_name;
  }
  return name;
}

const OptionSpec* FindShort(char c) {
  for (const OptionSpec& spec : kOptions) {
    if (spec.short_name == c) return &spec;
  }
  return nullptr;
}

// Exact match, else a unique prefix (as getopt_long).
Result<const OptionSpec*> FindLong(std::string_view name) {
  const OptionSpec* found = nullptr;
  std::string candidates;
  int matches = 0;
  for (const OptionSpec& spec : kOptions) {
    if (spec.long_name == nullptr) continue;
    const std::string_view long_name(spec.long_name);
    if (long_name == name) return &spec;
    if (long_name.substr(0, name.size()) == name) {
      found = &spec;
      ++matches;
      candidates += std::string(candidates.empty() ? "" : ", ") + "--" + spec.long_name;
    }
  }
  if (matches == 1) return found;
  if (matches > 1) {
    return Invalid("option '--" + std::string(name) + "' is ambiguous (" + candidates +
                   "); spell it out");
  }
  return Invalid("unknown option '--" + std::string(name) + "'");
}

struct Parser {
  const MachineCpus& machine;
  CyclicOptions& o;
  // Raw values whose meaning depends on later options.
  bool option_affinity = false;  // -a given (any form)
  bool threads_given = false;    // -t given: num_threads below, or -1 (per CPU)
  int num_threads = 1;           // -1: one per allowed CPU (or per CPU of the -a set)
  bool threads_per_cpu = false;
  bool oscope_given = false;

  Status BadValue(const OptionSpec& spec, const std::string& value, const std::string& why) {
    return Invalid("invalid value '" + value + "' for " + OptionName(spec) + ": " + why);
  }

  Result<std::int64_t> Int(const OptionSpec& spec, const std::string& value, std::int64_t lo,
                           std::int64_t hi, const std::string& what) {
    const std::optional<std::int64_t> v = ParseInt(value);
    if (!v) return BadValue(spec, value, "expected " + what);
    if (*v < lo || *v > hi) return BadValue(spec, value, "expected " + what);
    return *v;
  }

  Status Apply(const OptionSpec& spec, const std::optional<std::string>& arg) {
    constexpr std::int64_t kI32 = std::numeric_limits<std::int32_t>::max();
    constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();
    const std::string value = arg.value_or("");
    switch (spec.id) {
      case kOptAffinity:
        option_affinity = true;
        if (o.smp) {  // -S ... -a: cyclictest warns and ignores -a
          o.stderr_notes.push_back("WARN: -a ignored due to smp mode\n");
          return Status::Ok();
        }
        if (arg) {
          Result<std::vector<int>> cpus = ParseCpuSet(value, machine);
          if (!cpus.ok()) return BadValue(spec, value, cpus.status().message());
          o.affinity = AffinityMode::kCpuSet;
          o.affinity_cpus = *cpus;
          if (o.verbose) {
            o.stdout_notes.push_back("Using " + std::to_string(cpus->size()) + " cpus.\n");
          }
        } else {
          o.affinity = AffinityMode::kAllCpus;
        }
        return Status::Ok();
      case kOptAligned:
      case kOptSecaligned: {
        (spec.id == kOptAligned ? o.aligned : o.secaligned) = true;
        if (arg) {
          Result<std::int64_t> v = Int(spec, value, 0, kI32 / 1000, "an offset in us >= 0");
          if (!v.ok()) return v.status();
          o.align_offset_us = *v;
        } else {
          o.align_offset_us = 0;
        }
        return Status::Ok();
      }
      case kOptBreaktrace: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64, "a latency limit >= 0 (0: off)");
        if (!v.ok()) return v.status();
        o.breaktrace = *v;
        return Status::Ok();
      }
      case kOptClock: {
        const std::optional<std::int64_t> v = ParseInt(value);
        if (!v || (*v != 0 && *v != 1)) {
          return BadValue(spec, value, "expected 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)");
        }
        o.clock = *v == 1 ? Clock::kRealtime : Clock::kMonotonic;
        return Status::Ok();
      }
      case kOptDefaultSystem:
        o.default_system = true;
        return Status::Ok();
      case kOptDistance: {
        Result<std::int64_t> v = Int(spec, value, 0, kI32, "a distance in us >= 0");
        if (!v.ok()) return v.status();
        o.distance_us = *v;
        o.distance_given = true;
        return Status::Ok();
      }
      case kOptDuration: {
        Result<std::int64_t> v = ParseDurationSeconds(value);
        if (!v.ok()) return BadValue(spec, value, v.status().message());
        o.duration_s = *v;
        return Status::Ok();
      }
      case kOptLatency: {
        Result<std::int64_t> v =
            Int(spec, value, std::numeric_limits<std::int32_t>::min(), kI32, "a value in us");
        if (!v.ok()) return v.status();
        o.latency_us = static_cast<std::int32_t>(std::max<std::int64_t>(*v, 0));
        return Status::Ok();
      }
      case kOptFifo:
        if (value.empty()) return BadValue(spec, value, "expected a path for the named pipe");
        if (Status s = telemetry::OutputFifo::ResolveFifoPath(value, OptionName(spec)).status();
            !s.ok()) {
          return Invalid(s.message());
        }
        o.fifo_path = value;
        return Status::Ok();
      case kOptHistofall:
      case kOptHistogram: {
        if (spec.id == kOptHistofall) o.histofall = true;
        Result<std::int64_t> v =
            Int(spec, value, 1, kHistMax, "a number of 1-us buckets from 1 to 1000000");
        if (!v.ok()) return v.status();
        o.histogram = static_cast<std::uint32_t>(*v);
        return Status::Ok();
      }
      case kOptHistfile:
        if (Status s = CheckOutputPath(OptionName(spec), value); !s.ok()) return s;
        o.histfile = value;
        return Status::Ok();
      case kOptInterval: {
        Result<std::int64_t> v = Int(spec, value, 1, kI32, "an interval in us >= 1");
        if (!v.ok()) return v.status();
        o.interval_us = *v;
        return Status::Ok();
      }
      case kOptJson:
        if (Status s = CheckOutputPath(OptionName(spec), value); !s.ok()) return s;
        o.json_path = value;
        return Status::Ok();
      case kOptLaptop:
        o.laptop = true;
        return Status::Ok();
      case kOptLoops: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64, "a number of loops >= 0 (0: endless)");
        if (!v.ok()) return v.status();
        o.loops = static_cast<std::uint64_t>(*v);
        return Status::Ok();
      }
      case kOptMainAffinity: {
        Result<std::vector<int>> cpus = ParseCpuSet(value, machine);
        if (!cpus.ok()) return BadValue(spec, value, cpus.status().message());
        o.main_affinity = *cpus;
        return Status::Ok();
      }
      case kOptMlockall:
        o.mlockall = true;
        return Status::Ok();
      case kOptRefresh:
        o.refresh_on_max = true;
        return Status::Ok();
      case kOptNsecs:
        o.nsecs = true;
        return Status::Ok();
      case kOptOscope: {
        Result<std::int64_t> v = Int(spec, value, 1, kI32, "a reduction factor >= 1");
        if (!v.ok()) return v.status();
        o.oscope = static_cast<std::uint32_t>(*v);
        oscope_given = true;
        return Status::Ok();
      }
      case kOptPriority: {
        Result<std::int64_t> v = Int(spec, value, 0, 99, "a priority from 0 to 99");
        if (!v.ok()) return v.status();
        o.priority = static_cast<int>(*v);
        if (o.policy != SchedPolicy::kFifo && o.policy != SchedPolicy::kRr) {
          o.policy = SchedPolicy::kFifo;
          o.policy_name = "fifo";
        }
        return Status::Ok();
      }
      case kOptQuiet:
        o.quiet = true;
        return Status::Ok();
      case kOptPriospread:
        o.priospread = true;
        return Status::Ok();
      case kOptRelative:
        o.relative = true;
        return Status::Ok();
      case kOptResolution:
        o.resolution = true;
        return Status::Ok();
      case kOptSystem:
        o.system_sleep = true;
        return Status::Ok();
      case kOptSmi:
        o.smi = true;
        return Status::Ok();
      case kOptSmp:
        if (option_affinity && o.affinity != AffinityMode::kNone) {
          return Invalid(
              "-S/--smp after -a/--affinity: numa and smp options are mutually exclusive "
              "(cyclictest 2.4 stops here too); use -S alone, or -a with -t");
        }
        o.smp = true;
        threads_given = true;
        threads_per_cpu = true;
        o.affinity = AffinityMode::kAllCpus;
        return Status::Ok();
      case kOptSpike: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64, "a latency trigger >= 0 (0: off)");
        if (!v.ok()) return v.status();
        o.spike = *v;
        return Status::Ok();
      }
      case kOptSpikeNodes: {
        Result<std::int64_t> v =
            Int(spec, value, 1, 1 << 24, "a number of nodes from 1 to 16777216");
        if (!v.ok()) return v.status();
        o.spike_nodes = static_cast<std::uint32_t>(*v);
        return Status::Ok();
      }
      case kOptThreads:
        if (o.smp) {
          o.stderr_notes.push_back("WARN: -t ignored due to smp mode\n");
          return Status::Ok();
        }
        threads_given = true;
        if (arg) {
          Result<std::int64_t> v = Int(spec, value, 1, kMaxThreads,
                                       "a number of threads from 1 to 256 (or -t alone: one "
                                       "per CPU)");
          if (!v.ok()) return v.status();
          num_threads = static_cast<int>(*v);
          threads_per_cpu = false;
        } else {
          threads_per_cpu = true;
        }
        return Status::Ok();
      case kOptTracemark:
        o.tracemark = true;
        return Status::Ok();
      case kOptUnbuffered:
        o.unbuffered = true;
        return Status::Ok();
      case kOptVerbose:
        o.verbose = true;
        return Status::Ok();
      case kOptDbg:
        o.dbg_cyclictest = true;
        return Status::Ok();
      case kOptPolicy: {
        std::string name = value;
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (name == "other" || name == "normal") {
          o.policy = SchedPolicy::kOther;
        } else if (name == "batch") {
          o.policy = SchedPolicy::kBatch;
        } else if (name == "idle") {
          o.policy = SchedPolicy::kIdle;
        } else if (name == "fifo") {
          o.policy = SchedPolicy::kFifo;
        } else if (name == "rr") {
          o.policy = SchedPolicy::kRr;
        } else {
          return BadValue(spec, value, "expected other, normal, batch, idle, fifo or rr");
        }
        o.policy_name = name == "normal" ? "other" : name;
        return Status::Ok();
      }
      case kOptHelp:
        o.help = true;
        return Status::Ok();
      case kOptPosixTimers:
        o.posix_timers = true;
        return Status::Ok();
      case kOptNoop:
        o.stderr_notes.push_back(
            "rtloop-cyclic: note: -n ignored (clock_nanosleep is always used; cyclictest 2.x "
            "rejects -n)\n");
        return Status::Ok();
      case kOptTelemetry:
        if (arg && value.empty()) return BadValue(spec, value, "expected an address HOST:PORT");
        o.telemetry = true;
        o.telemetry_address = value;
        return Status::Ok();
      case kOptMetrics:
        if (arg && value.empty()) return BadValue(spec, value, "expected an address HOST:PORT");
        o.metrics = true;
        o.metrics_address = value;
        return Status::Ok();
      case kOptRecord:
        if (value == "-" || value == "/dev/stdout") {
          return BadValue(spec, value,
                          "the sample log is binary and standard output carries rtloop-cyclic's "
                          "text output; give a file name, e.g. --record=run.rtrec");
        }
        if (Status s = CheckOutputPath(OptionName(spec), value, /*allow_stdout=*/false); !s.ok()) {
          return s;
        }
        o.record_path = value;
        return Status::Ok();
      case kOptPercentiles:
        o.percentiles = true;
        return Status::Ok();
      case kOptFailAbove: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64 / 1000, "a latency bound in us >= 0");
        if (!v.ok()) return v.status();
        o.fail_above_us = *v;
        return Status::Ok();
      }
      case kOptFailPercentile: {
        const std::size_t colon = value.find(':');
        const std::string why =
            "expected P:US, a percentile 0 < P <= 100 and a bound in us, "
            "e.g. 99.9:50";
        if (colon == std::string::npos) return BadValue(spec, value, why);
        const std::optional<double> p = ParseDouble(value.substr(0, colon));
        const std::optional<std::int64_t> us = ParseInt(value.substr(colon + 1));
        if (!p || *p <= 0.0 || *p > 100.0 || !us || *us < 0) return BadValue(spec, value, why);
        o.fail_percentiles.push_back(PercentileBound{*p, *us, value});
        return Status::Ok();
      }
      case kOptFailMissed: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64, "a number of missed releases >= 0");
        if (!v.ok()) return v.status();
        o.fail_missed = static_cast<std::uint64_t>(*v);
        return Status::Ok();
      }
      case kOptWarmup: {
        Result<std::int64_t> v = Int(spec, value, 0, kI64, "a number of cycles >= 0");
        if (!v.ok()) return v.status();
        o.warmup = static_cast<std::uint64_t>(*v);
        return Status::Ok();
      }
      case kOptTokenFile:
        if (value.empty()) return BadValue(spec, value, "expected the file holding the token");
        o.token_file = value;
        return Status::Ok();
      case kOptTlsCert:
        if (value.empty()) return BadValue(spec, value, "expected a PEM certificate file");
        o.tls_cert_file = value;
        return Status::Ok();
      case kOptTlsKey:
        if (value.empty()) return BadValue(spec, value, "expected a PEM private key file");
        o.tls_key_file = value;
        return Status::Ok();
      case kOptHistogramStyle:
        if (value == "2.4") {
          o.histogram_style = HistogramStyle::kFull;
        } else if (value == "sparse") {
          o.histogram_style = HistogramStyle::kSparse;
        } else {
          return BadValue(spec, value, "expected 2.4 (every row, the default) or sparse");
        }
        return Status::Ok();
      case kOptMaxOverTime:
        if (Status s = CheckOutputPath(OptionName(spec), value); !s.ok()) return s;
        o.max_over_time_path = value;
        return Status::Ok();
      case kOptMaxWindow: {
        Result<std::int64_t> v = Int(spec, value, 1, 86'400'000, "a window in ms, 1..86400000");
        if (!v.ok()) return v.status();
        o.max_window_ms = *v;
        return Status::Ok();
      }
      case kOptKeepDistance:
        o.keep_distance = true;
        return Status::Ok();
    }
    return Invalid("internal: unhandled option " + OptionName(spec));
  }

  // cyclictest's process_options() checks after the getopt loop, then the per-thread plan.
  Status Finish() {
    if (oscope_given && !o.verbose) {
      return Invalid("-o/--oscope needs -v/--verbose (it reduces the verbose output)");
    }
    if (o.aligned && o.secaligned) {
      return Invalid("-A/--aligned and --secaligned cannot be combined; choose one");
    }
    if (o.histogram > 0 && o.distance_given && !o.keep_distance) {
      o.stderr_notes.push_back("WARN: distance is ignored and set to 0, if histogram enabled\n");
    }
    if (o.histogram > 0 && !o.keep_distance) o.distance_us = 0;
    if (o.system_sleep && o.posix_timers) {
      o.stderr_notes.push_back("WARN: The system option requires clock_nanosleep\n");
      o.stderr_notes.push_back("WARN: and is not compatible with posix_timers\n");
      o.stderr_notes.push_back("WARN: Using clock_nanosleep\n");
      o.posix_timers = false;
    }
    if (o.posix_timers) {
      o.wait_mode = WaitMode::kPosixTimer;
    } else if (o.system_sleep) {
      o.wait_mode = WaitMode::kNanosleep;
    } else if (o.relative) {
      o.wait_mode = WaitMode::kRelative;
    }
    if (o.affinity == AffinityMode::kAllCpus) o.affinity_cpus = machine.allowed;
    if (threads_per_cpu) {
      num_threads = static_cast<int>(o.affinity == AffinityMode::kCpuSet ? o.affinity_cpus.size()
                                                                         : machine.allowed.size());
      if (num_threads < 1) num_threads = 1;
      if (num_threads > kMaxThreads) {
        return Invalid("one thread per CPU would be " + std::to_string(num_threads) +
                       " threads; rtloop runs at most " + std::to_string(kMaxThreads) +
                       ": give -t N or an -a CPU set");
      }
    }
    o.num_threads = num_threads;
    const bool rt = o.policy == SchedPolicy::kFifo || o.policy == SchedPolicy::kRr;
    if ((o.priospread || rt) && o.priority == 0) {
      o.priority = std::min(num_threads + 1, 99);
      o.stderr_notes.push_back("defaulting realtime priority to " + std::to_string(o.priority) +
                               "\n");
    }
    if (o.priority > 0 && !(o.policy == SchedPolicy::kFifo || o.policy == SchedPolicy::kRr)) {
      o.stderr_notes.push_back("policy and priority don't match: setting policy to SCHED_FIFO\n");
      o.policy = SchedPolicy::kFifo;
      o.policy_name = "fifo";
    }
    if (o.affinity != AffinityMode::kNone && o.affinity_cpus.empty()) {
      return Invalid("no CPU is available for the measurement threads (process affinity is empty)");
    }
    o.threads.clear();
    int priority = o.priority;
    for (int i = 0; i < num_threads; ++i) {
      ThreadPlan t;
      t.index = i;
      if (o.affinity != AffinityMode::kNone) {
        t.cpu = o.affinity_cpus[static_cast<std::size_t>(i) % o.affinity_cpus.size()];
      }
      t.priority = std::max(priority, 0);
      const bool thread_rt =
          t.priority > 0 && (o.policy == SchedPolicy::kFifo || o.policy == SchedPolicy::kRr);
      t.policy = thread_rt ? o.policy : SchedPolicy::kOther;
      if (!thread_rt) t.priority = 0;
      t.interval_us = o.interval_us + static_cast<std::int64_t>(i) * o.distance_us;
      if (t.interval_us > std::numeric_limits<std::int32_t>::max()) {
        return Invalid("thread " + std::to_string(i) + "'s interval (-i + " + std::to_string(i) +
                       " * -d) exceeds 2147483647 us; lower -i, -d or -t");
      }
      t.phase_ns = o.aligned ? static_cast<std::int64_t>(i) * o.align_offset_us * 1000
                             : (o.secaligned ? o.align_offset_us * 1000 : 0);
      o.threads.push_back(t);
      if (o.priospread) --priority;
    }
    if (o.spike == 0) o.spike_nodes = 1024;
    return CheckOptionsTogether(o);
  }
};

}  // namespace

MachineCpus MachineCpus::Read() {
  MachineCpus m;
  const SystemInfo info = ReadSystemInfo();
  const long conf = ::sysconf(_SC_NPROCESSORS_CONF);
  m.configured = conf > 0 ? static_cast<int>(conf) : 1;
  m.online = info.online_cpus;
  m.allowed = info.affinity_cpus.empty() ? m.online : info.affinity_cpus;
  m.configured = std::max(m.configured, m.online.empty() ? 0 : m.online.back() + 1);
  return m;
}

Result<std::vector<int>> ParseCpuSet(const std::string& text, const MachineCpus& machine) {
  std::string s = text;
  bool invert = false;
  bool relative = false;
  if (!s.empty() && s[0] == '!') {
    invert = true;
    s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '+') {
    relative = true;
    s.erase(0, 1);
  }
  if (s.empty()) return Invalid("expected a CPU list such as 2, 2-3,0 or all");
  std::vector<int> picked;
  if (s == "all") {
    picked = machine.allowed;
  } else {
    std::size_t pos = 0;
    while (pos <= s.size()) {
      std::size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      const std::string item = s.substr(pos, end - pos);
      const std::size_t dash = item.find('-');
      const std::optional<std::int64_t> a =
          dash == std::string::npos ? ParseInt(item) : ParseInt(item.substr(0, dash));
      const std::optional<std::int64_t> b =
          dash == std::string::npos ? a : ParseInt(item.substr(dash + 1));
      if (!a || !b || *a < 0 || *b < 0 || (dash != std::string::npos && dash == 0)) {
        return Invalid("'" + item + "' is not a CPU number or range (use e.g. 2, 2-3,0 or all)");
      }
      if (*b < *a) return Invalid("range '" + item + "' is reversed");
      const std::int64_t limit = relative ? static_cast<std::int64_t>(machine.allowed.size())
                                          : static_cast<std::int64_t>(machine.configured);
      if (*b >= limit) {
        if (relative) {
          return Invalid("'+" + item + "' needs more than the " +
                         std::to_string(machine.allowed.size()) + " CPUs allowed (" +
                         FormatCpus(machine.allowed) + ")");
        }
        return Invalid("CPU " + std::to_string(*b) + " does not exist on this machine (CPUs " +
                       FormatCpus(machine.online) + ")");
      }
      for (std::int64_t c = *a; c <= *b; ++c) {
        picked.push_back(relative ? machine.allowed[static_cast<std::size_t>(c)]
                                  : static_cast<int>(c));
      }
      if (end == s.size()) break;
      pos = end + 1;
    }
  }
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  std::vector<int> result;
  if (invert || relative) {  // intersected with the current affinity, as libnuma does
    for (int c : machine.allowed) {
      const bool in = std::binary_search(picked.begin(), picked.end(), c);
      if (in != invert) result.push_back(c);
    }
  } else {
    for (int c : picked) {
      if (!std::binary_search(machine.online.begin(), machine.online.end(), c)) {
        return Invalid("CPU " + std::to_string(c) +
                       " is offline (online: " + FormatCpus(machine.online) + ")");
      }
      if (!std::binary_search(machine.allowed.begin(), machine.allowed.end(), c)) {
        return Invalid("CPU " + std::to_string(c) + " is outside this process's affinity (" +
                       FormatCpus(machine.allowed) + "); check taskset or the cgroup cpuset");
      }
      result.push_back(c);
    }
  }
  if (result.empty()) return Invalid("the set leaves no CPU to run on");
  return result;
}

Result<std::int64_t> ParseDurationSeconds(const std::string& text) {
  std::string digits = text;
  std::int64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 's':
      case 'S':
        digits.pop_back();
        break;
      case 'm':
      case 'M':
        unit = 60;
        digits.pop_back();
        break;
      case 'h':
      case 'H':
        unit = 3600;
        digits.pop_back();
        break;
      case 'd':
      case 'D':
        unit = 86400;
        digits.pop_back();
        break;
      default:
        break;
    }
  }
  const std::optional<std::int64_t> v = ParseInt(digits);
  if (!v || *v < 0 || digits[0] == '+' || digits[0] == '-') {
    return Invalid(
        "expected a whole number with an optional suffix s, m, h or d (e.g. 30, 10m, 24h); "
        "fractions are not accepted");
  }
  if (*v > std::numeric_limits<std::int64_t>::max() / unit / 1'000'000'000) {
    return Invalid("duration too long");
  }
  return *v * unit;
}

Result<CyclicOptions> ParseCyclicOptions(int argc, const char* const* argv,
                                         const MachineCpus& machine) {
  CyclicOptions opts;
  Parser p{machine, opts};
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    auto next_word_value = [&](bool look_ahead_only) -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      const std::string next = argv[i + 1];
      if (look_ahead_only && (next.empty() || next[0] == '-')) return std::nullopt;
      ++i;
      return next;
    };
    if (word == "--") {
      if (i + 1 < argc) {
        return Invalid("unexpected argument '" + std::string(argv[i + 1]) +
                       "': rtloop-cyclic takes options only");
      }
      break;
    }
    if (word.size() > 2 && word[0] == '-' && word[1] == '-') {
      const std::size_t eq = word.find('=');
      const std::string name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      Result<const OptionSpec*> found = FindLong(name);
      if (!found.ok()) return found.status();
      const OptionSpec& spec = **found;
      std::optional<std::string> arg;
      if (eq != std::string::npos) arg = word.substr(eq + 1);
      if (spec.arg == Arg::kNone && arg) {
        return Invalid("option --" + std::string(spec.long_name) + " takes no value (got '" + *arg +
                       "')");
      }
      if (spec.arg == Arg::kRequired && !arg) {
        arg = next_word_value(false);
        if (!arg) return Invalid("option " + OptionName(spec) + " needs a value");
      }
      if (spec.arg == Arg::kOptional && !arg && spec.look_ahead) arg = next_word_value(true);
      if (Status s = p.Apply(spec, arg); !s.ok()) return s;
      continue;
    }
    if (word.size() > 1 && word[0] == '-') {
      for (std::size_t j = 1; j < word.size(); ++j) {
        const char c = word[j];
        const OptionSpec* spec = FindShort(c);
        if (spec == nullptr) {
          if (c == 'U') {
            return Invalid(
                "unknown option '-U' (the old -U/--numa was removed from cyclictest "
                "in 2018; drop it)");
          }
          return Invalid("unknown option '-" + std::string(1, c) + "'" +
                         (word.size() > 2 ? " in '" + word + "'" : std::string()));
        }
        std::optional<std::string> arg;
        const std::string rest = word.substr(j + 1);
        if (spec->arg == Arg::kRequired) {
          arg = rest.empty() ? next_word_value(false) : std::optional<std::string>(rest);
          if (!arg) return Invalid("option " + OptionName(*spec) + " needs a value");
          j = word.size();
        } else if (spec->arg == Arg::kOptional) {
          if (!rest.empty()) {
            arg = rest;
          } else if (spec->look_ahead) {
            arg = next_word_value(true);
          }
          j = word.size();
        }
        if (Status s = p.Apply(*spec, arg); !s.ok()) return s;
      }
      continue;
    }
    return Invalid("unexpected argument '" + word +
                   "': rtloop-cyclic takes options only (values go with their option: -i800, "
                   "-i 800 or --interval=800; --telemetry=ADDR)");
  }
  if (opts.help) return opts;
  if (Status s = p.Finish(); !s.ok()) return s;
  return opts;
}

int PrintUsageError(const Status& status) {
  std::fprintf(stderr, "rtloop-cyclic: %s\nTry 'rtloop-cyclic --help' for the list of options.\n",
               telemetry::EscapeControlCharacters(status.message()).c_str());
  return kExitUsage;
}

std::string UsageText() {
  return R"(rtloop-cyclic: cyclictest 2.4's command line and output, measured by rtloop's executor
Usage:
rtloop-cyclic <options>

-a [CPUSET] --affinity     pin thread #N to the (N mod n)-th CPU of CPUSET (e.g. 2, 3-5,0,
                           !0, +1, all), or without CPUSET of the allowed CPUs. The main
                           thread is restricted to CPUSET too. Without -a/-S threads float.
-A USEC  --aligned=USEC    align thread wakeups: thread N starts N*USEC after thread 0
-b USEC  --breaktrace=USEC end the run when a latency exceeds USEC (ns with -N)
-c CLOCK --clock=CLOCK     select clock: 0 = CLOCK_MONOTONIC (default), 1 = CLOCK_REALTIME
         --default-system  don't write /dev/cpu_dma_latency
-d DIST  --distance=DIST   distance of thread intervals in us, default=500
-D       --duration=TIME   length of the run; append s, m, h or d (either case)
-F       --fifo=<path>     create a named pipe at path and write stats to it
-h       --histogram=US    dump a latency histogram (1..1000000 buckets) after the run;
                           all threads use the same interval
-H       --histofall=US    same as -h with an additional summary column
         --histfile=<path> dump the latency histogram to <path> instead of stdout
-i INTV  --interval=INTV   base interval of thread in us, default=1000
         --json=FILENAME   write final results into FILENAME, JSON formatted ('-': stdout)
         --laptop          don't write /dev/cpu_dma_latency (save battery power)
         --latency=PM_QOS  value written to /dev/cpu_dma_latency, default 0
-l LOOPS --loops=LOOPS     number of loops per thread; the run ends when the first thread
                           has done them; default=0 (endless)
         --mainaffinity=CPUSET  run the main thread on CPUSET
-m       --mlockall        lock current and future memory allocations
-M       --refresh_on_max  update the screen only on a new max latency
-N       --nsecs           print results in ns instead of us
-o RED   --oscope=RED      oscilloscope mode, reduce verbose output by RED (needs -v)
-p PRIO  --priority=PRIO   priority 0..99 of the measurement threads (SCHED_FIFO)
         --policy=NAME     other, normal, batch, idle, fifo or rr
         --priospread      thread N gets PRIO-N
-q       --quiet           print a summary only on exit
-r       --relative        use relative timer instead of absolute
-R       --resolution      check the clock resolution
         --secaligned [USEC]  align thread wakeups to the next full second plus USEC
-s       --system          use nanosleep
-S       --smp             one thread per CPU, pinned, same priority
         --spike=TRIGGER   record all spikes > TRIGGER
         --spike-nodes=N   maximum number of spikes recorded (default 1024)
         --smi             count SMIs (Intel CPUs with the msr driver)
-t       --threads         one thread per available CPU
-t [NUM] --threads=NUM     number of threads (default 1)
         --tracemark       write a trace mark when the -b limit is exceeded
-u       --unbuffered      force unbuffered output for live processing
-v       --verbose         print every sample: thread:cycle:latency
         --dbg_cyclictest  print debug information
-x       --posix_timers    use POSIX timers instead of clock_nanosleep
-n                         accepted and ignored (old cyclictest option)
-?       --help            print this help

rtloop extensions:
         --telemetry[=ADDR]       serve the gRPC telemetry API while measuring (127.0.0.1)
         --token-file=FILE        clients must send this bearer token (gRPC, /metrics, /api)
         --tls-cert=FILE          serve TLS with this PEM certificate chain (with --tls-key)
         --tls-key=FILE           the certificate's PEM private key (with --tls-cert)
         --metrics[=ADDR]         serve Prometheus /metrics and the live page at / over HTTP
                                  while measuring (127.0.0.1:9101)
         --record=FILE            write every sample to FILE (binary sample log; FILE.partial
                                  until the run ended)
         --percentiles            print p50..p99.999 and max per thread after the run
                                  (on stderr with -q)
         --fail-above=US          exit 3 when any thread's max latency exceeds US
         --fail-percentile=P:US   exit 3 when any thread's P-th percentile exceeds US
         --fail-missed=N          exit 3 when any thread missed more than N releases
         --warmup=N               leave each thread's first N cycles out of the statistics
         --histogram-style=STYLE  2.4 (every row, default) or sparse (2.7+ layout)
         --max-over-time=FILE     write each thread's max latency per time window to FILE
         --max-window=MS          the --max-over-time window, default 1000 ms
         --keep-distance          keep -d's interval distance under -h (cyclictest drops it)

Output files (--json, --histfile, --record) are checked before measuring and written as
FILE.partial, renamed to FILE when complete; '-' is standard output (not for --record).

Environment: RTLOOP_GRPC_VERBOSE=1 shows gRPC's own log lines on stderr (off by default).

Exit status:
  0  done (also when -b ended the run)
  1  runtime error: privilege, system call, not enough memory (nothing or not all measured)
  2  bad command line: nothing measured, no file created
  3  a --fail-* bound was breached (stderr names the thread and the bound)
  4  a result could not be written completely (--json, --histfile, --record or standard
     output; stderr says which); the JSON's return_code carries the status as well
)";
}

}  // namespace rtloop::cyclic
