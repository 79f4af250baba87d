// The PLC's TOML configuration: a good file parses into the task table; every kind of bad file is
// refused with one line naming the file, the line, the key and the fix.
#include "plc_config.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "test_paths.h"

using rtloop::testing::SourcePath;

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
  rtloop::Result<PlcConfig> c = LoadPlcConfig(SourcePath("examples/plc/conveyor.toml"), kOnline);
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

// A name or value quoted in a message may hold a newline or an escape sequence (TOML strings
// take \n and \u001b): the message stays one line and shows them escaped. (The PLC's config
// fuzzer, tests/fuzz/plc_config_fuzzer.cc, checks this for every input.)
TEST(PlcConfigTest, ControlCharactersFromTheFileAreEscapedInTheOneLineMessage) {
  const std::string text =
      Replace(Replace(kGood, "name = \"logic\"", "name = \"lo\\ngic\\u001b[31m\""), "priority = 80",
              "priority = 800");
  rtloop::Result<PlcConfig> r = ParsePlcConfig(text, "plc.toml", kOnline);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().message();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_NE(msg.find("task \"lo\\ngic\\x1b[31m\""), std::string::npos) << msg;
  EXPECT_NE(msg.find(" — "), std::string::npos) << msg;  // UTF-8 kept as it is
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

// The configuration goes through the bounded, non-blocking input reader (input_file.h): what is
// not a regular file is refused by what it is, before anything is read (it was: /dev/zero read
// until memory ran out, a FIFO blocked forever, a directory was "no [[task]] tables"), and a file
// far larger than any configuration is refused by its size (a 200 MB file was read and parsed).
TEST(PlcConfigTest, OnlyARegularFileOfAConfigurationsSizeIsRead) {
  const std::string dir = ::testing::TempDir() + "/rtloop_plc_inputs_" + std::to_string(getpid());
  ASSERT_TRUE(std::filesystem::create_directories(dir)) << dir;
  const std::string fifo = dir + "/plc.toml.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const std::string big = dir + "/big.toml";  // 200 MB, sparse: its size says what it is
  std::filesystem::copy_file(SourcePath("examples/plc/conveyor.toml"), big);
  std::filesystem::resize_file(big, 200u << 20);
  struct Case {
    std::string path;
    rtloop::StatusCode code;
    std::string why;
  } cases[] = {
      {"/dev/zero", rtloop::StatusCode::kInvalidArgument, "is a character device"},
      {dir, rtloop::StatusCode::kInvalidArgument, "is a directory"},
      {fifo, rtloop::StatusCode::kInvalidArgument, "is a named pipe (FIFO)"},
      {big, rtloop::StatusCode::kResourceExhausted, "is 209715200 bytes"},
  };
  for (const Case& c : cases) {
    std::future<rtloop::Result<PlcConfig>> load =
        std::async(std::launch::async, [&] { return LoadPlcConfig(c.path, kOnline); });
    if (load.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << c.path << ": still reading after 10 s";
      // A writer that comes and goes ends a read blocked on the FIFO.
      const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) close(fd);
    }
    const rtloop::Result<PlcConfig> r = load.get();
    ASSERT_FALSE(r.ok()) << c.path;
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    const std::string msg = r.status().message();
    EXPECT_EQ(msg.rfind("PLC configuration '" + c.path + "': " + c.why, 0), 0u) << msg;
  }
  std::filesystem::remove_all(dir);
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
