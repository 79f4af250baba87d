#include "service_fill.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "outlier_fill.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/readiness.h"
#include "rtloop/telemetry/proto_convert.h"
#include "rtloop/telemetry/utf8.h"

#ifndef RTLOOP_VERSION_STRING
#define RTLOOP_VERSION_STRING "unknown"
#endif

namespace rtloop::telemetry::internal {
namespace {

std::int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Process start (Unix ns) from /proc/self/stat's starttime (clock ticks after boot) and
// /proc/stat's btime; 0 when unreadable.
std::int64_t ProcessStartUnixNs() {
  std::ifstream stat_file("/proc/self/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return 0;
  const std::size_t paren = line.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream fields(line.substr(paren + 2));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) start_ticks = std::stoull(field);
  }
  std::ifstream boot_file("/proc/stat");
  long long btime = 0;
  while (std::getline(boot_file, line)) {
    if (line.rfind("btime ", 0) == 0) btime = std::stoll(line.substr(6));
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (btime == 0 || ticks <= 0) return 0;
  return btime * 1'000'000'000LL +
         static_cast<std::int64_t>(start_ticks) * (1'000'000'000LL / ticks);
}

// The aggregate /dev/cpu_dma_latency target, µs; -1 when it cannot be read.
std::int64_t CpuDmaLatencyUs() {
  const int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::int32_t value = 0;
  const ssize_t n = read(fd, &value, sizeof value);
  close(fd);
  return n == static_cast<ssize_t>(sizeof value) ? value : -1;
}

}  // namespace

void FillSystemInfo(const std::string& server_address, v1::GetSystemInfoResponse* out) {
  ToProto(ReadSystemInfo(), out->mutable_system());
  out->set_rtloop_version(RTLOOP_VERSION_STRING);
  static const std::int64_t kStartNs = ProcessStartUnixNs();
  out->set_process_start_unix_ns(kStartNs);
  out->set_cpu_dma_latency_us(CpuDmaLatencyUs());
  out->set_server_address(server_address);
  out->set_api_revision(kApiRevision);
  for (const char* feature : kApiFeatures) out->add_api_features(feature);
  // No live probe: this runs on a gRPC thread, whose scheduling must not change.
  ReadinessConfig readiness;
  readiness.probe = false;
  for (const ReadinessFinding& f : CheckReadiness(readiness).findings) {
    v1::ReadinessFinding* r = out->add_readiness();
    r->set_id(f.id);
    r->set_level(f.level == ReadinessLevel::kOk     ? v1::READINESS_LEVEL_OK
                 : f.level == ReadinessLevel::kWarn ? v1::READINESS_LEVEL_WARN
                                                    : v1::READINESS_LEVEL_FAIL);
    r->set_summary(ToValidUtf8(f.summary));  // may quote /proc or /sys contents
    r->set_fix(ToValidUtf8(f.fix));
  }
}

void FillTaskList(const TelemetryHub& hub, const Executor* executor, v1::ListTasksResponse* out) {
  // The hub's tasks (the ones a client can ask for), each as its read model without histograms.
  for (const TaskId id : hub.TaskIds()) {
    const TaskReport r = MakeTaskReport(executor, &hub, id, {.histograms = false});
    v1::TaskInfo* info = out->add_tasks();
    ToProto(r.id, r.info.config, r.stats.state, info->mutable_task());
    info->set_effective_policy(ToProto(r.info.effective_policy));
    info->set_effective_priority(r.info.effective_priority);
    info->set_non_rt_fallback(r.info.fell_back_to_non_rt);
  }
}

Result<std::vector<TaskId>> ResolveTaskIds(
    const TelemetryHub& hub, const google::protobuf::RepeatedField<std::uint32_t>& ids) {
  if (ids.empty()) return hub.TaskIds();
  std::vector<TaskId> out;
  std::vector<bool> listed(hub.max_tasks(), false);
  for (const std::uint32_t id : ids) {
    if (hub.task(id) == nullptr) {
      std::string known;
      for (const TaskId k : hub.TaskIds()) known += (known.empty() ? "" : ", ") + std::to_string(k);
      return InvalidArgumentError("unknown task id " + std::to_string(id) + " (tasks: " +
                                  (known.empty() ? "none" : known) + "; see ListTasks)");
    }
    // A repeated id is answered once: a small request must not ask for a huge response (nor, with
    // many tasks, for a quadratic search).
    if (!listed[id]) {
      listed[id] = true;
      out.push_back(id);
    }
  }
  return out;
}

void FillStats(const TelemetryHub& hub, const std::vector<TaskId>& ids, bool include_histogram,
               v1::GetStatsResponse* out) {
  out->set_monotonic_ns(ClockNs(CLOCK_MONOTONIC));
  const std::int64_t unix_ns = ClockNs(CLOCK_REALTIME);
  out->set_unix_time_ns(unix_ns);
  for (const TaskId id : ids) {
    Result<TaskReport> snap = hub.Snapshot(id);
    if (!snap.ok()) continue;
    v1::TaskStats* stats = out->add_tasks();
    ToProto(*snap, stats);
    stats->set_timestamp_ns(unix_ns);
    if (include_histogram) {
      const TaskTelemetry* task = hub.task(id);
      ToProto(id, v1::QUANTITY_WAKEUP_LATENCY, task->latency(), out->add_histograms());
      ToProto(id, v1::QUANTITY_EXECUTION_TIME, task->execution(), out->add_histograms());
    }
  }
}

Result<SampleStreamPlan> PlanSampleStream(const TelemetryHub& hub,
                                          const v1::StreamSamplesRequest& request,
                                          const ServerConfig& config) {
  Result<std::vector<TaskId>> ids = ResolveTaskIds(hub, request.task_ids());
  if (!ids.ok()) return ids.status();
  if (request.max_batch_samples() > kMaxBatchSamples) {
    return InvalidArgumentError("max_batch_samples " + std::to_string(request.max_batch_samples()) +
                                " is above the limit of " + std::to_string(kMaxBatchSamples));
  }
  if (request.buffer_samples() > config.max_stream_buffer_samples) {
    return InvalidArgumentError("buffer_samples " + std::to_string(request.buffer_samples()) +
                                " is above the server's limit of " +
                                std::to_string(config.max_stream_buffer_samples));
  }
  SampleStreamPlan plan;
  if (request.task_ids_size() > 0) plan.subscription.tasks = *ids;
  plan.every_task = request.task_ids_size() == 0;
  plan.tasks = std::move(*ids);
  plan.subscription.capacity =
      request.buffer_samples() == 0 ? config.stream_buffer_samples : request.buffer_samples();
  plan.max_batch_samples =
      request.max_batch_samples() == 0 ? config.max_batch_samples : request.max_batch_samples();
  return plan;
}

Result<std::chrono::milliseconds> CheckWatchInterval(std::uint32_t interval_ms,
                                                     const ServerConfig& config) {
  const std::chrono::milliseconds interval =
      interval_ms == 0 ? kDefaultWatchInterval : std::chrono::milliseconds(interval_ms);
  if (interval < config.min_watch_interval) {
    return InvalidArgumentError("interval_ms " + std::to_string(interval.count()) +
                                " is below the minimum of " +
                                std::to_string(config.min_watch_interval.count()) + " ms");
  }
  return interval;
}

Result<StatsWatchPlan> PlanStatsWatch(const TelemetryHub& hub, const v1::WatchStatsRequest& request,
                                      const ServerConfig& config) {
  Result<std::vector<TaskId>> ids = ResolveTaskIds(hub, request.task_ids());
  if (!ids.ok()) return ids.status();
  Result<std::chrono::milliseconds> interval = CheckWatchInterval(request.interval_ms(), config);
  if (!interval.ok()) return interval.status();
  return StatsWatchPlan{.tasks = std::move(*ids),
                        .every_task = request.task_ids_size() == 0,
                        .include_histogram = request.include_histogram(),
                        .interval = *interval};
}

void FillSampleBatch(const SampleBatch& batch, std::uint64_t lost_total,
                     v1::StreamSamplesResponse* out) {
  ToProto(batch, out->mutable_batch());
  out->set_lost_total(lost_total);
}

}  // namespace rtloop::telemetry::internal
