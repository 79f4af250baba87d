// The PLC's three tasks together, driven by a fake scheduler (simulated time, no threads): the
// process image flows io_scan -> logic -> io_scan and on to housekeeping; a trip of the
// framework's watchdog ends the task (kFault), drives the outputs safe and is reported once; the
// task monitor shows it; steady state allocates nothing.
#include "plc.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "alloc_counter.h"
#include "plc_monitor.h"
#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/time.h"

namespace plc {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

PlcConfig TestConfig() {
  PlcConfig c;
  c.name = "test";
  c.tasks = {
      {"scan", Program::kIoScan, milliseconds(1), 0, 90, microseconds(500), 3, 1},
      {"logic", Program::kLogic, milliseconds(10), 0, 80, milliseconds(5), 2, 2},
      {"hk", Program::kHousekeeping, milliseconds(100), 0, 20, milliseconds(50), 1, 3},
  };
  c.conveyor.belt_length_mm = 1000;
  c.conveyor.item_length_mm = 100;
  c.conveyor.item_interval = milliseconds(1000);
  c.conveyor.removal_delay = milliseconds(300);
  c.conveyor.start_press_at = milliseconds(50);
  return c;
}

// Execution time the fake scheduler gives a task's cycle.
using ExecutionFn = std::function<std::int64_t(Program, std::uint64_t cycle)>;

// Runs the tasks as the executor would on one CPU, in priority order at every millisecond: each
// due task's cycle through a real rtloop::CycleEngine with the task's TaskConfigFor() (so the
// framework's watchdog judges the execution time `exec` gives), its Step(), and on a trip its
// OnWatchdog(); a task whose cycle ends it (the watchdog's kFaultTask) runs no more.
class FakeScheduler {
 public:
  explicit FakeScheduler(Plc& plc) : plc_(plc) {
    for (Program p : kPrograms) {
      const std::size_t i = static_cast<std::size_t>(p);
      const rtloop::TaskConfig tc = plc_.TaskConfigFor(p);
      rtloop::CycleEngineConfig ec;
      ec.task = static_cast<rtloop::TaskId>(i);
      ec.period = tc.period;
      ec.overrun_policy = tc.overrun_policy;
      ec.watchdog = tc.watchdog;
      ec.stats = &stats_[i];
      engines_[i].emplace(ec, rtloop::TimePoint(nanoseconds(0)));
    }
  }

  void RunUntil(milliseconds end, const ExecutionFn& exec = nullptr) {
    for (; now_ < end; now_ += milliseconds(1)) {
      for (Program p : kPrograms) {
        const std::size_t i = static_cast<std::size_t>(p);
        rtloop::CycleEngine& e = *engines_[i];
        if (stopped_[i] || e.release() != rtloop::TimePoint(now_)) continue;
        const rtloop::CycleContext& ctx = e.BeginCycle(rtloop::TimePoint(now_));
        const rtloop::StepResult r = plc_.task(p).Step(ctx);
        const std::int64_t x = exec ? exec(p, e.cycles()) : 2'000;
        const rtloop::CycleOutcome o = e.EndCycle(rtloop::TimePoint(now_ + nanoseconds(x)), r);
        if (o.fault) plc_.task(p).OnWatchdog(ctx, e.last_fault());
        if (o.stop) {
          stopped_[i] = true;
          results_[i] = o.fault_state ? rtloop::StepResult::kFault : r;
        }
      }
    }
  }
  bool stopped(Program p) const { return stopped_[static_cast<std::size_t>(p)]; }
  // kFault when the task ended in the fault state, else what its last Step() returned.
  rtloop::StepResult result(Program p) const { return results_[static_cast<std::size_t>(p)]; }
  std::uint64_t cycles(Program p) const { return engines_[static_cast<std::size_t>(p)]->cycles(); }
  // The tasks' reports as rtloop::Runtime::Reports() would make them (no telemetry).
  std::vector<rtloop::TaskReport> Reports() const {
    std::vector<rtloop::TaskReport> out;
    for (Program p : kPrograms) {
      rtloop::TaskReport r;
      r.id = static_cast<rtloop::TaskId>(p);
      r.info.config = plc_.TaskConfigFor(p);
      r.name = r.info.config.name;
      r.stats = stats_[static_cast<std::size_t>(p)].Snapshot();
      out.push_back(r);
    }
    return out;
  }

 private:
  Plc& plc_;
  nanoseconds now_{0};
  std::array<rtloop::TaskStats, kProgramCount> stats_;
  std::array<std::optional<rtloop::CycleEngine>, kProgramCount> engines_;
  std::array<bool, kProgramCount> stopped_{};
  std::array<rtloop::StepResult, kProgramCount> results_{};
};

TEST(PlcTest, ConveyorRunsThroughTheProcessImageAndDeliversItems) {
  Plc plc(TestConfig());
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(20'000));
  const DeviceStatus dev = plc.device();
  const ProcessImage img = plc.image();
  const Diagnostics diag = plc.diagnostics();
  EXPECT_FALSE(plc.faulted());
  EXPECT_EQ(dev.scans, 20'000u);
  EXPECT_GE(dev.items_removed, 5u);
  EXPECT_FALSE(dev.outputs_forced_safe);
  // The logic's counter is what came back through the image from the device.
  EXPECT_LE(img.memory.items_delivered, dev.items_removed);
  EXPECT_GE(img.memory.items_delivered + 1, dev.items_removed);
  EXPECT_EQ(img.memory.logic_cycles, 2000u);
  EXPECT_NE(img.inputs.scan, 0u);  // the logic's last input image came from a recent scan
  EXPECT_EQ(diag.samples, 200u);
  EXPECT_GT(diag.items_per_minute, 10.0);
  EXPECT_GT(diag.motor_duty, 0.3);
  EXPECT_LT(diag.motor_duty, 1.0);
  EXPECT_FALSE(diag.logic_stalled);
  EXPECT_EQ(sched.Reports()[1].stats.watchdog_trips, 0u);
  EXPECT_EQ(FormatFaultReport(plc.fault(), plc.config()), "no fault");
}

TEST(PlcTest, LogicWatchdogTripDrivesOutputsSafeHaltsTheTaskAndIsReported) {
  Plc plc(TestConfig());
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(1000));
  ASSERT_TRUE(plc.device().outputs.motor_run);  // running: the trip has something to stop
  // Logic cycles 100 and 101 take 6 ms against a 5 ms watchdog with sensitivity 2.
  const ExecutionFn slow_logic = [](Program p, std::uint64_t cycle) -> std::int64_t {
    return p == Program::kLogic && cycle >= 100 ? 6'000'000 : 2'000;
  };
  sched.RunUntil(milliseconds(1005), slow_logic);  // logic cycle 100, at 1000 ms
  EXPECT_FALSE(plc.faulted());                     // one violation: not yet
  EXPECT_EQ(sched.Reports()[1].stats.watchdog_violations, 1u);
  sched.RunUntil(milliseconds(1011), slow_logic);  // cycle 101, at 1010 ms, trips it
  ASSERT_TRUE(plc.faulted());
  EXPECT_EQ(sched.Reports()[1].stats.watchdog_trips, 1u);
  EXPECT_EQ(sched.Reports()[1].stats.last_fault.reason, rtloop::FaultReason::kWatchdog);
  sched.RunUntil(milliseconds(1100), slow_logic);
  EXPECT_TRUE(sched.stopped(Program::kLogic));
  EXPECT_EQ(sched.result(Program::kLogic),
            rtloop::StepResult::kFault);          // the executor's fault state
  EXPECT_FALSE(sched.stopped(Program::kIoScan));  // the scan keeps holding the device safe
  const DeviceStatus dev = plc.device();
  EXPECT_TRUE(dev.outputs_forced_safe);
  EXPECT_EQ(dev.outputs, SafeOutputs());
  EXPECT_FALSE(dev.outputs.motor_run);
  EXPECT_TRUE(dev.outputs.lamp_red);

  const FaultReport f = plc.fault();
  ASSERT_TRUE(f.faulted);
  EXPECT_EQ(f.program, Program::kLogic);
  EXPECT_EQ(f.cycle, 101u);
  EXPECT_EQ(f.since_start_ns, 1'016'000'000);  // the end of the cycle released at 1010 ms
  EXPECT_EQ(f.execution_ns, 6'000'000);
  EXPECT_EQ(f.watchdog_ns, 5'000'000);
  EXPECT_EQ(f.sensitivity, 2u);
  EXPECT_EQ(f.consecutive, 2u);
  EXPECT_FALSE(f.single_cycle);
  EXPECT_EQ(FormatFaultReport(f, plc.config()),
            "PLC FAULT: watchdog of task \"logic\" (10ms, watchdog 5ms x 2) tripped at cycle 101 "
            "(t=1.016s): execution 6ms, 2 consecutive violations; task halted, outputs set to safe "
            "values (motor off, red lamp)");
  // Housekeeping notices that the logic's image no longer changes.
  sched.RunUntil(milliseconds(1300));
  EXPECT_TRUE(plc.diagnostics().logic_stalled);
}

TEST(PlcTest, IoScanWatchdogTripMakesTheOutputsSafeAtOnce) {
  Plc plc(TestConfig());
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(1000));
  ASSERT_TRUE(plc.device().outputs.motor_run);
  // One scan of 2 ms: longer than 500 us x 3, trips by the single-cycle rule.
  sched.RunUntil(milliseconds(1001), [](Program p, std::uint64_t) -> std::int64_t {
    return p == Program::kIoScan ? 2'000'000 : 2'000;
  });
  ASSERT_TRUE(plc.faulted());
  // No further scan has run, and the device is already safe.
  EXPECT_EQ(plc.device().outputs, SafeOutputs());
  EXPECT_TRUE(plc.device().outputs_forced_safe);
  const FaultReport f = plc.fault();
  EXPECT_EQ(f.program, Program::kIoScan);
  EXPECT_TRUE(f.single_cycle);
  EXPECT_NE(FormatFaultReport(f, plc.config()).find("one cycle longer than watchdog x sensitivity"),
            std::string::npos);
  sched.RunUntil(milliseconds(1002));
  EXPECT_TRUE(sched.stopped(Program::kIoScan));
  EXPECT_EQ(sched.result(Program::kIoScan), rtloop::StepResult::kFault);
}

TEST(PlcTest, OnlyTheFirstTripIsReportedButEveryTrippedTaskHalts) {
  Plc plc(TestConfig());
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(500));
  sched.RunUntil(milliseconds(1000), [](Program p, std::uint64_t) -> std::int64_t {
    return p == Program::kHousekeeping ? 60'000'000 : 2'000;  // trips at 500 ms
  });
  sched.RunUntil(milliseconds(2000), [](Program p, std::uint64_t) -> std::int64_t {
    return p == Program::kLogic ? 20'000'000 : 2'000;  // trips at once too
  });
  EXPECT_TRUE(sched.stopped(Program::kHousekeeping));
  EXPECT_TRUE(sched.stopped(Program::kLogic));
  EXPECT_EQ(plc.fault().program, Program::kHousekeeping);
  EXPECT_EQ(plc.device().outputs, SafeOutputs());
}

TEST(PlcTest, InjectedOverrunBusyWaitsPastTheWatchdogForTheGivenCycles) {
  PlcConfig c = TestConfig();
  c.tasks[1].watchdog = microseconds(1000);
  Plc plc(c);
  plc.InjectOverrun(Program::kLogic, 3, 2);
  rtloop::CycleContext ctx;
  ctx.period = milliseconds(10);
  for (std::uint64_t cycle = 0; cycle < 6; ++cycle) {
    ctx.cycle = cycle;
    const rtloop::TimePoint a = rtloop::Now(rtloop::Clock::kMonotonic);
    ASSERT_EQ(plc.task(Program::kLogic).Step(ctx), rtloop::StepResult::kContinue);
    const nanoseconds took = rtloop::Now(rtloop::Clock::kMonotonic) - a;
    // 1.2 x 1 ms + 200 us in the injected cycles (a lower bound: never flaky on a busy VM).
    if (cycle == 3 || cycle == 4) {
      EXPECT_GE(took, microseconds(1400)) << cycle;
    }
  }
}

TEST(PlcTest, TaskConfigForMapsTheSpecToAPinnedFifoTaskWithItsWatchdog) {
  PlcConfig c = TestConfig();
  c.tasks[0].cpu = 1;
  Plc plc(c);
  const rtloop::TaskConfig tc = plc.TaskConfigFor(Program::kIoScan);
  EXPECT_EQ(tc.name, "scan");
  EXPECT_EQ(tc.period, milliseconds(1));
  EXPECT_EQ(tc.cpus, std::vector<int>{1});
  EXPECT_EQ(tc.policy, rtloop::SchedPolicy::kFifo);
  EXPECT_EQ(tc.priority, 90);
  EXPECT_EQ(tc.overrun_policy, rtloop::OverrunPolicy::kSkip);
  EXPECT_TRUE(tc.observers.empty());
  // The configuration's watchdog is the framework's: time x sensitivity, the task faults.
  EXPECT_EQ(tc.watchdog.time, microseconds(500));
  EXPECT_EQ(tc.watchdog.sensitivity, 3u);
  EXPECT_EQ(tc.watchdog.action, rtloop::WatchdogAction::kFaultTask);
  EXPECT_EQ(tc.watchdog.max_consecutive_overruns, 0u);
  c.tasks[0].watchdog = nanoseconds(0);
  EXPECT_EQ(Plc(c).TaskConfigFor(Program::kIoScan).watchdog.time.count(), 0) << "no watchdog";
}

// The task reports of `plc`'s tasks as the runtime would make them before the first cycle.
std::vector<rtloop::TaskReport> EmptyReports(const Plc& plc) {
  std::vector<rtloop::TaskReport> reports;
  for (const TaskSpec& t : plc.config().tasks) {
    rtloop::TaskReport r;
    r.id = static_cast<rtloop::TaskId>(reports.size());
    r.name = t.name;
    r.info.config.period = t.period;
    reports.push_back(r);
  }
  return reports;
}

TEST(PlcTest, MonitorShowsTheTaskTableEachWatchdogTheDeviceAndTheFault) {
  PlcConfig c = TestConfig();
  c.tasks[2].watchdog = nanoseconds(0);  // housekeeping without a watchdog
  Plc plc(c);
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(1000));
  std::string m = FormatPlcMonitor(plc, EmptyReports(plc));
  EXPECT_EQ(m.rfind("PLC \"test\" task monitor\n", 0), 0u) << m;
  EXPECT_NE(m.find("no data"), std::string::npos) << "the runtime's table, as given:\n" << m;
  EXPECT_NE(m.find("watchdog                  TIME   SENS  STATE    VIOLATIONS  IN A ROW\n"
                   "  scan                   500us      3  armed             0         0\n"
                   "  logic                    5ms      2  armed             0         0\n"
                   "  hk                         -      -  off\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("conveyor: running, motor on, lamp green; "), std::string::npos) << m;
  EXPECT_NE(m.find("outputs: from the logic task\nno fault\n"), std::string::npos) << m;

  sched.RunUntil(milliseconds(1100), [](Program p, std::uint64_t) -> std::int64_t {
    return p == Program::kLogic ? 20'000'000 : 2'000;  // > 5 ms x 2: trips at once
  });
  m = FormatPlcStatus(plc, sched.Reports());
  EXPECT_NE(m.find("  logic                    5ms      2  TRIPPED           1         1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("motor off, lamp red; "), std::string::npos) << m;
  EXPECT_NE(m.find("outputs: SAFE (motor off, red lamp) since the PLC fault\n"
                   "PLC FAULT: watchdog of task \"logic\""),
            std::string::npos)
      << m;
  sched.RunUntil(milliseconds(1200));
  const std::string status = FormatPlcStatus(plc, sched.Reports());
  EXPECT_NE(status.find("conveyor: logic STALLED (its image stopped changing; last state running)"),
            std::string::npos)
      << status;
}

TEST(PlcTest, StepsAndWatchdogsDoNotAllocateInSteadyState) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out";
  }
  Plc plc(TestConfig());
  FakeScheduler sched(plc);
  sched.RunUntil(milliseconds(1000));
  rtloop::testing::AllocationCounter counter;
  sched.RunUntil(milliseconds(6000));
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_GE(sched.cycles(Program::kIoScan), 6000u);
}

}  // namespace
}  // namespace plc
