// Internal: what a task's own thread does before its first release (name, signal mask, affinity,
// scheduling with the permitted fallback, stack prefault), and the fallback decision itself. Not
// installed.
//
//   EffectiveScheduling sched = {config.policy, config.priority, config.nice};
//   Status s = SetUpTaskThread(config, {.default_cpus = &allowed, ...}, &sched);  // on the thread
//
// Threading: SetUpTaskThread() runs on the task's thread and changes only that thread; the
// EffectiveScheduling it writes is read by others after Start()'s handshake. Not RT-safe: system
// calls, strings, stderr.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"

namespace rtloop::internal {

// The scheduling a task really runs with (after a permitted fallback to SCHED_OTHER).
struct EffectiveScheduling {
  SchedPolicy policy = SchedPolicy::kFifo;
  int priority = 0;
  int nice = 0;
  bool fell_back = false;
};

// Records a fallback to SCHED_OTHER in `sched` and says so loudly on stderr, with `why`.
void FallBackToOther(const std::string& task_name, const Status& why, EffectiveScheduling* sched);

struct TaskThreadOptions {
  const std::vector<int>* default_cpus = nullptr;  // affinity of an unpinned task; may be empty
  bool allow_non_rt_fallback = false;              // ExecutorConfig::allow_non_rt_fallback
  bool prefault_stack = false;                     // memory is locked: touch the stack now
};

// On the task's thread: sets its name (first 15 bytes of config.name), its signal mask (the wake
// signal open, or, in posix-timer mode, wake and timer signals blocked for sigwait; SIGINT/SIGTERM
// stay blocked as inherited from Start()), its affinity, then its scheduling per `sched` (which a
// permitted EPERM turns into SCHED_OTHER), and prefaults its stack. Errors name the task, the
// errno and the fix.
Status SetUpTaskThread(const TaskConfig& config, const TaskThreadOptions& options,
                       EffectiveScheduling* sched);

inline int Gettid() noexcept { return static_cast<int>(syscall(SYS_gettid)); }

}  // namespace rtloop::internal
