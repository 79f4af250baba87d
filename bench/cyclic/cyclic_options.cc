// The command-line parser: one table row per option (kOptions). A regular option is its row alone
// (a flag, an integer in a range, an output path, a non-empty text); the others name a handler
// below the table. Parser::Finish() then applies cyclictest's process_options() checks and
// resolves the per-thread plan.
#include "cyclic_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <utility>

#include "cyclic_option_checks.h"
#include "cyclic_option_values.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {
namespace {

constexpr std::uint32_t kHistMax = 1000000;  // cyclictest's HIST_MAX
constexpr int kMaxThreads = 256;             // the executor runs at most 256 tasks
constexpr std::int64_t kI32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

enum class Arg { kNone, kRequired, kOptional };

struct Parser;
struct OptionSpec;
using Value = std::optional<std::string>;  // nullopt: no value given

// An integer option: the range it accepts and where it goes.
struct IntRule {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  const char* expected = nullptr;  // "an interval in us >= 1", for the message
  void (*store)(Parser&, std::int64_t) = nullptr;
};

// An output path, checked with output_file.h's rules before anything is measured.
struct OutputRule {
  // Why '-' (standard output) is refused; nullptr: '-' is standard output.
  const char* no_stdout = nullptr;
  void (*store)(CyclicOptions&, const std::string&) = nullptr;
};

// A text value that may not be empty (a file name, an address).
struct TextRule {
  const char* expected = nullptr;  // "a PEM certificate file", for the message
  void (*store)(CyclicOptions&, const Value&) = nullptr;
};

struct OptionSpec {
  char short_name = 0;              // 0: long only
  const char* long_name = nullptr;  // nullptr: short only
  Arg arg = Arg::kNone;
  bool look_ahead = false;  // optional argument may be the next word (cyclictest's look-ahead)
  // What the option does: exactly one of these.
  bool CyclicOptions::*flag = nullptr;
  IntRule integer;
  OutputRule output;
  TextRule text;
  Status (*handler)(Parser&, const OptionSpec&, const Value&) = nullptr;
};

// The kinds of table rows.
using Handler = Status (*)(Parser&, const OptionSpec&, const Value&);
constexpr OptionSpec Row(char short_name, const char* long_name, Arg arg, bool look_ahead = false) {
  OptionSpec spec;
  spec.short_name = short_name;
  spec.long_name = long_name;
  spec.arg = arg;
  spec.look_ahead = look_ahead;
  return spec;
}
constexpr OptionSpec Flag(char s, const char* l, bool CyclicOptions::*flag) {
  OptionSpec spec = Row(s, l, Arg::kNone);
  spec.flag = flag;
  return spec;
}
constexpr OptionSpec Integer(char s, const char* l, IntRule rule) {
  OptionSpec spec = Row(s, l, Arg::kRequired);
  spec.integer = rule;
  return spec;
}
constexpr OptionSpec Output(char s, const char* l, OutputRule rule) {
  OptionSpec spec = Row(s, l, Arg::kRequired);
  spec.output = rule;
  return spec;
}
constexpr OptionSpec Text(char s, const char* l, Arg arg, TextRule rule) {
  OptionSpec spec = Row(s, l, arg);
  spec.text = rule;
  return spec;
}
constexpr OptionSpec Custom(char s, const char* l, Arg arg, Handler handler,
                            bool look_ahead = false) {
  OptionSpec spec = Row(s, l, arg, look_ahead);
  spec.handler = handler;
  return spec;
}

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

Status BadValue(const OptionSpec& spec, const std::string& value, const std::string& why) {
  return Invalid("invalid value '" + value + "' for " + OptionName(spec) + ": " + why);
}

Result<std::int64_t> Int(const OptionSpec& spec, const std::string& value, std::int64_t lo,
                         std::int64_t hi, const std::string& expected) {
  const std::optional<std::int64_t> v = ParseStrictInt(value);
  if (!v || *v < lo || *v > hi) return BadValue(spec, value, "expected " + expected);
  return *v;
}

struct Parser {
  const MachineCpus& machine;
  CyclicOptions& o;
  // Raw values whose meaning depends on later options.
  bool option_affinity = false;  // -a given (any form)
  int num_threads = 1;
  bool threads_per_cpu = false;  // -t without a number, or -S: one per allowed CPU
  bool oscope_given = false;

  Status Apply(const OptionSpec& spec, const Value& arg);
  Status Finish();

 private:
  void ResolveModes();
  Status ResolveThreadCount();
  void ResolvePriority();
  Status PlanThreads();
};

Status Parser::Apply(const OptionSpec& spec, const Value& arg) {
  const std::string value = arg.value_or("");
  if (spec.flag != nullptr) {
    o.*spec.flag = true;
    return Status::Ok();
  }
  if (spec.integer.store != nullptr) {
    const IntRule& r = spec.integer;
    Result<std::int64_t> v = Int(spec, value, r.lo, r.hi, r.expected);
    if (!v.ok()) return v.status();
    r.store(*this, *v);
    return Status::Ok();
  }
  if (spec.output.store != nullptr) {
    if (spec.output.no_stdout != nullptr && (value == "-" || value == "/dev/stdout")) {
      return BadValue(spec, value, spec.output.no_stdout);
    }
    const Status s = telemetry::ResolveOutputPath(
                         value, {.what = OptionName(spec), .allow_stdout = !spec.output.no_stdout})
                         .status();
    if (!s.ok()) return Invalid(s.message());
    spec.output.store(o, value);
    return Status::Ok();
  }
  if (spec.text.store != nullptr) {
    if (arg && value.empty())
      return BadValue(spec, value, std::string("expected ") + spec.text.expected);
    spec.text.store(o, arg);
    return Status::Ok();
  }
  return spec.handler(*this, spec, arg);
}

// --- The options that are more than their table row ---

Status ApplyAffinity(Parser& p, const OptionSpec& spec, const Value& arg) {
  p.option_affinity = true;
  if (p.o.smp) {  // -S ... -a: cyclictest warns and ignores -a
    p.o.stderr_notes.push_back("WARN: -a ignored due to smp mode\n");
    return Status::Ok();
  }
  if (!arg) {
    p.o.affinity = AffinityMode::kAllCpus;
    return Status::Ok();
  }
  Result<std::vector<int>> cpus = ParseCpuSet(*arg, p.machine);
  if (!cpus.ok()) return BadValue(spec, *arg, cpus.status().message());
  p.o.affinity = AffinityMode::kCpuSet;
  p.o.affinity_cpus = *cpus;
  if (p.o.verbose) p.o.stdout_notes.push_back("Using " + std::to_string(cpus->size()) + " cpus.\n");
  return Status::Ok();
}

// -A [USEC] and --secaligned [USEC].
Status ApplyAlignment(Parser& p, const OptionSpec& spec, const Value& arg) {
  (spec.short_name == 'A' ? p.o.aligned : p.o.secaligned) = true;
  p.o.align_offset_us = 0;
  if (!arg) return Status::Ok();
  Result<std::int64_t> v = Int(spec, *arg, 0, kI32 / 1000, "an offset in us >= 0");
  if (!v.ok()) return v.status();
  p.o.align_offset_us = *v;
  return Status::Ok();
}

Status ApplyClock(Parser& p, const OptionSpec& spec, const Value& arg) {
  const std::optional<std::int64_t> v = ParseStrictInt(*arg);
  if (!v || (*v != 0 && *v != 1)) {
    return BadValue(spec, *arg, "expected 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)");
  }
  p.o.clock = *v == 1 ? Clock::kRealtime : Clock::kMonotonic;
  return Status::Ok();
}

Status ApplyDuration(Parser& p, const OptionSpec& spec, const Value& arg) {
  Result<std::int64_t> v = ParseDurationSeconds(*arg);
  if (!v.ok()) return BadValue(spec, *arg, v.status().message());
  p.o.duration_s = *v;
  return Status::Ok();
}

Status ApplyFifo(Parser& p, const OptionSpec& spec, const Value& arg) {
  if (arg->empty()) return BadValue(spec, *arg, "expected a path for the named pipe");
  const Status s = telemetry::OutputFifo::ResolveFifoPath(*arg, OptionName(spec)).status();
  if (!s.ok()) return Invalid(s.message());
  p.o.fifo_path = *arg;
  return Status::Ok();
}

// -h US and -H US.
Status ApplyHistogram(Parser& p, const OptionSpec& spec, const Value& arg) {
  if (spec.short_name == 'H') p.o.histofall = true;
  Result<std::int64_t> v =
      Int(spec, *arg, 1, kHistMax, "a number of 1-us buckets from 1 to 1000000");
  if (!v.ok()) return v.status();
  p.o.histogram = static_cast<std::uint32_t>(*v);
  return Status::Ok();
}

Status ApplyMainAffinity(Parser& p, const OptionSpec& spec, const Value& arg) {
  Result<std::vector<int>> cpus = ParseCpuSet(*arg, p.machine);
  if (!cpus.ok()) return BadValue(spec, *arg, cpus.status().message());
  p.o.main_affinity = *cpus;
  return Status::Ok();
}

Status ApplySmp(Parser& p, const OptionSpec& /*spec*/, const Value& /*arg*/) {
  if (p.option_affinity && p.o.affinity != AffinityMode::kNone) {
    return Invalid(
        "-S/--smp after -a/--affinity: numa and smp options are mutually exclusive (cyclictest "
        "2.4 stops here too); use -S alone, or -a with -t");
  }
  p.o.smp = true;
  p.threads_per_cpu = true;
  p.o.affinity = AffinityMode::kAllCpus;
  return Status::Ok();
}

Status ApplyThreads(Parser& p, const OptionSpec& spec, const Value& arg) {
  if (p.o.smp) {
    p.o.stderr_notes.push_back("WARN: -t ignored due to smp mode\n");
    return Status::Ok();
  }
  p.threads_per_cpu = !arg;
  if (!arg) return Status::Ok();
  Result<std::int64_t> v = Int(spec, *arg, 1, kMaxThreads,
                               "a number of threads from 1 to 256 (or -t alone: one per CPU)");
  if (!v.ok()) return v.status();
  p.num_threads = static_cast<int>(*v);
  return Status::Ok();
}

Status ApplyPolicy(Parser& p, const OptionSpec& spec, const Value& arg) {
  std::string name = *arg;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::pair<const char*, SchedPolicy> kPolicies[] = {
      {"other", SchedPolicy::kOther}, {"normal", SchedPolicy::kOther},
      {"batch", SchedPolicy::kBatch}, {"idle", SchedPolicy::kIdle},
      {"fifo", SchedPolicy::kFifo},   {"rr", SchedPolicy::kRr},
  };
  for (const auto& [word, policy] : kPolicies) {
    if (name != word) continue;
    p.o.policy = policy;
    p.o.policy_name = name == "normal" ? "other" : name;
    return Status::Ok();
  }
  return BadValue(spec, *arg, "expected other, normal, batch, idle, fifo or rr");
}

Status ApplyNoop(Parser& p, const OptionSpec& /*spec*/, const Value& /*arg*/) {
  p.o.stderr_notes.push_back(
      "rtloop-cyclic: note: -n ignored (clock_nanosleep is always used; cyclictest 2.x rejects "
      "-n)\n");
  return Status::Ok();
}

Status ApplyFailPercentile(Parser& p, const OptionSpec& spec, const Value& arg) {
  const std::string& value = *arg;
  const std::size_t colon = value.find(':');
  const char* why = "expected P:US, a percentile 0 < P <= 100 and a bound in us, e.g. 99.9:50";
  if (colon == std::string::npos) return BadValue(spec, value, why);
  const std::optional<double> pct = ParseStrictDouble(value.substr(0, colon));
  const std::optional<std::int64_t> us = ParseStrictInt(value.substr(colon + 1));
  if (!pct || *pct <= 0.0 || *pct > 100.0 || !us || *us < 0) return BadValue(spec, value, why);
  p.o.fail_percentiles.push_back(PercentileBound{*pct, *us, value});
  return Status::Ok();
}

// --hdr-layout=P:R, checked as TelemetryConfig::histogram_layout is (HistogramLayout::Create).
Status ApplyHdrLayout(Parser& p, const OptionSpec& spec, const Value& arg) {
  const std::string& value = *arg;
  const std::size_t colon = value.find(':');
  const char* why =
      "expected PRECISION_BITS:RANGE_BITS, e.g. 7:30 (0.8 % up to 1.07 s; default 10:37)";
  if (colon == std::string::npos) return BadValue(spec, value, why);
  const std::optional<std::int64_t> bits = ParseStrictInt(value.substr(0, colon));
  const std::optional<std::int64_t> range = ParseStrictInt(value.substr(colon + 1));
  constexpr std::int64_t kAny = 1000;  // beyond every bound, and a value an int holds
  if (!bits || !range || std::abs(*bits) > kAny || std::abs(*range) > kAny) {
    return BadValue(spec, value, why);
  }
  Result<telemetry::HistogramLayout> layout = telemetry::HistogramLayout::Create(
      {.precision_bits = static_cast<int>(*bits), .range_bits = static_cast<int>(*range)}, "");
  if (!layout.ok()) return BadValue(spec, value, layout.status().message());
  p.o.hdr_layout = *layout;
  return Status::Ok();
}

Status ApplyHistogramStyle(Parser& p, const OptionSpec& spec, const Value& arg) {
  if (*arg == "2.4") {
    p.o.histogram_style = HistogramStyle::kFull;
  } else if (*arg == "sparse") {
    p.o.histogram_style = HistogramStyle::kSparse;
  } else {
    return BadValue(spec, *arg, "expected 2.4 (every row, the default) or sparse");
  }
  return Status::Ok();
}

// --- The table ---

using O = CyclicOptions;
using P = Parser;
constexpr Arg kReq = Arg::kRequired;
constexpr Arg kOpt = Arg::kOptional;
constexpr const char* kTextOnStdout =
    "standard output carries rtloop-cyclic's text output; give a file name";

constexpr OptionSpec kOptions[] = {
    // cyclictest 2.4's options, in its --help order.
    Custom('a', "affinity", kOpt, ApplyAffinity, true),
    Custom('A', "aligned", kOpt, ApplyAlignment, true),
    Integer('b', "breaktrace", {0, kI64, "a latency limit >= 0 (0: off)", [](P& p, std::int64_t v) {
                   p.o.breaktrace = v;
                 }}),
    Custom('c', "clock", kReq, ApplyClock),
    Flag(0, "default-system", &O::default_system),
    Integer('d', "distance", {0, kI32, "a distance in us >= 0", [](P& p, std::int64_t v) {
                   p.o.distance_us = v;
                   p.o.distance_given = true;
                 }}),
    Custom('D', "duration", kReq, ApplyDuration),
    Integer(0, "latency", {std::numeric_limits<std::int32_t>::min(), kI32, "a value in us",
                 [](P& p, std::int64_t v) {
                   p.o.latency_us = static_cast<std::int32_t>(std::max<std::int64_t>(v, 0));
                 }}),
    Custom('F', "fifo", kReq, ApplyFifo),
    Custom('h', "histogram", kReq, ApplyHistogram),
    Custom('H', "histofall", kReq, ApplyHistogram),
    Output(0, "histfile", {nullptr, [](O& o, const std::string& v) { o.histfile = v; }}),
    Integer('i', "interval", {1, kI32, "an interval in us >= 1", [](P& p, std::int64_t v) {
                   p.o.interval_us = v;
                 }}),
    Output(0, "json", {nullptr, [](O& o, const std::string& v) { o.json_path = v; }}),
    Flag(0, "laptop", &O::laptop),
    Integer('l', "loops", {0, kI64, "a number of loops >= 0 (0: endless)", [](P& p, std::int64_t v) {
                   p.o.loops = static_cast<std::uint64_t>(v);
                 }}),
    Custom(0, "mainaffinity", kReq, ApplyMainAffinity),
    Flag('m', "mlockall", &O::mlockall),
    Flag('M', "refresh_on_max", &O::refresh_on_max),
    Flag('N', "nsecs", &O::nsecs),
    Integer('o', "oscope", {1, kI32, "a reduction factor >= 1", [](P& p, std::int64_t v) {
                   p.o.oscope = static_cast<std::uint32_t>(v);
                   p.oscope_given = true;
                 }}),
    Integer('p', "priority", {0, 99, "a priority from 0 to 99", [](P& p, std::int64_t v) {
                   p.o.priority = static_cast<int>(v);
                   if (p.o.policy != SchedPolicy::kFifo && p.o.policy != SchedPolicy::kRr) {
                     p.o.policy = SchedPolicy::kFifo;  // -p forces FIFO unless RR was chosen
                     p.o.policy_name = "fifo";
                   }
                 }}),
    Flag('q', "quiet", &O::quiet),
    Flag(0, "priospread", &O::priospread),
    Flag('r', "relative", &O::relative),
    Flag('R', "resolution", &O::resolution),
    Custom(0, "secaligned", kOpt, ApplyAlignment, true),
    Flag('s', "system", &O::system_sleep),
    Flag(0, "smi", &O::smi),
    Custom('S', "smp", Arg::kNone, ApplySmp),
    Integer(0, "spike", {0, kI64, "a latency trigger >= 0 (0: off)", [](P& p, std::int64_t v) {
                   p.o.spike = v;
                 }}),
    Integer(0, "spike-nodes", {1, 1 << 24, "a number of nodes from 1 to 16777216", [](P& p, std::int64_t v) {
                   p.o.spike_nodes = static_cast<std::uint32_t>(v);
                 }}),
    Custom('t', "threads", kOpt, ApplyThreads, true),
    Flag(0, "tracemark", &O::tracemark),
    Flag('u', "unbuffered", &O::unbuffered),
    Flag('v', "verbose", &O::verbose),
    Flag(0, "dbg_cyclictest", &O::dbg_cyclictest),
    Custom(0, "policy", kReq, ApplyPolicy),
    Flag('?', "help", &O::help),
    Flag('x', "posix_timers", &O::posix_timers),
    Custom('n', nullptr, Arg::kNone, ApplyNoop),
    // rtloop's extensions (long options only).
    Flag(0, "timerlat", &O::timerlat),
    Text(0, "telemetry", kOpt, {"an address HOST:PORT", [](O& o, const Value& v) {
                o.telemetry = true;
                o.telemetry_address = v.value_or("");
              }}),
    Text(0, "metrics", kOpt, {"an address HOST:PORT", [](O& o, const Value& v) {
                o.metrics = true;
                o.metrics_address = v.value_or("");
              }}),
    Output(0, "record", {"the sample log is binary and standard output carries rtloop-cyclic's text "
                "output; give a file name, e.g. --record=run.rtrec",
                [](O& o, const std::string& v) { o.record_path = v; }}),
    Flag(0, "percentiles", &O::percentiles),
    Integer(0, "fail-above", {0, kI64 / 1000, "a latency bound in us >= 0", [](P& p, std::int64_t v) {
                   p.o.fail_above_us = v;
                 }}),
    Custom(0, "fail-percentile", kReq, ApplyFailPercentile),
    Integer(0, "fail-missed", {0, kI64, "a number of missed releases >= 0", [](P& p, std::int64_t v) {
                   p.o.fail_missed = static_cast<std::uint64_t>(v);
                 }}),
    Integer(0, "warmup", {0, kI64, "a number of cycles >= 0", [](P& p, std::int64_t v) {
                   p.o.warmup = static_cast<std::uint64_t>(v);
                 }}),
    Custom(0, "histogram-style", kReq, ApplyHistogramStyle),
    Output(0, "max-over-time", {kTextOnStdout, [](O& o, const std::string& v) { o.max_over_time_path = v; }}),
    Integer(0, "max-window", {1, 86'400'000, "a window in ms, 1..86400000", [](P& p, std::int64_t v) {
                   p.o.max_window_ms = v;
                 }}),
    Flag(0, "keep-distance", &O::keep_distance),
    Custom(0, "hdr-layout", kReq, ApplyHdrLayout),
    Output(0, "explain", {nullptr, [](O& o, const std::string& v) { o.explain_path = v; }}),
    Integer(0, "explain-above", {1, kI64 / 1000, "a latency in us >= 1", [](P& p, std::int64_t v) {
                   p.o.explain_above_us = v;
                 }}),
    Integer(0, "explain-execution-above", {1, kI64 / 1000, "an execution time in us >= 1",
                 [](P& p, std::int64_t v) { p.o.explain_execution_above_us = v; }}),
    Flag(0, "check-options", &O::check_options),
    Text(0, "token-file", kReq, {"the file holding the token",
              [](O& o, const Value& v) { o.token_file = v.value_or(""); }}),
    Text(0, "tls-cert", kReq, {"a PEM certificate file",
              [](O& o, const Value& v) { o.tls_cert_file = v.value_or(""); }}),
    Text(0, "tls-key", kReq, {"a PEM private key file",
              [](O& o, const Value& v) { o.tls_key_file = v.value_or(""); }}),
};

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

// --- After the options: cyclictest's process_options() checks, then the per-thread plan ---

// -h drops the distance, -s/-x/-r pick the wait mode.
void Parser::ResolveModes() {
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
  if (o.timerlat) {
    o.wait_mode = WaitMode::kTimerlat;  // CheckTimerlat refuses it with -r, -s or -x
  } else if (o.posix_timers) {
    o.wait_mode = WaitMode::kPosixTimer;
  } else if (o.system_sleep) {
    o.wait_mode = WaitMode::kNanosleep;
  } else if (o.relative) {
    o.wait_mode = WaitMode::kRelative;
  }
}

Status Parser::ResolveThreadCount() {
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
  if (o.affinity != AffinityMode::kNone && o.affinity_cpus.empty()) {
    return Invalid("no CPU is available for the measurement threads (process affinity is empty)");
  }
  return Status::Ok();
}

// fifo/rr/--priospread without -p default the priority; a priority forces an RT policy.
void Parser::ResolvePriority() {
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
}

Status Parser::PlanThreads() {
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
    if (t.interval_us > kI32) {
      return Invalid("thread " + std::to_string(i) + "'s interval (-i + " + std::to_string(i) +
                     " * -d) exceeds 2147483647 us; lower -i, -d or -t");
    }
    t.phase_ns = o.aligned ? static_cast<std::int64_t>(i) * o.align_offset_us * 1000
                           : (o.secaligned ? o.align_offset_us * 1000 : 0);
    o.threads.push_back(t);
    if (o.priospread) --priority;
  }
  return Status::Ok();
}

Status Parser::Finish() {
  if (oscope_given && !o.verbose) {
    return Invalid("-o/--oscope needs -v/--verbose (it reduces the verbose output)");
  }
  if (o.aligned && o.secaligned) {
    return Invalid("-A/--aligned and --secaligned cannot be combined; choose one");
  }
  ResolveModes();
  RTLOOP_RETURN_IF_ERROR(ResolveThreadCount());
  ResolvePriority();
  RTLOOP_RETURN_IF_ERROR(PlanThreads());
  if (o.spike == 0) o.spike_nodes = 1024;
  return CheckOptionsTogether(o);
}

// --- The words of argv ---

// The words of argv, one at a time, and the next one as a value when an option takes it.
class Words {
 public:
  Words(int argc, const char* const* argv) : argc_(argc), argv_(argv) {}
  bool Next(std::string* word) {
    if (++i_ >= argc_) return false;
    *word = argv_[i_];
    return true;
  }
  // The next word as a value; with `look_ahead_only`, only when it does not start with '-'.
  Value TakeValue(bool look_ahead_only) {
    if (i_ + 1 >= argc_) return std::nullopt;
    const std::string next = argv_[i_ + 1];
    if (look_ahead_only && (next.empty() || next[0] == '-')) return std::nullopt;
    ++i_;
    return next;
  }
  bool AtEnd() const { return i_ + 1 >= argc_; }
  std::string Peek() const { return argv_[i_ + 1]; }

 private:
  int argc_;
  const char* const* argv_;
  int i_ = 0;
};

// --name, --name=value, --name value (required values), --name value (look-ahead optional ones).
Status ParseLongOption(const std::string& word, Words& words, Parser& p) {
  const std::size_t eq = word.find('=');
  const std::string name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  Result<const OptionSpec*> found = FindLong(name);
  if (!found.ok()) return found.status();
  const OptionSpec& spec = **found;
  Value arg;
  if (eq != std::string::npos) arg = word.substr(eq + 1);
  if (spec.arg == Arg::kNone && arg) {
    return Invalid("option --" + std::string(spec.long_name) + " takes no value (got '" + *arg +
                   "')");
  }
  if (spec.arg == Arg::kRequired && !arg) {
    arg = words.TakeValue(false);
    if (!arg) return Invalid("option " + OptionName(spec) + " needs a value");
  }
  if (spec.arg == Arg::kOptional && !arg && spec.look_ahead) arg = words.TakeValue(true);
  return p.Apply(spec, arg);
}

// -x, combined flags (-mq), attached (-i800) and detached (-i 800) values.
Status ParseShortOptions(const std::string& word, Words& words, Parser& p) {
  for (std::size_t j = 1; j < word.size(); ++j) {
    const char c = word[j];
    const OptionSpec* spec = FindShort(c);
    if (spec == nullptr) {
      if (c == 'U') {
        return Invalid(
            "unknown option '-U' (the old -U/--numa was removed from cyclictest in 2018; drop "
            "it)");
      }
      return Invalid("unknown option '-" + std::string(1, c) + "'" +
                     (word.size() > 2 ? " in '" + word + "'" : std::string()));
    }
    Value arg;
    const std::string rest = word.substr(j + 1);
    if (spec->arg == Arg::kRequired) {
      arg = rest.empty() ? words.TakeValue(false) : Value(rest);
      if (!arg) return Invalid("option " + OptionName(*spec) + " needs a value");
      j = word.size();
    } else if (spec->arg == Arg::kOptional) {
      if (!rest.empty()) {
        arg = rest;
      } else if (spec->look_ahead) {
        arg = words.TakeValue(true);
      }
      j = word.size();
    }
    RTLOOP_RETURN_IF_ERROR(p.Apply(*spec, arg));
  }
  return Status::Ok();
}

}  // namespace

Result<CyclicOptions> ParseCyclicOptions(int argc, const char* const* argv,
                                         const MachineCpus& machine) {
  CyclicOptions opts;
  Parser p{machine, opts};
  Words words(argc, argv);
  std::string word;
  while (words.Next(&word)) {
    if (word == "--") {
      if (!words.AtEnd()) {
        return Invalid("unexpected argument '" + words.Peek() +
                       "': rtloop-cyclic takes options only");
      }
      break;
    }
    if (word.size() > 2 && word[0] == '-' && word[1] == '-') {
      RTLOOP_RETURN_IF_ERROR(ParseLongOption(word, words, p));
    } else if (word.size() > 1 && word[0] == '-') {
      RTLOOP_RETURN_IF_ERROR(ParseShortOptions(word, words, p));
    } else {
      return Invalid("unexpected argument '" + word +
                     "': rtloop-cyclic takes options only (values go with their option: -i800, "
                     "-i 800 or --interval=800; --telemetry=ADDR)");
    }
  }
  if (opts.help) return opts;
  RTLOOP_RETURN_IF_ERROR(p.Finish());
  return opts;
}

}  // namespace rtloop::cyclic
