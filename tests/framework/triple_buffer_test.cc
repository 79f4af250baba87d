// TripleBuffer: single-threaded semantics (latest value wins, Update() reports news, slot
// rotation), the RT contract (noexcept, no allocation). Multi-threaded:
// triple_buffer_stress_test.cc.
#include "rtloop/framework/triple_buffer.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <utility>

#include "alloc_counter.h"

namespace rtloop {
namespace {

struct Image {
  std::uint64_t seq = 0;
  std::array<std::int32_t, 8> words{};
};

using ImageBuffer = TripleBuffer<Image>;
static_assert(noexcept(std::declval<ImageBuffer&>().WriteSlot()));
static_assert(noexcept(std::declval<ImageBuffer&>().Publish()));
static_assert(noexcept(std::declval<ImageBuffer&>().Write(Image{})));
static_assert(noexcept(std::declval<ImageBuffer&>().Update()));
static_assert(noexcept(std::declval<const ImageBuffer&>().ReadSlot()));
static_assert(noexcept(std::declval<ImageBuffer&>().Read()));

TEST(TripleBufferTest, ReaderSeesTheInitialValueUntilSomethingIsPublished) {
  ImageBuffer buffer(Image{42, {}});
  EXPECT_FALSE(buffer.Update());
  EXPECT_EQ(buffer.ReadSlot().seq, 42u);
  EXPECT_EQ(buffer.Read().seq, 42u);
}

TEST(TripleBufferTest, UpdateTakesThePublishedValueOnce) {
  ImageBuffer buffer;
  buffer.Write(Image{1, {}});
  EXPECT_TRUE(buffer.Update());
  EXPECT_EQ(buffer.ReadSlot().seq, 1u);
  EXPECT_FALSE(buffer.Update());         // nothing new
  EXPECT_EQ(buffer.ReadSlot().seq, 1u);  // still there
  EXPECT_EQ(buffer.taken(), 1u);
  EXPECT_EQ(buffer.published(), 1u);
}

TEST(TripleBufferTest, LatestPublishedValueWinsOverUntakenOnes) {
  ImageBuffer buffer;
  for (std::uint64_t i = 1; i <= 5; ++i) buffer.Write(Image{i, {}});
  EXPECT_TRUE(buffer.Update());
  EXPECT_EQ(buffer.ReadSlot().seq, 5u);
  EXPECT_FALSE(buffer.Update());
}

TEST(TripleBufferTest, WriteSlotIsNeverTheSlotTheReaderHolds) {
  ImageBuffer buffer;
  std::set<const Image*> seen;
  for (std::uint64_t i = 1; i <= 12; ++i) {
    Image& slot = buffer.WriteSlot();
    EXPECT_NE(&slot, &buffer.ReadSlot());
    seen.insert(&slot);
    slot.seq = i;
    buffer.Publish();
    if (i % 3 == 0) {
      ASSERT_TRUE(buffer.Update());
      EXPECT_EQ(buffer.ReadSlot().seq, i);
    }
  }
  EXPECT_EQ(seen.size(), 3u);  // the slots rotate through all three
}

TEST(TripleBufferTest, InPlaceWritesArePublishedWhole) {
  ImageBuffer buffer;
  Image& slot = buffer.WriteSlot();
  slot.seq = 7;
  for (std::size_t i = 0; i < slot.words.size(); ++i) slot.words[i] = static_cast<std::int32_t>(i);
  buffer.Publish();
  ASSERT_TRUE(buffer.Update());
  EXPECT_EQ(buffer.ReadSlot().seq, 7u);
  EXPECT_EQ(buffer.ReadSlot().words[7], 7);
}

TEST(TripleBufferTest, WriterAndReaderDoNotAllocate) {
  if (!testing::AllocationCountingEnabled()) GTEST_SKIP() << "allocation counting is compiled out";
  ImageBuffer buffer;
  std::uint64_t sum = 0;
  testing::AllocationCounter counter;
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    buffer.Write(Image{i, {}});
    Image& slot = buffer.WriteSlot();
    slot.seq = i;
    buffer.Publish();
    if (buffer.Update()) sum += buffer.ReadSlot().seq;
    sum += buffer.Read().seq;
  }
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_GT(sum, 0u);
}

}  // namespace
}  // namespace rtloop
