#include "gpio_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/output_file.h"

#ifdef RTLOOP_HAVE_GPIOD
#include <gpiod.h>
#endif

namespace gpio_toggle {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> SortedEntries(const std::string& dir, std::string_view prefix = {}) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string JoinOrNone(const std::vector<std::string>& names, std::size_t max = 32) {
  if (names.empty()) return "(none)";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > max) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// sysfs shows every attribute as a regular file of one page (4 KiB, or 64 KiB on some arm64
// kernels), whatever it holds.
constexpr std::size_t kMaxAttributeBytes = 64u << 10;

// The first line of an LED attribute (max_brightness, trigger) through rtloop's input reader: a
// regular file, bounded, read without blocking, so a FIFO or /dev/zero in a --leds-dir is refused
// instead of waiting forever or filling memory. NotFound when it is not there.
rtloop::Result<std::string> ReadFirstLine(const std::string& path) {
  rtloop::Result<std::string> text = rtloop::telemetry::ReadInputFile(
      path, {.what = "LED attribute", .max_bytes = kMaxAttributeBytes, .allow_empty = true});
  if (!text.ok()) return text.status();
  return text->substr(0, text->find('\n'));
}

// Opens an LED attribute for writing without ever blocking: what is not a regular file (a FIFO
// would wait for a reader, a device is no LED) is refused by what it is.
rtloop::Result<int> OpenAttribute(const std::string& path) {
  const auto not_regular = [&] {
    return rtloop::InvalidArgumentError(
        "LED attribute '" + rtloop::telemetry::EscapeControlCharacters(path) +
        "' is not a regular file — give the directory of LED class devices (/sys/class/leds) "
        "with --leds-dir");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return not_regular();
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return rtloop::ErrnoError(errno, "cannot open " + path + " for writing", "run as root");
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced in between
    ::close(fd);
    return not_regular();
  }
  return fd;
}

// Writes `value` to an LED attribute (one write: sysfs takes it as a whole new value).
rtloop::Status WriteAttribute(const std::string& path, const std::string& value) {
  rtloop::Result<int> fd = OpenAttribute(path);
  if (!fd.ok()) return fd.status();
  const ssize_t n = ::write(*fd, value.data(), value.size());
  const int err = errno;
  ::close(*fd);
  if (n == static_cast<ssize_t>(value.size())) return rtloop::Status::Ok();
  return rtloop::ErrnoError(n < 0 ? err : EIO, "cannot write " + path, "run as root");
}

// The active trigger of an LED: the [bracketed] word of its trigger file; "none" when none is.
std::string ActiveTrigger(const std::string& content) {
  const std::size_t open = content.find('[');
  const std::size_t close = content.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "none";
  return content.substr(open + 1, close - open - 1);
}

class LedOutput final : public Output {
 public:
  LedOutput(int fd, std::string name, std::string brightness_path, std::string on_value,
            std::string trigger_path, std::string restore_trigger)
      : fd_(fd),
        name_(std::move(name)),
        brightness_path_(std::move(brightness_path)),
        on_(std::move(on_value) + "\n"),
        trigger_path_(std::move(trigger_path)),
        restore_trigger_(std::move(restore_trigger)) {}
  ~LedOutput() override {
    ::close(fd_);
    if (!restore_trigger_.empty()) (void)WriteAttribute(trigger_path_, restore_trigger_ + "\n");
  }
  LedOutput(const LedOutput&) = delete;
  LedOutput& operator=(const LedOutput&) = delete;

  bool Set(bool on) noexcept override {
    // One pwrite at offset 0: sysfs takes each write as a whole new value.
    const std::string& v = on ? on_ : off_;
    const ssize_t n = ::pwrite(fd_, v.data(), v.size(), 0);
    return Count(on, n == static_cast<ssize_t>(v.size()));
  }

  std::string Describe() const override {
    std::string d =
        "LED " + name_ + " (" + brightness_path_ + ", on = " + on_.substr(0, on_.size() - 1) + ")";
    if (!restore_trigger_.empty()) d += ", trigger \"" + restore_trigger_ + "\" off while running";
    return d;
  }

 private:
  int fd_;
  std::string name_;
  std::string brightness_path_;
  std::string on_;
  const std::string off_ = "0\n";
  std::string trigger_path_;
  std::string restore_trigger_;  // put back at destruction; empty: nothing to restore
};

#ifdef RTLOOP_HAVE_GPIOD
class GpioLineOutput final : public Output {
 public:
  GpioLineOutput(gpiod_chip* chip, gpiod_line* line, std::string description)
      : chip_(chip), line_(line), description_(std::move(description)) {}
  ~GpioLineOutput() override {
    gpiod_line_release(line_);
    gpiod_chip_close(chip_);
  }
  GpioLineOutput(const GpioLineOutput&) = delete;
  GpioLineOutput& operator=(const GpioLineOutput&) = delete;

  bool Set(bool on) noexcept override {
    return Count(on, gpiod_line_set_value(line_, on ? 1 : 0) == 0);  // one ioctl
  }
  std::string Describe() const override { return description_; }

 private:
  gpiod_chip* chip_;
  gpiod_line* line_;
  std::string description_;
};

std::string ChipSummary(gpiod_chip* chip) {
  return std::string(gpiod_chip_name(chip)) + " [" + gpiod_chip_label(chip) + "] " +
         std::to_string(gpiod_chip_num_lines(chip)) + " lines";
}

bool IsNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::vector<std::string> NamedLines(gpiod_chip* chip) {
  std::vector<std::string> names;
  for (unsigned int i = 0; i < gpiod_chip_num_lines(chip); ++i) {
    gpiod_line* l = gpiod_chip_get_line(chip, i);
    if (l != nullptr && gpiod_line_name(l) != nullptr) {
      names.push_back(std::string(gpiod_line_name(l)) + " (" + std::to_string(i) + ")");
    }
  }
  return names;
}
#endif

}  // namespace

bool GpiodAvailable() noexcept {
#ifdef RTLOOP_HAVE_GPIOD
  return true;
#else
  return false;
#endif
}

std::string ListGpioChips() {
  const std::vector<std::string> chips = SortedEntries("/dev", "gpiochip");
  if (chips.empty()) return "(no GPIO chips: no /dev/gpiochip*)";
  std::string out;
  for (const std::string& name : chips) {
    if (!out.empty()) out += "; ";
#ifdef RTLOOP_HAVE_GPIOD
    gpiod_chip* chip = gpiod_chip_open(("/dev/" + name).c_str());
    if (chip == nullptr) {
      out += name + " (cannot open: " + std::strerror(errno) + ")";
      continue;
    }
    out += ChipSummary(chip);
    gpiod_chip_close(chip);
#else
    out += name;
#endif
  }
  return out;
}

rtloop::Result<std::unique_ptr<Output>> OpenGpioLine(const std::string& chip_name,
                                                     const std::string& line_name,
                                                     const std::string& consumer) {
#ifndef RTLOOP_HAVE_GPIOD
  (void)chip_name;
  (void)line_name;
  (void)consumer;
  return rtloop::FailedPreconditionError(
      "this build has no libgpiod: install libgpiod-dev and rebuild, or use --led=NAME or --sim "
      "(GPIO chips here: " +
      ListGpioChips() + ")");
#else
  gpiod_chip* chip = gpiod_chip_open_lookup(chip_name.c_str());
  if (chip == nullptr) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      return rtloop::ErrnoError(err, "cannot open GPIO chip \"" + chip_name + "\"",
                                "run as root or give your user access to /dev/gpiochip*");
    }
    return rtloop::NotFoundError("GPIO chip \"" + chip_name + "\" not found — chips here: " +
                                 ListGpioChips() + "; pass one with --chip, or use --led or --sim");
  }
  const std::string summary = ChipSummary(chip);
  gpiod_line* line = nullptr;
  if (IsNumber(line_name)) {
    const unsigned long offset = std::stoul(line_name);
    const unsigned int lines = gpiod_chip_num_lines(chip);
    if (offset >= lines) {
      gpiod_chip_close(chip);
      return rtloop::NotFoundError(
          "GPIO line " + line_name + " does not exist on " + summary + " — pass " +
          (lines > 0 ? "--line=0.." + std::to_string(lines - 1) + " or a line name"
                     : "another chip"));
    }
    line = gpiod_chip_get_line(chip, static_cast<unsigned int>(offset));
  } else {
    line = gpiod_chip_find_line(chip, line_name.c_str());
    if (line == nullptr) {
      const std::string named = JoinOrNone(NamedLines(chip));
      gpiod_chip_close(chip);
      return rtloop::NotFoundError("no GPIO line named \"" + line_name + "\" on " + summary +
                                   " — named lines: " + named + "; or pass an offset");
    }
  }
  if (line == nullptr) {
    const int err = errno;
    gpiod_chip_close(chip);
    return rtloop::ErrnoError(err, "cannot get line " + line_name + " of " + summary);
  }
  if (gpiod_line_is_used(line)) {
    const char* user = gpiod_line_consumer(line);
    gpiod_chip_close(chip);
    return rtloop::Status(rtloop::StatusCode::kAlreadyExists,
                          "GPIO line " + line_name + " of " + summary + " is in use by \"" +
                              (user != nullptr ? user : "the kernel") +
                              "\" — pick a free line (gpioinfo lists them)");
  }
  if (gpiod_line_request_output(line, consumer.c_str(), 0) < 0) {
    const int err = errno;
    gpiod_chip_close(chip);
    return rtloop::ErrnoError(
        err, "cannot request GPIO line " + line_name + " of " + summary + " as an output",
        "run as root or give your user access to /dev/gpiochip*");
  }
  std::unique_ptr<Output> out = std::make_unique<GpioLineOutput>(
      chip, line, summary + ", line " + line_name + " via libgpiod");
  return out;
#endif
}

std::string ListLeds(const std::string& leds_dir) {
  std::error_code ec;
  if (!fs::is_directory(leds_dir, ec)) return "no LED directory " + leds_dir;
  const std::vector<std::string> leds = SortedEntries(leds_dir);
  if (leds.empty()) return "no LEDs in " + leds_dir;
  return "LEDs in " + leds_dir + ": " + JoinOrNone(leds);
}

rtloop::Result<std::unique_ptr<Output>> OpenLed(const std::string& leds_dir,
                                                const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(leds_dir, ec)) {
    return rtloop::NotFoundError("no LED directory " + leds_dir +
                                 " (this machine has no LED class devices) — use --chip/--line "
                                 "for a GPIO line, or --sim");
  }
  const std::string dir = leds_dir + "/" + name;
  if (name.empty() || name.find('/') != std::string::npos || !fs::is_directory(dir, ec)) {
    return rtloop::NotFoundError("no LED \"" + name + "\" in " + leds_dir +
                                 " — LEDs there: " + JoinOrNone(SortedEntries(leds_dir)) +
                                 "; pass one of them with --led=NAME");
  }
  const std::string brightness = dir + "/brightness";
  if (!fs::exists(brightness, ec)) {
    return rtloop::NotFoundError("LED \"" + name + "\" has no brightness file (" + brightness +
                                 ") — is " + dir + " an LED class device?");
  }
  rtloop::Result<std::string> max = ReadFirstLine(dir + "/max_brightness");
  if (!max.ok() && max.status().code() != rtloop::StatusCode::kNotFound) return max.status();
  const std::string on_value = max.ok() && !max->empty() ? *max : "1";
  rtloop::Result<int> fd = OpenAttribute(brightness);  // before the trigger is touched
  if (!fd.ok()) return fd.status();
  // Switch off the LED's trigger (it would keep writing brightness too), remembering it.
  const std::string trigger_path = dir + "/trigger";
  std::string active = "none";
  if (fs::exists(trigger_path, ec)) {
    rtloop::Result<std::string> trigger = ReadFirstLine(trigger_path);
    if (trigger.ok()) active = ActiveTrigger(*trigger);
    rtloop::Status s = trigger.status();
    if (s.ok() && active != "none") s = WriteAttribute(trigger_path, "none\n");
    if (!s.ok()) {
      ::close(*fd);
      return rtloop::Status(s.code(),
                            "cannot switch off the trigger of LED \"" + name + "\": " + s.message(),
                            s.sys_errno());
    }
  }
  std::unique_ptr<Output> out = std::make_unique<LedOutput>(
      *fd, name, brightness, on_value, trigger_path, active == "none" ? "" : active);
  out->Set(false);
  return out;
}

}  // namespace gpio_toggle
