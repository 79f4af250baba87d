// ChildProcess: a program the test starts (Prometheus, Chromium, rtloop-cyclic) with its stdout
// and stderr in files, stopped (SIGTERM, then SIGKILL) and reaped when the object goes away, an
// ASSERT included.
//
//   ChildProcess prom({"/usr/bin/prometheus", "--config.file=" + config}, dir / "prom.out");
//   ASSERT_TRUE(prom.started()) << prom.error();
//   int status = prom.Wait(std::chrono::seconds(10));   // exit status, -1 on timeout
//
// Not thread-safe: one controlling thread.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace rtloop::telemetry::testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`; stdout and stderr both go to `output`.
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& output)
      : output_(output) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // The output file is opened (and emptied) here, not among the child's file actions: those
    // run in the child, and where posix_spawn returns before they did (qemu-user runs glibc's
    // vfork-style clone as a fork), Output() would still read an earlier child's output left in
    // a reused file.
    const int out_fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      error_ = "cannot open " + output.string() + ": " + std::strerror(errno);
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out_fd);
    if (rc != 0) {
      error_ = "cannot start " + argv[0] + ": " + std::strerror(rc);
      pid_ = 0;
    }
  }
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ != 0 || exited_; }
  const std::string& error() const { return error_; }
  pid_t pid() const { return pid_; }

  // Waits for the child to exit on its own: its exit status (128 + signal when killed), or -1
  // when it is still running after `timeout`.
  int Wait(std::chrono::milliseconds timeout) {
    if (exited_) return status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ != 0) {
      int ws = 0;
      const pid_t r = waitpid(pid_, &ws, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        pid_ = 0;
        status_ = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        return status_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

  // SIGTERM, up to 5 s to exit, then SIGKILL. Idempotent.
  void Stop() {
    if (pid_ == 0) return;
    kill(pid_, SIGTERM);
    if (Wait(std::chrono::milliseconds(5000)) < 0) {
      kill(pid_, SIGKILL);
      Wait(std::chrono::milliseconds(5000));
    }
  }

  // What the child wrote so far.
  std::string Output() const {
    std::ifstream in(output_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path output_;
  pid_t pid_ = 0;
  bool exited_ = false;
  int status_ = -1;
  std::string error_;
};

// A TCP port that was free a moment ago on 127.0.0.1 (for programs that need a port number
// up front, as Prometheus's --web.listen-address does).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace rtloop::telemetry::testing
