#include "cyclic_handover.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "cyclic_options.h"  // kExitFatal

namespace rtloop::cyclic {

std::vector<std::string> FullBinaryCandidates(const std::string& own_dir) {
  return {own_dir + "/rtloop-cyclic-full", own_dir + "/../libexec/rtloop/rtloop-cyclic-full"};
}

int HandOverToFull(const char* const* argv) {
  // The running binary's directory: /proc/self/exe, else (no /proc: a chroot, an early boot
  // script) argv[0] when it holds a path.
  std::string dir;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    dir.assign(self, static_cast<std::size_t>(n));
  } else if (argv[0] != nullptr && std::strchr(argv[0], '/') != nullptr) {
    dir = argv[0];
  } else {
    std::fprintf(stderr,
                 "rtloop-cyclic: cannot find its own directory (/proc/self/exe: %s) to start "
                 "rtloop-cyclic-full, which serves and records: mount /proc, run it by its path, "
                 "or run rtloop-cyclic-full directly\n",
                 std::strerror(errno));
    return kExitFatal;
  }
  dir.resize(dir.rfind('/'));  // "/rtloop-cyclic" -> "", so "/rtloop-cyclic-full" below
  std::string tried;
  for (const std::string& path : FullBinaryCandidates(dir)) {
    execv(path.c_str(), const_cast<char* const*>(argv));
    tried += "\n  " + path + ": " + std::strerror(errno);
  }
  std::fprintf(stderr,
               "rtloop-cyclic: --telemetry, --metrics and --record run in rtloop-cyclic-full (the "
               "same tool with the servers' libraries linked in), which could not be started:%s\n"
               "Install the rtloop package, or copy rtloop-cyclic-full from the tools tarball "
               "next to rtloop-cyclic\n",
               tried.c_str());
  return kExitFatal;
}

}  // namespace rtloop::cyclic
