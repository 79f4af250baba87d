// Heap-allocation counting for steady-state RT-safety tests (DESIGN.md §4).
//
//   rtloop::testing::AllocationCounter counter;   // starts counting now
//   RunSteadyState();
//   EXPECT_EQ(counter.Allocations(), 0u);
//
// Linking rtloop_testing replaces the global operator new/delete and malloc/calloc/realloc/free
// (glibc) with counting versions; every thread's allocations are counted. Under ASan or TSan the
// sanitizer owns the allocator, so counting is compiled out and Enabled() is false: tests then
// GTEST_SKIP() with that reason.
#pragma once

#include <cstdint>

namespace rtloop::testing {

// True when allocations are actually counted in this build.
bool AllocationCountingEnabled() noexcept;
// Allocations (new, new[], malloc, calloc, realloc, aligned variants) since process start.
std::uint64_t TotalAllocations() noexcept;

class AllocationCounter {
 public:
  AllocationCounter() noexcept : start_(TotalAllocations()) {}
  std::uint64_t Allocations() const noexcept { return TotalAllocations() - start_; }

 private:
  std::uint64_t start_;
};

}  // namespace rtloop::testing
