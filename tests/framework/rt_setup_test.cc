// rt_setup.h: the policies, the fixes' one wording, and the held /dev/cpu_dma_latency request
// (held here as root; refused, with the step and errno, to an unprivileged child).
#include "rtloop/framework/rt_setup.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "child_process.h"
#include "gtest/gtest.h"

namespace rtloop {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The value the kernel applies now (the smallest request held), or -1.
std::int32_t AppliedDmaLatency() {
  const int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::int32_t value = -1;
  const ssize_t n = read(fd, &value, sizeof(value));
  close(fd);
  return n == static_cast<ssize_t>(sizeof(value)) ? value : -1;
}

TEST(RtSetup, PoliciesMapToLinuxConstantsAndNames) {
  EXPECT_EQ(ToLinuxPolicy(SchedPolicy::kFifo), SCHED_FIFO);
  EXPECT_EQ(ToLinuxPolicy(SchedPolicy::kRr), SCHED_RR);
  EXPECT_EQ(ToLinuxPolicy(SchedPolicy::kOther), SCHED_OTHER);
  EXPECT_EQ(ToLinuxPolicy(SchedPolicy::kDeadline), 6);
  EXPECT_STREQ(LinuxPolicyName(SchedPolicy::kFifo), "SCHED_FIFO");
  EXPECT_STREQ(LinuxPolicyName(SchedPolicy::kIdle), "SCHED_IDLE");
}

TEST(RtSetup, TheFixesNameTheProgramTheLimitAndEveryWay) {
  const std::string rtprio = RtprioFix("/usr/bin/tool", 80);
  EXPECT_EQ(rtprio,
            "run as root, grant CAP_SYS_NICE (setcap cap_sys_nice+ep /usr/bin/tool), or raise the "
            "rtprio limit to 80 (ulimit -r 80, or rtprio in /etc/security/limits.conf)");
  EXPECT_TRUE(Has(RtprioFix("PROGRAM"), "limit to 99 (ulimit -r 99,")) << RtprioFix("PROGRAM");
  EXPECT_EQ(MemlockFix(),
            "raise the memlock limit (ulimit -l unlimited, or memlock in "
            "/etc/security/limits.conf), run as root or grant CAP_IPC_LOCK");
  EXPECT_TRUE(Has(MemlockFix(2048), "raise the memlock limit to at least 2048 KiB (ulimit -l"))
      << MemlockFix(2048);
}

TEST(RtSetup, ADmaLatencyRequestIsHeldWhileItLivesAndMovesWithItsOwner) {
  if (access("/dev/cpu_dma_latency", F_OK) != 0) GTEST_SKIP() << "no /dev/cpu_dma_latency here";
  if (geteuid() != 0) GTEST_SKIP() << "writing /dev/cpu_dma_latency needs root";
  DmaLatencyRequest outer;
  {
    DmaLatencyRequest dma;
    EXPECT_FALSE(dma.held());
    const Status s = dma.Open(7);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(dma.held());
    EXPECT_EQ(dma.failure(), DmaLatencyRequest::Failure::kNone);
    // Another holder (a measuring test beside this one) may ask for less, never for more.
    EXPECT_LE(AppliedDmaLatency(), 7);
    outer = std::move(dma);
    EXPECT_FALSE(dma.held());  // NOLINT(bugprone-use-after-move): the moved-from state is the test
  }
  EXPECT_TRUE(outer.held());
  EXPECT_LE(AppliedDmaLatency(), 7);  // still held: the moved-from object's end did not drop it
}

TEST(RtSetup, ADmaLatencyRequestRefusedSaysWhichStepAndWhy) {
  if (access("/dev/cpu_dma_latency", F_OK) != 0) GTEST_SKIP() << "no /dev/cpu_dma_latency here";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become an unprivileged user";
  const testing::ForkedResult r = testing::RunForked([] {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 10;
    DmaLatencyRequest dma;
    const Status s = dma.Open(0);
    std::printf("%s|%d|%d|%d\n", s.message().c_str(), s.sys_errno(),
                static_cast<int>(dma.failure()), dma.held() ? 1 : 0);
    return s.ok() ? 11 : 0;
  });
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "open /dev/cpu_dma_latency: Permission denied|" + std::to_string(EACCES) + "|" +
                       std::to_string(static_cast<int>(DmaLatencyRequest::Failure::kOpen)) +
                       "|0\n");
}

}  // namespace
}  // namespace rtloop
