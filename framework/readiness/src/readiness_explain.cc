// What outlier explanation can use on this machine (telemetry/explain/README.md): tracefs, where
// it is mounted and whether this user may create a trace instance in it, the trace events the
// explanation reads, and the kernel's timerlat/osnoise tracers. Without them --explain still
// works, from /proc counters: each finding says what is lost and the fix.
#include <unistd.h>

#include <sstream>

#include "readiness_internal.h"

namespace rtloop::readiness_internal {
namespace {

constexpr auto kOk = ReadinessLevel::kOk;
constexpr auto kWarn = ReadinessLevel::kWarn;
constexpr int kCapSysAdmin = 21;

// Where tracefs is mounted (proc/mounts), /sys/kernel/tracing first; empty when it is not.
std::string TracefsMount(const FsTree& fs) {
  const std::optional<std::string> mounts = fs.Read("/proc/mounts");
  if (!mounts) return {};
  std::istringstream in(*mounts);
  std::string line;
  std::string found;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, point, type;
    if (!(fields >> device >> point >> type) || type != "tracefs") continue;
    if (point == "/sys/kernel/tracing") return point;
    if (found.empty()) found = point;
  }
  return found;
}

bool MayAdminister(const Credentials& c) { return c.euid == 0 || HasCap(c, kCapSysAdmin); }

constexpr const char* kCountersInstead = "--explain falls back to /proc counters (coarser)";

}  // namespace

ReadinessFinding CheckTracefs(const FsTree& fs, const Credentials& c, bool probe) {
  const std::string mount = TracefsMount(fs);
  if (mount.empty()) {
    const std::optional<std::string> filesystems = fs.Read("/proc/filesystems");
    if (filesystems && filesystems->find("\ttracefs") == std::string::npos) {
      return Make("tracefs", kWarn, std::string("the kernel has no tracefs: ") + kCountersInstead,
                  "a kernel built with CONFIG_TRACING (Debian's kernels are)");
    }
    if (MayAdminister(c)) {
      return Make("tracefs", kOk,
                  "tracefs is not mounted; --explain mounts it at /sys/kernel/tracing (as rtla "
                  "does)");
    }
    return Make(
        "tracefs", kWarn,
        std::string("tracefs is not mounted and this user may not mount it: ") + kCountersInstead,
        "mount -t tracefs nodev /sys/kernel/tracing, and run as root");
  }
  const bool writable =
      probe ? access((mount + "/instances").c_str(), W_OK) == 0 : MayAdminister(c);
  if (writable) {
    return Make("tracefs", kOk,
                "tracefs at " + mount + ", writable: --explain uses the kernel's trace events");
  }
  return Make("tracefs", kWarn,
              "tracefs at " + mount + " is not writable by this user: " + kCountersInstead,
              "run as root (a trace instance of rtloop's own is made in " + mount + "/instances)");
}

ReadinessFinding CheckTraceEvents(const FsTree& fs) {
  const std::string mount = TracefsMount(fs);
  if (mount.empty()) {
    return Make("trace_events", kOk, "not checked: tracefs is not mounted (the tracefs finding)");
  }
  std::string missing;
  for (const char* event : {"sched/sched_switch", "sched/sched_waking", "irq/irq_handler_entry",
                            "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
                            "timer/hrtimer_expire_entry", "timer/hrtimer_expire_exit"}) {
    if (fs.Exists(mount + "/events/" + event)) continue;
    missing += (missing.empty() ? "" : ", ") + std::string(event);
  }
  if (missing.empty()) {
    return Make("trace_events", kOk,
                "the scheduler, IRQ, softirq and hrtimer events --explain reads are there");
  }
  return Make("trace_events", kWarn,
              "missing trace events " + missing + ": --explain cannot see what they show",
              "a kernel with CONFIG_FTRACE and its tracepoints (Debian's kernels have them)");
}

ReadinessFinding CheckTimerlat(const FsTree& fs) {
  const std::string mount = TracefsMount(fs);
  if (mount.empty()) {
    return Make("timerlat", kOk, "not checked: tracefs is not mounted (the tracefs finding)");
  }
  const std::string tracers = fs.ReadLine(mount + "/available_tracers").value_or("");
  std::string missing;
  for (const char* tracer : {"timerlat", "osnoise"}) {
    if ((" " + tracers + " ").find(std::string(" ") + tracer + " ") != std::string::npos) continue;
    missing += (missing.empty() ? "" : " or ") + std::string(tracer);
  }
  if (missing.empty()) {
    // Linux >= 6.5: a user-space thread can wait on the tracer's timer (osnoise/per_cpu/cpuN/
    // timerlat_fd), which is what WaitMode::kTimerlat and `rtla timerlat -U` use.
    if (fs.Exists(mount + "/osnoise/per_cpu/cpu0/timerlat_fd")) {
      return Make("timerlat", kOk,
                  "the timerlat and osnoise tracers are there, with timerlat's user-space "
                  "interface: rtla timerlat -U can analyse an rtloop task in the timerlat wait "
                  "mode (rtloop-cyclic --timerlat)");
    }
    return Make("timerlat", kOk,
                "the timerlat and osnoise tracers are there (rtla timerlat -a explains the "
                "kernel's own timerlat threads); no timerlat_fd, so no timerlat wait mode "
                "(it needs Linux >= 6.5)");
  }
  return Make("timerlat", kWarn, "no " + missing + " tracer: rtla timerlat/osnoise cannot run here",
              "a kernel with CONFIG_TIMERLAT_TRACER and CONFIG_OSNOISE_TRACER (Debian's "
              "linux-image-rt-* has them)");
}

}  // namespace rtloop::readiness_internal
