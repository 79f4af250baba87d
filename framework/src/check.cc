#include "rtloop/framework/check.h"

#include <cstdio>
#include <cstdlib>

namespace rtloop::internal {

void CheckFailed(const char* file, int line, const char* condition, const char* message) noexcept {
  std::fprintf(stderr, "%s:%d: RTLOOP_CHECK(%s) failed: %s\n", file, line, condition,
               message != nullptr ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace rtloop::internal
