// Internal: scheduling-policy helpers shared by the executor and its tests. Not installed.
// Not RT-safe (builds strings, reads /proc).
#pragma once

#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/framework/rt_setup.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"

namespace rtloop::internal {

// ToLinuxPolicy() and LinuxPolicyName() are public: rtloop/framework/rt_setup.h.
bool IsRealtimePolicy(SchedPolicy policy) noexcept;  // fifo, rr, deadline

// What decides whether a thread may take a policy.
struct PrivilegeFacts {
  bool cap_sys_nice = false;       // CAP_SYS_NICE in the effective set (root has it)
  std::uint64_t rtprio_limit = 0;  // RLIMIT_RTPRIO soft limit
  std::uint64_t nice_limit = 0;    // RLIMIT_NICE soft limit (allows nice >= 20 - limit)
};
PrivilegeFacts ReadPrivilegeFacts();

// OK when `facts` allow `config.policy` / priority / nice; otherwise PermissionDenied naming the
// task, the policy and the fix.
Status CheckSchedPrivilege(const TaskConfig& config, const PrivilegeFacts& facts);

// The message for a refused policy change (also used for the real syscall's failure).
std::string SchedFailureWhat(const TaskConfig& config);
std::string SchedPermissionHint(SchedPolicy policy);

// Range checks of policy, priority, nice and deadline parameters (no privilege check).
Status ValidateSchedParams(const TaskConfig& config);

// Every CPU in `cpus` must exist (`present`), be online and be in the process's `allowed` set
// (empty: not checked). The message names `who`, the CPU, the sets and `field` to fix.
Status ValidateCpus(const std::vector<int>& cpus, const std::vector<int>& online,
                    const std::vector<int>& present, const std::vector<int>& allowed,
                    const std::string& who, const std::string& field);
// /sys/devices/system/cpu/present; empty when unreadable.
std::vector<int> PresentCpus();

// The machine's CPUs as configuration checks need them (read by ReadCpuFacts(), process_setup.h).
struct CpuFacts {
  std::vector<int> online;
  std::vector<int> present;   // exist, maybe offline
  std::vector<int> allowed;   // the process's affinity before any housekeeping move
  std::vector<int> isolated;  // /sys/devices/system/cpu/isolated
};

// A FIFO/RR task pinned to a CPU that is not isolated while some CPUs are isolated: the warning
// text; empty when there is nothing to warn about.
std::string NonIsolatedCpuWarning(const TaskConfig& config, const std::vector<int>& isolated);

}  // namespace rtloop::internal
