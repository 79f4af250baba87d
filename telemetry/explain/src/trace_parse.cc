// The text parser of a tracefs per-CPU trace file (trace_internal.h). A line is
//   "<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <sec>.<usec>: <event>: <fields>"
// where comm may hold spaces and dashes, the tgid column appears with options/record-tgid and the
// flags column with options/irq-info; "CPU:N [LOST n EVENTS]" marks a gap. The parser anchors on
// the "[cpu]" field followed by a timestamp, never trusts column widths, and never crashes.
// TraceEvidence reads the binary pages (trace_raw.cc) since the text cost the kernel ~2 us per
// line; this parser stays for what is written as text: the attribution tests' fixtures and the
// golden test that the binary decoder agrees with the kernel's own text of the same buffer.
//
//   TraceEvent e;
//   if (ParseTraceLine("  <idle>-0  [001] 5.000001: softirq_entry: vec=3 [action=NET_RX]", &e)) ...
//
// Thread contract: free functions without state; any non-RT thread.
#include <charconv>
#include <string_view>

#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

template <typename T>
bool ToInt(std::string_view s, T* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "<sec>.<frac>" -> ns. The fraction has 6 digits for the ns clocks; any 1..9 digits accepted.
bool ParseTimestamp(std::string_view s, std::int64_t* ns) {
  const std::size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::int64_t sec = 0;
  std::int64_t frac = 0;
  const std::string_view f = s.substr(dot + 1);
  if (f.empty() || f.size() > 9 || !ToInt(s.substr(0, dot), &sec) || !ToInt(f, &frac)) {
    return false;
  }
  if (sec < 0 || frac < 0 || sec > 9'000'000'000LL) return false;
  for (std::size_t i = f.size(); i < 9; ++i) frac *= 10;
  *ns = sec * 1'000'000'000LL + frac;
  return true;
}

// The value of "key=" in `fields` up to the next space (the key at the start or after a space).
std::string_view Field(std::string_view fields, std::string_view key) {
  std::size_t pos = 0;
  while ((pos = fields.find(key, pos)) != std::string_view::npos) {
    if (pos == 0 || fields[pos - 1] == ' ' || fields[pos - 1] == '[') {
      std::string_view v = fields.substr(pos + key.size());
      const std::size_t end = v.find_first_of(" ]");
      return end == std::string_view::npos ? v : v.substr(0, end);
    }
    pos += key.size();
  }
  return {};
}

int IntField(std::string_view fields, std::string_view key) {
  int v = -1;
  return ToInt(Field(fields, key), &v) ? v : -1;
}

// A comm field that may hold spaces: from "key=" to the delimiter that follows it.
std::string_view CommField(std::string_view fields, std::string_view key, std::string_view until) {
  const std::size_t begin = fields.find(key);
  if (begin == std::string_view::npos) return {};
  const std::size_t from = begin + key.size();
  const std::size_t end = fields.rfind(until);
  if (end == std::string_view::npos || end < from) return {};
  return fields.substr(from, end - from);
}

void ParseSwitch(std::string_view f, TraceEvent* e) {
  const std::size_t arrow = f.rfind(" ==> next_comm=");
  if (arrow == std::string_view::npos) return;
  const std::string_view prev = f.substr(0, arrow);
  const std::string_view next = f.substr(arrow + 5);
  e->prev_comm = CommField(prev, "prev_comm=", " prev_pid=");
  e->prev_pid = IntField(prev.substr(prev.rfind(" prev_pid=") + 1), "prev_pid=");
  e->prev_prio = IntField(prev.substr(prev.rfind(" prev_pid=") + 1), "prev_prio=");
  e->next_comm = CommField(next, "next_comm=", " next_pid=");
  const std::size_t np = next.rfind(" next_pid=");
  if (np != std::string_view::npos) {
    e->next_pid = IntField(next.substr(np + 1), "next_pid=");
    e->next_prio = IntField(next.substr(np + 1), "next_prio=");
  }
}

void ParseFields(std::string_view f, TraceEvent* e) {
  const std::string_view n = e->name;
  if (n == "sched_switch") {
    e->type = EventType::kSchedSwitch;
    ParseSwitch(f, e);
  } else if (n == "sched_waking" || n == "sched_wakeup") {
    e->type = n == "sched_waking" ? EventType::kSchedWaking : EventType::kOther;
    e->next_comm = CommField(f, "comm=", " pid=");
    const std::size_t p = f.rfind(" pid=");
    if (p != std::string_view::npos) {
      e->next_pid = IntField(f.substr(p + 1), "pid=");
      e->next_prio = IntField(f.substr(p + 1), "prio=");
    }
  } else if (n == "irq_handler_entry" || n == "irq_handler_exit") {
    e->type = n == "irq_handler_entry" ? EventType::kIrqEntry : EventType::kIrqExit;
    e->irq = IntField(f, "irq=");
    e->irq_name = Field(f, "name=");
  } else if (n == "softirq_entry" || n == "softirq_exit") {
    e->type = n == "softirq_entry" ? EventType::kSoftirqEntry : EventType::kSoftirqExit;
    e->irq = IntField(f, "vec=");
    e->irq_name = Field(f, "action=");
  } else if (n == "hrtimer_expire_entry" || n == "hrtimer_expire_exit") {
    e->type = n == "hrtimer_expire_entry" ? EventType::kHrtimerEntry : EventType::kHrtimerExit;
    e->hrtimer = Field(f, "hrtimer=");
    e->function = Field(f, "function=");
    std::int64_t now = -1;
    if (ToInt(Field(f, "now="), &now)) e->now_ns = now;
  }
}

// "CPU:N [LOST n EVENTS]".
bool ParseLost(std::string_view line, TraceEvent* e) {
  line = TrimLeft(line);
  if (line.substr(0, 4) != "CPU:") return false;
  const std::size_t sp = line.find(" [LOST ");
  if (sp == std::string_view::npos) return false;
  const std::size_t ev = line.find(" EVENTS]", sp);
  if (ev == std::string_view::npos) return false;
  int cpu = -1;
  std::uint64_t lost = 0;
  if (!ToInt(line.substr(4, sp - 4), &cpu) || !ToInt(line.substr(sp + 7, ev - sp - 7), &lost)) {
    return false;
  }
  e->type = EventType::kLost;
  e->cpu = cpu;
  e->lost = lost;
  return true;
}

// After "[cpu]": "[<flags>] <ts>: <event>: <fields>". False when it is not that.
bool ParseAfterCpu(std::string_view rest, TraceEvent* e) {
  rest = TrimLeft(rest);
  std::size_t colon = rest.find(": ");
  if (colon == std::string_view::npos) return false;
  std::string_view head = rest.substr(0, colon);  // "[flags ]ts"
  const std::size_t sp = head.rfind(' ');
  const std::string_view ts = sp == std::string_view::npos ? head : head.substr(sp + 1);
  if (!ParseTimestamp(ts, &e->ts_ns)) return false;
  std::string_view tail = rest.substr(colon + 2);
  const std::size_t name_end = tail.find(':');
  if (name_end == std::string_view::npos || name_end == 0) return false;
  e->name = tail.substr(0, name_end);
  if (e->name.find(' ') != std::string_view::npos) return false;
  ParseFields(TrimLeft(tail.substr(name_end + 1)), e);
  return true;
}

// Before "[cpu]": "<comm>-<pid>[ (<tgid>)]".
bool ParseTask(std::string_view head, TraceEvent* e) {
  head = TrimRight(head);
  if (!head.empty() && head.back() == ')') {
    const std::size_t open = head.rfind('(');
    if (open == std::string_view::npos) return false;
    head = TrimRight(head.substr(0, open));
  }
  const std::size_t dash = head.rfind('-');
  if (dash == std::string_view::npos || !ToInt(head.substr(dash + 1), &e->pid)) return false;
  e->comm = TrimLeft(head.substr(0, dash));
  return true;
}

}  // namespace

bool ParseTraceLine(std::string_view line, TraceEvent* event) {
  *event = TraceEvent{};
  line = TrimRight(line);
  event->line = line;
  if (line.empty() || TrimLeft(line).front() == '#') return false;
  if (ParseLost(line, event)) return true;
  // Try each " [digits]" from the left: one followed by a timestamp and an event name, and
  // preceded by "<comm>-<pid>", is the cpu field. The kernel pads TASK to 16 columns and a comm has
  // at most 15 characters, so a candidate at column 16 or later wins over one a comm could forge;
  // an unpadded line (another tool's) takes its first candidate.
  constexpr std::size_t kTaskColumns = 16;
  bool have_first = false;
  TraceEvent first;
  std::size_t pos = 0;
  while ((pos = line.find('[', pos)) != std::string_view::npos) {
    const std::size_t close = line.find(']', pos);
    if (close == std::string_view::npos) break;
    int cpu = -1;
    TraceEvent e;
    e.line = line;
    if (pos > 0 && line[pos - 1] == ' ' && close > pos + 1 &&
        ToInt(line.substr(pos + 1, close - pos - 1), &cpu) && cpu >= 0 &&
        ParseTask(line.substr(0, pos), &e) && ParseAfterCpu(line.substr(close + 1), &e)) {
      e.cpu = cpu;
      if (pos >= kTaskColumns) {
        *event = e;
        return true;
      }
      if (!have_first) {
        have_first = true;
        first = e;
      }
    }
    pos += 1;
  }
  if (!have_first) return false;
  *event = first;
  return true;
}

std::vector<TraceEvent> ParseTrace(std::string_view text) {
  std::vector<TraceEvent> events;
  events.reserve(text.size() / 100 + 1);
  std::size_t pos = 0;
  TraceEvent e;
  std::int64_t last_ts = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    if (ParseTraceLine(text.substr(pos, nl - pos), &e)) {
      // A LOST line has no time of its own: it sits between its neighbours.
      if (e.type == EventType::kLost) e.ts_ns = last_ts;
      last_ts = e.ts_ns;
      events.push_back(e);
    }
    pos = nl + 1;
  }
  return events;
}

}  // namespace rtloop::explain::trace
