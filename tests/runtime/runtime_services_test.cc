// Runtime::Create(config, nullptr): a runtime without the telemetry services (runtime_services.h)
// measures and reports as any other, and refuses by name every setting that needs the gRPC server,
// the HTTP endpoint or the sample log, before anything starts. (That such a program links none of
// their libraries is tests/cyclic/lean_binary_test.sh's check on rtloop-cyclic.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "rtloop/runtime.h"
#include "rtloop/telemetry/output_file.h"
#include "telemetry_rig.h"

namespace rtloop {
namespace {

using telemetry::testing::OtherTask;

class Idle final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

RuntimeConfig WithoutServers() {
  RuntimeConfig rc = telemetry::testing::TestRuntimeConfig("services_test");
  rc.telemetry.serve_grpc = false;
  return rc;
}

TEST(RuntimeServicesTest, WithoutServicesEachSettingThatNeedsThemIsRefusedByName) {
  struct Case {
    const char* setting;
    RuntimeConfig config;
  };
  Case grpc{"telemetry.serve_grpc", WithoutServers()};
  grpc.config.telemetry.serve_grpc = true;
  Case http{"telemetry.http", WithoutServers()};
  http.config.telemetry.http = telemetry::HttpConfig{};
  http.config.telemetry.http->address = "127.0.0.1:0";
  Case record{"telemetry.record_path", WithoutServers()};
  record.config.telemetry.record_path = "/tmp/rtloop-services-test-never-written.rtl";
  for (const Case& c : {grpc, http, record}) {
    const Status s = Runtime::Create(c.config, nullptr).status();
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << c.setting << ": " << s.ToString();
    EXPECT_NE(s.message().find(std::string("RuntimeConfig::") + c.setting), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("Runtime::Create(config)"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(std::filesystem::exists(record.config.telemetry.record_path));
  // The same configs with the linked services are fine as far as the services go.
  EXPECT_TRUE(Runtime::Create(grpc.config).ok());
}

TEST(RuntimeServicesTest, WithoutServicesARunMeasuresAndReportsAndRecordToIsRefused) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(WithoutServers(), nullptr);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  Runtime& runtime = **rt;
  EXPECT_EQ(runtime.server(), nullptr);
  EXPECT_EQ(runtime.http(), nullptr);
  EXPECT_EQ(runtime.grpc_address(), "");
  EXPECT_EQ(runtime.http_address(), "");
  ASSERT_NE(runtime.hub(), nullptr);  // telemetry itself is there: percentiles, rings, collector

  char dir[] = "/tmp/rtloop-services-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/run.rtl";
  Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path, {.what = "test log"});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const Status recorded = runtime.RecordTo(std::move(*file), {});
  EXPECT_EQ(recorded.code(), StatusCode::kFailedPrecondition) << recorded.ToString();
  EXPECT_NE(recorded.message().find("Runtime::Create(config)"), std::string::npos);

  Idle task;
  ASSERT_TRUE(runtime.AddTask(task, OtherTask("idle", std::chrono::milliseconds(1), 50)).ok());
  ASSERT_TRUE(runtime.Start().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!runtime.executor().AllTasksEnded() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(runtime.Stop().ok());
  const TaskReport report = runtime.Report(0);
  EXPECT_EQ(report.stats.cycles, 50u);
  EXPECT_TRUE(report.telemetry);
  EXPECT_TRUE(report.latency.percentiles.valid)
      << "percentiles come from the hub, not the services";
  EXPECT_FALSE(std::filesystem::exists(path)) << "the refused sample log's file is gone";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtloop
