#include "cyclic_report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "rtloop/telemetry/utf8.h"

namespace rtloop::cyclic {
namespace {

// printf-style append; the formats below mirror cyclictest's printf strings (with long long
// casts so the widths and signedness stay exact on every ABI).
[[gnu::format(printf, 2, 3)]] void Appendf(std::string& out, const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<std::size_t>(n) < sizeof(buf)) {
    out.append(buf, static_cast<std::size_t>(n));
    return;
  }
  const std::size_t old = out.size();
  out.resize(old + static_cast<std::size_t>(n) + 1);
  va_start(ap, fmt);
  std::vsnprintf(out.data() + old, static_cast<std::size_t>(n) + 1, fmt, ap);
  va_end(ap);
  out.resize(old + static_cast<std::size_t>(n));
}

long long Ll(std::int64_t v) { return static_cast<long long>(v); }
unsigned long long Ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }
// cyclictest prints its signed longs with %lu in the histogram footer.
unsigned long long AsUnsigned(std::int64_t v) {
  return static_cast<unsigned long long>(static_cast<std::uint64_t>(v));
}

// JSON strings. cyclictest writes them raw; escaping changes nothing for ordinary command lines
// and keeps the document valid JSON and UTF-8 for odd ones (quotes, backslashes, control
// characters, bytes that are not UTF-8: rtloop/telemetry/utf8.h).
using telemetry::AppendJsonString;

std::int64_t ToRunUnit(std::int64_t ns, bool nsecs) { return nsecs ? ns : ns / 1000; }

}  // namespace

std::int64_t ThreadReport::TruncatedAvg() const noexcept {
  if (cycles == 0) return 0;
  return static_cast<std::int64_t>(avg_sum / static_cast<double>(cycles));
}

// --- Live screen, -q summary, status ---

std::string FormatLiveHeader(std::string_view policy, std::string_view second_policy,
                             std::string_view loadavg) {
  std::string out = "policy: ";
  out.append(policy);
  if (!second_policy.empty()) {
    out.push_back('/');
    out.append(second_policy);
  }
  out.append(": loadavg: ");
  out.append(loadavg);
  out.append("          \n\n");
  return out;
}

std::string FormatCursorUp(int num_threads) {
  std::string out;
  Appendf(out, "\033[%dA", num_threads + 2);
  return out;
}

std::string FormatCursorDown(int num_threads) {
  std::string out;
  Appendf(out, "\033[%dB", num_threads + 2);
  return out;
}

std::string FormatThreadLine(const ThreadReport& t, const ReportFormat& format) {
  std::string out;
  const char* fmt =
      format.nsecs ? "T:%2d (%5d) P:%2d I:%lld C:%7llu Min:%7lld Act:%8lld Avg:%8lld Max:%8lld"
                   : "T:%2d (%5d) P:%2d I:%lld C:%7llu Min:%7lld Act:%5lld Avg:%5lld Max:%8lld";
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  Appendf(out, fmt, t.index, t.tid, t.priority, Ll(t.interval_us), Ull(t.cycles), Ll(t.min),
          Ll(t.act), Ll(t.TruncatedAvg()), Ll(t.max));
#pragma GCC diagnostic pop
  if (format.smi) Appendf(out, " SMI:%8lld", Ll(t.smi_count));
  out.push_back('\n');
  return out;
}

std::string FormatThreadLines(std::span<const ThreadReport> threads, const ReportFormat& format) {
  std::string out;
  for (const ThreadReport& t : threads) out += FormatThreadLine(t, format);
  return out;
}

std::string FormatStatusBlock(std::span<const ThreadReport> threads, const ReportFormat& format) {
  std::string out = "#---------------------------\n# cyclictest current status:\n";
  out += FormatThreadLines(threads, format);
  out += "#---------------------------\n";
  return out;
}

std::string FormatDmaLatencyLine(int latency_us) {
  std::string out;
  Appendf(out, "# /dev/cpu_dma_latency set to %dus\n", latency_us);
  return out;
}

// --- -v and -o ---

std::string FormatVerboseLine(int thread, std::uint64_t cycle, std::int64_t value) {
  std::string out;
  Appendf(out, "%8d:%8llu:%8lld\n", thread, Ull(cycle), Ll(value));
  return out;
}

std::string FormatVerboseLine(int thread, std::uint64_t cycle, std::int64_t value,
                              std::int64_t smi) {
  std::string out;
  Appendf(out, "%8d:%8llu:%8lld%8lld\n", thread, Ull(cycle), Ll(value), Ll(smi));
  return out;
}

VerboseReducer::VerboseReducer(int thread, std::uint32_t reduction) noexcept
    : thread_(thread), reduction_(reduction == 0 ? 1 : reduction) {}

void VerboseReducer::Add(std::uint64_t cycle, std::int64_t value, std::string& out) {
  if (value > block_max_) {
    block_max_ = value;
    cycle_of_max_ = cycle;
  }
  if (++count_ == reduction_) {
    Appendf(out, "%8d:%8llu:%8lld\n", thread_, Ull(cycle_of_max_), Ll(block_max_));
    count_ = 0;
    block_max_ = 0;
  }
}

// --- End of run ---

namespace {

// The histogram block's layout choices (2.4 or 2.7+).
struct HistogramLayout {
  bool sparse = false;      // 2.7+: no zero rows, no "# Total:"
  bool sum_rows = false;    // -H's row sum (2.4: only for more than one thread; 2.7+ always)
  bool sum_footer = false;  // -H's footer columns (more than one thread)
};

// The rows "%06u %06lu\t%06lu...": appends them and returns the column totals (the last one is
// the -H sum).
std::vector<std::uint64_t> AppendHistogramRows(std::span<const ThreadReport> threads,
                                               std::uint32_t buckets, const HistogramLayout& l,
                                               std::string& out) {
  const std::size_t n = threads.size();
  auto count = [&](std::size_t thread, std::uint32_t bucket) -> std::uint64_t {
    const std::vector<std::uint64_t>& h = threads[thread].histogram;
    return bucket < h.size() ? h[bucket] : 0;
  };
  std::vector<std::uint64_t> totals(n + 1, 0);
  for (std::uint32_t b = 0; b < buckets; ++b) {
    std::uint64_t row_sum = 0;
    for (std::size_t j = 0; j < n; ++j) row_sum += count(j, b);
    if (l.sparse && row_sum == 0) continue;
    Appendf(out, "%06u ", b);
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint64_t v = count(j, b);
      if (j != 0) out.push_back('\t');
      Appendf(out, "%06llu", Ull(v));
      totals[j] += v;
    }
    if (l.sum_rows) {
      Appendf(out, "\t%06llu", Ull(row_sum));
      totals[n] += row_sum;
    }
    out.push_back('\n');
  }
  return totals;
}

// "# Total:" (2.4), then the Min/Avg/Max Latencies and Histogram Overflows lines.
void AppendHistogramSummary(std::span<const ThreadReport> threads,
                            const std::vector<std::uint64_t>& totals, const HistogramLayout& l,
                            std::string& out) {
  const std::size_t n = threads.size();
  if (!l.sparse) {
    out += "# Total:";
    for (std::size_t j = 0; j < n; ++j) Appendf(out, " %09llu", Ull(totals[j]));
    if (l.sum_footer) Appendf(out, " %09llu", Ull(totals[n]));
    out.push_back('\n');
  }
  out += "# Min Latencies:";
  for (const ThreadReport& t : threads) Appendf(out, " %05llu", AsUnsigned(t.min));
  out += "\n# Avg Latencies:";
  for (const ThreadReport& t : threads) Appendf(out, " %05llu", AsUnsigned(t.TruncatedAvg()));
  out += "\n# Max Latencies:";
  std::uint64_t max_max = 0;
  for (const ThreadReport& t : threads) {
    Appendf(out, " %05llu", AsUnsigned(t.max));
    max_max = std::max<std::uint64_t>(max_max, static_cast<std::uint64_t>(t.max));
  }
  if (l.sum_footer) Appendf(out, " %05llu", Ull(max_max));
  out += "\n# Histogram Overflows:";
  std::uint64_t all_overflows = 0;
  for (const ThreadReport& t : threads) {
    Appendf(out, " %05llu", Ull(t.histogram_overflows));
    all_overflows += t.histogram_overflows;
  }
  if (l.sum_footer) Appendf(out, " %05llu", Ull(all_overflows));
  out += "\n";
}

// "# Histogram Overflow at cycle number:" and one "# Thread N:" line per thread.
void AppendOverflowCycles(std::span<const ThreadReport> threads, std::uint32_t buckets,
                          const HistogramLayout& l, std::string& out) {
  out += "# Histogram Overflow at cycle number:\n";
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const ThreadReport& t = threads[i];
    const std::size_t listed = std::min<std::size_t>(t.overflow_cycles.size(), buckets);
    if (l.sparse) {
      // 2.10's hist_print_oflows: space-separated after "# Thread %d: ", and " # N others"
      // whenever the list is full (also when nothing was left out).
      Appendf(out, "# Thread %zu: ", i);
      for (std::size_t j = 0; j < listed; ++j) {
        if (j != 0) out.push_back(' ');
        Appendf(out, "%05llu", Ull(t.overflow_cycles[j]));
      }
      if (t.histogram_overflows >= buckets) {
        Appendf(out, " # %05llu others", Ull(t.histogram_overflows - buckets));
      }
    } else {
      Appendf(out, "# Thread %zu:", i);
      for (std::size_t j = 0; j < listed; ++j) Appendf(out, " %05llu", Ull(t.overflow_cycles[j]));
      if (listed < t.histogram_overflows) {
        Appendf(out, " # %05llu others", Ull(t.histogram_overflows - listed));
      }
    }
    out.push_back('\n');
  }
}

}  // namespace

std::string FormatHistogram(std::span<const ThreadReport> threads, const ReportFormat& format) {
  HistogramLayout layout;
  layout.sparse = format.histogram_style == HistogramStyle::kSparse;
  layout.sum_rows = format.histofall && (layout.sparse || threads.size() > 1);
  layout.sum_footer = format.histofall && threads.size() > 1;
  const std::uint32_t buckets = format.histogram_buckets;
  std::string out = "# Histogram\n";
  out.reserve(out.size() +
              (layout.sparse ? 64 : static_cast<std::size_t>(buckets) * (8 + 7 * threads.size())) +
              512);
  const std::vector<std::uint64_t> totals = AppendHistogramRows(threads, buckets, layout, out);
  AppendHistogramSummary(threads, totals, layout, out);
  AppendOverflowCycles(threads, buckets, layout, out);
  if (format.smi) {
    out += "# SMIs:";
    for (const ThreadReport& t : threads) Appendf(out, " %05llu", AsUnsigned(t.smi_count));
    out.push_back('\n');
  }
  out.push_back('\n');
  return out;
}

std::string FormatBreakTrace(std::span<const ThreadReport> threads, const BreakTrace& trace) {
  std::string out = "# Thread Ids:";
  for (const ThreadReport& t : threads) Appendf(out, " %05d", t.tid);
  out.push_back('\n');
  if (trace.hit && trace.tid != 0) {
    Appendf(out, "# Break thread: %d\n", trace.tid);
    Appendf(out, "# Break value: %llu\n", AsUnsigned(trace.value));
  }
  return out;
}

std::string FormatSpikes(std::span<const SpikeEvent> spikes, std::uint64_t total) {
  if (spikes.empty()) return {};
  std::string out = "\n";
  for (const SpikeEvent& s : spikes) {
    Appendf(out, "T:%2d Spike:%8lld: TS: %12lld\n", s.thread, Ll(s.value), Ll(s.ts_us));
  }
  Appendf(out, "spikes = %llu\n\n", Ull(total));
  return out;
}

std::vector<SpikeEvent> MergeSpikes(std::span<const std::vector<SpikeEvent>> per_thread,
                                    std::uint32_t nodes) {
  std::vector<SpikeEvent> all;
  for (const std::vector<SpikeEvent>& list : per_thread)
    all.insert(all.end(), list.begin(), list.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const SpikeEvent& a, const SpikeEvent& b) { return a.ts_us < b.ts_us; });
  if (all.size() > nodes) all.resize(nodes);
  return all;
}

// --- JSON ---

namespace {

// rt_write_json()'s header, up to the "thread" object.
void AppendJsonHeader(const JsonRunInfo& run, std::size_t threads, bool nsecs, std::string& out) {
  out += "{\n  \"file_version\": 1,\n  \"cmdline:\": ";
  AppendJsonString(out, run.cmdline);
  out += ",\n  \"rt_test_version:\": \"2.40\",\n  \"start_time\": ";
  AppendJsonString(out, run.start_time);
  out += ",\n  \"end_time\": ";
  AppendJsonString(out, run.end_time);
  Appendf(out, ",\n  \"return_code\": %d,\n  \"sysinfo\": {\n", run.return_code);
  const std::pair<const char*, const std::string*> sys[] = {{"sysname", &run.sysinfo.sysname},
                                                            {"nodename", &run.sysinfo.nodename},
                                                            {"release", &run.sysinfo.release},
                                                            {"version", &run.sysinfo.version},
                                                            {"machine", &run.sysinfo.machine}};
  for (const auto& [key, value] : sys) {
    Appendf(out, "    \"%s\": ", key);
    AppendJsonString(out, *value);
    out += ",\n";
  }
  Appendf(out, "    \"realtime\": %d\n  },\n", run.sysinfo.realtime ? 1 : 0);
  Appendf(out, "  \"num_threads\": %zu,\n  \"resolution_in_ns\": %u,\n  \"thread\": {\n", threads,
          nsecs ? 1u : 0u);
}

// write_stats()'s object of thread `i`.
void AppendJsonThread(const ThreadReport& t, std::size_t i, bool last, std::string& out) {
  Appendf(out, "    \"%zu\": {\n      \"histogram\": {", i);
  bool any = false;
  for (std::size_t b = 0; b < t.histogram.size(); ++b) {
    if (t.histogram[b] == 0) continue;
    Appendf(out, "%s        \"%zu\": %llu", any ? ",\n" : "\n", b, Ull(t.histogram[b]));
    any = true;
  }
  if (any) out.push_back('\n');
  out += "      },\n";
  // Without cycles there is no min, max or avg: null (cyclictest prints its initial values and
  // "-nan", which is not JSON).
  Appendf(out, "      \"cycles\": %llu,\n", Ull(t.cycles));
  if (t.cycles > 0) {
    Appendf(out, "      \"min\": %lld,\n      \"max\": %lld,\n      \"avg\": %.2f,\n", Ll(t.min),
            Ll(t.max), t.avg_sum / static_cast<double>(t.cycles));
  } else {
    out += "      \"min\": null,\n      \"max\": null,\n      \"avg\": null,\n";
  }
  Appendf(out, "      \"cpu\": %d,\n      \"node\": %d\n    }%s\n", t.cpu, t.node, last ? "" : ",");
}

// The "rtloop" object's entry of thread `i`.
void AppendRtloopThread(const ThreadReport& t, std::size_t i, bool last, std::string& out) {
  Appendf(out, "      \"%zu\": {\n        \"tid\": %d,\n        \"policy\": ", i, t.tid);
  AppendJsonString(out, t.policy);
  Appendf(out,
          ",\n        \"priority\": %d,\n        \"interval_us\": %lld,\n"
          "        \"cpu\": %d,\n        \"cycles\": %llu,\n        \"warmup_cycles\": %llu,\n"
          "        \"histogram_overflows\": %llu,\n        \"overruns\": %llu,\n"
          "        \"missed_releases\": %llu,\n        \"ring_drops\": %llu,\n"
          "        \"verbose_drops\": %llu,\n",
          t.priority, Ll(t.interval_us), t.cpu, Ull(t.cycles), Ull(t.warmup_cycles),
          Ull(t.histogram_overflows), Ull(t.overruns), Ull(t.missed_releases), Ull(t.ring_drops),
          Ull(t.verbose_drops));
  const LatencyPercentiles& p = t.percentiles;
  if (p.valid) {
    Appendf(out,
            "        \"latency_ns\": {\"p50\": %lld, \"p90\": %lld, \"p99\": %lld, "
            "\"p99.9\": %lld, \"p99.99\": %lld, \"p99.999\": %lld, \"max\": %lld},\n",
            Ll(p.p50_ns), Ll(p.p90_ns), Ll(p.p99_ns), Ll(p.p99_9_ns), Ll(p.p99_99_ns),
            Ll(p.p99_999_ns), Ll(p.max_ns));
  } else {
    out += "        \"latency_ns\": null,\n";
  }
  if (t.cycles > 0) {
    Appendf(out, "        \"execution_ns\": {\"min\": %lld, \"avg\": %.1f, \"max\": %lld}\n",
            Ll(t.execution_min_ns), t.execution_avg_ns, Ll(t.execution_max_ns));
  } else {
    out += "        \"execution_ns\": null\n";
  }
  Appendf(out, "      }%s\n", last ? "" : ",");
}

}  // namespace

std::string FormatJson(const JsonRunInfo& run, std::span<const ThreadReport> threads,
                       const ReportFormat& format, const JsonExtras& extras) {
  std::string out;
  AppendJsonHeader(run, threads.size(), format.nsecs, out);
  for (std::size_t i = 0; i < threads.size(); ++i) {
    AppendJsonThread(threads[i], i, i + 1 == threads.size(), out);
  }
  if (!extras.enabled) {
    out += "  }\n}\n";
    return out;
  }
  out += "  },\n  \"rtloop\": {\n";
  Appendf(out, "    \"schema_version\": %d,\n    \"tool\": \"rtloop-cyclic\",\n",
          kJsonSchemaVersion);
  out += "    \"version\": ";
  AppendJsonString(out, extras.tool_version);
  Appendf(out, ",\n    \"unit\": \"%s\",\n    \"thread\": {\n", format.nsecs ? "ns" : "us");
  for (std::size_t i = 0; i < threads.size(); ++i) {
    AppendRtloopThread(threads[i], i, i + 1 == threads.size(), out);
  }
  out += "    }\n  }\n}\n";
  return out;
}

std::string FormatJsonTime(std::time_t t) {
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return {};
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof(buf), "%a, %d %b %Y %T %z", &tm);
  return std::string(buf, n);
}

std::string JoinCommandLine(int argc, const char* const* argv) {
  // rt_init(): stop before the line would reach MAX_COMMAND_LINE (4096) bytes.
  constexpr std::size_t kMaxCommandLine = 4096;
  std::string out;
  std::size_t offset = 0;
  for (int i = 0; i < argc;) {
    const std::size_t len = std::strlen(argv[i]);
    if (offset + len + 1 >= kMaxCommandLine) break;
    out += argv[i];
    ++i;
    if (i < argc) out.push_back(' ');
    offset += len + 1;
  }
  return out;
}

SysInfo CollectSysInfo() {
  SysInfo info;
  utsname uts{};
  if (uname(&uts) == 0) {
    info.sysname = uts.sysname;
    info.nodename = uts.nodename;
    info.release = uts.release;
    info.version = uts.version;
    info.machine = uts.machine;
  }
  if (std::FILE* f = std::fopen("/sys/kernel/realtime", "r")) {
    char c = 0;
    info.realtime = std::fread(&c, 1, 1, f) == 1 && c == '1';
    std::fclose(f);
  }
  return info;
}

// --- rtloop additions ---

std::string FormatPercentileTable(std::span<const ThreadReport> threads,
                                  const ReportFormat& format) {
  std::string out;
  Appendf(out, "# Wake-up latency percentiles (%s)\n", format.nsecs ? "ns" : "us");
  for (const ThreadReport& t : threads) {
    Appendf(out, "T:%2d (%5d)", t.index, t.tid);
    const LatencyPercentiles& p = t.percentiles;
    const std::pair<const char*, std::int64_t> cols[] = {
        {"P50", p.p50_ns},     {"P90", p.p90_ns},       {"P99", p.p99_ns},
        {"P99.9", p.p99_9_ns}, {"P99.99", p.p99_99_ns}, {"P99.999", p.p99_999_ns}};
    for (const auto& [name, ns] : cols) {
      if (p.valid) {
        Appendf(out, " %s:%7lld", name, Ll(ToRunUnit(ns, format.nsecs)));
      } else {
        Appendf(out, " %s:%7s", name, "-");
      }
    }
    // Max is the exact running max (the T: line's), not a histogram bucket bound.
    if (t.cycles > 0) {
      Appendf(out, " Max:%8lld\n", Ll(t.max));
    } else {
      Appendf(out, " Max:%8s\n", "-");
    }
  }
  return out;
}

}  // namespace rtloop::cyclic
