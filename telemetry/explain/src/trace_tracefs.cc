// tracefs set-up for TraceEvidence (trace_internal.h): finding or mounting tracefs, removing the
// instances of dead rtloop processes, writing knobs with errors that say the fix.
//
//   Result<std::string> tracefs = FindOrMountTracefs();   // "/sys/kernel/tracing"
//   RTLOOP_RETURN_IF_ERROR(WriteKnob(*tracefs + "/instances/x/tracing_on", "1"));
//
// Thread contract: free functions; any non-RT thread (file and mount system calls).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string>

#include "rtloop/framework/system_info.h"
#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

constexpr const char* kTracing = "/sys/kernel/tracing";
constexpr const char* kPermissionHint =
    "run as root (CAP_SYS_ADMIN), or give this user tracefs access (mount -o remount,gid=GROUP,"
    "mode=0770 /sys/kernel/tracing); without it rtloop explains outliers from /proc counters";

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string ReadSmall(const std::string& path) {
  std::string text;
  (void)ReadWhole(path, &text);
  return text;
}

// "[confidentiality]" in /sys/kernel/security/lockdown: tracefs is closed to everyone.
std::string LockdownNote() {
  const std::string mode = ReadSmall("/sys/kernel/security/lockdown");
  if (mode.find("[confidentiality]") == std::string::npos) return {};
  return "; the kernel is locked down (confidentiality: /sys/kernel/security/lockdown), which "
         "closes tracefs: boot without lockdown=confidentiality to use the trace evidence";
}

}  // namespace

Status ReadWhole(const std::string& path, std::string* out) {
  out->clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open " + path);
  constexpr std::size_t kChunk = std::size_t{64} * 1024;
  for (;;) {
    const std::size_t used = out->size();
    out->resize(used + kChunk);
    const ssize_t n = read(fd, out->data() + used, kChunk);
    if (n < 0 && errno == EINTR) {
      out->resize(used);
      continue;
    }
    if (n <= 0) {
      const int err = errno;
      out->resize(used);
      close(fd);
      return n < 0 ? ErrnoError(err, "cannot read " + path) : Status::Ok();
    }
    out->resize(used + static_cast<std::size_t>(n));
  }
}

Status WriteKnob(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  int err = 0;
  if (fd < 0) {
    err = errno;
  } else {
    if (write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size())) err = errno;
    close(fd);
  }
  if (err == 0) return Status::Ok();
  const std::string what = "cannot write '" + value + "' to " + path;
  if (err == EACCES || err == EPERM) return ErrnoError(err, what, kPermissionHint + LockdownNote());
  if (err == ENOMEM) {
    return ErrnoError(err, what, "the trace buffer does not fit in memory: lower buffer_size_kb");
  }
  return ErrnoError(err, what, "this kernel's tracefs refused it");
}

Result<std::string> FindOrMountTracefs() {
  std::string found;
  std::string debugfs;
  ForEachLine("/proc/mounts", [&](std::string_view line) {
    // DEVICE DIR TYPE OPTIONS 0 0; the kernel escapes blanks in DIR as \040.
    const std::size_t dir_at = line.find(' ') + 1;  // npos + 1 == 0: no field, no match below
    const std::size_t type_at = line.find(' ', dir_at) + 1;
    if (dir_at == 0 || type_at == 0) return true;
    const std::string_view dir = line.substr(dir_at, type_at - 1 - dir_at);
    const std::string_view type = line.substr(type_at, line.find(' ', type_at) - type_at);
    if (type == "tracefs" && (found.empty() || dir == kTracing)) found = dir;
    if (type == "debugfs" && debugfs.empty()) debugfs = dir;
    return true;
  });
  if (!found.empty()) return found;
  if (!debugfs.empty() && Exists(debugfs + "/tracing/instances")) return debugfs + "/tracing";
  if (ReadSmall("/proc/filesystems").find("\ttracefs") == std::string::npos) {
    return Status(StatusCode::kNotFound,
                  "tracefs is not in this kernel (CONFIG_TRACING/CONFIG_FTRACE are off): the "
                  "trace evidence needs it; use a kernel with tracing, or the /proc counters");
  }
  if (mount("nodev", kTracing, "tracefs", 0, nullptr) != 0) {
    const int err = errno;
    return ErrnoError(
        err, std::string("tracefs is not mounted and mounting it at ") + kTracing + " failed",
        (err == EPERM || err == EACCES)
            ? "run as root (CAP_SYS_ADMIN) or mount it once: mount -t tracefs nodev "
              "/sys/kernel/tracing" +
                  LockdownNote()
            : "mount it by hand: mount -t tracefs nodev /sys/kernel/tracing");
  }
  return std::string(kTracing);
}

std::vector<std::string> RemoveStaleInstances(const std::string& tracefs) {
  std::vector<std::string> notes;
  const std::string dir = tracefs + "/instances";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return notes;
  std::vector<std::string> stale;
  while (const dirent* entry = readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name.substr(0, 7) != "rtloop-") continue;
    // rtloop-<pid> or rtloop-<pid>-<n> (a second instance of the same process).
    int pid = 0;
    const std::string_view rest = name.substr(7);
    const char* end = rest.data() + rest.size();
    const auto [ptr, ec] = std::from_chars(rest.data(), end, pid);
    if (ec != std::errc() || pid <= 0) continue;
    if (ptr != end) {
      int n = 0;
      const auto [nptr, nec] = ptr[0] == '-'
                                   ? std::from_chars(ptr + 1, end, n)
                                   : std::from_chars_result{ptr, std::errc::invalid_argument};
      if (nec != std::errc() || nptr != end || n <= 1) continue;
    }
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.emplace_back(name);
  }
  closedir(d);
  for (const std::string& name : stale) {
    const std::string path = dir + "/" + name;
    (void)WriteKnob(path + "/tracing_on", "0");
    if (rmdir(path.c_str()) == 0) {
      notes.push_back("removed the stale trace instance " + path + " (its process " +
                      name.substr(7, name.find('-', 7) - 7) + " is gone)");
    } else {
      notes.push_back("could not remove the stale trace instance " + path + ": " +
                      ErrnoError(errno, "rmdir").message());
    }
  }
  return notes;
}

std::string CpuMaskText(const std::vector<int>& cpus) {
  int max_cpu = 0;
  for (int c : cpus) max_cpu = std::max(max_cpu, c);
  const int groups = max_cpu / 32 + 1;
  std::vector<std::uint32_t> words(static_cast<std::size_t>(groups), 0);
  for (int c : cpus) {
    if (c >= 0) words[static_cast<std::size_t>(c / 32)] |= 1u << (c % 32);
  }
  std::string text;
  char buf[16];
  for (int g = groups - 1; g >= 0; --g) {
    std::snprintf(buf, sizeof buf, g == groups - 1 ? "%x" : ",%08x",
                  words[static_cast<std::size_t>(g)]);
    text += buf;
  }
  return text;
}

}  // namespace rtloop::explain::trace
