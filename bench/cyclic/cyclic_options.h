// rtloop-cyclic's command line: cyclictest 2.4's options (bench/cyclic/CYCLICTEST-2.4.md §3) with
// the same spelling and semantics, rtloop's extensions (long options only) and strict validation.
//
//   rtloop::cyclic::MachineCpus machine = rtloop::cyclic::MachineCpus::Read();
//   rtloop::Result<rtloop::cyclic::CyclicOptions> opts =
//       rtloop::cyclic::ParseCyclicOptions(argc, argv, machine);
//   if (!opts.ok()) return rtloop::cyclic::PrintUsageError(opts.status());   // exit status 2
//   for (const auto& t : opts->threads) ...                 // the resolved per-thread plan
//
// Accepted forms, as getopt_long + cyclictest's own look-ahead accept them: combined short flags
// (-Sp99, -mnq), attached and detached values (-i800, -i 800, --interval=800, --interval 800),
// unique prefixes of long options (--int=800), and the optional arguments of -a, -t, -A and
// --secaligned either attached (-t4, --threads=4) or as the next word when that word does not start
// with '-' (-t 4, -a 2-3,0; "-t -p99" gives -t no number).
//
// Deliberate deviations from 2.4: an unknown option or a bad value is an error (Status, exit 2)
// naming the option and the problem, instead of the help text and exit 0/1; -n is accepted as a
// no-op with a note; -h above 1000000, -t 0, -D 5x, -l -3 and similar values that 2.4 silently
// bends are errors; a stray non-option word is an error; --spike-nodes works in either order with
// --spike. Output paths (--json, --histfile, --record, --max-over-time, -F) are checked here with
// output_file.h's rules (a FIFO, /dev/full, /proc, a missing directory, a name too long, two
// outputs on one file, -F on an existing file: errors), as are the telemetry address and the token
// and TLS files, and a --warmup that would leave a thread of a -D run without a counted cycle.
//
// Where it is: the parser in cyclic_options.cc (one table row per option), the value parsers
// (strict numbers, CPU sets, durations) in cyclic_option_values.cc, the checks across options in
// cyclic_option_checks.cc, --help in cyclic_usage.cc.
//
// Threading: plain functions and value types. Not RT-safe (allocates, reads /sys).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cyclic_report.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/time.h"
#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop::cyclic {

// Exit statuses of rtloop-cyclic (also in --help and bench/cyclic/README.md). When several apply,
// the highest in this order wins: kExitFatal, kExitOutput, kExitThreshold.
inline constexpr int kExitOk = 0;         // normal end, including a -b break
inline constexpr int kExitFatal = 1;      // a runtime error (privilege, system call, memory)
inline constexpr int kExitUsage = 2;      // bad command line: nothing measured, no file made
inline constexpr int kExitThreshold = 3;  // a --fail-* bound was breached
inline constexpr int kExitOutput = 4;     // a result could not be written completely (--json,
                                          // --histfile, --record, --max-over-time, stdout);
                                          // stderr says which

// The CPUs of this machine that option validation needs. Injected so tests can describe machines
// they do not run on.
struct MachineCpus {
  int configured = 0;         // CPUs the kernel knows (cyclictest's "Max CPUs")
  std::vector<int> online;    // online CPUs, ascending
  std::vector<int> allowed;   // the process's affinity (sched_getaffinity), ascending
  std::vector<int> isolated;  // isolated CPUs, ascending: -a may name them though outside
                              // `allowed` (rtloop::PinnableCpus)
  // Reads sysconf, /sys/devices/system/cpu/online and isolated, and sched_getaffinity.
  static MachineCpus Read();
};

// Parses a CPU set as libnuma's numa_parse_cpustring_all does for cyclictest -a: "2", "2-3,0",
// "all", a leading '!' (every allowed CPU except those) or '+' (indices into the allowed CPUs).
// Returns the CPUs ascending, each one online and allowed; InvalidArgument naming the bad part.
Result<std::vector<int>> ParseCpuSet(const std::string& text, const MachineCpus& machine);

// -D's value: a whole number with an optional suffix s/m/h/d in either case (none means seconds).
// Returns seconds; InvalidArgument for anything else (fractions included).
Result<std::int64_t> ParseDurationSeconds(const std::string& text);

// How threads get their CPUs.
enum class AffinityMode {
  kNone,     // neither -a nor -S: threads float (the 2.5+ behaviour)
  kAllCpus,  // -a without a set, or -S: thread i on the (i mod n)-th allowed CPU
  kCpuSet,   // -a CPUSET: thread i on the (i mod n)-th CPU of the set; the main thread too
};

// One --fail-percentile=P:US bound.
struct PercentileBound {
  double percentile = 99.0;  // 0 < P <= 100
  std::int64_t limit_us = 0;
  std::string text;  // as given, for messages
};

// The resolved plan of one measurement thread.
struct ThreadPlan {
  int index = 0;
  int cpu = -1;                              // -1: not pinned
  SchedPolicy policy = SchedPolicy::kOther;  // effective (cyclictest forces OTHER at priority 0)
  int priority = 0;                          // P:
  std::int64_t interval_us = 1000;           // I: (i + N*d unless -h)
  std::int64_t phase_ns = 0;                 // offset of the first release (-A N: N*offset)
};

struct CyclicOptions {
  // ---- cyclictest options, as given ----
  AffinityMode affinity = AffinityMode::kNone;
  std::vector<int> affinity_cpus;    // kCpuSet: the set; kAllCpus: the allowed CPUs
  bool smp = false;                  // -S
  std::vector<int> main_affinity;    // --mainaffinity; empty: not given
  bool aligned = false;              // -A
  bool secaligned = false;           // --secaligned
  std::int64_t align_offset_us = 0;  // -A USEC / --secaligned USEC
  std::int64_t breaktrace = 0;       // -b, run unit (us, or ns with -N); 0: off
  Clock clock = Clock::kMonotonic;   // -c
  bool default_system = false;       // --default-system
  std::int64_t distance_us = 500;    // -d (0 when -h is given)
  bool distance_given = false;
  std::int64_t duration_s = 0;               // -D; 0: no limit
  std::string fifo_path;                     // -F
  std::uint32_t histogram = 0;               // -h/-H buckets; 0: off
  bool histofall = false;                    // -H
  std::string histfile;                      // --histfile
  std::int64_t interval_us = 1000;           // -i
  std::string json_path;                     // --json ("-": stdout)
  bool laptop = false;                       // --laptop
  std::int32_t latency_us = 0;               // --latency (negative -> 0)
  std::uint64_t loops = 0;                   // -l; 0: endless
  bool mlockall = false;                     // -m
  bool refresh_on_max = false;               // -M
  bool nsecs = false;                        // -N
  std::uint32_t oscope = 1;                  // -o
  int priority = 0;                          // -p after defaulting
  SchedPolicy policy = SchedPolicy::kOther;  // --policy / -p, after cyclictest's checks
  std::string policy_name = "other";         // as the live header shows it (e.g. "batch")
  bool priospread = false;
  bool quiet = false;                        // -q
  bool relative = false;                     // -r
  bool resolution = false;                   // -R
  bool system_sleep = false;                 // -s (nanosleep)
  bool posix_timers = false;                 // -x
  bool smi = false;                          // --smi
  std::int64_t spike = 0;                    // --spike trigger, run unit; 0: off
  std::uint32_t spike_nodes = 1024;          // --spike-nodes
  int num_threads = 1;                       // -t / -S, resolved
  bool tracemark = false;                    // --tracemark
  bool unbuffered = false;                   // -u
  bool verbose = false;                      // -v
  bool dbg_cyclictest = false;               // --dbg_cyclictest
  WaitMode wait_mode = WaitMode::kAbsolute;  // from -r, -s, -x, --timerlat

  // ---- rtloop extensions ----
  bool timerlat = false;                      // --timerlat: wait on the kernel's timerlat_fd
  bool telemetry = false;                     // --telemetry[=ADDR]
  std::string telemetry_address;              // empty: the server's default (127.0.0.1)
  std::string token_file;                     // --token-file=FILE (--telemetry and/or --metrics)
  std::string tls_cert_file;                  // --tls-cert=FILE (with --tls-key)
  std::string tls_key_file;                   // --tls-key=FILE (with --tls-cert)
  bool metrics = false;                       // --metrics[=ADDR]: Prometheus + live page
  std::string metrics_address;                // empty: the HTTP default (127.0.0.1:9101)
  std::string record_path;                    // --record=FILE
  bool percentiles = false;                   // --percentiles
  std::optional<std::int64_t> fail_above_us;  // --fail-above=US
  std::vector<PercentileBound> fail_percentiles;           // --fail-percentile=P:US (repeatable)
  std::optional<std::uint64_t> fail_missed;                // --fail-missed=N
  std::uint64_t warmup = 0;                                // --warmup=N
  HistogramStyle histogram_style = HistogramStyle::kFull;  // --histogram-style
  std::string max_over_time_path;                          // --max-over-time=FILE (max_over_time.h)
  std::int64_t max_window_ms = 1000;                       // --max-window=MS
  bool keep_distance = false;  // --keep-distance: -d still applies under -h
  // --hdr-layout=P:R: the telemetry histograms' precision and range bits (the percentiles').
  telemetry::HistogramLayout hdr_layout{};
  // --explain=FILE ("-": stdout): why the late cycles were late, as JSON (cyclic_explain.h), and
  // a summary after the run. --explain-above=US: the wake-up latency above which a cycle is
  // explained (default 100); --explain-execution-above=US: the execution time (default: not).
  std::string explain_path;
  std::optional<std::int64_t> explain_above_us;
  std::optional<std::int64_t> explain_execution_above_us;
  bool help = false;  // --help or -?: print UsageText() and exit 0
  // --check-options: the whole command line checked as for a run (exit 2 with the message), then
  // exit 0 measuring nothing, opening and creating nothing: how rtloop-bench checks the
  // measurement it will start before it starts anything.
  bool check_options = false;

  // ---- derived ----
  std::vector<ThreadPlan> threads;  // one per measurement thread
  // Lines (each ending in '\n') cyclictest prints while parsing, in order: WARN:s, "defaulting
  // realtime priority to N", the -n note. For stderr.
  std::vector<std::string> stderr_notes;
  // stdout lines printed during parsing ("Using N cpus." when -v precedes -a CPUSET).
  std::vector<std::string> stdout_notes;
};

// Parses argv (argv[0] is the program name). On success the options are validated and
// `threads` is resolved. On failure: InvalidArgument with one line, without the program name,
// e.g. "invalid value '0' for -i/--interval: expected an interval in us >= 1".
Result<CyclicOptions> ParseCyclicOptions(int argc, const char* const* argv,
                                         const MachineCpus& machine);

// The --help text (stdout).
std::string UsageText();

// Prints "rtloop-cyclic: <message>\nTry 'rtloop-cyclic --help' for the list of options.\n" to
// stderr (control characters in the message escaped: one line whatever a value held) and returns
// kExitUsage.
int PrintUsageError(const Status& status);

}  // namespace rtloop::cyclic
