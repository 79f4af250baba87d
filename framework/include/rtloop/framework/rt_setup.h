// What a process asks of the system to run real-time threads, for the executor and for programs
// that set themselves up (rtloop-cyclic reproduces cyclictest's own set-up and messages): the
// Linux policy behind a SchedPolicy, the one wording of the fixes for missing privileges, and a
// held /dev/cpu_dma_latency request.
//
//   sched_setscheduler(0, rtloop::ToLinuxPolicy(SchedPolicy::kFifo), &param);
//   "... Operation not permitted — " + rtloop::RtprioFix("$(command -v my-tool)", 80);
//   rtloop::DmaLatencyRequest dma;
//   if (Status s = dma.Open(0); !s.ok()) ...   // held until `dma` is destroyed
//
// Threading: the functions are pure; a DmaLatencyRequest belongs to one thread at a time. Not
// RT-safe: strings, system calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"

namespace rtloop {

// The SCHED_* constant of a policy (SCHED_DEADLINE is 6: glibc 2.36 does not define it).
int ToLinuxPolicy(SchedPolicy policy) noexcept;
// "SCHED_FIFO", "SCHED_OTHER", ...
const char* LinuxPolicyName(SchedPolicy policy) noexcept;

// How to allow `program` (a path, or the words the message should show, e.g. "PROGRAM") real-time
// priority `priority`: "run as root, grant CAP_SYS_NICE (setcap cap_sys_nice+ep PROGRAM), or
// raise the rtprio limit to 99 (ulimit -r 99, or rtprio in /etc/security/limits.conf)".
std::string RtprioFix(std::string_view program, int priority = 99);

// How to allow locking memory: "raise the memlock limit (ulimit -l unlimited, or memlock in
// /etc/security/limits.conf), run as root or grant CAP_IPC_LOCK"; with `at_least_kib` > 0 the
// limit says "raise the memlock limit to at least N KiB (...".
std::string MemlockFix(std::uint64_t at_least_kib = 0);

// A request written to /dev/cpu_dma_latency and held while the object lives (the kernel drops it
// when the file is closed). Move-only.
class DmaLatencyRequest {
 public:
  // Where Open() failed.
  enum class Failure { kNone, kOpen, kWrite };

  DmaLatencyRequest() = default;
  ~DmaLatencyRequest();
  DmaLatencyRequest(DmaLatencyRequest&& other) noexcept;
  DmaLatencyRequest& operator=(DmaLatencyRequest&& other) noexcept;
  DmaLatencyRequest(const DmaLatencyRequest&) = delete;
  DmaLatencyRequest& operator=(const DmaLatencyRequest&) = delete;

  // Opens /dev/cpu_dma_latency and writes `us` (a request held before is dropped first). On
  // failure nothing is held, failure() says which step failed and the status carries its errno
  // (sys_errno()): "open /dev/cpu_dma_latency: Permission denied".
  Status Open(std::int32_t us);
  bool held() const noexcept { return fd_ >= 0; }
  Failure failure() const noexcept { return failure_; }

 private:
  void Close() noexcept;

  int fd_ = -1;
  Failure failure_ = Failure::kNone;
};

}  // namespace rtloop
