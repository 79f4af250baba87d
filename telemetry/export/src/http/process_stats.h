// The process facts /metrics reports: locked and resident memory, CPU time of the process and of
// each non-RT thread (by thread name), from /proc/self. Internal to rtloop_telemetry.
//
// Not RT-safe: reads /proc. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rtloop::telemetry::internal {

struct ThreadCpu {
  std::string name;          // /proc/self/task/TID/comm ("civetweb-worker", "rtloop-window")
  double cpu_seconds = 0.0;  // user + system, summed over the threads of that name
  int threads = 0;
};

struct ProcessStats {
  bool ok = false;                   // /proc/self/status was readable
  std::uint64_t locked_bytes = 0;    // VmLck
  std::uint64_t resident_bytes = 0;  // VmRSS
  double cpu_seconds = 0.0;          // the whole process, user + system
  std::vector<ThreadCpu> threads;    // threads whose tid is not in `skip_tids`, by name
};

// `skip_tids`: the RT task threads (their CPU time is the application's, not telemetry's).
ProcessStats ReadProcessStats(const std::vector<int>& skip_tids);

}  // namespace rtloop::telemetry::internal
