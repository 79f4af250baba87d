#include "rtloop/telemetry/sample_ring.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "alloc_counter.h"
#include "rtloop/telemetry/sample.h"
#include "test_util.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

static_assert(noexcept(std::declval<SampleRing::Writer&>().TryPush(Sample{})));
static_assert(noexcept(MakeSample(CycleSample{})));

std::unique_ptr<SampleRing> MakeRing(std::size_t capacity) {
  Result<std::unique_ptr<SampleRing>> ring = SampleRing::Create({.capacity = capacity});
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return std::move(ring).value();
}

Sample Numbered(std::uint64_t seq) {
  Sample s;
  s.seq = seq;
  s.latency_ns = static_cast<std::int32_t>(seq % 1000);
  return s;
}

TEST(SampleTest, MakeSampleNarrowsAndFlagsSaturatedFields) {
  CycleSample c = testing::MakeCycle(7, 42, 3'000'000'000, 5'000'000'000);
  c.missed_releases = 3;
  c.flags = kCycleOverrun;
  const Sample s = MakeSample(c);
  EXPECT_EQ(s.seq, 42u);
  EXPECT_EQ(s.task, 7u);
  EXPECT_EQ(s.latency_ns, std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(s.execution_ns, std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(s.missed_releases, 3u);
  EXPECT_EQ(s.flags, kCycleOverrun | kSampleLatencySaturated | kSampleExecutionSaturated);
  const Sample n = MakeSample(testing::MakeCycle(1, 1, -1234, 5678));
  EXPECT_EQ(n.latency_ns, -1234);
  EXPECT_EQ(n.execution_ns, 5678u);
  EXPECT_EQ(n.flags, 0u);
}

TEST(SampleTest, MakeSampleSaturatesExactlyAtTheFieldLimits) {
  constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
  constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
  struct Case {
    std::int64_t latency, execution;
    std::int32_t latency_out;
    std::uint32_t execution_out;
    std::uint16_t flags;
  };
  const Case cases[] = {
      {kI32Min, 0, std::numeric_limits<std::int32_t>::min(), 0, 0},
      {kI32Max, kU32Max, std::numeric_limits<std::int32_t>::max(), 0xffff'ffffu, 0},
      {kI32Min - 1, -1, std::numeric_limits<std::int32_t>::min(), 0, kSampleSaturated},
      {kI32Max + 1, kU32Max + 1, std::numeric_limits<std::int32_t>::max(), 0xffff'ffffu,
       kSampleSaturated},
      {kI64Min, kI64Min, std::numeric_limits<std::int32_t>::min(), 0, kSampleSaturated},
      {kI64Max, kI64Max, std::numeric_limits<std::int32_t>::max(), 0xffff'ffffu, kSampleSaturated},
      {kI64Max, 1, std::numeric_limits<std::int32_t>::max(), 1, kSampleLatencySaturated},
      {-1, kI64Max, -1, 0xffff'ffffu, kSampleExecutionSaturated},
  };
  for (const Case& k : cases) {
    const Sample s = MakeSample(testing::MakeCycle(1, 1, k.latency, k.execution));  // no flags
    EXPECT_EQ(s.latency_ns, k.latency_out) << k.latency;
    EXPECT_EQ(s.execution_ns, k.execution_out) << k.execution;
    EXPECT_EQ(s.flags, k.flags) << k.latency << " " << k.execution;
  }
}

TEST(SampleRingTest, CapacityCoversTwiceTheDrainPeriodWithAFloor) {
  EXPECT_EQ(RingCapacityFor(milliseconds(1), milliseconds(1), 1024), 1024u);  // floor
  EXPECT_EQ(RingCapacityFor(microseconds(1), milliseconds(4), 1024), 8192u);  // 8000 -> 2^13
  EXPECT_GE(RingCapacityFor(microseconds(2), milliseconds(1), 0), 1000u);
  EXPECT_EQ(RingCapacityFor(microseconds(3), milliseconds(1), 0), 1024u);  // 666.7 -> 667 -> 2^10
  // Absurd inputs saturate instead of overflowing (and Create() then refuses the size).
  const std::size_t huge =
      RingCapacityFor(std::chrono::nanoseconds(1), std::chrono::nanoseconds::max(), 0);
  EXPECT_EQ(huge, std::size_t{1} << 31);
  EXPECT_FALSE(SampleRing::Create({.capacity = huge}).ok());
}

TEST(SampleRingTest, CreateRejectsZeroCapacity) {
  Result<std::unique_ptr<SampleRing>> ring = SampleRing::Create({.capacity = 0});
  ASSERT_FALSE(ring.ok());
  EXPECT_EQ(ring.status().code(), StatusCode::kInvalidArgument);
}

TEST(SampleRingTest, TryPushFailsAndCountsTheDropWhenFull) {
  auto ring = MakeRing(1024);
  ASSERT_EQ(ring->capacity(), 1024u);
  ring->writer().AttachToCurrentThread();
  for (std::uint64_t i = 0; i < 1024; ++i) ASSERT_TRUE(ring->writer().TryPush(Numbered(i))) << i;
  EXPECT_FALSE(ring->writer().TryPush(Numbered(1024)));
  EXPECT_EQ(ring->ApproxSize(), 1024u);
  EXPECT_EQ(ring->writer().pushed(), 1024u);
  EXPECT_EQ(ring->writer().dropped(), 1u);
  std::vector<Sample> out(4096);
  std::size_t total = 0;
  while (std::size_t n = ring->reader().Drain(out.data() + total, out.size() - total)) total += n;
  ASSERT_EQ(total, 1024u);
  for (std::uint64_t i = 0; i < total; ++i) EXPECT_EQ(out[i].seq, i);
  EXPECT_EQ(ring->reader().drained(), 1024u);
  EXPECT_EQ(ring->ApproxSize(), 0u);
}

TEST(SampleRingTest, TryPushWithoutAProducerTokenDropsAndCounts) {
  auto ring = MakeRing(256);
  EXPECT_FALSE(ring->writer().TryPush(Numbered(0)));
  EXPECT_EQ(ring->writer().dropped(), 1u);
}

TEST(SampleRingTest, ReattachingTheWriterKeepsOrderAndCapacity) {
  auto ring = MakeRing(512);
  ring->writer().AttachToCurrentThread();
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(ring->writer().TryPush(Numbered(i)));
  ring->writer().AttachToCurrentThread();  // e.g. the task's thread was restarted
  std::uint64_t pushed = 100;
  while (ring->writer().TryPush(Numbered(pushed))) ++pushed;
  EXPECT_GE(pushed, 256u);
  std::vector<Sample> out(1024);
  std::size_t total = 0;
  while (std::size_t n = ring->reader().Drain(out.data() + total, out.size() - total)) total += n;
  ASSERT_EQ(total, pushed);
  for (std::uint64_t i = 0; i < total; ++i) EXPECT_EQ(out[i].seq, i);
}

TEST(SampleRingTest, RingIsReusedIndefinitelyWhenDrained) {
  auto ring = MakeRing(1024);
  ring->writer().AttachToCurrentThread();
  std::vector<Sample> out(512);
  std::uint64_t next_expected = 0;
  for (std::uint64_t i = 0; i < 100'000; ++i) {
    ASSERT_TRUE(ring->writer().TryPush(Numbered(i)));
    if (i % 300 == 299) {
      while (std::size_t n = ring->reader().Drain(out.data(), out.size())) {
        for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(out[k].seq, next_expected++);
      }
    }
  }
  EXPECT_EQ(ring->writer().dropped(), 0u);
}

TEST(SampleRingTest, PushAndDrainMakeNoHeapAllocationsInSteadyState) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  auto ring = MakeRing(2048);
  ring->writer().AttachToCurrentThread();
  std::vector<Sample> out(1024);
  rtloop::testing::AllocationCounter counter;
  for (std::uint64_t i = 0; i < 200'000; ++i) {
    (void)ring->writer().TryPush(Numbered(i));
    if (i % 1000 == 999) {
      while (ring->reader().Drain(out.data(), out.size()) != 0) {
      }
    }
  }
  for (std::uint64_t i = 0; i < 5000; ++i) (void)ring->writer().TryPush(Numbered(i));  // full
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_GT(ring->writer().dropped(), 0u);
}

TEST(SampleRingTest, AttachingTheWriterReusesThePrefaultedProducer) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
  }
  auto ring = MakeRing(1024);
  rtloop::testing::AllocationCounter counter;
  ring->writer().AttachToCurrentThread();
  // Only the token itself: the producer (and its blocks) that the set-up pass filled is recycled,
  // so the RT thread writes to memory that is already mapped.
  EXPECT_EQ(counter.Allocations(), 1u);
  for (std::uint64_t i = 0; i < 1024; ++i) ASSERT_TRUE(ring->writer().TryPush(Numbered(i))) << i;
  EXPECT_EQ(counter.Allocations(), 1u);
}

}  // namespace
}  // namespace rtloop::telemetry
