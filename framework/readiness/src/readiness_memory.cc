// The readiness check "locked_memory": what an rtloop process with telemetry and both servers will
// lock, estimated from this process's own mappings (at least what such a process maps), against
// the memlock limit and the memory available. bench/footprint/README.md has the measured figures
// and the formula per task.
//
//   ReadinessFinding f = CheckLockedMemory(fs, ReadCredentials(fs));
//
// Threading: a plain function. Not RT-safe: reads /proc.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <string>

#include "readiness_internal.h"
#include "rtloop/framework/rt_setup.h"

namespace rtloop::readiness_internal {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;
// Heap without tasks (gRPC, protobuf and the runtime at rest), and per task with telemetry and
// --metrics: histograms 448 KiB, ring 256 KiB, windowed statistics <= 650 KiB, stack 256 KiB.
// Those are the default histogram layout's; the doctor cannot know an application's
// TelemetryConfig::histogram_layout, and a smaller one only lowers the need (bench/footprint).
constexpr std::uint64_t kBaseHeap = 2 * kMiB;
constexpr std::uint64_t kPerTask = 1640u << 10;
// Code and data mapped by a process with both servers, at least: rtloop-cyclic --telemetry
// --metrics maps 25.5 MiB of files on Debian 12 x86-64 (bench/footprint). A doctor that does not
// link gRPC maps less than the process it speaks for.
constexpr std::uint64_t kMinServerCode = 26 * kMiB;
// Non-RT threads of a process with both servers (~20, bench/footprint/README.md) x 260 KiB.
constexpr std::uint64_t kThreadStacks = std::uint64_t{20} * (260u << 10);

std::string Mib1(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

// Bytes of every file mapping in a /proc/PID/maps text (under locked memory each counts in full).
std::uint64_t FileMappingBytes(const std::string& maps) {
  std::istringstream in(maps);
  std::string line;
  std::uint64_t total = 0;
  while (std::getline(in, line)) {
    std::uint64_t start = 0, end = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %n", &start, &end,
                    &path_at) < 2 ||
        path_at <= 0 || line.size() <= static_cast<std::size_t>(path_at) ||
        line[static_cast<std::size_t>(path_at)] != '/' || end < start) {
      continue;
    }
    total += end - start;
  }
  return total;
}

// "MemAvailable:  123456 kB" in bytes, or 0.
std::uint64_t MemAvailable(const std::string& meminfo) {
  const std::size_t at = meminfo.find("MemAvailable:");
  unsigned long long kb = 0;
  if (at == std::string::npos ||
      std::sscanf(meminfo.c_str() + at, "MemAvailable: %llu", &kb) != 1) {
    return 0;
  }
  return kb * 1024;
}

}  // namespace

ReadinessFinding CheckLockedMemory(const FsTree& fs, const Credentials& c) {
  const std::optional<std::string> maps = fs.Read("/proc/self/maps");
  const std::optional<std::string> meminfo = fs.Read("/proc/meminfo");
  if (!maps.has_value() || !meminfo.has_value()) {
    return Make("locked_memory", ReadinessLevel::kWarn,
                "cannot estimate the locked memory: /proc/self/maps or /proc/meminfo unreadable",
                "mount /proc; bench/footprint/footprint.py measures a real run");
  }
  const std::uint64_t code = std::max(FileMappingBytes(*maps), kMinServerCode);
  const std::uint64_t locked = code + kBaseHeap + kPerTask + kThreadStacks;
  const std::uint64_t available = MemAvailable(*meminfo);
  const bool capped = !HasCap(c, kCapIpcLock) && c.memlock_known && c.memlock_soft.has_value();
  std::string summary = "an rtloop process with one task, telemetry and both servers locks about " +
                        Mib1(locked) + " (code " + Mib1(code) + ", +" + Mib1(kPerTask) +
                        " per task); memlock limit " +
                        (capped ? Mib1(*c.memlock_soft) : std::string("none")) + ", MemAvailable " +
                        (available > 0 ? Mib1(available) : "unknown");
  if (capped && *c.memlock_soft < locked) {
    return Make("locked_memory", ReadinessLevel::kFail, summary + ": mlockall would fail",
                MemlockFix(2 * locked / 1024));
  }
  if (available > 0 && locked > available / 4) {
    return Make("locked_memory", ReadinessLevel::kWarn,
                summary + ": over a quarter of the available memory",
                "fewer tasks, smaller rings (RuntimeConfig::telemetry.min_ring_capacity), no "
                "--metrics, or more free memory");
  }
  return Make("locked_memory", ReadinessLevel::kOk, summary);
}

}  // namespace rtloop::readiness_internal
