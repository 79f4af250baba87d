#include "cyclic_option_values.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cyclic_options.h"
#include "rtloop/framework/system_info.h"

namespace rtloop::cyclic {
namespace {

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// "0-3,6", or "none" for no CPU (the words of our messages).
std::string FormatCpus(const std::vector<int>& cpus) {
  return cpus.empty() ? "none" : FormatCpuList(cpus);
}

}  // namespace

std::optional<std::int64_t> ParseStrictInt(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::size_t i = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) return std::nullopt;
  // Accumulated as a negative number, whose range includes INT64_MIN; a value beyond int64 is
  // refused like any other text that is not a number.
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  std::int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    const int digit = text[i] - '0';
    if (value < (kMin + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (!negative && value == kMin) return std::nullopt;
  return negative ? value : -value;
}

std::optional<double> ParseStrictDouble(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

MachineCpus MachineCpus::Read() {
  MachineCpus m;
  const SystemInfo info = ReadSystemInfo();
  const long conf = ::sysconf(_SC_NPROCESSORS_CONF);
  m.configured = conf > 0 ? static_cast<int>(conf) : 1;
  m.online = info.online_cpus;
  m.allowed = info.affinity_cpus.empty() ? m.online : info.affinity_cpus;
  m.isolated = info.isolated_cpus;
  m.configured = std::max(m.configured, m.online.empty() ? 0 : m.online.back() + 1);
  return m;
}

namespace {

// The CPUs "2", "2-3,0" or "all" name (indices into the allowed CPUs with `relative`), sorted and
// without duplicates, each checked against the machine.
Result<std::vector<int>> ParseCpuList(const std::string& s, bool relative,
                                      const MachineCpus& machine) {
  if (s == "all") return machine.allowed;
  std::vector<int> picked;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const std::size_t dash = item.find('-');
    const std::optional<std::int64_t> a =
        dash == std::string::npos ? ParseStrictInt(item) : ParseStrictInt(item.substr(0, dash));
    const std::optional<std::int64_t> b =
        dash == std::string::npos ? a : ParseStrictInt(item.substr(dash + 1));
    if (!a || !b || *a < 0 || *b < 0 || (dash != std::string::npos && dash == 0)) {
      return Invalid("'" + item + "' is not a CPU number or range (use e.g. 2, 2-3,0 or all)");
    }
    if (*b < *a) return Invalid("range '" + item + "' is reversed");
    const std::int64_t limit = relative ? static_cast<std::int64_t>(machine.allowed.size())
                                        : static_cast<std::int64_t>(machine.configured);
    if (*b >= limit) {
      if (relative) {
        return Invalid("'+" + item + "' needs more than the " +
                       std::to_string(machine.allowed.size()) + " CPUs allowed (" +
                       FormatCpus(machine.allowed) + ")");
      }
      return Invalid("CPU " + std::to_string(*b) + " does not exist on this machine (CPUs " +
                     FormatCpus(machine.online) + ")");
    }
    for (std::int64_t c = *a; c <= *b; ++c) {
      picked.push_back(relative ? machine.allowed[static_cast<std::size_t>(c)]
                                : static_cast<int>(c));
    }
    if (end == s.size()) break;
    pos = end + 1;
  }
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

}  // namespace

Result<std::vector<int>> ParseCpuSet(const std::string& text, const MachineCpus& machine) {
  std::string s = text;
  const bool invert = !s.empty() && s[0] == '!';
  if (invert) s.erase(0, 1);
  const bool relative = !s.empty() && s[0] == '+';
  if (relative) s.erase(0, 1);
  if (s.empty()) return Invalid("expected a CPU list such as 2, 2-3,0 or all");
  Result<std::vector<int>> picked = ParseCpuList(s, relative, machine);
  if (!picked.ok()) return picked.status();
  std::vector<int> result;
  if (invert || relative) {  // intersected with the current affinity, as libnuma does
    for (int c : machine.allowed) {
      const bool in = std::binary_search(picked->begin(), picked->end(), c);
      if (in != invert) result.push_back(c);
    }
  } else {
    const std::vector<int> pinnable = PinnableCpus(machine.allowed, machine.isolated);
    for (int c : *picked) {
      if (!std::binary_search(machine.online.begin(), machine.online.end(), c)) {
        return Invalid("CPU " + std::to_string(c) +
                       " is offline (online: " + FormatCpus(machine.online) + ")");
      }
      if (!std::binary_search(pinnable.begin(), pinnable.end(), c)) {
        return Invalid("CPU " + std::to_string(c) + " is outside this process's affinity (" +
                       FormatCpus(machine.allowed) + "); check taskset or the cgroup cpuset");
      }
      result.push_back(c);
    }
  }
  if (result.empty()) return Invalid("the set leaves no CPU to run on");
  return result;
}

Result<std::int64_t> ParseDurationSeconds(const std::string& text) {
  std::string digits = text;
  std::int64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 's':
      case 'S':
        digits.pop_back();
        break;
      case 'm':
      case 'M':
        unit = 60;
        digits.pop_back();
        break;
      case 'h':
      case 'H':
        unit = 3600;
        digits.pop_back();
        break;
      case 'd':
      case 'D':
        unit = 86400;
        digits.pop_back();
        break;
      default:
        break;
    }
  }
  const std::optional<std::int64_t> v = ParseStrictInt(digits);
  if (!v || *v < 0 || digits[0] == '+' || digits[0] == '-') {
    return Invalid(
        "expected a whole number with an optional suffix s, m, h or d (e.g. 30, 10m, 24h); "
        "fractions are not accepted");
  }
  if (*v > std::numeric_limits<std::int64_t>::max() / unit / 1'000'000'000) {
    return Invalid("duration too long");
  }
  return *v * unit;
}

}  // namespace rtloop::cyclic
