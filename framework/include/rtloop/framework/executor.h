// Executor: runs periodic tasks, each on its own RT thread with its own policy, priority and CPU
// set, sleeping to absolute release times on a grid shared by all tasks.
//
//   rtloop::ExecutorConfig ec;
//   ec.lock_memory = true;
//   rtloop::Result<std::unique_ptr<rtloop::Executor>> ex = rtloop::Executor::Create(ec);
//   if (!ex.ok()) return Fail(ex.status());
//   Blink blink;
//   rtloop::Result<rtloop::TaskId> id = (*ex)->AddTask(blink, task_config);
//   if (!id.ok()) return Fail(id.status());
//   if (rtloop::Status s = (*ex)->RunUntilSignal(); !s.ok()) return Fail(s);
//
// Applications with telemetry use rtloop::Runtime (telemetry/runtime.h), which owns an Executor
// and wires the telemetry hub, collector and gRPC server to it. The executor's parts: process
// set-up (src/process_setup.h), per-thread set-up (src/task_thread.h), one release waiter per
// WaitMode (src/release_waiter.h), the per-cycle bookkeeping (cycle_engine.h); framework/README.md
// describes the lifecycle and the RT rules.
//
// Release grid: Start() takes one start time S = Now() + start_delay (rounded up to a whole
// multiple of `align_start_to` when set); task t's releases are E_k = S + phase_t + k * period_t.
//
// Stop() wakes RT threads that sleep on long periods with SIGRTMIN+3, for which Create() installs
// an empty handler (the interrupted sleep returns EINTR and the thread sees its stop flag). The
// signal is sent only while a thread is in its RT loop, so a system call inside Step() may see
// EINTR during Stop(), but OnStop() never does. WaitMode::kPosixTimer uses SIGALRM on the task's
// own thread, as cyclictest -x does.
//
// Threading: AddTask/Start/RunUntilSignal are for one controlling thread. Stop(), Wait(),
// WaitAny() and AllTasksEnded() may also be called from another thread (e.g. a UI or service
// thread): they are serialised with a Start() in progress, which completes first. None of them may
// be called from a task's own hooks (Stop() and Start() then return FailedPrecondition); none is
// RT-safe (they create and join threads and make system calls). Stats()/State()/TaskCount() may be
// called from any thread at any time and are RT-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"

namespace rtloop {

// What ExecutorConfig::lock_memory makes resident and locked (framework/README.md, "Memory").
enum class MemoryLockScope {
  // Every page an RT thread can touch, before the first release: the RT threads' whole stacks,
  // the heap (rings, histograms, statistics, the application's buffers), the code and data of the
  // executable and of every library except the telemetry servers' own (gRPC, protobuf, abseil,
  // OpenSSL, civetweb...). Everything else is locked once touched (mlockall MCL_ONFAULT), so the
  // servers' threads and libraries cost what they use, not what they map.
  kRealtime,
  // mlockall(MCL_CURRENT|MCL_FUTURE), as cyclictest -m: every mapping resident, the servers'
  // libraries and every thread's whole stack included.
  kAll,
};

struct ExecutorConfig {
  // Lock memory (see lock_scope), no heap trimming and one malloc arena (mallopt M_TRIM_THRESHOLD,
  // M_MMAP_MAX, M_ARENA_MAX: the RT threads never allocate, and each extra arena would reserve
  // 64 MiB that the memlock limit counts), and every RT thread's stack prefaulted and locked.
  bool lock_memory = true;
  MemoryLockScope lock_scope = MemoryLockScope::kRealtime;  // what lock_memory locks
  // Value (µs) written to /dev/cpu_dma_latency and held until the executor is destroyed; nullopt
  // leaves it untouched. A failure to open it is an error only when running as root.
  std::optional<std::int32_t> cpu_dma_latency_us;
  // CPUs for non-RT threads (the caller's thread is moved there at Create(); telemetry and gRPC
  // threads created afterwards inherit it). Empty: leave affinity alone.
  std::vector<int> housekeeping_cpus;
  // Without the privilege for an RT policy: fail (false) or run the task as SCHED_OTHER and say so
  // loudly on stderr and in TaskInfo::fell_back_to_non_rt (true). Also lets Create() continue,
  // with a warning, when mlockall() fails.
  bool allow_non_rt_fallback = false;
  // Time between Start() and the shared start time S: room for threads to set up.
  std::chrono::nanoseconds start_delay{std::chrono::milliseconds(50)};
  // Round S up to a whole multiple of this on the clock (e.g. 1 s for cyclictest --secaligned);
  // 0: no rounding.
  std::chrono::nanoseconds align_start_to{0};
  Clock start_clock = Clock::kMonotonic;  // clock of S; every task must use the same clock
};

class Executor final : public TaskStatsReader {
 public:
  // Validates the config and applies process-wide settings (memory locking, cpu_dma_latency,
  // housekeeping affinity). Errors name the limit or privilege to fix.
  static Result<std::unique_ptr<Executor>> Create(const ExecutorConfig& config);

  ~Executor();  // stops and joins every task
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Validates `config` (period, priority range, CPUs that exist and are online, deadline params,
  // privileges) and registers `task`, which must outlive the executor. Before Start() only.
  Result<TaskId> AddTask(PeriodicTask& task, const TaskConfig& config);

  // Creates every RT thread and returns once each has applied its scheduling and run OnStart().
  // A task whose OnStart() failed or threw makes Start() fail: the tasks already started are
  // stopped, and the Status names the task and the reason.
  Status Start();
  // Asks every task to stop after its current cycle (wakes sleeping threads) and joins them.
  // FailedPrecondition when not started or already stopped.
  Status Stop();
  // Blocks until every task has stopped by itself (kStop, max_cycles, fault) or Stop() was called.
  void Wait();
  // Blocks until any task has stopped (or the timeout passes); true if one has.
  bool WaitAny(std::chrono::nanoseconds timeout);
  // True once started and every task's thread has ended (by itself or through Stop()).
  bool AllTasksEnded() const;
  // Start() (unless already started), then wait for SIGINT/SIGTERM, for `duration` (0: no limit)
  // or for every task to end, then Stop(). The signals are blocked in every executor thread and
  // taken synchronously on this thread; other threads of the application need not block them
  // (stop_signals.h says what happens and what blocking them saves). The caller's signal mask and
  // dispositions are restored on return. InvalidArgument for a negative duration.
  Status RunUntilSignal(std::chrono::nanoseconds duration = std::chrono::nanoseconds(0));

  // Any thread, RT-safe.
  std::size_t TaskCount() const noexcept;
  TaskStatsSnapshot Stats(TaskId id) const noexcept override;  // TaskStatsReader
  TaskState State(TaskId id) const noexcept;
  // Statistics reset of task `id` (TaskStats::RequestReset: min/max restart at its next cycle;
  // every count, sum and average is kept). False for an unknown id. Any thread, RT-safe: the RT
  // thread is never waited for.
  bool ResetStats(TaskId id) noexcept;
  // The task's configuration and effective scheduling: as its thread applied it once past
  // kStarting (a fallback to SCHED_OTHER may be decided there during Start()), before that as
  // AddTask() settled it. Any thread. Not RT-safe (copies strings).
  TaskInfo Info(TaskId id) const;
  // The shared start time S; meaningful once Start() succeeded.
  TimePoint start_time() const noexcept;

 private:
  class Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtloop
