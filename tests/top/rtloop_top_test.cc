// rtloop-top end to end: the binary in a child process against a server in this process (a Rig)
// or in rtloop-cyclic: --once and --json snapshots, --json --watch ending with the run, one-line
// errors with exit 2 (a vacant port said as such), the live mode reconnecting after the server
// restarts. Calls that must succeed give rtloop-top a 30 s deadline (--timeout; its default is 3
// s): under ctest -j2 in the sanitizer builds a call can take longer, and these tests check what it
// prints, not how fast.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "grpc_test_util.h"
#include "rtloop/telemetry/client.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::HasTargetFile;
using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::BuildTokenRig;
using testing::Cfg;
using testing::Command;
using testing::Connect;
using testing::CountOf;
using testing::ReadAll;
using testing::ReadStream;
using testing::Rig;
using testing::RigConfig;
using testing::RunCommand;
using testing::ScratchDir;
using testing::StreamCheck;
using testing::WaitFor;
using testing::WithStderr;

// A port nothing listens on (one that was free a moment ago), as "127.0.0.1:PORT".
std::string VacantAddress() {
  Rig rig;
  RTLOOP_CHECK(rig.Build(Cfg(1, std::chrono::microseconds(100), 10)).ok(), "rig");
  return rig.address();
}

TEST(RtloopTop, OncePrintsOneJsonSnapshotFromAnotherProcess) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(2, std::chrono::milliseconds(1), 50)).ok());
  ASSERT_TRUE(rig.StartTasks().ok());
  rig.WaitTasks();
  Command c =
      RunCommand(TargetFile("rtloop-top") + " " + rig.address() + " --once --json --timeout 30");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.output.rfind("{\"schema_version\":1,", 0), 0u) << c.output;
  EXPECT_NE(c.output.find("\"task_name\":\"task1\""), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\"cycles\":\"50\""), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\"latency_bins\":[{\"task_id\":0"), std::string::npos) << c.output;

  Command text =
      RunCommand(TargetFile("rtloop-top") + " " + rig.address() + " --once --timeout 30");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("LAT_P99"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("task1"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("wake-up latency, task 0"), std::string::npos) << text.output;
  std::printf("%s", text.output.c_str());  // for the log: what the dashboard looks like
}

// ":PORT" is loopback, as for the servers; port 0 is no server's port.
TEST(RtloopTop, PortOnlyAddressIsLoopback) {
  Rig rig;
  ASSERT_TRUE(rig.Build(Cfg(1, std::chrono::milliseconds(1), 5)).ok());
  const std::string port = rig.address().substr(rig.address().rfind(':'));
  Command c = RunCommand("timeout 30 " + TargetFile("rtloop-top") + " " + port + " --once");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("127.0.0.1" + port), std::string::npos) << c.output;
  c = RunCommand("timeout 30 " + TargetFile("rtloop-top") + " :0 --once");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("the server's"), std::string::npos) << c.output;
}

TEST(RtloopTop, OnceExitsTwoWithAOneLineReason) {
  // Unreachable: a port that was free a moment ago.
  const std::string free_address = VacantAddress();
  Command c = RunCommand(TargetFile("rtloop-top") + " " + free_address + " --once --timeout 1");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_EQ(std::count(c.output.begin(), c.output.end(), '\n'), 1) << c.output;
  EXPECT_NE(c.output.find(free_address), std::string::npos) << c.output;

  // Bad token.
  const ScratchDir dir("top_token");
  const std::string token = (dir / "token").string();
  Rig rig;
  ASSERT_TRUE(BuildTokenRig(rig, token, "right").ok());
  c = RunCommand(TargetFile("rtloop-top") + " " + rig.address() + " --once --timeout 30");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("token"), std::string::npos) << c.output;
  c = RunCommand(TargetFile("rtloop-top") + " " + rig.address() +
                 " --once --timeout 30 --token-file " + token);
  EXPECT_EQ(c.exit_code, 0) << c.output;

  // Bad usage.
  c = RunCommand(TargetFile("rtloop-top") + " --interval 0");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  c = RunCommand(TargetFile("rtloop-top") + " --bogus");
  EXPECT_EQ(c.exit_code, 2) << c.output;
}

// Connection refused is said as what it is, by every client (rtloop-top included), not as a
// TLS question; --json without --watch ends after one try, whatever happened.
TEST(RtloopTop, NothingListeningIsSaidAsSuch) {
  const std::string vacant = VacantAddress();
  ClientConfig cc;
  cc.address = vacant;
  std::unique_ptr<Client> client = std::move(*Client::Create(cc));
  const Status wait = client->WaitForConnected(milliseconds(200));
  EXPECT_EQ(wait.sys_errno(), ECONNREFUSED) << wait.ToString();
  EXPECT_NE(wait.message().find("nothing listens on " + vacant + ": has the run ended?"),
            std::string::npos)
      << wait.message();
  const Result<v1::ListTasksResponse> call = client->ListTasks();
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().sys_errno(), ECONNREFUSED) << call.status().ToString();
  EXPECT_EQ(call.status().message().find("TLS"), std::string::npos) << call.status().message();
  for (const char* mode : {" --once", " --json"}) {
    const Command c = RunCommand("timeout 20 " + TargetFile("rtloop-top") + " " + vacant + mode);
    EXPECT_EQ(c.exit_code, 2) << mode << ": " << c.output;
    EXPECT_EQ(c.output, "rtloop-top: GetSystemInfo on " + vacant + ": nothing listens on " +
                            vacant + ": has the run ended?\n");
  }
}

// --json prints one snapshot and exits; --watch keeps printing until the run ends, then exits 0.
TEST(RtloopTop, JsonEndsAfterOneSnapshotOrWithTheRunWhenWatching) {
  auto rig = std::make_unique<Rig>();
  ASSERT_TRUE(rig->Build(Cfg(1, std::chrono::milliseconds(1), 0)).ok());
  ASSERT_TRUE(rig->StartTasks().ok());
  const std::string top =
      "timeout 60 " + TargetFile("rtloop-top") + " " + rig->address() + " --timeout 30";
  const Command one = RunCommand(top + " --json --interval 0.05");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(CountOf(one.output, "{\"schema_version\":1,"), 1u) << one.output;
  EXPECT_EQ(RunCommand(top + " --json --watch --once").exit_code, 2);
  EXPECT_EQ(RunCommand(top + " --watch").exit_code, 2);

  const ScratchDir dir("top_watch");
  const std::string out = (dir / "out").string();
  const std::string err = (dir / "err").string();
  const std::string address = rig->address();
  rtloop::testing::ChildProcess watch(WithStderr(
      {TargetFile("rtloop-top"), address, "--json", "--watch", "--interval=0.05", "--timeout=30"},
      err, out));
  ASSERT_TRUE(watch.started()) << watch.error();
  EXPECT_TRUE(WaitFor([&] { return CountOf(ReadAll(out), "{\"schema_version\"") >= 2; },
                      milliseconds(10'000)));
  rig.reset();  // the run ends
  std::optional<int> status = watch.Wait(milliseconds(15'000));
  if (!status) {
    watch.Signal(SIGKILL);
    status = watch.Stop();
    ADD_FAILURE() << "--json --watch still running after the server went away: " << ReadAll(err);
  }
  EXPECT_EQ(status, 0) << ReadAll(err);
  EXPECT_NE(ReadAll(err).find("nothing listens on " + address + ": has the run ended?"),
            std::string::npos)
      << ReadAll(err);
}

TEST(RtloopTop, LiveModeReconnectsAfterTheServerRestarts) {
  const ScratchDir dir("top_live");
  const std::string out = (dir / "out").string();
  const std::string err = (dir / "err").string();
  auto rig = std::make_unique<Rig>();
  ASSERT_TRUE(rig->Build(Cfg(1, std::chrono::milliseconds(1), 0)).ok());
  ASSERT_TRUE(rig->StartTasks().ok());
  const std::string address = rig->address();

  // A failed ASSERT below must not leave rtloop-top retrying forever: the ChildProcess stops it.
  rtloop::testing::ChildProcess top(
      WithStderr({TargetFile("rtloop-top"), address, "--interval=0.05", "--timeout=30"}, err, out));
  ASSERT_TRUE(top.started()) << top.error();

  EXPECT_TRUE(
      WaitFor([&] { return CountOf(ReadAll(out), "rtloop-top  ") >= 2; }, milliseconds(10'000)));
  rig.reset();  // the server goes away
  EXPECT_TRUE(WaitFor([&] { return ReadAll(err).find("retrying") != std::string::npos; },
                      milliseconds(10'000)))
      << ReadAll(err);
  const std::size_t frames_before = CountOf(ReadAll(out), "rtloop-top  ");
  RigConfig rc = Cfg(1, std::chrono::milliseconds(1), 0);
  rc.server.address = address;  // the same port again
  rig = std::make_unique<Rig>();
  Status rebuilt = rig->Build(rc);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.ToString();
  EXPECT_TRUE(WaitFor([&] { return CountOf(ReadAll(out), "rtloop-top  ") > frames_before + 1; },
                      milliseconds(15'000)))
      << ReadAll(err);
  EXPECT_EQ(top.Stop(), 0);
  // Not a TTY: plain frames, no screen control codes.
  EXPECT_EQ(ReadAll(out).find('\x1b'), std::string::npos);
}

// The server in another process: rtloop-cyclic --telemetry=127.0.0.1:0 prints the port it got;
// rtloop-top --once --json and a streaming Client in this process read it.
TEST(RtloopTop, ReadsRtloopCyclicInAnotherProcess) {
  if (!HasTargetFile("rtloop-cyclic"))
    GTEST_SKIP() << "rtloop-cyclic is not built (RTLOOP_BUILD_BENCH=OFF)";
  const ScratchDir dir("cyclic");
  const std::string out = (dir / "out").string();
  const std::string err = (dir / "err").string();
  rtloop::testing::ChildProcess cyclic(WithStderr(
      {TargetFile("rtloop-cyclic"), "--telemetry=127.0.0.1:0", "-D", "6", "-i", "1000", "-q"}, err,
      out));
  ASSERT_TRUE(cyclic.started()) << cyclic.error();
  std::string address;
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string e = ReadAll(err);
        const std::size_t at = e.find("serving on ");
        if (at == std::string::npos) return false;
        const std::size_t end = e.find(' ', at + 11);
        if (end == std::string::npos) return false;
        address = e.substr(at + 11, end - at - 11);
        return true;
      },
      milliseconds(10'000)))
      << ReadAll(err);
  if (!address.empty()) {
    std::unique_ptr<Client> client = Connect(address);
    std::unique_ptr<SampleStream> stream = client->StreamSamples({});
    StreamCheck check;
    Status read = ReadStream(
        *stream, check, [&] { return check.received[0] >= 300; }, milliseconds(10'000));
    EXPECT_TRUE(read.ok()) << read.ToString();
    stream->Cancel();
    Command top =
        RunCommand(TargetFile("rtloop-top") + " " + address + " --once --json --timeout 30");
    EXPECT_EQ(top.exit_code, 0) << top.output;
    EXPECT_NE(top.output.find("\"task_name\":\"cyclic0\""), std::string::npos) << top.output;
  }
  std::optional<int> status = cyclic.Wait(milliseconds(15'000));
  if (!status) {
    cyclic.Signal(SIGKILL);
    status = cyclic.Stop();
  }
  EXPECT_EQ(status, 0) << ReadAll(err);
}

}  // namespace
}  // namespace rtloop::telemetry
