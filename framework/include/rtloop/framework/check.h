// RTLOOP_CHECK / RTLOOP_DCHECK: programming errors, never environment errors (those are Status).
//
//   RTLOOP_CHECK(id < slots.size(), "TaskId out of range");
//
// A failed check prints file:line and the message to stderr and aborts. RTLOOP_CHECK is always on;
// RTLOOP_DCHECK only when NDEBUG is not defined. Any thread. RT-safe while the condition holds
// (one branch); a failing check ends the process anyway.
#pragma once

namespace rtloop::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const char* message) noexcept;
}  // namespace rtloop::internal

#define RTLOOP_CHECK(cond, message)                                          \
  do {                                                                       \
    if (!(cond)) [[unlikely]]                                                \
      ::rtloop::internal::CheckFailed(__FILE__, __LINE__, #cond, (message)); \
  } while (false)

#ifdef NDEBUG
#define RTLOOP_DCHECK(cond, message) \
  do {                               \
  } while (false)
#else
#define RTLOOP_DCHECK(cond, message) RTLOOP_CHECK(cond, message)
#endif
