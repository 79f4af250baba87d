#include "rtloop/framework/task_config.h"

namespace rtloop {

const char* SchedPolicyName(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::kOther:
      return "other";
    case SchedPolicy::kBatch:
      return "batch";
    case SchedPolicy::kIdle:
      return "idle";
    case SchedPolicy::kFifo:
      return "fifo";
    case SchedPolicy::kRr:
      return "rr";
    case SchedPolicy::kDeadline:
      return "deadline";
  }
  return "unknown";
}

const char* OverrunPolicyName(OverrunPolicy policy) noexcept {
  switch (policy) {
    case OverrunPolicy::kSkip:
      return "skip";
    case OverrunPolicy::kCatchUp:
      return "catch-up";
    case OverrunPolicy::kReanchor:
      return "re-anchor";
  }
  return "unknown";
}

const char* WaitModeName(WaitMode mode) noexcept {
  switch (mode) {
    case WaitMode::kAbsolute:
      return "absolute";
    case WaitMode::kRelative:
      return "relative";
    case WaitMode::kNanosleep:
      return "nanosleep";
    case WaitMode::kPosixTimer:
      return "posix-timer";
  }
  return "unknown";
}

}  // namespace rtloop
