// Fake-clock tests of the release arithmetic and the overrun policies (framework/README.md,
// "Measurement").
#include "rtloop/framework/release_schedule.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace rtloop {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr nanoseconds kPeriod = microseconds(1000);
constexpr TimePoint kStart(std::chrono::seconds(100));

TimePoint At(std::int64_t us) { return kStart + microseconds(us); }

static_assert(noexcept(std::declval<ReleaseSchedule&>().Advance(TimePoint())));
static_assert(noexcept(std::declval<ReleaseSchedule&>().Rebase(TimePoint())));

TEST(ReleaseScheduleTest, OnTimeReleasesFollowTheGrid) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  for (std::int64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(s.release(), At(1000 * k));
    EXPECT_EQ(s.index(), static_cast<std::uint64_t>(k));
    const ReleaseSchedule::Advanced a = s.Advance(At(1000 * k + 300));
    EXPECT_FALSE(a.overrun);
    EXPECT_EQ(a.missed, 0u);
  }
}

TEST(ReleaseScheduleTest, EndingExactlyAtTheNextReleaseIsNotAnOverrun) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  EXPECT_FALSE(s.Advance(At(1000)).overrun);
  EXPECT_EQ(s.release(), At(1000));
}

TEST(ReleaseScheduleTest, PhaseOffsetShiftsTheWholeGrid) {
  ReleaseSchedule s(kStart + microseconds(250), kPeriod, OverrunPolicy::kSkip);
  EXPECT_EQ(s.release(), At(250));
  s.Advance(At(260));
  EXPECT_EQ(s.release(), At(1250));
  s.Advance(At(3100));  // overrun: keeps the 250 µs phase
  EXPECT_EQ(s.release(), At(3250));
}

TEST(ReleaseScheduleTest, SkipPolicyCountsMissedReleasesAndKeepsPhase) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  // Release 0's step ends at 2.5 ms: releases 1 (1 ms) and 2 (2 ms) have passed.
  const ReleaseSchedule::Advanced a = s.Advance(At(2500));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, 2u);
  EXPECT_EQ(s.release(), At(3000));
  EXPECT_EQ(s.index(), 3u);
  // Back on time afterwards, same grid.
  EXPECT_FALSE(s.Advance(At(3100)).overrun);
  EXPECT_EQ(s.release(), At(4000));
  EXPECT_EQ(s.index(), 4u);
}

TEST(ReleaseScheduleTest, SkipPolicyJustPastTheNextReleaseMissesOne) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  const ReleaseSchedule::Advanced a = s.Advance(At(1000) + nanoseconds(1));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, 1u);
  EXPECT_EQ(s.release(), At(2000));
}

TEST(ReleaseScheduleTest, SkipPolicyEndingOnAGridPointWaitsForIt) {
  // Like cyclictest: skip while now > next, so a release equal to now is kept.
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  const ReleaseSchedule::Advanced a = s.Advance(At(3000));
  EXPECT_EQ(a.missed, 2u);
  EXPECT_EQ(s.release(), At(3000));
}

TEST(ReleaseScheduleTest, CatchUpPolicyRunsEveryReleaseBackToBack) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kCatchUp);
  ReleaseSchedule::Advanced a = s.Advance(At(3500));  // releases 1, 2, 3 are due
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, 0u);
  EXPECT_EQ(s.release(), At(1000));
  // Each catch-up step is short; the releases come due immediately, one by one.
  a = s.Advance(At(3510));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(s.release(), At(2000));
  a = s.Advance(At(3520));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(s.release(), At(3000));
  a = s.Advance(At(3530));  // next is 4 ms: on time again
  EXPECT_FALSE(a.overrun);
  EXPECT_EQ(s.release(), At(4000));
  EXPECT_EQ(s.index(), 4u);
}

TEST(ReleaseScheduleTest, ReanchorPolicyShiftsPhase) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kReanchor);
  const ReleaseSchedule::Advanced a = s.Advance(At(2500));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, 2u);  // old-grid releases 1 and 2 did not run
  EXPECT_EQ(s.release(), At(3500));
  EXPECT_EQ(s.index(), 1u);
  // The new grid is 500 µs out of phase with the old one, and stays there.
  EXPECT_FALSE(s.Advance(At(3600)).overrun);
  EXPECT_EQ(s.release(), At(4500));
}

TEST(ReleaseScheduleTest, RebaseReplacesThePendingRelease) {
  ReleaseSchedule s(kStart, kPeriod, OverrunPolicy::kSkip);
  s.Rebase(At(777));
  EXPECT_EQ(s.release(), At(777));
  EXPECT_EQ(s.index(), 0u);
  s.Advance(At(800));
  EXPECT_EQ(s.release(), At(1777));
}

TEST(ReleaseScheduleTest, LongOverrunOnAShortPeriodCountsExactly) {
  ReleaseSchedule s(kStart, nanoseconds(100), OverrunPolicy::kSkip);
  const ReleaseSchedule::Advanced a = s.Advance(kStart + std::chrono::seconds(1));
  EXPECT_EQ(a.missed, 10'000'000u - 1u);
  EXPECT_EQ(s.release(), kStart + std::chrono::seconds(1));
}

TEST(ReleaseScheduleTest, HugeGapWithAHugePeriodDoesNotOverflow) {
  // The grid starts one period before the clock's epoch and the step ends near INT64_MAX: the gap
  // is ~INT64_MAX, and late + period - 1 would overflow.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const nanoseconds period(kMax / 4);
  ReleaseSchedule s(TimePoint(-period), period, OverrunPolicy::kSkip);
  const ReleaseSchedule::Advanced a = s.Advance(TimePoint(nanoseconds(kMax - 10)));
  EXPECT_TRUE(a.overrun);
  EXPECT_EQ(a.missed, 4u);  // releases 1..4 lie before the end; release 5 is at kMax - 3
  EXPECT_EQ(s.release(), TimePoint(period * 4));
  EXPECT_EQ(s.index(), 5u);
}

}  // namespace
}  // namespace rtloop
