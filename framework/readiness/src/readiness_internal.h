// Internals of readiness.cc / readiness_privileges.cc: file access under a root prefix and the
// individual checks. Not a public header.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rtloop/readiness.h"

namespace rtloop::readiness_internal {

// Reads facts from files under a prefix ("" = the live system).
class FsTree {
 public:
  static constexpr std::size_t kMaxFactBytes = 1u << 20;
  explicit FsTree(std::string root) : root_(std::move(root)) {}
  std::string Path(const std::string& absolute) const { return root_ + absolute; }
  // The whole file, or nullopt when it cannot be read, is not a regular file (a FIFO, a device,
  // a directory) or holds more than kMaxFactBytes. Never blocks.
  std::optional<std::string> Read(const std::string& absolute) const;
  // The first line without its newline and surrounding blanks.
  std::optional<std::string> ReadLine(const std::string& absolute) const;
  std::optional<long long> ReadInt(const std::string& absolute) const;
  bool Exists(const std::string& absolute) const;
  // Entry names of a directory (without . and ..), sorted; empty when it cannot be read.
  std::vector<std::string> List(const std::string& absolute) const;
  bool live() const { return root_.empty(); }

 private:
  std::string root_;
};

// The process's credentials as /proc/self/status and /proc/self/limits show them.
struct Credentials {
  bool known = false;  // status was readable
  long long euid = -1;
  unsigned long long cap_eff = 0;                  // CapEff bits
  std::optional<unsigned long long> memlock_soft;  // bytes; nullopt = unlimited
  bool memlock_known = false;
  std::optional<long long> rtprio_hard;  // nullopt = unlimited
  bool rtprio_known = false;
};
Credentials ReadCredentials(const FsTree& fs);
inline constexpr int kCapDacOverride = 1;
inline constexpr int kCapIpcLock = 14;
inline constexpr int kCapSysNice = 23;
inline bool HasCap(const Credentials& c, int cap) { return (c.cap_eff >> cap) & 1u; }

// The online CPUs (sys/devices/system/cpu/online), and the isolated ones.
std::vector<int> OnlineCpus(const FsTree& fs);
std::vector<int> IsolatedCpus(const FsTree& fs);

ReadinessFinding Make(const char* id, ReadinessLevel level, std::string summary,
                      std::string fix = {});

// Privileges and budgets (readiness_privileges.cc).
ReadinessFinding CheckRtThrottling(const FsTree& fs);
ReadinessFinding CheckRtGroupBudget(const FsTree& fs);
ReadinessFinding CheckMemlock(const Credentials& c);
ReadinessFinding CheckRtprio(const Credentials& c);
ReadinessFinding CheckSchedFifo(const FsTree& fs, const Credentials& c, bool probe);
ReadinessFinding CheckCpuDmaLatency(const FsTree& fs, const Credentials& c, bool probe);
// readiness_memory.cc
ReadinessFinding CheckLockedMemory(const FsTree& fs, const Credentials& c);

// Boot parameters of CPU isolation (readiness_isolation.cc).
// The CPUs of a boot parameter such as "isolcpus=managed_irq,domain,2-3" in proc/cmdline (empty
// when absent; "all" is the online CPUs).
std::vector<int> CmdlineCpus(const FsTree& fs, const std::string& key);
// The CPUs the real-time threads run on: `configured` (ReadinessConfig::rt_cpus), else the
// isolated ones.
std::vector<int> RtCpus(const FsTree& fs, const std::vector<int>& configured);
ReadinessFinding CheckIsolcpus(const FsTree& fs, const std::vector<int>& rt_cpus);
ReadinessFinding CheckNohzFull(const FsTree& fs, const std::vector<int>& rt_cpus);
ReadinessFinding CheckRcuNocbs(const FsTree& fs, const std::vector<int>& rt_cpus);

// What outlier explanation can use (readiness_explain.cc).
ReadinessFinding CheckTracefs(const FsTree& fs, const Credentials& c, bool probe);
ReadinessFinding CheckTraceEvents(const FsTree& fs);
ReadinessFinding CheckTimerlat(const FsTree& fs);

}  // namespace rtloop::readiness_internal
