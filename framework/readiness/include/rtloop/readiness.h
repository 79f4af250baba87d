// Readiness: judges whether this machine is set up for real-time work and for the documented
// latency benchmark, and says how to fix each finding (the checks of `rtloop-bench doctor`, also
// served in the telemetry API's GetSystemInfo).
//
//   rtloop::ReadinessReport report = rtloop::CheckReadiness();
//   for (const rtloop::ReadinessFinding& f : report.findings)
//     std::printf("%-4s %s: %s%s%s\n", rtloop::ReadinessLevelName(f.level), f.id.c_str(),
//                 f.summary.c_str(), f.fix.empty() ? "" : " -> ", f.fix.c_str());
//   return report.Count(rtloop::ReadinessLevel::kFail) == 0 ? 0 : 1;
//
// Levels: kFail when real-time work cannot work as intended (SCHED_FIFO refused, an RT group
// budget of 0, which makes latency tools measure nothing, no RT runtime at all, memory that
// cannot be locked); kWarn for what makes latencies worse or less predictable (no PREEMPT_RT, no
// isolated CPUs, RT CPUs without isolcpus=/nohz_full=/rcu_nocbs=, IRQs on
// isolated CPUs, a power-saving governor, deep idle states, SMT, swap,
// irqbalance, the documented printk/overcommit settings) and for what outlier explanation
// cannot use (tracefs not usable by this user, trace events or the timerlat/osnoise tracers
// missing); kOk otherwise. Every non-OK finding
// carries the command or boot parameter that fixes it.
//
// Every fact is read from files (/proc, /sys, /dev), under `ReadinessConfig::root`, so tests run
// the checks on fake trees. Files read: proc/sys/kernel/{version,printk,sched_rt_runtime_us,
// sched_rt_period_us,timer_migration}, proc/sys/vm/overcommit_memory, proc/cmdline, proc/swaps,
// proc/self/{status,limits,cgroup}, proc/irq/*/smp_affinity_list, proc/*/comm,
// sys/kernel/realtime, sys/kernel/debug/sched/preempt, sys/devices/system/cpu/{online,isolated,
// nohz_full,smt/control,cpuN/cpufreq/scaling_governor,cpuN/cpuidle/stateK/*},
// sys/fs/cgroup/**/cpu.rt_runtime_us, dev/cpu_dma_latency, proc/{mounts,filesystems} and, in the
// tracefs mount, events/*/* and available_tracers. With `probe` set (the default) three facts
// are also tried on the live system: SCHED_FIFO on the calling thread (set and restored), write
// access to /dev/cpu_dma_latency and to tracefs's instances/; without it they are predicted from
// the capabilities, limits and file modes read above.
//
// Threading: a pure function of the files (plus the probe on the calling thread); any thread,
// concurrently. Not RT-safe: reads files and allocates.
#pragma once

#include <string>
#include <vector>

namespace rtloop {

enum class ReadinessLevel { kOk, kWarn, kFail };

// "OK", "WARN", "FAIL".
const char* ReadinessLevelName(ReadinessLevel level) noexcept;

struct ReadinessFinding {
  std::string id;  // stable key, e.g. "preempt_model", "rt_group_budget"
  ReadinessLevel level = ReadinessLevel::kOk;
  std::string summary;  // what was found, one line
  std::string fix;      // the command or boot parameter that fixes it; empty when OK
};

struct ReadinessConfig {
  // Prefix of every path ("" = this machine; "/tmp/fake" reads /tmp/fake/proc/...).
  std::string root;
  // Try SCHED_FIFO and /dev/cpu_dma_latency on the live system (ignored when root is set).
  bool probe = true;
  // The CPUs the real-time threads run on (`rtloop-bench doctor --cpus`): isolcpus=, nohz_full=
  // and rcu_nocbs= must cover each. Empty: the isolated CPUs (none: the three findings WARN).
  std::vector<int> rt_cpus;
};

struct ReadinessReport {
  std::vector<ReadinessFinding> findings;  // in a fixed order, one per check
  int Count(ReadinessLevel level) const noexcept;
  // The finding with this id, or nullptr.
  const ReadinessFinding* Find(const std::string& id) const noexcept;
};

// Runs every check. Never fails: an unreadable fact is a finding that says so.
ReadinessReport CheckReadiness(const ReadinessConfig& config = {});

}  // namespace rtloop
