#include "process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "bench_util.h"

extern char** environ;

namespace rtloop::bench {
namespace {

constexpr const char* kCgroupRoots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
using Clock = std::chrono::steady_clock;
using nlohmann::json;

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool WriteSmall(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  return close(fd) == 0 && ok;
}

// A fresh cgroup v2 directory with cgroup.kill, or "" when this machine has none we may use.
std::string MakeCgroup(const std::string& tag) {
  for (const char* root : kCgroupRoots) {
    const std::string base = root;
    struct stat st {};
    if (stat((base + "/cgroup.procs").c_str(), &st) != 0) continue;
    if (stat((base + "/cgroup.controllers").c_str(), &st) != 0) continue;  // v2 only
    std::string dir = base + "/rtloop-bench-" + tag;
    if (mkdir(dir.c_str(), 0755) != 0) continue;
    if (stat((dir + "/cgroup.kill").c_str(), &st) != 0) {
      rmdir(dir.c_str());
      continue;
    }
    return dir;
  }
  return "";
}

// pid, pgid and state of /proc/PID/stat.
bool ReadStat(pid_t pid, pid_t* pgid, char* state) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const std::size_t paren = line.rfind(')');
  if (paren == std::string::npos) return false;
  std::istringstream f(line.substr(paren + 2));
  long ppid = 0, group = 0;
  f >> *state >> ppid >> group;
  *pgid = static_cast<pid_t>(group);
  return static_cast<bool>(f);
}

// The start time of `pid` (clock ticks since boot, /proc/PID/stat field 22), 0 when it is gone or
// a zombie: a pid with its start time names one process, even once the pid is reused.
unsigned long long StartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (pid <= 0 || !std::getline(in, line)) return 0;
  const std::size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return 0;
  std::istringstream f(line.substr(paren + 2));
  std::string field;
  f >> field;  // field 3, the state
  if (field == "Z" || field == "X") return 0;
  for (int i = 4; i < 22 && f >> field; ++i) {
  }
  unsigned long long start = 0;
  f >> start;
  return start;
}

// The process's environment holds RTLOOP_BENCH_RUN=<tag>.
bool Tagged(pid_t pid, const std::string& tag) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env(1u << 20, '\0');
  in.read(env.data(), static_cast<std::streamsize>(env.size()));
  env.resize(static_cast<std::size_t>(in.gcount()));
  const std::string want = "RTLOOP_BENCH_RUN=" + tag;
  for (std::size_t at = env.find(want); at != std::string::npos; at = env.find(want, at + 1)) {
    const std::size_t end = at + want.size();
    if ((at == 0 || env[at - 1] == '\0') && (end == env.size() || env[end] == '\0')) return true;
  }
  return false;
}

// Live (non-zombie) members of process group `pgid` and of `cgroup`, except `self` and the group's
// leader (the guardian, which the keeper spares).
std::vector<pid_t> Members(pid_t pgid, const std::string& cgroup, pid_t self) {
  std::vector<pid_t> out;
  auto add = [&](pid_t pid) {
    if (pid == self || pid == pgid) return;
    for (pid_t p : out) {
      if (p == pid) return;
    }
    pid_t g = 0;
    char state = 0;
    if (ReadStat(pid, &g, &state) && state != 'Z' && state != 'X') out.push_back(pid);
  };
  if (DIR* dir = opendir("/proc")) {
    while (const dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0') continue;
      pid_t g = 0;
      char state = 0;
      if (ReadStat(static_cast<pid_t>(pid), &g, &state) && g == pgid) add(static_cast<pid_t>(pid));
    }
    closedir(dir);
  }
  if (!cgroup.empty()) {
    std::ifstream procs(cgroup + "/cgroup.procs");
    long pid = 0;
    while (procs >> pid) add(static_cast<pid_t>(pid));
  }
  return out;
}

// SIGTERM to every member, SIGKILL (and cgroup.kill) after `grace_ms`, until none is left or
// ~3 s more passed. `self` (the guardian) is spared. True when nothing is left.
bool KillMembers(pid_t pgid, const std::string& cgroup, pid_t self, int grace_ms) {
  for (pid_t p : Members(pgid, cgroup, self)) kill(p, SIGTERM);
  for (int waited = 0; waited < grace_ms; waited += 20) {
    if (Members(pgid, cgroup, self).empty()) return true;
    SleepMs(20);
  }
  for (int round = 0; round < 150; ++round) {
    if (!cgroup.empty()) WriteSmall(cgroup + "/cgroup.kill", "1");
    const std::vector<pid_t> left = Members(pgid, cgroup, self);
    if (left.empty()) return true;
    for (pid_t p : left) kill(p, SIGKILL);
    SleepMs(20);
  }
  return Members(pgid, cgroup, self).empty();
}

// Removes the run's cgroup once its last process is gone. rmdir refuses (EBUSY) while a killed
// member has not finished exiting, which under a loaded machine (stress-ng's workers being reaped,
// a sanitizer build beside other tests) took more than the 2 s this once allowed: the cgroup then
// stayed for good. Retries for up to 10 s, killing whatever is still in it each quarter second.
// True when it is gone (or was never made).
bool RemoveCgroup(const std::string& cgroup) {
  if (cgroup.empty()) return true;
  for (int i = 0; i < 500; ++i) {  // bounded: 10 s
    if (rmdir(cgroup.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    if (i % 12 == 11) WriteSmall(cgroup + "/cgroup.kill", "1");
    SleepMs(20);
  }
  return false;
}

// Clean-up must not starve under the load it cleans up: among 750 hackbench processes a nice-0
// guardian left a killed bench's load running for 2-6 s (bench/scenarios/README.md). The lowest
// real-time priority (below every measurement thread; it runs only once the bench is done or
// gone), else nice -20 (an RT group budget of 0 refuses SCHED_FIFO); best effort, as either only
// shortens the clean-up.
void RaiseForCleanUp() {
  sched_param lowest{};
  lowest.sched_priority = sched_get_priority_min(SCHED_FIFO);
  if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &lowest) != 0) {
    (void)setpriority(PRIO_PROCESS, 0, -20);
  }
}

}  // namespace

std::string LoadStateDir() {
  const char* dir = std::getenv("RTLOOP_BENCH_STATE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/run/rtloop-bench";
}

Result<std::unique_ptr<LoadGroup>> LoadGroup::Create(const LoadGroupConfig& config) {
  std::unique_ptr<LoadGroup> g(new LoadGroup());
  g->config_ = config;
  if (config.use_cgroup) g->cgroup_ = MakeCgroup(config.tag);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError(errno, "cannot create the guardian pipe");
  if (!config.state_dir.empty() &&
      (mkdir(config.state_dir.c_str(), 0755) == 0 || errno == EEXIST)) {
    g->state_path_ = config.state_dir + "/" + config.tag + ".json";
  }
  std::vector<std::string> args = {"rtloop-bench",
                                   "__guardian",
                                   "3",
                                   g->cgroup_.empty() ? "-" : g->cgroup_,
                                   g->state_path_.empty() ? "-" : g->state_path_,
                                   std::to_string(config.deadline_s),
                                   "0"};
  for (const RestoreEntry& r : config.restore) args.push_back(r.path + "=" + r.value);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return ErrnoError(err, "cannot start the load guardian");
  }
  if (pid == 0) {
    // The guardian leads its own process group (the loads join it) in the bench's session, so a
    // terminal's Ctrl-C reaches the bench, not the loads or the guardian.
    setpgid(0, 0);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    // The pipe's read end becomes fd 3 and the held file fd 4 (through fds >= 10, so that
    // neither overwrites the other; the new descriptors have no O_CLOEXEC).
    const int pipe_tmp = fcntl(fds[0], F_DUPFD, 10);
    const int hold_tmp = config.hold_fd >= 0 ? fcntl(config.hold_fd, F_DUPFD, 10) : -1;
    dup2(pipe_tmp, 3);
    if (hold_tmp >= 0) dup2(hold_tmp, 4);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0);
    close_range(hold_tmp >= 0 ? 5 : 4, ~0u, 0);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[0]);
  setpgid(pid, pid);  // also from here, so the group exists before the first Spawn
  g->guardian_ = pid;
  g->pgid_ = pid;
  g->pipe_write_ = fds[1];
  g->WriteState();
  return g;
}

LoadGroup::~LoadGroup() {
  const bool clean = StopAll(500).ok();
  if (pipe_write_ >= 0) close(pipe_write_);
  if (guardian_ > 0) {
    // The guardian sees EOF, checks, restores and removes the cgroup: wait for it (bounded).
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      const pid_t r = waitpid(guardian_, &status, WNOHANG);
      if (r == guardian_ || r < 0) break;
      SleepMs(10);
    }
  }
  // All undone (the keeper may be later): nothing left on record.
  if (clean && !state_path_.empty()) unlink(state_path_.c_str());
}

Result<int> LoadGroup::Spawn(const std::vector<std::string>& argv, const std::vector<int>& cpus,
                             const std::string& log_path) {
  if (argv.empty()) return InvalidArgumentError("empty load command");
  const std::string path = FindInPath(argv[0]);
  if (path.empty()) return NotFoundError(MissingToolMessage(argv[0]));
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return ErrnoError(errno, "cannot create " + log_path);
  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "RTLOOP_BENCH_RUN=", 17) != 0) env.emplace_back(*e);
  }
  env.push_back("RTLOOP_BENCH_RUN=" + config_.tag);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  const std::string procs = cgroup_.empty() ? std::string() : cgroup_ + "/cgroup.procs";
  const pid_t parent = getpid();
  const pid_t pgid = pgid_;

  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(log);
    return ErrnoError(err, "cannot start " + argv[0]);
  }
  if (pid == 0) {
    setpgid(0, pgid);
    if (!procs.empty()) {
      const int fd = open(procs.c_str(), O_WRONLY);
      if (fd >= 0) {
        if (write(fd, "0", 1) < 0) {
          // Not fatal: the process group still holds it.
        }
        close(fd);
      }
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (!cpus.empty()) sched_setaffinity(0, sizeof set, &set);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(log, 1);
    dup2(log, 2);
    execve(path.c_str(), cargv.data(), envp.data());
    _exit(127);
  }
  close(log);
  setpgid(pid, pgid);  // may fail once the child exec'd: it did it itself
  loads_.push_back({pid, false, 0});
  return static_cast<int>(loads_.size() - 1);
}

bool LoadGroup::Alive(int index) {
  Load& l = loads_[static_cast<std::size_t>(index)];
  if (l.reaped) return false;
  int status = 0;
  const pid_t r = waitpid(l.pid, &status, WNOHANG);
  if (r == 0) return true;
  l.reaped = true;
  l.status = status;
  return false;
}

std::string LoadGroup::GuardianEnded() {
  int status = 0;
  if (guardian_ <= 0 || waitpid(guardian_, &status, WNOHANG) != guardian_) return "";
  guardian_ = -1;  // reaped: the destructor does not wait for it
  return WaitStatusText(status);
}

std::string LoadGroup::ExitText(int index) const {
  const Load& l = loads_[static_cast<std::size_t>(index)];
  return l.reaped ? WaitStatusText(l.status) : "running";
}

void LoadGroup::WriteState() {
  if (state_path_.empty()) return;
  json restore = json::array();
  for (const RestoreEntry& r : config_.restore) {
    restore.push_back({{"path", r.path}, {"value", r.value}});
  }
  const json state = {{"tag", config_.tag},
                      {"bench_pid", getpid()},
                      {"bench_start", StartTime(getpid())},
                      {"guardian_pid", guardian_},
                      {"guardian_start", StartTime(guardian_)},
                      {"pgid", pgid_},
                      {"cgroup", cgroup_},
                      {"restore", restore}};
  if (!WriteTextFile(state_path_, state.dump(1) + "\n").ok()) state_path_.clear();
}

std::vector<pid_t> LoadGroup::GroupPids() const { return Members(pgid_, cgroup_, guardian_); }

int LoadGroup::ProcessCount() const { return static_cast<int>(GroupPids().size()); }

std::string LoadGroup::Mechanism() const {
  std::string m = "process group " + std::to_string(pgid_);
  if (!cgroup_.empty()) m += " and cgroup " + cgroup_;
  return m + ", guardian pid " + std::to_string(guardian_) +
         ", tag RTLOOP_BENCH_RUN=" + config_.tag;
}

Status LoadGroup::StopAll(int grace_ms) {
  const bool clean = KillMembers(pgid_, cgroup_, guardian_, grace_ms);
  for (std::size_t i = 0; i < loads_.size(); ++i) {
    Load& l = loads_[i];
    if (l.reaped) continue;
    int status = 0;
    for (int k = 0; k < 100; ++k) {
      const pid_t r = waitpid(l.pid, &status, WNOHANG);
      if (r != 0) {
        l.reaped = true;
        l.status = status;
        break;
      }
      SleepMs(10);
    }
  }
  if (!clean) {
    return InternalError("load processes are still running after SIGKILL (" + Mechanism() + ")");
  }
  return Status::Ok();
}

namespace {

// The guardian starts the keeper: the same clean-up on the same pipe, by a process in a group of
// its own (so that neither kills the other, and a kill of the guardian does not reach it), which
// also stops the loads at the deadline.
void StartKeeper(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  args[1] = "__keeper";
  args[6] = std::to_string(getpgrp());
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  if (fork() == 0) {
    setpgid(0, 0);
    execv("/proc/self/exe", cargv.data());
    _exit(127);
  }
}

// Waits for EOF on `fd` (the bench ended). With a deadline (steady time), stops the loads once it
// passed and goes on waiting.
void WaitForTheEnd(int fd, std::optional<Clock::time_point> deadline, pid_t pgid,
                   const std::string& cgroup) {
  char buf[64];
  for (;;) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) {
        (void)KillMembers(pgid, cgroup, getpid(), 1000);
        deadline.reset();
        continue;
      }
      timeout_ms = static_cast<int>(std::min<long long>(left, 60'000));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR) return;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
  }
}

}  // namespace

int LoadGroup::GuardianMain(int argc, const char* const* argv) {
  // argv: rtloop-bench __guardian|__keeper FD CGROUP STATE DEADLINE_S PGID [PATH=VALUE ...]
  if (argc < 7) return kExitUsage;
  const bool keeper = std::strcmp(argv[1], "__keeper") == 0;
  const int fd = std::atoi(argv[2]);
  const std::string cgroup = std::string(argv[3]) == "-" ? "" : argv[3];
  const std::string state = std::string(argv[4]) == "-" ? "" : argv[4];
  const long long deadline_s = std::atoll(argv[5]);
  const pid_t pgid = keeper ? static_cast<pid_t>(std::atoi(argv[6])) : getpgrp();
  if (!keeper) StartKeeper(argc, argv);
  RaiseForCleanUp();  // now: it sleeps until the end, then must wake up promptly
  std::optional<Clock::time_point> deadline;
  if (keeper && deadline_s > 0) deadline = Clock::now() + std::chrono::seconds(deadline_s);
  WaitForTheEnd(fd, deadline, pgid, cgroup);
  // The bench is gone or done: settings first (quick), then the loads.
  for (int i = 7; i < argc; ++i) {
    const std::string entry = argv[i];
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) WriteSmall(entry.substr(0, eq), entry.substr(eq + 1));
  }
  const bool clean = KillMembers(pgid, cgroup, getpid(), 1000) && RemoveCgroup(cgroup);
  if (clean && !state.empty()) unlink(state.c_str());  // all undone: nothing on record
  return clean ? kExitOk : kExitFail;
}

namespace {

// The processes a killed run left: its cgroup's, its process group's when a member still carries
// the run's tag (else the group id may name someone else's group by now), and any tagged one.
std::vector<pid_t> LeftBehind(const std::string& tag, pid_t pgid, const std::string& cgroup) {
  std::vector<pid_t> group = Members(pgid, cgroup, getpid());
  const bool ours =
      std::any_of(group.begin(), group.end(), [&](pid_t p) { return Tagged(p, tag); });
  std::vector<pid_t> out;
  for (pid_t p : group) {
    pid_t g = 0;
    char st = 0;
    if (ours || (ReadStat(p, &g, &st) && g != pgid)) out.push_back(p);  // cgroup members stay
  }
  if (DIR* dir = opendir("/proc")) {
    while (const dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || pid == getpid()) continue;
      const auto p = static_cast<pid_t>(pid);
      if (std::find(out.begin(), out.end(), p) == out.end() && StartTime(p) != 0 &&
          Tagged(p, tag)) {
        out.push_back(p);
      }
    }
    closedir(dir);
  }
  return out;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Undoes one killed run's record; what it undid, one line each.
std::vector<std::string> UndoRun(const json& s, const std::string& state_path) {
  const std::string tag = s.value("tag", "");
  const auto pgid = static_cast<pid_t>(s.value("pgid", 0));
  const std::string cgroup = s.value("cgroup", "");
  const std::string run = "a killed run (RTLOOP_BENCH_RUN=" + tag + ", bench pid " +
                          std::to_string(s.value("bench_pid", 0)) + ") left ";
  std::vector<std::string> said;
  if (s.contains("restore") && s["restore"].is_array()) {
    for (const json& r : s["restore"]) {
      const std::string path = r.value("path", "");
      const std::string value = r.value("value", "");
      std::string now = FirstLine(path);
      std::string want = value.substr(0, value.find('\n'));
      if (path.empty() || now == want) continue;
      if (WriteSmall(path, value)) {
        said.push_back(run + path + " at '" + now + "': restored '" + want + "'");
      } else {
        said.push_back(run + path + " at '" + now + "': cannot restore '" + want + "' (" +
                       std::strerror(errno) + ")");
      }
    }
  }
  std::vector<pid_t> left =
      pgid > 1 || !cgroup.empty() ? LeftBehind(tag, pgid, cgroup) : std::vector<pid_t>{};
  if (!left.empty()) {
    for (pid_t p : left) kill(p, SIGKILL);
    if (!cgroup.empty()) WriteSmall(cgroup + "/cgroup.kill", "1");
    bool gone = false;
    for (int i = 0; i < 250 && !gone; ++i) {  // bounded: 5 s
      gone = std::none_of(left.begin(), left.end(), [](pid_t p) { return StartTime(p) != 0; });
      if (!gone) SleepMs(20);
    }
    said.push_back(run + std::to_string(left.size()) +
                   " processes running: " + (gone ? "killed" : "killed, some are still there"));
  }
  struct stat st {};
  if (!cgroup.empty() && stat(cgroup.c_str(), &st) == 0) {
    (void)RemoveCgroup(cgroup);
    said.push_back(run + "cgroup " + cgroup + ": " +
                   (stat(cgroup.c_str(), &st) != 0 ? "removed" : "cannot remove it"));
  }
  unlink(state_path.c_str());
  return said;
}

// RaiseForCleanUp for one scope of the calling thread, its policy and nice value put back after:
// the doctor undoing a killed hackbench run scans /proc and kills ~750 processes that compete with
// it (a nice-0 doctor took over 30 s to do so under TSan on a loaded CI machine).
class CleanUpPriority {
 public:
  CleanUpPriority() : policy_(sched_getscheduler(0)) {
    errno = 0;
    nice_ = getpriority(PRIO_PROCESS, 0);
    saved_ = policy_ >= 0 && sched_getparam(0, &param_) == 0 && errno == 0;
    RaiseForCleanUp();
  }
  ~CleanUpPriority() {
    if (!saved_) return;
    (void)sched_setscheduler(0, policy_, &param_);
    (void)setpriority(PRIO_PROCESS, 0, nice_);
  }
  CleanUpPriority(const CleanUpPriority&) = delete;
  CleanUpPriority& operator=(const CleanUpPriority&) = delete;

 private:
  int policy_;
  int nice_ = 0;
  sched_param param_{};
  bool saved_ = false;
};

}  // namespace

std::vector<std::string> LoadGroup::UndoKilledRuns(const std::string& state_dir) {
  std::vector<std::string> said;
  DIR* dir = opendir(state_dir.c_str());
  if (dir == nullptr) return said;
  std::vector<std::string> files;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") files.push_back(name);
  }
  closedir(dir);
  for (const std::string& name : files) {
    const std::string path = state_dir + "/" + name;
    Result<std::string> text = ReadTextFile(path, 1u << 20);
    if (!text.ok()) continue;
    const json s = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!s.is_object()) {
      said.push_back("a run's state file " + path + " is unreadable: removed");
      unlink(path.c_str());
      continue;
    }
    // A run whose bench or guardian is there is running or being cleaned up by its own.
    const auto alive = [&](const char* pid, const char* start) {
      const unsigned long long t = s.value(start, 0ULL);
      return t != 0 && StartTime(static_cast<pid_t>(s.value(pid, 0))) == t;
    };
    if (alive("bench_pid", "bench_start") || alive("guardian_pid", "guardian_start")) continue;
    const CleanUpPriority raised;
    for (std::string& line : UndoRun(s, path)) said.push_back(std::move(line));
  }
  return said;
}

}  // namespace rtloop::bench
