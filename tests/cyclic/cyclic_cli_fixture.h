// The harness of the rtloop-cyclic end-to-end tests: runs the binary as a subprocess with its
// stdout and stderr in files of a scratch directory, with a bounded wait. Shared by the test files
// of tests/cyclic that run the binary.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef RTLOOP_CYCLIC_BINARY
#error "RTLOOP_CYCLIC_BINARY must name the rtloop-cyclic executable"
#endif

namespace rtloop::cyclic::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

class CyclicCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rtloop-cyclic-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  // Starts the binary with `args`; stdout/stderr go to files in dir_. `before_exec` runs in the
  // child (e.g. to drop privileges).
  pid_t Spawn(const std::vector<std::string>& args, void (*before_exec)() = nullptr) {
    const std::string out = dir_ + "/stdout";
    const std::string err = dir_ + "/stderr";
    const pid_t pid = fork();
    if (pid == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      if (before_exec != nullptr) before_exec();
      std::vector<char*> argv;
      static char name[] = RTLOOP_CYCLIC_BINARY;
      argv.push_back(name);
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(RTLOOP_CYCLIC_BINARY, argv.data());
      _exit(127);
    }
    return pid;
  }

  Outcome Wait(pid_t pid) {
    Outcome r;
    int status = 0;
    // Bounded: a hang fails the test instead of blocking CI.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << "rtloop-cyclic did not finish within 20 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFile(dir_ + "/stdout");
    r.err = ReadFile(dir_ + "/stderr");
    return r;
  }

  Outcome Run(const std::vector<std::string>& args) { return Wait(Spawn(args)); }

  // Waits (bounded) until rtloop-cyclic `pid` has set up: its SIGUSR2 status file
  // /dev/shm/cyclictest<pid> exists, which it creates after blocking SIGINT/SIGTERM/SIGUSR1/2 for
  // its main loop. From then on a signal is taken by the main loop instead of killing the process,
  // however slowly the binary started (a fixed sleep is not enough on a loaded CI machine).
  static bool WaitUntilSetUp(pid_t pid) {
    const std::string marker = "/dev/shm/cyclictest" + std::to_string(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Exists(marker)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::string dir_;
};

// cyclictest's T: line (us units): "T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld
// Max:%8ld". (std::regex trips a gcc 12 false positive under -fsanitize=address -Werror.)
inline bool IsThreadLine(const std::string& line) {
  int index = 0, tid = 0, prio = 0, consumed = 0;
  long interval = 0, min = 0, act = 0, avg = 0, max = 0;
  unsigned long cycles = 0;
  const int n =
      std::sscanf(line.c_str(), "T:%d (%d) P:%d I:%ld C:%lu Min:%ld Act:%ld Avg:%ld Max:%ld%n",
                  &index, &tid, &prio, &interval, &cycles, &min, &act, &avg, &max, &consumed);
  return n == 9 && static_cast<std::size_t>(consumed) == line.size() && line.size() >= 70;
}

}  // namespace rtloop::cyclic::testing
