# What the target CPU must offer rtloop's real-time path, checked when CMake configures (an
# unsuitable target fails here, with what to use instead, rather than shipping a lock):
#   - lock-free 64-bit atomics: TaskStats, the histograms and the sequence counters are
#     std::atomic<std::int64_t/std::uint64_t> written by the RT thread. ARMv7-A and AArch64 have
#     them (ldrexd/strexd, ldxr/stxr); ARMv6 and ARMv5 do not, and GCC would call libatomic, which
#     takes a lock. The same static_asserts are in task_stats.h and latency_histogram.h.
# Example: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake -DCMAKE_CXX_FLAGS=-march=armv6
# stops with the message below.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([[
#include <atomic>
#include <cstdint>
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<void*>::is_always_lock_free);
int main() { return 0; }
]] RTLOOP_LOCK_FREE_ATOMICS)
unset(CMAKE_REQUIRED_QUIET)
if(NOT RTLOOP_LOCK_FREE_ATOMICS)
  message(FATAL_ERROR
    "This target (${CMAKE_SYSTEM_PROCESSOR}, flags '${CMAKE_CXX_FLAGS}') has no lock-free 64-bit "
    "std::atomic: the real-time path would fall back to libatomic's locks. Build for a CPU that "
    "has them: ARMv7-A or later (Debian armhf: Cortex-A7/A8/A9/A53 in 32-bit mode, "
    "Debian's default -march=armv7-a+fp) or AArch64 (Debian arm64); ARMv5/ARMv6 (armel, Raspberry Pi 1/Zero) are "
    "not supported (cmake/README.md).")
endif()
