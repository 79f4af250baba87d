// The allocation counter itself: every zero-allocation test relies on it seeing each allocator
// entry point, so a counter that missed one would make those tests pass vacuously.
#include "alloc_counter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

namespace rtloop::testing {
namespace {

// Keeps the compiler from eliding a new/delete pair.
void* volatile g_sink = nullptr;

TEST(AllocationCounterTest, CountsEveryAllocatorEntryPointAndFree) {
  if (!AllocationCountingEnabled()) GTEST_SKIP() << "allocation counting is compiled out";
  AllocationCounter counter;
  auto* i = new int(3);
  g_sink = i;
  delete i;
  void* m = std::malloc(16);
  g_sink = m;
  m = std::realloc(m, 64);
  g_sink = m;
  std::free(m);
  void* c = std::calloc(4, 4);
  g_sink = c;
  std::free(c);
  void* a = nullptr;
  ASSERT_EQ(posix_memalign(&a, 64, 128), 0);
  g_sink = a;
  std::free(a);
  void* b = std::aligned_alloc(64, 128);
  g_sink = b;
  std::free(b);
  EXPECT_EQ(counter.Allocations(), 6u);
  EXPECT_EQ(counter.Deallocations(), 5u);  // realloc's old block is not a separate free
  std::free(nullptr);
  EXPECT_EQ(counter.Deallocations(), 5u);
}

TEST(AllocationCounterTest, StdStringGrowthIsSeen) {
  if (!AllocationCountingEnabled()) GTEST_SKIP() << "allocation counting is compiled out";
  AllocationCounter counter;
  {
    std::string s(100, 'x');  // beyond the small-string buffer
    g_sink = s.data();
  }
  EXPECT_GE(counter.Allocations(), 1u);
  EXPECT_GE(counter.Deallocations(), 1u);
}

TEST(AllocationCounterTest, ThreadAllocationsCountsOnlyTheCallingThread) {
  if (!AllocationCountingEnabled()) GTEST_SKIP() << "allocation counting is compiled out";
  const std::uint64_t mine = ThreadAllocations();
  std::uint64_t theirs = 0;
  std::thread other([&] {
    const std::uint64_t start = ThreadAllocations();
    std::string s(100, 'y');
    g_sink = s.data();
    theirs = ThreadAllocations() - start;
  });
  other.join();  // creating the thread may allocate here; the string was allocated there
  EXPECT_EQ(theirs, 1u);
  const std::uint64_t before = ThreadAllocations();
  void* p = std::malloc(8);
  g_sink = p;
  std::free(p);
  EXPECT_EQ(ThreadAllocations() - before, 1u);
  EXPECT_GE(ThreadAllocations(), mine);
}

}  // namespace
}  // namespace rtloop::testing
