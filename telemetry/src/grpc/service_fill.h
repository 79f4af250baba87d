// The contents of the Telemetry service's responses, built from a TelemetryHub (and optionally the
// Executor) with the shared conversions of proto_convert.h. No gRPC headers: cheap to compile.
// Internal to rtloop_telemetry.
//
// Not RT-safe: allocates, reads /proc. Thread-safe (reads only thread-safe accessors of the hub).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/telemetry/collector.h"
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

// A collector batch as a column-packed message; `lost_total` is the stream's running loss for the
// batch's task.
void FillSampleBatch(const SampleBatch& batch, std::uint64_t lost_total,
                     v1::StreamSamplesResponse* out);

}  // namespace rtloop::telemetry::internal
