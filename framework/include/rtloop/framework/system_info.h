// Facts about the machine that tools and telemetry report: online and isolated CPUs, the preempt
// model, kernel release.
//
//   const rtloop::SystemInfo info = rtloop::ReadSystemInfo();
//   std::printf("%s, isolated CPUs %s\n", rtloop::PreemptModelName(info.preempt_model),
//               rtloop::FormatCpuList(info.isolated_cpus).c_str());
//
// Threading: free functions without shared state; any thread. Not RT-safe: they read /sys and
// /proc and allocate.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop {

enum class PreemptModel { kUnknown, kNone, kVoluntary, kFull, kDynamic, kRt };

const char* PreemptModelName(PreemptModel model) noexcept;

struct SystemInfo {
  std::string host_name;
  std::string kernel_release;  // uname -r
  std::string kernel_version;  // uname -v
  std::string machine;         // uname -m
  PreemptModel preempt_model = PreemptModel::kUnknown;
  bool realtime = false;  // /sys/kernel/realtime == 1 (PREEMPT_RT)
  std::vector<int> online_cpus;
  std::vector<int> isolated_cpus;  // /sys/devices/system/cpu/isolated
  std::vector<int> affinity_cpus;  // this process's allowed CPUs
};

SystemInfo ReadSystemInfo();

// "0-3,6" -> {0,1,2,3,6}. InvalidArgument naming the bad part. Accepts an empty string as {}.
Result<std::vector<int>> ParseCpuList(const std::string& text);
// {0,1,2,3,6} -> "0-3,6".
std::string FormatCpuList(const std::vector<int>& cpus);

// The preempt model from `uname -v` (e.g. "#1 SMP PREEMPT_DYNAMIC ...") and the content of
// /sys/kernel/realtime ("1" on PREEMPT_RT; empty when the file is absent).
PreemptModel ParsePreemptModel(const std::string& kernel_version, const std::string& realtime_flag);

// The CPUs this thread may run on (sched_getaffinity). Empty on failure.
std::vector<int> CurrentAffinity();

// The CPUs a thread named to run on a CPU may be pinned to: the process's affinity plus the
// isolated CPUs, ascending. isolcpus= takes the isolated CPUs out of the affinity of every task
// from boot (init's, so every shell's and service's), yet sched_setaffinity still pins a thread
// there: that is what they are for (cyclictest -a 1 does it). A cgroup cpuset that excludes them
// still refuses, when the thread is pinned. Empty `affinity` (unknown) gives empty: not checked.
std::vector<int> PinnableCpus(const std::vector<int>& affinity, const std::vector<int>& isolated);

// A text file of /proc or /sys read with stdio, never iostreams: a program built on the framework
// then links none of libstdc++'s locale and stream machinery (about 1 MiB of code, all of it
// locked under -m; bench/footprint/README.md). ForEachLine calls `line` with each line, without
// its newline, until it returns false; false when the file cannot be opened. ReadFirstLine: ""
// when it cannot be read.
bool ForEachLine(const char* path, const std::function<bool(std::string_view line)>& line);
std::string ReadFirstLine(const char* path);

}  // namespace rtloop
