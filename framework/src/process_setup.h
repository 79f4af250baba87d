// Internal: the process-wide settings an Executor applies at Create() (memory locking, heap
// trimming off, /dev/cpu_dma_latency, the calling thread's move to housekeeping CPUs, the wake
// signal's handler), held as one RAII object. Not installed.
//
//   Result<std::unique_ptr<ProcessSetup>> setup = ProcessSetup::Apply(config, allowed_cpus);
//   if (!setup.ok()) return setup.status();     // names the limit or privilege to fix
//   (*setup)->memory_locked();                   // stacks are prefaulted when true
//
// Destruction closes /dev/cpu_dma_latency (dropping the request). mlockall() and the malloc
// settings stay in force: they are process-wide and another executor may rely on them.
//
// Threading: Apply() and the destructor on the controlling thread. Not RT-safe: system calls.
#pragma once

#include <memory>
#include <vector>

#include "rtloop/framework/executor.h"
#include "rtloop/framework/rt_setup.h"
#include "rtloop/framework/status.h"
#include "sched_util.h"

namespace rtloop::internal {

class ProcessSetup {
 public:
  // Checks and applies `config`'s process-wide settings (housekeeping CPUs checked against
  // `cpus`). Errors name the fix.
  static Result<std::unique_ptr<ProcessSetup>> Apply(const ExecutorConfig& config,
                                                     const CpuFacts& cpus);
  ~ProcessSetup();
  ProcessSetup(const ProcessSetup&) = delete;
  ProcessSetup& operator=(const ProcessSetup&) = delete;

  bool memory_locked() const noexcept { return memory_locked_; }

 private:
  ProcessSetup() = default;
  Status LockMemory(const ExecutorConfig& config);
  Status HoldDmaLatency(const ExecutorConfig& config);

  bool memory_locked_ = false;
  DmaLatencyRequest dma_;  // held until destruction
};

// The machine's CPUs. `allowed` is this thread's affinity, unless an earlier executor moved this
// very thread to housekeeping CPUs equal to it: then the affinity it had before, so that a later
// executor created on the same thread still sees the process's CPUs.
CpuFacts ReadCpuFacts();

}  // namespace rtloop::internal
