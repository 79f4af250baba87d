// Helpers of the gRPC integration tests: scratch folders, clients, a watchdog that cancels a
// stream after a timeout, a checker that accounts for every seq of a sample stream, shell commands
// run to their end (RunCommand, over child_process.h). Shared by the gRPC, runtime, top, fault and
// integration tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "rtloop/telemetry/client.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry::testing {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

inline RigConfig Cfg(int tasks, std::chrono::nanoseconds period, std::uint64_t cycles) {
  RigConfig rc;
  rc.tasks = tasks;
  rc.period = period;
  rc.cycles = cycles;
  return rc;
}

// Writes `token` to `token_file` and builds `rig` with one 100 us task of 10 cycles whose server
// requires it (ServerConfig::token_file).
inline Status BuildTokenRig(Rig& rig, const std::string& token_file, const std::string& token) {
  std::ofstream(token_file) << token << "\n";
  RigConfig rc = Cfg(1, std::chrono::microseconds(100), 10);
  rc.server.token_file = token_file;
  return rig.Build(rc);
}

inline std::unique_ptr<Client> Connect(const std::string& address,
                                       const std::string& token_file = {},
                                       const std::string& ca = {}) {
  ClientConfig cc;
  cc.address = address;
  cc.token_file = token_file;
  cc.tls_ca_file = ca;
  Result<std::unique_ptr<Client>> c = Client::Create(cc);
  RTLOOP_CHECK(c.ok(), "Client::Create failed in a test");
  return std::move(*c);
}

// Runs fn() on a thread joined when it goes out of scope (a failed ASSERT included).
class Background {
 public:
  template <typename Fn>
  explicit Background(Fn fn) : thread_(std::move(fn)) {}
  ~Background() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

// Cancels `stream` when `timeout` passes before Disarm(): no test can hang on a stream.
template <typename Stream>
class Watchdog {
 public:
  Watchdog(Stream& stream, std::chrono::milliseconds timeout)
      : thread_([this, &stream, timeout] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, timeout, [this] { return disarmed_; })) {
            fired_ = true;
            stream.Cancel();
          }
        }) {}
  ~Watchdog() { Disarm(); }
  void Disarm() {
    {
      std::lock_guard lock(mu_);
      disarmed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  bool fired_ = false;
  std::thread thread_;
};

// Checks a sample stream batch by batch: per task, seqs strictly increasing, every gap covered by
// the stream's reported loss or (the rest) by ring drops; columns of equal length.
struct StreamCheck {
  std::map<std::uint32_t, std::uint64_t> next_seq;  // per task: the seq expected next
  std::map<std::uint32_t, std::uint64_t> received;
  std::map<std::uint32_t, std::uint64_t> lost;      // sum of lost_before
  std::map<std::uint32_t, std::uint64_t> ring_gap;  // gap not covered by lost_before
  std::string error;
  std::uint64_t batches = 0;

  void Add(const v1::StreamSamplesResponse& r) {
    const v1::SampleBatch& b = r.batch();
    const int n = b.release_ns_size();
    ++batches;
    if (b.latency_ns_size() != n || b.execution_ns_size() != n || b.flags_size() != n ||
        b.missed_releases_size() != n || n == 0) {
      error = "batch with columns of different or zero length";
      return;
    }
    const std::uint32_t task = b.task_id();
    const std::uint64_t expected = next_seq[task];
    if (b.first_seq() < expected) {
      error = "seq went back or repeated: task " + std::to_string(task) + " first_seq " +
              std::to_string(b.first_seq()) + " < expected " + std::to_string(expected);
      return;
    }
    const std::uint64_t gap = b.first_seq() - expected;
    if (gap < b.lost_before()) {
      error = "lost_before larger than the seq gap";
      return;
    }
    ring_gap[task] += gap - b.lost_before();
    lost[task] += b.lost_before();
    if (r.lost_total() != lost[task]) error = "lost_total is not the sum of lost_before";
    received[task] += static_cast<std::uint64_t>(n);
    next_seq[task] = b.first_seq() + static_cast<std::uint64_t>(n);
  }
  std::uint64_t accounted(std::uint32_t task) { return received[task] + lost[task]; }
};

// Reads `stream` to its end while finish() ends the run on a thread of its own: slowly (1 ms a
// message) until `slow_for` after that thread called finish(), however late it ran, then at full
// speed. For what a slow client could not take before the delivery deadline: give `slow_for` a
// little more than the server's stop_grace, and keep it short of the time Finish() waits for the
// final message. Returns the check of what was read.
template <typename Finish>
StreamCheck ReadSlowlyWhileFinishing(SampleStream& stream, Finish finish,
                                     std::chrono::nanoseconds slow_for) {
  using std::chrono::steady_clock;
  std::atomic<steady_clock::rep> called{0};
  Background finisher([&] {
    called = steady_clock::now().time_since_epoch().count();
    finish();
  });
  const auto slow = [&] {
    const steady_clock::rep at = called.load();
    return at == 0 ||
           steady_clock::now() < steady_clock::time_point(steady_clock::duration(at)) + slow_for;
  };
  StreamCheck check;
  v1::StreamSamplesResponse r;
  while (stream.Next(&r)) {
    check.Add(r);
    if (slow()) std::this_thread::sleep_for(milliseconds(1));
  }
  finisher.Join();
  return check;
}

// Reads `stream` into `check` until `done()` or the stream ends or `timeout` passes.
template <typename Done>
Status ReadStream(SampleStream& stream, StreamCheck& check, Done done, milliseconds timeout) {
  Watchdog<SampleStream> dog(stream, timeout);
  v1::StreamSamplesResponse r;
  while (!done()) {
    if (!stream.Next(&r)) {
      dog.Disarm();
      if (dog.fired()) return Status(StatusCode::kUnavailable, "timed out reading the stream");
      return stream.Finish();
    }
    check.Add(r);
    if (!check.error.empty()) return InternalError(check.error);
  }
  return Status::Ok();
}

struct Command {
  int exit_code = -1;
  std::string output;
};

// Runs `cmd` with /bin/sh (stderr into the output too), bounded to 5 minutes: a hang fails the
// test (exit code -1) instead of blocking CI.
inline Command RunCommand(const std::string& cmd) {
  rtloop::testing::ChildConfig config;
  config.argv = {"/bin/sh", "-c", cmd};
  config.stderr_path = rtloop::testing::ChildConfig::kSameAsStdout;
  const rtloop::testing::ChildResult r = rtloop::testing::RunChild(config, std::chrono::minutes(5));
  Command c;
  c.exit_code = r.status.value_or(-1);
  c.output = r.out;
  return c;
}

inline bool HaveOpenssl() { return std::system("command -v openssl >/dev/null 2>&1") == 0; }

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::size_t CountOf(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(part); pos != std::string::npos;
       pos = text.find(part, pos + 1)) {
    ++n;
  }
  return n;
}

// Waits up to `timeout` for `pred()`.
template <typename Pred>
bool WaitFor(Pred pred, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (!pred()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// args[0] run with `args`, stdout to the file `out` (/dev/null unless given) and stderr to the
// file `err`: the config of a program whose serving address the test reads from its stderr.
inline rtloop::testing::ChildConfig WithStderr(std::vector<std::string> args,
                                               const std::string& err,
                                               const std::string& out = "/dev/null") {
  rtloop::testing::ChildConfig config;
  config.argv = std::move(args);
  config.stdout_path = out;
  config.stderr_path = err;
  return config;
}

// The address a telemetry server printed to `err` ("serving on HOST:PORT ..."), waiting up to
// 10 s; "" when it did not.
inline std::string WaitForServingAddress(const std::string& err) {
  std::string address;
  WaitFor(
      [&] {
        const std::string e = ReadAll(err);
        const std::size_t at = e.find("serving on ");
        const std::size_t stop = at == std::string::npos ? at : e.find(' ', at + 11);
        if (stop == std::string::npos) return false;
        address = e.substr(at + 11, stop - at - 11);
        return true;
      },
      milliseconds(10'000));
  return address;
}

// Child modes of rtloop_grpc_tests (main() in grpc_end_to_end_test.cc dispatches on environment
// variables):
// grpc_hardening_test.cc's server with few descriptors.
int RunChildServer(const char* spec);

}  // namespace rtloop::telemetry::testing
