// The PLC's process image — inputs (%I), outputs (%Q) and memory (%M) — and how the tasks
// exchange it without locks:
//
//   io_scan (1 ms) --inputs: TripleBuffer-->  logic (10 ms)
//   io_scan (1 ms) <--outputs: TripleBuffer-- logic (10 ms)
//   logic --image: SeqLockValue--> housekeeping (100 ms), the monitor and any other reader
//
// Like a PLC's, the image gives each task a consistent view: the logic task takes one complete
// input scan at the start of its cycle and hands over one complete set of outputs at its end; the
// I/O scan always writes a complete, never half-updated, set of outputs to the device.
//
//   plc::ProcessImageExchange x;                   // shared by the three tasks
//   x.inputs.Write(scanned);                       // io_scan, every 1 ms
//   x.inputs.Update(); Use(x.inputs.ReadSlot());   // logic, every 10 ms
//
// Threading: see each member. The images are plain trivially copyable values.
#pragma once

#include <cstdint>

#include "rtloop/framework/seqlock_value.h"
#include "rtloop/framework/triple_buffer.h"

namespace plc {

// %I: what the I/O scan read from the device.
struct InputImage {
  bool start_button = false;  // %IX0.0 momentary push button, true while pressed
  bool stop_button = false;   // %IX0.1 momentary push button, true while pressed
  bool estop_ok = true;       // %IX0.2 emergency-stop chain, normally closed: false = e-stop
  bool entry_eye = false;     // %IX0.3 photo eye at the belt's entry: an item is there
  bool exit_eye = false;      // %IX0.4 photo eye at the belt's end: an item is there
  std::int32_t belt_speed_mm_per_s = 0;  // %ID4 the drive's speed feedback
  std::uint64_t scan = 0;                // I/O scan cycle that read it
};

// %Q: what the logic wants the device to do.
struct OutputImage {
  bool motor_run = false;   // %QX0.0 belt motor contactor
  bool lamp_green = false;  // %QX0.1 running
  bool lamp_amber = false;  // %QX0.2 waiting for the operator to take the item at the end
  bool lamp_red = false;    // %QX0.3 stopped by e-stop, or a PLC fault

  friend bool operator==(const OutputImage&, const OutputImage&) = default;
};

// What the outputs go to when the PLC faults (a watchdog trip): motor off, red lamp on.
constexpr OutputImage SafeOutputs() noexcept {
  OutputImage out;
  out.lamp_red = true;
  return out;
}

enum class ConveyorState : std::uint8_t {
  kStopped,      // motor off; start (with the e-stop chain closed) -> running
  kRunning,      // motor on; an item at the exit eye -> waiting; stop -> stopped
  kWaitRemoval,  // motor off until the operator takes the item at the end
  kEmergency,    // e-stop opened: motor off, red; start after it closes -> running
};

// "stopped", "running", "wait-removal", "emergency". RT-safe.
const char* ConveyorStateName(ConveyorState state) noexcept;

// %M: the logic's own state, kept between its cycles and visible to every reader of the image.
struct MemoryImage {
  ConveyorState state = ConveyorState::kStopped;
  bool last_start = false;  // for edge detection of the push buttons
  bool last_exit = false;
  std::uint32_t items_delivered = 0;  // items taken from the end of the belt
  std::uint32_t estops = 0;           // times the e-stop chain opened
  std::uint64_t logic_cycles = 0;     // logic cycles that produced this image
};

// One consistent snapshot: the inputs the logic used, the outputs it produced, its memory.
struct ProcessImage {
  InputImage inputs;
  OutputImage outputs;
  MemoryImage memory;
};

// The shared exchange. Each member has exactly the writer and readers its comment names.
struct ProcessImageExchange {
  // Writer: io_scan. Reader: logic (one reader, never retries).
  rtloop::TripleBuffer<InputImage> inputs;
  // Writer: logic. Reader: io_scan.
  rtloop::TripleBuffer<OutputImage> outputs;
  // Writer: logic. Readers: housekeeping, the monitor, tests (any number; RT readers TryLoad()).
  rtloop::SeqLockValue<ProcessImage> image;
};

}  // namespace plc
