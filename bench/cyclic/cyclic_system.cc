#include "cyclic_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "rtloop/framework/rt_setup.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/framework/time.h"

namespace rtloop::cyclic {
namespace {

bool IsRtPolicy(SchedPolicy p) { return p == SchedPolicy::kFifo || p == SchedPolicy::kRr; }

// sched_setscheduler on the calling thread, raising RLIMIT_RTPRIO's soft limit on EPERM.
int TrySetScheduler(SchedPolicy policy, int priority) {
  sched_param param{};
  param.sched_priority = priority;
  int rc = sched_setscheduler(0, ToLinuxPolicy(policy), &param);
  if (rc != 0 && errno == EPERM) {
    rlimit rl{};
    if (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_RTPRIO, &rl);
      rc = sched_setscheduler(0, ToLinuxPolicy(policy), &param);
    }
  }
  return rc == 0 ? 0 : errno;
}

Status PrivilegeError(SchedPolicy policy, int priority, int err) {
  rlimit rl{};
  getrlimit(RLIMIT_RTPRIO, &rl);
  return Status(StatusCode::kPermissionDenied,
                std::string(LinuxPolicyName(policy)) + " priority " + std::to_string(priority) +
                    ": " + std::strerror(err) + " (rtprio limit " + std::to_string(rl.rlim_cur) +
                    ") — " + RtprioFix("$(command -v rtloop-cyclic)", priority) +
                    "; --policy=other measures without real-time scheduling",
                err);
}

}  // namespace

Status CheckPrivileges(const CyclicOptions& o) {
  int priority = 0;
  SchedPolicy policy = SchedPolicy::kOther;
  for (const ThreadPlan& t : o.threads) {
    if (IsRtPolicy(t.policy) && t.priority >= priority) {
      priority = t.priority;
      policy = t.policy;
    }
  }
  if (priority == 0) return Status::Ok();
  const int old_policy = sched_getscheduler(0);
  sched_param old_param{};
  sched_getparam(0, &old_param);
  if (const int err = TrySetScheduler(policy, priority); err != 0) {
    return PrivilegeError(policy, priority, err);
  }
  sched_setscheduler(0, old_policy, &old_param);
  return Status::Ok();
}

DmaLatencyRequest HoldDmaLatency(const CyclicOptions& o) {
  DmaLatencyRequest dma;
  if (o.laptop) {
    std::fprintf(stderr, "WARN: not setting cpu_dma_latency to save battery power\n");
    return dma;
  }
  if (o.default_system) {
    std::fprintf(stderr, "WARN: not setting cpu_dma_latency from cyclictest\n");
    return dma;
  }
  struct stat st {};
  if (stat("/dev/cpu_dma_latency", &st) != 0) {
    std::fprintf(stderr, "WARN: stat /dev/cpu_dma_latency failed: %s\n", std::strerror(errno));
    return dma;
  }
  const std::int32_t value = o.latency_us;
  if (const Status s = dma.Open(value); !s.ok()) {
    // cyclictest's two messages: a WARN: when the device cannot be opened, "# error" when the
    // value cannot be written.
    if (dma.failure() == DmaLatencyRequest::Failure::kOpen) {
      std::fprintf(stderr, "WARN: open /dev/cpu_dma_latency: %s\n", std::strerror(s.sys_errno()));
    } else {
      std::fprintf(stderr, "# error setting cpu_dma_latency to %d!: %s\n", value,
                   std::strerror(s.sys_errno()));
    }
    return dma;
  }
  const std::string line = FormatDmaLatencyLine(value);
  std::fwrite(line.data(), 1, line.size(), stdout);
  return dma;
}

namespace {

// cyclictest -R: compares clock_getres with the smallest step seen over ~1 ms of clock_gettime.
void CheckClockResolution(const CyclicOptions& o) {
  const clockid_t clock = ToClockId(o.clock);
  std::uint64_t reported = UINT64_MAX;
  timespec res{};
  if (clock_getres(clock, &res) != 0) {
    std::fprintf(stderr, "WARN: clock_getres failed");
  } else {
    reported = static_cast<std::uint64_t>(res.tv_sec) * 1'000'000'000u +
               static_cast<std::uint64_t>(res.tv_nsec);
  }
  int times = 1000;
  const TimePoint first = Now(o.clock);
  TimePoint last = first;
  for (int k = 0; k < times; ++k) last = Now(o.clock);
  const std::int64_t total = (last - first).count();
  if (total > 0) {
    const std::int64_t per_call = std::max<std::int64_t>(total / times, 1);
    times =
        static_cast<int>(std::clamp<std::int64_t>(1'000'000'000 / per_call / 1000, 1000, 100000));
  } else {
    times = 100000;
  }
  std::vector<TimePoint> stamps(static_cast<std::size_t>(times));
  for (TimePoint& t : stamps) t = Now(o.clock);
  std::uint64_t min_step = UINT64_MAX;
  for (std::size_t k = 1; k < stamps.size(); ++k) {
    const std::int64_t d = (stamps[k] - stamps[k - 1]).count();
    if (d > 0 && static_cast<std::uint64_t>(d) < min_step) min_step = static_cast<std::uint64_t>(d);
  }
  if (o.verbose || (min_step != UINT64_MAX && min_step > reported)) {
    std::fprintf(stderr, "WARN: reported clock resolution: %" PRIu64 " nsec\n", reported);
    std::fprintf(stderr, "WARN: measured clock resolution approximately: %" PRIu64 " nsec\n",
                 min_step);
  }
}

}  // namespace

void WarnAboutClock(const CyclicOptions& o) {
  timespec res{};
  if (clock_getres(ToClockId(o.clock), &res) == 0 && (res.tv_sec != 0 || res.tv_nsec != 1)) {
    std::fprintf(stderr, "WARN: High resolution timers not available\n");
  }
  if (o.resolution) CheckClockResolution(o);
}

Status CheckSmi() {
  std::string vendor;
  ForEachLine("/proc/cpuinfo", [&](std::string_view line) {
    if (line.substr(0, 9) != "vendor_id") return true;
    const std::size_t colon = line.find(": ");
    if (colon != std::string_view::npos) vendor = line.substr(colon + 2);
    return false;
  });
  if (vendor != "GenuineIntel") {
    return Status(StatusCode::kFailedPrecondition,
                  "FATAL: SMI counter is not supported on this processor (" +
                      (vendor.empty() ? std::string("unknown vendor") : vendor) +
                      "; the SMI counter MSR 0x34 exists on Intel CPUs only) — drop --smi");
  }
  return Status(StatusCode::kFailedPrecondition,
                "--smi: reading the SMI counter (MSR 0x34 via /dev/cpu/N/msr) is not supported "
                "by rtloop-cyclic yet — drop --smi, or use cyclictest --smi for SMI counts");
}

bool SetThreadAffinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

int CpuNumaNode(int cpu) {
  if (cpu < 0) return -1;
  const std::string path = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return -1;
  int node = -1;
  while (const dirent* e = readdir(dir)) {
    int n = -1;
    char rest = 0;
    if (std::sscanf(e->d_name, "node%d%c", &n, &rest) == 1 && n >= 0) {
      node = n;
      break;
    }
  }
  closedir(dir);
  return node;
}

std::string ReadLoadavg() { return ReadFirstLine("/proc/loadavg"); }

void TraceMarker::Open() {
  for (const char* dir : {"/sys/kernel/debug/tracing/", "/sys/kernel/tracing/"}) {
    const std::string d = dir;
    const int fd = open((d + "trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    marker_fd_ = fd;
    tracing_on_fd_ = open((d + "tracing_on").c_str(), O_WRONLY | O_CLOEXEC);
    std::fprintf(stderr, "INFO: debugfs mountpoint: %s\n", dir);
    return;
  }
  std::fprintf(stderr,
               "WARN: --tracemark: cannot open trace_marker under /sys/kernel/debug/tracing or "
               "/sys/kernel/tracing (mount tracefs, run as root); no trace mark will be "
               "written\n");
}

void TraceMarker::Mark(std::int64_t value, std::int64_t limit) const {
  if (marker_fd_ >= 0) {
    char buf[128];
    const int n = std::snprintf(buf, sizeof(buf), "hit latency threshold (%lld > %lld)",
                                static_cast<long long>(value), static_cast<long long>(limit));
    if (n > 0 && write(marker_fd_, buf, static_cast<std::size_t>(n)) < 0) {
      // Best effort, as cyclictest.
    }
  }
  if (tracing_on_fd_ >= 0 && write(tracing_on_fd_, "0", 1) < 0) {
    // Best effort.
  }
}

TraceMarker::~TraceMarker() {
  if (marker_fd_ >= 0) close(marker_fd_);
  if (tracing_on_fd_ >= 0) close(tracing_on_fd_);
}

}  // namespace rtloop::cyclic
