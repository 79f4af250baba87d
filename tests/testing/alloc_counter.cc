#include "alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RTLOOP_COUNT_ALLOCATIONS 0
#else
#define RTLOOP_COUNT_ALLOCATIONS 1
#endif

namespace {
std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::uint64_t> g_deallocations{0};
// Per thread. initial-exec: the executable's own TLS block, so reading it never allocates (a
// dynamic TLS access could call malloc from inside malloc).
thread_local std::uint64_t t_allocations __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

namespace rtloop::testing {
bool AllocationCountingEnabled() noexcept { return RTLOOP_COUNT_ALLOCATIONS != 0; }
std::uint64_t TotalAllocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }
std::uint64_t TotalDeallocations() noexcept {
  return g_deallocations.load(std::memory_order_relaxed);
}
std::uint64_t ThreadAllocations() noexcept { return t_allocations; }
}  // namespace rtloop::testing

#if RTLOOP_COUNT_ALLOCATIONS
// glibc's real allocator entry points; moodycamel and other C-style code call malloc directly, so
// counting operator new alone would miss them.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming): glibc's names.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* p);
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)

void* malloc(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return __libc_realloc(p, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) {
  if (p != nullptr) g_deallocations.fetch_add(1, std::memory_order_relaxed);
  __libc_free(p);
}
}  // extern "C"

namespace {
void* CountedNew(std::size_t size) {
  void* p = malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* CountedAlignedNew(std::size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  void* p = __libc_memalign(static_cast<std::size_t>(align), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return CountedNew(size); }
void* operator new[](std::size_t size) { return CountedNew(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return malloc(size == 0 ? 1 : size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return CountedAlignedNew(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return CountedAlignedNew(size, align);
}
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, std::size_t) noexcept { free(p); }
void operator delete[](void* p, std::size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { free(p); }
#endif
