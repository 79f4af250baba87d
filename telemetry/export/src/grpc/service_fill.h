// The contents of the Telemetry service's responses, built from a TelemetryHub (and optionally the
// Executor) with the shared conversions of proto_convert.h, and the checks of the stream requests.
// No gRPC headers: cheap to compile, and what tests/fuzz/grpc_request_fuzzer.cc feeds decoded
// request messages to. Internal to rtloop_telemetry.
//
// Not RT-safe: allocates, reads /proc. Thread-safe (reads only thread-safe accessors of the hub).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/v1/telemetry.pb.h"

namespace rtloop {
class Executor;
}  // namespace rtloop

namespace rtloop::telemetry::internal {

// Host, kernel, RT facts, rtloop version, process start time and cpu_dma_latency.
void FillSystemInfo(const std::string& server_address, v1::GetSystemInfoResponse* out);

// Every task of `hub`, in id order; `executor` (optional) adds the effective scheduling.
void FillTaskList(const TelemetryHub& hub, const Executor* executor, v1::ListTasksResponse* out);

// Checks that every id names a task of `hub`; InvalidArgument naming the first unknown one and the
// known ids otherwise. Returns the ids to report, each once in request order (all tasks when `ids`
// is empty).
Result<std::vector<TaskId>> ResolveTaskIds(
    const TelemetryHub& hub, const google::protobuf::RepeatedField<std::uint32_t>& ids);

// One stats snapshot of `ids` with the timestamps set.
void FillStats(const TelemetryHub& hub, const std::vector<TaskId>& ids, bool include_histogram,
               v1::GetStatsResponse* out);

// The largest max_batch_samples a StreamSamples request may ask for.
inline constexpr std::size_t kMaxBatchSamples = 65536;
// The interval of a WatchStats request that asks for none.
inline constexpr std::chrono::milliseconds kDefaultWatchInterval{1000};

// A StreamSamples request, checked: what its stream subscribes to and how it batches.
struct SampleStreamPlan {
  // The stream's tasks, each once; every_task (none named): the hub's tasks at each use, so a
  // stream opened before the application's tasks were added reports them all.
  std::vector<TaskId> tasks;
  bool every_task = false;
  SubscriptionConfig subscription;  // its filter (empty: every task) and queue capacity
  std::size_t max_batch_samples = 0;
};
// InvalidArgument naming the field: an unknown task id, max_batch_samples above kMaxBatchSamples,
// buffer_samples above config.max_stream_buffer_samples. Zeros take the config's defaults.
Result<SampleStreamPlan> PlanSampleStream(const TelemetryHub& hub,
                                          const v1::StreamSamplesRequest& request,
                                          const ServerConfig& config);

// A watch's interval_ms (WatchStats, WatchOutliers), checked: 0 is kDefaultWatchInterval;
// InvalidArgument below config.min_watch_interval.
Result<std::chrono::milliseconds> CheckWatchInterval(std::uint32_t interval_ms,
                                                     const ServerConfig& config);

// A WatchStats request, checked.
struct StatsWatchPlan {
  std::vector<TaskId> tasks;  // as SampleStreamPlan::tasks
  bool every_task = false;
  bool include_histogram = false;
  std::chrono::milliseconds interval{0};
};
// InvalidArgument: an unknown task id, an interval below config.min_watch_interval (0 asks for
// kDefaultWatchInterval).
Result<StatsWatchPlan> PlanStatsWatch(const TelemetryHub& hub, const v1::WatchStatsRequest& request,
                                      const ServerConfig& config);

// A collector batch as a column-packed message; `lost_total` is the stream's running loss for the
// batch's task.
void FillSampleBatch(const SampleBatch& batch, std::uint64_t lost_total,
                     v1::StreamSamplesResponse* out);

}  // namespace rtloop::telemetry::internal
