// The examples as a user runs them: rtloop-quickstart (the README's loop example) for ~2 s without
// real-time privileges, read by a C++ client and by the README's Python client, stopped with
// SIGTERM; the README's loop example checked against the program; rtloop-two-tasks for a second.
// Each program is a child process on loopback with a free port, killed if it outlives its test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "example_child.h"
#include "http_test_util.h"
#include "rtloop/telemetry/client.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;
using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using rtloop::testing::Child;
using rtloop::testing::ReadFile;
using Clock = std::chrono::steady_clock;

TEST(ExamplesTest, QuickstartServesItsTaskAndSamplesWithoutRtPrivilegesAndReportsAtTheEnd) {
  const auto start = Clock::now();
  Child child({TargetFile("rtloop-quickstart"), "127.0.0.1:0"}, /*drop_rt=*/true);
  std::unique_ptr<Client> client = child.ConnectTelemetry();
  ASSERT_NE(client, nullptr);
  Result<v1::ListTasksResponse> tasks = client->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->tasks_size(), 1);
  EXPECT_EQ(tasks->tasks(0).task().name(), "position");
  EXPECT_EQ(tasks->tasks(0).task().period_ns(), 500'000);
  EXPECT_TRUE(tasks->tasks(0).non_rt_fallback()) << "the child had no RT privilege";
  // Samples of the task arrive in order, each batch of the one task.
  std::unique_ptr<SampleStream> stream = client->StreamSamples({});
  ASSERT_TRUE(stream->WaitForReady());
  std::uint64_t samples = 0;
  std::uint64_t next_seq = 0;
  v1::StreamSamplesResponse r;
  while (samples < 1000 && Clock::now() - start < std::chrono::seconds(15) && stream->Next(&r)) {
    EXPECT_EQ(r.batch().task_id(), 0u);
    EXPECT_GE(r.batch().first_seq(), next_seq);
    next_seq = r.batch().first_seq() + static_cast<std::uint64_t>(r.batch().latency_ns_size());
    samples += static_cast<std::uint64_t>(r.batch().latency_ns_size());
  }
  EXPECT_GE(samples, 1000u);
  stream->Cancel();
  std::this_thread::sleep_until(start + std::chrono::seconds(2));  // run ~2 s in all
  EXPECT_EQ(child.Stop(SIGTERM), 0) << ReadFile(child.err());
  const std::string report = ReadFile(child.out());
  EXPECT_NE(report.find("position"), std::string::npos) << report;
  EXPECT_NE(report.find("wake-up latency (us)"), std::string::npos) << report;
  EXPECT_NE(report.find("other!"), std::string::npos) << "the fallback shows: " << report;
  const std::string err = ReadFile(child.err());
  EXPECT_NE(err.find("SCHED_OTHER (NOT real-time)"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGTERM: stopping"), std::string::npos) << err;
}

// A python3 that has Debian's python3-grpcio and python3-grpc-tools; "" if none.
std::string Python() {
  for (const char* p : {"/usr/bin/python3", "python3"}) {
    const std::string cmd = std::string(p) + " -c 'import grpc, grpc_tools' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return p;
  }
  return {};
}

// The README's fenced block that follows `marker` (the line after it starts with ```).
std::string ReadmeBlock(const std::string& marker) {
  const std::string readme = ReadFile(SourcePath("README.md"));
  std::size_t at = readme.find(marker);
  if (at == std::string::npos) return {};
  at = readme.find("```", at);
  if (at == std::string::npos) return {};
  at = readme.find('\n', at) + 1;
  const std::size_t end = readme.find("```", at);
  if (end == std::string::npos) return {};
  std::string block = readme.substr(at, end - at);
  while (!block.empty() && (block.back() == '\n' || block.back() == ' ')) block.pop_back();
  return block;
}

TEST(ExamplesTest, TheReadmesPythonClientListsTheTasksAndStreamsTheirSamples) {
  const std::string python = Python();
  if (python.empty()) GTEST_SKIP() << "needs python3-grpcio and python3-grpc-tools";
  const std::string protoc = ReadmeBlock("<!-- python-protoc -->");
  const std::string client = ReadmeBlock("<!-- python-client -->");
  ASSERT_NE(protoc.find("grpc_tools.protoc"), std::string::npos) << "README protoc line missing";
  ASSERT_NE(client.find("StreamSamples"), std::string::npos) << "README Python client missing";

  Child child({TargetFile("rtloop-quickstart"), "127.0.0.1:0"}, /*drop_rt=*/true);
  const std::string address = child.WaitForAddress();
  ASSERT_FALSE(address.empty()) << ReadFile(child.err());
  const std::filesystem::path dir = child.dir() / "py";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "client.py") << client;
  // The README's commands as written, run next to a link to this tree's proto/, with `python3`
  // the interpreter found above.
  std::filesystem::create_directory_symlink(SourcePath("proto"), dir / "proto");
  const std::string run = "cd '" + dir.string() + "' && python3() { " + python + " \"$@\"; } && " +
                          protoc + " && timeout 30 " + python + " client.py " + address +
                          " > out.txt 2>&1";
  const int rc = std::system(run.c_str());
  const std::string out = ReadFile((dir / "out.txt").string());
  EXPECT_EQ(rc, 0) << run << "\n" << out;
  EXPECT_NE(out.find("task 0 position"), std::string::npos) << out;
  EXPECT_NE(out.find("samples from seq"), std::string::npos) << out;
  EXPECT_EQ(child.Stop(SIGINT), 0) << ReadFile(child.err());
}

// Lines without their indentation and with runs of spaces as one (clang-format aligns trailing
// comments differently in a file than the README does); empty lines dropped.
std::vector<std::string> NormalizedLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::string n;
    for (char c : line) {
      if (c == ' ' || c == '\t') {
        if (!n.empty() && n.back() != ' ') n += ' ';
      } else {
        n += c;
      }
    }
    while (!n.empty() && n.back() == ' ') n.pop_back();
    if (!n.empty()) out.push_back(n);
  }
  return out;
}

// The ```cpp blocks of the README section that starts with `heading`, one after the other.
std::string ReadmeCppBlocks(const std::string& heading) {
  const std::string readme = ReadFile(SourcePath("README.md"));
  const std::size_t start = readme.find(heading);
  if (start == std::string::npos) return {};
  const std::size_t end = readme.find("\n## ", start + heading.size());
  std::string code;
  for (std::size_t at = readme.find("```cpp\n", start); at < end;
       at = readme.find("```cpp\n", at)) {
    at += 7;
    const std::size_t close = readme.find("```", at);
    if (close == std::string::npos) break;
    code += readme.substr(at, close - at);
    at = close + 3;
  }
  return code;
}

TEST(ExamplesTest, TheReadmesLoopExampleIsTheQuickstartProgramsCode) {
  const std::vector<std::string> readme = NormalizedLines(ReadmeCppBlocks("## A motion loop"));
  const std::vector<std::string> program =
      NormalizedLines(ReadFile(SourcePath("examples/quickstart/main.cc")));
  ASSERT_GE(readme.size(), 25u) << "the README's loop example is missing";
  // Every README line, in order, is a line of the program: the excerpt is complete and honest.
  std::size_t at = 0;
  for (const std::string& line : readme) {
    while (at < program.size() && program[at] != line) ++at;
    ASSERT_LT(at, program.size()) << "README line not in examples/quickstart/main.cc (in this "
                                     "order):\n  "
                                  << line;
    ++at;
  }
}

TEST(ExamplesTest, EveryExampleProgramPrintsItsUsageWithTheRunOptions) {
  for (const char* program : {"rtloop-plc", "rtloop-motion", "rtloop-gpio-toggle"}) {
    const std::string path = TargetFile(program);
    Child child({path, "--help"}, /*drop_rt=*/true);
    EXPECT_EQ(child.Stop(0), 0) << path;
    const std::string out = ReadFile(child.out());
    const std::string name = std::filesystem::path(path).filename().string();
    EXPECT_EQ(out.rfind("usage: " + name + " ", 0), 0u) << out;
    for (const char* option : {"--duration=SECONDS", "--telemetry=ADDR", "--metrics[=ADDR]",
                               "--record=FILE", "--require-rt", "kill -USR1 PID"}) {
      EXPECT_NE(out.find(option), std::string::npos) << option << " in:\n" << out;
    }
    EXPECT_EQ(ReadFile(child.err()), "") << "nothing started";
  }
}

TEST(ExamplesTest, QuickstartPrintsItsUsageAndRefusesAnUnknownOption) {
  Child help({TargetFile("rtloop-quickstart"), "--help"}, /*drop_rt=*/true);
  EXPECT_EQ(help.Stop(0), 0);
  EXPECT_EQ(ReadFile(help.out()).rfind("usage: rtloop-quickstart [GRPC_ADDR]", 0), 0u)
      << ReadFile(help.out());
  // An option is never taken for the gRPC address (it was: "bad address \"--telemetry=...\"").
  Child bad({TargetFile("rtloop-quickstart"), "--telemetry=127.0.0.1:0"}, /*drop_rt=*/true);
  EXPECT_EQ(bad.Stop(0), 2);
  const std::string err = ReadFile(bad.err());
  EXPECT_EQ(err.rfind("rtloop-quickstart: unknown option '--telemetry=127.0.0.1:0'\n", 0), 0u)
      << err;
  // An address is checked before anything starts: exit 2 (it was 1, from the runtime).
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"bogus"}, "rtloop-quickstart: GRPC_ADDR: bad address \"bogus\""},
           {{"127.0.0.1:0", "--metrics=9101"}, "rtloop-quickstart: --metrics: bad address"}}) {
    std::vector<std::string> argv = {TargetFile("rtloop-quickstart")};
    argv.insert(argv.end(), args.begin(), args.end());
    Child child(argv, /*drop_rt=*/true);
    EXPECT_EQ(child.Stop(0), 2) << args.back();
    const std::string e = ReadFile(child.err());
    EXPECT_EQ(e.rfind(message, 0), 0u) << e;
    EXPECT_EQ(e.find("serving on"), std::string::npos) << e;
  }
}

TEST(ExamplesTest, TwoTasksRunsForItsDurationAndPrintsTheStandardReport) {
  Child child({TargetFile("rtloop-two-tasks"), "--duration=1", "--telemetry=127.0.0.1:0"},
              /*drop_rt=*/false);
  EXPECT_EQ(child.Stop(0), 0) << ReadFile(child.err());
  const std::string out = ReadFile(child.out());
  for (const char* part : {"control", "logger", "wake-up latency (us)", "execution time (us)",
                           "period jitter (us)", "logger saw control output"}) {
    EXPECT_NE(out.find(part), std::string::npos) << part << " in:\n" << out;
  }
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--duration=-3"}, "bad --duration"},
           // An address is checked before anything starts: exit 2 (it was 1, from the runtime).
           {{"--duration=1", "--telemetry=bogus"}, "--telemetry: bad address \"bogus\""},
           {{"--duration=1", "--telemetry=127.0.0.1:0", "--metrics=9101"},
            "--metrics: bad address \"9101\""}}) {
    std::vector<std::string> argv = {TargetFile("rtloop-two-tasks")};
    argv.insert(argv.end(), args.begin(), args.end());
    Child bad(argv, /*drop_rt=*/true);
    EXPECT_EQ(bad.Stop(0), 2) << args.back();
    const std::string err = ReadFile(bad.err());
    EXPECT_NE(err.find(message), std::string::npos) << message << " in:\n" << err;
    EXPECT_EQ(err.find("serving on"), std::string::npos) << err;
  }
}

TEST(ExamplesTest, EveryExampleServesMetricsAndThePageWithDashDashMetrics) {
  const std::string plc_config = SourcePath("examples/plc/conveyor.toml");
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> runs = {
      {{TargetFile("rtloop-quickstart"), "127.0.0.1:0", "--metrics=127.0.0.1:0"}, {"position"}},
      {{TargetFile("rtloop-two-tasks"), "--duration=20", "--telemetry=127.0.0.1:0",
        "--metrics=127.0.0.1:0"},
       {"control", "logger"}},
      {{TargetFile("rtloop-plc"), "--config=" + plc_config, "--telemetry=127.0.0.1:0",
        "--metrics=127.0.0.1:0"},
       {"io_scan", "logic", "housekeeping"}},
      {{TargetFile("rtloop-motion"), "--duration=0", "--telemetry=127.0.0.1:0",
        "--metrics=127.0.0.1:0"},
       {"position"}},
      {{TargetFile("rtloop-gpio-toggle"), "--sim", "--telemetry=127.0.0.1:0",
        "--metrics=127.0.0.1:0"},
       {"toggle"}},
  };
  for (const auto& run : runs) {
    const std::vector<std::string>& argv = run.first;
    const std::vector<std::string>& tasks = run.second;  // a lambda below takes it (C++17 rules)
    Child child(argv, /*drop_rt=*/true);
    const std::string address = child.WaitForHttpAddress();
    ASSERT_FALSE(address.empty()) << argv[0] << ": " << ReadFile(child.err());
    const int port = std::atoi(address.substr(address.rfind(':') + 1).c_str());
    testing::HttpReply metrics;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    const auto has_every_task = [&] {
      return std::all_of(tasks.begin(), tasks.end(), [&](const std::string& task) {
        return metrics.body.find("rtloop_task_cycles_total{task=\"" + task + "\"") !=
               std::string::npos;
      });
    };
    do {  // the task threads start right after the server listens, each at its own first release
      metrics = testing::HttpGet(port, "/metrics");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (!has_every_task() && Clock::now() < deadline);
    EXPECT_EQ(metrics.status, 200) << argv[0] << ": " << metrics.error;
    for (const std::string& task : tasks) {
      EXPECT_NE(metrics.body.find("rtloop_task_cycles_total{task=\"" + task + "\""),
                std::string::npos)
          << argv[0] << ": " << task;
    }
    EXPECT_EQ(testing::HttpGet(port, "/").status, 200) << argv[0];
    EXPECT_EQ(child.Stop(SIGTERM), 0) << argv[0] << ": " << ReadFile(child.err());
  }
}

}  // namespace
}  // namespace rtloop::telemetry
