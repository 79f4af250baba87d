#include "rtloop/explain/outlier.h"

#include <gtest/gtest.h>

#include <string>

namespace rtloop::explain {
namespace {

Cause Timed(CauseKind kind, std::string name, std::int64_t ns) {
  Cause c;
  c.kind = kind;
  c.name = std::move(name);
  c.ns = ns;
  c.count = 1;
  return c;
}

TEST(OutlierRecordTest, FinishRanksTimedCausesByTimeThenCountedOnesByCount) {
  OutlierRecord r = MakeRecord(LatencyWindow(0, "t", 1, 0, 7, 1'000'000, 1'500'000, 1'600'000));
  Cause faults;
  faults.kind = CauseKind::kPageFaults;
  faults.name = "minor faults";
  faults.count = 30;
  Cause switches;
  switches.kind = CauseKind::kPreemption;
  switches.count = 2;
  r.causes = {faults, Timed(CauseKind::kIrq, "virtio0", 50'000), switches,
              Timed(CauseKind::kThread, "spinner", 300'000)};
  FinishRecord(&r);
  ASSERT_EQ(r.causes.size(), 4u);
  EXPECT_EQ(r.causes[0].name, "spinner");
  EXPECT_EQ(r.causes[1].name, "virtio0");
  EXPECT_EQ(r.causes[2].kind, CauseKind::kPageFaults);
  EXPECT_EQ(r.causes[3].kind, CauseKind::kPreemption);
  EXPECT_EQ(r.explained_ns, 350'000);
  EXPECT_EQ(r.unexplained_ns, 150'000) << "the window is E_k..W_k: 500 us";
}

TEST(OutlierRecordTest, ExplainedTimeNeverExceedsTheWindowAndAnExecutionWindowIsWToD) {
  OutlierRecord r =
      MakeRecord(LatencyWindow(0, "t", 1, 0, 7, 1'000'000, 1'010'000, 1'410'000, true));
  EXPECT_EQ(r.window.length_ns(), 400'000);
  r.causes = {Timed(CauseKind::kThread, "a", 300'000), Timed(CauseKind::kThread, "b", 300'000)};
  FinishRecord(&r);
  EXPECT_EQ(r.explained_ns, 400'000);
  EXPECT_EQ(r.unexplained_ns, 0);
}

TEST(OutlierRecordTest, NoCausesLeaveTheWholeWindowUnexplainedAndRawIsBounded) {
  OutlierRecord r = MakeRecord(LatencyWindow(0, "t", 1, 0, 7, 0, 2'000'000, 2'100'000));
  r.raw.assign(kMaxRawLines + 10, "line");
  FinishRecord(&r);
  EXPECT_EQ(r.evidence, EvidenceKind::kNone);
  EXPECT_EQ(r.unexplained_ns, 2'000'000);
  EXPECT_EQ(r.raw.size(), kMaxRawLines);
  EXPECT_STREQ(CauseKindName(CauseKind::kTimerDelay), "timer-delay");
  EXPECT_STREQ(EvidenceKindName(EvidenceKind::kCounters), "counters");
}

}  // namespace
}  // namespace rtloop::explain
