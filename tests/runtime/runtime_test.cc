// rtloop::Runtime end to end: real SCHED_OTHER tasks (no privilege needed), telemetry on
// 127.0.0.1 with a free port, clients on loopback, signals, the report, the stop order and the
// placement of the telemetry threads.
#include "rtloop/runtime.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "port_holder.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/client.h"
#include "rtloop/telemetry/output_file.h"
#include "rtloop/telemetry/sample_log_file.h"
#include "telemetry_rig.h"

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

class Idle final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override {
    steps.fetch_add(1, std::memory_order_relaxed);
    return StepResult::kContinue;
  }
  std::atomic<std::uint64_t> steps{0};
};

class CountingObserver final : public CycleObserver {
 public:
  void OnCycle(const CycleSample& /*s*/) noexcept override {
    cycles.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> cycles{0};
};

using telemetry::testing::OtherTask;
RuntimeConfig TestConfig() { return telemetry::testing::TestRuntimeConfig("runtime_test"); }

std::unique_ptr<Runtime> MakeRuntime(const RuntimeConfig& config = TestConfig()) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(config);
  RTLOOP_CHECK(rt.ok(), "Runtime::Create failed in a test");
  return std::move(*rt);
}

std::vector<int> ThreadIds() {
  std::vector<int> tids;
  DIR* dir = opendir("/proc/self/task");
  while (dir != nullptr) {
    const dirent* e = readdir(dir);
    if (e == nullptr) break;
    if (const int tid = std::atoi(e->d_name); tid > 0) tids.push_back(tid);
  }
  if (dir != nullptr) closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::vector<int> AffinityOf(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(static_cast<std::size_t>(c), &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(RuntimeTest, DefaultsServeTelemetryOnLoopbackPort50051) {
  const RuntimeConfig c;
  EXPECT_TRUE(c.telemetry.enabled);
  EXPECT_TRUE(c.telemetry.serve_grpc);
  EXPECT_EQ(c.telemetry.grpc.address, "127.0.0.1:50051");
  EXPECT_EQ(c.telemetry.drain_period, milliseconds(50));
  EXPECT_EQ(c.duration.count(), 0);
}

TEST(RuntimeTest, RunsTasksWithTelemetryAndReportsEveryFigure) {
  auto rt = MakeRuntime();
  Idle a, b;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("alpha", microseconds(500), 400)).ok());
  ASSERT_TRUE(rt->AddTask(b, OtherTask("beta", milliseconds(1), 200)).ok());
  ASSERT_NE(rt->grpc_address().find("127.0.0.1:"), std::string::npos);
  EXPECT_NE(rt->grpc_address(), "127.0.0.1:0");
  ASSERT_TRUE(rt->RunUntilSignal().ok());  // returns when both tasks have ended
  const std::vector<TaskReport> reports = rt->Reports();
  ASSERT_EQ(reports.size(), 2u);
  for (const TaskReport& r : reports) {
    EXPECT_TRUE(r.has_data()) << r.name;
    EXPECT_EQ(r.stats.state, TaskState::kStopped) << r.name;
    EXPECT_TRUE(r.telemetry) << r.name;
    EXPECT_TRUE(r.latency.percentiles.valid) << r.name;
    EXPECT_TRUE(r.execution.percentiles.valid) << r.name;
    EXPECT_EQ(r.ring_dropped, 0u) << r.name;
  }
  EXPECT_EQ(reports[0].stats.cycles, 400u);
  EXPECT_EQ(reports[1].stats.cycles, 200u);
  EXPECT_EQ(rt->Report(1).name, "beta");
  // The hub saw every cycle the executor ran: one source of counts, no second copy to disagree.
  Result<TaskReport> snap = rt->hub()->Snapshot(0);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->latency.count, snap->stats.cycles);
  EXPECT_TRUE(rt->Stop().ok());  // idempotent
}

TEST(RuntimeTest, TheHubJoinsTheTasksOwnObserversWhichKeepTheirOrder) {
  auto rt = MakeRuntime();
  Idle a;
  CountingObserver mine;
  TaskConfig tc = OtherTask("observed", microseconds(500), 100);
  tc.observers = {&mine};
  Result<TaskId> id = rt->AddTask(a, tc);
  ASSERT_TRUE(id.ok());
  const TaskInfo info = rt->executor().Info(*id);
  ASSERT_EQ(info.config.observers.size(), 2u);
  EXPECT_EQ(info.config.observers[0], &mine);
  EXPECT_EQ(info.config.observers[1], rt->hub());
  ASSERT_TRUE(rt->RunUntilSignal().ok());
  EXPECT_EQ(mine.cycles.load(), 100u);
  EXPECT_EQ(rt->Report(*id).stats.cycles, 100u);
}

TEST(RuntimeTest, TelemetryOffRunsTheExecutorAloneAndTheReportSaysSo) {
  RuntimeConfig c = TestConfig();
  c.telemetry.enabled = false;
  auto rt = MakeRuntime(c);
  EXPECT_EQ(rt->hub(), nullptr);
  EXPECT_EQ(rt->collector(), nullptr);
  EXPECT_EQ(rt->grpc_address(), "");
  Idle a;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("alone", microseconds(500), 50)).ok());
  EXPECT_TRUE(rt->executor().Info(0).config.observers.empty());
  ASSERT_TRUE(rt->RunUntilSignal().ok());
  const TaskReport r = rt->Report(0);
  EXPECT_TRUE(r.has_data());
  EXPECT_FALSE(r.telemetry);
  EXPECT_FALSE(r.latency.percentiles.valid);
  const std::vector<TaskReport> reports = rt->Reports();
  const std::string text = FormatTaskReport(reports);
  EXPECT_NE(text.find("percentiles need telemetry"), std::string::npos) << text;
}

TEST(RuntimeTest, APortInUseNamesThePortAndHowToPickAnother) {
  const testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  const std::string port = std::to_string(busy.port());
  RuntimeConfig c = TestConfig();
  c.telemetry.grpc.address = "127.0.0.1:" + port;
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(c);
  ASSERT_FALSE(rt.ok());
  const std::string m = rt.status().message();
  EXPECT_EQ(rt.status().code(), StatusCode::kAlreadyExists) << m;
  EXPECT_NE(m.find("127.0.0.1:" + port), std::string::npos) << m;
  EXPECT_NE(m.find("telemetry.grpc.address"), std::string::npos) << m;
  EXPECT_NE(m.find("127.0.0.1:0"), std::string::npos) << m;
}

TEST(RuntimeTest, BadConfigAndWrongOrderAreClearErrors) {
  RuntimeConfig c = TestConfig();
  c.duration = milliseconds(-1);
  EXPECT_EQ(Runtime::Create(c).status().code(), StatusCode::kInvalidArgument);
  c = TestConfig();
  c.telemetry.drain_period = std::chrono::nanoseconds(0);
  Status s = Runtime::Create(c).status();
  EXPECT_NE(s.message().find("telemetry.drain_period"), std::string::npos) << s.message();
  c = TestConfig();
  c.telemetry.max_tasks = 1;
  auto rt = MakeRuntime(c);
  EXPECT_EQ(rt->Start().code(), StatusCode::kFailedPrecondition);  // no tasks
  Idle a, b;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("one", milliseconds(1), 5)).ok());
  s = rt->AddTask(b, OtherTask("two", milliseconds(1), 5)).status();
  EXPECT_NE(s.message().find("telemetry.max_tasks"), std::string::npos) << s.message();
  ASSERT_TRUE(rt->Start().ok());
  EXPECT_EQ(rt->Start().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rt->AddTask(b, OtherTask("late", milliseconds(1), 5)).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(rt->Stop().ok());
  EXPECT_TRUE(rt->Stop().ok());
  EXPECT_EQ(rt->Start().code(), StatusCode::kFailedPrecondition);
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("rtloop_runtime_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Create() checks every setting a program's user names before it creates, starts or binds
// anything (it was: the gRPC server served, then a bad HTTP address failed; a sample log on
// /dev/full or "-" was found only at Start()). Runtime::Check() gives the same answer alone.
TEST(RuntimeTest, CreateChecksEverySettingBeforeAnythingStarts) {
  const std::string missing = TempPath("no-such-token");
  const std::vector<std::pair<std::function<void(RuntimeConfig&)>, std::string>> cases = {
      {[](RuntimeConfig& c) { c.telemetry.grpc.address = "bogus"; },
       "RuntimeConfig::telemetry.grpc.address: bad address \"bogus\""},
      {[](RuntimeConfig& c) { c.telemetry.http->address = "bogus"; },
       "RuntimeConfig::telemetry.http->address: bad address \"bogus\""},
      {[&](RuntimeConfig& c) { c.telemetry.http->token_file = missing; },
       "RuntimeConfig::telemetry.http->token_file: cannot open token file '" + missing + "'"},
      {[](RuntimeConfig& c) { c.telemetry.record_path = "/dev/full"; },
       "RuntimeConfig::telemetry.record_path: sample log '/dev/full': is a character device"},
      {[](RuntimeConfig& c) { c.telemetry.record_path = "-"; },
       "RuntimeConfig::telemetry.record_path: sample log '-': this output cannot go to standard "
       "output"},
  };
  for (const auto& [set, message] : cases) {
    RuntimeConfig c = TestConfig();
    c.telemetry.grpc.log_to_stderr = true;  // "serving on ..." when a server starts
    c.telemetry.http = telemetry::HttpConfig{.address = "127.0.0.1:0"};
    set(c);
    const Status check = Runtime::Check(c);
    EXPECT_EQ(check.message().rfind(message, 0), 0u) << check.ToString();
    ::testing::internal::CaptureStderr();
    const Result<std::unique_ptr<Runtime>> rt = Runtime::Create(c);
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(rt.ok()) << message;
    EXPECT_EQ(rt.status().message(), check.message());
    EXPECT_EQ(err.find("serving on"), std::string::npos) << message << ": a server started:\n"
                                                         << err;
  }
  // Telemetry off: its settings are not used, and not checked.
  RuntimeConfig off = TestConfig();
  off.telemetry.enabled = false;
  off.telemetry.grpc.address = "bogus";
  EXPECT_TRUE(Runtime::Check(off).ok());
}

// gRPC and civetweb create their threads with the default attributes, some on demand later: the
// runtime bounds the default, or each would map (and under locked memory lock) 8 MiB.
TEST(RuntimeTest, TelemetryThreadsGetTheConfiguredStackSize) {
  RuntimeConfig c = TestConfig();
  c.telemetry.thread_stack_size = std::size_t{320} * 1024;
  auto rt = MakeRuntime(c);
  pthread_attr_t attr;
  ASSERT_EQ(pthread_getattr_default_np(&attr), 0);
  std::size_t size = 0;
  pthread_attr_getstacksize(&attr, &size);
  pthread_attr_destroy(&attr);
#if defined(__SANITIZE_THREAD__)
  EXPECT_EQ(size, 1024u * 1024);  // TSan's thread creation needs at least 1 MiB (runtime.cc)
#else
  EXPECT_EQ(size, 320u * 1024);
#endif
  EXPECT_EQ(RuntimeConfig().telemetry.thread_stack_size, 256u * 1024);
  for (std::size_t bad : {std::size_t{4096}, std::size_t{128} << 20}) {
    c.telemetry.thread_stack_size = bad;
    const Status s = Runtime::Create(c).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("telemetry.thread_stack_size is " + std::to_string(bad)),
              std::string::npos)
        << s.message();
  }
}

// A small board's rings: the sizes reach the hub; out of range is a clear error.
TEST(RuntimeTest, RingSizesAreConfigurableWithinTheirRange) {
  RuntimeConfig c = TestConfig();
  c.telemetry.serve_grpc = false;
  c.telemetry.min_ring_capacity = 1024;
  {
    auto rt = MakeRuntime(c);
    Idle a;
    ASSERT_TRUE(rt->AddTask(a, OtherTask("small", milliseconds(1), 0)).ok());
    EXPECT_EQ(rt->hub()->task(0)->ring().capacity(), 1024u);
  }
  c.telemetry.ring_capacity = 4096;
  {
    auto rt = MakeRuntime(c);
    Idle a;
    ASSERT_TRUE(rt->AddTask(a, OtherTask("fixed", milliseconds(1), 0)).ok());
    EXPECT_EQ(rt->hub()->task(0)->ring().capacity(), 4096u);
  }
  c.telemetry.ring_capacity = 0;
  c.telemetry.min_ring_capacity = 100;
  Status s = Runtime::Create(c).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("telemetry.min_ring_capacity is 100 samples — use 256.."),
            std::string::npos)
      << s.message();
  c.telemetry.min_ring_capacity = 8192;
  c.telemetry.ring_capacity = 10;
  s = Runtime::Create(c).status();
  EXPECT_NE(s.message().find("telemetry.ring_capacity is 10 samples"), std::string::npos)
      << s.message();
}

// Issue 18 §4: a small board's histograms: the layout reaches every task's histograms; out of
// range is a clear error naming the field, its range and what it means, before anything starts.
TEST(RuntimeTest, HistogramLayoutIsConfigurableWithinItsRange) {
  RuntimeConfig c = TestConfig();
  c.telemetry.serve_grpc = false;
  c.telemetry.histogram_layout = {.precision_bits = 7, .range_bits = 30};
  {
    auto rt = MakeRuntime(c);
    Idle a;
    ASSERT_TRUE(rt->AddTask(a, OtherTask("small", milliseconds(1), 0)).ok());
    EXPECT_EQ(rt->hub()->config().histogram_layout.bucket_count(), 3072u);
    EXPECT_EQ(rt->hub()->task(0)->latency().layout(), rt->hub()->config().histogram_layout);
    EXPECT_EQ(rt->hub()->task(0)->execution().layout().max_trackable(), std::int64_t{1} << 30);
  }
  c.telemetry.histogram_layout = {.precision_bits = 12, .range_bits = 30};
  Status s = Runtime::Check(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind(
                "RuntimeConfig::telemetry.histogram_layout.precision_bits is 12 — use 4..10", 0),
            0u)
      << s.message();
  c.telemetry.histogram_layout = {.precision_bits = 7, .range_bits = 40};
  s = Runtime::Create(c).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("RuntimeConfig::telemetry.histogram_layout.range_bits is 40 — use "
                              "20..37 (values below 2^bits ns are bucketed",
                              0),
            0u)
      << s.message();
}

TEST(RuntimeTest, DurationEndsRunUntilSignal) {
  RuntimeConfig c = TestConfig();
  c.duration = milliseconds(200);
  auto rt = MakeRuntime(c);
  Idle a;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("endless", milliseconds(1), 0)).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(rt->RunUntilSignal().ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(200));
  EXPECT_EQ(rt->Report(0).stats.state, TaskState::kStopped);
  EXPECT_GT(a.steps.load(), 0u);
}

TEST(RuntimeTest, StopDeliversEverySampleToAStreamThenEndsIt) {
  auto rt = MakeRuntime();
  Idle a;
  constexpr std::uint64_t kCycles = 2000;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("streamed", microseconds(200), kCycles)).ok());
  telemetry::ClientConfig cc;
  cc.address = rt->grpc_address();
  Result<std::unique_ptr<telemetry::Client>> client = telemetry::Client::Create(cc);
  ASSERT_TRUE(client.ok());
  std::unique_ptr<telemetry::SampleStream> stream = (*client)->StreamSamples({});
  ASSERT_TRUE(stream->WaitForReady());
  std::uint64_t received = 0;
  std::uint64_t lost = 0;
  std::thread reader([&] {
    telemetry::v1::StreamSamplesResponse r;
    while (stream->Next(&r)) {
      received += static_cast<std::uint64_t>(r.batch().release_ns_size());
      lost += r.batch().lost_before();
    }
  });
  ASSERT_TRUE(rt->RunUntilSignal().ok());  // tasks end -> Stop(): drain, then streams end
  reader.join();                           // the stream ended: Stop() did not leave it open
  EXPECT_EQ(received + lost, kCycles);
  EXPECT_EQ(lost, 0u);
  // A normal end, not a server going away: OK, and the final message names the last seq.
  const Status end = stream->Finish();
  EXPECT_TRUE(end.ok()) << end.ToString();
  ASSERT_NE(stream->end(), nullptr);
  ASSERT_EQ(stream->end()->tasks_size(), 1);
  EXPECT_EQ(stream->end()->tasks(0).samples(), kCycles);
  EXPECT_EQ(stream->end()->tasks(0).last_seq(), kCycles - 1);
  EXPECT_EQ(stream->end()->tasks(0).sent(), kCycles);
}

TEST(RuntimeTest, SampleLogHoldsEverySampleOfTheRun) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rtloop_runtime_" + std::to_string(getpid()) + ".rtlog"))
                               .string();
  RuntimeConfig c = TestConfig();
  c.telemetry.record_path = path;
  c.telemetry.serve_grpc = false;
  auto rt = MakeRuntime(c);
  Idle a;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("logged", microseconds(500), 300)).ok());
  ASSERT_TRUE(rt->RunUntilSignal().ok());
  Result<telemetry::SampleLogContents> file = telemetry::ReadSampleLog(path);
  std::remove(path.c_str());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->error.ok()) << file->error.ToString();
  EXPECT_EQ(file->header.tool_name(), "runtime_test");
  std::size_t samples = 0;
  for (const auto& b : file->batches) samples += static_cast<std::size_t>(b.latency_ns_size());
  EXPECT_EQ(samples, 300u);
  ASSERT_TRUE(file->trailer.has_value());
  ASSERT_EQ(file->trailer->stats_size(), 1);
  EXPECT_EQ(file->trailer->stats(0).cycles(), 300u);
}

// A program that opens its outputs before it measures gives the runtime the open file: the
// header names the tool, the warm-up cycles are in no sample.
TEST(RuntimeTest, RecordToWritesTheSampleLogIntoAFileOpenedBeforehand) {
  const std::string path = TempPath("given.rtlog");
  Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path, {.what = "--record"});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  RuntimeConfig c = TestConfig();
  c.telemetry.serve_grpc = false;
  auto rt = MakeRuntime(c);
  Idle a;
  TaskConfig tc = OtherTask("logged", microseconds(500), 120);
  tc.warmup_cycles = 20;
  ASSERT_TRUE(rt->AddTask(a, tc).ok());
  telemetry::SampleLogConfig header;
  header.tool_name = "rtloop-cyclic";
  header.command_line = "rtloop-cyclic -l100 --record=x";
  ASSERT_TRUE(rt->RecordTo(std::move(*file), header).ok());
  EXPECT_EQ(rt->RecordTo(telemetry::OutputFile(), header).code(), StatusCode::kFailedPrecondition)
      << "one sample log per run";
  EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
  ASSERT_TRUE(rt->RunUntilSignal().ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  Result<telemetry::SampleLogContents> log = telemetry::ReadSampleLog(path);
  std::remove(path.c_str());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE(log->error.ok()) << log->error.ToString();
  EXPECT_EQ(log->header.tool_name(), "rtloop-cyclic");
  EXPECT_EQ(log->header.command_line(), "rtloop-cyclic -l100 --record=x");
  std::size_t samples = 0;
  std::uint64_t first_seq = UINT64_MAX;
  for (const auto& b : log->batches) {
    samples += static_cast<std::size_t>(b.latency_ns_size());
    first_seq = std::min<std::uint64_t>(first_seq, b.first_seq());
  }
  EXPECT_EQ(samples, 100u) << "the 20 warm-up cycles are not samples";
  EXPECT_EQ(first_seq, 0u);
  EXPECT_EQ(rt->Report(0).stats.warmup_cycles, 20u);
  EXPECT_EQ(a.steps.load(), 120u);
}

// A set-up error after Create() (before or after Start()) leaves no sample log behind, and a
// Start() that fails does the same.
TEST(RuntimeTest, AbandonLeavesNoSampleLog) {
  for (bool start : {false, true}) {
    const std::string path = TempPath(start ? "abandoned-started.rtlog" : "abandoned.rtlog");
    RuntimeConfig c = TestConfig();
    c.telemetry.serve_grpc = false;
    auto rt = MakeRuntime(c);
    Idle a;
    ASSERT_TRUE(rt->AddTask(a, OtherTask("x", milliseconds(1), 0)).ok());
    Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(rt->RecordTo(std::move(*file), {}).ok());
    if (start) {
      ASSERT_TRUE(rt->Start().ok());
    }
    rt->Abandon();
    rt->Abandon();  // idempotent
    EXPECT_TRUE(rt->Stop().ok());
    EXPECT_FALSE(std::filesystem::exists(path)) << "start=" << start;
    EXPECT_FALSE(std::filesystem::exists(path + ".partial")) << "start=" << start;
  }
  RuntimeConfig c = TestConfig();
  c.telemetry.serve_grpc = false;
  c.telemetry.record_path = TempPath("failed-start.rtlog");
  auto rt = MakeRuntime(c);
  Idle a;
  ASSERT_TRUE(rt->AddTask(a, OtherTask("fine", milliseconds(1), 0)).ok());
  struct FailingStart final : PeriodicTask {
    Status OnStart() override { return InternalError("refused"); }
    StepResult Step(const CycleContext&) noexcept override { return StepResult::kStop; }
  } failing;
  ASSERT_TRUE(rt->AddTask(failing, OtherTask("failing", milliseconds(1), 0)).ok());
  EXPECT_FALSE(rt->Start().ok());
  EXPECT_FALSE(std::filesystem::exists(c.telemetry.record_path));
  EXPECT_FALSE(std::filesystem::exists(c.telemetry.record_path + ".partial"));
}

TEST(RuntimeTest, AProgramNamesItsOwnOptionForAnotherAddress) {
  const testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  RuntimeConfig c = TestConfig();
  c.telemetry.grpc.address = "127.0.0.1:" + std::to_string(busy.port());
  c.telemetry.grpc_address_hint = "give another --telemetry=HOST:PORT";
  const Status s = Runtime::Create(c).status();
  EXPECT_NE(s.message().find("(give another --telemetry=HOST:PORT)"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("RuntimeConfig"), std::string::npos) << s.message();
}

TEST(RuntimeTest, TelemetryThreadsLeaveTheCpusOfPinnedTasks) {
  const std::vector<int> cpus = CurrentAffinity();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs in this process's affinity";
  const int rt_cpu = cpus.back();
  const std::vector<int> before = ThreadIds();
  auto rt = MakeRuntime();
  const std::vector<int> after_create = ThreadIds();
  Idle a;
  TaskConfig tc = OtherTask("pinned", milliseconds(1), 0);
  tc.cpus = {rt_cpu};
  ASSERT_TRUE(rt->AddTask(a, tc).ok());
  ASSERT_TRUE(rt->Start().ok());
  std::vector<int> expected(cpus.begin(), cpus.end() - 1);
  EXPECT_EQ(rt->telemetry_cpus(), expected);
  ASSERT_GT(rt->collector()->tid(), 0);
  EXPECT_EQ(AffinityOf(rt->collector()->tid()), expected) << "collector thread";
  int server_threads = 0;
  for (int tid : after_create) {
    if (std::binary_search(before.begin(), before.end(), tid)) continue;
    const std::vector<int> affinity = AffinityOf(tid);
    if (affinity.empty()) continue;  // ended meanwhile
    ++server_threads;
    EXPECT_EQ(affinity, expected) << "gRPC thread " << tid;
  }
  EXPECT_GT(server_threads, 0);
  EXPECT_EQ(AffinityOf(rt->Report(0).stats.tid), std::vector<int>{rt_cpu});
  EXPECT_TRUE(rt->Stop().ok());
}

// In a child process: RunUntilSignal with the default dispositions, a SIGTERM from another
// thread, the report on stdout.
TEST(RuntimeTest, SigtermStopsInOrderAndPrintsTheReport) {
  const rtloop::testing::ForkedResult r = rtloop::testing::RunForked([] {
    RuntimeConfig c = TestConfig();
    c.telemetry.serve_grpc = false;  // no gRPC threads in a forked child
    c.report_at_exit = true;
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(c);
    if (!rt.ok()) return 10;
    Idle a;
    if (!(*rt)->AddTask(a, OtherTask("until-term", milliseconds(1), 0)).ok()) return 11;
    std::thread killer([&a] {
      while (a.steps.load() < 20) std::this_thread::sleep_for(milliseconds(1));
      kill(getpid(), SIGTERM);
    });
    const Status s = (*rt)->RunUntilSignal();
    killer.join();
    return s.ok() && (*rt)->Report(0).stats.state == TaskState::kStopped ? 0 : 12;
  });
  const std::string& text = r.out;
  EXPECT_EQ(r.status, 0) << "10: Create, 11: AddTask, 12: not stopped in order; >128: a signal\n"
                         << text;
  EXPECT_NE(text.find("until-term"), std::string::npos) << text;
  EXPECT_NE(text.find("wake-up latency (us)"), std::string::npos) << text;
}

TEST(RuntimeTest, ExitCodeIsZeroForOkAndOneOtherwise) {
  EXPECT_EQ(ExitCode(Status::Ok()), 0);
  EXPECT_EQ(ExitCode(InvalidArgumentError("bad")), 1);
}

}  // namespace
}  // namespace rtloop
