// rt_setup.h: policies, the fixes' one wording, the held /dev/cpu_dma_latency request.
#include "rtloop/framework/rt_setup.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

namespace rtloop {
namespace {
constexpr int kSchedDeadline = 6;  // SCHED_DEADLINE; glibc 2.36 does not define it
}  // namespace

int ToLinuxPolicy(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::kOther:
      return SCHED_OTHER;
    case SchedPolicy::kBatch:
      return SCHED_BATCH;
    case SchedPolicy::kIdle:
      return SCHED_IDLE;
    case SchedPolicy::kFifo:
      return SCHED_FIFO;
    case SchedPolicy::kRr:
      return SCHED_RR;
    case SchedPolicy::kDeadline:
      return kSchedDeadline;
  }
  return SCHED_OTHER;
}

const char* LinuxPolicyName(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::kOther:
      return "SCHED_OTHER";
    case SchedPolicy::kBatch:
      return "SCHED_BATCH";
    case SchedPolicy::kIdle:
      return "SCHED_IDLE";
    case SchedPolicy::kFifo:
      return "SCHED_FIFO";
    case SchedPolicy::kRr:
      return "SCHED_RR";
    case SchedPolicy::kDeadline:
      return "SCHED_DEADLINE";
  }
  return "SCHED_?";
}

std::string RtprioFix(std::string_view program, int priority) {
  const std::string n = std::to_string(priority);
  return "run as root, grant CAP_SYS_NICE (setcap cap_sys_nice+ep " + std::string(program) +
         "), or raise the rtprio limit to " + n + " (ulimit -r " + n +
         ", or rtprio in /etc/security/limits.conf)";
}

std::string MemlockFix(std::uint64_t at_least_kib) {
  const std::string amount =
      at_least_kib > 0 ? " to at least " + std::to_string(at_least_kib) + " KiB" : "";
  return "raise the memlock limit" + amount +
         " (ulimit -l unlimited, or memlock in /etc/security/limits.conf), run as root or grant "
         "CAP_IPC_LOCK";
}

DmaLatencyRequest::~DmaLatencyRequest() { Close(); }

DmaLatencyRequest::DmaLatencyRequest(DmaLatencyRequest&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), failure_(other.failure_) {}

DmaLatencyRequest& DmaLatencyRequest::operator=(DmaLatencyRequest&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    failure_ = other.failure_;
  }
  return *this;
}

void DmaLatencyRequest::Close() noexcept {
  if (fd_ >= 0) close(fd_);  // drops the request
  fd_ = -1;
}

Status DmaLatencyRequest::Open(std::int32_t us) {
  Close();
  failure_ = Failure::kNone;
  const int fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    failure_ = Failure::kOpen;
    return ErrnoError(errno, "open /dev/cpu_dma_latency");
  }
  if (write(fd, &us, sizeof(us)) != static_cast<ssize_t>(sizeof(us))) {
    const int err = errno;
    close(fd);
    failure_ = Failure::kWrite;
    return ErrnoError(err, "write " + std::to_string(us) + " to /dev/cpu_dma_latency");
  }
  fd_ = fd;
  return Status::Ok();
}

}  // namespace rtloop
