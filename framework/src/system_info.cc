#include "rtloop/framework/system_info.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace rtloop {

namespace {

bool HasWord(std::string_view text, std::string_view word) {
  constexpr std::string_view kSpace = " \t\n";
  for (std::size_t at = text.find_first_not_of(kSpace); at != std::string_view::npos;) {
    const std::size_t end = std::min(text.find_first_of(kSpace, at), text.size());
    if (text.substr(at, end - at) == word) return true;
    at = text.find_first_not_of(kSpace, end);
  }
  return false;
}

Result<int> ParseCpuNumber(const std::string& part, const std::string& whole) {
  if (part.empty() || part.size() > 6 ||
      !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgumentError("bad CPU list \"" + whole + "\": \"" + part +
                                "\" is not a CPU number (expected e.g. \"0-3,6\")");
  }
  return static_cast<int>(std::strtol(part.c_str(), nullptr, 10));
}

}  // namespace

bool ForEachLine(const char* path, const std::function<bool(std::string_view line)>& line) {
  std::FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char* buf = nullptr;
  std::size_t cap = 0;
  for (ssize_t n; (n = getline(&buf, &cap, f)) >= 0;) {
    std::string_view text(buf, static_cast<std::size_t>(n));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (!line(text)) break;
  }
  std::free(buf);
  std::fclose(f);
  return true;
}

std::string ReadFirstLine(const char* path) {
  std::string first;
  ForEachLine(path, [&](std::string_view line) {
    first = line;
    return false;
  });
  return first;
}

const char* PreemptModelName(PreemptModel model) noexcept {
  switch (model) {
    case PreemptModel::kUnknown:
      return "unknown";
    case PreemptModel::kNone:
      return "none";
    case PreemptModel::kVoluntary:
      return "voluntary";
    case PreemptModel::kFull:
      return "full";
    case PreemptModel::kDynamic:
      return "dynamic";
    case PreemptModel::kRt:
      return "rt";
  }
  return "unknown";
}

PreemptModel ParsePreemptModel(const std::string& kernel_version,
                               const std::string& realtime_flag) {
  if (!realtime_flag.empty() && realtime_flag[0] == '1') return PreemptModel::kRt;
  if (HasWord(kernel_version, "PREEMPT_RT") || HasWord(kernel_version, "PREEMPT-RT")) {
    return PreemptModel::kRt;
  }
  if (HasWord(kernel_version, "PREEMPT_DYNAMIC")) return PreemptModel::kDynamic;
  if (HasWord(kernel_version, "PREEMPT")) return PreemptModel::kFull;
  // uname -v does not tell "none" from "voluntary"; both omit the word.
  if (HasWord(kernel_version, "SMP")) return PreemptModel::kUnknown;
  return PreemptModel::kUnknown;
}

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  if (trimmed.empty()) return cpus;
  std::size_t pos = 0;
  while (pos <= trimmed.size()) {
    std::size_t comma = trimmed.find(',', pos);
    if (comma == std::string::npos) comma = trimmed.size();
    const std::string part = trimmed.substr(pos, comma - pos);
    const std::size_t dash = part.find('-');
    if (dash == std::string::npos) {
      Result<int> cpu = ParseCpuNumber(part, trimmed);
      if (!cpu.ok()) return cpu.status();
      cpus.push_back(*cpu);
    } else {
      Result<int> lo = ParseCpuNumber(part.substr(0, dash), trimmed);
      if (!lo.ok()) return lo.status();
      Result<int> hi = ParseCpuNumber(part.substr(dash + 1), trimmed);
      if (!hi.ok()) return hi.status();
      if (*hi < *lo) {
        return InvalidArgumentError("bad CPU list \"" + trimmed + "\": range \"" + part +
                                    "\" runs backwards");
      }
      if (*hi - *lo > 65536) {
        return InvalidArgumentError("bad CPU list \"" + trimmed + "\": range \"" + part +
                                    "\" is too large");
      }
      for (int c = *lo; c <= *hi; ++c) cpus.push_back(c);
    }
    pos = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus_in) {
  std::vector<int> cpus = cpus_in;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

std::vector<int> CurrentAffinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(static_cast<std::size_t>(c), &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<int> PinnableCpus(const std::vector<int>& affinity, const std::vector<int>& isolated) {
  if (affinity.empty()) return {};
  std::vector<int> cpus = affinity;
  cpus.insert(cpus.end(), isolated.begin(), isolated.end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

SystemInfo ReadSystemInfo() {
  SystemInfo info;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) info.host_name = host;
  utsname u{};
  if (uname(&u) == 0) {
    info.kernel_release = u.release;
    info.kernel_version = u.version;
    info.machine = u.machine;
  }
  const std::string realtime = ReadFirstLine("/sys/kernel/realtime");
  info.realtime = !realtime.empty() && realtime[0] == '1';
  info.preempt_model = ParsePreemptModel(info.kernel_version, realtime);
  if (Result<std::vector<int>> online =
          ParseCpuList(ReadFirstLine("/sys/devices/system/cpu/online"));
      online.ok() && !online->empty()) {
    info.online_cpus = *online;
  } else {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < static_cast<int>(n); ++c) info.online_cpus.push_back(c);
  }
  if (Result<std::vector<int>> isolated =
          ParseCpuList(ReadFirstLine("/sys/devices/system/cpu/isolated"));
      isolated.ok()) {
    info.isolated_cpus = *isolated;
  }
  info.affinity_cpus = CurrentAffinity();
  return info;
}

}  // namespace rtloop
