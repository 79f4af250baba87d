// CounterEvidence (counter_evidence.h): Create(), the snapshots of Poll(), and Explain()'s choice
// of the two snapshots around a window. The causes come from counter_attribution.cc, the
// candidate threads from counter_candidates.cc.
#include "rtloop/explain/counter_evidence.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "counter_state.h"

namespace rtloop::explain {
namespace {

using internal::kNoCount;

std::int64_t Now(clockid_t clock) noexcept {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Status OpenProc(internal::ProcFile* file, const std::string& path, std::size_t capacity,
                std::string_view what) {
  const int err = file->Open(path, capacity);
  if (err != 0) {
    return ErrnoError(err, "counter evidence: cannot open " + path + " (" + std::string(what) + ")",
                      "is /proc mounted in this mount namespace?");
  }
  return Status::Ok();
}

Status ValidateConfig(const CounterConfig& config) {
  if (config.threads.empty()) {
    return InvalidArgumentError("counter evidence: no thread to watch (CounterConfig::threads)");
  }
  if (config.history < 2) {
    return InvalidArgumentError("counter evidence: history " + std::to_string(config.history) +
                                " snapshots is too short: a window needs one before and one after"
                                " (use at least 2; 64 at a 20 ms poll reach back 1.3 s)");
  }
  if (config.history > 100'000) {
    return InvalidArgumentError("counter evidence: history " + std::to_string(config.history) +
                                " snapshots is more than 100000 (at a 20 ms poll, 64 reach back "
                                "1.3 s: an outlier is explained within about a second)");
  }
  if (config.interrupts_bytes < 1024 || config.max_irq_lines == 0 ||
      config.max_threads_scanned == 0) {
    return InvalidArgumentError(
        "counter evidence: interrupts_bytes must be at least 1024, max_irq_lines and "
        "max_threads_scanned at least 1 (the defaults: 256 KiB, 256, 768)");
  }
  for (const WatchedThread& t : config.threads) {
    if (t.tid <= 0) {
      return InvalidArgumentError("counter evidence: thread id " + std::to_string(t.tid) +
                                  " is not a thread id (gettid() of the task's thread)");
    }
  }
  return Status::Ok();
}

Status OpenFiles(CounterEvidence::State* s) {
  for (const WatchedThread& t : s->config.threads) {
    const std::string base = "/proc/self/task/" + std::to_string(t.tid);
    internal::ProcFile stat;
    internal::ProcFile status;
    const std::string what =
        "thread " + std::to_string(t.tid) + " must be a thread of this process";
    RTLOOP_RETURN_IF_ERROR(OpenProc(&stat, base + "/stat", 1024, what));
    RTLOOP_RETURN_IF_ERROR(OpenProc(&status, base + "/status", 4096, what));
    s->thread_stat.push_back(std::move(stat));
    s->thread_status.push_back(std::move(status));
  }
  RTLOOP_RETURN_IF_ERROR(OpenProc(&s->interrupts, "/proc/interrupts", s->config.interrupts_bytes,
                                  "IRQ counts per CPU"));
  // Sized by the CPUs the kernel may list: a column of ~11 characters per CPU per line.
  const auto cpus = static_cast<std::size_t>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
  RTLOOP_RETURN_IF_ERROR(
      OpenProc(&s->softirqs, "/proc/softirqs", 16384 + 192 * cpus, "softirq counts per CPU"));
  RTLOOP_RETURN_IF_ERROR(
      OpenProc(&s->stat, "/proc/stat", 16384 + 160 * cpus, "steal time per CPU"));
  return Status::Ok();
}

// The row of `label` in irq_lines: `hint` first (lines keep their order), then a search, else a
// new row while there is room; -1 when full.
long FindIrqLine(CounterEvidence::State* s, std::string_view label, std::size_t hint) {
  if (hint < s->irq_lines.size() && s->irq_lines[hint].label.view() == label) {
    return static_cast<long>(hint);
  }
  for (std::size_t i = 0; i < s->irq_lines.size(); ++i) {
    if (s->irq_lines[i].label.view() == label) return static_cast<long>(i);
  }
  if (s->irq_lines.size() >= s->config.max_irq_lines) return -1;
  s->irq_lines.emplace_back();  // within the capacity reserved at Create(): no allocation
  s->irq_lines.back().label.Set(label);
  return static_cast<long>(s->irq_lines.size() - 1);
}

long FindSoftirqKind(CounterEvidence::State* s, std::string_view name) {
  for (std::size_t i = 0; i < s->softirq_kinds.size(); ++i) {
    if (s->softirq_kinds[i].view() == name) return static_cast<long>(i);
  }
  if (s->softirq_kinds.size() >= internal::kMaxSoftirqKinds) return -1;
  s->softirq_kinds.emplace_back();
  s->softirq_kinds.back().Set(name);
  return static_cast<long>(s->softirq_kinds.size() - 1);
}

// Reads /proc/interrupts (irq_table = true) or /proc/softirqs into the row: the watched CPUs'
// columns of every line. Returns the number of new lines that found no room.
std::uint64_t ReadPerCpuTable(CounterEvidence::State* s, std::string_view text, bool irq_table,
                              std::uint64_t* row) {
  const std::string_view header = internal::FirstLine(text);
  const int total = internal::CpuColumns(header);
  for (std::size_t j = 0; j < s->cpus.size(); ++j) {
    s->columns[j] = internal::CpuColumn(header, s->cpus[j]);
  }
  std::uint64_t ignored = 0;
  std::size_t index = 0;
  internal::ForEachLine(internal::AfterFirstLine(text), [&](std::string_view line) {
    std::string_view label;
    std::string_view description;
    if (!internal::ParseCounterLine(line, total, s->columns, s->counts, &label, &description)) {
      return;
    }
    const long at = irq_table ? FindIrqLine(s, label, index) : FindSoftirqKind(s, label);
    ++index;
    if (at < 0) {
      ++ignored;
      return;
    }
    const auto u = static_cast<std::size_t>(at);
    if (irq_table && s->irq_lines[u].description.view() != description) {
      s->irq_lines[u].description.Set(description);
    }
    for (std::size_t j = 0; j < s->cpus.size(); ++j) {
      row[s->cpu_base(j) + (irq_table ? s->irq_offset(u) : s->softirq_offset(u))] = s->counts[j];
    }
  });
  return ignored;
}

void ReadThreads(CounterEvidence::State* s, std::uint64_t* row) {
  for (std::size_t i = 0; i < s->config.threads.size(); ++i) {
    std::uint64_t* t = row + i * internal::kThreadCounters;
    internal::TaskStat stat;
    if (internal::ParseTaskStat(s->thread_stat[i].Read(), &stat)) {
      t[internal::kMinflt] = stat.minflt;
      t[internal::kMajflt] = stat.majflt;
    }
    const internal::TaskStatus status = internal::ParseTaskStatus(s->thread_status[i].Read());
    t[internal::kVoluntary] = status.voluntary;
    t[internal::kNonvoluntary] = status.nonvoluntary;
  }
}

std::string FormatMs(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

CounterEvidence::CounterEvidence(std::unique_ptr<State> state) : state_(std::move(state)) {}
CounterEvidence::~CounterEvidence() = default;

Result<std::unique_ptr<CounterEvidence>> CounterEvidence::Create(const CounterConfig& config) {
  RTLOOP_RETURN_IF_ERROR(ValidateConfig(config));
  auto s = std::make_unique<State>();
  s->config = config;
  for (const WatchedThread& t : config.threads) {
    if (t.cpu >= 0 && std::find(s->cpus.begin(), s->cpus.end(), t.cpu) == s->cpus.end()) {
      s->cpus.push_back(t.cpu);
    }
  }
  RTLOOP_RETURN_IF_ERROR(OpenFiles(s.get()));
  s->irq_lines.reserve(config.max_irq_lines);
  s->softirq_kinds.reserve(internal::kMaxSoftirqKinds);
  s->stride = s->cpu_base(s->cpus.size());  // the threads' counters, then the CPUs'
  s->values.assign(config.history * s->stride, kNoCount);
  s->begin_ns.assign(config.history, 0);
  s->end_ns.assign(config.history, 0);
  s->cut.assign(config.history, 0);
  s->columns.assign(s->cpus.size(), -1);
  s->counts.assign(s->cpus.size(), kNoCount);
  const long tick = sysconf(_SC_CLK_TCK);
  s->ns_per_tick = 1'000'000'000 / (tick > 0 ? tick : 100);
  return std::unique_ptr<CounterEvidence>(new CounterEvidence(std::move(s)));
}

void CounterEvidence::Poll(std::int64_t now_ns) {
  (void)now_ns;
  const std::int64_t cpu_start = Now(CLOCK_THREAD_CPUTIME_ID);
  State& s = *state_;
  const std::size_t slot = s.next;
  std::uint64_t* row = &s.values[slot * s.stride];
  std::fill(row, row + s.stride, kNoCount);
  s.begin_ns[slot] = Now(CLOCK_MONOTONIC);
  ReadThreads(&s, row);
  if (!s.cpus.empty()) {
    irq_lines_ignored_ += ReadPerCpuTable(&s, s.interrupts.Read(), true, row);
    s.cut[slot] = s.interrupts.truncated() ? 1 : 0;
    if (s.interrupts.truncated()) ++interrupts_truncated_;
    ReadPerCpuTable(&s, s.softirqs.Read(), false, row);
    const std::string_view stat = s.stat.Read();
    for (std::size_t j = 0; j < s.cpus.size(); ++j) {
      row[s.cpu_base(j)] = internal::StatSteal(stat, s.cpus[j]);
    }
  }
  s.end_ns[slot] = Now(CLOCK_MONOTONIC);
  s.next = (slot + 1) % s.begin_ns.size();
  s.count = std::min(s.count + 1, s.begin_ns.size());
  ++polls_;
  last_poll_cpu_ns_ = Now(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  max_poll_cpu_ns_ = std::max(max_poll_cpu_ns_, last_poll_cpu_ns_);
}

namespace {

// The slots around [begin, end]: the latest snapshot ended by `begin` and the earliest begun at
// or after `end`. Sets *why and returns false when there is none.
bool Bracket(const CounterEvidence::State& s, std::int64_t begin, std::int64_t end,
             std::size_t* before, std::size_t* after, std::string* why) {
  if (s.count == 0 || s.begin_ns[s.slot_of(s.count - 1)] < end) {
    *why =
        "not yet sampled: no /proc snapshot after the window's end yet (retry after the next "
        "poll)";
    return false;
  }
  const std::size_t oldest = s.slot_of(0);
  if (s.end_ns[oldest] > begin && s.count < s.begin_ns.size()) {  // no snapshot dropped yet
    *why = "before the first /proc snapshot, " + FormatMs(s.end_ns[oldest] - begin) +
           " after the window began: the counters sample once the explaining session has begun, "
           "after the tasks' threads started";
    return false;
  }
  if (s.end_ns[oldest] > begin) {
    *why = "too old: the window begins before the oldest /proc snapshot kept (" +
           std::to_string(s.count) + " snapshots reaching back " +
           FormatMs(s.end_ns[s.slot_of(s.count - 1)] - s.end_ns[oldest]) +
           "); raise CounterConfig::history or explain sooner";
    return false;
  }
  for (std::size_t i = 0; i < s.count; ++i) {
    const std::size_t slot = s.slot_of(i);
    if (s.end_ns[slot] <= begin) *before = slot;
  }
  for (std::size_t i = s.count; i-- > 0;) {
    const std::size_t slot = s.slot_of(i);
    if (s.begin_ns[slot] >= end) *after = slot;
  }
  return true;
}

std::string Note(const CounterEvidence::State& s, const OutlierWindow& w, std::size_t a,
                 std::size_t b, int cpu, bool cpu_watched, bool thread_watched,
                 const std::string& scan_note) {
  std::string note = "counters: /proc sampled " + FormatMs(w.begin_ns() - s.end_ns[a]) +
                     " before and " + FormatMs(s.begin_ns[b] - w.end_ns()) +
                     " after the window (an interval of " + FormatMs(s.begin_ns[b] - s.end_ns[a]) +
                     " around its " + FormatMs(w.length_ns()) +
                     "): counts over that interval, not times inside the window";
  if (!thread_watched) note += "; thread " + std::to_string(w.tid) + " is not watched";
  if (cpu < 0) {
    note += "; the task is not pinned: IRQs, softirqs and steal not attributed";
  } else {
    if (!cpu_watched) {
      note += "; CPU " + std::to_string(cpu) +
              " is not watched: its IRQs, softirqs and steal not "
              "attributed";
    }
    note += "; candidate threads may run on CPU " + std::to_string(cpu) + ", not proof they did";
  }
  if (s.cut[a] != 0 || s.cut[b] != 0) {
    note += "; /proc/interrupts was cut at " + std::to_string(s.config.interrupts_bytes) +
            " bytes: its later lines are not counted";
  }
  note += scan_note;
  if (!s.config.why_not_trace.empty()) note += "; " + s.config.why_not_trace;
  return note;
}

}  // namespace

bool CounterEvidence::Explain(const OutlierWindow& window, OutlierRecord* record) {
  const std::int64_t cpu_start = Now(CLOCK_THREAD_CPUTIME_ID);
  const State& s = *state_;
  record->evidence = EvidenceKind::kCounters;
  long thread_index = -1;
  for (std::size_t i = 0; i < s.config.threads.size(); ++i) {
    if (s.config.threads[i].tid == window.tid) thread_index = static_cast<long>(i);
  }
  int cpu = window.cpu;
  if (cpu < 0 && thread_index >= 0)
    cpu = s.config.threads[static_cast<std::size_t>(thread_index)].cpu;
  const auto cpu_it = std::find(s.cpus.begin(), s.cpus.end(), cpu);
  const long cpu_index = cpu_it == s.cpus.end() ? -1 : static_cast<long>(cpu_it - s.cpus.begin());
  std::size_t a = 0;
  std::size_t b = 0;
  std::string why;
  bool ok = true;
  if (thread_index < 0 && cpu_index < 0) {
    why = "neither thread " + std::to_string(window.tid) + " nor CPU " + std::to_string(cpu) +
          " is watched by the counter evidence (CounterConfig::threads)";
    ok = false;
  } else {
    ok = Bracket(s, window.begin_ns(), window.end_ns(), &a, &b, &why);
  }
  if (!ok) {
    record->evidence = EvidenceKind::kNone;  // no counters for this window: claim none
    record->evidence_note = "counters: " + why;
    if (!s.config.why_not_trace.empty()) record->evidence_note += "; " + s.config.why_not_trace;
  } else {
    if (thread_index >= 0) {
      internal::AddThreadCauses(s, a, b, static_cast<std::size_t>(thread_index), record);
    }
    if (cpu_index >= 0)
      internal::AddCpuCauses(s, a, b, static_cast<std::size_t>(cpu_index), record);
    std::string scan_note;
    if (cpu >= 0) {
      const WatchedThread task = thread_index >= 0
                                     ? s.config.threads[static_cast<std::size_t>(thread_index)]
                                     : WatchedThread{window.tid, cpu, 0, 0};
      internal::CandidateScan scan =
          internal::ScanCandidates(cpu, window.tid, task.policy, task.priority,
                                   s.config.max_threads_scanned, s.config.max_candidates);
      for (Cause& c : scan.causes) record->causes.push_back(std::move(c));
      scan_note = "; " + std::to_string(scan.threads_read) + " threads scanned for candidates";
      if (scan.bound_reached) scan_note += " (the bound: the rest not read)";
      if (scan.not_named > 0) scan_note += ", " + std::to_string(scan.not_named) + " not named";
    }
    record->evidence_note =
        Note(s, window, a, b, cpu, cpu_index >= 0, thread_index >= 0, scan_note);
  }
  last_explain_cpu_ns_ = Now(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  max_explain_cpu_ns_ = std::max(max_explain_cpu_ns_, last_explain_cpu_ns_);
  return ok;
}

}  // namespace rtloop::explain
