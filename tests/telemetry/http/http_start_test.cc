// The HTTP endpoint's life: in an rtloop::Runtime (TelemetryConfig::http), its start-up errors
// (port in use, bad address, unreadable token file, TLS asked for, limits out of range), and
// misbehaving clients (slow ones, 100 concurrent scrapers), each a clear error or a refused
// request, with the RT tasks unaffected and nothing leaked. What it serves is
// http_server_test.cc's.
//
//   ctest --test-dir build -R 'HttpRuntimeTest|HttpServerStartTest|HttpLoadTest'
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.h"
#include "port_holder.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/http_server.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::ConnectLoopback;
using testing::CountProcEntries;
using testing::HttpGet;
using testing::HttpReply;
using testing::Rig;
using testing::RigConfig;
using testing::Sample;
using testing::ScratchDir;

void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path) << content;
}

// ---------------------------------------------------------------------------------------------
// rtloop::Runtime owns the endpoint through TelemetryConfig::http.

RuntimeConfig RuntimeWithHttp() {
  RuntimeConfig rc;
  rc.app_name = "http_runtime_test";
  rc.executor.lock_memory = false;
  rc.executor.start_delay = milliseconds(5);
  rc.telemetry.grpc.address = "127.0.0.1:0";
  rc.telemetry.grpc.log_to_stderr = false;
  rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  return rc;
}

TEST(HttpRuntimeTest, RuntimeServesMetricsAndThePageWhenHttpIsSetAndStopsItWithTheRest) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(RuntimeWithHttp());
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  std::vector<testing::IdleTask> tasks(2);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    TaskConfig tc;
    tc.name = i == 0 ? "position" : "velocity";
    tc.period = std::chrono::microseconds(500);
    tc.policy = SchedPolicy::kOther;
    tc.priority = 0;
    tc.max_cycles = 400;
    ASSERT_TRUE((*rt)->AddTask(tasks[i], tc).ok());
  }
  ASSERT_NE((*rt)->http(), nullptr);
  const int port = (*rt)->http()->port();
  EXPECT_EQ((*rt)->http_address(), "127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  // The counters are those of the last reading (<= 1 s old, with the histograms): wait for the
  // reading that has the whole run.
  HttpReply m;
  for (int i = 0; i < 200; ++i) {
    m = HttpGet(port, "/metrics");
    ASSERT_EQ(m.status, 200) << m.error;
    if (Sample(m.body, "rtloop_task_cycles_total{task=\"velocity\"") == 400.0 &&
        Sample(m.body, "rtloop_task_cycles_total{task=\"position\"") == 400.0) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(Sample(m.body, "rtloop_task_cycles_total{task=\"position\""), 400.0);
  EXPECT_EQ(Sample(m.body, "rtloop_task_cycles_total{task=\"velocity\""), 400.0);
  EXPECT_NE(m.body.find("rtloop_task_subscriber_lost_samples_total{task=\"position\""),
            std::string::npos);
  EXPECT_EQ(HttpGet(port, "/").status, 200);
  ASSERT_TRUE((*rt)->Stop().ok());
  const int fd = ConnectLoopback(port);
  EXPECT_LT(fd, 0) << "the endpoint stops with the runtime";
  if (fd >= 0) close(fd);
}

TEST(HttpRuntimeTest, WithoutHttpConfigThereIsNoEndpoint) {
  RuntimeConfig rc = RuntimeWithHttp();
  rc.telemetry.http.reset();
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  EXPECT_EQ((*rt)->http(), nullptr);
  EXPECT_EQ((*rt)->http_address(), "");
}

TEST(HttpRuntimeTest, BadHttpConfigFailsCreateNamingTheField) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  RuntimeConfig in_use = RuntimeWithHttp();
  in_use.telemetry.http->address = "127.0.0.1:" + std::to_string(busy.port());
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(in_use);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(rt.status().message().find("telemetry.http->address"), std::string::npos)
      << rt.status().message();
  RuntimeConfig off = RuntimeWithHttp();
  off.telemetry.enabled = false;
  Result<std::unique_ptr<Runtime>> rt_off = Runtime::Create(off);
  ASSERT_FALSE(rt_off.ok());
  EXPECT_NE(rt_off.status().message().find("telemetry.enabled"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Start-up errors

Status StartError(const HttpConfig& hc) {
  TelemetryHub hub;
  HttpConfig c = hc;
  c.log_to_stderr = false;
  Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(c, hub);
  return s.ok() ? Status::Ok() : s.status();
}

TEST(HttpServerStartTest, PortInUseNamesThePortAndTheFix) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  const int port = busy.port();
  const Status s = StartError({.address = "127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_NE(s.message().find(std::to_string(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
}

TEST(HttpServerStartTest, BadAddressesAreClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"nonsense", "HOST:PORT"},
      {"127.0.0.1:99999", "port"},
      {"[::1]:0", "IPv6"},
      {"192.0.2.1:0", "192.0.2.1"},  // TEST-NET-1: not an address of this machine
  };
  for (const auto& [address, needle] : cases) {
    const Status s = StartError({.address = address});
    EXPECT_FALSE(s.ok()) << address;
    EXPECT_NE(s.message().find(needle), std::string::npos) << address << ": " << s.message();
  }
}

TEST(HttpServerStartTest, UnreadableOrEmptyTokenFileNamesTheFile) {
  const ScratchDir dir("http_bad_token");
  WriteFile(dir / "empty", "  \n");
  for (const std::string& path :
       {(dir / "missing").string(), (dir / "empty").string(), dir.path().string()}) {
    HttpConfig hc;
    hc.address = "127.0.0.1:0";
    hc.token_file = path;
    const Status s = StartError(hc);
    EXPECT_FALSE(s.ok()) << path;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

TEST(HttpServerStartTest, TlsIsRefusedWithTheReason) {
  const Status s =
      StartError({.address = "127.0.0.1:0", .tls_cert_file = "c.pem", .tls_key_file = "k.pem"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("OpenSSL 3"), std::string::npos) << s.message();
}

TEST(HttpServerStartTest, LimitsOutOfRangeNameTheField) {
  const std::pair<HttpConfig, const char*> cases[] = {
      {{.address = "127.0.0.1:0", .threads = 0}, "HttpConfig.threads"},
      {{.address = "127.0.0.1:0", .queue = 0}, "HttpConfig.queue"},
      {{.address = "127.0.0.1:0", .max_in_flight = 9}, "HttpConfig.max_in_flight"},
      {{.address = "127.0.0.1:0", .request_timeout = milliseconds(1)},
       "HttpConfig.request_timeout"},
      {{.address = "127.0.0.1:0", .max_requests_per_second = -1},
       "HttpConfig.max_requests_per_second"},
      {{.address = "127.0.0.1:0", .max_requests_burst = 0.5}, "max_requests_burst"},
      {{.address = "127.0.0.1:0", .window = std::chrono::seconds(0)}, "window"},
      {{.address = "127.0.0.1:0", .cpus = {100000}}, "HttpConfig.cpus"},
  };
  for (const auto& [config, field] : cases) {
    const Status s = StartError(config);
    EXPECT_FALSE(s.ok()) << field;
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  }
}

// ---------------------------------------------------------------------------------------------
// Misbehaving clients: the RT tasks keep running, other clients are served, nothing leaks.

class HttpLoadTest : public ::testing::Test {
 protected:
  // Tasks that run until stopped (1 ms period, SCHED_OTHER) and a server with a short timeout.
  void Build(int tasks, HttpConfig hc) {
    RigConfig rc;
    rc.tasks = tasks;
    rc.period = std::chrono::milliseconds(1);
    rc.cycles = 0;
    ASSERT_TRUE(rig_.Build(rc).ok());
    ASSERT_TRUE(rig_.StartTasks().ok());
    // What the process has without the HTTP server (the rig's gRPC server keeps its threads).
    fds_before_ = CountProcEntries("fd");
    threads_before_ = CountProcEntries("task");
    hc.address = "127.0.0.1:0";
    hc.log_to_stderr = false;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(
        hc, rig_.hub(), {.executor = &rig_.executor(), .collector = &rig_.collector()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    http_ = std::move(*s);
  }
  std::uint64_t Cycles() {
    std::uint64_t n = 0;
    for (const TaskId id : rig_.ids()) n += rig_.executor().Stats(id).cycles;
    return n;
  }
  void ExpectTasksUnaffected() {
    for (const TaskId id : rig_.ids()) {
      const TaskStatsSnapshot s = rig_.executor().Stats(id);
      EXPECT_EQ(s.state, TaskState::kRunning);
      EXPECT_EQ(rig_.hub().task(id)->ring().writer().dropped(), 0u);
    }
  }
  // After Stop(): every socket and thread the server had is gone (the tasks still run).
  void ExpectNothingLeaked() {
    http_->Stop();
    http_.reset();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline &&
           (CountProcEntries("fd") > fds_before_ || CountProcEntries("task") > threads_before_)) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_LE(CountProcEntries("fd"), fds_before_) << testing::ListFds();
    EXPECT_LE(CountProcEntries("task"), threads_before_);
  }
  static void WaitFor(const std::function<bool()>& done, milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }

  int fds_before_ = 0;
  int threads_before_ = 0;
  Rig rig_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpLoadTest, SlowClientsThatNeverReadOrNeverSendHoldOnlyTheirOwnWorkerUntilTheTimeout) {
  Build(64, {.threads = 4, .max_in_flight = 2, .request_timeout = milliseconds(700)});
  std::this_thread::sleep_for(milliseconds(1200));  // the server's own windows have a reading
  // A client that asks for /metrics with a tiny receive buffer and never reads its reply.
  const int reader = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 1024;
  setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(http_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(reader, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string get = "GET /metrics HTTP/1.0\r\n\r\n";
  ASSERT_EQ(send(reader, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
  // A client that connects and never sends its request.
  const int mute = ConnectLoopback(http_->port());
  ASSERT_GE(mute, 0);
  const std::uint64_t cycles_before = Cycles();
  for (int i = 0; i < 10; ++i) {
    const HttpReply r = HttpGet(http_->port(), "/metrics");
    EXPECT_TRUE(r.status == 200 || r.status == 503) << r.status << " " << r.error;
  }
  // Within the timeout (plus civetweb's polling) both stalled connections are released.
  WaitFor([&] { return http_->in_flight() == 0; }, milliseconds(5000));
  EXPECT_EQ(http_->in_flight(), 0u);
  EXPECT_EQ(HttpGet(http_->port(), "/metrics").status, 200);
  EXPECT_GT(Cycles(), cycles_before);
  ExpectTasksUnaffected();
  close(reader);
  close(mute);
  ExpectNothingLeaked();
}

TEST_F(HttpLoadTest, HundredConcurrentScrapersEachGetMetricsOrARefusal) {
  Build(8, {.threads = 4,
            .queue = 16,
            .max_in_flight = 2,
            .request_timeout = milliseconds(2000),
            .max_requests_per_second = 0});  // concurrency alone: 503, never 429
  std::this_thread::sleep_for(milliseconds(1100));
  const std::uint64_t cycles_before = Cycles();
  constexpr int kScrapers = 100;
  std::vector<HttpReply> replies(kScrapers);
  std::vector<std::thread> scrapers;
  std::atomic<bool> go{false};
  scrapers.reserve(static_cast<std::size_t>(kScrapers));
  for (int i = 0; i < kScrapers; ++i) {
    scrapers.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      replies[static_cast<std::size_t>(i)] =
          HttpGet(http_->port(), "/metrics", {}, milliseconds(20'000));
    });
  }
  go.store(true);
  for (std::thread& t : scrapers) t.join();
  int ok = 0;
  int busy = 0;
  for (const HttpReply& r : replies) {
    if (r.status == 200) {
      ++ok;
      EXPECT_NE(r.body.find("rtloop_task_cycles_total"), std::string::npos);
    } else {
      EXPECT_EQ(r.status, 503) << r.error;
      EXPECT_NE(r.headers.find("Retry-After"), std::string::npos);
      ++busy;
    }
  }
  EXPECT_EQ(ok + busy, kScrapers);
  EXPECT_GT(ok, 0);
  EXPECT_EQ(http_->in_flight(), 0u);
  EXPECT_GT(Cycles(), cycles_before);
  ExpectTasksUnaffected();
  ExpectNothingLeaked();
}

TEST_F(HttpLoadTest, StopIsIdempotentAndReleasesThePort) {
  Build(1, {});
  const int port = http_->port();
  EXPECT_EQ(HttpGet(port, "/").status, 200);
  http_->Stop();
  http_->Stop();
  const int fd = ConnectLoopback(port);
  EXPECT_LT(fd, 0);
  if (fd >= 0) close(fd);
  ExpectNothingLeaked();
}

}  // namespace
}  // namespace rtloop::telemetry
