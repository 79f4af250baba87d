#include "cyclic_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "cyclic_thread_stats.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/sample.h"
#include "rtloop/telemetry/sample_ring.h"

namespace rtloop::cyclic {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;
// A measurement thread's stack (TaskConfig::stack_size) plus its guard page, rounded up.
constexpr std::uint64_t kThreadStackBytes = 512u << 10;
// What gRPC's and civetweb's threads map (8 MiB default stacks) and their libraries grow by.
constexpr std::uint64_t kServerThreadsBytes = 256 * kMiB;
// The collector's, --max-over-time's and -F's threads (8 MiB default stacks), which every run may
// have.
constexpr std::uint64_t kHelperThreadsBytes = 24 * kMiB;
constexpr std::uint64_t kBaseSlackBytes = 64 * kMiB;

// "/proc/<file>" line "<key>: <n> kB" in bytes, or 0.
std::uint64_t ReadKilobytes(const char* file, const std::string& key) {
  std::uint64_t bytes = 0;
  ForEachLine(file, [&](std::string_view line) {
    if (line.substr(0, key.size()) != key) return true;
    unsigned long long kb = 0;
    if (std::sscanf(std::string(line.substr(key.size())).c_str(), " %llu", &kb) == 1) {
      bytes = kb * 1024;
    }
    return false;
  });
  return bytes;
}

std::string Gib(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= 1024 * kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * kMiB));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / kMiB);
  }
  return buf;
}

}  // namespace

MemoryPlan PlanMemory(const CyclicOptions& o) {
  MemoryPlan plan;
  plan.threads = static_cast<int>(o.threads.size());
  CyclicStatsConfig sc;
  sc.histogram_buckets = o.histogram;
  sc.verbose = o.verbose;
  sc.spike_threshold = o.spike;
  sc.spike_nodes = o.spike_nodes;
  const std::uint64_t buckets = o.histogram;
  // The final report holds the histogram and (at worst) as many overflow cycle indices.
  plan.per_thread_bytes = CyclicThreadStats::MemoryBytes(sc) + 2 * buckets * sizeof(std::uint64_t);
  // The telemetry hub of every run (it owns the percentiles): two histograms of --hdr-layout's
  // layout and a ring per task, sized as the runtime sizes it (rate x 2 x its drain period, at
  // least 8192 samples). With --metrics, the windowed statistics' previous reading of both
  // histograms per task, and their merge and export buffers once (bench/footprint/README.md).
  const std::uint64_t histogram = o.hdr_layout.histogram_bytes();
  const std::uint64_t buckets_and_edges = o.hdr_layout.bucket_count() + 2;
  const std::uint64_t per_task = (o.metrics ? 4 : 2) * histogram;
  if (o.metrics) {
    plan.telemetry_bytes = histogram + 2 * buckets_and_edges * sizeof(telemetry::HistogramBucket);
  }
  const std::chrono::nanoseconds drain = TelemetryConfig{}.drain_period;
  for (const ThreadPlan& t : o.threads) {
    const std::chrono::nanoseconds period =
        std::chrono::microseconds(std::max<std::int64_t>(t.interval_us, 1));
    plan.telemetry_bytes +=
        per_task + telemetry::RingCapacityFor(period, drain) * sizeof(telemetry::Sample);
  }
  if (buckets > 0) {
    // One row per bucket: "%06u" and a tab-separated "%06lu" per thread (a sum column with -H).
    const std::uint64_t columns = o.threads.size() + (o.histofall ? 1 : 0);
    plan.output_bytes = buckets * (8 + 7 * columns);
  }
  plan.total_bytes = static_cast<std::uint64_t>(plan.threads) * plan.per_thread_bytes +
                     plan.telemetry_bytes + plan.output_bytes;
  return plan;
}

MemoryLimits ReadMemoryLimits(int threads, bool servers) {
  MemoryLimits limits;
  if (const std::uint64_t available = ReadKilobytes("/proc/meminfo", "MemAvailable:");
      available > 0) {
    limits.mem_available = available;
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    limits.address_space_limit = rl.rlim_cur;
    const std::uint64_t reserved = ReadKilobytes("/proc/self/status", "VmSize:") +
                                   static_cast<std::uint64_t>(threads) * kThreadStackBytes +
                                   kHelperThreadsBytes + (servers ? kServerThreadsBytes : 0) +
                                   kBaseSlackBytes;
    limits.address_space_left = rl.rlim_cur > reserved ? rl.rlim_cur - reserved : 0;
  }
  return limits;
}

Status CheckMemory(const MemoryPlan& plan, const MemoryLimits& limits, const CyclicOptions& o) {
  const bool by_limit = plan.total_bytes > limits.address_space_left;
  const bool by_ram = plan.total_bytes > limits.mem_available;
  if (!by_limit && !by_ram) return Status::Ok();
  std::string need = "-t " + std::to_string(plan.threads) +
                     (o.histogram > 0 ? " -h " + std::to_string(o.histogram) : std::string()) +
                     " needs about " + Gib(plan.total_bytes) + " (" + std::to_string(plan.threads) +
                     " threads x " + Gib(plan.per_thread_bytes) +
                     " of histogram buffers and report";
  if (plan.output_bytes > 0) need += ", plus " + Gib(plan.output_bytes) + " of histogram text";
  if (plan.telemetry_bytes > 0) need += ", plus " + Gib(plan.telemetry_bytes) + " of telemetry";
  need += ")";
  if (by_limit) {
    return Status(StatusCode::kResourceExhausted,
                  need + ", but this process may map only " + Gib(limits.address_space_left) +
                      " more (ulimit -v " + std::to_string(limits.address_space_limit / 1024) +
                      " KiB): lower -h or -t, or raise ulimit -v");
  }
  return Status(StatusCode::kResourceExhausted,
                need + ", but only " + Gib(limits.mem_available) +
                    " of memory is available (MemAvailable): lower -h or -t, or free memory");
}

}  // namespace rtloop::cyclic
