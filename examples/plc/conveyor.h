// The PLC's device and its program: a simulated conveyor (ConveyorSim) and the logic that runs it
// (RunConveyorLogic), a small state machine.
//
//   entry eye                                     exit eye   end stop
//      |                                             |          |
//   [box]====>====>====>====>====>====>====>====>====>====[box] |   <- belt, one motor
//   boxes arrive at the entry every item_interval;  an operator takes the box at the end
//
// The logic: start (with the e-stop chain closed) runs the belt; a box at the exit eye stops it
// (amber lamp) until the operator has taken the box, then it runs again; stop stops it; an open
// e-stop chain stops it at once (red lamp) until start is pressed with the chain closed again.
//
//   plc::ConveyorSim sim(config.conveyor);            // owned by the I/O scan task
//   sim.Advance(now);                                 // move the belt to time `now`
//   plc::InputImage in = sim.ReadInputs();
//   plc::OutputImage out = plc::RunConveyorLogic(in, memory);   // in the logic task
//   sim.WriteOutputs(out);
//
// Threading: ConveyorSim belongs to one thread (the I/O scan task); RunConveyorLogic is a pure
// function of its arguments. Everything here is RT-safe: fixed-size state, no allocation.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "plc_config.h"
#include "process_image.h"

namespace plc {

// One scan of the conveyor program: reads `in` and the program's memory, returns the outputs,
// updates `memory` (state, edge memories, counters; not logic_cycles). RT-safe.
OutputImage RunConveyorLogic(const InputImage& in, MemoryImage& memory) noexcept;

class ConveyorSim {
 public:
  static constexpr int kMaxItems = 16;  // boxes on the belt at once (fixed storage)
  static constexpr std::chrono::nanoseconds kButtonPress{std::chrono::milliseconds(100)};

  explicit ConveyorSim(const ConveyorConfig& config) noexcept;

  // Moves time to `now` (since the simulation began; never backwards): arrivals, belt motion
  // under the current outputs, the operator. RT-safe.
  void Advance(std::chrono::nanoseconds now) noexcept;
  // The sensors now (InputImage::scan left 0). RT-safe.
  InputImage ReadInputs() const noexcept;
  // The actuators from now on. RT-safe.
  void WriteOutputs(const OutputImage& out) noexcept { outputs_ = out; }
  const OutputImage& outputs() const noexcept { return outputs_; }

  // The operator and the field, for tests and scripted runs. RT-safe.
  void PressStart(std::chrono::nanoseconds at) noexcept { start_press_at_ = at; }
  void PressStop(std::chrono::nanoseconds at) noexcept { stop_press_at_ = at; }
  void SetEstopOk(bool ok) noexcept { estop_ok_ = ok; }

  int items_on_belt() const noexcept { return count_; }
  std::uint32_t items_loaded() const noexcept { return loaded_; }
  std::uint32_t items_removed() const noexcept { return removed_; }
  std::chrono::nanoseconds now() const noexcept { return now_; }

 private:
  struct Item {
    double front_mm = 0.0;                       // leading edge, measured from the belt's entry
    std::chrono::nanoseconds at_exit_since{-1};  // when it reached the exit eye; -1: not yet
  };
  static bool Pressed(std::chrono::nanoseconds at, std::chrono::nanoseconds now) noexcept;
  bool Covers(double position_mm) const noexcept;
  void Arrive() noexcept;
  void Move(double distance_mm) noexcept;
  void Operator() noexcept;

  ConveyorConfig config_;
  double entry_eye_mm_;
  double exit_eye_mm_;
  std::array<Item, kMaxItems> items_{};  // [0] is the one nearest the end
  int count_ = 0;
  std::chrono::nanoseconds now_{0};
  std::chrono::nanoseconds next_arrival_;
  std::chrono::nanoseconds start_press_at_;
  std::chrono::nanoseconds stop_press_at_{-1};
  bool estop_ok_ = true;
  OutputImage outputs_;
  std::uint32_t loaded_ = 0;
  std::uint32_t removed_ = 0;
};

}  // namespace plc
