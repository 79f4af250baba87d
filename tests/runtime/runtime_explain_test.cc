// rtloop::Runtime's outlier explanation (TaskConfig::explain_latency_above, Runtime::Outliers())
// end to end, with a real cause: a SCHED_FIFO thread of higher priority on the task's CPU, busy
// for 3 ms at a time. The kernel is never mocked.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "measure_lock.h"
#include "rtloop/runtime.h"
#include "spinner.h"
#include "telemetry_rig.h"

namespace rtloop {
namespace {

using std::chrono::milliseconds;

class Idle final : public PeriodicTask {
 public:
  StepResult Step(const CycleContext& /*ctx*/) noexcept override { return StepResult::kContinue; }
};

// True when a thread of this process has `name`.
bool HasThread(const std::string& name) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string c;
    if (std::getline(comm, c) && c == name) found = true;
  }
  closedir(d);
  return found;
}

RuntimeConfig Config() {
  RuntimeConfig rc = telemetry::testing::TestRuntimeConfig("runtime_explain_test");
  rc.telemetry.serve_grpc = false;
  return rc;
}

TEST(RuntimeExplainTest, AThresholdWithoutTelemetryIsRefusedNamingTheFix) {
  RuntimeConfig rc = Config();
  rc.telemetry.enabled = false;
  auto rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  Idle task;
  TaskConfig tc = telemetry::testing::OtherTask("t", milliseconds(1));
  tc.explain_latency_above = milliseconds(1);
  const Result<TaskId> id = (*rt)->AddTask(task, tc);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("RuntimeConfig::telemetry.enabled"), std::string::npos)
      << id.status().ToString();
  tc.explain_latency_above = std::chrono::nanoseconds(-1);
  RuntimeConfig on = Config();
  auto rt2 = Runtime::Create(on);
  ASSERT_TRUE(rt2.ok());
  const Result<TaskId> bad = (*rt2)->AddTask(task, tc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be >= 0"), std::string::npos);
}

TEST(RuntimeExplainTest, WithoutAThresholdNothingIsExplainedAndNoThreadRuns) {
  auto rt = Runtime::Create(Config());
  ASSERT_TRUE(rt.ok());
  Idle task;
  ASSERT_TRUE((*rt)->AddTask(task, telemetry::testing::OtherTask("t", milliseconds(1))).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(HasThread("rtloop-explain"));
  ASSERT_TRUE((*rt)->Stop().ok());
  EXPECT_TRUE((*rt)->Outliers().empty());
  EXPECT_EQ((*rt)->OutlierStats().outliers, 0u);
  EXPECT_EQ((*rt)->OutlierEvidence(), "");
  EXPECT_FALSE((*rt)->outlier_feed().Counts().explaining) << "not explained: never zeros";
}

// Reads its own thread's allocation count at two cycles of steady state (in Step(): RT-safe).
class CountingTask final : public PeriodicTask {
 public:
  static constexpr std::uint64_t kFrom = 100;
  static constexpr std::uint64_t kTo = 600;
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle == kFrom) at_from.store(testing::ThreadAllocations());
    if (ctx.cycle == kTo) {
      at_to.store(testing::ThreadAllocations());
      reached.store(true);
      return StepResult::kStop;
    }
    return StepResult::kContinue;
  }
  std::atomic<std::uint64_t> at_from{0};
  std::atomic<std::uint64_t> at_to{0};
  std::atomic<bool> reached{false};
};

TEST(RuntimeExplainTest, EveryCycleAnOutlierAndTheTasksThreadStillAllocatesNothing) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under a sanitizer";
  }
  auto rt = Runtime::Create(Config());
  ASSERT_TRUE(rt.ok());
  CountingTask task;
  TaskConfig tc = telemetry::testing::OtherTask("t", milliseconds(1));
  tc.explain_latency_above = std::chrono::nanoseconds(1);  // every cycle is explained
  ASSERT_TRUE((*rt)->AddTask(task, tc).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  ASSERT_TRUE((*rt)->Stop().ok());
  ASSERT_TRUE(task.reached.load()) << "the task reached cycle " << CountingTask::kTo;
  EXPECT_EQ(task.at_to.load() - task.at_from.load(), 0u)
      << "the task's thread allocated while its cycles were being explained";
  const explain::ExplainerStats stats = (*rt)->OutlierStats();
  EXPECT_GE(stats.outliers, CountingTask::kTo) << "the explanation ran on every cycle";
  EXPECT_GT(stats.recorded, 0u);
}

// Touches kPages fresh pages every kEvery-th cycle up to kLast (one minor fault each; memory not
// locked), and counts the faults its thread took in that Step() (getrusage): the test's ground
// truth. It faults in the first half of the run only: the counters must sample the thread after
// the last faulting window, before the thread ends (in a TSan CI run the last one, 93 ms before
// the end, was sampled only after the thread had exited: its record rightly said so).
class FaultingTask final : public PeriodicTask {
 public:
  static constexpr std::size_t kPages = 256;
  static constexpr std::uint64_t kEvery = 50;
  static constexpr std::uint64_t kLast = 300;  // of the run's 600 cycles
  static constexpr std::size_t kSlots = kLast / kEvery + 1;
  // faults[cycle / kEvery]: the minor faults of that cycle's Step().
  std::array<std::atomic<long>, kSlots> faults{};

  static bool Faults(std::uint64_t cycle) noexcept {
    return cycle != 0 && cycle % kEvery == 0 && cycle <= kLast;
  }

  StepResult Step(const CycleContext& ctx) noexcept override {
    if (!Faults(ctx.cycle)) return StepResult::kContinue;
    rusage before{};
    getrusage(RUSAGE_THREAD, &before);
    Touch();
    rusage after{};
    getrusage(RUSAGE_THREAD, &after);
    const std::size_t slot = static_cast<std::size_t>(ctx.cycle / kEvery);
    faults[slot].store(after.ru_minflt - before.ru_minflt);
    return StepResult::kContinue;
  }

 private:
  static void Touch() noexcept {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* p =
        mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    for (std::size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(p)[i * page] = 1;
    munmap(p, kPages * page);
  }
};

TEST(RuntimeExplainTest, PageFaultsInStepAreNamedWhenTheTraceExplains) {
  if (geteuid() != 0) GTEST_SKIP() << "the trace evidence needs root (tracefs)";
  const testing::MeasureLock lock(std::chrono::seconds(300));
  ASSERT_TRUE(lock.held()) << lock.why_not();
  RuntimeConfig rc = Config();
  rc.executor.lock_memory = false;  // fresh pages fault in Step()
  auto rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok());
  FaultingTask task;
  TaskConfig tc = telemetry::testing::OtherTask("faulting", milliseconds(2));
  tc.cpus = {0};
  tc.explain_execution_above = std::chrono::microseconds(60);
  tc.run_for = std::chrono::milliseconds(1200);
  ASSERT_TRUE((*rt)->AddTask(task, tc).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  ASSERT_TRUE((*rt)->Stop().ok());
  if ((*rt)->OutlierEvidence().find("trace") == std::string::npos) {
    GTEST_SKIP() << "no trace evidence here: " << (*rt)->OutlierEvidence();
  }
  int faulting = 0;
  int named = 0;
  int said_why = 0;         // not named, and the record says why the counts are not known
  std::string why;          // those records' notes
  std::string unnamed;      // the records that neither name them nor say why: what they say
  std::string not_faulted;  // faulting cycles whose Step() took fewer faults than pages touched
  for (const explain::OutlierRecord& r : (*rt)->Outliers()) {
    // The cycles whose Step() touched the fresh pages: every kEvery-th to kLast but the first
    // (cycle 0, slow for its cold start, took no fault of Step()'s: counting it failed 1 run in 2
    // in the PREEMPT_RT lab's 6.1 guest, its record rightly naming no page faults).
    if (!r.window.execution || !FaultingTask::Faults(r.window.cycle)) continue;
    if (r.evidence != explain::EvidenceKind::kTrace) continue;  // the counters' own test exists
    // Only a Step() whose thread took the faults (its own getrusage) is owed the cause: one in a
    // TSan CI run showed none named and its cause unknown, so the test now knows which did.
    const std::size_t slot = static_cast<std::size_t>(r.window.cycle / FaultingTask::kEvery);
    const long took = task.faults[slot].load();
    if (took < static_cast<long>(FaultingTask::kPages)) {
      not_faulted += "\n  cycle " + std::to_string(r.window.cycle) + ": its Step() took " +
                     std::to_string(took) + " faults";
      continue;
    }
    ++faulting;
    bool has = false;
    for (const explain::Cause& c : r.causes) {
      has = has || (c.kind == explain::CauseKind::kPageFaults && c.count >= FaultingTask::kPages);
    }
    named += has ? 1 : 0;
    if (has) continue;
    // The counters' snapshots can miss the window on a loaded machine (too old by the time the
    // explaining thread got to it, or taken after the thread exited): the record must say so.
    const std::string& note = r.evidence_note;
    if (note.find("the task's page faults are not known") != std::string::npos ||
        note.find("counters not read in a snapshot") != std::string::npos) {
      ++said_why;
      why += "\n  cycle " + std::to_string(r.window.cycle) + ": " + note;
      continue;
    }
    unnamed += "\n  cycle " + std::to_string(r.window.cycle) + " (" +
               std::to_string(r.window.length_ns() / 1000) + " us):";
    for (const explain::Cause& c : r.causes) {
      unnamed += std::string(" ") + explain::CauseKindName(c.kind) + " " + c.name + " x" +
                 std::to_string(c.count) + ";";
    }
    unnamed += " [" + r.evidence_note + "]";
    for (const std::string& line : r.raw) unnamed += "\n    " + line;
  }
  ASSERT_GT(faulting, 0) << "a cycle touching " << FaultingTask::kPages
                         << " fresh pages ran longer than 60 us and the trace explained it"
                         << not_faulted;
  EXPECT_EQ(named + said_why, faulting)
      << "every such record names the task's page faults or says why it cannot:" << unnamed
      << not_faulted;
  EXPECT_GT(named, 0) << "no record named the page faults its cycle took:" << why;
  std::printf("%d records of cycles that took the faults, %d name them, %d say why not%s%s\n",
              faulting, named, said_why, why.c_str(),
              not_faulted.empty() ? "" : ("; left out:" + not_faulted).c_str());
}

TEST(RuntimeExplainTest, TheBusyHigherPriorityThreadIsNamedInTheTasksOutliers) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO for the task and the spinner needs root";
  const testing::MeasureLock lock(std::chrono::seconds(300));
  ASSERT_TRUE(lock.held()) << lock.why_not();
  testing::Spinner spin(0, 95, std::chrono::microseconds(3000), milliseconds(150));
  if (!spin.ok()) GTEST_SKIP() << "SCHED_FIFO 95 on CPU 0 was refused";
  auto rt = Runtime::Create(Config());
  ASSERT_TRUE(rt.ok());
  Idle task;
  TaskConfig tc;
  tc.name = "control";
  tc.period = milliseconds(1);
  tc.cpus = {0};
  tc.policy = SchedPolicy::kFifo;
  tc.priority = 80;
  tc.explain_latency_above = milliseconds(1);
  tc.run_for = std::chrono::seconds(2);
  ASSERT_TRUE((*rt)->AddTask(task, tc).ok());
  EXPECT_FALSE((*rt)->outlier_feed().Counts().explaining) << "before Start()";
  ASSERT_TRUE((*rt)->Start().ok());
  EXPECT_TRUE(HasThread("rtloop-explain"));
  EXPECT_TRUE((*rt)->outlier_feed().Counts().explaining);
  (*rt)->executor().Wait();
  ASSERT_TRUE((*rt)->Stop().ok());
  const std::vector<explain::OutlierRecord> records = (*rt)->Outliers();
  const explain::ExplainerStats stats = (*rt)->OutlierStats();
  // The servers' view (the feed) is the same records and counts.
  const explain::OutlierFeed::Page page = (*rt)->outlier_feed().Last(1000);
  EXPECT_EQ(page.total, records.size());
  ASSERT_EQ(page.records.size(), records.size());
  EXPECT_EQ(page.first, 0u);
  ASSERT_EQ(page.stats.tasks.size(), 1u);
  EXPECT_EQ(page.stats.tasks[0].name, "control");
  EXPECT_EQ(page.stats.tasks[0].recorded, stats.recorded);
  EXPECT_EQ(page.evidence, (*rt)->OutlierEvidence());
  ASSERT_FALSE(records.empty()) << "the spinner's 3 ms bursts made late cycles";
  EXPECT_EQ(stats.recorded, records.size());
  EXPECT_GE(stats.outliers, stats.recorded);
  EXPECT_FALSE((*rt)->OutlierEvidence().empty());
  for (const explain::OutlierRecord& r : records) {
    EXPECT_EQ(r.window.task_name, "control");
    EXPECT_EQ(r.window.cpu, 0);
    EXPECT_GT(r.window.wake_ns - r.window.release_ns, 1'000'000);
  }
  if (records.front().evidence != explain::EvidenceKind::kTrace) {
    GTEST_SKIP() << "no trace evidence here: " << (*rt)->OutlierEvidence();
  }
  // The spinner is named, by comm, tid and priority, in the records of the windows it ran in.
  // Other windows have other causes (on a VM the timer itself fires milliseconds late at times:
  // "timer-delay"), so a window's cause is not assumed; where the spinner is the only cause above
  // 100 us and the events cover the window, it took most of the window.
  int named = 0;
  for (const explain::OutlierRecord& r : records) {
    int big = 0;
    const explain::Cause* spinner = nullptr;
    for (const explain::Cause& c : r.causes) {
      if (c.ns > 100'000) ++big;
      if (c.kind == explain::CauseKind::kThread && c.name == "rtloop-spin") spinner = &c;
    }
    if (spinner == nullptr) continue;
    ++named;
    EXPECT_EQ(spinner->id, spin.tid());
    // "FIFO 95" from the trace; from the counters (a window the trace no longer held under load)
    // "FIFO 95, may run on CPU 0, ... (a candidate, not proof it ran)".
    EXPECT_EQ(spinner->detail.rfind("FIFO 95", 0), 0u) << spinner->detail;
    if (big == 1 && r.unexplained_ns < r.window.length_ns() / 5) {
      EXPECT_GT(spinner->ns, r.window.length_ns() * 8 / 10) << "it ran for most of the window";
    }
  }
  EXPECT_GT(named, 0);
}

}  // namespace
}  // namespace rtloop
