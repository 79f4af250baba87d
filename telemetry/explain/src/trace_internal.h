// The pieces behind TraceEvidence (trace_evidence.h), split along their seams so each can be
// tested alone: the decoder of the kernel's binary ring-buffer pages (trace_raw.cc), the in-memory
// history that Poll() fills from each CPU's trace_pipe_raw (trace_history.cc), the text parser of
// a trace file (trace_parse.cc: the tests' fixtures are text), the attribution of a window to
// what ran on the CPU (trace_attribute.cc) and the tracefs set-up (trace_tracefs.cc).
//
//   std::vector<trace::TraceEvent> events = trace::ParseTrace(text);   // views into `text`
//   trace::Attribution a = trace::Attribute(events, trace::Target{tid, b, e, release, false});
//
// Thread contract: free functions without shared state; any non-RT thread (they allocate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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

// One event: a line of a trace file (the string_views point into the parsed text, which must
// outlive it) or a record of a binary page (they point into the page and the decoder; `line` is
// empty: FormatEvent() writes it).
struct TraceEvent {
  EventType type = EventType::kOther;
  std::int64_t ts_ns = 0;  // the timestamp (trace_clock mono: CLOCK_MONOTONIC, µs resolution)
  int cpu = -1;            // the [cpu] field, or the N of a LOST line
  int pid = -1;            // the task current when the event fired (the line's TASK-PID)
  std::string_view comm;   // its comm (may hold spaces and dashes)
  std::string_view name;   // event name, e.g. "sched_switch"
  std::string_view line;   // the whole line, for the raw evidence (empty for a binary record)
  // sched_switch: prev_*/next_*; sched_waking: next_* is the woken task.
  std::string_view prev_comm;
  int prev_pid = -1;
  int prev_prio = -1;
  std::string_view next_comm;
  int next_pid = -1;
  int next_prio = -1;
  std::int64_t prev_state = -1;  // sched_switch of a binary record: the prev task's state bits
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

// --- the binary ring-buffer pages of trace_pipe_raw (trace_raw.cc) ---

// Where a field lies in an event's record (a line of events/<sys>/<event>/format).
struct FieldSpec {
  int offset = -1;  // -1: the format has no such field
  int size = 0;
  bool is_signed = false;
  // 0: the bytes are the value; 1: __data_loc, a u32 "offset | length << 16" from the record's
  // start; 2: __rel_loc, the same from the field's end.
  int loc = 0;
};

// One event's format file: its id and fields (the common_ ones included), and the symbols its
// print fmt names (__print_symbolic: softirq_entry's vectors).
struct EventFormat {
  std::string name;
  int id = -1;
  std::vector<std::pair<std::string, FieldSpec>> fields;
  std::vector<std::pair<long, std::string>> symbols;
  FieldSpec Find(std::string_view field) const;
};

// Reads a format file's text; false with `*why` when it has no name or ID, or no common_type.
bool ParseEventFormat(std::string_view text, EventFormat* out, std::string* why);

// The layout of a ring-buffer page (events/header_page) and of an event's header
// (events/header_event), as this kernel states them.
struct RingLayout {
  int timestamp_offset = -1;
  int timestamp_size = 0;
  int commit_offset = -1;
  int commit_size = 0;
  int data_offset = -1;
  int page_size = 0;  // data_offset + the data field's size
  int type_len_bits = 0;
  int time_delta_bits = 0;
  int padding_type = -1;
  int time_extend_type = -1;
  int time_stamp_type = -1;
  int max_data_type = -1;
};

// Both false with `*why` when a field is missing or out of the shapes the decoder handles.
bool ParseHeaderPage(std::string_view text, RingLayout* layout, std::string* why);
bool ParseHeaderEvent(std::string_view text, RingLayout* layout, std::string* why);

// One data record of a page: its time and its bytes (the common fields first).
struct RawRecord {
  std::int64_t ts_ns = 0;
  std::string_view data;
};

// What a page held, from its header and a walk of its records.
struct PageInfo {
  std::int64_t first_ns = -1;  // the first and last record's time, -1 when none
  std::int64_t last_ns = -1;
  bool missed = false;     // the kernel overwrote events between the previous page and this one
  std::uint64_t lost = 0;  // how many, when the page says (0: it does not)
  std::size_t records = 0;
  std::size_t used = 0;  // header + committed data: the bytes worth keeping
};

// Walks one page (`page` at least the header; the commit says how much data follows) and calls
// `on_record` for each data record in time order. False with `*why` at the first damage (a length
// beyond the commit, a page shorter than its commit); the records before it are delivered.
bool WalkPage(const RingLayout& layout, std::string_view page, PageInfo* info,
              const std::function<void(const RawRecord&)>& on_record, std::string* why);

// Turns records into TraceEvents by the formats of the events TraceEvidence enables.
class EventDecoder {
 public:
  // A format to decode by (the type follows from its name: sched_switch, irq_handler_entry...).
  void Add(const EventFormat& format);
  // hrtimer_expire_entry's `function`: every expiry recorded is hrtimer_wakeup's (the instance
  // filters on it), else the address that is (0: unknown).
  void SetHrtimerWakeup(bool filtered, std::uint64_t address);
  // Fills `*e` (cpu, ts, pid, type and fields; comm stays empty). An id without a format, or a
  // record shorter than its fields, is kOther with the name "unknown" (never a read past it).
  void Decode(const RawRecord& r, int cpu, TraceEvent* e) const;
  bool empty() const noexcept { return formats_.empty(); }

 private:
  struct Known {
    EventType type = EventType::kOther;
    std::string name;
    FieldSpec f[8];  // by type: see Add()
    std::vector<std::pair<long, std::string>> symbols;
  };
  FieldSpec common_type_;
  FieldSpec common_pid_;
  std::unordered_map<int, Known> formats_;
  bool hrtimer_filtered_ = false;
  std::uint64_t hrtimer_wakeup_ = 0;
};

// The event as a line in the kernel's text format ("<comm>-<pid> [001] 5.000001: name: fields"),
// for the raw evidence of a binary record; a text event's own line.
std::string FormatEvent(const TraceEvent& e);

// --- the in-memory history of the binary pages (trace_history.cc) ---

// Each traced CPU's trace_pipe_raw, consumed (O_NONBLOCK) into a bounded in-memory history of
// its pages: the kernel's buffer only has to hold what arrives between two Drain()s, the history
// holds `history_bytes` per CPU of committed page bytes (the same coverage as a kernel buffer of
// that size), and Explain() decodes the pages around a window from memory.
//
//   Result<std::unique_ptr<RawHistory>> h = RawHistory::Open(tracefs, instance_path, {1}, 256 <<
//   10);
//   (*h)->Drain(0);   // every Poll()
//   std::vector<TraceEvent> events;
//   (*h)->Events(0, begin_ns - lookback_ns, end_ns + lookback_ns, &events);
//
// Thread contract: one non-RT thread at a time (reads files, allocates).
class RawHistory {
 public:
  static Result<std::unique_ptr<RawHistory>> Open(const std::string& tracefs,
                                                  const std::string& instance_path,
                                                  const std::vector<int>& cpus,
                                                  std::size_t history_bytes, bool hrtimer_filtered);
  ~RawHistory();
  RawHistory(const RawHistory&) = delete;
  RawHistory& operator=(const RawHistory&) = delete;

  // Moves what the kernel holds for the CPU at `index` into the history (at most history_bytes of
  // pages per call, so it ends), dropping the oldest pages beyond history_bytes. A read error or a
  // damaged page is kept for TakeErrors(index).
  void Drain(std::size_t index);
  // The history's events from the page that holds `from_ns` to the page that holds `to_ns`, in
  // time order, with a kLost event where the kernel overwrote events before they were read. Views
  // into the history and the decoder: valid until the next Drain().
  void Events(std::size_t index, std::int64_t from_ns, std::int64_t to_ns,
              std::vector<TraceEvent>* out) const;
  std::int64_t oldest_ns(std::size_t index) const;  // -1: nothing kept
  std::int64_t newest_ns(std::size_t index) const;
  // The errors since the last call, "" when none (then cleared).
  std::string TakeErrors(std::size_t index);
  std::size_t bytes(std::size_t index) const;

 private:
  struct Page {
    std::string bytes;  // header + committed data
    PageInfo info;
  };
  struct Cpu {
    int cpu = -1;
    int fd = -1;
    std::string file;
    std::deque<Page> pages;
    std::size_t bytes = 0;
    std::string errors;
  };
  RawHistory() = default;
  void Learn(const TraceEvent& e);
  void Keep(Cpu* c, std::string_view page, const PageInfo& info);

  RingLayout layout_;
  EventDecoder decoder_;
  std::vector<Cpu> cpus_;
  std::size_t history_bytes_ = 0;
  std::size_t max_pages_per_drain_ = 0;
  std::string buf_;
  // The comms the payloads named (sched_switch, sched_waking), for the current task of a record
  // (binary records carry its pid only); cleared when it passes kMaxComms.
  std::unordered_map<int, std::string> comms_;
};

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
