// SeqLockValue: single-threaded semantics, the RT contract (noexcept, no allocation) and the
// bounded-attempt reader. The multi-threaded proof is seqlock_value_stress_test.cc.
#include "rtloop/framework/seqlock_value.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <utility>

#include "alloc_counter.h"

namespace rtloop {
namespace {

struct Pose {
  double x = 0.0;
  double y = 0.0;
  std::int32_t mode = 0;
  bool valid = false;  // odd size: exercises the tail word
};

using PoseValue = SeqLockValue<Pose>;
static_assert(noexcept(std::declval<PoseValue&>().Store(Pose{})));
static_assert(noexcept(std::declval<const PoseValue&>().TryLoad(std::declval<Pose&>())));
static_assert(noexcept(std::declval<const PoseValue&>().TryLoad(std::declval<Pose&>(), 3)));
static_assert(noexcept(std::declval<const PoseValue&>().Load()));
static_assert(noexcept(std::declval<const PoseValue&>().version()));

TEST(SeqLockValueTest, HoldsTheInitialValueAtVersionZero) {
  const PoseValue value(Pose{1.5, -2.0, 7, true});
  EXPECT_EQ(value.version(), 0u);
  Pose p;
  ASSERT_TRUE(value.TryLoad(p));
  EXPECT_EQ(p.x, 1.5);
  EXPECT_EQ(p.y, -2.0);
  EXPECT_EQ(p.mode, 7);
  EXPECT_TRUE(p.valid);
}

TEST(SeqLockValueTest, DefaultConstructedHoldsValueInitialisedT) {
  const SeqLockValue<std::uint64_t> value;
  EXPECT_EQ(value.Load(), 0u);
}

TEST(SeqLockValueTest, LoadReturnsTheLastStoreAndVersionCountsStores) {
  PoseValue value;
  value.Store(Pose{1.0, 2.0, 1, true});
  value.Store(Pose{3.0, 4.0, 2, false});
  EXPECT_EQ(value.version(), 2u);
  const Pose p = value.Load();
  EXPECT_EQ(p.x, 3.0);
  EXPECT_EQ(p.y, 4.0);
  EXPECT_EQ(p.mode, 2);
  EXPECT_FALSE(p.valid);
}

TEST(SeqLockValueTest, CarriesValuesLargerThanAFewWords) {
  std::array<std::uint16_t, 301> big{};  // 602 bytes: not a multiple of the word size
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint16_t>(i * 3);
  SeqLockValue<std::array<std::uint16_t, 301>> value;
  value.Store(big);
  EXPECT_EQ(value.Load(), big);
}

TEST(SeqLockValueTest, BoundedTryLoadSucceedsWithoutAConcurrentWriter) {
  PoseValue value;
  value.Store(Pose{9.0, 0.0, 0, true});
  Pose p;
  ASSERT_TRUE(value.TryLoad(p, 1));
  EXPECT_EQ(p.x, 9.0);
  Pose untouched{-1.0, -1.0, -1, false};
  EXPECT_FALSE(value.TryLoad(untouched, 0));  // zero attempts: nothing read
  EXPECT_EQ(untouched.x, -1.0);
}

TEST(SeqLockValueTest, StoreAndLoadDoNotAllocate) {
  if (!testing::AllocationCountingEnabled()) GTEST_SKIP() << "allocation counting is compiled out";
  PoseValue value;
  Pose p;
  double sum = 0.0;
  testing::AllocationCounter counter;
  for (int i = 0; i < 10'000; ++i) {
    value.Store(Pose{static_cast<double>(i), 0.0, i, true});
    if (value.TryLoad(p)) sum += p.x;
    sum += value.Load().x;
    if (value.TryLoad(p, 4)) sum += p.y;
  }
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_GT(sum, 0.0);
}

}  // namespace
}  // namespace rtloop
