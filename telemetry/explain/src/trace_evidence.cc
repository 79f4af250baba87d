// TraceEvidence (trace_evidence.h): the instance's life (Open, the destructor), Poll(), which moves
// the kernel's pages into the in-memory history (trace_history.cc), and Explain(), which decodes
// one CPU's history around the window and turns the attribution (trace_attribute.cc) into causes.
//
// Example and thread contract: trace_evidence.h (Explain() from one non-RT thread at a time).
#include "rtloop/explain/trace_evidence.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "rtloop/framework/system_info.h"
#include "trace_internal.h"

namespace rtloop::explain {
namespace {

using trace::WriteKnob;

constexpr int kMaxBufferKb = 1 << 20;  // 1 GiB per CPU: beyond it is a typo
constexpr int kDefaultHistoryKb = 1024;

// Events to enable: sched_switch is required (without it nothing can be attributed to a thread);
// the others are optional (a kernel without them gives coarser records, and a note says so).
constexpr const char* kRequiredEvent = "sched/sched_switch";
// timer/hrtimer_expire_exit is left off and hrtimer_expire_entry keeps hrtimer_wakeup expiries
// only: a quarter fewer events on a CPU running 1 kHz tasks, so the same memory covers more time.
constexpr const char* kOptionalEvents[] = {
    "sched/sched_waking", "irq/irq_handler_entry", "irq/irq_handler_exit",
    "irq/softirq_entry",  "irq/softirq_exit",      "timer/hrtimer_expire_entry",
};
constexpr const char* kHrtimerFilter = "function.function == hrtimer_wakeup";
// Explain() decodes from this long before the window to this long after it: enough for the IRQ
// and softirq nesting, the running thread's switch-in and the task's own events, a fraction of
// the history.
constexpr std::int64_t kLookbackNs = 100'000'000;
// How far from W_k the task's own events (its switch-in, its timer, its switch-out after Step())
// may lie, beyond the window's length, for the read to be taken as covering the window.
constexpr std::int64_t kTaskEventSlackNs = 2'000'000;

std::int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

std::string Seconds(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(ns) / 1e9);
  return buf;
}

Status ValidateConfig(const TraceConfig& config, const std::vector<int>& online) {
  if (config.buffer_size_kb <= 0 || config.buffer_size_kb > kMaxBufferKb) {
    return InvalidArgumentError("trace buffer_size_kb " + std::to_string(config.buffer_size_kb) +
                                " is out of range: give 1.." + std::to_string(kMaxBufferKb) +
                                " KiB per CPU");
  }
  if (config.history_kb < 0 || config.history_kb > kMaxBufferKb) {
    return InvalidArgumentError("trace history_kb " + std::to_string(config.history_kb) +
                                " is out of range: give 0 (the default) or 1.." +
                                std::to_string(kMaxBufferKb) + " KiB per CPU");
  }
  for (int cpu : config.cpus) {
    if (std::find(online.begin(), online.end(), cpu) == online.end()) {
      return InvalidArgumentError("cannot trace CPU " + std::to_string(cpu) +
                                  ": it is not online (online CPUs: " + FormatCpuList(online) +
                                  "); give the CPUs the tasks run on");
    }
  }
  const std::string& name = config.instance;
  if (name.find('/') != std::string::npos || name == "." || name == "..") {
    return InvalidArgumentError("trace instance name '" + name +
                                "' is not a plain directory name: drop the '/'");
  }
  return Status::Ok();
}

// Trace instances one process may hold open at once (TraceEvidence objects alive together).
constexpr int kMaxInstancesPerProcess = 16;

bool InstanceExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status MakeInstance(const std::string& tracefs, const std::string& path) {
  if (mkdir(path.c_str(), 0750) == 0) return Status::Ok();
  const int err = errno;
  if (err == EEXIST) {
    return ErrnoError(err, "cannot create the trace instance " + path,
                      "another TraceEvidence uses it: give TraceConfig::instance another name (or "
                      "leave it empty: rtloop-<pid>[-N]), or rmdir it if it is left over");
  }
  if (err == ENOENT) {
    return ErrnoError(err, "cannot create the trace instance " + path,
                      "this kernel's tracefs at " + tracefs +
                          " has no instances/ directory (before 3.10?): the counters are used");
  }
  return ErrnoError(err, "cannot create the trace instance " + path,
                    "run as root (CAP_SYS_ADMIN), or give this user tracefs access (mount -o "
                    "remount,gid=GROUP,mode=0770 " +
                        tracefs + ")");
}

// A thread's comm from /proc when no event in the history named it (it ran since before the
// history began and never switched): binary records carry the current task's pid only.
std::string LiveComm(int tid) {
  std::string comm;
  if (!trace::ReadWhole("/proc/" + std::to_string(tid) + "/comm", &comm).ok()) return "<...>";
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() ? "<...>" : comm;
}

void AddCauses(const trace::Attribution& a, const OutlierWindow& window, OutlierRecord* record) {
  for (const trace::ThreadRun& run : a.threads) {
    if (run.ns <= 0) continue;
    Cause c;
    c.kind = CauseKind::kThread;
    c.name = run.comm.empty() ? LiveComm(run.tid) : run.comm;
    c.ns = run.ns;
    c.count = run.count;
    c.id = run.tid;
    c.detail = trace::ThreadDetail(run.tid, run.comm, run.prio);
    record->causes.push_back(std::move(c));
  }
  for (const Cause& c : a.interrupts) {
    if (c.ns > 0) record->causes.push_back(c);
  }
  if (a.timer_delay_ns > 0) {
    Cause c;
    c.kind = CauseKind::kTimerDelay;
    c.name = "timer";
    c.ns = a.timer_delay_ns;
    c.count = 1;
    c.detail = "hrtimer_wakeup expired " +
               std::to_string((a.expiry_ns - window.release_ns) / 1000) + " us after E_k";
    record->causes.push_back(std::move(c));
  }
}

}  // namespace

TraceEvidence::TraceEvidence(std::string name, std::string path, int buffer_kb, int history_kb,
                             std::vector<int> cpus)
    : name_(std::move(name)),
      path_(std::move(path)),
      buffer_kb_(buffer_kb),
      history_kb_(history_kb > 0 ? history_kb : std::max(kDefaultHistoryKb, buffer_kb)),
      cpus_(std::move(cpus)) {
  errors_.resize(cpus_.size());
}

TraceEvidence::~TraceEvidence() {
  (void)WriteKnob(path_ + "/tracing_on", "0");
  history_.reset();  // its open trace_pipe_raw files would keep the instance busy
  rmdir(path_.c_str());
}

Result<std::unique_ptr<TraceEvidence>> TraceEvidence::Open(const TraceConfig& config) {
  const std::vector<int> online = ReadSystemInfo().online_cpus;
  RTLOOP_RETURN_IF_ERROR(ValidateConfig(config, online));
  std::vector<int> cpus = config.cpus.empty() ? online : config.cpus;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  Result<std::string> tracefs = trace::FindOrMountTracefs();
  if (!tracefs.ok()) return tracefs.status();
  std::vector<std::string> notes = trace::RemoveStaleInstances(*tracefs);
  // The default name is the process's, rtloop-<pid>; a second TraceEvidence open in the same
  // process at the same time (two Runtimes) takes rtloop-<pid>-2, -3... A name the caller gives
  // is taken as it is, or refused.
  std::string name = config.instance;
  std::string path;
  Status made;
  for (int n = 1; n <= kMaxInstancesPerProcess; ++n) {
    if (config.instance.empty()) {
      name = "rtloop-" + std::to_string(getpid()) + (n > 1 ? "-" + std::to_string(n) : "");
    }
    path = *tracefs + "/instances/" + name;
    made = MakeInstance(*tracefs, path);
    if (made.ok() || !config.instance.empty() || !InstanceExists(path)) break;
  }
  RTLOOP_RETURN_IF_ERROR(made);
  // From here the destructor removes the instance, whatever fails next.
  std::unique_ptr<TraceEvidence> t(
      new TraceEvidence(name, path, config.buffer_size_kb, config.history_kb, cpus));
  t->notes_ = std::move(notes);
  RTLOOP_RETURN_IF_ERROR(t->Configure(*tracefs));
  return t;
}

Status TraceEvidence::Configure(const std::string& tracefs) {
  RTLOOP_RETURN_IF_ERROR(WriteKnob(path_ + "/tracing_on", "0"));
  RTLOOP_RETURN_IF_ERROR(WriteKnob(path_ + "/trace_clock", "mono"));
  RTLOOP_RETURN_IF_ERROR(WriteKnob(path_ + "/buffer_size_kb", std::to_string(buffer_kb_)));
  RTLOOP_RETURN_IF_ERROR(WriteKnob(path_ + "/tracing_cpumask", trace::CpuMaskText(cpus_)));
  RTLOOP_RETURN_IF_ERROR(WriteKnob(path_ + "/options/overwrite", "1"));
  const std::string required = path_ + "/events/" + kRequiredEvent + "/enable";
  if (access(required.c_str(), F_OK) != 0) {
    return NotFoundError(std::string("this kernel has no ") + kRequiredEvent +
                         " trace event (CONFIG_TRACING without scheduler events?): the trace "
                         "evidence needs it; the counters are used");
  }
  RTLOOP_RETURN_IF_ERROR(WriteKnob(required, "1"));
  for (const char* event : kOptionalEvents) {
    const std::string enable = path_ + "/events/" + event + "/enable";
    if (access(enable.c_str(), F_OK) != 0) {
      notes_.push_back(std::string("this kernel has no ") + event +
                       " trace event: records will not show what it would");
      continue;
    }
    RTLOOP_RETURN_IF_ERROR(WriteKnob(enable, "1"));
  }
  // Older kernels have no .function filter: then every timer's expiry is recorded (more lines).
  const std::string filter = path_ + "/events/timer/hrtimer_expire_entry/filter";
  hrtimer_filtered_ = access(filter.c_str(), F_OK) == 0 && WriteKnob(filter, kHrtimerFilter).ok();
  if (!hrtimer_filtered_) {
    notes_.push_back(
        "this kernel cannot filter hrtimer_expire_entry by function: every timer "
        "expiry is recorded, so the history covers less time");
  }
  // The osnoise events (noise seen by the osnoise/timerlat tracers) where the kernel has them.
  const std::string osnoise = path_ + "/events/osnoise/enable";
  if (access(osnoise.c_str(), F_OK) == 0) RTLOOP_RETURN_IF_ERROR(WriteKnob(osnoise, "1"));
  Result<std::unique_ptr<trace::RawHistory>> history = trace::RawHistory::Open(
      tracefs, path_, cpus_, static_cast<std::size_t>(history_kb_) * 1024, hrtimer_filtered_);
  if (!history.ok()) {
    return Status(history.status().code(),
                  "cannot read the trace in binary: " + history.status().message() +
                      " (the counters are used)");
  }
  history_ = std::move(*history);
  return WriteKnob(path_ + "/tracing_on", "1");
}

std::string TraceEvidence::Note(int cpu) const {
  return "trace instance " + name_ + " (" + std::to_string(buffer_kb_) + " KiB per CPU, " +
         std::to_string(history_kb_) + " KiB history), CPU " + std::to_string(cpu);
}

void TraceEvidence::Drain(std::size_t index) {
  history_->Drain(index);
  std::string e = history_->TakeErrors(index);
  if (e.empty()) return;
  if (!errors_[index].empty()) errors_[index] += "; ";
  if (errors_[index].size() < 1024) errors_[index] += e;  // the first errors say the most
}

std::int64_t TraceEvidence::history_oldest_ns(int cpu) const {
  const auto it = std::find(cpus_.begin(), cpus_.end(), cpu);
  return it == cpus_.end() ? -1 : history_->oldest_ns(static_cast<std::size_t>(it - cpus_.begin()));
}

void TraceEvidence::Poll(std::int64_t now_ns) {
  (void)now_ns;
  const std::int64_t start = ThreadCpuNs();
  for (std::size_t i = 0; i < cpus_.size(); ++i) Drain(i);
  poll_cpu_ns_ += ThreadCpuNs() - start;
}

bool TraceEvidence::Explain(const OutlierWindow& window, OutlierRecord* record) {
  const std::int64_t start = ThreadCpuNs();
  const bool ok = ExplainOn(window, record);
  last_cpu_ns_ = ThreadCpuNs() - start;
  max_cpu_ns_ = std::max(max_cpu_ns_, last_cpu_ns_);
  return ok;
}

// The index of the window's CPU in cpus_, its history drained up to now; cpus_.size() with `why`
// when none.
std::size_t TraceEvidence::LocateCpu(const OutlierWindow& window, std::string* why) {
  if (window.cpu >= 0) {
    const auto it = std::find(cpus_.begin(), cpus_.end(), window.cpu);
    const auto index = static_cast<std::size_t>(it - cpus_.begin());
    if (it == cpus_.end()) {
      *why = "trace instance " + name_ + " does not trace CPU " + std::to_string(window.cpu) +
             " (it traces " + FormatCpuList(cpus_) + ")";
      return cpus_.size();
    }
    // What came since the last Poll(): the window's end is in the kernel's buffer still.
    if (history_->newest_ns(index) <= window.end_ns()) Drain(index);
    return index;
  }
  // Not pinned: the CPU the task's thread ran on nearest W_k.
  std::size_t best_index = cpus_.size();
  std::int64_t best = -1;
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    if (history_->newest_ns(i) <= window.end_ns()) Drain(i);
    history_->Events(i, window.begin_ns() - kLookbackNs, window.end_ns() + kLookbackNs, &events_);
    const std::int64_t d = trace::SwitchInDistance(events_, window.tid, window.wake_ns);
    if (d >= 0 && (best < 0 || d < best)) {
      best = d;
      best_index = i;
    }
  }
  if (best_index == cpus_.size()) {
    *why = "trace instance " + name_ + ": the CPU of thread " + std::to_string(window.tid) +
           " is unknown: it is not pinned and the trace never shows it running";
  }
  return best_index;
}

bool TraceEvidence::ExplainOn(const OutlierWindow& window, OutlierRecord* record) {
  const auto fail = [&](std::string why) {
    record->evidence = EvidenceKind::kNone;
    record->evidence_note = std::move(why);
    return false;
  };
  std::string why;
  const std::size_t index = LocateCpu(window, &why);
  if (index == cpus_.size()) return fail(why);
  const int cpu = cpus_[index];
  trace::Target target;
  target.tid = window.tid;
  target.begin_ns = window.begin_ns();
  target.end_ns = window.end_ns();
  target.timer_delay = !window.execution;
  // A read error since the last record: said once, in this record's note.
  std::string errors;
  errors.swap(errors_[index]);
  const std::string note = errors.empty() ? Note(cpu) : Note(cpu) + "; " + errors;
  const std::int64_t oldest = history_->oldest_ns(index);
  if (oldest < 0) return fail(note + ": no events recorded on the CPU");
  if (oldest > target.begin_ns) {
    return fail(note + ": the window (from " + Seconds(target.begin_ns) +
                ") is no longer in the buffer, whose oldest event is at " + Seconds(oldest) +
                ": raise history_kb or explain sooner");
  }
  history_->Events(index, target.begin_ns - kLookbackNs, target.end_ns + kLookbackNs, &events_);
  const std::vector<trace::TraceEvent>& events = events_;
  // The task runs at W_k, so its events are there unless they were lost: the kernel overwrites
  // pages a late Poll() had not read yet (a LOST gap; with the text reader of before, its
  // iterator skipped pages under load: a 4 ms window went whole to the thread of the last line
  // before the gap). Such a history cannot say who ran; the next source (the counters) is asked.
  const std::int64_t d = trace::SwitchInDistance(events, window.tid, window.wake_ns);
  if (window.tid > 0 && (d < 0 || d > window.length_ns() + kTaskEventSlackNs)) {
    return fail(note + ": the trace read does not show thread " + std::to_string(window.tid) +
                " around W_k: its events are missing (overwritten before they were read, "
                "under load), or the thread did not run there");
  }
  const trace::Attribution a = trace::Attribute(events, target);
  AddCauses(a, window, record);
  for (std::size_t i : a.raw) {
    if (record->raw.size() >= kMaxRawLines) break;
    record->raw.push_back(trace::FormatEvent(events[i]));
  }
  record->evidence = EvidenceKind::kTrace;
  record->evidence_note = note;
  if (a.lost_in_window > 0) {
    record->evidence_note += "; " + std::to_string(a.lost_in_window) +
                             " events lost near the window (raise the buffer size)";
  }
  if (a.newest_ns < target.end_ns) record->evidence_note += "; the trace ends inside the window";
  return true;
}

}  // namespace rtloop::explain
