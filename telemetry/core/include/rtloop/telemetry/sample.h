// Sample: one cycle of one task as it travels through the telemetry pipeline (ring -> collector ->
// subscribers and the sample log). A fixed 32-byte, trivially copyable record (telemetry/README.md,
// "Samples and the sample log").
//
//   rtloop::telemetry::Sample s = rtloop::telemetry::MakeSample(cycle_sample);
//   writer.TryPush(s);
//
// Narrow fields saturate instead of wrapping: a wake-up latency beyond ±2.1 s or an execution time
// beyond 4.29 s is stored as the limit and flagged (kSampleLatencySaturated /
// kSampleExecutionSaturated). The per-task histograms and statistics see the full 64-bit values;
// only the per-sample stream is narrowed.
//
// Thread-safety: a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "rtloop/framework/cycle_observer.h"

namespace rtloop::telemetry {

// Flags of a Sample: the low bits are the framework's CycleFlags (kCycleOverrun, kCycleFault,
// kCycleFirst); the bits below are added by telemetry.
inline constexpr std::uint16_t kSampleLatencySaturated =
    1u << 8;  // latency_ns was clamped to the int32 range
inline constexpr std::uint16_t kSampleExecutionSaturated =
    1u << 9;  // execution_ns was clamped to the uint32 range
// Either: the Sample does not hold the cycle's exact values (the RT thread records such a cycle in
// the histograms itself, TaskTelemetry::OnCycle, and a drain skips it).
inline constexpr std::uint16_t kSampleSaturated =
    kSampleLatencySaturated | kSampleExecutionSaturated;

struct Sample {
  std::uint64_t seq = 0;              // 0-based cycle index of the task
  std::int64_t release_ns = 0;        // E_k, ns since the task clock's epoch
  std::int32_t latency_ns = 0;        // wake-up latency L_k = W_k - E_k, ns, signed, saturating
  std::uint32_t execution_ns = 0;     // execution time X_k = D_k - W_k, ns, saturating
  std::uint32_t missed_releases = 0;  // releases skipped after this cycle's overrun
  std::uint16_t task = 0;             // TaskId (ids above 65535 are not supported by telemetry)
  std::uint16_t flags = 0;            // CycleFlags | SampleFlags
};

static_assert(sizeof(Sample) == 32, "Sample must stay 32 bytes (telemetry/README.md)");
static_assert(alignof(Sample) == 8);
static_assert(std::is_trivially_copyable_v<Sample>);
static_assert(offsetof(Sample, seq) == 0);
static_assert(offsetof(Sample, release_ns) == 8);
static_assert(offsetof(Sample, latency_ns) == 16);
static_assert(offsetof(Sample, execution_ns) == 20);
static_assert(offsetof(Sample, missed_releases) == 24);
static_assert(offsetof(Sample, task) == 28);
static_assert(offsetof(Sample, flags) == 30);

// The largest TaskId telemetry can carry in a Sample.
inline constexpr TaskId kMaxSampleTaskId = std::numeric_limits<std::uint16_t>::max();

// Narrows a framework CycleSample into a Sample, saturating and flagging. RT-safe.
constexpr Sample MakeSample(const CycleSample& c) noexcept {
  Sample s;
  s.seq = c.seq;
  s.release_ns = c.release.ns();
  std::uint32_t flags = c.flags & 0xffu;
  // One unsigned compare a field on the common path: L + 2^31 in [0, 2^32) is the int32 range,
  // X in [0, 2^32) the uint32 one (unsigned arithmetic: no overflow for any int64).
  const auto latency = static_cast<std::uint64_t>(c.wakeup_latency_ns);
  if (latency + 0x8000'0000u <= 0xffff'ffffu) [[likely]] {
    s.latency_ns = static_cast<std::int32_t>(c.wakeup_latency_ns);
  } else {
    s.latency_ns = c.wakeup_latency_ns < 0 ? std::numeric_limits<std::int32_t>::min()
                                           : std::numeric_limits<std::int32_t>::max();
    flags |= kSampleLatencySaturated;
  }
  const auto execution = static_cast<std::uint64_t>(c.execution_ns);
  if (execution <= 0xffff'ffffu) [[likely]] {
    s.execution_ns = static_cast<std::uint32_t>(execution);
  } else {
    s.execution_ns = c.execution_ns < 0 ? 0 : std::numeric_limits<std::uint32_t>::max();
    flags |= kSampleExecutionSaturated;
  }
  s.missed_releases = c.missed_releases;
  s.task = static_cast<std::uint16_t>(c.task > kMaxSampleTaskId ? kMaxSampleTaskId : c.task);
  s.flags = static_cast<std::uint16_t>(flags);
  return s;
}

}  // namespace rtloop::telemetry
