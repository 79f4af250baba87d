// cyclictest-compatible output of rtloop-cyclic: pure formatting functions that turn per-thread
// results into the exact bytes cyclictest 2.4 prints (bench/cyclic/CYCLICTEST-2.4.md §5), plus
// rtloop's additions (JSON key "rtloop", the --percentiles table).
//
//   rtloop::cyclic::ReportFormat fmt;
//   fmt.histogram_buckets = 100;
//   std::vector<rtloop::cyclic::ThreadReport> threads = ...;   // CyclicThreadStats::FillReport() +
//   the runner std::fputs(rtloop::cyclic::FormatHistogram(threads, fmt).c_str(), stdout);
//
// Every function returns a std::string and does no I/O (except CollectSysInfo() and
// FormatJsonTime(), which read the system); golden tests lock the bytes against cyclictest's own
// output (tests/cyclic/golden/).
//
// Units: latency values in ThreadReport (min, act, max, avg_sum, histogram indices, spike and
// break values) are in the run's unit: us, or ns with -N (ReportFormat::nsecs), exactly as
// cyclictest stores them. Fields whose name ends in _ns are always ns.
//
// Threading: plain value types and free functions; not RT-safe (they allocate).
#pragma once

#include <cstdint>
#include <ctime>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rtloop::cyclic {

// The histogram block layout.
enum class HistogramStyle {
  kFull,    // 2.4 (default): every row 0..N-1, zero rows included, a "# Total:" line
  kSparse,  // 2.7+ (--histogram-style=sparse): all-zero rows omitted, no "# Total:" line, -H sum
            // column also for one thread, "# Thread %d: " with a trailing space
};

// How output is formatted; one per run.
struct ReportFormat {
  bool nsecs = false;                   // -N: values in ns (T: Act/Avg become %8ld)
  std::uint32_t histogram_buckets = 0;  // -h/-H N (buckets 0..N-1); 0: no histogram
  bool histofall = false;               // -H: the sum column (2.4: only with more than 1 thread)
  HistogramStyle histogram_style = HistogramStyle::kFull;
  bool smi = false;  // --smi: " SMI:%8ld" on T: lines, "# SMIs:" line, -v column
};

// Wake-up latency percentiles of one thread, in ns (rtloop addition).
struct LatencyPercentiles {
  bool valid = false;  // false: no samples, or not computed; printed as absent / "-"
  std::int64_t p50_ns = 0;
  std::int64_t p90_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t p99_9_ns = 0;
  std::int64_t p99_99_ns = 0;
  std::int64_t p99_999_ns = 0;
  std::int64_t max_ns = 0;
};

// One measurement thread's results, as cyclictest's struct thread_stat + thread_param hold them,
// plus rtloop's additions. Defaults are cyclictest's values before the first sample.
struct ThreadReport {
  // --- cyclictest's fields (run unit: us, or ns with -N) ---
  int index = 0;                 // thread number (T:%2d)
  int tid = 0;                   // kernel TID of the RT thread; 0 before it started
  int priority = 0;              // P:%2d
  std::int64_t interval_us = 0;  // I:%ld, always us
  std::uint64_t cycles = 0;      // C:, samples counted in the statistics (warm-up excluded)
  std::int64_t min = 1000000;    // cyclictest's initial min (printed until the first sample)
  std::int64_t act = 0;          // the last sample
  double avg_sum = 0.0;          // sum of all samples (cyclictest's "avg" accumulator)
  std::int64_t max = 0;
  std::int64_t smi_count = 0;                  // --smi
  int cpu = -1;                                // pinned CPU, -1 when not pinned (JSON "cpu")
  int node = -1;                               // NUMA node, -1 (JSON "node")
  std::vector<std::uint64_t> histogram;        // -h: histogram_buckets counts; empty without -h
  std::uint64_t histogram_overflows = 0;       // samples >= histogram_buckets (or negative)
  std::vector<std::uint64_t> overflow_cycles;  // 0-based cycle indices, at most histogram_buckets
  // --- rtloop additions (JSON "rtloop", --percentiles) ---
  std::string policy = "other";       // "fifo", "rr", "other", "batch", "idle", "deadline"
  std::uint64_t warmup_cycles = 0;    // cycles excluded from the statistics (--warmup)
  std::uint64_t overruns = 0;         // Step() ended after the next release
  std::uint64_t missed_releases = 0;  // releases skipped after overruns
  std::uint64_t ring_drops = 0;       // samples the telemetry ring had no room for
  std::uint64_t verbose_drops = 0;    // -v values overwritten before the printer read them
  std::int64_t execution_min_ns = 0;  // execution time X_k (framework/README.md)
  double execution_avg_ns = 0.0;
  std::int64_t execution_max_ns = 0;
  LatencyPercentiles percentiles;  // wake-up latency percentiles, ns

  // (long)(avg_sum / cycles), 0 without cycles: the Avg of T: lines and "# Avg Latencies".
  std::int64_t TruncatedAvg() const noexcept;
};

// One --spike record.
struct SpikeEvent {
  int thread = 0;          // thread index
  std::int64_t value = 0;  // the sample (run unit)
  std::int64_t ts_us = 0;  // wake-up time in us on the measurement clock (calctime)
};

// The -b outcome.
struct BreakTrace {
  bool hit = false;        // a sample exceeded the limit
  int tid = 0;             // "# Break thread: %d" (the kernel TID, as cyclictest prints it)
  std::int64_t value = 0;  // "# Break value: %llu" (run unit)
};

// uname() and /sys/kernel/realtime, for the JSON "sysinfo" object.
struct SysInfo {
  std::string sysname;
  std::string nodename;
  std::string release;
  std::string version;
  std::string machine;
  bool realtime = false;  // /sys/kernel/realtime reads '1'
};

// The JSON header fields (rt_write_json).
struct JsonRunInfo {
  std::string cmdline;     // argv joined by single spaces (JoinCommandLine)
  std::string start_time;  // FormatJsonTime() at start
  std::string end_time;    // FormatJsonTime() when writing
  int return_code = 0;
  SysInfo sysinfo;
};

// rtloop's per-run additions to the JSON.
struct JsonExtras {
  bool enabled = true;       // false: no "rtloop" key (byte-identical to cyclictest 2.4)
  std::string tool_version;  // rtloop version, e.g. "0.1.0"
};

// --- Live screen, -q summary, status ---

// "policy: %s%s%s: loadavg: %s          \n\n". `second_policy` non-empty adds "/" + it
// (cyclictest shows "other/other" when threads were forced to SCHED_OTHER). `loadavg` is
// /proc/loadavg without its trailing newline.
std::string FormatLiveHeader(std::string_view policy, std::string_view second_policy,
                             std::string_view loadavg);
// "\033[%dA" with num_threads + 2: moves the cursor back over the header and the T: lines.
std::string FormatCursorUp(int num_threads);
// "\033[%dB" with num_threads + 2: what -M prints at exit.
std::string FormatCursorDown(int num_threads);
// One T: line with its "\n" (us or -N widths, " SMI:%8ld" with --smi).
std::string FormatThreadLine(const ThreadReport& thread, const ReportFormat& format);
// All threads' T: lines.
std::string FormatThreadLines(std::span<const ThreadReport> threads, const ReportFormat& format);
// The SIGUSR1 block (stderr): "#---------------------------\n# cyclictest current status:\n",
// the T: lines, "#---------------------------\n".
std::string FormatStatusBlock(std::span<const ThreadReport> threads, const ReportFormat& format);
// "# /dev/cpu_dma_latency set to %dus\n".
std::string FormatDmaLatencyLine(int latency_us);

// --- -v and -o ---

// "%8d:%8lu:%8ld\n" (with --smi: "%8d:%8lu:%8ld%8ld\n").
std::string FormatVerboseLine(int thread, std::uint64_t cycle, std::int64_t value);
std::string FormatVerboseLine(int thread, std::uint64_t cycle, std::int64_t value,
                              std::int64_t smi);

// cyclictest's -v/-o printer state for one thread: every `reduction` samples it prints the
// block's max and the cycle index of that max (-v alone is reduction 1). Quirk kept: the max
// starts at 0 and the index is not reset, so a block of samples <= 0 prints the previous index
// with value 0.
class VerboseReducer {
 public:
  VerboseReducer(int thread, std::uint32_t reduction) noexcept;
  // Feeds one sample; appends a line to `out` when a block completes.
  void Add(std::uint64_t cycle, std::int64_t value, std::string& out);

 private:
  int thread_;
  std::uint32_t reduction_;
  std::uint32_t count_ = 0;
  std::int64_t block_max_ = 0;
  std::uint64_t cycle_of_max_ = 0;
};

// --- End of run ---

// The histogram block (-h/-H/--histfile), "# Histogram\n" through the final empty line, in the
// chosen style. Min/Avg/Max come from the running stats, not from the buckets.
std::string FormatHistogram(std::span<const ThreadReport> threads, const ReportFormat& format);
// "# Thread Ids: %05d...\n", then with a hit "# Break thread: %d\n# Break value: %llu\n".
std::string FormatBreakTrace(std::span<const ThreadReport> threads, const BreakTrace& trace);
// The --spike block: "" when no spike was recorded, else "\n", one "T:%2d Spike:%8ld: TS: %12ld\n"
// per recorded spike (in `spikes` order), "spikes = %d\n\n" with the total (recorded or not).
std::string FormatSpikes(std::span<const SpikeEvent> spikes, std::uint64_t total);
// Merges per-thread spike lists into cyclictest's single list: ordered by ts_us (stable: thread
// order breaks ties), the first `nodes` kept.
std::vector<SpikeEvent> MergeSpikes(std::span<const std::vector<SpikeEvent>> per_thread,
                                    std::uint32_t nodes);

// --- JSON (--json) ---

// The whole document, cyclictest 2.4's bytes (keys "cmdline:" and "rt_test_version:" with their
// colon, "rt_test_version:": "2.40", resolution_in_ns as a 0/1 flag, "histogram": {      } without
// -h, avg "%.2f"; min, max and avg null without cycles, where cyclictest writes 1000000, 0 and
// the invalid -nan), then, unless extras.enabled is false, the "rtloop" object:
// schema_version, unit, and per thread tid, policy, priority, interval_us, cpu, cycles,
// warmup_cycles, overruns, missed_releases, ring_drops, verbose_drops, histogram_overflows,
// latency percentiles (ns) and execution time (ns). Ends with "}\n".
std::string FormatJson(const JsonRunInfo& run, std::span<const ThreadReport> threads,
                       const ReportFormat& format, const JsonExtras& extras);
// The "rtloop" object's schema version.
inline constexpr int kJsonSchemaVersion = 1;
// strftime("%a, %d %b %Y %T %z") in local time, as rt-utils' get_timestamp.
std::string FormatJsonTime(std::time_t t);
// argv joined with single spaces (rt_init's test_cmdline, at most 4095 characters).
std::string JoinCommandLine(int argc, const char* const* argv);
// uname() and /sys/kernel/realtime. Not pure: reads the system.
SysInfo CollectSysInfo();

// --- rtloop additions ---

// The --percentiles table: "# Wake-up latency percentiles (us)\n" (or ns with -N), then per
// thread "T:%2d (%5d)" and " P50:%7lld" ... " P99.999:%7lld" in the run unit (ns values
// truncated to us without -N; "-" when not valid) and " Max:%8lld" (the exact running max), e.g.
// "T: 0 ( 9164) P50:     18 P90:     22 P99:     41 P99.9:    310 P99.99:   1290 P99.999:   1918
//  Max:    1918" on one line.
std::string FormatPercentileTable(std::span<const ThreadReport> threads,
                                  const ReportFormat& format);

}  // namespace rtloop::cyclic
