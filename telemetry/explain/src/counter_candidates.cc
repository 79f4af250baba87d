// The counter evidence's candidate threads (counter_state.h): a bounded scan of /proc/*/task/*
// (sched_getscheduler, sched_getparam and sched_getaffinity per thread) for real-time threads that
// may run on a CPU with a priority at least the task's. Candidates, not proof: the counters cannot
// say which of them ran inside the window.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "counter_state.h"

namespace rtloop::explain::internal {
namespace {

constexpr int kFifo = 1;
constexpr int kRr = 2;
constexpr int kDeadline = 6;

bool IsRealTime(int policy) noexcept {
  return policy == kFifo || policy == kRr || policy == kDeadline;
}

// The text of a small /proc file read into `buffer`; empty when it cannot be read (the thread
// exited, or belongs to a user whose files we may not read).
std::string_view ReadSmall(const std::string& path, std::array<char, 4096>* buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ssize_t n = 0;
  do {
    n = ::read(fd, buffer->data(), buffer->size());
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n > 0 ? std::string_view(buffer->data(), static_cast<std::size_t>(n)) : std::string_view();
}

bool IsNumber(const char* name) noexcept { return name[0] >= '0' && name[0] <= '9'; }

// True when thread `tid`'s affinity includes `cpu`: sched_getaffinity(), or its status file's
// Cpus_allowed_list past CPU_SETSIZE.
bool MayRunOn(const std::string& task_path, int tid, int cpu, std::array<char, 4096>* buffer) {
  if (cpu < CPU_SETSIZE) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(tid, sizeof set, &set) == 0) {
      return CPU_ISSET(static_cast<std::size_t>(cpu), &set);
    }
  }
  return CpuListContains(
      ParseTaskStatus(ReadSmall(task_path + "/status", buffer)).cpus_allowed_list, cpu);
}

struct Found {
  int tid = 0;
  int pid = 0;
  int policy = 0;
  int priority = 0;
  std::string comm;
};

// Higher first: DEADLINE, then by real-time priority.
bool Outranks(const Found& x, const Found& y) noexcept {
  const int rx = x.policy == kDeadline ? 1000 : x.priority;
  const int ry = y.policy == kDeadline ? 1000 : y.priority;
  return rx != ry ? rx > ry : x.tid < y.tid;
}

// Reads the threads of process `pid`, adding those that qualify; false once the bound is reached.
bool ScanProcess(const char* pid, int cpu, int exclude_tid, int policy, int priority,
                 std::size_t max_threads, CandidateScan* scan, std::vector<Found>* found,
                 std::array<char, 4096>* buffer) {
  const std::string task_dir = std::string("/proc/") + pid + "/task";
  DIR* tasks = ::opendir(task_dir.c_str());
  if (tasks == nullptr) return true;  // the process exited
  bool more = true;
  while (const dirent* t = ::readdir(tasks)) {
    if (!IsNumber(t->d_name)) continue;
    if (scan->threads_read >= max_threads) {
      more = false;
      break;
    }
    ++scan->threads_read;
    const int tid = std::atoi(t->d_name);
    if (tid == exclude_tid) continue;
    // Two system calls per thread (no privilege needed); files only for the few that qualify.
    const int cand_policy = ::sched_getscheduler(tid);
    if (cand_policy < 0) continue;  // exited
    sched_param param{};
    if (::sched_getparam(tid, &param) != 0) continue;
    const int cand_policy_bare = cand_policy & ~SCHED_RESET_ON_FORK;
    if (!MayPreempt(cand_policy_bare, param.sched_priority, policy, priority)) continue;
    if (!MayRunOn(task_dir + "/" + t->d_name, tid, cpu, buffer)) continue;
    TaskStat stat;
    if (!ParseTaskStat(ReadSmall(task_dir + "/" + t->d_name + "/stat", buffer), &stat)) continue;
    Found f{tid, std::atoi(pid), cand_policy_bare, param.sched_priority, std::string(stat.comm)};
    found->push_back(std::move(f));
  }
  ::closedir(tasks);
  return more;
}

}  // namespace

bool MayPreempt(int cand_policy, int cand_priority, int policy, int priority) noexcept {
  if (!IsRealTime(cand_policy)) return false;
  if (cand_policy == kDeadline) return true;
  if (policy == kDeadline) return false;
  if (policy == kFifo || policy == kRr) return cand_priority >= priority;
  return true;  // any real-time thread runs before a SCHED_OTHER/BATCH/IDLE one
}

CandidateScan ScanCandidates(int cpu, int exclude_tid, int policy, int priority,
                             std::size_t max_threads, std::size_t max_candidates) {
  CandidateScan scan;
  std::vector<Found> found;
  std::array<char, 4096> buffer{};
  if (DIR* proc = ::opendir("/proc")) {
    while (const dirent* p = ::readdir(proc)) {
      if (!IsNumber(p->d_name)) continue;
      if (!ScanProcess(p->d_name, cpu, exclude_tid, policy, priority, max_threads, &scan, &found,
                       &buffer)) {
        scan.bound_reached = true;
        break;
      }
    }
    ::closedir(proc);
  }
  std::sort(found.begin(), found.end(), Outranks);
  if (found.size() > max_candidates) {
    scan.not_named = found.size() - max_candidates;
    found.resize(max_candidates);
  }
  for (const Found& f : found) {
    Cause c;
    c.kind = CauseKind::kThread;
    c.name = f.comm;
    c.id = f.tid;
    const std::string sched = f.policy == kDeadline
                                  ? PolicyName(f.policy)
                                  : PolicyName(f.policy) + " " + std::to_string(f.priority);
    c.detail = sched + ", may run on CPU " + std::to_string(cpu) + ", pid " +
               std::to_string(f.pid) + " (a candidate, not proof it ran)";
    scan.causes.push_back(std::move(c));
  }
  return scan;
}

}  // namespace rtloop::explain::internal
