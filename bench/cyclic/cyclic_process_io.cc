#include "cyclic_process_io.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {

void WriteAll(std::FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

// One line on stderr (control characters in paths and values escaped).
void Complain(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "rtloop-cyclic: %s\n", telemetry::EscapeControlCharacters(message).c_str());
}

// Standard output and standard error are outputs like --json: a closed pipe (`| head`), a full
// disk or a closed descriptor behind them loses results. SIGPIPE is ignored (a write then fails
// with EPIPE instead of killing the process without a word or a clean-up); the first failure of
// either stream is an output failure (exit 4), and one on standard output ends the run.
void IgnoreSigpipe() {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, nullptr);
}

// Which of standard output and standard error is not open, or nullptr. A closed descriptor is
// given /dev/null, so that no file this run opens takes its number and receives the results.
const char* ClosedStandardStream() {
  const char* closed = nullptr;
  for (int fd : {STDERR_FILENO, STDOUT_FILENO}) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0 && null != fd) {
      dup2(null, fd);
      close(null);
    }
    closed = fd == STDOUT_FILENO ? "standard output" : "standard error";
  }
  return closed;
}

// After the main loop SIGINT/SIGTERM are taken by default again: a second one ends the process
// even if writing the final output were to hang (a stdout pipe nobody reads).
void RestoreStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGINT, &dfl, nullptr);
  sigaction(SIGTERM, &dfl, nullptr);
  pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
}

}  // namespace rtloop::cyclic
