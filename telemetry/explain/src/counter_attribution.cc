// The counter evidence's attribution (counter_state.h): the differences of two snapshots as
// causes. Counts only (ns = -1), except steal time, which is a time (capped at the window).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "counter_state.h"

namespace rtloop::explain::internal {
namespace {

// b - a, or 0 when either was not read or the counter went backwards (a line reassigned).
std::uint64_t Delta(std::uint64_t a, std::uint64_t b) noexcept {
  if (a == kNoCount || b == kNoCount || b < a) return 0;
  return b - a;
}

std::string Interval(const CounterEvidence::State& s, std::size_t a, std::size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "over the %.1f ms sampling interval around the window",
                static_cast<double>(s.begin_ns[b] - s.end_ns[a]) / 1e6);
  return buf;
}

Cause Counted(CauseKind kind, std::string name, std::uint64_t count, int id, std::string detail) {
  Cause c;
  c.kind = kind;
  c.name = std::move(name);
  c.count = count;
  c.id = id;
  c.detail = std::move(detail);
  return c;
}

}  // namespace

void AddThreadCauses(const CounterEvidence::State& s, std::size_t a, std::size_t b,
                     std::size_t thread_index, OutlierRecord* record) {
  const std::uint64_t* ta = s.row(a) + thread_index * kThreadCounters;
  const std::uint64_t* tb = s.row(b) + thread_index * kThreadCounters;
  const std::uint64_t minor = Delta(ta[kMinflt], tb[kMinflt]);
  const std::uint64_t major = Delta(ta[kMajflt], tb[kMajflt]);
  const std::uint64_t voluntary = Delta(ta[kVoluntary], tb[kVoluntary]);
  const std::uint64_t involuntary = Delta(ta[kNonvoluntary], tb[kNonvoluntary]);
  const int tid = s.config.threads[thread_index].tid;
  // Either way one raw line starts "tid N:": the Explainer carries it into a record the trace
  // made, as the page faults' evidence or as why there is none (Explainer::FaultsFromCounters).
  if (std::any_of(ta, ta + kThreadCounters, [](std::uint64_t v) { return v == kNoCount; }) ||
      std::any_of(tb, tb + kThreadCounters, [](std::uint64_t v) { return v == kNoCount; })) {
    record->raw.push_back("tid " + std::to_string(tid) +
                          ": counters not read in a snapshot (has the thread exited?)");
    return;
  }
  const std::string interval = Interval(s, a, b);
  if (minor + major > 0) {
    record->causes.push_back(Counted(
        CauseKind::kPageFaults, "page faults", minor + major, -1,
        "major " + std::to_string(major) + ", minor " + std::to_string(minor) + " " + interval));
  }
  if (involuntary > 0) {
    record->causes.push_back(Counted(CauseKind::kPreemption, "involuntary switches", involuntary,
                                     -1,
                                     "switched out involuntarily " + interval +
                                         " (who ran is unknown without the "
                                         "trace; voluntary switches " +
                                         std::to_string(voluntary) + ")"));
  }
  char line[160];
  std::snprintf(line, sizeof line,
                "tid %d: minflt +%" PRIu64 " majflt +%" PRIu64 " voluntary_ctxt_switches +%" PRIu64
                " nonvoluntary_ctxt_switches +%" PRIu64,
                tid, minor, major, voluntary, involuntary);
  record->raw.emplace_back(line);
}

void AddCpuCauses(const CounterEvidence::State& s, std::size_t a, std::size_t b,
                  std::size_t cpu_index, OutlierRecord* record) {
  const int cpu = s.cpus[cpu_index];
  const std::uint64_t* ca = s.row(a) + s.cpu_base(cpu_index);
  const std::uint64_t* cb = s.row(b) + s.cpu_base(cpu_index);
  const std::string on_cpu = " on CPU " + std::to_string(cpu) + " " + Interval(s, a, b);
  for (std::size_t i = 0; i < s.irq_lines.size(); ++i) {
    const std::uint64_t n = Delta(ca[s.irq_offset(i)], cb[s.irq_offset(i)]);
    if (n == 0) continue;
    const IrqLine& line = s.irq_lines[i];
    const std::string label(line.label.view());
    const std::string description(line.description.view());
    const bool numbered = IsIrqNumber(line.label.view());
    std::string name = numbered ? std::string(IrqDeviceName(line.description.view())) : label;
    if (name.empty()) name = label;
    const int id = numbered ? std::atoi(label.c_str()) : -1;
    std::string detail = numbered ? "IRQ " : "";
    detail.append(label).append(" (").append(description).append(")").append(on_cpu);
    record->causes.push_back(Counted(CauseKind::kIrq, name, n, id, std::move(detail)));
    std::string raw = "CPU" + std::to_string(cpu);
    raw.append(" ").append(label).append(": +").append(std::to_string(n)).append("  ");
    raw.append(description);
    record->raw.push_back(std::move(raw));
  }
  for (std::size_t k = 0; k < s.softirq_kinds.size(); ++k) {
    const std::uint64_t n = Delta(ca[s.softirq_offset(k)], cb[s.softirq_offset(k)]);
    if (n == 0) continue;
    const std::string name(s.softirq_kinds[k].view());
    record->causes.push_back(Counted(CauseKind::kSoftirq, name, n, -1, "softirq" + on_cpu));
    record->raw.push_back("CPU" + std::to_string(cpu) + " softirq " + name + ": +" +
                          std::to_string(n));
  }
  const std::uint64_t ticks = Delta(ca[0], cb[0]);
  if (ticks > 0) {
    const std::int64_t steal_ns = static_cast<std::int64_t>(ticks) * s.ns_per_tick;
    const std::int64_t window = std::max<std::int64_t>(record->window.length_ns(), 0);
    Cause c = Counted(CauseKind::kSteal, "steal", ticks, -1,
                      std::to_string(steal_ns / 1000) + " us of steal time" + on_cpu +
                          ", not only inside it (capped at the window's length)");
    c.ns = std::min(steal_ns, window);
    record->causes.push_back(std::move(c));
    record->raw.push_back("CPU" + std::to_string(cpu) + " steal: +" + std::to_string(ticks) +
                          " ticks");
  }
}

}  // namespace rtloop::explain::internal
