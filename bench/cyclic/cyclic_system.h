// What rtloop-cyclic asks of the system before and around a run, with cyclictest 2.4's messages
// (bench/cyclic/CYCLICTEST-2.4.md §1): the privilege check, /dev/cpu_dma_latency, the
// timer-resolution warnings, --smi, --tracemark's trace files, and the facts the output shows (NUMA
// node of a CPU, the load average).
//
//   if (Status s = CheckPrivileges(options); !s.ok()) ...   // before any thread exists
//   DmaLatencyRequest dma = HoldDmaLatency(options);         // prints "# /dev/cpu_dma_latency..."
//   WarnAboutClock(options);                                 // high-res timers, -R
//   TraceMarker trace;  trace.Open();  ...  trace.Mark(value, limit);   // -b --tracemark
//
// Output discipline as cyclictest: the dma line on stdout, WARN:/INFO: lines on stderr.
// Threading: the main thread, during set-up (TraceMarker::Mark() at the end of the run). Not
// RT-safe: system calls and I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cyclic_options.h"
#include "rtloop/framework/rt_setup.h"
#include "rtloop/framework/status.h"

namespace rtloop::cyclic {

// cyclictest's check_privs(): can this process use the RT policy at the highest priority a thread
// asks for? Tries it on the calling thread (raising RLIMIT_RTPRIO's soft limit to the hard one, as
// cyclictest's threads do) and restores the thread's scheduling. PermissionDenied with the fix.
Status CheckPrivileges(const CyclicOptions& o);

// cyclictest's set_latency_target(): writes --latency (default 0) to /dev/cpu_dma_latency and
// prints "# /dev/cpu_dma_latency set to Nus" on stdout, or a WARN: (--laptop, --default-system, no
// device). Returns the request, to hold until the end of the run (held() false when none).
DmaLatencyRequest HoldDmaLatency(const CyclicOptions& o);

// "WARN: High resolution timers not available" when the clock's resolution is not 1 ns, and -R's
// measured resolution (warned with -v, or when it is coarser than reported).
void WarnAboutClock(const CyclicOptions& o);

// --smi: the reason it cannot run here (MSR 0x34 exists on Intel CPUs only; rtloop-cyclic does not
// read it yet). Always an error.
Status CheckSmi();

// Restricts the calling thread to `cpus`. False on failure.
bool SetThreadAffinity(const std::vector<int>& cpus);

// The NUMA node of `cpu` (the nodeN entry under /sys/devices/system/cpu/cpuC/, what libnuma's
// numa_node_of_cpu reads), for JSON "node" as cyclictest 2.4 built with libnuma (Debian's) reports
// it; -1 when `cpu` < 0 (not pinned) or the kernel shows no node.
int CpuNumaNode(int cpu);

// /proc/loadavg without its newline (the live header's loadavg).
std::string ReadLoadavg();

// The --tracemark files, opened up front as cyclictest does.
class TraceMarker {
 public:
  TraceMarker() = default;
  TraceMarker(const TraceMarker&) = delete;
  TraceMarker& operator=(const TraceMarker&) = delete;
  ~TraceMarker();

  // Opens trace_marker and tracing_on under debugfs or tracefs ("INFO: debugfs mountpoint: ..."),
  // or warns that no mark will be written.
  void Open();
  // "hit latency threshold (value > limit)" into trace_marker, "0" into tracing_on. Best effort.
  void Mark(std::int64_t value, std::int64_t limit) const;

 private:
  int marker_fd_ = -1;
  int tracing_on_fd_ = -1;
};

}  // namespace rtloop::cyclic
