// LoadGroup: the load generators of a run (stress-ng, hackbench, iperf3, ...) as child processes
// that can never outlive the bench.
//
//   Result<std::unique_ptr<LoadGroup>> g = LoadGroup::Create({.tag = "run-42"});
//   (*g)->Spawn({"stress-ng", "-c", "2"}, /*cpus=*/{0}, "out/load-0.log");
//   (*g)->Alive(0);          // still running?
//   (*g)->ProcessCount();    // processes in the group now (workers included)
//   (*g)->StopAll();         // SIGTERM, then SIGKILL after a grace period; waits
//
// How nothing is left behind: every load runs in one process group, and — when the machine has a
// writable cgroup v2 hierarchy with cgroup.kill — in a fresh cgroup as well (loads that start
// their own sessions are caught there). A guardian process (this executable re-run as
// `rtloop-bench __guardian`) is started first; it holds the read end of a pipe whose only write
// end is the bench's. When the bench ends in any way (normal exit, an error, Ctrl-C, SIGKILL),
// the pipe closes and the guardian kills the group and the cgroup, restores the settings it was
// given (--tune), removes the cgroup and exits. Direct children also get PR_SET_PDEATHSIG.
//
// Every load's environment carries RTLOOP_BENCH_RUN=<tag>, so tests (and people) can find the
// run's processes in /proc.
//
// Threading: one thread (the bench's main thread). Not RT-safe: fork/exec, files.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

// A file value the guardian writes back when the bench ends (the --tune settings).
struct RestoreEntry {
  std::string path;
  std::string value;
};

struct LoadGroupConfig {
  std::string tag;                    // RTLOOP_BENCH_RUN value
  std::vector<RestoreEntry> restore;  // written by the guardian at the end
  bool use_cgroup = true;             // try cgroup v2 (falls back to the process group alone)
  int hold_fd = -1;  // kept open by the guardian too (the --tune lock): held until it restored
};

class LoadGroup {
 public:
  // Starts the guardian (and creates the cgroup). Not RT-safe.
  static Result<std::unique_ptr<LoadGroup>> Create(const LoadGroupConfig& config);
  ~LoadGroup();  // StopAll() and the guardian's end
  LoadGroup(const LoadGroup&) = delete;
  LoadGroup& operator=(const LoadGroup&) = delete;

  // Starts argv[0] (looked up in PATH) with stdout and stderr appended to `log_path`, on `cpus`
  // (empty: any). Returns the load's index. A missing tool names its Debian package.
  Result<int> Spawn(const std::vector<std::string>& argv, const std::vector<int>& cpus,
                    const std::string& log_path);
  // The load's process is still running (reaps it when it exited).
  bool Alive(int index);
  // Its exit status text ("exit 1", "signal 9 (SIGKILL)"), once it ended.
  std::string ExitText(int index) const;
  pid_t pid(int index) const { return loads_[static_cast<std::size_t>(index)].pid; }
  // Processes of the group now (the loads and all their descendants).
  int ProcessCount() const;
  // "cgroup /sys/fs/cgroup/unified/rtloop-bench-..." or "process group 1234".
  std::string Mechanism() const;
  // Stops every load: SIGTERM to the group (and cgroup), SIGKILL after `grace_ms`; waits until
  // none is left (bounded). Returns an error when processes are still there.
  Status StopAll(int grace_ms = 2000);

  // The guardian's main (rtloop-bench __guardian FD PGID CGROUP [PATH=VALUE...]): waits for EOF on
  // FD, kills, restores, removes, exits 0.
  static int GuardianMain(int argc, const char* const* argv);

 private:
  struct Load {
    pid_t pid = -1;
    bool reaped = false;
    int status = 0;
  };
  LoadGroup() = default;
  std::vector<pid_t> GroupPids() const;

  LoadGroupConfig config_;
  pid_t guardian_ = -1;
  int pipe_write_ = -1;
  pid_t pgid_ = -1;  // the guardian's own group: loads join it
  std::string cgroup_;
  std::vector<Load> loads_;
};

}  // namespace rtloop::bench
