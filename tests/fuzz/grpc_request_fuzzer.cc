// Fuzzes the Telemetry service's request handling with decoded request messages: the first byte
// picks the RPC, the rest is parsed as its request message (protobuf's parser meets arbitrary
// bytes too) and handed to what the handler runs (service_fill.h: the task-id checks, the stream
// plans, the responses), or, for byte 4, taken as an "authorization" metadata value; byte 5 is
// GetSystemInfo. The handlers' promises are checked: an error is INVALID_ARGUMENT with a message,
// a response holds each asked task once, a stream's batches stay within its plan, every response
// serializes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_hub.h"
#include "fuzz_util.h"
#include "net_util.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/server.h"
#include "rtloop/telemetry/v1/telemetry.pb.h"
#include "service_fill.h"

namespace {

namespace v1 = rtloop::telemetry::v1;
namespace internal = rtloop::telemetry::internal;
using rtloop::StatusCode;

rtloop::fuzz::FuzzHub& Hub() {
  static rtloop::fuzz::FuzzHub hub;
  return hub;
}

const rtloop::telemetry::ServerConfig& Config() {
  static const rtloop::telemetry::ServerConfig kDefaults;  // the server's
  return kDefaults;
}

void CheckRefusal(const rtloop::Status& s) {
  RTLOOP_FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument);
  RTLOOP_FUZZ_CHECK(!s.message().empty());
}

void GetStats(std::string_view bytes) {
  v1::GetStatsRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  auto ids = internal::ResolveTaskIds(Hub().hub(), req.task_ids());
  if (!ids.ok()) return CheckRefusal(ids.status());
  RTLOOP_FUZZ_CHECK(ids->size() <= rtloop::fuzz::FuzzHub::kTasks.size());
  v1::GetStatsResponse resp;
  internal::FillStats(Hub().hub(), *ids, req.include_histogram(), &resp);
  RTLOOP_FUZZ_CHECK(static_cast<std::size_t>(resp.tasks_size()) == ids->size());
  std::string out;
  RTLOOP_FUZZ_CHECK(resp.SerializeToString(&out));
}

void WatchStats(std::string_view bytes) {
  v1::WatchStatsRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  auto plan = internal::PlanStatsWatch(Hub().hub(), req, Config());
  if (!plan.ok()) return CheckRefusal(plan.status());
  RTLOOP_FUZZ_CHECK(plan->interval >= Config().min_watch_interval);
  v1::GetStatsResponse resp;
  internal::FillStats(Hub().hub(), plan->tasks, plan->include_histogram, &resp);
  std::string out;
  RTLOOP_FUZZ_CHECK(resp.SerializeToString(&out));
}

// The stream's plan, then one round of what its reactor does: the collector offers samples, the
// stream pops a batch within max_batch_samples and sends it as a message.
void StreamSamples(std::string_view bytes) {
  v1::StreamSamplesRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  auto plan = internal::PlanSampleStream(Hub().hub(), req, Config());
  if (!plan.ok()) return CheckRefusal(plan.status());
  RTLOOP_FUZZ_CHECK(plan->max_batch_samples >= 1 &&
                    plan->max_batch_samples <= internal::kMaxBatchSamples);
  RTLOOP_FUZZ_CHECK(plan->subscription.capacity >= 1 &&
                    plan->subscription.capacity <= Config().max_stream_buffer_samples);
  rtloop::telemetry::Subscription sub(plan->subscription);
  std::vector<rtloop::telemetry::Sample> samples(100);
  for (const rtloop::TaskId task : rtloop::fuzz::FuzzHub::kTasks) {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i].seq = i;
      samples[i].task = static_cast<std::uint16_t>(task);
      samples[i].latency_ns = static_cast<std::int32_t>(i * 37);
    }
    if (sub.Wants(task)) sub.Offer(task, samples);
  }
  std::vector<rtloop::telemetry::SampleBatch> batches;
  const std::size_t n = sub.Pop(&batches, std::chrono::nanoseconds(0), plan->max_batch_samples);
  RTLOOP_FUZZ_CHECK(n <= plan->max_batch_samples);
  for (const rtloop::telemetry::SampleBatch& b : batches) {
    v1::StreamSamplesResponse resp;
    internal::FillSampleBatch(b, b.lost_before, &resp);
    std::string out;
    RTLOOP_FUZZ_CHECK(resp.SerializeToString(&out));
  }
}

void ListTasks(std::string_view bytes) {
  v1::ListTasksRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  v1::ListTasksResponse resp;
  internal::FillTaskList(Hub().hub(), nullptr, &resp);
  RTLOOP_FUZZ_CHECK(static_cast<std::size_t>(resp.tasks_size()) ==
                    rtloop::fuzz::FuzzHub::kTasks.size());
}

// GetSystemInfo ignores its (empty) request: whatever decodes gets the same response, which reads
// /proc, /sys and /dev/cpu_dma_latency, so it is filled once (by the first input that decodes).
void GetSystemInfo(std::string_view bytes) {
  v1::GetSystemInfoRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  static const v1::GetSystemInfoResponse kResponse = [] {
    v1::GetSystemInfoResponse r;
    internal::FillSystemInfo("127.0.0.1:0", &r);
    return r;
  }();
  RTLOOP_FUZZ_CHECK(kResponse.has_system() && kResponse.readiness_size() > 0);
  std::string out;
  RTLOOP_FUZZ_CHECK(kResponse.SerializeToString(&out));
}

// ServerCore::Admit's token check of the one "authorization" value.
void Authorization(std::string_view value) {
  static const std::string kToken = "fuzz-Token_0123";
  const std::optional<std::string_view> token = internal::BearerToken(value);
  if (!token) return;
  RTLOOP_FUZZ_CHECK(!token->empty());
  RTLOOP_FUZZ_CHECK(value.size() == 7 + token->size());  // "Bearer " in any case, then the token
  RTLOOP_FUZZ_CHECK(value.substr(7) == *token);
  RTLOOP_FUZZ_CHECK(internal::ConstantTimeEquals(*token, kToken) == (*token == kToken));
  // What a request may carry is what a token file may hold.
  RTLOOP_FUZZ_CHECK(rtloop::telemetry::CheckBearerToken(*token, "fuzz").ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return -1;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      GetStats(rest);
      break;
    case 1:
      WatchStats(rest);
      break;
    case 2:
      StreamSamples(rest);
      break;
    case 3:
      ListTasks(rest);
      break;
    case 4:
      Authorization(rest);
      break;
    default:
      GetSystemInfo(rest);
      break;
  }
  return 0;
}
