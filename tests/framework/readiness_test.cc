#include "rtloop/readiness.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace {

namespace fs = std::filesystem;

// A fake /proc + /sys + /dev tree in a temporary directory, removed at the end of the test.
class FakeTree {
 public:
  FakeTree() {
    static int n = 0;
    root_ = fs::path(::testing::TempDir()) /
            ("readiness_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root_);
    fs::create_directories(root_);
    // A plain 2-CPU non-RT machine with nothing special; tests change what they need.
    Write("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.0\n");
    Write("/sys/devices/system/cpu/online", "0-1\n");
    Write("/sys/devices/system/cpu/isolated", "\n");
    Write("/proc/cmdline", "root=/dev/sda1 quiet\n");
    Write("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
    Write("/proc/sys/kernel/sched_rt_period_us", "1000000\n");
    Write("/proc/sys/kernel/printk", "1\t4\t1\t7\n");
    Write("/proc/sys/vm/overcommit_memory", "1\n");
    Write("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
    Write("/proc/self/cgroup", "0::/\n");
    Write("/proc/self/status", "Name:\tx\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n");
    Write("/proc/self/limits",
          "Limit                     Soft Limit           Hard Limit           Units\n"
          "Max locked memory         unlimited            unlimited            bytes\n"
          "Max realtime priority     0                    0\n");
    Write("/dev/cpu_dma_latency", "");
    // 30 MiB of code mapped, 4 GiB available: what a run locks is no concern.
    Write("/proc/self/maps",
          "55d000000000-55d001e00000 r-xp 00000000 08:01 1 /usr/lib/librtloop-app.so\n"
          "55d001e00000-55d001f00000 rw-p 00000000 00:00 0 [heap]\n"
          "7f0000000000-7f0000040000 rw-p 00000000 00:00 0\n");
    Write("/proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 4194304 kB\n");
  }
  ~FakeTree() { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& content) {
    const fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  void Remove(const std::string& path) { fs::remove(root_ / path.substr(1)); }
  std::string root() const { return root_.string(); }
  ReadinessReport Check(std::vector<int> rt_cpus = {}) const {
    ReadinessConfig c;
    c.root = root();
    c.rt_cpus = std::move(rt_cpus);
    return CheckReadiness(c);
  }

 private:
  fs::path root_;
};

const ReadinessFinding& Get(const ReadinessReport& r, const std::string& id) {
  const ReadinessFinding* f = r.Find(id);
  if (f == nullptr) {
    static const ReadinessFinding kMissing{"missing", ReadinessLevel::kFail, "no finding", ""};
    ADD_FAILURE() << "no finding " << id;
    return kMissing;
  }
  return *f;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void ExpectWellFormed(const ReadinessReport& r) {
  std::set<std::string> ids;
  for (const ReadinessFinding& f : r.findings) {
    EXPECT_TRUE(ids.insert(f.id).second) << "repeated id " << f.id;
    EXPECT_FALSE(f.summary.empty()) << f.id;
    if (f.level == ReadinessLevel::kOk) {
      EXPECT_TRUE(f.fix.empty()) << f.id;
    } else {
      EXPECT_FALSE(f.fix.empty()) << f.id << " is " << ReadinessLevelName(f.level)
                                  << " without fix";
    }
  }
  EXPECT_EQ(r.findings.size(), 24u);
}

TEST(Readiness, OnThisMachineEveryCheckReportsAndNonOkFindingsSayHowToFix) {
  const ReadinessReport r = CheckReadiness();
  ExpectWellFormed(r);
  const SystemInfo info = ReadSystemInfo();
  EXPECT_EQ(Get(r, "preempt_model").level == ReadinessLevel::kOk,
            info.preempt_model == PreemptModel::kRt);
  EXPECT_EQ(Get(r, "isolcpus").level == ReadinessLevel::kOk, !info.isolated_cpus.empty());
  // We run as root (or skip): the live probe must agree with the privilege we have.
  if (geteuid() == 0) {
    EXPECT_EQ(Get(r, "sched_fifo").level, ReadinessLevel::kOk) << Get(r, "sched_fifo").summary;
  }
}

TEST(Readiness, AnEmptyTreeGivesFindingsNotACrash) {
  FakeTree t;
  fs::remove_all(t.root());
  fs::create_directories(t.root());
  const ReadinessReport r = t.Check();
  ExpectWellFormed(r);
}

TEST(Readiness, RtKernelTreeIsOk) {
  FakeTree t;
  t.Write("/proc/sys/kernel/version", "#1 SMP PREEMPT_RT Debian 6.1.0-rt\n");
  t.Write("/sys/kernel/realtime", "1\n");
  const ReadinessReport r = t.Check();
  ExpectWellFormed(r);
  EXPECT_EQ(Get(r, "preempt_model").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "sys_kernel_realtime").level, ReadinessLevel::kOk);
  EXPECT_EQ(r.Count(ReadinessLevel::kFail), 0);
}

TEST(Readiness, NonRtKernelWarnsAndNamesTheDynamicMode) {
  FakeTree t;
  t.Write("/sys/kernel/debug/sched/preempt", "none (voluntary) full lazy\n");
  ReadinessReport r = t.Check();
  EXPECT_EQ(Get(r, "preempt_model").level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(Get(r, "preempt_model").summary, "voluntary"));
  EXPECT_TRUE(Has(Get(r, "preempt_model").fix, "preempt=full"));
  EXPECT_TRUE(Has(Get(r, "sys_kernel_realtime").summary, "absent"));
  t.Write("/sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
  r = t.Check();
  EXPECT_TRUE(Has(Get(r, "preempt_model").summary, "mode full"));
  EXPECT_TRUE(Has(Get(r, "preempt_model").fix, "linux-image-rt"));
}

TEST(Readiness, IsolatedCpuTreeChecksTickRcuAndIrqs) {
  FakeTree t;
  t.Write("/proc/cmdline", "quiet isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1\n");
  t.Write("/sys/devices/system/cpu/isolated", "1\n");
  t.Write("/sys/devices/system/cpu/nohz_full", "1\n");
  t.Write("/proc/irq/24/smp_affinity_list", "0-1\n");
  t.Write("/proc/irq/25/smp_affinity_list", "0\n");
  ReadinessReport r = t.Check();
  for (const char* id : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
    EXPECT_EQ(Get(r, id).level, ReadinessLevel::kOk) << Get(r, id).summary;
  }
  const ReadinessFinding& irq = Get(r, "irq_affinity");
  EXPECT_EQ(irq.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(irq.summary, "(24)")) << irq.summary;
  EXPECT_TRUE(Has(irq.fix, "echo 0 > /proc/irq/N/smp_affinity_list")) << irq.fix;

  t.Write("/proc/cmdline", "quiet isolcpus=1\n");
  t.Remove("/sys/devices/system/cpu/nohz_full");
  t.Write("/proc/irq/24/smp_affinity_list", "0\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "isolcpus").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "nohz_full").level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(Get(r, "nohz_full").fix, "nohz_full=1 ")) << Get(r, "nohz_full").fix;
  EXPECT_EQ(Get(r, "rcu_nocbs").level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(Get(r, "rcu_nocbs").fix, "rcu_nocbs=1 ")) << Get(r, "rcu_nocbs").fix;
  EXPECT_EQ(Get(r, "irq_affinity").level, ReadinessLevel::kOk);
}

TEST(Readiness, NoIsolatedCpusWarnsWithTheBootParameters) {
  FakeTree t;
  const ReadinessReport r = t.Check();
  for (const char* id : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
    const ReadinessFinding& f = Get(r, id);
    EXPECT_EQ(f.level, ReadinessLevel::kWarn) << id;
    EXPECT_TRUE(Has(f.fix, std::string(id) + "=N")) << f.fix;
    EXPECT_TRUE(Has(f.fix, "extlinux.conf")) << f.fix;
  }
}

// A board set up as the vendors' guides say (CPUs 2-3 of 4 for the RT threads), judged for the
// CPUs the user measures on: each parameter is its own finding, its fix the parameter with the
// CPUs, in U-Boot's bootargs or extlinux.conf's APPEND line.
TEST(Readiness, EachIsolationBootParameterIsCheckedForTheCpusMeasuredOn) {
  FakeTree t;
  t.Write("/sys/devices/system/cpu/online", "0-3\n");
  t.Write("/proc/cmdline", "console=ttyS2 isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3\n");
  t.Write("/sys/devices/system/cpu/isolated", "2-3\n");
  t.Write("/sys/devices/system/cpu/nohz_full", "2-3\n");
  for (const std::vector<int>& cpus : {std::vector<int>{}, {3}, {2, 3}}) {
    const ReadinessReport r = t.Check(cpus);
    ExpectWellFormed(r);
    for (const char* id : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
      EXPECT_EQ(Get(r, id).level, ReadinessLevel::kOk) << id << ": " << Get(r, id).summary;
    }
  }
  // The user measures on CPU 1 too: not covered by any of the three.
  const ReadinessReport r = t.Check({1, 2, 3});
  for (const char* id : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
    const ReadinessFinding& f = Get(r, id);
    EXPECT_EQ(f.level, ReadinessLevel::kWarn) << id;
    EXPECT_TRUE(Has(f.summary, "CPU 1 not covered")) << f.summary;
    EXPECT_TRUE(Has(f.fix, std::string(id) + "=1-3 ")) << f.fix;
    EXPECT_TRUE(Has(f.fix, "setenv bootargs")) << f.fix;
    EXPECT_TRUE(Has(f.fix, "APPEND line of /boot/extlinux/extlinux.conf")) << f.fix;
  }
}

TEST(Readiness, EachBootParameterIsJudgedOnItsOwn) {
  FakeTree t;
  t.Write("/sys/devices/system/cpu/online", "0-3\n");
  t.Write("/sys/devices/system/cpu/isolated", "3\n");
  // Only isolcpus=: the tick and RCU still run on CPU 3.
  t.Write("/proc/cmdline", "isolcpus=managed_irq,domain,3\n");
  ReadinessReport r = t.Check();
  EXPECT_EQ(Get(r, "isolcpus").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "nohz_full").level, ReadinessLevel::kWarn);
  EXPECT_EQ(Get(r, "rcu_nocbs").level, ReadinessLevel::kWarn);
  // rcu_nocbs= alone.
  t.Write("/proc/cmdline", "isolcpus=3 rcu_nocbs=3\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "nohz_full").level, ReadinessLevel::kWarn);
  EXPECT_EQ(Get(r, "rcu_nocbs").level, ReadinessLevel::kOk) << Get(r, "rcu_nocbs").summary;
  // nohz_full= asked but not applied: a kernel without CONFIG_NO_HZ_FULL (no sysfs file).
  t.Write("/proc/cmdline", "isolcpus=3 nohz_full=3\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "nohz_full").level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(Get(r, "nohz_full").summary, "CONFIG_NO_HZ_FULL")) << Get(r, "nohz_full").summary;
  EXPECT_EQ(Get(r, "rcu_nocbs").level, ReadinessLevel::kWarn);
  // nohz_full= applied implies rcu_nocbs= for its CPUs, as in the kernel.
  t.Write("/sys/devices/system/cpu/nohz_full", "3\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "nohz_full").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "rcu_nocbs").level, ReadinessLevel::kOk);
  EXPECT_TRUE(Has(Get(r, "rcu_nocbs").summary, "implied by nohz_full="))
      << Get(r, "rcu_nocbs").summary;
  // "all" covers every online CPU.
  t.Write("/sys/devices/system/cpu/nohz_full", "(null)\n");
  t.Write("/proc/cmdline", "isolcpus=3 rcu_nocbs=all\n");
  EXPECT_EQ(Get(t.Check({1, 3}), "rcu_nocbs").level, ReadinessLevel::kOk);
}

TEST(Readiness, RtGroupBudgetOfZeroFailsNamingTheCgroup) {
  FakeTree t;
  t.Write("/proc/self/cgroup", "5:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  t.Write("/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us", "950000\n");
  t.Write("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.rt_runtime_us", "950000\n");
  t.Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.rt_runtime_us", "0\n");
  ReadinessReport r = t.Check();
  const ReadinessFinding& f = Get(r, "rt_group_budget");
  EXPECT_EQ(f.level, ReadinessLevel::kFail);
  EXPECT_TRUE(Has(f.summary, "/docker/abc")) << f.summary;
  EXPECT_TRUE(Has(f.fix, "echo 950000 >")) << f.fix;
  EXPECT_TRUE(Has(f.fix, "docker/abc/cpu.rt_runtime_us"));

  t.Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.rt_runtime_us", "100000\n");
  EXPECT_EQ(Get(t.Check(), "rt_group_budget").level, ReadinessLevel::kOk);
  // A parent without budget starves its children too.
  t.Write("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.rt_runtime_us", "0\n");
  EXPECT_TRUE(Has(Get(t.Check(), "rt_group_budget").summary, "cgroup /docker has"));
}

TEST(Readiness, RtRuntimeOfZeroFailsAndMinusOneIsOk) {
  FakeTree t;
  t.Write("/proc/sys/kernel/sched_rt_runtime_us", "0\n");
  EXPECT_EQ(Get(t.Check(), "rt_throttling").level, ReadinessLevel::kFail);
  t.Write("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
  EXPECT_EQ(Get(t.Check(), "rt_throttling").level, ReadinessLevel::kOk);
  t.Write("/proc/sys/kernel/sched_rt_runtime_us", "500000\n");
  EXPECT_EQ(Get(t.Check(), "rt_throttling").level, ReadinessLevel::kWarn);
}

TEST(Readiness, MissingPrivilegeFailsSchedFifoRtprioAndMemlock) {
  FakeTree t;
  t.Write("/proc/self/status",
          "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
  t.Write("/proc/self/limits",
          "Limit                     Soft Limit           Hard Limit           Units\n"
          "Max locked memory         65536                65536                bytes\n"
          "Max realtime priority     0                    0\n");
  chmod((t.root() + "/dev/cpu_dma_latency").c_str(), 0600);
  const ReadinessReport r = t.Check();
  ExpectWellFormed(r);
  EXPECT_EQ(Get(r, "sched_fifo").level, ReadinessLevel::kFail);
  EXPECT_EQ(Get(r, "rtprio_limit").level, ReadinessLevel::kFail);
  EXPECT_TRUE(Has(Get(r, "rtprio_limit").fix, "CAP_SYS_NICE"));
  EXPECT_EQ(Get(r, "memlock_limit").level, ReadinessLevel::kFail);
  EXPECT_TRUE(Has(Get(r, "memlock_limit").summary, "64 KiB"));
  EXPECT_EQ(Get(r, "cpu_dma_latency").level, ReadinessLevel::kWarn);
}

// Issue 18: the memory a run will lock (code mapped + heap + per task + thread stacks), against the
// memlock limit and the memory available.
TEST(Readiness, LockedMemoryIsEstimatedAgainstTheMemlockLimitAndFreeMemory) {
  FakeTree t;
  ReadinessReport r = t.Check();
  EXPECT_EQ(Get(r, "locked_memory").level, ReadinessLevel::kOk) << Get(r, "locked_memory").summary;
  EXPECT_TRUE(Has(Get(r, "locked_memory").summary, "locks about 38.7 MiB (code 30.0 MiB"))
      << Get(r, "locked_memory").summary;
  t.Write("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
  t.Write("/proc/self/limits",
          "Max locked memory         33554432             33554432             bytes\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "locked_memory").level, ReadinessLevel::kFail);
  EXPECT_TRUE(Has(Get(r, "locked_memory").summary, "memlock limit 32.0 MiB"))
      << Get(r, "locked_memory").summary;
  EXPECT_TRUE(Has(Get(r, "locked_memory").fix, "ulimit -l"));
  t.Write("/proc/self/limits",
          "Max locked memory         unlimited            unlimited            bytes\n");
  t.Write("/proc/meminfo", "MemAvailable: 102400 kB\n");  // a small board: 100 MiB free
  r = t.Check();
  EXPECT_EQ(Get(r, "locked_memory").level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(Get(r, "locked_memory").summary, "over a quarter of the available memory"));
}

TEST(Readiness, CapabilitiesOrLimitsGrantTheRtPrivileges) {
  FakeTree t;  // root with every capability
  ReadinessReport r = t.Check();
  EXPECT_EQ(Get(r, "sched_fifo").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "memlock_limit").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "cpu_dma_latency").level, ReadinessLevel::kOk);
  t.Write("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
  t.Write("/proc/self/limits",
          "Max locked memory         unlimited            unlimited            bytes\n"
          "Max realtime priority     99                   99\n");
  r = t.Check();
  EXPECT_EQ(Get(r, "sched_fifo").level, ReadinessLevel::kOk);
  EXPECT_EQ(Get(r, "rtprio_limit").level, ReadinessLevel::kOk);
}

TEST(Readiness, TunablesAndServicesWarnWithTheirFix) {
  FakeTree t;
  t.Write("/proc/sys/kernel/printk", "4\t4\t1\t7\n");
  t.Write("/proc/sys/vm/overcommit_memory", "0\n");
  t.Write("/proc/sys/kernel/timer_migration", "1\n");
  t.Write("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition 4 0 -2\n");
  t.Write("/sys/devices/system/cpu/smt/control", "on\n");
  t.Write("/proc/4242/comm", "irqbalance\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
  t.Write("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpuidle/state0/name", "POLL\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpuidle/state0/latency", "0\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpuidle/state1/name", "C6\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpuidle/state1/latency", "133\n");
  t.Write("/sys/devices/system/cpu/cpu0/cpuidle/state1/disable", "0\n");
  const ReadinessReport r = t.Check();
  ExpectWellFormed(r);
  for (const char* id : {"printk", "overcommit_memory", "timer_migration", "swap", "smt",
                         "irqbalance", "cpufreq_governor", "cpuidle"}) {
    EXPECT_EQ(Get(r, id).level, ReadinessLevel::kWarn) << id;
  }
  EXPECT_TRUE(Has(Get(r, "printk").fix, "kernel.printk=1"));
  EXPECT_TRUE(Has(Get(r, "irqbalance").summary, "4242"));
  EXPECT_TRUE(Has(Get(r, "cpufreq_governor").summary, "CPUs 0 use powersave"));
  EXPECT_TRUE(Has(Get(r, "cpuidle").summary, "C6 (133 us)"));
  EXPECT_EQ(r.Count(ReadinessLevel::kFail), 0);
}

// What outlier explanation can use: tracefs mounted and writable, its events, timerlat.
TEST(Readiness, ExplanationFindingsSayWhatTracefsGivesAndTheFix) {
  FakeTree t;
  t.Write("/proc/filesystems", "nodev\tsysfs\nnodev\ttracefs\n");
  t.Write("/proc/mounts", "proc /proc proc rw 0 0\n");
  // Not mounted: root mounts it when explaining; another user cannot.
  EXPECT_EQ(Get(t.Check(), "tracefs").level, ReadinessLevel::kOk);
  EXPECT_TRUE(Has(Get(t.Check(), "tracefs").summary, "mounts it at /sys/kernel/tracing"));
  EXPECT_TRUE(Has(Get(t.Check(), "trace_events").summary, "not checked"));
  t.Write("/proc/self/status", "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0\n");
  ReadinessFinding f = Get(t.Check(), "tracefs");
  EXPECT_EQ(f.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(f.summary, "/proc counters")) << f.summary;
  EXPECT_TRUE(Has(f.fix, "mount -t tracefs")) << f.fix;
  // Mounted, an unprivileged user: not writable (predicted from the credentials).
  t.Write("/proc/mounts", "tracefs /sys/kernel/tracing tracefs rw,nosuid 0 0\n");
  f = Get(t.Check(), "tracefs");
  EXPECT_EQ(f.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(f.summary, "not writable")) << f.summary;
  EXPECT_TRUE(Has(f.fix, "run as root")) << f.fix;
  t.Write("/proc/self/status", "Name:\tx\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n");
  EXPECT_EQ(Get(t.Check(), "tracefs").level, ReadinessLevel::kOk);
  // Events: every missing one is named.
  for (const char* e :
       {"sched/sched_switch", "sched/sched_waking", "irq/irq_handler_entry", "irq/irq_handler_exit",
        "irq/softirq_entry", "irq/softirq_exit", "timer/hrtimer_expire_entry"}) {
    t.Write(std::string("/sys/kernel/tracing/events/") + e + "/format", "name: x\n");
  }
  f = Get(t.Check(), "trace_events");
  EXPECT_EQ(f.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(f.summary, "timer/hrtimer_expire_exit")) << f.summary;
  EXPECT_FALSE(Has(f.summary, "sched_switch")) << f.summary;
  t.Write("/sys/kernel/tracing/events/timer/hrtimer_expire_exit/format", "name: x\n");
  EXPECT_EQ(Get(t.Check(), "trace_events").level, ReadinessLevel::kOk);
  // The tracers: "timerlat" must be a whole word ("timerlat_x" is not it).
  t.Write("/sys/kernel/tracing/available_tracers", "blk osnoise timerlat_x function nop\n");
  f = Get(t.Check(), "timerlat");
  EXPECT_EQ(f.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(f.summary, "no timerlat tracer")) << f.summary;
  EXPECT_TRUE(Has(f.fix, "linux-image-rt")) << f.fix;
  t.Write("/sys/kernel/tracing/available_tracers", "timerlat osnoise hwlat blk function nop\n");
  f = Get(t.Check(), "timerlat");
  EXPECT_EQ(f.level, ReadinessLevel::kOk);
  EXPECT_TRUE(Has(f.summary, "no timerlat wait mode (it needs Linux >= 6.5)")) << f.summary;
  // Linux >= 6.5: timerlat's user-space interface, which the timerlat wait mode uses.
  t.Write("/sys/kernel/tracing/osnoise/per_cpu/cpu0/timerlat_fd", "");
  f = Get(t.Check(), "timerlat");
  EXPECT_EQ(f.level, ReadinessLevel::kOk);
  EXPECT_TRUE(Has(f.summary, "rtloop-cyclic --timerlat")) << f.summary;
  // A kernel without tracefs.
  t.Write("/proc/mounts", "proc /proc proc rw 0 0\n");
  t.Write("/proc/filesystems", "nodev\tsysfs\n");
  f = Get(t.Check(), "tracefs");
  EXPECT_EQ(f.level, ReadinessLevel::kWarn);
  EXPECT_TRUE(Has(f.summary, "no tracefs")) << f.summary;
}

}  // namespace
}  // namespace rtloop
