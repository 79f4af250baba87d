// Subscriber loss has one definition and one count (telemetry/README.md, "Subscriber loss"): in a
// run with a slow streaming client, GetStats' stream_loss, /metrics'
// rtloop_task_subscriber_lost_samples_total and the task report's LOST are the same number, the
// loss the client accounts for itself; at the run's end what a stream could not deliver in time
// is in all of them too. Both servers of one Runtime on loopback (telemetry_rig.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "grpc_test_util.h"
#include "http_test_util.h"
#include "rtloop/telemetry/client.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::Cfg;
using testing::HttpGet;
using testing::HttpReply;
using testing::ReadSlowlyWhileFinishing;
using testing::ReadStream;
using testing::Rig;
using testing::RigConfig;
using testing::StreamCheck;

constexpr char kLostSeries[] = "rtloop_task_subscriber_lost_samples_total{task=\"task0\"";

RigConfig WithBothServers(std::uint64_t cycles) {
  RigConfig rc = Cfg(1, std::chrono::microseconds(100), cycles);
  rc.http = HttpConfig{.address = "127.0.0.1:0"};
  return rc;
}

// A client on a connection of its own with small transport windows (as another process would
// have: ClientConfig::bdp_probe), so that what it does not read waits on the server.
std::unique_ptr<Client> SlowClient(const std::string& address) {
  ClientConfig cc;
  cc.address = address;
  cc.bdp_probe = false;
  return std::move(*Client::Create(cc));
}

// /metrics' subscriber loss of task0 once it shows `want` (/metrics renders a reading that may be
// up to a second old), or the last value seen after 10 s; -1 when the series is missing.
double MetricsLoss(int port, double want) {
  double seen = -1;
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  do {
    const HttpReply m = HttpGet(port, "/metrics");
    EXPECT_EQ(m.status, 200) << m.error;
    seen = testing::Sample(m.body, kLostSeries);
    if (seen == want) break;
    std::this_thread::sleep_for(milliseconds(50));
  } while (steady_clock::now() < deadline);
  return seen;
}

TEST(SubscriberLoss, GetStatsMetricsAndTheReportShowTheSameCount) {
  constexpr std::uint64_t kCycles = 20'000;  // 2 s at 10 kHz
  Rig rig;
  ASSERT_TRUE(rig.Build(WithBothServers(kCycles)).ok());
  ASSERT_NE(rig.http_port(), 0);
  std::unique_ptr<Client> slow_client = SlowClient(rig.address());
  v1::StreamSamplesRequest small;
  small.set_buffer_samples(1024);
  small.set_max_batch_samples(64);
  std::unique_ptr<SampleStream> stream = slow_client->StreamSamples(small);
  ASSERT_TRUE(stream->WaitForReady());
  // The client reads nothing during the run: its buffer overflows.
  ASSERT_TRUE(rig.StartTasks().ok());
  rig.WaitTasks();
  const TaskId id = rig.ids()[0];
  const std::uint64_t delivered = rig.hub().Snapshot(id)->delivered;
  StreamCheck check;
  const Status read = ReadStream(
      *stream, check, [&] { return check.accounted(id) == delivered; }, milliseconds(20'000));
  ASSERT_TRUE(read.ok()) << read.ToString();
  const std::uint64_t lost = check.lost[id];
  ASSERT_GT(lost, 0u) << "the client did not fall behind: nothing to compare";
  EXPECT_EQ(check.received[id] + lost, delivered);

  std::unique_ptr<Client> client = testing::Connect(rig.address());
  Result<v1::GetStatsResponse> stats = client->GetStats({id}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->stream_loss_size(), 1);
  EXPECT_EQ(stats->stream_loss(0).lost(), lost);
  EXPECT_EQ(MetricsLoss(rig.http_port(), static_cast<double>(lost)), static_cast<double>(lost));
  const std::vector<TaskReport> reports = rig.runtime().Reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].subscriber_lost, lost);
  std::printf("lost %llu of %llu delivered (GetStats, /metrics, report, client)\n",
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(delivered));
}

// What the old counts disagreed on: the samples still queued for a stream when the run's delivery
// deadline passed are lost, in the stream's StreamEnd and in /metrics and the report alike.
TEST(SubscriberLoss, TheUndeliveredTailOfARunIsInEveryExport) {
  constexpr std::uint64_t kCycles = 20'000;
  RigConfig rc = WithBothServers(kCycles);
  rc.server.stop_grace = milliseconds(100);
  Rig rig;
  ASSERT_TRUE(rig.Build(rc).ok());
  std::unique_ptr<Client> slow_client = SlowClient(rig.address());
  v1::StreamSamplesRequest request;
  request.set_max_batch_samples(8);  // 2500 messages: slow reading outlasts a late finisher
  std::unique_ptr<SampleStream> stream = slow_client->StreamSamples(request);
  ASSERT_TRUE(stream->WaitForReady());
  ASSERT_TRUE(rig.StartTasks().ok());
  rig.WaitTasks();
  const TaskTelemetry* task = rig.hub().task(rig.ids()[0]);
  ASSERT_EQ(task->subscriber_lost(), 0u);  // the buffer (65536) held the whole run
  // Slow until 50 ms past the delivery deadline (stop_grace after the finisher thread called
  // Finish()), then fast enough to take the final message before Finish() gives up waiting for it
  // (200 ms after the deadline).
  StreamCheck check = ReadSlowlyWhileFinishing(
      *stream, [&] { rig.server().Finish(); }, rc.server.stop_grace + milliseconds(50));
  ASSERT_TRUE(check.error.empty()) << check.error;
  const Status finished = stream->Finish();
  ASSERT_TRUE(finished.ok()) << finished.ToString() << "; read " << check.received[0] << ", lost "
                             << task->subscriber_lost();
  const v1::StreamEnd* end = stream->end();
  ASSERT_NE(end, nullptr);
  ASSERT_EQ(end->tasks_size(), 1);
  const std::uint64_t lost = end->tasks(0).lost_total();
  ASSERT_GT(lost, check.lost[0]) << "no undelivered tail: nothing to compare";
  EXPECT_EQ(task->subscriber_lost(), lost);
  EXPECT_EQ(MetricsLoss(rig.http_port(), static_cast<double>(lost)), static_cast<double>(lost));
  EXPECT_EQ(rig.runtime().Reports()[0].subscriber_lost, lost);
  std::printf("lost %llu (%llu by the full buffer), sent %llu\n",
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(check.lost[0]),
              static_cast<unsigned long long>(end->tasks(0).sent()));
}

}  // namespace
}  // namespace rtloop::telemetry
