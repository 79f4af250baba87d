// Attribution of an outlier window to what ran on the CPU (trace_internal.h). The CPU's events
// are replayed in order; between two events the CPU was in the innermost context the events
// declare (a hard IRQ handler over a softirq over the running thread, which is the TASK-PID of the
// next line), so the window splits into exclusive segments and the causes never sum past it.
//
//   Attribution a = Attribute(ParseTrace(text), Target{tid, begin_ns, end_ns, true});
//
// Thread contract: free functions without shared state; any non-RT thread (they allocate).
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

constexpr std::int64_t kExpirySlackNs = 50'000;  // µs rounding and timer slack before E_k

struct Frame {
  int number = -1;
  std::string_view name;
  std::uint64_t seq = 0;  // which entry: counts distinct runs
};

struct Counted {
  std::int64_t ns = 0;
  std::uint64_t count = 0;
  std::uint64_t last_seq = ~std::uint64_t{0};  // no run counted yet
};

// The task's own expiry: an hrtimer_wakeup expiring while it wakes `tid`, the last one <= end.
std::int64_t FindExpiry(const std::vector<TraceEvent>& events, const Target& t) {
  std::int64_t found = -1;
  std::int64_t candidate = -1;
  for (const TraceEvent& e : events) {
    if (e.ts_ns > t.end_ns) break;
    if (e.type == EventType::kHrtimerEntry) {
      candidate = -1;
      if (e.function.substr(0, 14) == "hrtimer_wakeup") {
        // `now` is the clock base's time in ns (finer than the line's µs) when it is the same
        // clock; a CLOCK_REALTIME timer's is not.
        const bool same = e.now_ns > 0 && std::llabs(e.now_ns - e.ts_ns) < 1'000'000;
        candidate = same ? e.now_ns : e.ts_ns;
      }
    } else if (e.type == EventType::kSchedWaking) {
      if (e.next_pid == t.tid && candidate >= 0) found = candidate;
    } else {
      // The wake-up happens inside the expiry (hrtimer_expire_exit is not traced: it would add a
      // line per timer); any other event in between ends the candidate.
      candidate = -1;
    }
  }
  return found >= t.begin_ns - kExpirySlackNs ? found : -1;
}

class Replay {
 public:
  Replay(const Target& t, std::int64_t expiry) : t_(t), expiry_(expiry) {}

  void Run(const std::vector<TraceEvent>& events) {
    std::int64_t last = -1;
    bool gap = false;
    for (const TraceEvent& e : events) {
      if (e.type == EventType::kLost) {
        if (e.ts_ns <= t_.end_ns && e.ts_ns >= t_.begin_ns - 1'000'000) lost_ += e.lost;
        irqs_.clear();
        softirqs_.clear();
        gap = true;
        continue;
      }
      // Time never runs backwards here: an event older than the one before it (a damaged page)
      // is taken at that one's time, so no span is counted twice.
      if (last >= 0 && !gap) Account(last, e);
      Apply(e);
      last = std::max(last, e.ts_ns);
      gap = false;
    }
  }

  void Fill(Attribution* a) const {
    for (const auto& [tid, c] : threads_) {
      ThreadRun run;
      run.tid = tid;
      const auto it = comm_.find(tid);
      if (it != comm_.end()) run.comm = std::string(it->second);
      const auto p = prio_.find(tid);
      run.prio = p == prio_.end() ? -2 : p->second;
      run.ns = c.ns;
      run.count = c.count;
      a->threads.push_back(std::move(run));
    }
    std::sort(a->threads.begin(), a->threads.end(),
              [](const ThreadRun& x, const ThreadRun& y) { return x.tid < y.tid; });
    AddInterrupts(irq_causes_, CauseKind::kIrq, a);
    AddInterrupts(softirq_causes_, CauseKind::kSoftirq, a);
    a->timer_delay_ns = timer_delay_;
    a->lost_in_window = lost_;
  }

 private:
  using Table = std::vector<std::pair<std::pair<int, std::string_view>, Counted>>;

  static Counted* Find(Table* table, int number, std::string_view name) {
    for (auto& [key, c] : *table) {
      if (key.first == number) return &c;
    }
    table->push_back({{number, name}, Counted{}});
    return &table->back().second;
  }

  static void AddInterrupts(const Table& table, CauseKind kind, Attribution* a) {
    for (const auto& [key, c] : table) {
      Cause cause;
      cause.kind = kind;
      cause.name = key.second.empty() ? std::to_string(key.first) : std::string(key.second);
      cause.ns = c.ns;
      cause.count = c.count;
      cause.id = kind == CauseKind::kIrq ? key.first : -1;
      cause.detail = kind == CauseKind::kIrq ? "irq " + std::to_string(key.first)
                                             : "vec " + std::to_string(key.first);
      a->interrupts.push_back(std::move(cause));
    }
  }

  static void Add(Counted* c, std::int64_t ns, std::uint64_t seq) {
    c->ns += ns;
    if (c->last_seq != seq) {
      c->last_seq = seq;
      ++c->count;
    }
  }

  // [from, e.ts_ns] in the context the state declares; the running thread is e's TASK-PID.
  void Account(std::int64_t from, const TraceEvent& e) {
    const std::int64_t b = std::max(from, t_.begin_ns);
    const std::int64_t end = std::min(e.ts_ns, t_.end_ns);
    if (end <= b) return;
    const std::int64_t ns = end - b;
    if (!irqs_.empty()) {
      const Frame& f = irqs_.back();
      Add(Find(&irq_causes_, f.number, f.name), ns, f.seq);
    } else if (!softirqs_.empty()) {
      const Frame& f = softirqs_.back();
      Add(Find(&softirq_causes_, f.number, f.name), ns, f.seq);
    } else if (e.pid == 0) {
      // Idle before the task's timer fired is the timer's delay; idle after it is unexplained.
      if (expiry_ >= 0) timer_delay_ += std::max<std::int64_t>(0, std::min(end, expiry_) - b);
    } else if (e.pid != t_.tid) {
      comm_.emplace(e.pid, e.comm);
      Add(&threads_[e.pid], ns, run_seq_);
    }
  }

  void Apply(const TraceEvent& e) {
    ++seq_;
    switch (e.type) {
      case EventType::kIrqEntry:
        if (irqs_.size() > 16) irqs_.clear();  // missed exits: do not grow without bound
        irqs_.push_back({e.irq, e.irq_name, seq_});
        break;
      case EventType::kIrqExit:
        if (!irqs_.empty()) irqs_.pop_back();
        break;
      case EventType::kSoftirqEntry:
        if (softirqs_.size() > 16) softirqs_.clear();
        softirqs_.push_back({e.irq, e.irq_name, seq_});
        break;
      case EventType::kSoftirqExit:
        if (!softirqs_.empty()) softirqs_.pop_back();
        break;
      case EventType::kSchedSwitch:
        // No switch happens inside an IRQ or softirq: a stale frame (its exit lost) ends here.
        irqs_.clear();
        softirqs_.clear();
        run_seq_ = seq_;
        if (e.next_pid > 0) {
          prio_[e.next_pid] = e.next_prio;
          comm_[e.next_pid] = e.next_comm;
        }
        // The payload's comms are the thread's at that moment; a line's TASK column is looked
        // up when the file is read, and may be a stale or "<...>" name.
        if (e.prev_pid > 0) {
          prio_[e.prev_pid] = e.prev_prio;
          comm_[e.prev_pid] = e.prev_comm;
        }
        break;
      case EventType::kSchedWaking:
        if (e.next_pid > 0) {
          prio_.emplace(e.next_pid, e.next_prio);
          comm_[e.next_pid] = e.next_comm;
        }
        break;
      default:
        break;
    }
  }

  const Target t_;
  const std::int64_t expiry_;
  std::uint64_t seq_ = 0;
  std::uint64_t run_seq_ = 0;  // the sched_switch that started the current thread's run
  std::vector<Frame> irqs_;
  std::vector<Frame> softirqs_;
  std::unordered_map<int, Counted> threads_;
  std::unordered_map<int, int> prio_;
  std::unordered_map<int, std::string_view> comm_;
  Table irq_causes_;
  Table softirq_causes_;
  std::int64_t timer_delay_ = 0;
  std::uint64_t lost_ = 0;
};

const char* PolicyName(int policy) {
  switch (policy) {
    case SCHED_FIFO:
      return "FIFO";
    case SCHED_RR:
      return "RR";
    case SCHED_BATCH:
      return "BATCH";
    case SCHED_IDLE:
      return "IDLE";
#ifdef SCHED_DEADLINE
    case SCHED_DEADLINE:
      return "DEADLINE";
#endif
    default:
      return "OTHER";
  }
}

// The thread's policy when it still lives with the same comm (a reused tid would lie), else -1.
int LivePolicy(int tid, std::string_view comm) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/comm", tid);
  std::string live;
  if (!ReadWhole(path, &live).ok()) return -1;
  while (!live.empty() && live.back() == '\n') live.pop_back();
  if (live != comm) return -1;
  return sched_getscheduler(tid);
}

}  // namespace

Attribution Attribute(const std::vector<TraceEvent>& events, const Target& target) {
  Attribution a;
  for (const TraceEvent& e : events) {
    if (e.type == EventType::kLost) continue;
    if (a.oldest_ns < 0) a.oldest_ns = e.ts_ns;
    a.newest_ns = e.ts_ns;
  }
  a.expiry_ns = target.timer_delay ? FindExpiry(events, target) : -1;
  Replay replay(target, a.expiry_ns);
  replay.Run(events);
  replay.Fill(&a);
  a.raw = NearestLines(events, target.begin_ns, target.end_ns, kMaxRawLines);
  return a;
}

std::vector<std::size_t> NearestLines(const std::vector<TraceEvent>& events, std::int64_t begin_ns,
                                      std::int64_t end_ns, std::size_t max_lines) {
  std::vector<std::size_t> out;
  if (events.empty() || max_lines == 0) return out;
  const auto by_ts = [](const TraceEvent& e, std::int64_t t) { return e.ts_ns < t; };
  const std::size_t lo = static_cast<std::size_t>(
      std::lower_bound(events.begin(), events.end(), begin_ns, by_ts) - events.begin());
  std::size_t hi = lo;  // one past the last event inside the window
  while (hi < events.size() && events[hi].ts_ns <= end_ns) ++hi;
  if (hi - lo >= max_lines) {  // the window's first and last lines: its edges tell the most
    for (std::size_t i = lo; i < lo + max_lines / 2; ++i) out.push_back(i);
    for (std::size_t i = hi - (max_lines - max_lines / 2); i < hi; ++i) out.push_back(i);
    return out;
  }
  std::size_t l = lo;  // next candidate before: l - 1
  std::size_t r = hi;  // next candidate after: r
  while (hi - lo + (lo - l) + (r - hi) < max_lines && (l > 0 || r < events.size())) {
    const std::int64_t before = l > 0 ? begin_ns - events[l - 1].ts_ns : INT64_MAX;
    const std::int64_t after = r < events.size() ? events[r].ts_ns - end_ns : INT64_MAX;
    if (before <= after) {
      --l;
    } else {
      ++r;
    }
  }
  for (std::size_t i = l; i < r; ++i) out.push_back(i);
  return out;
}

std::int64_t SwitchInDistance(const std::vector<TraceEvent>& events, int tid, std::int64_t at_ns) {
  std::int64_t best = -1;
  for (const TraceEvent& e : events) {
    // Its switch-in, or any line it was current on (this kernel does not trace the switch out
    // of idle).
    const bool in = e.type == EventType::kSchedSwitch && e.next_pid == tid;
    if (!in && (e.type == EventType::kLost || e.pid != tid)) continue;
    const std::int64_t d = std::llabs(e.ts_ns - at_ns);
    if (best < 0 || d < best) best = d;
  }
  return best;
}

std::string ThreadDetail(int tid, std::string_view comm, int prio) {
  if (prio == -1) return "DEADLINE";
  const int policy = LivePolicy(tid, comm);
  if (prio < -1 && (policy == SCHED_FIFO || policy == SCHED_RR)) {
    // Not switched in since the part of the trace read: the live priority.
    sched_param p{};
    if (sched_getparam(tid, &p) == 0) prio = 99 - p.sched_priority;
  }
  if (prio >= 0 && prio < 100) {
    const bool rt = policy == SCHED_FIFO || policy == SCHED_RR;
    return std::string(rt ? PolicyName(policy) : "RT") + " " + std::to_string(99 - prio);
  }
  if (prio >= 100 && prio < 140) {
    const bool fair = policy == SCHED_OTHER || policy == SCHED_BATCH || policy == SCHED_IDLE;
    return std::string(fair ? PolicyName(policy) : "OTHER") + " nice " + std::to_string(prio - 120);
  }
  return policy >= 0 ? PolicyName(policy) : "";
}

}  // namespace rtloop::explain::trace
