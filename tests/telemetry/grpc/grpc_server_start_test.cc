// Starting the telemetry gRPC server (grpc_end_to_end_test.cc has the rest of the GrpcEndToEnd
// suite): a port in use, a bad address and a bad ServerConfig are clear start errors naming what
// to fix, and the server's threads run SCHED_OTHER even when Start() is called from an RT thread.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "grpc_test_util.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::Cfg;
using testing::Connect;
using testing::ReadAll;
using testing::Rig;

TEST(GrpcEndToEnd, PortInUseAndBadAddressAreClearStartErrors) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, std::chrono::microseconds(100), 10)).ok());
  ServerConfig sc;
  sc.address = rig.address();
  sc.log_to_stderr = false;
  Result<std::unique_ptr<Server>> second = Server::Start(sc, rig.hub(), rig.collector());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status().ToString();
  EXPECT_NE(second.status().message().find("in use"), std::string::npos)
      << second.status().message();
  for (const char* address : {"127.0.0.1", "127.0.0.1:99999", "[]:50051", "[::1:5"}) {
    sc.address = address;
    Result<std::unique_ptr<Server>> bad = Server::Start(sc, rig.hub(), rig.collector());
    ASSERT_FALSE(bad.ok()) << address;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << address;
  }
  sc.address = "192.0.2.1:0";  // TEST-NET-1: not an address of this machine
  Result<std::unique_ptr<Server>> foreign = Server::Start(sc, rig.hub(), rig.collector());
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("192.0.2.1"), std::string::npos)
      << foreign.status().message();
}

TEST(GrpcEndToEnd, BadServerConfigIsAClearStartErrorNamingTheField) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, std::chrono::microseconds(100), 10)).ok());
  const auto expect_refused = [&](ServerConfig sc, const std::string& field) {
    sc.address = "127.0.0.1:0";
    Result<std::unique_ptr<Server>> s = Server::Start(sc, rig.hub(), rig.collector());
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.status().message().find(field), std::string::npos) << s.status().message();
  };
  ServerConfig sc;
  sc.max_streams = 0;
  expect_refused(sc, "max_streams");
  sc = ServerConfig();
  sc.max_stream_buffer_samples = sc.stream_buffer_samples - 1;
  expect_refused(sc, "stream_buffer_samples");
  sc = ServerConfig();
  sc.max_batch_samples = 65537;
  expect_refused(sc, "max_batch_samples");
  sc = ServerConfig();
  sc.min_watch_interval = milliseconds(0);
  expect_refused(sc, "min_watch_interval");
  sc = ServerConfig();
  sc.poll_period = milliseconds(0);
  expect_refused(sc, "poll_period");
  sc.poll_period = milliseconds(1001);
  expect_refused(sc, "poll_period");
  sc = ServerConfig();
  sc.memory_limit_bytes = (1u << 20) - 1;
  expect_refused(sc, "memory_limit_bytes");
  sc = ServerConfig();
  sc.max_calls_per_second = -1;
  expect_refused(sc, "max_calls_per_second");
  sc.max_calls_per_second = std::numeric_limits<double>::quiet_NaN();
  expect_refused(sc, "max_calls_per_second");
  sc = ServerConfig();
  sc.max_calls_burst = 0;
  expect_refused(sc, "max_calls_burst");
  sc = ServerConfig();
  sc.tls_cert_file = "/nonexistent/cert.pem";
  expect_refused(sc, "tls_key_file");
}

// gRPC threads inherit the scheduling of the thread that creates them: Start() must give them
// SCHED_OTHER even when called from an RT thread.
TEST(GrpcEndToEnd, ServerThreadsRunSchedOtherWhenStartedFromAnRtThread) {
  TelemetryHub hub;
  struct NoCycles final : TaskStatsReader {
    TaskStatsSnapshot Stats(TaskId) const noexcept override { return {}; }
  } no_cycles;
  hub.AttachStats(no_cycles);
  Collector collector(hub);
  std::unique_ptr<Server> server;
  Status status;
  pid_t rt_tid = 0;
  bool permitted = true;
  std::thread rt([&] {
    sched_param p{};
    p.sched_priority = 10;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) {
      permitted = false;
      return;
    }
    rt_tid = gettid();
    ServerConfig sc;
    sc.address = "127.0.0.1:0";
    sc.log_to_stderr = false;
    Result<std::unique_ptr<Server>> s = Server::Start(sc, hub, collector);
    status = s.status();
    if (s.ok()) server = std::move(*s);
  });
  rt.join();
  if (!permitted) GTEST_SKIP() << "needs CAP_SYS_NICE (or an rtprio limit) for SCHED_FIFO";
  ASSERT_TRUE(status.ok()) << status.ToString();
  // Make gRPC busy so its thread pools exist, then look at every thread of the process.
  std::unique_ptr<Client> client = Connect(server->address());
  ASSERT_TRUE(client->ListTasks().ok());
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    const std::string stat = ReadAll(entry.path().string() + "/stat");
    const std::size_t paren = stat.rfind(')');
    ASSERT_NE(paren, std::string::npos);
    std::istringstream fields(stat.substr(paren + 2));
    std::string field;
    int policy = -1;
    for (int i = 3; i <= 41 && fields >> field; ++i) {
      if (i == 41) policy = std::stoi(field);
    }
    EXPECT_EQ(policy, SCHED_OTHER)
        << "thread " << entry.path().filename() << " (the RT thread was " << rt_tid << ")";
  }
}

}  // namespace
}  // namespace rtloop::telemetry
