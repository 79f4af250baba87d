// The outlier records over gRPC (API revision 2): ListOutliers and TaskStats.outliers against a
// real rtloop::Runtime on loopback. A task whose threshold is 1 ns makes every cycle an outlier,
// so the records exist on any machine; their evidence is whatever this machine has (the trace as
// root, the /proc counters otherwise), so the tests assert structure and agreement between the
// views (ListOutliers, GetStats, Runtime::OutlierStats() and Runtime::Outliers()), never a cause.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpc_test_util.h"
#include "rtloop/runtime.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;

namespace rtloop::telemetry::testing {
namespace {

using std::chrono::microseconds;

constexpr std::uint64_t kCycles = 150;

// A Runtime with one task explained at 1 ns ("explained", 150 cycles of 500 us) and one without
// a threshold ("plain"), its server on a free loopback port (with a token when given).
class OutlierRuntime {
 public:
  Status Build(const std::string& token_file = {}) {
    RuntimeConfig rc = TestRuntimeConfig("grpc_outliers_test");
    rc.telemetry.grpc.token_file = token_file;
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
    if (!rt.ok()) return rt.status();
    runtime_ = std::move(*rt);
    TaskConfig explained = OtherTask("explained", microseconds(500), kCycles);
    explained.explain_latency_above = std::chrono::nanoseconds(1);
    tasks_.emplace_back();
    Result<TaskId> a = runtime_->AddTask(tasks_.back(), explained);
    if (!a.ok()) return a.status();
    tasks_.emplace_back();
    Result<TaskId> b = runtime_->AddTask(tasks_.back(), OtherTask("plain", microseconds(500), 10));
    if (!b.ok()) return b.status();
    explained_ = *a;
    plain_ = *b;
    return runtime_->Start();
  }

  // Waits (at most 40 s) until the tasks ended and every outlier of the explained task was
  // recorded or dropped: then every view must give the same counts. The server keeps serving.
  bool WaitExplained() {
    runtime_->executor().Wait();
    const auto deadline = steady_clock::now() + std::chrono::seconds(40);
    while (steady_clock::now() < deadline) {
      const explain::ExplainerStats s = runtime_->OutlierStats();
      if (s.outliers + s.samples_lost >= kCycles && s.outliers == s.recorded + s.dropped) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  ~OutlierRuntime() {
    if (runtime_ != nullptr) (void)runtime_->Stop();
  }
  Runtime& runtime() { return *runtime_; }
  std::string address() const { return runtime_->grpc_address(); }
  TaskId explained() const { return explained_; }
  TaskId plain() const { return plain_; }

 private:
  std::deque<IdleTask> tasks_;  // outlive the runtime
  std::unique_ptr<Runtime> runtime_;
  TaskId explained_ = 0;
  TaskId plain_ = 0;
};

const v1::TaskStats* FindTask(const v1::GetStatsResponse& r, std::uint32_t id) {
  for (const v1::TaskStats& t : r.tasks()) {
    if (t.task_id() == id) return &t;
  }
  return nullptr;
}

TEST(GrpcOutliersTest, ServerSaysItsApiRevisionAndFeatures) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, microseconds(100), 10)).ok());
  auto client = Connect(rig.address());
  Result<v1::GetSystemInfoResponse> info = client->GetSystemInfo();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->api_revision(), 2u);
  ASSERT_EQ(info->api_features_size(), 2);
  EXPECT_EQ(info->api_features(0), "list_outliers");
  EXPECT_EQ(info->api_features(1), "watch_outliers");
}

TEST(GrpcOutliersTest, WithoutAThresholdNothingIsExplainedAndNoCountIsZero) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, microseconds(100), 50)).ok());
  ASSERT_TRUE(rig.StartTasks().ok());
  rig.WaitTasks();
  auto client = Connect(rig.address());
  Result<v1::ListOutliersResponse> page = client->ListOutliers({});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_FALSE(page->explaining());
  EXPECT_EQ(page->total(), 0u);
  EXPECT_EQ(page->records_size(), 0);
  EXPECT_EQ(page->tasks_size(), 0);
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->tasks_size(), 1);
  EXPECT_GT(stats->tasks(0).cycles(), 0u);
  EXPECT_FALSE(stats->tasks(0).has_outliers()) << "not explained must be absent, not 0";
}

TEST(GrpcOutliersTest, CountsAgreeBetweenListOutliersGetStatsAndTheRuntime) {
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build().ok());
  ASSERT_TRUE(rt.WaitExplained()) << "the explanation did not catch up within 40 s";
  const explain::ExplainerStats want = rt.runtime().OutlierStats();
  ASSERT_EQ(want.tasks.size(), 1u);
  ASSERT_GT(want.recorded, 100u) << "1 ns: every cycle is an outlier";
  auto client = Connect(rt.address());

  Result<v1::ListOutliersResponse> page = client->ListOutliers({});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->explaining());
  EXPECT_FALSE(page->evidence().empty());
  EXPECT_EQ(page->total(), want.recorded);
  EXPECT_EQ(page->outliers(), want.outliers);
  EXPECT_EQ(page->recorded(), want.recorded);
  EXPECT_EQ(page->unexplained(), want.unexplained);
  EXPECT_EQ(page->dropped(), want.dropped);
  EXPECT_EQ(page->samples_lost(), want.samples_lost);
  ASSERT_EQ(page->tasks_size(), 1) << "only the explained task has counts";
  const v1::TaskOutlierCounts& counts = page->tasks(0);
  EXPECT_EQ(counts.task_id(), rt.explained());
  EXPECT_EQ(counts.task_name(), "explained");
  EXPECT_EQ(counts.latency_above_ns(), 1);
  EXPECT_EQ(counts.outliers(), want.tasks[0].outliers);
  EXPECT_EQ(counts.recorded(), want.tasks[0].recorded);
  std::uint64_t by_cause = counts.without_cause();
  for (const v1::CauseKindCount& c : counts.by_leading_cause()) {
    EXPECT_NE(c.kind(), v1::CAUSE_KIND_UNSPECIFIED);
    EXPECT_GT(c.records(), 0u);
    by_cause += c.records();
  }
  EXPECT_EQ(by_cause, counts.recorded());
  ASSERT_TRUE(counts.has_last());
  EXPECT_EQ(counts.last().cycle(), want.tasks[0].last_cycle);
  EXPECT_EQ(counts.last().index(), want.recorded - 1);
  EXPECT_LE(counts.last().causes_size(), 1) << "the last record carries its leading cause only";
  EXPECT_EQ(counts.last().raw_size(), 0);

  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok());
  const v1::TaskStats* explained = FindTask(*stats, rt.explained());
  const v1::TaskStats* plain = FindTask(*stats, rt.plain());
  ASSERT_NE(explained, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_TRUE(explained->has_outliers());
  EXPECT_EQ(explained->outliers().SerializeAsString(), counts.SerializeAsString());
  EXPECT_FALSE(plain->has_outliers()) << "a task without a threshold is not explained";
}

TEST(GrpcOutliersTest, PagesFollowByNextAndMatchTheRuntimesRecords) {
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build().ok());
  ASSERT_TRUE(rt.WaitExplained());
  const std::vector<explain::OutlierRecord> want = rt.runtime().Outliers();
  ASSERT_GT(want.size(), 100u);
  auto client = Connect(rt.address());

  // No max: the server's default page of 100.
  Result<v1::ListOutliersResponse> first = client->ListOutliers({});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->records_size(), 100);
  EXPECT_EQ(first->first(), 0u);
  EXPECT_EQ(first->next(), 100u);

  // Pages of 7 from 3 on, followed by `next`, with the raw lines.
  std::vector<v1::OutlierRecord> got;
  v1::ListOutliersRequest req;
  req.set_first(3);
  req.set_max(7);
  req.set_include_raw(true);
  for (int pages = 0; pages < 1000; ++pages) {
    Result<v1::ListOutliersResponse> page = client->ListOutliers(req);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(page->first(), req.first());
    EXPECT_LE(page->records_size(), 7);
    EXPECT_EQ(page->next(), req.first() + static_cast<std::uint64_t>(page->records_size()));
    for (const v1::OutlierRecord& r : page->records()) got.push_back(r);
    if (page->records_size() == 0) {
      EXPECT_EQ(page->next(), page->total()) << "an empty page only at the end";
      break;
    }
    req.set_first(page->next());
  }
  ASSERT_EQ(got.size(), want.size() - 3);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const v1::OutlierRecord& r = got[i];
    const explain::OutlierRecord& w = want[i + 3];
    SCOPED_TRACE("record " + std::to_string(i + 3));
    EXPECT_EQ(r.index(), i + 3);
    EXPECT_EQ(r.task_id(), w.window.task);
    EXPECT_EQ(r.task_name(), "explained");
    EXPECT_EQ(r.cycle(), w.window.cycle);
    EXPECT_GT(r.tid(), 0);
    EXPECT_FALSE(r.has_cpu()) << "an unpinned task has no CPU (absent, not 0)";
    EXPECT_EQ(r.kind(), v1::OUTLIER_KIND_LATENCY);
    EXPECT_EQ(r.latency_ns(), r.wake_ns() - r.release_ns());
    EXPECT_EQ(r.execution_ns(), r.done_ns() - r.wake_ns());
    EXPECT_GT(r.latency_ns(), 1);
    EXPECT_NE(r.evidence(), v1::EVIDENCE_KIND_UNSPECIFIED);
    EXPECT_EQ(r.explained_ns() + r.unexplained_ns(), r.latency_ns());
    ASSERT_EQ(static_cast<std::size_t>(r.causes_size()), w.causes.size());
    for (int c = 0; c < r.causes_size(); ++c) {
      const explain::Cause& wc = w.causes[static_cast<std::size_t>(c)];
      // "Counted only" (ns -1) is absent, not 0; a timed cause has its time.
      EXPECT_EQ(r.causes(c).has_ns(), wc.ns >= 0);
      if (wc.ns >= 0) {
        EXPECT_EQ(r.causes(c).ns(), wc.ns);
      }
      EXPECT_EQ(r.causes(c).count(), wc.count);
      EXPECT_EQ(r.causes(c).has_id(), wc.id >= 0);
    }
    EXPECT_EQ(static_cast<std::size_t>(r.raw_size()), w.raw.size());
  }

  // Without include_raw: no raw line at all.
  v1::ListOutliersRequest bare;
  bare.set_max(1000);
  Result<v1::ListOutliersResponse> all = client->ListOutliers(bare);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<std::size_t>(all->records_size()), want.size());
  for (const v1::OutlierRecord& r : all->records()) EXPECT_EQ(r.raw_size(), 0);

  // Past the end: nothing, and `next` stays where the client is.
  v1::ListOutliersRequest past;
  past.set_first(all->total() + 5);
  Result<v1::ListOutliersResponse> none = client->ListOutliers(past);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->records_size(), 0);
  EXPECT_EQ(none->next(), all->total() + 5);
  EXPECT_TRUE(none->explaining());
}

TEST(GrpcOutliersTest, TaskFilterKeepsTheIndexAndRefusesAnUnknownTask) {
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build().ok());
  ASSERT_TRUE(rt.WaitExplained());
  auto client = Connect(rt.address());
  v1::ListOutliersRequest req;
  req.add_task_ids(rt.plain());
  req.set_max(50);
  Result<v1::ListOutliersResponse> plain = client->ListOutliers(req);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain->explaining());
  EXPECT_EQ(plain->records_size(), 0) << "the plain task has no records";
  EXPECT_EQ(plain->tasks_size(), 0) << "nor counts: it is not explained";
  EXPECT_EQ(plain->next(), 50u) << "the records examined still move the index on";

  req.clear_task_ids();
  req.add_task_ids(rt.explained());
  Result<v1::ListOutliersResponse> explained = client->ListOutliers(req);
  ASSERT_TRUE(explained.ok());
  EXPECT_EQ(explained->records_size(), 50);
  ASSERT_EQ(explained->tasks_size(), 1);
  EXPECT_EQ(explained->tasks(0).task_id(), rt.explained());

  req.add_task_ids(4242);
  Result<v1::ListOutliersResponse> bad = client->ListOutliers(req);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unknown task id 4242"), std::string::npos)
      << bad.status().ToString();
}

TEST(GrpcOutliersTest, ListOutliersNeedsTheTokenLikeEveryCall) {
  ScratchDir dir("outliers_token");
  const std::string token_file = (dir / "token").string();
  std::ofstream(token_file) << "s3cret-outliers\n";
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build(token_file).ok());
  Result<v1::ListOutliersResponse> without = Connect(rt.address())->ListOutliers({});
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), StatusCode::kUnauthenticated);
  Result<v1::ListOutliersResponse> with = Connect(rt.address(), token_file)->ListOutliers({});
  ASSERT_TRUE(with.ok()) << with.status().ToString();
}

// Two streams: one that looks every 20 ms, and one that looks only at its start (interval 60 s),
// so that every record reaches it by the end of the run: what was made after its last look
// (here: all of them) must still come, before the final message.
TEST(GrpcOutliersTest, WatchOutliersSendsEveryRecordOnceThenTheEndWithTheFinalCounts) {
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build().ok());
  auto client = Connect(rt.address());
  std::vector<std::unique_ptr<OutlierStream>> streams;
  for (const std::uint32_t interval_ms : {20u, 60'000u}) {
    v1::WatchOutliersRequest req;
    req.set_interval_ms(interval_ms);
    streams.push_back(client->WatchOutliers(req));
    ASSERT_TRUE(streams.back()->WaitForReady());
  }
  // The run ends once every outlier is explained: the streams then get their last messages.
  Background stopper([&rt] {
    (void)rt.WaitExplained();
    (void)rt.runtime().Stop();
  });
  for (std::unique_ptr<OutlierStream>& stream : streams) {
    SCOPED_TRACE(stream == streams[0] ? "every 20 ms" : "every 60 s");
    Watchdog<OutlierStream> watchdog(*stream, std::chrono::seconds(50));
    std::vector<v1::OutlierRecord> got;
    v1::ListOutliersResponse msg;
    v1::ListOutliersResponse last;
    int messages = 0;
    while (stream->Next(&msg)) {
      ++messages;
      EXPECT_LE(msg.records_size(), 100) << "a message is a bounded page";
      for (const v1::OutlierRecord& r : msg.records()) got.push_back(r);
      last = msg;
    }
    const Status end = stream->Finish();
    watchdog.Disarm();
    ASSERT_FALSE(watchdog.fired()) << "the stream did not end within 50 s";
    ASSERT_TRUE(end.ok()) << end.ToString();
    ASSERT_NE(stream->end(), nullptr);
    EXPECT_TRUE(last.has_end()) << "the last message is the end, handed out with its counts";
    const explain::ExplainerStats want = rt.runtime().OutlierStats();
    EXPECT_TRUE(last.explaining());
    EXPECT_EQ(last.recorded(), want.recorded);
    EXPECT_EQ(last.outliers(), want.outliers);
    EXPECT_EQ(last.total(), want.recorded);
    EXPECT_EQ(last.next(), last.total()) << "every record was sent";
    ASSERT_EQ(got.size(), want.recorded) << "in " << messages << " messages";
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].index(), i) << "each record once, in order";
    }
    EXPECT_GT(messages, 1);
  }
  stopper.Join();
}

TEST(GrpcOutliersTest, WatchOutliersChecksItsRequestAndTheStreamLimit) {
  Rig rig;
  RigConfig rc = Cfg(1, microseconds(100), 10);
  rc.server.max_streams = 1;
  ASSERT_TRUE(rig.Build(rc).ok());
  auto client = Connect(rig.address());
  auto refused = [&client](const v1::WatchOutliersRequest& req) {
    std::unique_ptr<OutlierStream> s = client->WatchOutliers(req);
    v1::ListOutliersResponse m;
    while (s->Next(&m)) {
    }
    return s->Finish();
  };
  v1::WatchOutliersRequest fast;
  fast.set_interval_ms(1);
  const Status too_fast = refused(fast);
  EXPECT_EQ(too_fast.code(), StatusCode::kInvalidArgument) << too_fast.ToString();
  EXPECT_NE(too_fast.message().find("below the minimum"), std::string::npos);
  v1::WatchOutliersRequest unknown;
  unknown.add_task_ids(99);
  EXPECT_EQ(refused(unknown).code(), StatusCode::kInvalidArgument);

  // One stream open (its first message came: nothing is explained here), the second refused.
  std::unique_ptr<OutlierStream> open = client->WatchOutliers({});
  v1::ListOutliersResponse first;
  ASSERT_TRUE(open->Next(&first)) << open->Finish().ToString();
  EXPECT_FALSE(first.explaining());
  const Status second = refused({});
  EXPECT_EQ(second.code(), StatusCode::kResourceExhausted) << second.ToString();
  open->Cancel();
}

// The proto as Debian's python3-grpcio and python3-grpc-tools compile it: the new call, the
// presence of "counted only" and the revision read from Python.
TEST(GrpcOutliersTest, PythonClientReadsTheOutliers) {
  if (std::system("/usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs python3-grpcio and python3-grpc-tools";
  }
  OutlierRuntime rt;
  ASSERT_TRUE(rt.Build().ok());
  ASSERT_TRUE(rt.WaitExplained());
  ScratchDir dir("outliers_python");
  std::ofstream(dir / "client.py") << R"(import sys
import grpc
from rtloop.telemetry.v1 import telemetry_pb2 as pb, telemetry_pb2_grpc as rpc
stub = rpc.TelemetryStub(grpc.insecure_channel(sys.argv[1]))
info = stub.GetSystemInfo(pb.GetSystemInfoRequest())
assert info.api_revision == 2 and "list_outliers" in info.api_features, info
page = stub.ListOutliers(pb.ListOutliersRequest(max=5))
assert page.explaining and len(page.records) == 5 and page.next == 5, page
timed = counted = 0
for r in page.records:
    for c in r.causes:
        if c.HasField("ns"):
            timed += 1
        else:
            counted += 1
print(f"total {page.total} tasks {len(page.tasks)} last {page.tasks[0].HasField('last')} "
      f"causes timed {timed} counted {counted}")
)";
  const Command c = RunCommand(
      "cd '" + dir.path().string() + "' && /usr/bin/python3 -m grpc_tools.protoc -I '" +
      SourcePath("proto") + "' --python_out=. --grpc_python_out=. '" + SourcePath("proto") +
      "'/rtloop/telemetry/v1/*.proto && timeout 30 /usr/bin/python3 "
      "client.py " +
      rt.address());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("tasks 1 last True"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace rtloop::telemetry::testing
