// The GPIO toggle example's outputs and task: the sysfs LED against a fake LED directory, the
// errors that list what exists, the memory output, the toggle task without allocation.
#include "gpio_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <utility>

#include "alloc_counter.h"
#include "rtloop/framework/time.h"
#include "toggle_task.h"

namespace gpio_toggle {
namespace {

namespace fs = std::filesystem;
using std::chrono::microseconds;

std::string FirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

// A fake /sys/class/leds with two LEDs, removed at the end of the test.
class FakeLeds : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("rtloop_leds_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "status");
    fs::create_directories(root_ / "user");
    Write(root_ / "status" / "brightness", "0\n");
    Write(root_ / "status" / "max_brightness", "255\n");
    Write(root_ / "status" / "trigger", "none timer [heartbeat] mmc0\n");
    Write(root_ / "user" / "brightness", "0\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FakeLeds, LedWritesMaxBrightnessAndZeroAndRestoresItsTrigger) {
  {
    rtloop::Result<std::unique_ptr<Output>> led = OpenLed(root_.string(), "status");
    ASSERT_TRUE(led.ok()) << led.status().ToString();
    EXPECT_EQ(FirstLine(root_ / "status" / "trigger"), "none");  // the heartbeat would fight us
    EXPECT_EQ(FirstLine(root_ / "status" / "brightness"), "0");  // starts off
    ASSERT_TRUE((*led)->Set(true));
    EXPECT_EQ(FirstLine(root_ / "status" / "brightness"), "255");
    EXPECT_TRUE((*led)->level());
    ASSERT_TRUE((*led)->Set(false));
    EXPECT_EQ(FirstLine(root_ / "status" / "brightness"), "0");
    EXPECT_EQ((*led)->errors(), 0u);
    const std::string d = (*led)->Describe();
    EXPECT_NE(d.find("LED status"), std::string::npos) << d;
    EXPECT_NE(d.find("on = 255"), std::string::npos) << d;
    EXPECT_NE(d.find("heartbeat"), std::string::npos) << d;
  }
  EXPECT_EQ(FirstLine(root_ / "status" / "trigger"), "heartbeat");
}

TEST_F(FakeLeds, LedWithoutMaxBrightnessOrTriggerSwitchesBetweenOneAndZero) {
  rtloop::Result<std::unique_ptr<Output>> led = OpenLed(root_.string(), "user");
  ASSERT_TRUE(led.ok()) << led.status().ToString();
  ASSERT_TRUE((*led)->Set(true));
  EXPECT_EQ(FirstLine(root_ / "user" / "brightness"), "1");
}

TEST_F(FakeLeds, MissingLedListsTheLedsThatExist) {
  rtloop::Result<std::unique_ptr<Output>> led = OpenLed(root_.string(), "led7");
  ASSERT_FALSE(led.ok());
  const std::string msg = led.status().message();
  EXPECT_EQ(led.status().code(), rtloop::StatusCode::kNotFound);
  EXPECT_NE(msg.find("no LED \"led7\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("LEDs there: status, user"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--led=NAME"), std::string::npos) << msg;
}

TEST_F(FakeLeds, LedDirectoryWithoutBrightnessIsRefused) {
  fs::create_directories(root_ / "broken");
  rtloop::Result<std::unique_ptr<Output>> led = OpenLed(root_.string(), "broken");
  ASSERT_FALSE(led.ok());
  EXPECT_NE(led.status().message().find("no brightness file"), std::string::npos);
}

// The LED's attributes go through the bounded, non-blocking input reader and a non-blocking open
// for writing: a FIFO or a device in a --leds-dir is refused by what it is (a FIFO as
// max_brightness or trigger blocked forever, /dev/zero filled memory looking for a newline, a FIFO
// as brightness blocked waiting for a reader, /dev/zero as brightness was "an LED").
TEST_F(FakeLeds, AnAttributeThatIsNotARegularFileIsRefusedWithoutBlocking) {
  for (const char* attribute : {"max_brightness", "trigger", "brightness"}) {
    for (const bool fifo : {true, false}) {
      const fs::path led = root_ / "odd";
      fs::remove_all(led);
      fs::create_directories(led);
      Write(led / "brightness", "0\n");
      Write(led / "max_brightness", "255\n");
      Write(led / "trigger", "none [timer]\n");
      const fs::path odd = led / attribute;
      fs::remove(odd);
      if (fifo) {
        ASSERT_EQ(mkfifo(odd.c_str(), 0600), 0) << std::strerror(errno);
      } else {
        fs::create_symlink("/dev/zero", odd);
      }
      std::future<rtloop::Result<std::unique_ptr<Output>>> open =
          std::async(std::launch::async, [&] { return OpenLed(root_.string(), "odd"); });
      int unblock = -1;
      const bool writes = std::string(attribute) == "brightness";
      if (open.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        ADD_FAILURE() << odd << ": still opening after 10 s";
        // The other end of the FIFO ends the wait: a writer that comes and goes for a reader, a
        // reader kept open until the call returns for a writer.
        unblock = ::open(odd.c_str(), (writes ? O_RDONLY : O_WRONLY) | O_NONBLOCK);
        if (!writes && unblock >= 0) ::close(std::exchange(unblock, -1));
      }
      const rtloop::Result<std::unique_ptr<Output>> r = open.get();
      if (unblock >= 0) ::close(unblock);
      EXPECT_FALSE(r.ok()) << odd << (fifo ? " (FIFO)" : " (/dev/zero)");
      EXPECT_NE(r.status().message().find(odd.string()), std::string::npos)
          << r.status().ToString();
      if (std::string(attribute) != "trigger") {
        EXPECT_EQ(FirstLine(led / "trigger"), "none [timer]") << "the trigger is left as it was";
      }
    }
  }
}

TEST(GpioOutputTest, MissingLedDirectorySaysThereAreNoLeds) {
  rtloop::Result<std::unique_ptr<Output>> led = OpenLed("/nonexistent/leds", "x");
  ASSERT_FALSE(led.ok());
  EXPECT_NE(led.status().message().find("no LED directory /nonexistent/leds"), std::string::npos);
  EXPECT_NE(led.status().message().find("--sim"), std::string::npos);
}

TEST(GpioOutputTest, MissingChipListsTheChipsThatExist) {
  rtloop::Result<std::unique_ptr<Output>> line =
      OpenGpioLine("rtloop-no-such-chip", "0", "rtloop-test");
  ASSERT_FALSE(line.ok());
  const std::string msg = line.status().message();
  // Whatever this machine has (often nothing on a VM) is in the message.
  EXPECT_NE(msg.find(ListGpioChips()), std::string::npos) << msg;
  if (GpiodAvailable()) {
    EXPECT_NE(msg.find("GPIO chip \"rtloop-no-such-chip\" not found"), std::string::npos) << msg;
  } else {
    EXPECT_NE(msg.find("no libgpiod"), std::string::npos) << msg;
  }
}

TEST(GpioOutputTest, ListGpioChipsNamesEachChipOrSaysThereAreNone) {
  const std::string list = ListGpioChips();
  if (!fs::exists("/dev/gpiochip0")) {
    EXPECT_EQ(list, "(no GPIO chips: no /dev/gpiochip*)");
  } else {
    EXPECT_NE(list.find("gpiochip0"), std::string::npos) << list;
  }
}

TEST(GpioOutputTest, SimOutputCountsWritesAndEdges) {
  SimOutput sim;
  sim.Set(true);
  sim.Set(true);
  sim.Set(false);
  EXPECT_EQ(sim.writes(), 3u);
  EXPECT_EQ(sim.edges(), 2u);
  EXPECT_FALSE(sim.level());
  EXPECT_EQ(sim.errors(), 0u);
}

TEST(ToggleTaskTest, FlipsTheOutputEveryCycleWithoutAllocatingAndEndsLow) {
  SimOutput sim;
  ToggleTask task(sim, std::chrono::nanoseconds(0), 1000);
  rtloop::CycleContext ctx;
  const bool counting = rtloop::testing::AllocationCountingEnabled();
  rtloop::testing::AllocationCounter counter;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    ctx.cycle = k;
    EXPECT_EQ(task.Step(ctx), k < 999 ? rtloop::StepResult::kContinue : rtloop::StepResult::kStop);
    EXPECT_EQ(sim.level(), k % 2 == 0);
  }
  if (counting) {
    EXPECT_EQ(counter.Allocations(), 0u);
  }
  EXPECT_EQ(sim.edges(), 1000u);
  EXPECT_EQ(task.toggles(), 1000u);
  task.OnStop();
  EXPECT_FALSE(sim.level());
}

TEST(ToggleTaskTest, BusyDelayKeepsTheStepAtLeastThatLong) {
  SimOutput sim;
  ToggleTask task(sim, microseconds(100), 0);
  rtloop::CycleContext ctx;
  const rtloop::TimePoint a = rtloop::Now(rtloop::Clock::kMonotonic);
  for (std::uint64_t k = 0; k < 10; ++k) {
    ctx.cycle = k;
    task.Step(ctx);
  }
  EXPECT_GE(rtloop::Now(rtloop::Clock::kMonotonic) - a, microseconds(1000));
}

}  // namespace
}  // namespace gpio_toggle
