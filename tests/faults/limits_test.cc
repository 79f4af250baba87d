// The limits and promises of the README's "Security model" that no other test covers: the
// largest gRPC request and HTTP request head the servers take, the API having no call that
// changes anything, and no library that serves requests being able to start a process.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "grpc_test_util.h"
#include "http_test_util.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/v1/telemetry.grpc.pb.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::faults {
namespace {

using ::rtloop::testing::ChildProcess;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using telemetry::testing::Cfg;
using telemetry::testing::Connect;
using telemetry::testing::HttpGet;
using telemetry::testing::HttpReply;
using telemetry::testing::Rig;
using telemetry::testing::RigConfig;
using telemetry::testing::ScratchDir;
namespace v1 = telemetry::v1;

// gRPC's default limit on a received message, which the server keeps: 4 MiB.
constexpr std::size_t kGrpcMaxRequestBytes = 4u << 20;

grpc::StatusCode GetStatsWithTaskIds(const std::string& address, std::size_t ids) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);  // the client would refuse to send it otherwise
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<v1::Telemetry::Stub> stub = v1::Telemetry::NewStub(channel);
  v1::GetStatsRequest request;
  for (std::size_t i = 0; i < ids; ++i) request.add_task_ids(0);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetStatsResponse response;
  return stub->GetStats(&context, request, &response).error_code();
}

TEST(SecurityLimits, AGrpcRequestAbove4MiBIsRefusedAndTheServerServesOn) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, microseconds(1000), 10)).ok());
  // Packed task ids of value 0: one byte each, plus the field's few bytes.
  EXPECT_EQ(GetStatsWithTaskIds(rig.address(), kGrpcMaxRequestBytes + 1024),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(GetStatsWithTaskIds(rig.address(), 1000), grpc::StatusCode::OK)
      << "repeated ids are reported once: a small request is served";
  EXPECT_TRUE(Connect(rig.address())->ListTasks().ok());
}

// civetweb's max_request_size (16 KiB by default, which the server keeps) bounds a request's
// head: a larger one gets no reply with data and the endpoint serves on.
TEST(SecurityLimits, AnHttpRequestHeadAbove16KiBIsRefusedAndTheServerServesOn) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, microseconds(1000), 10)).ok());
  Result<std::unique_ptr<telemetry::HttpServer>> http =
      telemetry::HttpServer::Start({.address = "127.0.0.1:0", .log_to_stderr = false}, rig.hub());
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  const int port = (*http)->port();
  const HttpReply fits = HttpGet(port, "/metrics", "X-Pad: " + std::string(8u << 10, 'a') + "\r\n");
  EXPECT_EQ(fits.status, 200) << fits.error;
  const HttpReply big = HttpGet(port, "/metrics", "X-Pad: " + std::string(32u << 10, 'a') + "\r\n");
  EXPECT_NE(big.status, 200) << "a 32 KiB request head was served";
  EXPECT_EQ(big.body.find("rtloop_task_cycles_total"), std::string::npos);
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
}

// One client address starts at most max_calls_per_second calls a second (bursts of
// max_calls_burst), checked before the token: beyond, RESOURCE_EXHAUSTED naming the limit, counted
// in GetStats; its budget refills with time.
TEST(SecurityLimits, AGrpcClientAddressStartsAtMostItsRateOfCalls) {
  RigConfig rc = Cfg(1, microseconds(1000), 10);
  rc.server.max_calls_per_second = 1;
  rc.server.max_calls_burst = 3;
  Rig rig;
  ASSERT_TRUE(rig.Build(rc).ok());
  std::unique_ptr<telemetry::Client> client = Connect(rig.address());
  int refused = 0;
  for (int i = 0; i < 6; ++i) {
    Result<v1::ListTasksResponse> r = client->ListTasks();
    if (i < 3) {
      EXPECT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    } else if (!r.ok()) {
      ++refused;
      EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
      EXPECT_NE(r.status().message().find("ServerConfig::max_calls_per_second"), std::string::npos)
          << r.status().message();
    }
  }
  // Three quick calls beyond the burst: each would need a second of refill to pass.
  EXPECT_GE(refused, 2);
  std::this_thread::sleep_for(milliseconds(1200));
  Result<v1::GetStatsResponse> stats = client->GetStats({}, false);
  ASSERT_TRUE(stats.ok()) << "the budget refilled: " << stats.status().ToString();
  EXPECT_EQ(stats->calls_rate_limited(), static_cast<std::uint64_t>(refused));
}

// The same for the HTTP endpoint's data requests (429, Retry-After); the page's files are not
// counted, and neither are other clients' requests.
TEST(SecurityLimits, AnHttpClientAddressMakesAtMostItsRateOfDataRequests) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, microseconds(1000), 10)).ok());
  Result<std::unique_ptr<telemetry::HttpServer>> http =
      telemetry::HttpServer::Start({.address = "127.0.0.1:0",
                                    .max_requests_per_second = 1,
                                    .max_requests_burst = 3,
                                    .log_to_stderr = false},
                                   rig.hub());
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  const int port = (*http)->port();
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
  EXPECT_EQ(HttpGet(port, "/api/v1/tasks").status, 200);
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
  int refused = 0;
  for (int i = 0; i < 3; ++i) {
    const HttpReply r = HttpGet(port, i == 1 ? "/api/v1/tasks" : "/metrics");
    if (r.status == 200) continue;
    ++refused;
    EXPECT_EQ(r.status, 429) << r.error;
    EXPECT_NE(r.headers.find("Retry-After: 1"), std::string::npos) << r.headers;
    EXPECT_NE(r.body.find("HttpConfig.max_requests_per_second"), std::string::npos) << r.body;
  }
  EXPECT_GE(refused, 2);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(HttpGet(port, "/").status, 200) << "the page is free";
  std::this_thread::sleep_for(milliseconds(1200));
  const HttpReply m = HttpGet(port, "/metrics");
  ASSERT_EQ(m.status, 200) << "the budget refilled";
  EXPECT_NE(m.body.find("rtloop_http_requests_total{code=\"429\"} " + std::to_string(refused)),
            std::string::npos)
      << m.body.substr(0, 2000);
}

// rtloop-cyclic's --token-file guards both of its servers: with --metrics alone (or also) the
// data of /metrics and /api/v1/tasks needs it; the page's files do not. (It guarded gRPC only.)
TEST(SecurityLimits, RtloopCyclicsTokenFileGuardsItsMetricsEndpointToo) {
  const ScratchDir dir("cyclic_http_token");
  const std::string token = (dir / "token").string();
  std::ofstream(token) << "metrics-token\n";
  for (const bool with_grpc : {false, true}) {
    std::vector<std::string> argv = {TargetFile("rtloop-cyclic"),
                                     "-q",
                                     "-i1000",
                                     "-D20",
                                     "--default-system",
                                     "--metrics=127.0.0.1:0",
                                     "--token-file=" + token};
    if (with_grpc) argv.push_back("--telemetry=127.0.0.1:0");
    ChildProcess cyclic(argv, dir / "out");
    int port = 0;
    ASSERT_TRUE(telemetry::testing::WaitFor(
        [&] {
          const std::string out = cyclic.Output();
          const std::size_t at = out.find("live page on http://127.0.0.1:");
          if (at == std::string::npos) return false;
          port = std::atoi(out.c_str() + at + 30);
          return port > 0;
        },
        milliseconds(10'000)))
        << cyclic.Output();
    EXPECT_NE(cyclic.Output().find("(bearer token)"), std::string::npos) << cyclic.Output();
    EXPECT_EQ(HttpGet(port, "/metrics").status, 401);
    EXPECT_EQ(HttpGet(port, "/api/v1/tasks").status, 401);
    EXPECT_EQ(HttpGet(port, "/metrics", "Authorization: Bearer metrics-token\r\n").status, 200);
    EXPECT_EQ(HttpGet(port, "/").status, 200);
    cyclic.Stop();
    EXPECT_EQ(cyclic.Wait(milliseconds(1000)), 0) << cyclic.Output();
  }
}

// Nothing a client sends changes the process beyond a statistics reset: every other method of the
// service only reads. A new method fails this test on purpose: it needs the token rule of the
// README's security model.
TEST(SecurityLimits, TheTelemetryServiceHasOnlyReadingMethodsAndTheTokenGuardedReset) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "rtloop.telemetry.v1.Telemetry");
  ASSERT_NE(service, nullptr);
  std::vector<std::string> methods;
  methods.reserve(static_cast<std::size_t>(service->method_count()));
  for (int i = 0; i < service->method_count(); ++i) methods.push_back(service->method(i)->name());
  // Reading methods, and ResetStats (issue 19): the one call that changes anything (it clears
  // min/max and windows, never a total), refused by a server without a token
  // (GrpcReset.AServerWithoutATokenIsReadOnly). ListOutliers and WatchOutliers (issue 20) read
  // the outlier records, which name threads of any process on a task's CPU: data like any other,
  // behind the token (GrpcOutliersTest). A new method must be added here on purpose.
  EXPECT_EQ(methods, (std::vector<std::string>{"GetSystemInfo", "ListTasks", "GetStats",
                                               "WatchStats", "StreamSamples", "ResetStats",
                                               "ListOutliers", "WatchOutliers"}));
}

// No request can start a program: the libraries that serve requests (framework, the readiness
// checks GetSystemInfo runs, telemetry, the Runtime, the cyclictest runner) do not even link the
// calls that could (rtloop-bench, which runs loads, does).
TEST(SecurityLimits, NoLibraryThatServesRequestsCanStartAProcess) {
  for (const char* target : {"rtloop_framework", "rtloop_readiness", "rtloop_telemetry_core",
                             "rtloop_telemetry", "rtloop_runtime", "rtloop_cyclic_lib"}) {
    const std::string lib = TargetFile(target);
    const telemetry::testing::Command nm =
        telemetry::testing::RunCommand(std::string("nm -u --format=posix '") + lib + "'");
    const std::string& symbols = nm.output;
    ASSERT_EQ(nm.exit_code, 0) << "nm failed (binutils): " << symbols.substr(0, 300);
    EXPECT_NE(symbols.find(" U"), std::string::npos) << lib << ": nm listed nothing";
    for (const char* call :
         {"system", "popen", "fork", "vfork", "execl", "execlp", "execle", "execv", "execve",
          "execvp", "execvpe", "posix_spawn", "posix_spawnp", "clone", "clone3"}) {
      EXPECT_EQ(symbols.find("\n" + std::string(call) + " U"), std::string::npos)
          << lib << " uses " << call << "()";
    }
  }
}

}  // namespace
}  // namespace rtloop::faults
