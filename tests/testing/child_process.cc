// ChildProcess (see child_process.h): fork + exec with everything the child needs prepared before
// the fork, and an O_CLOEXEC pipe on which a failed exec reports its errno.
#include "child_process.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace rtloop::testing {

namespace {

std::string NameOf(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// This process' environment with `extra` added (an entry of the same name replaced).
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& mine : extra) replaced = replaced || NameOf(mine) == NameOf(entry);
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::filesystem::path MakeScratch() {
  static int n = 0;
  std::filesystem::path d =
      std::filesystem::temp_directory_path() /
      ("rtloop_child_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  std::error_code ignored;
  std::filesystem::create_directories(d, ignored);
  return d;
}

int OpenOutput(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

int StatusOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

// The descriptors the child gets (-1: leave as inherited) and the pipe of a failed exec.
struct Plumbing {
  int in = -1, out = -1, err = -1;
  int report = -1;
};

// In the child: async-signal-safe calls only.
[[noreturn]] void BecomeChild(const Plumbing& p, const ChildConfig& config, char* const* argv,
                              char* const* envp) {
  if (config.new_process_group) setpgid(0, 0);
  if (p.in >= 0) dup2(p.in, 0);
  if (p.out >= 0) dup2(p.out, 1);
  if (p.err >= 0) dup2(p.err, 2);
  if (config.drop_rt) {
    prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0);
    const rlimit zero{0, 0};
    setrlimit(RLIMIT_RTPRIO, &zero);
  }
  if (config.before_exec != nullptr) config.before_exec();
  execve(argv[0], argv, config.env.empty() ? environ : envp);
  const int e = errno;
  [[maybe_unused]] const ssize_t ignored = write(p.report, &e, sizeof e);
  _exit(127);
}

}  // namespace

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ChildProcess::ChildProcess(const ChildConfig& config) : stop_grace_(config.stop_grace) {
  Start(config);
}

ChildProcess::ChildProcess(std::vector<std::string> argv) : stop_grace_(ChildConfig().stop_grace) {
  ChildConfig config;
  config.argv = std::move(argv);
  Start(config);
}

ChildProcess::ChildProcess(std::vector<std::string> argv, const std::filesystem::path& output)
    : stop_grace_(ChildConfig().stop_grace) {
  ChildConfig config;
  config.argv = std::move(argv);
  config.stdout_path = output.string();
  config.stderr_path = ChildConfig::kSameAsStdout;
  Start(config);
}

void ChildProcess::Start(const ChildConfig& config) {
  group_ = config.new_process_group;
  if (config.argv.empty()) {
    error_ = "no program to start (an empty argv)";
    return;
  }
  const bool capture = config.stdout_fd < 0 && config.stdout_path.empty();
  if (capture || config.stderr_path.empty()) scratch_ = MakeScratch();
  if (config.stdout_fd < 0 && config.stdout_path != "-") {
    stdout_path_ = capture ? (scratch_ / "stdout").string() : config.stdout_path;
  }
  if (config.stderr_path == ChildConfig::kSameAsStdout) {
    stderr_path_ = stdout_path_;
  } else if (config.stderr_path != "-") {
    stderr_path_ = config.stderr_path.empty() ? (scratch_ / "stderr").string() : config.stderr_path;
  }
  Plumbing p;
  int report[2] = {-1, -1};
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  p.in = config.stdin_fd >= 0 ? config.stdin_fd : null;
  p.out = config.stdout_fd >= 0 ? config.stdout_fd
                                : (stdout_path_.empty() ? -1 : OpenOutput(stdout_path_));
  const bool shared = config.stderr_path == ChildConfig::kSameAsStdout;
  p.err = shared ? p.out : (stderr_path_.empty() ? -1 : OpenOutput(stderr_path_));
  const auto owned = [&](int fd) { return fd >= 0 && fd != config.stdout_fd; };
  if ((!stdout_path_.empty() && config.stdout_fd < 0 && p.out < 0) ||
      (!stderr_path_.empty() && p.err < 0)) {
    error_ = "cannot open the output files of " + config.argv[0] + " (" + stdout_path_ + ", " +
             stderr_path_ + "): " + std::strerror(errno);
  } else if (pipe2(report, O_CLOEXEC) != 0) {
    error_ = std::string("cannot make a pipe: ") + std::strerror(errno);
  } else {
    std::vector<std::string> args = config.argv;
    std::vector<std::string> env = EnvironmentWith(config.env);
    const std::vector<char*> argv = Pointers(args);
    // Without additions the child execs with its environment as it is then, so that a
    // before_exec hook may set a variable (tests/cyclic's AskForGrpcLog does).
    const std::vector<char*> envp = Pointers(env);
    p.report = report[1];
    std::fflush(nullptr);  // what this process buffered is not written twice
    pid_ = fork();
    if (pid_ == 0) BecomeChild(p, config, argv.data(), envp.data());
    if (pid_ < 0) error_ = std::string("cannot fork: ") + std::strerror(errno);
  }
  if (report[1] >= 0) close(report[1]);
  if (pid_ > 0) {
    int exec_errno = 0;
    ssize_t n = 0;
    do {
      n = read(report[0], &exec_errno, sizeof exec_errno);
    } while (n < 0 && errno == EINTR);
    if (n == sizeof exec_errno) {
      error_ = "cannot start " + config.argv[0] + ": " + std::strerror(exec_errno);
      Reap(/*block=*/true);
      pid_ = 0;
    } else {
      started_ = true;
    }
  }
  if (pid_ < 0) pid_ = 0;
  if (report[0] >= 0) close(report[0]);
  if (null >= 0) close(null);
  if (owned(p.out)) close(p.out);
  if (!shared && owned(p.err)) close(p.err);
}

ChildProcess::~ChildProcess() {
  Stop();
  if (!scratch_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_, ignored);
  }
}

std::optional<int> ChildProcess::Reap(bool block) {
  if (reaped_) return status_;
  if (pid_ <= 0) return std::nullopt;
  int ws = 0;
  pid_t r = 0;
  do {
    r = waitpid(pid_, &ws, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  reaped_ = true;
  status_ = StatusOf(ws);
  return status_;
}

bool ChildProcess::Running() { return started_ && !Reap(/*block=*/false).has_value(); }

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (!started_) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<int> s = Reap(/*block=*/false)) return s;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool ChildProcess::Signal(int sig) {
  if (!started_ || reaped_) return false;
  return kill(group_ ? -pid_ : pid_, sig) == 0;
}

std::optional<int> ChildProcess::Stop() {
  if (!started_) return std::nullopt;
  if (reaped_) return status_;
  Signal(SIGTERM);
  if (std::optional<int> s = Wait(stop_grace_)) return s;
  Signal(SIGKILL);
  return Reap(/*block=*/true);
}

std::string ChildProcess::Stdout() const {
  return stdout_path_.empty() ? std::string() : ReadWholeFile(stdout_path_);
}

std::string ChildProcess::Stderr() const {
  return stderr_path_.empty() ? std::string() : ReadWholeFile(stderr_path_);
}

ChildResult RunChild(const ChildConfig& config, std::chrono::milliseconds timeout) {
  ChildProcess child(config);
  ChildResult r;
  r.error = child.error();
  r.status = child.Wait(timeout);
  if (!r.status) child.Stop();
  r.out = child.Stdout();
  r.err = child.Stderr();
  return r;
}

ForkedResult RunForked(const std::function<int()>& body, std::chrono::seconds timeout) {
  ForkedResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.out = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::fflush(nullptr);  // nothing buffered here is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    r.out = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    alarm(static_cast<unsigned>(timeout.count()));
    dup2(fds[1], STDOUT_FILENO);
    const int code = body();
    std::fflush(stdout);
    _exit(code);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);) {
    if (n > 0) r.out.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace rtloop::testing
