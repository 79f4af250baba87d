// ChildProcess: the one way a test starts a program in a child process. It takes an argv (argv[0]
// a path, not searched in PATH), sends stdout and stderr to files (given ones, or files of its own
// that Stdout()/Stderr() read: "captured"), adds to the environment, can drop real-time
// privileges, a process group and run a hook before exec; waits with a bound and reports the exit
// status (128 + signal when a signal ended it). At destruction a child still running gets SIGTERM,
// then SIGKILL after a grace period, and is reaped: no test leaves a process behind, a failed
// ASSERT included. A program that cannot be started is started() == false with error() saying why
// (the exec's errno included), never a child that exits 127.
//
//   rtloop::testing::ChildProcess top({TargetFile("rtloop-top"), address, "--once"});
//   ASSERT_TRUE(top.started()) << top.error();
//   std::optional<int> status = top.Wait(std::chrono::seconds(10));  // nullopt: still running
//   EXPECT_EQ(status, 0) << top.Stderr();
//
//   // Or all at once: run to the end (bounded), both outputs captured.
//   rtloop::testing::ChildResult r = rtloop::testing::RunChild({"/bin/sh", "-c", "exit 3"});
//   EXPECT_EQ(r.status, 3);
//
//   // A function of the test in a process of its own (credentials, dispositions, rlimits):
//   rtloop::testing::ForkedResult f = rtloop::testing::RunForked([] { return setuid(65534); });
//   EXPECT_EQ(f.status, 0) << f.out;
//
// Threading: one controlling thread per object (not thread-safe); objects are independent. The
// child is started with fork + exec: between the two only async-signal-safe calls run (all the
// strings are prepared before fork), so it is safe in a test process with threads. Not RT-safe:
// forks, allocates and sleeps.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rtloop::testing {

struct ChildConfig {
  // The program (argv[0], a path) and its arguments.
  std::vector<std::string> argv;
  // "NAME=value" entries added to this process' environment (replacing a variable of that name).
  std::vector<std::string> env;
  // Where stdout goes: "" captures it in a file of the child's own (Stdout() reads it); "-" leaves
  // it on this process' stdout; anything else is a file, created or emptied by the parent before
  // the child starts (so a reused file never shows an earlier child's output).
  std::string stdout_path;
  // Where stderr goes, as stdout_path; kSameAsStdout sends it where stdout goes.
  std::string stderr_path;
  // A descriptor to use as the child's stdin, stdout (overrides stdout_path), e.g. a pipe's end;
  // -1: /dev/null for stdin, stdout_path for stdout.
  int stdin_fd = -1;
  int stdout_fd = -1;
  // Removes CAP_SYS_NICE from the child's bounding set and zeroes its RLIMIT_RTPRIO, so it runs as
  // a user without real-time privileges would (root keeps its other capabilities).
  bool drop_rt = false;
  // The child leads a new process group; Signal() and the stop at destruction reach the group.
  bool new_process_group = false;
  // Runs in the child after the redirections, just before exec (e.g. to drop to another user or
  // change a descriptor). Async-signal-safe calls only; _exit() on failure. It may set an
  // environment variable only when `env` is empty (the child then execs with its environ as is).
  void (*before_exec)() = nullptr;
  // How long the stop at destruction (and Stop()) waits after SIGTERM before SIGKILL.
  std::chrono::milliseconds stop_grace{5000};

  static constexpr const char* kSameAsStdout = "&1";
};

class ChildProcess {
 public:
  explicit ChildProcess(const ChildConfig& config);
  // argv with both outputs captured.
  explicit ChildProcess(std::vector<std::string> argv);
  // argv with stdout and stderr both in the file `output` (Output() reads it).
  ChildProcess(std::vector<std::string> argv, const std::filesystem::path& output);
  ~ChildProcess();  // Stop(), then removes the captured files
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // True once the child was started (it may have exited since).
  bool started() const { return started_; }
  // Why the child could not be started ("" when it was).
  const std::string& error() const { return error_; }
  // The child's pid (also its process group with new_process_group); 0 if it never started.
  pid_t pid() const { return pid_; }

  // True while the child has not exited (reaps it when it has).
  bool Running();
  // Waits up to `timeout` for the child to exit on its own: its exit status (128 + signal when a
  // signal ended it), or nullopt when it still runs. A child never started: nullopt at once.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Sends `sig` to the child (its group with new_process_group); false if it has been reaped.
  bool Signal(int sig);
  // SIGTERM, up to stop_grace for the exit, then SIGKILL; reaps it. The exit status; nullopt if it
  // was never started. Idempotent.
  std::optional<int> Stop();

  // What the child wrote so far to its stdout / stderr file ("" for "-" or a descriptor).
  std::string Stdout() const;
  std::string Stderr() const;
  // Output(): Stdout(), for a child whose stderr goes to the same file.
  std::string Output() const { return Stdout(); }
  const std::string& stdout_path() const { return stdout_path_; }
  const std::string& stderr_path() const { return stderr_path_; }

 private:
  void Start(const ChildConfig& config);
  std::optional<int> Reap(bool block);

  std::chrono::milliseconds stop_grace_;
  bool group_ = false;
  std::filesystem::path scratch_;  // holds the captured files; "" when nothing is captured
  std::string stdout_path_, stderr_path_;
  pid_t pid_ = 0;
  bool started_ = false;
  bool reaped_ = false;
  int status_ = 0;  // the exit status once reaped_
  std::string error_;
};

// A child run to its end: the exit status (nullopt when it did not end within the bound and was
// stopped) and what it wrote.
struct ChildResult {
  std::optional<int> status;
  std::string out, err;
  std::string error;  // why it could not be started, else ""
};

// Runs `config` (outputs captured unless given) and waits up to `timeout` for its end; a child
// still running then is stopped.
ChildResult RunChild(const ChildConfig& config,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));
inline ChildResult RunChild(std::vector<std::string> argv,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  ChildConfig config;
  config.argv = std::move(argv);
  return RunChild(config, timeout);
}

// What a function run in a forked child ended with: its return value as the exit status (128 +
// signal when a signal ended it) and what it wrote to stdout.
struct ForkedResult {
  int status = -1;
  std::string out;
};

// Runs `body` in a forked child, its stdout on a pipe this process reads (ForkedResult::out), and
// exits the child with body's return value (0..255), without running this process' atexit
// handlers. A child that hangs gets SIGALRM after `timeout`, so the test fails instead of hanging.
// For checks that need a process of their own: another user, a signal disposition, an rlimit, a
// mount namespace. In the child only the calling thread exists: `body` must not wait for the
// parent's other threads (nor take a lock one of them may have held at fork). status -1 and `out`
// saying why when fork or pipe failed.
ForkedResult RunForked(const std::function<int()>& body,
                       std::chrono::seconds timeout = std::chrono::seconds(20));

// The whole text of the file at `path` ("" if it cannot be read).
std::string ReadWholeFile(const std::string& path);

}  // namespace rtloop::testing
