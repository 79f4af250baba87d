// Faults around a running pipeline in this process (issue 13): clients that come and go by the
// dozen, a streaming client SIGKILLed, a task the watchdog stops while clients stream, Prometheus
// scrapes while the runtime shuts down. After each: the tasks ran their cycles, the streams
// account for every sample, the statistics agree, no descriptor, stream or thread is left.
// Everything runs on 127.0.0.1 with free ports; every wait is bounded.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "fault_util.h"
#include "grpc_test_util.h"
#include "http_test_util.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/client.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::faults {
namespace {

using ::rtloop::testing::ChildProcess;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using telemetry::Client;
using telemetry::SampleStream;
using telemetry::testing::Background;
using telemetry::testing::Cfg;
using telemetry::testing::Connect;
using telemetry::testing::CountProcEntries;
using telemetry::testing::HttpGet;
using telemetry::testing::HttpReply;
using telemetry::testing::ListFds;
using telemetry::testing::OtherTask;
using telemetry::testing::ReadStream;
using telemetry::testing::Rig;
using telemetry::testing::RigConfig;
using telemetry::testing::ScratchDir;
using telemetry::testing::StreamCheck;
using telemetry::testing::TestRuntimeConfig;
using telemetry::testing::WaitFor;
using telemetry::testing::Watchdog;
namespace v1 = telemetry::v1;

// Reads a stream opened before the tasks started to its final message and checks it against the
// hub: per task, samples = the executor's cycles = sent + lost + ring_dropped, sent = received.
void ExpectStreamAccountsForEverySample(SampleStream& stream, Rig& rig, const char* who) {
  StreamCheck check;
  const Status read = ReadStream(
      stream, check, [] { return false; }, milliseconds(20'000));
  EXPECT_TRUE(read.ok()) << who << ": " << read.ToString();
  const v1::StreamEnd* end = stream.end();
  ASSERT_NE(end, nullptr) << who << ": no final message";
  EXPECT_EQ(end->reason(), v1::STREAM_END_REASON_RUN_ENDED) << who;
  ASSERT_EQ(static_cast<std::size_t>(end->tasks_size()), rig.ids().size()) << who;
  for (const v1::TaskStreamEnd& t : end->tasks()) {
    const std::uint64_t cycles = rig.executor().Stats(t.task_id()).cycles;
    EXPECT_EQ(t.samples(), cycles) << who << " task " << t.task_id();
    EXPECT_EQ(t.sent(), check.received[t.task_id()]) << who << " task " << t.task_id();
    EXPECT_EQ(t.lost_total(), check.lost[t.task_id()]) << who << " task " << t.task_id();
    EXPECT_EQ(t.sent() + t.lost_total() + t.ring_dropped(), t.samples())
        << who << " task " << t.task_id() << ": every seq accounted for";
  }
}

// Warms gRPC up (its first channel opens descriptors that stay: epoll, eventfds), then counts.
int SettledFdCount(const std::string& address) {
  EXPECT_TRUE(Connect(address)->ListTasks().ok());
  std::this_thread::sleep_for(milliseconds(200));
  return FdCount(getpid());
}

// ----------------------------------------------------------------------------------------------

// 50 clients, each connecting, opening a stream, reading one message and going away, over and
// over while two 4 kHz tasks run; one client streams the whole run.
TEST(StreamFaults, FiftyClientsComingAndGoingDuringARunCostTheTasksNoCycleAndLeaveNothing) {
#if defined(__SANITIZE_THREAD__)
  // Measured in a clean-clone CI run: 50 gRPC clients under ThreadSanitizer on 2 CPUs took 92 s
  // for what takes 2 s, rounds timed out, and the reports it raised were gRPC's own
  // (tests/sanitizers/README.md). The ASan build and the normal build run it.
  GTEST_SKIP() << "too slow under ThreadSanitizer (50 gRPC clients); runs in the other builds";
#endif
  constexpr std::uint64_t kCycles = 8000;  // 2 s at 4 kHz
  constexpr int kClients = 50;
  constexpr int kRounds = 4;
  RigConfig rc = Cfg(2, microseconds(250), kCycles);
  rc.server.max_streams = kClients + 1;
  Rig rig;
  ASSERT_TRUE(rig.Build(rc).ok());
  const int fds_before = SettledFdCount(rig.address());
  const int threads_before = CountProcEntries("task");
  std::unique_ptr<Client> steady_client = Connect(rig.address());
  std::unique_ptr<SampleStream> steady = steady_client->StreamSamples({});
  ASSERT_TRUE(steady->WaitForReady());
  ASSERT_TRUE(rig.StartTasks().ok());
  const auto start = steady_clock::now();

  std::atomic<int> rounds{0};
  std::atomic<int> refused{0};
  std::atomic<int> failed{0};
  std::mutex mu;
  std::string first_failure;
  std::vector<std::thread> clients;
  clients.reserve(static_cast<std::size_t>(kClients));
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        std::unique_ptr<Client> c = Connect(rig.address());
        std::unique_ptr<SampleStream> s = c->StreamSamples({});
        v1::StreamSamplesResponse msg;
        // Generous: under ThreadSanitizer on a loaded 2-CPU machine a first message took > 10 s.
        Watchdog<SampleStream> dog(*s, milliseconds(30'000));
        const bool got = s->Next(&msg);
        dog.Disarm();
        if (got) s->Cancel();  // a refused stream ended by itself: Finish() says why
        const Status end = s->Finish();
        if (got) {
          ++rounds;
        } else if (end.code() == StatusCode::kResourceExhausted) {
          ++refused;
        } else {
          ++failed;
          std::lock_guard lock(mu);
          if (first_failure.empty())
            first_failure =
                end.ToString() + " at " +
                std::to_string(
                    std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count()) +
                " ms, round " + std::to_string(r);
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  rig.WaitTasks();
  const auto took = steady_clock::now() - start;
  Background finisher([&] { rig.server().Finish(); });
  ExpectStreamAccountsForEverySample(*steady, rig, "the steady client");
  finisher.Join();

  EXPECT_EQ(rounds + refused, kClients * kRounds)
      << failed << " rounds failed otherwise, the first: " << first_failure;
  EXPECT_GT(rounds, kClients) << "most rounds got their message";
  for (TaskId id : rig.ids()) {
    const TaskStatsSnapshot s = rig.executor().Stats(id);
    EXPECT_EQ(s.cycles, kCycles);
    EXPECT_EQ(s.state, TaskState::kStopped);
  }
  // Timing kept, tolerantly, by the tasks' own count: with kSkip every release that passed is a
  // cycle or a missed release, so (cycles + missed) x 250 us is how long the tasks ran (8000
  // cycles: 2 s). A starved task would count far more. (Not the wall time of the whole test:
  // that is the clients', which under a sanitizer take much longer than the tasks.)
  for (TaskId id : rig.ids()) {
    const TaskStatsSnapshot s = rig.executor().Stats(id);
    EXPECT_LT(
        std::chrono::microseconds(250) * static_cast<std::int64_t>(s.cycles + s.missed_releases),
        std::chrono::seconds(20))
        << "task " << id << ": " << s.missed_releases << " missed releases";
  }
  std::printf(
      "50 clients x %d rounds in %.2f s: %d got a message, %d refused, missed releases %llu\n",
      kRounds, std::chrono::duration<double>(took).count(), rounds.load(), refused.load(),
      static_cast<unsigned long long>(rig.executor().Stats(rig.ids()[0]).missed_releases));
  steady.reset();
  steady_client.reset();
  EXPECT_TRUE(WaitFor([&] { return rig.server().open_streams() == 0; }, milliseconds(5000)));
  EXPECT_TRUE(FdsBackTo(getpid(), fds_before, 8)) << ListFds();
  EXPECT_LE(CountProcEntries("task"), threads_before + 4);
}

// rtloop-cyclic-sink, a real client process, SIGKILLed in the middle of its stream: its stream
// and connection are freed, the tasks run their cycles, the other sink and an in-process client
// still receive (or account for) every sample.
TEST(StreamFaults, ASinkKilledMidStreamLeavesTheTasksAndTheOtherClientsWhole) {
  constexpr std::uint64_t kCycles = 8000;
  const ScratchDir dir("sink_killed");
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(2, microseconds(250), kCycles)).ok());
  const int fds_before = SettledFdCount(rig.address());
  std::unique_ptr<Client> client = Connect(rig.address());
  std::unique_ptr<SampleStream> stream = client->StreamSamples({});
  ASSERT_TRUE(stream->WaitForReady());
  ChildProcess victim({TargetFile("rtloop-cyclic-sink"), rig.address()}, dir / "victim.out");
  ChildProcess survivor({TargetFile("rtloop-cyclic-sink"), rig.address()}, dir / "survivor.out");
  ASSERT_TRUE(victim.started()) << victim.error();
  ASSERT_TRUE(survivor.started()) << survivor.error();
  ASSERT_TRUE(WaitFor([&] { return rig.server().open_streams() == 3; }, milliseconds(10'000)))
      << rig.server().open_streams() << " streams open";
  ASSERT_TRUE(rig.StartTasks().ok());
  std::this_thread::sleep_for(milliseconds(500));  // mid-stream: a quarter of the run
  ASSERT_EQ(kill(victim.pid(), SIGKILL), 0);
  EXPECT_EQ(victim.Wait(milliseconds(5000)), 128 + SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return rig.server().open_streams() == 2; }, milliseconds(5000)))
      << "the killed sink's stream is still open";

  rig.WaitTasks();
  Background finisher([&] { rig.server().Finish(); });
  ExpectStreamAccountsForEverySample(*stream, rig, "the in-process client");
  EXPECT_EQ(survivor.Wait(milliseconds(15'000)), 0) << survivor.Output();
  EXPECT_NE(survivor.Output().find("end=run-ended"), std::string::npos) << survivor.Output();
  finisher.Join();
  for (TaskId id : rig.ids()) EXPECT_EQ(rig.executor().Stats(id).cycles, kCycles);
  stream.reset();
  client.reset();
  EXPECT_EQ(rig.server().open_streams(), 0u);
  EXPECT_TRUE(FdsBackTo(getpid(), fds_before, 8)) << ListFds();
  EXPECT_TRUE(ChildrenOf(getpid()).empty());
}

// ----------------------------------------------------------------------------------------------

// Overruns from cycle kFaultAt on: each Step() busy-waits two periods.
class FaultingTask final : public PeriodicTask {
 public:
  static constexpr std::uint64_t kFaultAt = 200;
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle >= kFaultAt) {
      const auto until = steady_clock::now() + 2 * ctx.period;
      while (steady_clock::now() < until) {
      }
    }
    return StepResult::kContinue;
  }
  void OnFault(const CycleContext& /*ctx*/) noexcept override {
    faulted_.store(true, std::memory_order_relaxed);
  }
  bool faulted() const { return faulted_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> faulted_{false};
};

// The watchdog stops one task (3 overruns in a row) while two clients stream: the other task
// runs all its cycles, both streams end normally and account for every sample of both tasks, the
// report and GetStats say "fault".
TEST(StreamFaults, AWatchdogFaultWhileClientsStreamStopsOnlyThatTaskAndEveryStreamAccountsForIt) {
  constexpr std::uint64_t kCycles = 4000;  // 2 s at 2 kHz
  const RuntimeConfig rc = TestRuntimeConfig("fault_rig");
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  FaultingTask faulty;
  telemetry::testing::IdleTask steady;
  TaskConfig tc = OtherTask("faulty", microseconds(1000));
  tc.watchdog.max_consecutive_overruns = 3;
  Result<TaskId> faulty_id = (*rt)->AddTask(faulty, tc);
  ASSERT_TRUE(faulty_id.ok()) << faulty_id.status().ToString();
  tc.name = "steady";
  tc.period = microseconds(500);
  tc.watchdog = {};
  tc.max_cycles = kCycles;
  Result<TaskId> steady_id = (*rt)->AddTask(steady, tc);
  ASSERT_TRUE(steady_id.ok());
  std::unique_ptr<Client> client = Connect((*rt)->grpc_address());
  std::unique_ptr<SampleStream> a = client->StreamSamples({});
  std::unique_ptr<SampleStream> b = Connect((*rt)->grpc_address())->StreamSamples({});
  ASSERT_TRUE(a->WaitForReady());
  ASSERT_TRUE(b->WaitForReady());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();  // the faulty task ends at its fault, the steady one at kCycles

  const TaskStatsSnapshot f = (*rt)->executor().Stats(*faulty_id);
  EXPECT_EQ(f.state, TaskState::kFault);
  EXPECT_EQ(f.faults, 1u);
  EXPECT_TRUE(faulty.faulted()) << "OnFault() ran";
  EXPECT_LE(f.cycles, FaultingTask::kFaultAt + 3) << "the watchdog trips at the third overrun";
  EXPECT_GE(f.overruns, 3u);
  const TaskStatsSnapshot s = (*rt)->executor().Stats(*steady_id);
  EXPECT_EQ(s.state, TaskState::kStopped);
  EXPECT_EQ(s.cycles, kCycles) << "the other task kept its cycles";

  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->tasks_size(), 2);
  EXPECT_EQ(stats->tasks(0).cycles(), f.cycles);
  EXPECT_EQ(stats->tasks(1).cycles(), kCycles);
  const std::vector<TaskReport> reports = (*rt)->Reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].stats.state, TaskState::kFault);
  EXPECT_EQ(reports[0].stats.cycles, f.cycles);

  Background stopper([&] { EXPECT_TRUE((*rt)->Stop().ok()); });
  for (SampleStream* stream : {a.get(), b.get()}) {
    StreamCheck check;
    const Status read = ReadStream(
        *stream, check, [] { return false; }, milliseconds(20'000));
    EXPECT_TRUE(read.ok()) << read.ToString();
    const v1::StreamEnd* end = stream->end();
    ASSERT_NE(end, nullptr);
    ASSERT_EQ(end->tasks_size(), 2);
    EXPECT_EQ(end->tasks(0).samples(), f.cycles);
    EXPECT_EQ(end->tasks(1).samples(), kCycles);
    for (const v1::TaskStreamEnd& t : end->tasks()) {
      EXPECT_EQ(t.sent(), check.received[t.task_id()]);
      EXPECT_EQ(t.sent() + t.lost_total() + t.ring_dropped(), t.samples()) << t.task_id();
    }
  }
  stopper.Join();
}

// ----------------------------------------------------------------------------------------------

// Scrapers hammer /metrics while the runtime stops: each reply is a whole exposition (200 with
// every task's series and the final newline) or a refusal (503, or no connection once the
// endpoint is gone), never a cut or garbled 200; Stop() ends in bounded time and leaves no
// thread or descriptor.
TEST(StreamFaults, PrometheusScrapesDuringShutdownGetAWholeReplyOrNone) {
  const int threads_before = CountProcEntries("task");
  const int fds_before = FdCount(getpid());
  std::atomic<int> whole{0};
  std::atomic<int> busy{0};
  std::atomic<int> gone{0};
  std::atomic<int> bad{0};
  std::string first_bad;
  std::mutex mu;
  {
    RuntimeConfig rc = TestRuntimeConfig("scrape_rig");
    rc.telemetry.serve_grpc = false;  // gRPC's global threads would outlive the runtime
    // Scrapes back to back: the per-client rate limit (its own test) would answer most with 429.
    rc.telemetry.http = telemetry::HttpConfig{
        .address = "127.0.0.1:0", .max_requests_per_second = 0, .log_to_stderr = false};
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    std::vector<telemetry::testing::IdleTask> tasks(2);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      ASSERT_TRUE(
          (*rt)->AddTask(tasks[i], OtherTask("t" + std::to_string(i), microseconds(250))).ok());
    }
    const int port = (*rt)->http()->port();
    ASSERT_TRUE((*rt)->Start().ok());
    std::atomic<bool> stopped{false};
    std::vector<std::thread> scrapers;
    scrapers.reserve(4);
    for (int i = 0; i < 4; ++i) {
      scrapers.emplace_back([&] {
        // Bounded: until a scrape after the stop found no endpoint, at most 5000 scrapes.
        for (int n = 0; n < 5000; ++n) {
          const bool after_stop = stopped.load();
          const HttpReply r = HttpGet(port, "/metrics", {}, milliseconds(5000));
          const bool complete =
              r.status == 200 && !r.body.empty() && r.body.back() == '\n' &&
              r.body.find("rtloop_task_cycles_total{task=\"t0\"") != std::string::npos &&
              r.body.find("rtloop_task_cycles_total{task=\"t1\"") != std::string::npos;
          if (complete) {
            ++whole;
          } else if (r.status == 503) {
            ++busy;
          } else if (r.status == 0) {
            ++gone;  // refused, reset or closed before a reply: the endpoint is going away
            if (after_stop) return;
          } else {
            ++bad;
            std::lock_guard lock(mu);
            if (first_bad.empty()) {
              first_bad = std::to_string(r.status) + " " + r.headers + "\n" + r.body.substr(0, 200);
            }
          }
        }
      });
    }
    // Scrapes under way and both tasks past their first cycle (on a loaded machine the tasks'
    // SCHED_OTHER threads can start after the first scrapes, and a task stopped before its first
    // release rightly reports 0 cycles).
    const auto cycled = [&] {
      for (const TaskReport& r : (*rt)->Reports()) {
        if (r.stats.cycles == 0) return false;
      }
      return true;
    };
    ASSERT_TRUE(WaitFor([&] { return whole.load() >= 8 && cycled(); }, milliseconds(10'000)));
    const auto start = steady_clock::now();
    const Status s = (*rt)->Stop();
    const auto took = steady_clock::now() - start;
    stopped = true;
    for (std::thread& t : scrapers) t.join();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_LT(took, std::chrono::seconds(10)) << "Stop() waited on the scrapers";
    for (const TaskReport& r : (*rt)->Reports()) {
      EXPECT_GT(r.stats.cycles, 0u);
      EXPECT_EQ(r.stats.state, TaskState::kStopped);
    }
  }
  EXPECT_EQ(bad, 0) << "a cut or garbled reply: " << first_bad;
  EXPECT_GT(whole, 0);
  std::printf("scrapes: %d whole, %d busy (503), %d without a reply\n", whole.load(), busy.load(),
              gone.load());
  EXPECT_TRUE(FdsBackTo(getpid(), fds_before, 4)) << ListFds();
  EXPECT_TRUE(
      WaitFor([&] { return CountProcEntries("task") <= threads_before + 2; }, milliseconds(5000)))
      << CountProcEntries("task") << " threads, " << threads_before << " before";
}

}  // namespace
}  // namespace rtloop::faults
