#include "top_render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>

namespace rtloop::telemetry::top {
namespace {

std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string CpuList(const google::protobuf::RepeatedField<std::int32_t>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  int i = 0;
  while (i < cpus.size()) {
    int j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

const char* PolicyName(v1::SchedPolicy p) {
  switch (p) {
    case v1::SCHED_POLICY_OTHER:
      return "other";
    case v1::SCHED_POLICY_BATCH:
      return "batch";
    case v1::SCHED_POLICY_IDLE:
      return "idle";
    case v1::SCHED_POLICY_FIFO:
      return "fifo";
    case v1::SCHED_POLICY_RR:
      return "rr";
    case v1::SCHED_POLICY_DEADLINE:
      return "deadline";
    default:
      return "?";
  }
}

const char* StateName(v1::TaskState s) {
  switch (s) {
    case v1::TASK_STATE_CREATED:
      return "created";
    case v1::TASK_STATE_STARTING:
      return "starting";
    case v1::TASK_STATE_RUNNING:
      return "running";
    case v1::TASK_STATE_STOPPED:
      return "stopped";
    case v1::TASK_STATE_FAULT:
      return "FAULT";
    default:
      return "?";
  }
}

// ns -> µs with one decimal, right-aligned in `width`.
std::string Us(double ns, int width = 8) { return Format("%*.1f", width, ns / 1000.0); }

std::int64_t PercentileNs(const v1::LatencyStats& stats, double p) {
  for (const v1::Percentile& q : stats.percentiles()) {
    if (std::fabs(q.percentile() - p) < 1e-9) return q.value_ns();
  }
  return 0;
}

std::string Period(std::int64_t ns) {
  if (ns % 1'000'000 == 0) return Format("%" PRId64 "ms", ns / 1'000'000);
  if (ns % 1'000 == 0) return Format("%" PRId64 "us", ns / 1'000);
  return Format("%" PRId64 "ns", ns);
}

std::string Duration(std::int64_t ns) {
  const std::int64_t s = ns / 1'000'000'000;
  return Format("%" PRId64 ":%02" PRId64 ":%02" PRId64, s / 3600, (s / 60) % 60, s % 60);
}

std::string BinLabel(std::size_t i) {
  constexpr std::size_t kBins = std::size(kBinEdgesUs);
  if (i < kBins) return Format("<%" PRId64 "us", kBinEdgesUs[i]);
  return Format(">=%" PRId64 "us", kBinEdgesUs[kBins - 1]);
}

const v1::Histogram* FindHistogram(const v1::GetStatsResponse& stats, std::uint32_t task,
                                   v1::Quantity quantity) {
  for (const v1::Histogram& h : stats.histograms()) {
    if (h.task_id() == task && h.quantity() == quantity) return &h;
  }
  return nullptr;
}

}  // namespace

std::vector<LatencyBin> BinLatency(const v1::Histogram& histogram) {
  constexpr std::size_t kBins = std::size(kBinEdgesUs);
  std::vector<LatencyBin> bins(kBins + 1);
  for (std::size_t i = 0; i < kBins; ++i) bins[i].upper_us = kBinEdgesUs[i];
  for (const v1::HistogramBucket& b : histogram.buckets()) {
    // A bucket goes to the bin of its lower bound (buckets are narrow against these bins).
    std::size_t i = 0;
    while (i < kBins && b.lower_ns() >= kBinEdgesUs[i] * 1000) ++i;
    bins[i].count += b.count();
  }
  return bins;
}

std::string RenderText(const Snapshot& snap, bool show_histograms, std::int64_t now_unix_ns) {
  std::string out;
  const v1::SystemInfo& sys = snap.system.system();
  const std::int64_t now_ns = now_unix_ns >= 0
                                  ? now_unix_ns
                                  : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
  const std::time_t now_s = static_cast<std::time_t>(now_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&now_s, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  out += Format("rtloop-top  %s  %s  rtloop %s  up %s  streams %u\n", snap.address.c_str(), when,
                snap.system.rtloop_version().c_str(),
                snap.system.process_start_unix_ns() > 0
                    ? Duration(now_ns - snap.system.process_start_unix_ns()).c_str()
                    : "?",
                snap.stats.open_streams());
  out += Format("host %s  kernel %s %s  %s\n", sys.host_name().c_str(),
                sys.kernel_release().c_str(), sys.kernel_version().c_str(), sys.machine().c_str());
  const std::int64_t dma = snap.system.cpu_dma_latency_us();
  out += Format(
      "preempt %s  PREEMPT_RT %s  CPUs online %s  isolated %s  affinity %s  "
      "cpu_dma_latency %s\n",
      sys.preempt_model().c_str(), sys.realtime() ? "yes" : "no",
      CpuList(sys.online_cpus()).c_str(), CpuList(sys.isolated_cpus()).c_str(),
      CpuList(sys.affinity_cpus()).c_str(),
      dma < 0             ? "unknown"
      : dma >= 2000000000 ? "none"
                          : (std::to_string(dma) + "us").c_str());
  out += "\n";
  out +=
      Format("%3s %-14s %-10s %7s %-8s %12s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %9s %9s\n",
             "ID", "NAME", "POLICY", "PERIOD", "STATE", "CYCLES", "LAT_MIN", "LAT_AVG", "LAT_P99",
             "P99.99", "LAT_MAX", "EXEC_AVG", "EXEC_MAX", "JIT_MIN", "JIT_MAX", "OVERRUNS",
             "MISSED", "DROPS", "LOSS");
  std::map<std::uint32_t, const v1::TaskInfo*> infos;
  for (const v1::TaskInfo& t : snap.tasks.tasks()) infos[t.task().id()] = &t;
  std::map<std::uint32_t, std::uint64_t> loss;
  for (const v1::StreamLoss& l : snap.stats.stream_loss()) loss[l.task_id()] = l.lost();
  for (const v1::TaskStats& t : snap.stats.tasks()) {
    const v1::TaskInfo* info = infos.count(t.task_id()) ? infos[t.task_id()] : nullptr;
    std::string policy = "?";
    std::string period = "?";
    if (info != nullptr) {
      policy = PolicyName(info->effective_policy());
      if (info->effective_priority() > 0)
        policy += "/" + std::to_string(info->effective_priority());
      if (info->non_rt_fallback()) policy += "!";
      period = Period(info->task().period_ns());
    }
    out += Format(
        "%3u %-14.14s %-10s %7s %-8s %12" PRIu64 " %s %s %s %s %s %s %s %s %s %9" PRIu64
        " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 "\n",
        t.task_id(), t.task_name().c_str(), policy.c_str(), period.c_str(), StateName(t.state()),
        t.cycles(), Us(static_cast<double>(t.latency().min_ns())).c_str(),
        Us(t.latency().avg_ns()).c_str(),
        Us(static_cast<double>(PercentileNs(t.latency(), 99.0))).c_str(),
        Us(static_cast<double>(PercentileNs(t.latency(), 99.99))).c_str(),
        Us(static_cast<double>(t.latency().max_ns())).c_str(), Us(t.execution().avg_ns()).c_str(),
        Us(static_cast<double>(t.execution().max_ns())).c_str(),
        Us(static_cast<double>(t.jitter_min_ns())).c_str(),
        Us(static_cast<double>(t.jitter_max_ns())).c_str(), t.overruns(), t.missed_releases(),
        t.ring_dropped(), loss[t.task_id()]);
  }
  if (show_histograms) {
    for (const v1::TaskStats& t : snap.stats.tasks()) {
      const v1::Histogram* h = FindHistogram(snap.stats, t.task_id(), v1::QUANTITY_WAKEUP_LATENCY);
      if (h == nullptr) continue;
      const std::vector<LatencyBin> bins = BinLatency(*h);
      std::uint64_t total = 0;
      for (const LatencyBin& b : bins) total += b.count;
      out += Format("\nwake-up latency, task %u \"%s\" (bar: log10 of the count)\n", t.task_id(),
                    t.task_name().c_str());
      for (std::size_t i = 0; i < bins.size(); ++i) {
        const std::uint64_t c = bins[i].count;
        const int bar = c == 0 ? 0 : 1 + static_cast<int>(std::log10(static_cast<double>(c)) * 4);
        std::string line =
            Format("  %8s %12" PRIu64 " %6.2f%% %s", BinLabel(i).c_str(), c,
                   total ? 100.0 * static_cast<double>(c) / static_cast<double>(total) : 0.0,
                   std::string(static_cast<std::size_t>(std::min(bar, 40)), '#').c_str());
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
      }
    }
  }
  return out;
}

std::string RenderJson(const Snapshot& snap) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string system;
  std::string tasks;
  std::string stats;
  // Raw buckets are left out (they can be thousands); latency_bins summarises them.
  v1::GetStatsResponse stats_only = snap.stats;
  stats_only.clear_histograms();
  (void)google::protobuf::util::MessageToJsonString(snap.system, &system, options);
  (void)google::protobuf::util::MessageToJsonString(snap.tasks, &tasks, options);
  (void)google::protobuf::util::MessageToJsonString(stats_only, &stats, options);
  std::string bins = "[";
  bool first_task = true;
  for (const v1::TaskStats& t : snap.stats.tasks()) {
    const v1::Histogram* h = FindHistogram(snap.stats, t.task_id(), v1::QUANTITY_WAKEUP_LATENCY);
    if (h == nullptr) continue;
    bins += Format("%s{\"task_id\":%u,\"bins\":[", first_task ? "" : ",", t.task_id());
    first_task = false;
    const std::vector<LatencyBin> b = BinLatency(*h);
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (b[i].upper_us > 0) {
        bins += Format("%s{\"upper_us\":%" PRId64 ",\"count\":%" PRIu64 "}", i ? "," : "",
                       b[i].upper_us, b[i].count);
      } else {
        bins += Format("%s{\"upper_us\":null,\"count\":%" PRIu64 "}", i ? "," : "", b[i].count);
      }
    }
    bins += "]}";
  }
  bins += "]";
  std::string address;
  for (const char c : snap.address) {
    if (c == '"' || c == '\\') address += '\\';
    address += c;
  }
  return "{\"schema_version\":1,\"address\":\"" + address + "\",\"system\":" + system +
         ",\"tasks\":" + tasks + ",\"stats\":" + stats + ",\"latency_bins\":" + bins + "}\n";
}

}  // namespace rtloop::telemetry::top
