#include "rtloop/readiness.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <set>
#include <sstream>

#include "readiness_internal.h"
#include "rtloop/framework/system_info.h"

namespace rtloop {
namespace readiness_internal {

// The rules of rtloop::telemetry::ReadInputFile (input_file.h), which the framework cannot use:
// a saved or fake tree may hold anything, and only a regular file is read (a FIFO would keep the
// doctor waiting forever, /dev/zero would fill its report with NULs); the open cannot block
// (O_NONBLOCK) and at most kMaxFactBytes are read, so a larger file, whatever its size claims
// (/proc says 0), is refused too.
std::optional<std::string> FsTree::Read(const std::string& absolute) const {
  const int fd = ::open(Path(absolute).c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > kMaxFactBytes) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out(kMaxFactBytes + 1, '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) got = out.size();  // a read error: unreadable
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got > kMaxFactBytes) return std::nullopt;
  out.resize(got);
  return out;
}

std::optional<std::string> FsTree::ReadLine(const std::string& absolute) const {
  std::optional<std::string> text = Read(absolute);
  if (!text) return std::nullopt;
  std::string line = text->substr(0, text->find('\n'));
  const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!line.empty() && blank(static_cast<unsigned char>(line.back()))) line.pop_back();
  std::size_t start = 0;
  while (start < line.size() && blank(static_cast<unsigned char>(line[start]))) ++start;
  return line.substr(start);
}

std::optional<long long> FsTree::ReadInt(const std::string& absolute) const {
  std::optional<std::string> line = ReadLine(absolute);
  if (!line || line->empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(*line, &used);
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

bool FsTree::Exists(const std::string& absolute) const {
  struct stat st {};
  return stat(Path(absolute).c_str(), &st) == 0;
}

std::vector<std::string> FsTree::List(const std::string& absolute) const {
  std::vector<std::string> out;
  DIR* dir = opendir(Path(absolute).c_str());
  if (dir == nullptr) return out;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

ReadinessFinding Make(const char* id, ReadinessLevel level, std::string summary, std::string fix) {
  ReadinessFinding f;
  f.id = id;
  f.level = level;
  f.summary = std::move(summary);
  if (level != ReadinessLevel::kOk) f.fix = std::move(fix);
  return f;
}

namespace {

std::vector<int> CpuListFile(const FsTree& fs, const std::string& path) {
  std::optional<std::string> line = fs.ReadLine(path);
  if (!line) return {};
  Result<std::vector<int>> cpus = ParseCpuList(*line);
  return cpus.ok() ? *cpus : std::vector<int>{};
}

}  // namespace

std::vector<int> OnlineCpus(const FsTree& fs) {
  return CpuListFile(fs, "/sys/devices/system/cpu/online");
}
std::vector<int> IsolatedCpus(const FsTree& fs) {
  return CpuListFile(fs, "/sys/devices/system/cpu/isolated");
}

}  // namespace readiness_internal

namespace {

using readiness_internal::FsTree;
using readiness_internal::Make;
constexpr ReadinessLevel kOk = ReadinessLevel::kOk;
constexpr ReadinessLevel kWarn = ReadinessLevel::kWarn;

constexpr const char* kRtKernelFix =
    "boot a PREEMPT_RT kernel (Debian: apt install linux-image-rt-$(dpkg --print-architecture))";

bool Contains(const std::vector<int>& set, int cpu) {
  return std::find(set.begin(), set.end(), cpu) != set.end();
}

ReadinessFinding CheckPreemptModel(const FsTree& fs) {
  const std::string version = fs.ReadLine("/proc/sys/kernel/version").value_or("");
  const std::string flag = fs.ReadLine("/sys/kernel/realtime").value_or("");
  const PreemptModel model = ParsePreemptModel(version, flag);
  if (model == PreemptModel::kRt) return Make("preempt_model", kOk, "PREEMPT_RT");
  std::string what = version.empty() ? std::string("unknown (proc/sys/kernel/version unreadable)")
                                     : std::string(PreemptModelName(model));
  if (model == PreemptModel::kDynamic) {
    // debugfs shows the modes with the active one in parentheses: "none voluntary (full) lazy".
    const std::optional<std::string> modes = fs.ReadLine("/sys/kernel/debug/sched/preempt");
    const std::size_t open = modes ? modes->find('(') : std::string::npos;
    const std::size_t close = modes ? modes->find(')') : std::string::npos;
    if (open != std::string::npos && close != std::string::npos && close > open) {
      const std::string mode = modes->substr(open + 1, close - open - 1);
      what = "PREEMPT_DYNAMIC, mode " + mode;
      if (mode != "full") {
        return Make("preempt_model", kWarn, what + ": not PREEMPT_RT, and not fully preemptible",
                    std::string(kRtKernelFix) + "; meanwhile boot with preempt=full");
      }
    } else {
      what = "PREEMPT_DYNAMIC (mode not readable: mount debugfs to see it)";
    }
  }
  return Make("preempt_model", kWarn, what + ": not PREEMPT_RT, latencies have no bound",
              kRtKernelFix);
}

ReadinessFinding CheckRealtimeFlag(const FsTree& fs) {
  const std::optional<std::string> flag = fs.ReadLine("/sys/kernel/realtime");
  if (flag && *flag == "1") return Make("sys_kernel_realtime", kOk, "/sys/kernel/realtime is 1");
  return Make("sys_kernel_realtime", kWarn,
              flag ? "/sys/kernel/realtime is " + *flag
                   : "/sys/kernel/realtime is absent: not a PREEMPT_RT kernel",
              kRtKernelFix);
}

ReadinessFinding CheckIrqAffinity(const FsTree& fs) {
  const std::vector<int> isolated = readiness_internal::IsolatedCpus(fs);
  if (isolated.empty()) return Make("irq_affinity", kOk, "no isolated CPUs: not checked");
  std::vector<std::string> irqs;
  for (const std::string& irq : fs.List("/proc/irq")) {
    if (irq.empty() || std::isdigit(static_cast<unsigned char>(irq[0])) == 0) continue;
    const std::optional<std::string> line = fs.ReadLine("/proc/irq/" + irq + "/smp_affinity_list");
    if (!line) continue;
    Result<std::vector<int>> cpus = ParseCpuList(*line);
    if (!cpus.ok()) continue;
    if (std::any_of(cpus->begin(), cpus->end(), [&](int c) { return Contains(isolated, c); })) {
      irqs.push_back(irq);
    }
  }
  if (irqs.empty()) {
    return Make("irq_affinity", kOk,
                "no IRQ may run on the isolated CPUs " + FormatCpuList(isolated));
  }
  std::vector<int> housekeeping;
  for (int c : readiness_internal::OnlineCpus(fs)) {
    if (!Contains(isolated, c)) housekeeping.push_back(c);
  }
  std::string list;
  for (std::size_t i = 0; i < irqs.size() && i < 8; ++i) list += (i ? " " : "") + irqs[i];
  if (irqs.size() > 8) list += " ...";
  const std::string hk = housekeeping.empty() ? "0" : FormatCpuList(housekeeping);
  return Make("irq_affinity", kWarn,
              std::to_string(irqs.size()) + " IRQs may run on isolated CPUs " +
                  FormatCpuList(isolated) + " (" + list + ")",
              "for each: echo " + hk +
                  " > /proc/irq/N/smp_affinity_list; or boot with "
                  "irqaffinity=" +
                  hk + " (and isolcpus=managed_irq,...)");
}

ReadinessFinding CheckGovernor(const FsTree& fs) {
  std::set<std::string> others;
  std::vector<int> slow;
  bool any = false;
  for (int cpu : readiness_internal::OnlineCpus(fs)) {
    const std::optional<std::string> gov = fs.ReadLine(
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor");
    if (!gov) continue;
    any = true;
    if (*gov != "performance") {
      slow.push_back(cpu);
      others.insert(*gov);
    }
  }
  if (!any) {
    return Make("cpufreq_governor", kOk,
                "no cpufreq governor exposed (frequency set by firmware or hypervisor)");
  }
  if (slow.empty()) return Make("cpufreq_governor", kOk, "performance on every CPU");
  std::string names;
  for (const std::string& g : others) names += (names.empty() ? "" : "/") + g;
  return Make("cpufreq_governor", kWarn, "CPUs " + FormatCpuList(slow) + " use " + names,
              "cpupower frequency-set -g performance (Debian: linux-cpupower), or echo "
              "performance > /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor");
}

ReadinessFinding CheckIdleStates(const FsTree& fs) {
  constexpr long long kDeepUs = 10;  // exit latencies above this show in a latency histogram
  std::set<std::string> deep;
  std::vector<int> cpus;
  bool any = false;
  for (int cpu : readiness_internal::OnlineCpus(fs)) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpuidle";
    bool cpu_deep = false;
    for (const std::string& state : fs.List(dir)) {
      if (state.rfind("state", 0) != 0) continue;
      any = true;
      const long long latency = fs.ReadInt(dir + "/" + state + "/latency").value_or(0);
      const long long disabled = fs.ReadInt(dir + "/" + state + "/disable").value_or(0);
      if (latency > kDeepUs && disabled == 0) {
        deep.insert(fs.ReadLine(dir + "/" + state + "/name").value_or(state) + " (" +
                    std::to_string(latency) + " us)");
        cpu_deep = true;
      }
    }
    if (cpu_deep) cpus.push_back(cpu);
  }
  if (!any) return Make("cpuidle", kOk, "no cpuidle states exposed");
  if (cpus.empty()) return Make("cpuidle", kOk, "no idle state deeper than 10 us is enabled");
  std::string names;
  for (const std::string& d : deep) names += (names.empty() ? "" : ", ") + d;
  return Make("cpuidle", kWarn, "CPUs " + FormatCpuList(cpus) + " may enter " + names,
              "rtloop holds /dev/cpu_dma_latency at 0 while it runs; for good: cpupower idle-set "
              "-D 10, or boot with processor.max_cstate=1 intel_idle.max_cstate=0");
}

ReadinessFinding CheckSysctl(const FsTree& fs, const char* id, const std::string& path,
                             long long want, const std::string& why, const std::string& fix) {
  std::optional<std::string> line = fs.ReadLine(path);
  if (!line) return Make(id, kOk, path + " absent: not applicable");
  std::replace(line->begin(), line->end(), '\t', ' ');  // printk's four fields
  std::istringstream in(*line);
  long long value = 0;
  if (!(in >> value)) return Make(id, kWarn, path + " unreadable: '" + *line + "'", fix);
  if (value == want) return Make(id, kOk, path + " is " + *line);
  return Make(id, kWarn, path + " is " + *line + ": " + why, fix);
}

ReadinessFinding CheckIrqbalance(const FsTree& fs) {
  for (const std::string& pid : fs.List("/proc")) {
    if (pid.empty() || std::isdigit(static_cast<unsigned char>(pid[0])) == 0) continue;
    if (fs.ReadLine("/proc/" + pid + "/comm").value_or("") == "irqbalance") {
      return Make("irqbalance", kWarn,
                  "irqbalance is running (pid " + pid + "): it moves IRQs, also onto RT CPUs",
                  "systemctl stop irqbalance, or IRQBALANCE_BANNED_CPULIST=<RT CPUs> in "
                  "/etc/default/irqbalance");
    }
  }
  return Make("irqbalance", kOk, "irqbalance is not running");
}

ReadinessFinding CheckSmt(const FsTree& fs) {
  const std::optional<std::string> control = fs.ReadLine("/sys/devices/system/cpu/smt/control");
  if (!control) return Make("smt", kOk, "no SMT control exposed");
  if (*control == "on") {
    return Make("smt", kWarn, "SMT is on: sibling threads share a core with the RT threads",
                "echo off > /sys/devices/system/cpu/smt/control, or boot with nosmt");
  }
  return Make("smt", kOk, "SMT " + *control);
}

ReadinessFinding CheckSwap(const FsTree& fs) {
  const std::optional<std::string> swaps = fs.Read("/proc/swaps");
  if (!swaps) return Make("swap", kOk, "/proc/swaps absent");
  std::istringstream in(*swaps);
  std::string line;
  std::getline(in, line);  // header
  std::string devices;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string name;
    if (f >> name) devices += (devices.empty() ? "" : ", ") + name;
  }
  if (devices.empty()) return Make("swap", kOk, "no swap");
  return Make("swap", kWarn,
              "swap is on (" + devices +
                  "): paging costs other processes I/O and the RT "
                  "process page faults unless it locks its memory",
              "swapoff -a (and remove the swap entries from /etc/fstab)");
}

}  // namespace

const char* ReadinessLevelName(ReadinessLevel level) noexcept {
  switch (level) {
    case ReadinessLevel::kOk:
      return "OK";
    case ReadinessLevel::kWarn:
      return "WARN";
    case ReadinessLevel::kFail:
      return "FAIL";
  }
  return "?";
}

int ReadinessReport::Count(ReadinessLevel level) const noexcept {
  return static_cast<int>(
      std::count_if(findings.begin(), findings.end(),
                    [&](const ReadinessFinding& f) { return f.level == level; }));
}

const ReadinessFinding* ReadinessReport::Find(const std::string& id) const noexcept {
  for (const ReadinessFinding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

ReadinessReport CheckReadiness(const ReadinessConfig& config) {
  namespace ri = readiness_internal;
  const FsTree fs(config.root);
  const bool probe = config.probe && fs.live();
  const ri::Credentials creds = ri::ReadCredentials(fs);
  ReadinessReport r;
  r.findings.push_back(CheckPreemptModel(fs));
  r.findings.push_back(CheckRealtimeFlag(fs));
  const std::vector<int> rt_cpus = ri::RtCpus(fs, config.rt_cpus);
  r.findings.push_back(ri::CheckIsolcpus(fs, rt_cpus));
  r.findings.push_back(ri::CheckNohzFull(fs, rt_cpus));
  r.findings.push_back(ri::CheckRcuNocbs(fs, rt_cpus));
  r.findings.push_back(CheckIrqAffinity(fs));
  r.findings.push_back(CheckGovernor(fs));
  r.findings.push_back(CheckIdleStates(fs));
  r.findings.push_back(ri::CheckRtThrottling(fs));
  r.findings.push_back(ri::CheckRtGroupBudget(fs));
  r.findings.push_back(ri::CheckMemlock(creds));
  r.findings.push_back(ri::CheckLockedMemory(fs, creds));
  r.findings.push_back(ri::CheckRtprio(creds));
  r.findings.push_back(ri::CheckSchedFifo(fs, creds, probe));
  r.findings.push_back(ri::CheckCpuDmaLatency(fs, creds, probe));
  r.findings.push_back(
      CheckSysctl(fs, "printk", "/proc/sys/kernel/printk", 1,
                  "kernel messages up to this level go to the console (slow, with interrupts off)",
                  "sysctl -w kernel.printk=1 (rtloop-bench run --tune does it for the run)"));
  r.findings.push_back(CheckSysctl(
      fs, "overcommit_memory", "/proc/sys/vm/overcommit_memory", 1,
      "the documented benchmark sets 1 (the load's allocations never fail)",
      "sysctl -w vm.overcommit_memory=1 (rtloop-bench run --tune does it for the run)"));
  r.findings.push_back(CheckIrqbalance(fs));
  r.findings.push_back(CheckSmt(fs));
  r.findings.push_back(CheckSwap(fs));
  r.findings.push_back(CheckSysctl(fs, "timer_migration", "/proc/sys/kernel/timer_migration", 0,
                                   "timers may move onto the RT CPUs",
                                   "sysctl -w kernel.timer_migration=0"));
  r.findings.push_back(ri::CheckTracefs(fs, creds, probe));
  r.findings.push_back(ri::CheckTraceEvents(fs));
  r.findings.push_back(ri::CheckTimerlat(fs));
  return r;
}

}  // namespace rtloop
