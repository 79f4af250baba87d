#include "process_setup.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>

#include "memory_lock.h"
#include "release_waiter.h"
#include "rtloop/framework/system_info.h"
#include "sched_util.h"
#include "task_thread.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RTLOOP_UNDER_SANITIZER 1
#else
#define RTLOOP_UNDER_SANITIZER 0
#endif

namespace rtloop::internal {
namespace {

// What an executor moved a thread to housekeeping CPUs from (see OriginalAffinity).
struct HousekeepingMove {
  std::mutex mu;
  int tid = 0;
  std::vector<int> housekeeping;
  std::vector<int> original;
};
HousekeepingMove& LastHousekeepingMove() {
  static HousekeepingMove move;
  return move;
}

void RememberHousekeepingMove(const std::vector<int>& original,
                              const std::vector<int>& housekeeping) {
  HousekeepingMove& m = LastHousekeepingMove();
  std::lock_guard<std::mutex> lock(m.mu);
  m.tid = Gettid();
  m.original = original;
  m.housekeeping = housekeeping;
  std::sort(m.housekeeping.begin(), m.housekeeping.end());
  m.housekeeping.erase(std::unique(m.housekeeping.begin(), m.housekeeping.end()),
                       m.housekeeping.end());
}

Status Validate(const ExecutorConfig& config) {
  if (config.start_delay.count() < 0) {
    return InvalidArgumentError("ExecutorConfig::start_delay is negative (" +
                                std::to_string(config.start_delay.count()) +
                                " ns) — use 0 or more");
  }
  if (config.align_start_to.count() < 0) {
    return InvalidArgumentError("ExecutorConfig::align_start_to is negative (" +
                                std::to_string(config.align_start_to.count()) +
                                " ns) — use 0 (no alignment) or a positive duration");
  }
  if (config.cpu_dma_latency_us.has_value() && *config.cpu_dma_latency_us < 0) {
    return InvalidArgumentError("ExecutorConfig::cpu_dma_latency_us is negative (" +
                                std::to_string(*config.cpu_dma_latency_us) +
                                ") — use 0 or more µs, or leave it unset");
  }
  return Status::Ok();
}

Status MoveToHousekeeping(const std::vector<int>& housekeeping, const std::vector<int>& allowed) {
  if (housekeeping.empty()) return Status::Ok();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : housekeeping) CPU_SET(static_cast<std::size_t>(c), &set);
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
    return ErrnoError(
        rc, "cannot move the calling thread to housekeeping CPUs " + FormatCpuList(housekeeping),
        "check ExecutorConfig::housekeeping_cpus against taskset/cpuset");
  }
  RememberHousekeepingMove(allowed, housekeeping);
  return Status::Ok();
}

}  // namespace

CpuFacts ReadCpuFacts() {
  const SystemInfo info = ReadSystemInfo();
  CpuFacts facts;
  facts.online = info.online_cpus;
  facts.present = PresentCpus();
  facts.isolated = info.isolated_cpus;
  facts.allowed = info.affinity_cpus;
  HousekeepingMove& m = LastHousekeepingMove();
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.tid == Gettid() && m.housekeeping == facts.allowed) facts.allowed = m.original;
  return facts;
}

Result<std::unique_ptr<ProcessSetup>> ProcessSetup::Apply(const ExecutorConfig& config,
                                                          const CpuFacts& cpus) {
  RTLOOP_RETURN_IF_ERROR(Validate(config));
  RTLOOP_RETURN_IF_ERROR(ValidateCpus(config.housekeeping_cpus, cpus.online, cpus.present,
                                      cpus.allowed, "executor",
                                      "ExecutorConfig::housekeeping_cpus"));
  std::unique_ptr<ProcessSetup> setup(new ProcessSetup());
  RTLOOP_RETURN_IF_ERROR(setup->LockMemory(config));
  RTLOOP_RETURN_IF_ERROR(setup->HoldDmaLatency(config));
  RTLOOP_RETURN_IF_ERROR(MoveToHousekeeping(config.housekeeping_cpus, cpus.allowed));
  InstallWakeHandler();
  return setup;
}

ProcessSetup::~ProcessSetup() = default;

Status ProcessSetup::LockMemory(const ExecutorConfig& config) {
  if (!config.lock_memory) return Status::Ok();
  if (RTLOOP_UNDER_SANITIZER) {
    std::fprintf(stderr,
                 "rtloop: note: lock_memory ignored in a sanitizer build (mlockall would pin the "
                 "sanitizer's shadow memory)\n");
    return Status::Ok();
  }
  // kRealtime: pages are locked as they are touched; Executor::Start() makes the RT set resident.
  const bool on_fault = config.lock_scope == MemoryLockScope::kRealtime;
  int rc = mlockall(MCL_CURRENT | MCL_FUTURE | (on_fault ? MCL_ONFAULT : 0));
  if (rc != 0 && on_fault && errno == EINVAL) rc = mlockall(MCL_CURRENT | MCL_FUTURE);  // < 4.4
  if (rc == 0) {
    memory_locked_ = true;
    // Keep freed memory in the process: no trimming, no mmap'd chunks that come and go, and one
    // arena (each further one reserves 64 MiB that the memlock limit counts).
    mallopt(M_TRIM_THRESHOLD, -1);
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_ARENA_MAX, 1);
    return Status::Ok();
  }
  const int err = errno;
  Status s = ErrnoError(err,
                        on_fault ? "mlockall(MCL_CURRENT|MCL_FUTURE|MCL_ONFAULT) failed"
                                 : "mlockall(MCL_CURRENT|MCL_FUTURE) failed",
                        "the memlock limit is " + MemlockLimitText() + " (ulimit -l); " +
                            MemlockFix() + ", or set ExecutorConfig::lock_memory = false");
  if (!config.allow_non_rt_fallback) return s;
  std::fprintf(stderr,
               "rtloop: WARNING: %s\nrtloop: WARNING: continuing WITHOUT locked memory because "
               "allow_non_rt_fallback is set: page faults may add latency.\n",
               s.message().c_str());
  return Status::Ok();
}

Status ProcessSetup::HoldDmaLatency(const ExecutorConfig& config) {
  if (!config.cpu_dma_latency_us.has_value()) return Status::Ok();
  Status opened = dma_.Open(*config.cpu_dma_latency_us);  // held: destruction drops it
  if (opened.ok()) return opened;
  Status s(opened.code(),
           opened.message() + " — run as root, or leave ExecutorConfig::cpu_dma_latency_us unset",
           opened.sys_errno());
  if (dma_.failure() == DmaLatencyRequest::Failure::kOpen && geteuid() != 0) {
    std::fprintf(stderr, "rtloop: WARNING: %s (continuing)\n", s.message().c_str());
    return Status::Ok();
  }
  return s;
}

}  // namespace rtloop::internal
