// The pieces behind TraceEvidence (trace_evidence.h), split along their seams so each can be
// tested alone: the text parser of a per-CPU trace file (trace_parse.cc), the attribution of a
// window to what ran on the CPU (trace_attribute.cc) and the tracefs set-up (trace_tracefs.cc).
//
//   std::vector<trace::TraceEvent> events = trace::ParseTrace(text);   // views into `text`
//   trace::Attribution a = trace::Attribute(events, trace::Target{tid, b, e, release, false});
//
// Thread contract: free functions without shared state; any non-RT thread (they allocate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/framework/status.h"

namespace rtloop::explain::trace {

enum class EventType {
  kOther,  // a well-formed line of an event we do not attribute (kept as raw evidence)
  kSchedSwitch,
  kSchedWaking,
  kIrqEntry,
  kIrqExit,
  kSoftirqEntry,
  kSoftirqExit,
  kHrtimerEntry,
  kHrtimerExit,
  kLost,  // "CPU:N [LOST n EVENTS]": the state before it is unknown
};

// One line of a trace file. The string_views point into the parsed text, which must outlive it.
struct TraceEvent {
  EventType type = EventType::kOther;
  std::int64_t ts_ns = 0;  // the timestamp (trace_clock mono: CLOCK_MONOTONIC, µs resolution)
  int cpu = -1;            // the [cpu] field, or the N of a LOST line
  int pid = -1;            // the task current when the event fired (the line's TASK-PID)
  std::string_view comm;   // its comm (may hold spaces and dashes)
  std::string_view name;   // event name, e.g. "sched_switch"
  std::string_view line;   // the whole line, for the raw evidence
  // sched_switch: prev_*/next_*; sched_waking: next_* is the woken task.
  std::string_view prev_comm;
  int prev_pid = -1;
  int prev_prio = -1;
  std::string_view next_comm;
  int next_pid = -1;
  int next_prio = -1;
  // irq_handler_entry/exit: number and name (entry only); softirq: vector and its action name.
  int irq = -1;
  std::string_view irq_name;
  // hrtimer_expire_entry/exit: the timer, its function and the clock base's now (ns).
  std::string_view hrtimer;
  std::string_view function;
  std::int64_t now_ns = -1;
  std::uint64_t lost = 0;  // kLost: how many events were lost
};

// Parses one line. False for comments, blank lines and lines that are not a trace event or a LOST
// marker (never crashes on any input).
bool ParseTraceLine(std::string_view line, TraceEvent* event);

// Every event of a trace file's text, in file order (time order for a per-CPU file).
std::vector<TraceEvent> ParseTrace(std::string_view text);

// The timestamp of the first event in `text`, -1 when it has none (the buffer's oldest event).
std::int64_t FirstTime(std::string_view text);

// The timestamp of the last event in `text`, -1 when it has none.
std::int64_t LastTime(std::string_view text);

// The offset of a line start at or before the first event at or after `ts_ns` (a trace file's
// lines are in time order), by bisection: Explain() parses from a little before the window
// instead of the whole buffer.
std::size_t SeekTime(std::string_view text, std::int64_t ts_ns);

// The window to attribute, on one CPU's events.
struct Target {
  int tid = 0;                // the task's thread: its own runs are not a cause
  std::int64_t begin_ns = 0;  // window [begin, end]
  std::int64_t end_ns = 0;
  bool timer_delay = true;  // a latency window: look for the task's hrtimer_wakeup expiry
};

// A thread that ran in the window, before its policy is looked up.
struct ThreadRun {
  std::string comm;
  int tid = -1;
  int prio = -1;  // the kernel's prio from sched_switch: < 100 RT (99 - prio), 100..139 nice+120
  std::int64_t ns = 0;
  std::uint64_t count = 0;
};

struct Attribution {
  std::vector<ThreadRun> threads;   // one per tid
  std::vector<Cause> interrupts;    // kIrq and kSoftirq causes, one per IRQ / softirq vector
  std::int64_t timer_delay_ns = 0;  // idle time between begin and the task's expiry
  std::int64_t expiry_ns = -1;      // the task's hrtimer_wakeup expiry, -1 when not found
  std::int64_t oldest_ns = -1;      // the first event's timestamp (-1: no events)
  std::int64_t newest_ns = -1;
  std::uint64_t lost_in_window = 0;  // events lost inside (or just before) the window
  std::vector<std::size_t> raw;      // indexes of the events to keep as raw lines, in order
};

// Splits [begin, end] into exclusive segments (hard IRQ over softirq over the running thread)
// and sums them per thread / IRQ / softirq; the sum never exceeds the window.
Attribution Attribute(const std::vector<TraceEvent>& events, const Target& target);

// The indexes of at most `max_lines` events nearest [begin, end], in time order.
std::vector<std::size_t> NearestLines(const std::vector<TraceEvent>& events, std::int64_t begin_ns,
                                      std::int64_t end_ns, std::size_t max_lines);

// The CPU's events: the distance (ns) from `at_ns` to the nearest switch to `tid` or line it was
// current on, -1 if none.
std::int64_t SwitchInDistance(const std::vector<TraceEvent>& events, int tid, std::int64_t at_ns);

// "FIFO 95", "RR 10", "OTHER nice 0", "DEADLINE": the policy from sched_getscheduler(tid) when
// the thread is still alive with this comm, else from prio alone ("RT 95", "OTHER nice -5").
std::string ThreadDetail(int tid, std::string_view comm, int prio);

// --- tracefs (trace_tracefs.cc) ---

// The mounted tracefs (/sys/kernel/tracing, else /sys/kernel/debug/tracing); mounts it at
// /sys/kernel/tracing when it is not mounted and the process may (as rtla does).
Result<std::string> FindOrMountTracefs();

// Removes instances named "rtloop-<pid>" whose process is gone; one note per removed instance.
std::vector<std::string> RemoveStaleInstances(const std::string& tracefs);

// Writes `value` to `path`; the Status names the file and the fix.
Status WriteKnob(const std::string& path, const std::string& value);

// The tracing_cpumask text for `cpus` ("3", "1,00000000" for CPU 32).
std::string CpuMaskText(const std::vector<int>& cpus);

// Reads a whole file into `out` (reusing its capacity).
Status ReadWhole(const std::string& path, std::string* out);

}  // namespace rtloop::explain::trace
