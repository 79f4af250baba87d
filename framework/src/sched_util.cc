#include "sched_util.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "rtloop/framework/system_info.h"

namespace rtloop::internal {

namespace {
constexpr int kCapSysNice = 23;
std::string Quoted(const std::string& name) { return "\"" + name + "\""; }
bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
}  // namespace

bool IsRealtimePolicy(SchedPolicy policy) noexcept {
  return policy == SchedPolicy::kFifo || policy == SchedPolicy::kRr ||
         policy == SchedPolicy::kDeadline;
}

PrivilegeFacts ReadPrivilegeFacts() {
  PrivilegeFacts facts;
  ForEachLine("/proc/self/status", [&](std::string_view line) {
    if (line.substr(0, 7) != "CapEff:") return true;
    const std::uint64_t caps = std::strtoull(std::string(line.substr(7)).c_str(), nullptr, 16);
    facts.cap_sys_nice = ((caps >> kCapSysNice) & 1u) != 0;
    return false;
  });
  rlimit rl{};
  if (getrlimit(RLIMIT_RTPRIO, &rl) == 0) facts.rtprio_limit = rl.rlim_cur;
  if (getrlimit(RLIMIT_NICE, &rl) == 0) facts.nice_limit = rl.rlim_cur;
  return facts;
}

std::string SchedFailureWhat(const TaskConfig& config) {
  std::string what = "cannot set ";
  what += LinuxPolicyName(config.policy);
  if (config.policy == SchedPolicy::kFifo || config.policy == SchedPolicy::kRr) {
    what += " " + std::to_string(config.priority);
  } else if (config.policy == SchedPolicy::kDeadline) {
    what += " (runtime " + std::to_string(config.deadline.runtime.count()) + " ns, deadline " +
            std::to_string(config.deadline.deadline.count()) + " ns, period " +
            std::to_string(
                (config.deadline.period.count() != 0 ? config.deadline.period : config.period)
                    .count()) +
            " ns)";
  } else if (config.nice != 0) {
    what += " nice " + std::to_string(config.nice);
  }
  what += " on task " + Quoted(config.name);
  return what;
}

std::string SchedPermissionHint(SchedPolicy policy) {
  if (policy == SchedPolicy::kDeadline) {
    return "run as root or grant CAP_SYS_NICE (setcap cap_sys_nice+ep BINARY); the rtprio limit "
           "does not apply to SCHED_DEADLINE. As root, EPERM means the thread's CPU affinity does "
           "not span its whole root domain: run the process on all CPUs (no taskset) or in an "
           "exclusive cpuset";
  }
  if (policy == SchedPolicy::kFifo || policy == SchedPolicy::kRr) {
    return RtprioFix("BINARY") +
           "; or set ExecutorConfig::allow_non_rt_fallback to run it as SCHED_OTHER";
  }
  return "run as root, grant CAP_SYS_NICE, or raise the nice limit (ulimit -e, or nice in "
         "/etc/security/limits.conf)";
}

Status CheckSchedPrivilege(const TaskConfig& config, const PrivilegeFacts& facts) {
  if (facts.cap_sys_nice) return Status::Ok();
  bool allowed = true;
  std::string detail;
  switch (config.policy) {
    case SchedPolicy::kFifo:
    case SchedPolicy::kRr:
      allowed =
          config.priority >= 0 && static_cast<std::uint64_t>(config.priority) <= facts.rtprio_limit;
      detail = "no CAP_SYS_NICE and the rtprio limit is " + std::to_string(facts.rtprio_limit);
      break;
    case SchedPolicy::kDeadline:
      allowed = false;
      detail = "SCHED_DEADLINE needs CAP_SYS_NICE";
      break;
    case SchedPolicy::kOther:
    case SchedPolicy::kBatch:
      if (config.nice < 0) {
        allowed = static_cast<std::int64_t>(20 - config.nice) <=
                  static_cast<std::int64_t>(facts.nice_limit);
        detail = "no CAP_SYS_NICE and the nice limit is " + std::to_string(facts.nice_limit);
      }
      break;
    case SchedPolicy::kIdle:
      break;
  }
  if (allowed) return Status::Ok();
  return {StatusCode::kPermissionDenied,
          SchedFailureWhat(config) + ": Operation not permitted (" + detail + ") — " +
              SchedPermissionHint(config.policy),
          1 /* EPERM */};
}

Status ValidateSchedParams(const TaskConfig& config) {
  const std::string task = "task " + Quoted(config.name);
  switch (config.policy) {
    case SchedPolicy::kFifo:
    case SchedPolicy::kRr: {
      const int policy = ToLinuxPolicy(config.policy);
      const int lo = sched_get_priority_min(policy);
      const int hi = sched_get_priority_max(policy);
      if (config.priority < lo || config.priority > hi) {
        return InvalidArgumentError(task + ": priority " + std::to_string(config.priority) +
                                    " is outside " + LinuxPolicyName(config.policy) + "'s range " +
                                    std::to_string(lo) + ".." + std::to_string(hi) +
                                    " — set TaskConfig::priority in that range");
      }
      if (config.nice != 0) {
        return InvalidArgumentError(task + ": nice " + std::to_string(config.nice) +
                                    " has no effect under " + LinuxPolicyName(config.policy) +
                                    " — leave TaskConfig::nice at 0 (use priority)");
      }
      break;
    }
    case SchedPolicy::kOther:
    case SchedPolicy::kBatch:
    case SchedPolicy::kIdle:
    case SchedPolicy::kDeadline:
      if (config.priority != 0) {
        return InvalidArgumentError(task + ": priority " + std::to_string(config.priority) +
                                    " is outside " + LinuxPolicyName(config.policy) +
                                    "'s range 0..0 — set TaskConfig::priority = 0" +
                                    (config.policy == SchedPolicy::kDeadline
                                         ? std::string()
                                         : std::string(" (use nice), or policy fifo/rr")));
      }
      if (config.policy == SchedPolicy::kOther || config.policy == SchedPolicy::kBatch) {
        if (config.nice < -20 || config.nice > 19) {
          return InvalidArgumentError(task + ": nice " + std::to_string(config.nice) +
                                      " is outside -20..19 — set TaskConfig::nice in that range");
        }
      } else if (config.nice != 0) {
        return InvalidArgumentError(task + ": nice " + std::to_string(config.nice) +
                                    " has no effect under " + LinuxPolicyName(config.policy) +
                                    " — leave TaskConfig::nice at 0");
      }
      break;
  }
  if (config.policy == SchedPolicy::kDeadline) {
    const auto& d = config.deadline;
    const std::int64_t runtime = d.runtime.count();
    const std::int64_t deadline = d.deadline.count();
    const std::int64_t period = d.period.count() != 0 ? d.period.count() : config.period.count();
    if (runtime <= 0 || deadline <= 0 || period <= 0 || runtime > deadline || deadline > period) {
      return InvalidArgumentError(
          task + ": SCHED_DEADLINE parameters runtime " + std::to_string(runtime) +
          " ns, deadline " + std::to_string(deadline) + " ns, period " + std::to_string(period) +
          " ns are invalid — need 0 < runtime <= deadline <= period (TaskConfig::deadline; "
          "period 0 means the task's period)");
    }
    if (runtime < 1024) {
      return InvalidArgumentError(task + ": SCHED_DEADLINE runtime " + std::to_string(runtime) +
                                  " ns is below the kernel's minimum of 1024 ns — raise "
                                  "TaskConfig::deadline.runtime");
    }
    if (!config.cpus.empty()) {
      return InvalidArgumentError(
          task +
          ": SCHED_DEADLINE tasks cannot be pinned with TaskConfig::cpus (the kernel requires "
          "their affinity to span the whole root domain) — leave cpus empty, or use an exclusive "
          "cpuset for the process");
    }
  }
  return Status::Ok();
}

Status ValidateCpus(const std::vector<int>& cpus, const std::vector<int>& online,
                    const std::vector<int>& present, const std::vector<int>& allowed,
                    const std::string& who, const std::string& field) {
  for (int cpu : cpus) {
    const std::string prefix = who + ": CPU " + std::to_string(cpu);
    if (!Contains(online, cpu)) {
      if (Contains(present, cpu)) {
        return InvalidArgumentError(prefix + " is offline (online CPUs: " + FormatCpuList(online) +
                                    ") — bring it online (echo 1 > /sys/devices/system/cpu/cpu" +
                                    std::to_string(cpu) + "/online) or fix " + field);
      }
      return InvalidArgumentError(
          prefix + " does not exist (online CPUs: " + FormatCpuList(online) + ") — fix " + field);
    }
    if (!allowed.empty() && !Contains(allowed, cpu)) {
      return InvalidArgumentError(prefix + " is online but not in this process's allowed CPUs (" +
                                  FormatCpuList(allowed) + ", see taskset/cpuset) — fix " + field);
    }
  }
  return Status::Ok();
}

std::vector<int> PresentCpus() {
  Result<std::vector<int>> cpus = ParseCpuList(ReadFirstLine("/sys/devices/system/cpu/present"));
  return cpus.ok() ? *cpus : std::vector<int>{};
}

std::string NonIsolatedCpuWarning(const TaskConfig& config, const std::vector<int>& isolated) {
  if (config.policy != SchedPolicy::kFifo && config.policy != SchedPolicy::kRr) return {};
  if (isolated.empty()) return {};
  for (int cpu : config.cpus) {
    if (!Contains(isolated, cpu)) {
      return "task " + Quoted(config.name) + " (" + LinuxPolicyName(config.policy) + " " +
             std::to_string(config.priority) + ") is pinned to CPU " + std::to_string(cpu) +
             ", which is not isolated, while CPUs " + FormatCpuList(isolated) +
             " are isolated — pin it to an isolated CPU for the best latency";
    }
  }
  return {};
}

}  // namespace rtloop::internal
