// Helpers of the fault-injection tests: descriptor and child-process counts of a process (for
// "nothing is leaked"), the cycle-count check of a run a fault hit, a stream read to its end.
// The child processes are tests/testing's (child_process.h); the scratch folders, rigs and clients
// are tests/testing's too (scratch_dir.h, telemetry_rig.h, grpc_test_util.h).
//
//   const int before = FdCount(getpid());
//   ... the fault ...
//   EXPECT_TRUE(FdsBackTo(getpid(), before, 16)) << ListFds();
//
// Not thread-safe: one test thread (the counts read /proc).
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace rtloop::faults {

// Open descriptors of process `pid` (/proc/PID/fd); -1 when it cannot be read.
inline int FdCount(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Waits up to `timeout` until `pid` holds at most `before + slack` descriptors (sockets are
// closed by gRPC's and civetweb's threads a moment after the peer went away).
inline bool FdsBackTo(pid_t pid, int before, int slack,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (FdCount(pid) > before + slack) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Live (not zombie) processes whose parent is `pid`.
inline std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  DIR* d = opendir("/proc");
  if (d == nullptr) return children;
  while (const dirent* e = readdir(d)) {
    const pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos || close + 4 > line.size()) continue;
    const char state = line[close + 2];
    const pid_t parent = static_cast<pid_t>(std::atoi(line.c_str() + close + 4));
    if (parent == pid && state != 'Z' && state != 'X') children.push_back(p);
  }
  closedir(d);
  return children;
}

}  // namespace rtloop::faults
