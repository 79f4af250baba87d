// Heap-allocation counting for steady-state RT-safety tests (framework/README.md, "Real-time
// rules").
//
//   rtloop::testing::AllocationCounter counter;   // starts counting now
//   RunSteadyState();
//   EXPECT_EQ(counter.Allocations(), 0u);
//   EXPECT_EQ(counter.Deallocations(), 0u);       // freeing is not RT-safe either
//
// Linking rtloop_testing replaces the global operator new/delete and malloc/calloc/realloc/free,
// posix_memalign/aligned_alloc/memalign (glibc) with counting versions; every thread's calls are
// counted. Threading: the counters are relaxed atomics, safe from any thread. Under ASan or TSan
// the sanitizer owns the allocator, so counting is compiled out and Enabled() is false: tests then
// GTEST_SKIP() with that reason.
#pragma once

#include <cstdint>

namespace rtloop::testing {

// True when allocations are actually counted in this build.
bool AllocationCountingEnabled() noexcept;
// Allocations (new, new[], malloc, calloc, realloc, aligned variants) since process start.
std::uint64_t TotalAllocations() noexcept;
// Allocations made by the calling thread since it started (e.g. read by an RT task's Step()
// before and after a stretch of steady state). RT-safe.
std::uint64_t ThreadAllocations() noexcept;
// Frees of non-null pointers (delete, delete[], free) since process start.
std::uint64_t TotalDeallocations() noexcept;

class AllocationCounter {
 public:
  AllocationCounter() noexcept
      : start_(TotalAllocations()), start_deallocations_(TotalDeallocations()) {}
  std::uint64_t Allocations() const noexcept { return TotalAllocations() - start_; }
  std::uint64_t Deallocations() const noexcept {
    return TotalDeallocations() - start_deallocations_;
  }

 private:
  std::uint64_t start_;
  std::uint64_t start_deallocations_;
};

}  // namespace rtloop::testing
