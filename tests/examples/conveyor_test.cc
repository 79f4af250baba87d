// The conveyor: the logic's state machine on hand-made inputs, the simulated device on its own,
// and both in a closed loop at the PLC's rates, without heap allocation.
#include "conveyor.h"

#include <gtest/gtest.h>

#include <chrono>

#include "alloc_counter.h"

namespace plc {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

InputImage Inputs(bool start = false, bool stop = false, bool estop_ok = true, bool exit = false) {
  InputImage in;
  in.start_button = start;
  in.stop_button = stop;
  in.estop_ok = estop_ok;
  in.exit_eye = exit;
  return in;
}

TEST(ConveyorLogicTest, StartEdgeWithTheEstopClosedRunsTheBelt) {
  MemoryImage m;
  OutputImage out = RunConveyorLogic(Inputs(), m);
  EXPECT_FALSE(out.motor_run);
  EXPECT_EQ(m.state, ConveyorState::kStopped);
  out = RunConveyorLogic(Inputs(/*start=*/true), m);
  EXPECT_EQ(m.state, ConveyorState::kRunning);
  EXPECT_TRUE(out.motor_run);
  EXPECT_TRUE(out.lamp_green);
  out = RunConveyorLogic(Inputs(/*start=*/true), m);  // held: still running, no new edge needed
  EXPECT_TRUE(out.motor_run);
}

TEST(ConveyorLogicTest, HeldStartButtonDoesNotRestartAfterStop) {
  MemoryImage m;
  RunConveyorLogic(Inputs(true), m);
  RunConveyorLogic(Inputs(true, /*stop=*/true), m);
  EXPECT_EQ(m.state, ConveyorState::kStopped);
  const OutputImage out = RunConveyorLogic(Inputs(true), m);  // no rising edge
  EXPECT_EQ(m.state, ConveyorState::kStopped);
  EXPECT_FALSE(out.motor_run);
}

TEST(ConveyorLogicTest, ItemAtTheExitStopsTheBeltUntilTakenThenCountsIt) {
  MemoryImage m;
  RunConveyorLogic(Inputs(true), m);
  OutputImage out = RunConveyorLogic(Inputs(false, false, true, /*exit=*/true), m);
  EXPECT_EQ(m.state, ConveyorState::kWaitRemoval);
  EXPECT_FALSE(out.motor_run);
  EXPECT_TRUE(out.lamp_amber);
  EXPECT_EQ(m.items_delivered, 0u);
  out = RunConveyorLogic(Inputs(), m);  // the operator took it
  EXPECT_EQ(m.state, ConveyorState::kRunning);
  EXPECT_TRUE(out.motor_run);
  EXPECT_EQ(m.items_delivered, 1u);
}

TEST(ConveyorLogicTest, OpenEstopStopsAtOnceAndNeedsStartAfterItCloses) {
  MemoryImage m;
  RunConveyorLogic(Inputs(true), m);
  OutputImage out = RunConveyorLogic(Inputs(false, false, /*estop_ok=*/false), m);
  EXPECT_EQ(m.state, ConveyorState::kEmergency);
  EXPECT_FALSE(out.motor_run);
  EXPECT_TRUE(out.lamp_red);
  EXPECT_EQ(m.estops, 1u);
  out = RunConveyorLogic(Inputs(true, false, false), m);  // start while still open: refused
  EXPECT_EQ(m.state, ConveyorState::kEmergency);
  out = RunConveyorLogic(Inputs(false, false, true), m);  // closed again: still stopped
  EXPECT_FALSE(out.motor_run);
  out = RunConveyorLogic(Inputs(true, false, true), m);
  EXPECT_EQ(m.state, ConveyorState::kRunning);
  EXPECT_EQ(m.estops, 1u);
}

ConveyorConfig Config() {
  ConveyorConfig c;
  c.belt_length_mm = 1000;
  c.speed_mm_per_s = 500;
  c.item_length_mm = 100;
  c.item_interval = milliseconds(1000);
  c.removal_delay = milliseconds(300);
  c.start_press_at = milliseconds(50);
  return c;
}

TEST(ConveyorSimTest, ItemsArriveMoveWithTheMotorAndAreSeenByTheEyes) {
  ConveyorConfig c = Config();
  c.item_interval = milliseconds(10'000);  // one box, at item_interval / 5 = 2 s
  ConveyorSim sim(c);
  sim.Advance(milliseconds(1900));
  EXPECT_EQ(sim.items_on_belt(), 0);
  sim.Advance(milliseconds(2500));
  EXPECT_EQ(sim.items_on_belt(), 1);
  EXPECT_EQ(sim.items_loaded(), 1u);
  EXPECT_TRUE(sim.ReadInputs().entry_eye);
  EXPECT_FALSE(sim.ReadInputs().exit_eye);
  EXPECT_EQ(sim.ReadInputs().belt_speed_mm_per_s, 0);
  OutputImage run;
  run.motor_run = true;
  sim.WriteOutputs(run);
  EXPECT_EQ(sim.ReadInputs().belt_speed_mm_per_s, 500);
  sim.Advance(milliseconds(2800));  // 150 mm on: the box has left the entry eye (50 mm)
  EXPECT_FALSE(sim.ReadInputs().entry_eye);
  EXPECT_FALSE(sim.ReadInputs().exit_eye);
  sim.Advance(milliseconds(4400));  // 950 mm on: held by the end stop, at the exit eye
  EXPECT_TRUE(sim.ReadInputs().exit_eye);
  EXPECT_EQ(sim.items_removed(), 0u);
  sim.Advance(milliseconds(4600));  // 200 ms at the exit: the operator needs 300
  EXPECT_EQ(sim.items_removed(), 0u);
  sim.Advance(milliseconds(4800));
  EXPECT_EQ(sim.items_removed(), 1u);
  EXPECT_FALSE(sim.ReadInputs().exit_eye);
  EXPECT_EQ(sim.items_on_belt(), 0);
}

TEST(ConveyorSimTest, OperatorPressesStartForAMomentAtTheConfiguredTime) {
  ConveyorSim sim(Config());
  sim.Advance(milliseconds(40));
  EXPECT_FALSE(sim.ReadInputs().start_button);
  sim.Advance(milliseconds(60));
  EXPECT_TRUE(sim.ReadInputs().start_button);
  sim.Advance(milliseconds(160));
  EXPECT_FALSE(sim.ReadInputs().start_button);
}

TEST(ConveyorSimTest, EndStopAndTheBoxAheadHoldBoxesBack) {
  ConveyorConfig c = Config();
  c.removal_delay = milliseconds(1'000'000);  // nobody takes anything
  c.item_interval = milliseconds(200);
  ConveyorSim sim(c);
  OutputImage run;
  run.motor_run = true;
  sim.WriteOutputs(run);
  for (int ms = 1; ms <= 20'000; ++ms) sim.Advance(milliseconds(ms));
  // The belt filled up from the end stop: 1000 mm of 100 mm boxes, the last one at the entry.
  EXPECT_EQ(sim.items_on_belt(), 10);
  EXPECT_TRUE(sim.ReadInputs().exit_eye);
  EXPECT_TRUE(sim.ReadInputs().entry_eye);
}

// The PLC's rates in a closed loop: 1 ms scan, 10 ms logic.
TEST(ConveyorClosedLoopTest, DeliversEveryItemThatArrivesWithoutAllocating) {
  ConveyorSim sim(Config());
  MemoryImage m;
  InputImage latest;
  OutputImage outputs;
  auto run = [&](int from_ms, int to_ms) {
    for (int ms = from_ms; ms < to_ms; ++ms) {
      sim.Advance(milliseconds(ms));
      latest = sim.ReadInputs();
      if (ms % 10 == 0) outputs = RunConveyorLogic(latest, m);
      sim.WriteOutputs(outputs);
    }
  };
  run(0, 1000);
  const bool counting = rtloop::testing::AllocationCountingEnabled();
  rtloop::testing::AllocationCounter counter;
  run(1000, 30'000);
  if (counting) {
    EXPECT_EQ(counter.Allocations(), 0u);
    EXPECT_EQ(counter.Deallocations(), 0u);
  }
  // One box a second for 30 s; each needs 1.9 s to travel and 0.3 s to be taken, and the belt
  // waits for each: throughput is bounded by the travel-and-take time, not by arrivals.
  EXPECT_GE(sim.items_removed(), 10u);
  // The logic samples every 10 ms: it may not have seen the very last removal yet.
  EXPECT_LE(m.items_delivered, sim.items_removed());
  EXPECT_GE(m.items_delivered + 1, sim.items_removed());
  EXPECT_GE(sim.items_loaded(), sim.items_removed());
}

}  // namespace
}  // namespace plc
