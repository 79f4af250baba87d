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
// Should the guardian be killed too, a keeper (`rtloop-bench __keeper`, started by the guardian in
// a process group of its own) does the same on the same pipe: it outlives both the bench and the
// guardian. It also gives every load its end: `deadline_s` after the start it stops the loads
// whatever else happened (hackbench -l -1, iperf3 -s and custom commands have none of their own).
// And should all three be killed, what the run changed is on record: a state file
// (<state_dir>/<tag>.json: the bench's and guardian's pids and start times, the process group, the
// cgroup, the --tune values to restore), written before anything is changed and removed once all
// is undone. UndoKilledRuns() (called by the next `rtloop-bench run` and by `doctor`) undoes the
// runs whose bench and guardian are gone and says what it undid.
//
// Every load's environment carries RTLOOP_BENCH_RUN=<tag>, so tests (and people) can find the
// run's processes in /proc.
//
// Threading: one thread (the bench's main thread). Not RT-safe: fork/exec, files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

// Where runs record what they changed: $RTLOOP_BENCH_STATE_DIR when set (tests keep their runs
// apart with it), else /run/rtloop-bench (gone at reboot, when nothing is left anyway).
std::string LoadStateDir();

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
  std::int64_t deadline_s = 0;  // >0: the keeper stops every load this long after the start
  std::string state_dir = LoadStateDir();  // "" (or not creatable): no state file
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
  // The guardian's exit status text once it ended before the bench is done (it was killed), else
  // "". Reaps it.
  std::string GuardianEnded();
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

  // The guardian's and the keeper's main (rtloop-bench __guardian|__keeper FD CGROUP STATE
  // DEADLINE_S PGID [PATH=VALUE...]): waits for EOF on FD (the keeper: also stops the loads at
  // the deadline), restores, kills, removes the cgroup and the state file, exits 0.
  static int GuardianMain(int argc, const char* const* argv);
  // Undoes what runs killed with their guardian left (state files under `state_dir` whose bench
  // and guardian are gone): stops their processes, restores their --tune values, removes their
  // cgroup and state file. One line per thing undone ("a killed run (...) left ...: ..."); empty
  // when there was nothing. While it undoes a run the calling thread runs at the lowest SCHED_FIFO
  // priority (else nice -20), as the guardian does, and is put back after.
  static std::vector<std::string> UndoKilledRuns(const std::string& state_dir = LoadStateDir());

 private:
  struct Load {
    pid_t pid = -1;
    bool reaped = false;
    int status = 0;
  };
  LoadGroup() = default;
  std::vector<pid_t> GroupPids() const;
  void WriteState();  // the run's state file, before anything is changed

  LoadGroupConfig config_;
  pid_t guardian_ = -1;
  int pipe_write_ = -1;
  pid_t pgid_ = -1;  // the guardian's own group: loads join it
  std::string cgroup_;
  std::string state_path_;  // the run's state file, "" when none
  std::vector<Load> loads_;
};

}  // namespace rtloop::bench
