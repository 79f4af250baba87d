// Tests of the counter evidence's /proc parsers (telemetry/explain/src/counter_proc.h) on real
// text: /proc/interrupts as this x86_64 VM prints it and as an arm64 GICv3 board does (written
// from the kernel's format, show_interrupts()), /proc/softirqs, /proc/stat and a task's stat and
// status, including a comm with spaces and ')'.
#include "counter_proc.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "counter_state.h"

namespace rtloop::explain::internal {
namespace {

// Captured on the x86_64 VM this was written on (Debian 12, 2 vCPUs), lines trimmed.
constexpr std::string_view kX86Interrupts =
    "           CPU0       CPU1       \n"
    " 24:          2          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 26:          0         16  IO-APIC   4-edge      ttyS0\n"
    " 31:          0      11624 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats\n"
    " 38:          0      24861 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
    " 39:      15178          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n"
    "NMI:          0          0   Non-maskable interrupts\n"
    "LOC:   25858276   26015272   Local timer interrupts\n"
    "RES:    5105182    1803001   Rescheduling interrupts\n"
    "CAL:    2256622    2035007   Function call interrupts\n"
    "ERR:          0\n"
    "MIS:          0\n";

// An arm64 board with CPU2 offline (its column is absent), written from the kernel's format.
constexpr std::string_view kArm64Interrupts =
    "           CPU0       CPU1       CPU3       \n"
    " 11:      12345          0        777     GICv3  27 Level     arch_timer\n"
    " 13:          0          0          0     GICv3  33 Level     uart-pl011\n"
    " 40:        500         20          0   ITS-MSI 524288 Edge      eth0\n"
    "IPI0:      1000       2000       3000       Rescheduling interrupts\n"
    "IPI1:        10         20         30       Function call interrupts\n"
    "Err:          0\n";

struct Line {
  std::string label;
  std::vector<std::uint64_t> counts;
  std::string description;
};

std::vector<Line> ParseTable(std::string_view text, const std::vector<int>& cpus) {
  const std::string_view header = FirstLine(text);
  std::vector<int> columns;
  columns.reserve(cpus.size());
  for (const int cpu : cpus) columns.push_back(CpuColumn(header, cpu));
  std::vector<Line> lines;
  ForEachLine(AfterFirstLine(text), [&](std::string_view line) {
    std::vector<std::uint64_t> counts(cpus.size());
    std::string_view label;
    std::string_view description;
    if (ParseCounterLine(line, CpuColumns(header), columns, counts, &label, &description)) {
      lines.push_back({std::string(label), counts, std::string(description)});
    }
  });
  return lines;
}

TEST(CounterProcTest, X86InterruptsGiveEachLinesCountForTheCpuAndItsDeviceName) {
  const std::vector<Line> lines = ParseTable(kX86Interrupts, {1, 0});
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[3].label, "38");
  EXPECT_EQ(lines[3].counts, (std::vector<std::uint64_t>{24861, 0}));
  EXPECT_EQ(lines[3].description, "PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0");
  EXPECT_EQ(IrqDeviceName(lines[3].description), "virtio2-input.0");
  EXPECT_EQ(IrqDeviceName(lines[0].description), "ACPI:Ged");
  EXPECT_TRUE(IsIrqNumber(lines[3].label));
  EXPECT_EQ(lines[6].label, "LOC");
  EXPECT_FALSE(IsIrqNumber(lines[6].label));
  EXPECT_EQ(lines[6].counts, (std::vector<std::uint64_t>{26015272, 25858276}));
  EXPECT_EQ(lines[6].description, "Local timer interrupts");
  EXPECT_EQ(lines[9].label, "ERR");
  EXPECT_EQ(lines[9].counts, (std::vector<std::uint64_t>{kNoCount, kNoCount}))
      << "ERR has one number for the whole machine: not CPU0's";
  EXPECT_EQ(lines[9].description, "");
}

TEST(CounterProcTest, Arm64InterruptsFollowTheHeaderWhenACpuIsOffline) {
  EXPECT_EQ(CpuColumn(FirstLine(kArm64Interrupts), 3), 2);
  EXPECT_EQ(CpuColumn(FirstLine(kArm64Interrupts), 2), -1) << "CPU2 is offline";
  const std::vector<Line> lines = ParseTable(kArm64Interrupts, {3, 2});
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].label, "11");
  EXPECT_EQ(lines[0].counts, (std::vector<std::uint64_t>{777, kNoCount}));
  EXPECT_EQ(lines[0].description, "GICv3  27 Level     arch_timer");
  EXPECT_EQ(IrqDeviceName(lines[0].description), "arch_timer");
  EXPECT_EQ(IrqDeviceName(lines[2].description), "eth0") << "ITS-MSI 524288 Edge eth0";
  EXPECT_EQ(lines[3].label, "IPI0");
  EXPECT_EQ(lines[3].counts[0], 3000u);
  EXPECT_EQ(lines[3].description, "Rescheduling interrupts");
  EXPECT_EQ(lines[5].label, "Err");
}

TEST(CounterProcTest, SoftirqsGiveEachKindsCount) {
  constexpr std::string_view kSoftirqs =
      "                    CPU0       CPU1       \n"
      "          HI:          0          0\n"
      "       TIMER:    1093728    1321115\n"
      "      NET_TX:          4          0\n"
      "      NET_RX:    5535953    5442121\n"
      "         RCU:    2481847    2723381\n";
  const std::vector<Line> lines = ParseTable(kSoftirqs, {1});
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3].label, "NET_RX");
  EXPECT_EQ(lines[3].counts[0], 5442121u);
  EXPECT_EQ(lines[3].description, "");
}

TEST(CounterProcTest, StatGivesTheStealTicksOfTheCpusLine) {
  constexpr std::string_view kStat =
      "cpu  3582120 617534 1082092 6174663 47613 0 30670 40396 0 0\n"
      "cpu0 1812563 292907 516306 3128856 13366 0 3892 18813 0 0\n"
      "cpu1 1769557 324627 565785 3045807 34246 0 26778 21582 0 0\n"
      "cpu10 1 2 3 4 5 6 7 99 0 0\n"
      "intr 79781256 0 0 0\n";
  EXPECT_EQ(StatSteal(kStat, 0), 18813u);
  EXPECT_EQ(StatSteal(kStat, 1), 21582u);
  EXPECT_EQ(StatSteal(kStat, 10), 99u) << "cpu1 is not a prefix match for cpu10";
  EXPECT_EQ(StatSteal(kStat, 2), kNoCount);
  EXPECT_EQ(StatSteal("cpu3 1 2 3\n", 3), kNoCount) << "a line without the steal field";
}

TEST(CounterProcTest, TaskStatTakesTheCommBetweenTheFirstParenAndTheLastOne) {
  const std::string stat =
      "812 (my (evil) task) ) R 1 812 812 0 -1 4194560 3141 0 27 0 10 5 0 0 -51 0 1 0 "
      "123456 10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 95 1 0 0 0 0 0 0 "
      "0 0 0 0 0\n";
  TaskStat s;
  ASSERT_TRUE(ParseTaskStat(stat, &s));
  EXPECT_EQ(s.comm, "my (evil) task) ");
  EXPECT_EQ(s.state, 'R');
  EXPECT_EQ(s.minflt, 3141u);
  EXPECT_EQ(s.majflt, 27u);
  EXPECT_EQ(s.processor, 1);
  EXPECT_EQ(s.rt_priority, 95);
  EXPECT_EQ(s.policy, 1);
  EXPECT_FALSE(ParseTaskStat("812 no comm here", &s));
  EXPECT_FALSE(ParseTaskStat("812 (x) R 1 2", &s)) << "too few fields";
}

TEST(CounterProcTest, TaskStatParsesThisThreadsOwnStat) {
  std::ifstream in("/proc/self/task/" + std::to_string(gettid()) + "/stat");
  std::string text;
  std::getline(in, text);
  TaskStat s;
  ASSERT_TRUE(ParseTaskStat(text, &s)) << text;
  EXPECT_EQ(s.state, 'R');
  EXPECT_EQ(s.policy, 0) << "the test runs under SCHED_OTHER";
  EXPECT_GT(s.minflt, 0u) << "a process has faulted in its pages";
}

TEST(CounterProcTest, TaskStatusGivesSwitchesAndTheAllowedCpus) {
  constexpr std::string_view kStatus =
      "Name:\tspinner\n"
      "Cpus_allowed:\t2\n"
      "Cpus_allowed_list:\t1,4-6\n"
      "voluntary_ctxt_switches:\t17\n"
      "nonvoluntary_ctxt_switches:\t3\n";
  const TaskStatus s = ParseTaskStatus(kStatus);
  EXPECT_EQ(s.voluntary, 17u);
  EXPECT_EQ(s.nonvoluntary, 3u);
  EXPECT_EQ(s.cpus_allowed_list, "1,4-6");
  EXPECT_TRUE(CpuListContains(s.cpus_allowed_list, 1));
  EXPECT_TRUE(CpuListContains(s.cpus_allowed_list, 5));
  EXPECT_FALSE(CpuListContains(s.cpus_allowed_list, 0));
  EXPECT_FALSE(CpuListContains(s.cpus_allowed_list, 7));
  EXPECT_EQ(ParseTaskStatus("Name:\tx\n").voluntary, kNoCount);
}

TEST(CounterProcTest, AFileLongerThanItsBufferIsCutAtItsLastWholeLine) {
  ProcFile small;
  ASSERT_EQ(small.Open("/proc/self/status", 100), 0);
  const std::string_view text = small.Read();
  EXPECT_TRUE(small.truncated());
  ASSERT_FALSE(text.empty());
  EXPECT_LE(text.size(), 100u);
  EXPECT_EQ(text.back(), '\n');
  ProcFile whole;
  ASSERT_EQ(whole.Open("/proc/self/status", 16384), 0);
  const std::string first(whole.Read());
  EXPECT_FALSE(whole.truncated());
  EXPECT_NE(first.find("nonvoluntary_ctxt_switches"), std::string::npos);
  EXPECT_FALSE(whole.Read().empty()) << "a second Read() reads the file again from its start";
}

TEST(CounterProcTest, MayPreemptFollowsThePolicies) {
  // (FIFO 95) vs a FIFO 80 task; equal priority counts (it may run first: FIFO order).
  EXPECT_TRUE(MayPreempt(1, 95, 1, 80));
  EXPECT_TRUE(MayPreempt(2, 80, 1, 80));
  EXPECT_FALSE(MayPreempt(1, 79, 1, 80));
  EXPECT_FALSE(MayPreempt(0, 0, 1, 80)) << "SCHED_OTHER never preempts a FIFO task";
  EXPECT_TRUE(MayPreempt(1, 1, 0, 0)) << "any real-time thread runs before SCHED_OTHER";
  EXPECT_TRUE(MayPreempt(6, 0, 1, 99)) << "DEADLINE runs before FIFO";
  EXPECT_FALSE(MayPreempt(1, 99, 6, 0));
}

}  // namespace
}  // namespace rtloop::explain::internal
