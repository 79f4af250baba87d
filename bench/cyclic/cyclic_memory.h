// The memory an rtloop-cyclic configuration needs, computed from the options before anything is
// allocated, and the check that this process can have it (so that -t64 -h1000000 under
// `ulimit -v` is a message naming the need, the limit and the fix, not std::bad_alloc).
//
//   const MemoryPlan plan = PlanMemory(options);
//   if (Status s = CheckMemory(plan, ReadMemoryLimits()); !s.ok()) return s;  // exit 1
//
// Threading: plain functions. Not RT-safe (ReadMemoryLimits reads /proc).
#pragma once

#include <cstdint>

#include "cyclic_options.h"
#include "rtloop/framework/status.h"

namespace rtloop::cyclic {

struct MemoryPlan {
  int threads = 0;
  std::uint64_t per_thread_bytes = 0;  // CyclicThreadStats buffers and the thread's final report
  std::uint64_t telemetry_bytes = 0;   // the telemetry hub's rings and histograms
  std::uint64_t output_bytes = 0;      // the histogram text at the end (-h/-H)
  std::uint64_t total_bytes = 0;
};

// What `o` needs, the larger buffers counted in full (the worst case: every histogram overflow
// listed).
MemoryPlan PlanMemory(const CyclicOptions& o);

struct MemoryLimits {
  // Bytes this process may still map under RLIMIT_AS (ulimit -v): the limit minus what is mapped
  // now and what thread stacks and libraries will take. UINT64_MAX without a limit.
  std::uint64_t address_space_left = UINT64_MAX;
  std::uint64_t address_space_limit = UINT64_MAX;  // RLIMIT_AS itself
  std::uint64_t mem_available = UINT64_MAX;        // /proc/meminfo MemAvailable; MAX if unknown
};

// Reads RLIMIT_AS, /proc/self/status (VmSize) and /proc/meminfo. `threads` measurement stacks
// and the helper threads' are reserved, and with `servers` (--telemetry, --metrics) the gRPC and
// HTTP threads'.
MemoryLimits ReadMemoryLimits(int threads, bool servers);

// OK when the plan fits; ResourceExhausted with the numbers and the fix otherwise.
Status CheckMemory(const MemoryPlan& plan, const MemoryLimits& limits, const CyclicOptions& o);

}  // namespace rtloop::cyclic
