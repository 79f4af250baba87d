// The boot parameters that keep the kernel off the CPUs the real-time threads run on, one finding
// each: isolcpus= (no ordinary task is scheduled there), nohz_full= (no periodic tick while one
// task runs) and rcu_nocbs= (RCU callbacks run elsewhere). The board vendors' tuning guides set
// all three, in U-Boot's bootargs or the APPEND line of extlinux.conf; each non-OK finding's fix
// names the parameter with the CPUs and both places.
//
//   ReadinessFinding f = CheckNohzFull(fs, {2, 3});  // the CPUs `rtloop-bench doctor --cpus=2-3`
//
// Facts: sys/devices/system/cpu/{isolated,nohz_full} (what the kernel applied), proc/cmdline (what
// was asked; rcu_nocbs= is shown nowhere else).
//
// Threading: pure functions of the files; any thread. Not RT-safe: reads files and allocates.
#include <algorithm>
#include <cctype>
#include <sstream>

#include "readiness_internal.h"
#include "rtloop/framework/system_info.h"

namespace rtloop::readiness_internal {
namespace {

constexpr ReadinessLevel kOk = ReadinessLevel::kOk;
constexpr ReadinessLevel kWarn = ReadinessLevel::kWarn;

// The CPUs of `cpus` not in `set`.
std::vector<int> Missing(const std::vector<int>& cpus, const std::vector<int>& set) {
  std::vector<int> out;
  for (int c : cpus) {
    if (std::find(set.begin(), set.end(), c) == set.end()) out.push_back(c);
  }
  return out;
}

std::vector<int> Union(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

// The fix of a missing boot parameter, where the boards set it.
std::string BootFix(const std::string& param) {
  return "add " + param +
         " to the kernel command line and reboot: U-Boot: setenv bootargs \"${bootargs} " + param +
         "\"; saveenv, or the APPEND line of /boot/extlinux/extlinux.conf (GRUB: "
         "GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub)";
}

// The CPU list file the kernel applied ("(null)" or empty: none); nullopt when the file is absent
// (for nohz_full: a kernel without CONFIG_NO_HZ_FULL).
std::optional<std::vector<int>> AppliedCpus(const FsTree& fs, const std::string& path) {
  if (!fs.Exists(path)) return std::nullopt;
  const std::string line = fs.ReadLine(path).value_or("");
  Result<std::vector<int>> list = ParseCpuList(line == "(null)" ? "" : line);
  return list.ok() ? *list : std::vector<int>{};
}

// "CPUs 2-3" or "CPU 2".
std::string CpusText(const std::vector<int>& cpus) {
  return (cpus.size() == 1 ? "CPU " : "CPUs ") + FormatCpuList(cpus);
}

// The common shape of the three findings: `have` are the CPUs the parameter covers.
ReadinessFinding Judge(const char* id, const std::string& what, const std::vector<int>& rt_cpus,
                       const std::vector<int>& have, const std::string& note = {}) {
  if (rt_cpus.empty()) {
    return Make(id, kWarn,
                std::string("no CPU to check ") + id +
                    "= for (none isolated, none named by --cpus): the real-time threads share "
                    "their CPUs with everything else",
                BootFix(std::string(id) + "=N") +
                    " (N: the CPUs of the real-time threads, the same list for isolcpus=, "
                    "nohz_full= and rcu_nocbs=)");
  }
  const std::vector<int> missing = Missing(rt_cpus, have);
  if (missing.empty()) {
    return Make(id, kOk, CpusText(rt_cpus) + ": " + what + note);
  }
  const std::string shown = have.empty() ? "none" : FormatCpuList(have);
  return Make(
      id, kWarn,
      CpusText(missing) + " not covered by " + id + "= (the kernel applies: " + shown + ")" + note,
      BootFix(std::string(id) + "=" + FormatCpuList(Union(have, rt_cpus))));
}

}  // namespace

std::vector<int> CmdlineCpus(const FsTree& fs, const std::string& key) {
  const std::string cmdline = fs.ReadLine("/proc/cmdline").value_or("");
  std::istringstream in(cmdline);
  std::string word;
  std::vector<int> out;
  while (in >> word) {  // the last occurrence wins, as in the kernel
    if (word.rfind(key + "=", 0) != 0) continue;
    // isolcpus flags come first, separated by commas: keep the parts that are CPU lists.
    std::string cpus;
    std::istringstream parts(word.substr(key.size() + 1));
    std::string part;
    bool all = false;
    while (std::getline(parts, part, ',')) {
      if (part == "all") all = true;
      if (!part.empty() && std::isdigit(static_cast<unsigned char>(part[0])) != 0) {
        cpus += (cpus.empty() ? "" : ",") + part;
      }
    }
    Result<std::vector<int>> list = ParseCpuList(cpus);
    out = all ? OnlineCpus(fs) : (list.ok() ? *list : std::vector<int>{});
  }
  return out;
}

std::vector<int> RtCpus(const FsTree& fs, const std::vector<int>& configured) {
  return configured.empty() ? IsolatedCpus(fs) : configured;
}

ReadinessFinding CheckIsolcpus(const FsTree& fs, const std::vector<int>& rt_cpus) {
  const std::optional<std::vector<int>> applied =
      AppliedCpus(fs, "/sys/devices/system/cpu/isolated");
  return Judge("isolcpus", "isolated (no ordinary task is scheduled there)", rt_cpus,
               applied ? *applied : CmdlineCpus(fs, "isolcpus"));
}

ReadinessFinding CheckNohzFull(const FsTree& fs, const std::vector<int>& rt_cpus) {
  const std::optional<std::vector<int>> applied =
      AppliedCpus(fs, "/sys/devices/system/cpu/nohz_full");
  const std::vector<int> asked = CmdlineCpus(fs, "nohz_full");
  if (!applied && !asked.empty()) {
    return Make("nohz_full", kWarn,
                "nohz_full=" + FormatCpuList(asked) +
                    " is on the command line, but this kernel does not apply it "
                    "(sys/devices/system/cpu/nohz_full absent: built without CONFIG_NO_HZ_FULL)",
                "boot a kernel built with CONFIG_NO_HZ_FULL=y (Debian's linux-image-rt-* is)");
  }
  return Judge("nohz_full", "no periodic tick while one task runs", rt_cpus,
               applied ? *applied : std::vector<int>{});
}

ReadinessFinding CheckRcuNocbs(const FsTree& fs, const std::vector<int>& rt_cpus) {
  // The kernel offloads the callbacks of every nohz_full CPU too.
  const std::vector<int> nohz =
      AppliedCpus(fs, "/sys/devices/system/cpu/nohz_full").value_or(std::vector<int>{});
  const std::vector<int> asked = CmdlineCpus(fs, "rcu_nocbs");
  const bool by_nohz =
      !rt_cpus.empty() && Missing(rt_cpus, nohz).empty() && !Missing(rt_cpus, asked).empty();
  return Judge("rcu_nocbs", "RCU callbacks run on other CPUs", rt_cpus, Union(asked, nohz),
               by_nohz ? " (implied by nohz_full=)" : "");
}

}  // namespace rtloop::readiness_internal
