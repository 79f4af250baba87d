// 32-bit targets (armhf: 32-bit long, size_t and, in Debian 12, time_t): every nanosecond value,
// cycle count, release index and sequence number stays 64-bit. These tests start counters near
// 2^32 and times near 2^31 s, where a 32-bit type on the way would wrap (a 10 kHz task passes
// 2^32 releases in five days). They pass on every target; cmake/dev.sh test --arch=armhf runs
// them where the narrow types are real (cmake/README.md, "32-bit targets").
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/release_schedule.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/framework/time.h"

namespace rtloop {
namespace {

using std::chrono::nanoseconds;

constexpr std::uint64_t k2To32 = std::uint64_t{1} << 32;
constexpr nanoseconds k10kHz{100'000};
// CLOCK_MONOTONIC 2^31 s after boot: the largest second a 32-bit time_t holds, plus one.
constexpr TimePoint kNear2To31s(std::chrono::seconds(std::int64_t{1} << 31));

// Every statistic the RT thread writes is 64-bit whatever `long` and `size_t` are.
static_assert(sizeof(TaskStatsSnapshot::cycles) == 8);
static_assert(sizeof(TaskStatsSnapshot::missed_releases) == 8);
static_assert(sizeof(TaskStatsSnapshot::latency_sum_ns) == 8);
static_assert(sizeof(CycleSample::seq) == 8);
static_assert(sizeof(CycleContext::release_index) == 8);
static_assert(sizeof(nanoseconds::rep) == 8);

TEST(WideCountersTest, ReleaseIndexAndTimePassTwoToThe32) {
  ReleaseSchedule s(kNear2To31s, k10kHz, OverrunPolicy::kSkip);
  // One Step() that ends 2^32 + 4.5 periods after its release: 2^32 + 4 releases are skipped.
  const TimePoint done = kNear2To31s + k10kHz * static_cast<std::int64_t>(k2To32 + 4) + k10kHz / 2;
  const ReleaseSchedule::Advanced a = s.Advance(done);
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, k2To32 + 4);
  EXPECT_EQ(s.index(), k2To32 + 5);
  EXPECT_EQ(s.release(), kNear2To31s + k10kHz * static_cast<std::int64_t>(k2To32 + 5));
  EXPECT_GT(s.release(), done);
}

TEST(WideCountersTest, CycleEngineCarriesAReleaseIndexPastTwoToThe32) {
  TaskStats stats;
  CycleEngineConfig c;
  c.period = k10kHz;
  c.stats = &stats;
  CycleEngine engine(c, kNear2To31s);
  engine.BeginCycle(kNear2To31s);
  // The first Step() overruns by 2^32 + 2 periods (and a bit).
  engine.EndCycle(kNear2To31s + k10kHz * static_cast<std::int64_t>(k2To32 + 3) + nanoseconds(1),
                  StepResult::kContinue);
  const CycleContext& ctx = engine.BeginCycle(engine.release());
  EXPECT_EQ(ctx.release_index, k2To32 + 4);
  EXPECT_EQ(ctx.missed_releases, k2To32 + 3);
  engine.EndCycle(engine.release(), StepResult::kContinue);
  const TaskStatsSnapshot snap = stats.Snapshot();
  EXPECT_EQ(snap.missed_releases, k2To32 + 3);  // the total, beyond what 32 bits hold
  EXPECT_EQ(snap.cycles, 2u);
}

TEST(WideCountersTest, StatisticSumsPassTwoToThe32Nanoseconds) {
  TaskStats stats;
  // Three wake-ups of 1.5 * 2^31 ns (3.2 s) each: the sum, 4.5 * 2^31 ns, needs 34 bits.
  constexpr std::int64_t kLate = (std::int64_t{3} << 30);
  for (int i = 0; i < 3; ++i) stats.Record(kLate, kLate, 0, i == 0, false, k2To32);
  const TaskStatsSnapshot snap = stats.Snapshot();
  EXPECT_EQ(snap.latency_sum_ns, 3 * kLate);
  EXPECT_EQ(snap.execution_sum_ns, 3 * kLate);
  EXPECT_EQ(snap.latency_max_ns, kLate);
  EXPECT_EQ(snap.missed_releases, 3 * k2To32);
}

TEST(WideCountersTest, TimespecConversionsAtTheLast32BitSecond) {
  // The largest time a 32-bit time_t holds, to the nanosecond.
  timespec ts{};
  ts.tv_sec = std::numeric_limits<std::int32_t>::max();
  ts.tv_nsec = 999'999'999;
  const nanoseconds ns = FromTimespec(ts);
  EXPECT_EQ(ns.count(), std::int64_t{2'147'483'647'999'999'999});
  const timespec back = ToTimespec(ns);
  EXPECT_EQ(static_cast<std::int64_t>(back.tv_sec), std::int64_t{2'147'483'647});
  EXPECT_EQ(back.tv_nsec, 999'999'999);
  // A difference of two such times (as a wake-up latency is computed) stays exact.
  const TimePoint late = TimePoint::FromTimespec(ts);
  EXPECT_EQ((late - (late - nanoseconds(3'000'000'000))).count(), 3'000'000'000);
}

}  // namespace
}  // namespace rtloop
