// The PLC watchdog's CODESYS rules: consecutive violations up to the sensitivity, or one cycle
// longer than time x sensitivity; off when the time is 0; latched once tripped.
#include "plc_watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <utility>

namespace plc {
namespace {

using std::chrono::microseconds;

static_assert(noexcept(std::declval<Watchdog&>().Check(0)));
constexpr std::int64_t kUs = 1000;

TEST(PlcWatchdogTest, OffNeverTrips) {
  Watchdog wd(microseconds(0), 1);
  EXPECT_EQ(wd.state(), WatchdogState::kOff);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(wd.Check(1'000'000 * kUs));
  EXPECT_EQ(wd.violations(), 0u);
}

TEST(PlcWatchdogTest, ExactlyTheWatchdogTimeIsNotAViolation) {
  Watchdog wd(microseconds(500), 1);
  EXPECT_FALSE(wd.Check(500 * kUs));
  EXPECT_EQ(wd.state(), WatchdogState::kArmed);
  EXPECT_TRUE(wd.Check(500 * kUs + 1));
  EXPECT_EQ(wd.state(), WatchdogState::kTripped);
}

TEST(PlcWatchdogTest, ConsecutiveViolationsTripAtTheSensitivity) {
  Watchdog wd(microseconds(500), 3);
  EXPECT_FALSE(wd.Check(600 * kUs));
  EXPECT_FALSE(wd.Check(600 * kUs));
  EXPECT_EQ(wd.consecutive(), 2u);
  EXPECT_FALSE(wd.Check(100 * kUs));  // a good cycle resets the run
  EXPECT_EQ(wd.consecutive(), 0u);
  EXPECT_FALSE(wd.Check(600 * kUs));
  EXPECT_FALSE(wd.Check(600 * kUs));
  EXPECT_TRUE(wd.Check(600 * kUs));
  EXPECT_EQ(wd.state(), WatchdogState::kTripped);
  EXPECT_EQ(wd.consecutive(), 3u);
  EXPECT_EQ(wd.violations(), 5u);
  EXPECT_FALSE(wd.tripped_by_single_cycle());
}

TEST(PlcWatchdogTest, OneCycleLongerThanTimeTimesSensitivityTripsAtOnce) {
  Watchdog wd(microseconds(500), 3);
  EXPECT_FALSE(wd.Check(1500 * kUs));  // = time x sensitivity: one violation only
  EXPECT_FALSE(wd.Check(100 * kUs));
  EXPECT_TRUE(wd.Check(1500 * kUs + 1));
  EXPECT_TRUE(wd.tripped_by_single_cycle());
  EXPECT_EQ(wd.consecutive(), 1u);
}

TEST(PlcWatchdogTest, SensitivityZeroCountsAsOne) {
  Watchdog wd(microseconds(500), 0);
  EXPECT_EQ(wd.sensitivity(), 1u);
  EXPECT_TRUE(wd.Check(501 * kUs));
}

TEST(PlcWatchdogTest, StaysTrippedAndReportsTheTripOnce) {
  Watchdog wd(microseconds(500), 1);
  EXPECT_TRUE(wd.Check(900 * kUs));
  EXPECT_FALSE(wd.Check(900 * kUs));
  EXPECT_FALSE(wd.Check(10 * kUs));
  EXPECT_EQ(wd.state(), WatchdogState::kTripped);
  EXPECT_STREQ(WatchdogStateName(wd.state()), "TRIPPED");
}

}  // namespace
}  // namespace plc
