// The readiness checks about privileges and budgets: RT throttling, RT group budgets, memlock and
// rtprio limits, SCHED_FIFO, /dev/cpu_dma_latency.
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "readiness_internal.h"
#include "rtloop/framework/rt_setup.h"

namespace rtloop::readiness_internal {
namespace {

constexpr ReadinessLevel kOk = ReadinessLevel::kOk;
constexpr ReadinessLevel kWarn = ReadinessLevel::kWarn;
constexpr ReadinessLevel kFail = ReadinessLevel::kFail;

constexpr unsigned long long kMinMemlockBytes = 256ull << 20;

// "Max locked memory  65536  65536  bytes" -> soft/hard ("unlimited" -> nullopt).
bool LimitLine(const std::string& text, const std::string& name,
               std::optional<unsigned long long>* soft, std::optional<unsigned long long>* hard) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    std::istringstream f(line.substr(name.size()));
    std::string s, h;
    if (!(f >> s >> h)) return false;
    auto value = [](const std::string& v) -> std::optional<unsigned long long> {
      if (v == "unlimited") return std::nullopt;
      return std::stoull(v);
    };
    try {
      *soft = value(s);
      *hard = value(h);
    } catch (...) {
      return false;
    }
    return true;
  }
  return false;
}

std::string Mib(unsigned long long bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

Credentials ReadCredentials(const FsTree& fs) {
  Credentials c;
  if (std::optional<std::string> status = fs.Read("/proc/self/status")) {
    std::istringstream in(*status);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string key;
      f >> key;
      if (key == "Uid:") {
        long long real = -1;
        f >> real >> c.euid;
        c.known = true;
      } else if (key == "CapEff:") {
        std::string hex;
        f >> hex;
        try {
          c.cap_eff = std::stoull(hex, nullptr, 16);
        } catch (...) {
          c.cap_eff = 0;
        }
      }
    }
  }
  if (std::optional<std::string> limits = fs.Read("/proc/self/limits")) {
    std::optional<unsigned long long> soft, hard;
    if (LimitLine(*limits, "Max locked memory", &soft, &hard)) {
      c.memlock_known = true;
      c.memlock_soft = soft;
    }
    if (LimitLine(*limits, "Max realtime priority", &soft, &hard)) {
      c.rtprio_known = true;
      if (hard) c.rtprio_hard = static_cast<long long>(*hard);
    }
  }
  return c;
}

ReadinessFinding CheckRtThrottling(const FsTree& fs) {
  const std::optional<long long> runtime = fs.ReadInt("/proc/sys/kernel/sched_rt_runtime_us");
  const std::optional<long long> period = fs.ReadInt("/proc/sys/kernel/sched_rt_period_us");
  const std::string fix = "sysctl -w kernel.sched_rt_runtime_us=950000 (or -1: no throttling)";
  if (!runtime) return Make("rt_throttling", kWarn, "sched_rt_runtime_us unreadable", fix);
  if (*runtime < 0) return Make("rt_throttling", kOk, "RT throttling off (sched_rt_runtime_us -1)");
  const std::string of =
      std::to_string(*runtime) + " of every " + std::to_string(period.value_or(1000000)) + " us";
  if (*runtime == 0) {
    return Make("rt_throttling", kFail, "RT tasks get no CPU time at all (sched_rt_runtime_us 0)",
                fix);
  }
  if (period && *runtime * 10 < *period * 9) {
    return Make("rt_throttling", kWarn, "RT tasks are throttled after " + of, fix);
  }
  return Make("rt_throttling", kOk,
              "RT throttling on: RT tasks may use " + of + " (a safety net for runaway loops)");
}

ReadinessFinding CheckRtGroupBudget(const FsTree& fs) {
  const std::optional<std::string> cgroups = fs.Read("/proc/self/cgroup");
  if (!cgroups) return Make("rt_group_budget", kOk, "/proc/self/cgroup unreadable: not checked");
  // Hierarchies that can carry cpu.rt_runtime_us: v1 "N:cpu,cpuacct:/path", v2 "0::/path".
  std::istringstream in(*cgroups);
  std::string line;
  bool any_file = false;
  while (std::getline(in, line)) {
    const std::size_t a = line.find(':');
    const std::size_t b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    std::vector<std::string> mounts;
    if (controllers.empty()) {
      mounts = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      mounts = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"};
    } else {
      continue;
    }
    if (path == "/") path.clear();
    for (const std::string& mount : mounts) {
      // The group and every ancestor must have a budget: the kernel needs it all the way up.
      for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
        const std::string file = mount + p + "/cpu.rt_runtime_us";
        if (std::optional<long long> budget = fs.ReadInt(file)) {
          any_file = true;
          if (*budget == 0) {
            const std::string group = p.empty() ? "/" : p;
            return Make("rt_group_budget", kFail,
                        "cgroup " + group +
                            " has cpu.rt_runtime_us 0: SCHED_FIFO/RR threads "
                            "are refused or never run, so latency tools measure nothing",
                        "echo 950000 > " + file +
                            " (parents first), or run in a cgroup with a "
                            "budget (docker: --cpu-rt-runtime=950000)");
          }
        }
        if (p.empty()) break;
      }
    }
  }
  if (!any_file) {
    return Make("rt_group_budget", kOk,
                "no RT group scheduling budgets (CONFIG_RT_GROUP_SCHED off)");
  }
  return Make("rt_group_budget", kOk, "this process's cgroups all have an RT budget");
}

ReadinessFinding CheckMemlock(const Credentials& c) {
  const std::string fix = MemlockFix();
  if (HasCap(c, kCapIpcLock)) return Make("memlock_limit", kOk, "CAP_IPC_LOCK: no memlock limit");
  if (!c.memlock_known) return Make("memlock_limit", kWarn, "memlock limit unreadable", fix);
  if (!c.memlock_soft) return Make("memlock_limit", kOk, "memlock limit unlimited");
  if (*c.memlock_soft >= kMinMemlockBytes) {
    return Make("memlock_limit", kOk, "memlock limit " + Mib(*c.memlock_soft));
  }
  return Make("memlock_limit", kFail,
              "memlock limit " + std::to_string(*c.memlock_soft / 1024) +
                  " KiB: mlockall (cyclictest -m) fails, memory can page-fault",
              fix);
}

ReadinessFinding CheckRtprio(const Credentials& c) {
  const std::string fix = RtprioFix("PROGRAM");
  if (HasCap(c, kCapSysNice)) return Make("rtprio_limit", kOk, "CAP_SYS_NICE: any RT priority");
  if (!c.rtprio_known) return Make("rtprio_limit", kWarn, "rtprio limit unreadable", fix);
  if (!c.rtprio_hard || *c.rtprio_hard >= 99) {
    return Make("rtprio_limit", kOk, "rtprio limit allows priority 99");
  }
  if (*c.rtprio_hard == 0) {
    return Make("rtprio_limit", kFail, "rtprio limit 0 and no CAP_SYS_NICE: no RT priority", fix);
  }
  return Make("rtprio_limit", kWarn,
              "rtprio limit " + std::to_string(*c.rtprio_hard) + ": higher priorities refused",
              fix);
}

ReadinessFinding CheckSchedFifo(const FsTree& fs, const Credentials& c, bool probe) {
  const std::string fix =
      "run as root or with CAP_SYS_NICE, raise the rtprio limit, and give the cgroup an RT budget";
  if (probe) {
    // Try it on this thread and put the old scheduling back.
    int old_policy = 0;
    sched_param old_param{};
    pthread_getschedparam(pthread_self(), &old_policy, &old_param);
    sched_param p{};
    p.sched_priority = 1;
    const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    if (rc == 0) {
      pthread_setschedparam(pthread_self(), old_policy, &old_param);
      return Make("sched_fifo", kOk, "SCHED_FIFO permitted (tried)");
    }
    return Make("sched_fifo", kFail, std::string("SCHED_FIFO refused: ") + std::strerror(rc), fix);
  }
  (void)fs;
  if (HasCap(c, kCapSysNice)) return Make("sched_fifo", kOk, "SCHED_FIFO permitted (CAP_SYS_NICE)");
  if (c.rtprio_known && (!c.rtprio_hard || *c.rtprio_hard > 0)) {
    return Make("sched_fifo", kOk, "SCHED_FIFO permitted (rtprio limit)");
  }
  return Make("sched_fifo", kFail, "SCHED_FIFO refused: no CAP_SYS_NICE and rtprio limit 0", fix);
}

ReadinessFinding CheckCpuDmaLatency(const FsTree& fs, const Credentials& c, bool probe) {
  const std::string path = "/dev/cpu_dma_latency";
  const std::string fix =
      "run as root (or a udev rule giving the RT user write access to " + path + ")";
  struct stat st {};
  if (stat(fs.Path(path).c_str(), &st) != 0) {
    return Make("cpu_dma_latency", kWarn, path + " absent: idle states cannot be held off",
                "enable CONFIG_CPU_IDLE/PM QoS in the kernel");
  }
  bool writable = false;
  if (probe) {
    writable = access(fs.Path(path).c_str(), W_OK) == 0;
  } else if (c.euid == 0 || HasCap(c, kCapDacOverride)) {
    writable = true;
  } else {
    writable = (st.st_mode & S_IWOTH) != 0 ||
               (c.euid >= 0 && st.st_uid == static_cast<uid_t>(c.euid) && (st.st_mode & S_IWUSR));
  }
  if (writable) return Make("cpu_dma_latency", kOk, path + " writable");
  return Make("cpu_dma_latency", kWarn,
              path + " not writable: deep idle states stay allowed while measuring", fix);
}

}  // namespace rtloop::readiness_internal
