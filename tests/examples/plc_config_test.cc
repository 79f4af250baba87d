// The PLC's TOML configuration: a good file parses into the task table; every kind of bad file is
// refused with one line naming the file, the line, the key and the fix.
#include "plc_config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace plc {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const std::vector<int> kOnline = {0, 1};

// Line numbers below refer to this text (line 1 is "[plc]").
constexpr const char* kGood = R"([plc]
name = "conveyor"

[[task]]
name = "io_scan"
program = "io_scan"
period = "1ms"
cpu = 1
priority = 90
watchdog = "500us"
sensitivity = 3

[[task]]
name = "logic"
program = "logic"
period = "T#10ms"
cpu = 1
priority = 80
watchdog = "5ms"
sensitivity = 2

[[task]]
name = "housekeeping"
program = "housekeeping"
period = "100ms"
cpu = 0
priority = 20

[conveyor]
speed_mm_per_s = 400
item_interval = "2s"
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PlcConfigTest, ParsesTheTaskTableInFileOrder) {
  rtloop::Result<PlcConfig> c = ParsePlcConfig(kGood, "plc.toml", kOnline);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "conveyor");
  EXPECT_EQ(c->source, "plc.toml");
  ASSERT_EQ(c->tasks.size(), 3u);
  const TaskSpec& scan = c->task(Program::kIoScan);
  EXPECT_EQ(scan.name, "io_scan");
  EXPECT_EQ(scan.period, milliseconds(1));
  EXPECT_EQ(scan.cpu, 1);
  EXPECT_EQ(scan.priority, 90);
  EXPECT_EQ(scan.watchdog, microseconds(500));
  EXPECT_EQ(scan.sensitivity, 3u);
  EXPECT_EQ(scan.line, 4);
  EXPECT_EQ(c->task(Program::kLogic).period, milliseconds(10));  // IEC T# form
  const TaskSpec& hk = c->task(Program::kHousekeeping);
  EXPECT_EQ(hk.watchdog.count(), 0);  // no watchdog
  EXPECT_EQ(hk.sensitivity, 1u);
  EXPECT_EQ(c->conveyor.speed_mm_per_s, 400.0);
  EXPECT_EQ(c->conveyor.item_interval, milliseconds(2000));
  EXPECT_EQ(c->conveyor.belt_length_mm, 2000.0);  // default
}

TEST(PlcConfigTest, TheShippedConfigurationParses) {
  rtloop::Result<PlcConfig> c =
      LoadPlcConfig(std::string(RTLOOP_SOURCE_DIR) + "/examples/plc/conveyor.toml", kOnline);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->task(Program::kIoScan).period, milliseconds(1));
  EXPECT_EQ(c->task(Program::kLogic).period, milliseconds(10));
  EXPECT_EQ(c->task(Program::kHousekeeping).period, milliseconds(100));
  EXPECT_GT(c->task(Program::kIoScan).priority, c->task(Program::kLogic).priority);
  EXPECT_GT(c->task(Program::kLogic).priority, c->task(Program::kHousekeeping).priority);
}

struct BadCase {
  const char* what;
  std::string text;
  std::string location;            // "plc.toml:LINE:"
  std::vector<std::string> words;  // the key, the problem and the fix must all be named
};

TEST(PlcConfigTest, BadConfigurationsNameFileLineKeyAndFix) {
  const std::vector<BadCase> cases = {
      {"unknown key",
       Replace(kGood, "priority = 80", "priorty = 80"),
       "plc.toml:18:",
       {"task \"logic\"", "unknown key \"priorty\"", "use one of:", "priority"}},
      {"unknown top-level table",
       std::string(kGood) + "[motor]\nx = 1\n",
       "plc.toml:32:",
       {"unknown key \"motor\"", "use one of: plc, task, conveyor"}},
      {"unknown conveyor key",
       Replace(kGood, "speed_mm_per_s", "speed"),
       "plc.toml:30:",
       {"[conveyor]", "unknown key \"speed\"", "speed_mm_per_s"}},
      {"wrong type: period as a number",
       Replace(kGood, "period = \"1ms\"", "period = 1"),
       "plc.toml:7:",
       {"task \"io_scan\"", "key \"period\" is an integer", "period = \"10ms\""}},
      {"wrong type: cpu as a string",
       Replace(kGood, "cpu = 0", "cpu = \"0\""),
       "plc.toml:26:",
       {"task \"housekeeping\"", "key \"cpu\" is a string", "whole number"}},
      {"period 0",
       Replace(kGood, "period = \"100ms\"", "period = \"0ms\""),
       "plc.toml:25:",
       {"task \"housekeeping\"", "key \"period\" is 0", "> 0"}},
      {"not a duration",
       Replace(kGood, "\"5ms\"", "\"5 parsecs\""),
       "plc.toml:19:",
       {"key \"watchdog\"", "is not a duration", "units ns, us, ms, s"}},
      {"duplicate task",
       Replace(kGood, "name = \"housekeeping\"", "name = \"logic\""),
       "plc.toml:23:",
       {"task \"logic\"", "already used by the task at line 13", "own name"}},
      {"program run twice",
       Replace(kGood, "program = \"housekeeping\"", "program = \"logic\""),
       "plc.toml:24:",
       {"program \"logic\" already runs in task \"logic\"", "exactly one task"}},
      {"unknown program",
       Replace(kGood, "program = \"logic\"", "program = \"logik\""),
       "plc.toml:15:",
       {"key \"program\" = \"logik\"", "\"io_scan\", \"logic\" or"}},
      {"cpu missing",
       Replace(kGood, "cpu = 0\n", ""),
       "plc.toml:22:",
       {"task \"housekeeping\"", "key \"cpu\" is missing", "add cpu = N", "0-1"}},
      {"cpu not online",
       Replace(kGood, "cpu = 0", "cpu = 7"),
       "plc.toml:26:",
       {"key \"cpu\" = 7 is not an online CPU", "use one of 0-1"}},
      {"priority out of range",
       Replace(kGood, "priority = 80", "priority = 120"),
       "plc.toml:18:",
       {"task \"logic\"", "key \"priority\" = 120 is out of range", "1..99"}},
      {"priority 0",
       Replace(kGood, "priority = 20", "priority = 0"),
       "plc.toml:27:",
       {"key \"priority\" = 0 is out of range", "1..99"}},
      {"sensitivity out of range",
       Replace(kGood, "sensitivity = 2", "sensitivity = 0"),
       "plc.toml:20:",
       {"key \"sensitivity\" = 0 is out of range", "1..1000"}},
      {"sensitivity without watchdog",
       Replace(kGood, "priority = 20", "priority = 20\nsensitivity = 2"),
       "plc.toml:28:",
       {"key \"sensitivity\"", "no watchdog", "add watchdog"}},
      {"name missing",
       Replace(kGood, "name = \"io_scan\"\n", ""),
       "plc.toml:4:",
       {"task #1", "key \"name\" is missing"}},
      {"task is a plain table",
       "[task]\nname = \"x\"\n",
       "plc.toml:1:",
       {"key \"task\" is a table", "[[task]]"}},
      {"no tasks", "[plc]\nname = \"x\"\n", "plc.toml:1:", {"no [[task]] tables", "add one"}},
      {"TOML syntax",
       Replace(kGood, "cpu = 1\npriority = 90", "cpu = = 1\npriority = 90"),
       "plc.toml:8:",
       {"TOML syntax error", "fix the file"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    rtloop::Result<PlcConfig> r = ParsePlcConfig(c.text, "plc.toml", kOnline);
    ASSERT_FALSE(r.ok());
    const rtloop::Status status = r.status();  // by value: message() refers into it
    const std::string& msg = status.message();
    EXPECT_EQ(status.code(), rtloop::StatusCode::kInvalidArgument);
    EXPECT_EQ(msg.rfind(c.location, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;   // one line
    EXPECT_NE(msg.find(" — "), std::string::npos) << msg;  // ... then the fix
    for (const std::string& w : c.words)
      EXPECT_NE(msg.find(w), std::string::npos) << w << "\n" << msg;
  }
}

TEST(PlcConfigTest, AProgramNoTaskRunsIsNamed) {
  // Drop the whole housekeeping task.
  std::string text = kGood;
  text.erase(text.find("[[task]]\nname = \"housekeeping\""),
             text.find("[conveyor]") - text.find("[[task]]\nname = \"housekeeping\""));
  rtloop::Result<PlcConfig> r = ParsePlcConfig(text, "plc.toml", kOnline);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no task runs program \"housekeeping\""), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("program = \"housekeeping\""), std::string::npos);
}

TEST(PlcConfigTest, MissingFileIsNamed) {
  rtloop::Result<PlcConfig> r = LoadPlcConfig("/nonexistent/plc.toml", kOnline);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), rtloop::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/plc.toml"), std::string::npos);
}

TEST(PlcConfigTest, ErrorsNameTheFileTheyCameFrom) {
  const std::string path = ::testing::TempDir() + "/rtloop_plc_bad.toml";
  {
    std::ofstream out(path);
    out << Replace(kGood, "priority = 90", "priority = 100");
  }
  rtloop::Result<PlcConfig> r = LoadPlcConfig(path, kOnline);
  std::remove(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(path + ":9:", 0), 0u) << r.status().message();
}

TEST(DurationTest, ParsesUnitsAndTheIecPrefix) {
  EXPECT_EQ(*ParseDuration("500us"), microseconds(500));
  EXPECT_EQ(*ParseDuration("1.5ms"), microseconds(1500));
  EXPECT_EQ(*ParseDuration("2s"), milliseconds(2000));
  EXPECT_EQ(*ParseDuration("250ns"), std::chrono::nanoseconds(250));
  EXPECT_EQ(*ParseDuration("t#10ms"), milliseconds(10));
  for (const char* bad : {"", "10", "ms", "10 ms", "-1ms", "10min", "1e30s", "T#"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(DurationTest, FormatsTheShortestExactForm) {
  EXPECT_EQ(FormatDuration(microseconds(500)), "500us");
  EXPECT_EQ(FormatDuration(microseconds(1500)), "1.5ms");
  EXPECT_EQ(FormatDuration(milliseconds(100)), "100ms");
  EXPECT_EQ(FormatDuration(milliseconds(2000)), "2s");
  EXPECT_EQ(FormatDuration(std::chrono::nanoseconds(1234567)), "1234567ns");
}

}  // namespace
}  // namespace plc
