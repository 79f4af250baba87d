#include "memory_lock.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <array>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "rtloop/framework/rt_setup.h"

namespace rtloop::internal {
namespace {

// Libraries only the telemetry servers run: the RT path (executor, hub observers, rings,
// histograms) is in the executable and libc/libstdc++, and never calls into these.
constexpr std::array<std::string_view, 13> kServerOnlyPrefixes = {
    "libgrpc",  "libgpr.",     "libupb",           "libaddress_sorting", "libprotobuf",
    "libabsl_", "libssl.",     "libcrypto.",       "libcares",           "libre2.",
    "libz.",    "libcivetweb", "libprometheus-cpp"};

Status MlockError(int err, const std::string& what) {
  return ErrnoError(err, what,
                    "the memlock limit is " + MemlockLimitText() + " (ulimit -l); " + MemlockFix() +
                        ", or set ExecutorConfig::lock_memory = false");
}

struct Mapping {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  bool accessible = false;  // not PROT_NONE (a guard page or a reservation)
  std::string path;         // empty: anonymous
};

// One /proc/self/maps line; false at the end.
bool ReadMapping(std::FILE* f, Mapping* m) {
  char line[4096];
  if (std::fgets(line, sizeof line, f) == nullptr) return false;
  char perms[8] = {};
  int path_at = 0;
  if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &m->start, &m->end, perms,
                  &path_at) < 3) {
    m->start = m->end = 0;
    return true;
  }
  m->accessible = perms[0] == 'r' || perms[1] == 'w' || perms[2] == 'x';
  std::string path = path_at > 0 ? std::string(line + path_at) : std::string();
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  m->path = std::move(path);
  return true;
}

}  // namespace

std::string MemlockLimitText() {
  rlimit rl{};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  return rl.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                      : std::to_string(rl.rlim_cur / 1024) + " KiB";
}

bool IsServerOnlyLibrary(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view prefix : kServerOnlyPrefixes) {
    if (base.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

Result<std::uint64_t> LockRealtimeSet() {
  std::FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return ErrnoError(errno, "cannot read /proc/self/maps", "mount /proc");
  std::uint64_t locked = 0;
  Status status;
  Mapping m;
  std::uintptr_t last_locked_end = 0;  // a library's .bss follows its file mapping, anonymous
  while (status.ok() && ReadMapping(f, &m)) {
    if (!m.accessible || m.end <= m.start) continue;
    const bool file = !m.path.empty() && m.path[0] == '/';
    const bool lock = m.path == "[heap]" || (file && !IsServerOnlyLibrary(m.path)) ||
                      (m.path.empty() && m.start == last_locked_end);
    if (!lock) continue;
    const std::size_t len = m.end - m.start;
    // An address read from /proc/self/maps: the integer is the pointer.
    if (mlock(reinterpret_cast<void*>(m.start), len) != 0) {  // NOLINT(performance-no-int-to-ptr)
      status = MlockError(errno, "cannot lock " + std::to_string(len / 1024) + " KiB of " +
                                     (m.path.empty() ? std::string("memory") : m.path));
      break;
    }
    locked += len;
    last_locked_end = m.end;
  }
  std::fclose(f);
  if (!status.ok()) return status;
  return locked;
}

Status LockThreadStack() {
  pthread_attr_t attr;
  if (const int rc = pthread_getattr_np(pthread_self(), &attr); rc != 0) {
    return ErrnoError(rc, "cannot read this thread's stack attributes");
  }
  void* addr = nullptr;
  std::size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (mlock(addr, size) != 0) {
    return MlockError(
        errno, "cannot lock the " + std::to_string(size / 1024) + " KiB stack of a task thread");
  }
  return Status::Ok();
}

}  // namespace rtloop::internal
