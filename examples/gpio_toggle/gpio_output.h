// The digital outputs the GPIO toggle example can drive: a GPIO line through libgpiod (v1), an LED
// through its sysfs brightness file (/sys/class/leds/NAME/brightness), or memory (--sim).
//
//   rtloop::Result<std::unique_ptr<gpio_toggle::Output>> out =
//       gpio_toggle::OpenGpioLine("gpiochip0", "17", "rtloop-gpio-toggle");     // set-up
//   if (!out.ok()) { std::fprintf(stderr, "%s\n", out.status().message().c_str()); return 1; }
//   (*out)->Set(true);                                                         // RT thread
//
// Opening is set-up work (files, ioctls, allocation) and returns an error that says what exists
// when the chip, line or LED asked for does not: the chips with their labels and line counts,
// or the LEDs in the directory. An LED's attributes must be regular files (as sysfs shows them):
// they are read through rtloop's bounded input reader and opened without blocking, so a FIFO or a
// device in their place is refused, never waited on. Set() is the task's own I/O: one ioctl (GPIO)
// or one pwrite (LED) per call, no allocation, no lock; that system call is the point of the
// example (the RT rules in framework/README.md allow the I/O a Step does on purpose).
//
// Threading: an Output is driven by one thread (the toggle task); the counters may be read from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "rtloop/framework/status.h"

namespace gpio_toggle {

class Output {
 public:
  virtual ~Output() = default;
  // Drives the output. False when the write failed (counted in errors()). RT-safe apart from the
  // write's own system call (none for the simulated output).
  virtual bool Set(bool on) noexcept = 0;
  // "gpiochip0 [pinctrl] line 17 via libgpiod", "LED led0 (/sys/class/leds/led0/brightness,
  // on = 255)", "simulated (memory)". Not RT-safe.
  virtual std::string Describe() const = 0;

  // Any thread. RT-safe.
  std::uint64_t writes() const noexcept { return writes_.load(std::memory_order_relaxed); }
  std::uint64_t errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  bool level() const noexcept { return level_.load(std::memory_order_relaxed); }

 protected:
  // Bookkeeping for Set(): single writer, relaxed. RT-safe.
  bool Count(bool on, bool ok) noexcept {
    writes_.store(writes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!ok) errors_.store(errors_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (ok) level_.store(on, std::memory_order_relaxed);
    return ok;
  }

 private:
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<bool> level_{false};
};

// True when this build has libgpiod (pkg-config libgpiod was found).
bool GpiodAvailable() noexcept;

// A GPIO line as an output, initially low. `chip`: a name ("gpiochip0"), a path ("/dev/gpiochip0"),
// a label or a number, as gpiod_chip_open_lookup() takes it. `line`: an offset ("17") or a line
// name ("GPIO17"). `consumer`: the name the kernel shows as the line's user. Errors: no libgpiod
// in this build, no such chip (lists the chips), no such line (gives the chip's range and, for a
// name, the named lines), the line busy (names its user), permission.
rtloop::Result<std::unique_ptr<Output>> OpenGpioLine(const std::string& chip,
                                                     const std::string& line,
                                                     const std::string& consumer);

// One line per GPIO chip: "gpiochip0 [pinctrl-rk3588] 32 lines", or "(no GPIO chips: no
// /dev/gpiochip*)". Not RT-safe.
std::string ListGpioChips();

// "LEDs in DIR: led0, led1", "no LEDs in DIR" or "no LED directory DIR". Not RT-safe.
std::string ListLeds(const std::string& leds_dir);

// The LED `name` under `leds_dir` (normally /sys/class/leds; a test passes a fake directory) as
// an output: on writes max_brightness (1 when the file is missing), off writes 0. An active
// trigger (heartbeat, timer, ...) would fight the writes, so it is set to "none" at open and put
// back when the Output is destroyed. Errors: no such LED (lists the LEDs there), no brightness
// file, permission.
rtloop::Result<std::unique_ptr<Output>> OpenLed(const std::string& leds_dir,
                                                const std::string& name);

// A memory-only output (--sim): counts edges. Set() is RT-safe (no system call).
class SimOutput final : public Output {
 public:
  bool Set(bool on) noexcept override {
    if (on != level())
      edges_.store(edges_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return Count(on, true);
  }
  std::string Describe() const override { return "simulated (memory)"; }
  std::uint64_t edges() const noexcept { return edges_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> edges_{0};
};

}  // namespace gpio_toggle
