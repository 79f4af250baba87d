// Child: an example program run as a user runs it, for the tests of tests/examples: a thin layer
// over rtloop::testing::ChildProcess (tests/testing/child_process.h) with stdout and stderr in
// files of a scratch directory of its own, and the waits these tests need (the telemetry address on
// stderr, a connected client). Stopped (SIGTERM, then SIGKILL) and reaped at destruction, so no
// test leaves a process behind.
//
//   Child child({TargetFile("rtloop-plc"), "--duration=3", "--telemetry=127.0.0.1:0"},
//               /*drop_rt=*/true);                     // TargetFile(): test_paths.h
//   std::unique_ptr<telemetry::Client> client = child.ConnectTelemetry();
//   ASSERT_NE(client, nullptr);                            // ... read its telemetry ...
//   EXPECT_EQ(child.Stop(0), 0);                           // waits for the exit
//   EXPECT_NE(ReadFile(child.out()).find("..."), std::string::npos);
//
// ConnectClient() is the telemetry client the tests read a child with: it waits for the
// connection first, because a child on a loaded 2-CPU machine may take longer to answer than the
// client's first connection attempt allows.
//
// Threading: one test thread. Not RT-safe.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "rtloop/telemetry/client.h"

namespace rtloop::testing {

inline std::string ReadFile(const std::string& path) { return ReadWholeFile(path); }

// A client of the telemetry server at `address`, connected (up to 10 s); nullptr, with the reason
// printed by gtest, when it cannot connect.
inline std::unique_ptr<telemetry::Client> ConnectClient(const std::string& address) {
  telemetry::ClientConfig cc;
  cc.address = address;
  Result<std::unique_ptr<telemetry::Client>> client = telemetry::Client::Create(cc);
  if (!client.ok()) {
    ADD_FAILURE() << client.status().ToString();
    return nullptr;
  }
  if (const Status s = (*client)->WaitForConnected(std::chrono::seconds(10)); !s.ok()) {
    ADD_FAILURE() << s.ToString();
    return nullptr;
  }
  return std::move(*client);
}

class Child {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts argv[0] with `argv`. `drop_rt` removes CAP_SYS_NICE from its bounding set and zeroes
  // its rtprio limit, so it runs as a user without real-time privileges would (root keeps the
  // other capabilities).
  Child(const std::vector<std::string>& argv, bool drop_rt)
      : dir_(MakeDir()), process_(Config(argv, drop_rt, dir_)) {
    if (!process_.started()) ADD_FAILURE() << process_.error();
  }
  ~Child() {
    process_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The address after "serving on " on its stderr, waiting up to 10 s; "" if none came.
  std::string WaitForAddress() const {
    if (!WaitFor(err(), "serving on ", std::chrono::seconds(10))) return {};
    const std::string e = ReadFile(err());
    const std::size_t at = e.find("serving on ") + 11;
    const std::size_t end = e.find(' ', at);
    return end == std::string::npos ? std::string() : e.substr(at, end - at);
  }
  // The address in "serving /metrics and the live page on http://ADDR/" on its stderr (the
  // runtime's HTTP endpoint), waiting up to 10 s; "" if none came.
  std::string WaitForHttpAddress() const {
    const std::string marker = "live page on http://";
    if (!WaitFor(err(), marker, std::chrono::seconds(10))) return {};
    const std::string e = ReadFile(err());
    const std::size_t begin = e.find(marker) + marker.size();
    const std::size_t end = e.find('/', begin);
    return end == std::string::npos ? std::string() : e.substr(begin, end - begin);
  }
  // WaitForAddress() and ConnectClient() on it: nullptr (and a test failure) when either fails.
  // Then waits (up to 10 s) until the program has started its tasks: its Runtime serves from
  // Create(), before the program adds them, so a client as quick as the line sees fewer tasks
  // (CI saw 0 of 1 and 0 of 3 on a loaded machine). All are added before Start(), so none in
  // TASK_STATE_CREATED means all are there; after the bound, the test's own checks say what is.
  std::unique_ptr<telemetry::Client> ConnectTelemetry() const {
    const std::string address = WaitForAddress();
    if (address.empty()) {
      ADD_FAILURE() << "no \"serving on\" on stderr:\n" << ReadFile(err());
      return nullptr;
    }
    std::unique_ptr<telemetry::Client> client = ConnectClient(address);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (client != nullptr && Clock::now() < deadline && !Started(*client)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return client;
  }
  static bool Started(telemetry::Client& client) {
    Result<telemetry::v1::GetStatsResponse> stats = client.GetStats({}, false);
    if (!stats.ok() || stats->tasks_size() == 0) return false;
    for (const auto& t : stats->tasks()) {
      if (t.state() == telemetry::v1::TASK_STATE_CREATED) return false;
    }
    return true;
  }
  // Waits up to `timeout` for the file at `path` (out() or err()) to contain `text` `times`
  // times; false if it did not.
  static bool WaitFor(const std::string& path, const std::string& text,
                      std::chrono::nanoseconds timeout, int times = 1) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (Count(ReadFile(path), text) >= times) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  static int Count(const std::string& haystack, const std::string& needle) {
    int n = 0;
    for (std::size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + needle.size())) {
      ++n;
    }
    return n;
  }

  // Sends `sig` to the running child. False if it has already been reaped.
  bool Signal(int sig) { return process_.Signal(sig); }
  // Sends `sig` (if given) and waits up to 20 s for the exit; the exit status (128 + signal for a
  // killed child), or -1.
  int Stop(int sig) {
    if (sig != 0) Signal(sig);
    return process_.Wait(std::chrono::seconds(20)).value_or(-1);
  }
  std::string out() const { return (dir_ / "out").string(); }
  std::string err() const { return (dir_ / "err").string(); }
  // A scratch directory of the test's own, removed with the child.
  const std::filesystem::path& dir() const { return dir_; }

 private:
  static std::filesystem::path MakeDir() {
    static int n = 0;
    std::filesystem::path d =
        std::filesystem::temp_directory_path() /
        ("rtloop_examples_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(d);
    return d;
  }
  static ChildConfig Config(const std::vector<std::string>& argv, bool drop_rt,
                            const std::filesystem::path& dir) {
    ChildConfig config;
    config.argv = argv;
    config.drop_rt = drop_rt;
    config.stdout_path = (dir / "out").string();
    config.stderr_path = (dir / "err").string();
    return config;
  }
  std::filesystem::path dir_;  // before process_: its files are in it
  ChildProcess process_;
};

}  // namespace rtloop::testing
