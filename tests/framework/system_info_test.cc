#include "rtloop/framework/system_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

namespace rtloop {
namespace {

TEST(SystemInfoTest, ParseCpuListAcceptsRangesAndSingles) {
  Result<std::vector<int>> cpus = ParseCpuList("0-3,6");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(*ParseCpuList("5,1,1\n"), (std::vector<int>{1, 5}));
  EXPECT_TRUE(ParseCpuList("")->empty());
  EXPECT_TRUE(ParseCpuList("\n")->empty());
}

TEST(SystemInfoTest, ParseCpuListRejectsGarbageNamingThePart) {
  Result<std::vector<int>> bad = ParseCpuList("0-3,x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"x\""), std::string::npos);
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("1,,2").ok());
  EXPECT_FALSE(ParseCpuList("-1").ok());
  EXPECT_FALSE(ParseCpuList("0-99999999").ok());
}

TEST(SystemInfoTest, PinnableCpusAreTheAffinityAndTheIsolatedOnes) {
  EXPECT_EQ(PinnableCpus({0, 2}, {1, 2}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(PinnableCpus({0}, {}), (std::vector<int>{0}));
  EXPECT_TRUE(PinnableCpus({}, {1}).empty()) << "unknown affinity: nothing to check against";
}

TEST(SystemInfoTest, FormatCpuListCompressesRuns) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(FormatCpuList({6, 0, 2, 1}), "0-2,6");
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({4}), "4");
  EXPECT_EQ(*ParseCpuList(FormatCpuList({1, 3, 4, 5, 9})), (std::vector<int>{1, 3, 4, 5, 9}));
}

TEST(SystemInfoTest, PreemptModelFromUnameVersion) {
  EXPECT_EQ(ParsePreemptModel("#1 SMP PREEMPT_DYNAMIC Debian 6.1.0", ""), PreemptModel::kDynamic);
  EXPECT_EQ(ParsePreemptModel("#1 SMP PREEMPT_RT Debian 6.1.0", ""), PreemptModel::kRt);
  EXPECT_EQ(ParsePreemptModel("#1 SMP PREEMPT Fri", ""), PreemptModel::kFull);
  EXPECT_EQ(ParsePreemptModel("#1 SMP Fri", ""), PreemptModel::kUnknown);
  EXPECT_EQ(ParsePreemptModel("#1 SMP Fri", "1"), PreemptModel::kRt);
  EXPECT_STREQ(PreemptModelName(PreemptModel::kRt), "rt");
  EXPECT_STREQ(PreemptModelName(PreemptModel::kDynamic), "dynamic");
}

TEST(SystemInfoTest, ReadSystemInfoFindsThisMachine) {
  const SystemInfo info = ReadSystemInfo();
  EXPECT_FALSE(info.kernel_release.empty());
  EXPECT_FALSE(info.machine.empty());
  EXPECT_EQ(info.online_cpus.size(), static_cast<std::size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(info.affinity_cpus.empty());
  for (int cpu : info.isolated_cpus) {
    EXPECT_NE(std::find(info.online_cpus.begin(), info.online_cpus.end(), cpu),
              info.online_cpus.end());
  }
  if (info.realtime) {  // /sys/kernel/realtime says PREEMPT_RT
    EXPECT_EQ(info.preempt_model, PreemptModel::kRt);
  }
}

}  // namespace
}  // namespace rtloop
