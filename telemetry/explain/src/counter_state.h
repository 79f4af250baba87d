// The inside of CounterEvidence (counter_evidence.h): its history of snapshots, the open /proc
// files, and the functions that turn two snapshots into causes (counter_attribution.cc) and name
// the candidate threads (counter_candidates.cc). Internal to rtloop_explain.
//
// A snapshot is one row of `values`: per watched thread 4 counters (minor and major faults,
// voluntary and involuntary switches), then per watched CPU its steal ticks, kMaxSoftirqKinds
// softirq counts and max_irq_lines IRQ counts (kNoCount: not read). The row of a line or kind is
// its index in irq_lines / softirq_kinds, which only grow (up to their capacity).
//
// Threading: used by the one thread that owns the CounterEvidence. Not RT-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "counter_proc.h"
#include "rtloop/explain/counter_evidence.h"

namespace rtloop::explain {

namespace internal {

inline constexpr std::size_t kMaxSoftirqKinds = 16;  // the kernel has 10
inline constexpr std::size_t kThreadCounters = 4;
enum ThreadCounter : std::size_t { kMinflt = 0, kMajflt = 1, kVoluntary = 2, kNonvoluntary = 3 };

// A name kept in fixed storage (no allocation when it changes).
template <std::size_t N>
struct FixedName {
  std::array<char, N> text{};
  std::size_t size = 0;
  std::string_view view() const noexcept { return {text.data(), size}; }
  void Set(std::string_view s) noexcept {
    size = s.size() < N ? s.size() : N;
    for (std::size_t i = 0; i < size; ++i) text[i] = s[i];
  }
};

struct IrqLine {
  FixedName<16> label;        // "38", "LOC"
  FixedName<96> description;  // "PCI-MSIX-0000:00:03.0  1-edge  virtio2-input.0"
};

// Candidate threads found by a scan of /proc/*/task/*.
struct CandidateScan {
  std::vector<Cause> causes;     // kThread, highest priority first, at most max_candidates
  std::size_t threads_read = 0;  // stat files read
  std::size_t not_named = 0;     // candidates beyond max_candidates
  bool bound_reached = false;    // max_threads_scanned stopped the scan
};

// The threads of any process that may run on `cpu` (Cpus_allowed_list) with a real-time policy
// and a priority at least the task's (`policy`, `priority`), except `exclude_tid`.
CandidateScan ScanCandidates(int cpu, int exclude_tid, int policy, int priority,
                             std::size_t max_threads, std::size_t max_candidates);

// True when a thread of (cand_policy, cand_priority) may preempt one of (policy, priority).
bool MayPreempt(int cand_policy, int cand_priority, int policy, int priority) noexcept;

}  // namespace internal

struct CounterEvidence::State {
  CounterConfig config;
  std::vector<int> cpus;  // the watched CPUs, distinct
  std::vector<internal::ProcFile> thread_stat;
  std::vector<internal::ProcFile> thread_status;
  internal::ProcFile interrupts;
  internal::ProcFile softirqs;
  internal::ProcFile stat;

  std::vector<internal::IrqLine> irq_lines;  // capacity max_irq_lines, reserved at Create()
  std::vector<internal::FixedName<16>> softirq_kinds;  // capacity kMaxSoftirqKinds

  std::size_t stride = 0;              // values per snapshot
  std::vector<std::uint64_t> values;   // history x stride
  std::vector<std::int64_t> begin_ns;  // CLOCK_MONOTONIC before the snapshot's first read
  std::vector<std::int64_t> end_ns;    // ... after its last read
  std::vector<std::uint8_t> cut;       // 1: /proc/interrupts did not fit its buffer
  std::size_t next = 0;                // the slot the next snapshot goes to
  std::size_t count = 0;               // snapshots kept, at most history

  std::vector<int> columns;           // scratch, one per watched CPU
  std::vector<std::uint64_t> counts;  // scratch, one per watched CPU
  std::int64_t ns_per_tick = 10'000'000;

  std::size_t cpu_base(std::size_t cpu_index) const noexcept {
    return config.threads.size() * internal::kThreadCounters +
           cpu_index * (1 + internal::kMaxSoftirqKinds + config.max_irq_lines);
  }
  std::size_t softirq_offset(std::size_t kind) const noexcept { return 1 + kind; }
  std::size_t irq_offset(std::size_t line) const noexcept {
    return 1 + internal::kMaxSoftirqKinds + line;
  }
  const std::uint64_t* row(std::size_t slot) const noexcept { return &values[slot * stride]; }
  // The slot of the i-th snapshot kept, oldest first.
  std::size_t slot_of(std::size_t i) const noexcept {
    const std::size_t history = begin_ns.size();
    return (next + history - count + i) % history;
  }
};

namespace internal {

// Causes from the difference of two snapshots (slots `a` before `b`), appended to the record
// with raw lines: the thread's faults and involuntary switches (thread_index >= 0), the IRQs,
// softirqs and steal on the CPU (cpu_index >= 0; steal capped at the window's length).
void AddThreadCauses(const CounterEvidence::State& s, std::size_t a, std::size_t b,
                     std::size_t thread_index, OutlierRecord* record);
void AddCpuCauses(const CounterEvidence::State& s, std::size_t a, std::size_t b,
                  std::size_t cpu_index, OutlierRecord* record);

}  // namespace internal
}  // namespace rtloop::explain
