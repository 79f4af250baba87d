// Conversions between telemetry's C++ types and the rtloop.telemetry.v1 protobuf messages, shared
// by the sample log and the gRPC service. Part of rtloop::telemetry's API (it needs rtloop::proto).
// A task's figures arrive as its one read model, rtloop::TaskReport (task_report.h).
//
//   v1::TaskStats msg;
//   ToProto(*hub.Snapshot(id), &msg);
//
// "No data" travels as absence: a task without cycles gets LatencyStats with count 0 and no
// percentile entries (readers show "no data", never 0).
//
// Threading: pure functions on values. Not RT-safe: protobuf allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rtloop/framework/system_info.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/sample.h"
#include "rtloop/telemetry/task_report.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/v1/types.pb.h"

// The outlier records' types (rtloop/explain/outlier.h, explainer.h), declared here because this
// header is included by the core's sample log, which does not see rtloop::explain; their
// conversions are compiled into rtloop::telemetry (src/proto_convert_outliers.cc).
namespace rtloop::explain {
enum class CauseKind;
enum class EvidenceKind;
struct Cause;
struct OutlierRecord;
struct TaskOutlierStats;
}  // namespace rtloop::explain

namespace rtloop::telemetry {

v1::SchedPolicy ToProto(SchedPolicy policy) noexcept;
v1::OverrunPolicy ToProto(OverrunPolicy policy) noexcept;
v1::TaskState ToProto(TaskState state) noexcept;
v1::ClockId ToProto(Clock clock) noexcept;
v1::WatchdogAction ToProto(WatchdogAction action) noexcept;
v1::FaultReason ToProto(FaultReason reason) noexcept;

void ToProto(const SystemInfo& info, v1::SystemInfo* out);
void ToProto(TaskId id, const TaskConfig& config, TaskState state, v1::TaskDescriptor* out);
void ToProto(const HistogramSummary& summary, v1::LatencyStats* out);
// Replaces out's percentiles with `percentiles` (none when !percentiles.valid).
void ToProto(const Percentiles& percentiles, v1::LatencyStats* out);
// Every field of v1::TaskStats; timestamp_ns is left for the caller. count/min/max/avg/sum come
// from report.stats (the executor's), percentiles from the hub's histograms.
void ToProto(const TaskReport& report, v1::TaskStats* out);
void ToProto(TaskId task, v1::Quantity quantity, const LatencyHistogram& histogram,
             v1::Histogram* out);
// Column-packs `samples` (consecutive seqs of one task) into `out` (cleared first).
void ToProto(TaskId task, std::uint64_t lost_before, std::span<const Sample> samples,
             v1::SampleBatch* out);
void ToProto(const SampleBatch& batch, v1::SampleBatch* out);
// Unpacks a batch, appending to `out`. InvalidArgument (and nothing appended) if the columns
// differ in length or a value does not fit a Sample (task id > 65535, latency beyond int32,
// execution beyond uint32, flags beyond uint16).
Status FromProto(const v1::SampleBatch& batch, std::vector<Sample>* out);

// Outlier records (API revision 2). A count-only cause (ns -1) leaves `ns` absent, an id of -1
// leaves `id` absent, a CPU of -1 (not pinned) leaves `cpu` absent: absent, not 0.
v1::CauseKind ToProto(explain::CauseKind kind) noexcept;
v1::EvidenceKind ToProto(explain::EvidenceKind kind) noexcept;
void ToProto(const explain::Cause& cause, v1::OutlierCause* out);
// `index`: the record's place in recording order. Raw evidence lines only with `include_raw`;
// `max_causes` causes at most (the leading ones).
void ToProto(const explain::OutlierRecord& record, std::uint64_t index, bool include_raw,
             v1::OutlierRecord* out, std::size_t max_causes = SIZE_MAX);
// The counts; `last` is left for the caller (the counts do not hold the last record).
void ToProto(const explain::TaskOutlierStats& stats, v1::TaskOutlierCounts* out);

}  // namespace rtloop::telemetry
