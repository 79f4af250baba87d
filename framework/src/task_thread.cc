#include "task_thread.h"

#include <alloca.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "memory_lock.h"
#include "release_waiter.h"
#include "rtloop/framework/system_info.h"
#include "sched_util.h"

namespace rtloop::internal {
namespace {

// Linux's struct sched_attr (glibc 2.36 has no wrapper).
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
};

// Touches `bytes` of this thread's stack so that its pages are present (and locked under
// mlockall) before the first release.
__attribute__((noinline)) void PrefaultStack(std::size_t bytes) {
  auto* p = static_cast<volatile char*>(alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
}

void SetThreadName(const std::string& name) {
  char buf[16] = {};
  std::snprintf(buf, sizeof(buf), "%s", name.c_str());
  pthread_setname_np(pthread_self(), buf);
}

void SetSignalMask(WaitMode mode) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WakeSignal());
  if (mode == WaitMode::kPosixTimer) {
    sigaddset(&set, kTimerSignal);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  } else {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  }
}

Status Pin(const TaskConfig& config, const std::vector<int>& cpus) {
  if (cpus.empty()) return Status::Ok();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
    return ErrnoError(rc, "cannot pin task \"" + config.name + "\" to CPUs " + FormatCpuList(cpus),
                      "check TaskConfig::cpus against the online CPUs and taskset/cpuset");
  }
  return Status::Ok();
}

// The policy change itself; returns 0 or the errno.
int SetScheduling(const TaskConfig& config, const EffectiveScheduling& sched) {
  if (sched.policy == SchedPolicy::kDeadline) {
    SchedAttr attr{};
    attr.size = sizeof(attr);
    attr.sched_policy = static_cast<std::uint32_t>(ToLinuxPolicy(SchedPolicy::kDeadline));
    attr.sched_runtime = static_cast<std::uint64_t>(config.deadline.runtime.count());
    attr.sched_deadline = static_cast<std::uint64_t>(config.deadline.deadline.count());
    attr.sched_period = static_cast<std::uint64_t>(
        (config.deadline.period.count() != 0 ? config.deadline.period : config.period).count());
    return syscall(SYS_sched_setattr, 0, &attr, 0) != 0 ? errno : 0;
  }
  sched_param param{};
  param.sched_priority = sched.priority;
  int rc = pthread_setschedparam(pthread_self(), ToLinuxPolicy(sched.policy), &param);
  if (rc == 0 && !IsRealtimePolicy(sched.policy)) {
    if (sched.nice != 0 &&
        setpriority(PRIO_PROCESS, static_cast<id_t>(Gettid()), sched.nice) != 0) {
      rc = errno;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // 1 ns: no timer coalescing
  }
  return rc;
}

std::string SchedHint(int rc, SchedPolicy policy) {
  if (rc == EPERM || rc == EACCES) return SchedPermissionHint(policy);
  if (rc == EBUSY && policy == SchedPolicy::kDeadline) {
    return "the kernel's deadline admission control refused the bandwidth runtime/period (see "
           "/proc/sys/kernel/sched_rt_runtime_us); lower runtime or raise period";
  }
  if (rc == EINVAL && policy == SchedPolicy::kDeadline) {
    return "the kernel rejected the parameters; need 1024 ns <= runtime <= deadline <= period and "
           "a period within /proc/sys/kernel/sched_deadline_period_{min,max}_us";
  }
  return {};
}

Status ApplyScheduling(const TaskConfig& config, bool allow_fallback, EffectiveScheduling* sched) {
  const int rc = SetScheduling(config, *sched);
  if (rc == 0) return Status::Ok();
  TaskConfig effective = config;
  effective.policy = sched->policy;
  effective.priority = sched->priority;
  effective.nice = sched->nice;
  Status s = ErrnoError(rc, SchedFailureWhat(effective), SchedHint(rc, sched->policy));
  if ((rc == EPERM || rc == EACCES) && allow_fallback && IsRealtimePolicy(sched->policy)) {
    FallBackToOther(config.name, s, sched);
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    return Status::Ok();
  }
  return s;
}

}  // namespace

void FallBackToOther(const std::string& task_name, const Status& why, EffectiveScheduling* sched) {
  sched->policy = SchedPolicy::kOther;
  sched->priority = 0;
  sched->nice = 0;
  sched->fell_back = true;
  std::fprintf(stderr,
               "rtloop: WARNING: %s\n"
               "rtloop: WARNING: running task \"%s\" as SCHED_OTHER (NOT real-time) because "
               "allow_non_rt_fallback is set; its latency figures are not real-time figures.\n",
               why.message().c_str(), task_name.c_str());
}

Status SetUpTaskThread(const TaskConfig& config, const TaskThreadOptions& options,
                       EffectiveScheduling* sched) {
  SetThreadName(config.name);
  SetSignalMask(config.wait_mode);
  // Affinity first: the stack is prefaulted afterwards, on the right CPU.
  static const std::vector<int> kNone;
  const std::vector<int>& defaults =
      options.default_cpus != nullptr ? *options.default_cpus : kNone;
  RTLOOP_RETURN_IF_ERROR(Pin(config, config.cpus.empty() ? defaults : config.cpus));
  RTLOOP_RETURN_IF_ERROR(ApplyScheduling(config, options.allow_non_rt_fallback, sched));
  if (options.prefault_stack) {
    const std::size_t reserve = std::size_t{64} * 1024;
    PrefaultStack(config.stack_size > 2 * reserve ? config.stack_size - reserve
                                                  : config.stack_size / 2);
    RTLOOP_RETURN_IF_ERROR(LockThreadStack());  // the rest too (MCL_ONFAULT locks only touched)
  }
  return Status::Ok();
}

}  // namespace rtloop::internal
