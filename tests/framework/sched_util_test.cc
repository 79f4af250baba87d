#include "sched_util.h"

#include <gtest/gtest.h>

#include <string>

#include "task_config_check.h"

namespace rtloop::internal {
namespace {

TaskConfig Fifo(int priority) {
  TaskConfig c;
  c.name = "pos";
  c.policy = SchedPolicy::kFifo;
  c.priority = priority;
  return c;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SchedUtilTest, NoPrivilegeForFifoNamesTaskAndFixes) {
  PrivilegeFacts none;
  const Status s = CheckSchedPrivilege(Fifo(99), none);
  ASSERT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(
      Contains(s.message(), "cannot set SCHED_FIFO 99 on task \"pos\": Operation not permitted"))
      << s.message();
  EXPECT_TRUE(Contains(s.message(), "CAP_SYS_NICE")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "rtprio limit")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "run as root")) << s.message();
}

TEST(SchedUtilTest, RtprioLimitOrCapabilityAllowsFifo) {
  PrivilegeFacts limit;
  limit.rtprio_limit = 50;
  EXPECT_TRUE(CheckSchedPrivilege(Fifo(50), limit).ok());
  EXPECT_FALSE(CheckSchedPrivilege(Fifo(51), limit).ok());
  PrivilegeFacts cap;
  cap.cap_sys_nice = true;
  EXPECT_TRUE(CheckSchedPrivilege(Fifo(99), cap).ok());
}

TEST(SchedUtilTest, DeadlineNeedsTheCapability) {
  TaskConfig c;
  c.name = "dl";
  c.policy = SchedPolicy::kDeadline;
  c.priority = 0;
  PrivilegeFacts limit;
  limit.rtprio_limit = 99;
  const Status s = CheckSchedPrivilege(c, limit);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(Contains(s.message(), "SCHED_DEADLINE")) << s.message();
}

TEST(SchedUtilTest, NegativeNiceNeedsTheNiceLimit) {
  TaskConfig c;
  c.name = "n";
  c.policy = SchedPolicy::kOther;
  c.priority = 0;
  c.nice = -5;
  PrivilegeFacts facts;
  facts.nice_limit = 20;  // allows nice >= 0
  EXPECT_FALSE(CheckSchedPrivilege(c, facts).ok());
  facts.nice_limit = 25;  // allows nice >= -5
  EXPECT_TRUE(CheckSchedPrivilege(c, facts).ok());
  c.nice = 5;
  facts.nice_limit = 0;
  EXPECT_TRUE(CheckSchedPrivilege(c, facts).ok());
}

TEST(SchedUtilTest, PriorityRangesPerPolicy) {
  EXPECT_TRUE(ValidateSchedParams(Fifo(1)).ok());
  EXPECT_TRUE(ValidateSchedParams(Fifo(99)).ok());
  const Status s = ValidateSchedParams(Fifo(100));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Contains(s.message(), "task \"pos\": priority 100 is outside SCHED_FIFO's range 1..99"))
      << s.message();
  EXPECT_FALSE(ValidateSchedParams(Fifo(0)).ok());
  TaskConfig other;
  other.policy = SchedPolicy::kOther;
  other.priority = 5;
  EXPECT_FALSE(ValidateSchedParams(other).ok());
  other.priority = 0;
  other.nice = 20;
  EXPECT_TRUE(Contains(ValidateSchedParams(other).message(), "set TaskConfig::nice in that range"));
  other.nice = -20;
  EXPECT_TRUE(ValidateSchedParams(other).ok());
  TaskConfig idle;
  idle.policy = SchedPolicy::kIdle;
  idle.priority = 0;
  idle.nice = 3;
  EXPECT_FALSE(ValidateSchedParams(idle).ok());
}

TEST(SchedUtilTest, DeadlineParametersMustBeOrdered) {
  TaskConfig c;
  c.name = "dl";
  c.policy = SchedPolicy::kDeadline;
  c.priority = 0;
  c.period = std::chrono::milliseconds(1);
  c.deadline.runtime = std::chrono::microseconds(200);
  c.deadline.deadline = std::chrono::microseconds(500);
  EXPECT_TRUE(ValidateSchedParams(c).ok());  // period 0 -> task period
  c.deadline.runtime = std::chrono::microseconds(600);
  const Status s = ValidateSchedParams(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "runtime <= deadline <= period")) << s.message();
  c.deadline.runtime = std::chrono::nanoseconds(100);
  EXPECT_TRUE(Contains(ValidateSchedParams(c).message(),
                       "minimum of 1024 ns — raise TaskConfig::deadline.runtime"));
  c.deadline.runtime = std::chrono::microseconds(200);
  c.cpus = {0};
  EXPECT_TRUE(Contains(ValidateSchedParams(c).message(), "cannot be pinned"));
}

TEST(SchedUtilTest, PolicyNames) {
  EXPECT_STREQ(LinuxPolicyName(SchedPolicy::kRr), "SCHED_RR");
  EXPECT_STREQ(SchedPolicyName(SchedPolicy::kDeadline), "deadline");
  EXPECT_STREQ(OverrunPolicyName(OverrunPolicy::kCatchUp), "catch-up");
  EXPECT_STREQ(WaitModeName(WaitMode::kPosixTimer), "posix-timer");
  EXPECT_EQ(ToLinuxPolicy(SchedPolicy::kFifo), SCHED_FIFO);
  EXPECT_TRUE(IsRealtimePolicy(SchedPolicy::kDeadline));
  EXPECT_FALSE(IsRealtimePolicy(SchedPolicy::kBatch));
}

TEST(SchedUtilTest, CpuValidationTellsMissingFromOfflineFromForbidden) {
  const std::vector<int> online = {0, 1, 3};
  const std::vector<int> present = {0, 1, 2, 3};
  const std::vector<int> allowed = {0, 3};
  EXPECT_TRUE(ValidateCpus({0, 3}, online, present, allowed, "task \"t\"", "cpus").ok());
  Status s = ValidateCpus({2}, online, present, allowed, "task \"t\"", "TaskConfig::cpus");
  EXPECT_TRUE(Contains(s.message(), "task \"t\": CPU 2 is offline (online CPUs: 0-1,3)"))
      << s.message();
  s = ValidateCpus({7}, online, present, allowed, "task \"t\"", "TaskConfig::cpus");
  EXPECT_TRUE(Contains(s.message(), "task \"t\": CPU 7 does not exist")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "TaskConfig::cpus")) << s.message();
  s = ValidateCpus({1}, online, present, allowed, "task \"t\"", "cpus");
  EXPECT_TRUE(Contains(s.message(), "not in this process's allowed CPUs (0,3")) << s.message();
  EXPECT_FALSE(ValidateCpus({-1}, online, present, allowed, "x", "cpus").ok());
}

// Found by the PREEMPT_RT lab (tests/rtlab): booted with isolcpus=1, every process's affinity
// is CPU 0 (init's), and a task pinned to the isolated CPU 1 (its purpose) was refused as
// "not in this process's allowed CPUs (0)"; sched_setaffinity pins it there.
TEST(SchedUtilTest, ATaskMayBePinnedToAnIsolatedCpuOutsideTheProcessAffinity) {
  CpuFacts cpus;
  cpus.online = cpus.present = {0, 1, 2};
  cpus.allowed = {0};
  cpus.isolated = {1};
  TaskConfig config;
  config.name = "t";
  config.period = std::chrono::milliseconds(1);
  config.cpus = {1};
  EXPECT_TRUE(ValidateTaskConfig(config, config.clock, cpus).ok());
  config.cpus = {2};  // neither allowed nor isolated: refused, naming what it may use
  const Status s = ValidateTaskConfig(config, config.clock, cpus);
  EXPECT_TRUE(Contains(s.message(), "CPU 2 is online but not in this process's allowed CPUs (0-1"))
      << s.message();
}

TEST(SchedUtilTest, WarnsWhenFifoIsPinnedToANonIsolatedCpu) {
  TaskConfig c = Fifo(90);
  c.cpus = {1};
  const std::string w = NonIsolatedCpuWarning(c, {2, 3});
  EXPECT_TRUE(Contains(w,
                       "task \"pos\" (SCHED_FIFO 90) is pinned to CPU 1, which is not isolated, "
                       "while CPUs 2-3 are isolated"))
      << w;
  EXPECT_TRUE(NonIsolatedCpuWarning(c, {}).empty());  // nothing isolated
  c.cpus = {2};
  EXPECT_TRUE(NonIsolatedCpuWarning(c, {2, 3}).empty());  // pinned right
  c.cpus = {1};
  c.policy = SchedPolicy::kOther;
  c.priority = 0;
  EXPECT_TRUE(NonIsolatedCpuWarning(c, {2, 3}).empty());  // not an RT task
}

}  // namespace
}  // namespace rtloop::internal
