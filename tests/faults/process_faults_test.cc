// Faults around the tools as a user runs them (issue 13): SIGTERM while rtloop-cyclic and
// rtloop-two-tasks start and while they shut down, the sample log on a full tmpfs and in a
// read-only directory, the server ports already taken. After each: the exit status says what
// happened, what is written under a final name is whole, nothing is left (no child process, no
// FILE.partial of a run that ended normally), and a run that measured has its cycles.
// Every child runs on 127.0.0.1 with free ports and is stopped (SIGKILL at worst) in bounded time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "fault_util.h"
#include "grpc_test_util.h"
#include "port_holder.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/sample_log_file.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::HasTargetFile;
using rtloop::testing::TargetFile;

namespace rtloop::faults {
namespace {

namespace fs = std::filesystem;
using ::rtloop::testing::ChildProcess;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using telemetry::testing::OtherTask;
using telemetry::testing::ReadAll;
using telemetry::testing::ScratchDir;
using telemetry::testing::TestRuntimeConfig;

constexpr int kKilledByTerm = 128 + SIGTERM;

// The "C:" cycle counts of rtloop-cyclic's "-q" thread lines ("T: 0 (123) P: 0 I:250 C: 6000").
std::vector<std::uint64_t> CyclesOf(const std::string& out) {
  std::vector<std::uint64_t> cycles;
  static const std::regex kLine(R"(T:\s*\d+ \(\s*\d+\) P:\s*\d+ I:\s*\d+ C:\s*(\d+))");
  for (std::sregex_iterator it(out.begin(), out.end(), kLine), end; it != end; ++it) {
    cycles.push_back(std::stoull((*it)[1].str()));
  }
  return cycles;
}

// Samples in a sample log (every batch's rows).
std::uint64_t SamplesIn(const telemetry::SampleLogContents& log) {
  std::uint64_t n = 0;
  for (const telemetry::v1::SampleBatch& b : log.batches) {
    n += static_cast<std::uint64_t>(b.latency_ns_size());
  }
  return n;
}

// What a run left in `dir` besides its stdout/stderr file "out".
std::vector<std::string> FilesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != "out") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The outputs of an rtloop-cyclic run that ended with `status`: killed by SIGTERM before its
// handling was set up, nothing was written; otherwise the JSON and the recording are whole, no
// FILE.partial is left and the recording holds every cycle the report counts.
void ExpectWholeOrNothing(int status, const fs::path& dir, const std::string& output) {
  const std::vector<std::string> files = FilesIn(dir);
  if (status == kKilledByTerm) {
    EXPECT_TRUE(files.empty()) << "killed before measuring, yet it left " << files.size()
                               << " file(s), the first " << files.front();
    return;
  }
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(files, (std::vector<std::string>{"j.json", "r.bin"})) << output;
  const std::string json = ReadAll((dir / "j.json").string());
  EXPECT_NE(json.find("\"return_code\": 0,"), std::string::npos) << json;
  EXPECT_EQ(json.substr(json.size() >= 2 ? json.size() - 2 : 0), "}\n");
  Result<telemetry::SampleLogContents> log = telemetry::ReadSampleLog((dir / "r.bin").string());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE(log->error.ok()) << log->error.ToString();
  EXPECT_TRUE(log->trailer.has_value());
  std::uint64_t cycles = 0;
  for (std::uint64_t c : CyclesOf(output)) cycles += c;
  EXPECT_EQ(SamplesIn(*log), cycles) << "the recording holds every cycle the report counts";
}

// ----------------------------------------------------------------------------------------------
// SIGTERM during start-up: at any moment, the run ends promptly. Before the signal handling is
// set up the default action ends the process (exit 143) before any output file exists; from then
// on the run stops at once, cleanly, with the full final output (exit 0). The last signal comes
// once the run says it serves (-1 below), so one of them finds it set up however slowly a loaded
// machine or a sanitizer starts it.

TEST(ProcessFaults, SigtermDuringRtloopCyclicsStartUpEndsItPromptlyWithWholeOutputsOrNone) {
  int killed = 0;
  int clean = 0;
  for (const int delay_ms : {0, 2, 5, 10, 20, 40, 60, 100, 200, -1}) {
    const ScratchDir dir("sigterm_start_" + std::to_string(delay_ms));
    ChildProcess cyclic(
        {TargetFile("rtloop-cyclic"), "-q", "-t2", "-i250", "-D10", "--default-system",
         "--telemetry=127.0.0.1:0", "--metrics=127.0.0.1:0", "--json=" + (dir / "j.json").string(),
         "--record=" + (dir / "r.bin").string()},
        dir / "out");
    ASSERT_TRUE(cyclic.started()) << cyclic.error();
    if (delay_ms >= 0) {
      std::this_thread::sleep_for(milliseconds(delay_ms));
    } else {
      ASSERT_TRUE(telemetry::testing::WaitFor(
          [&] { return cyclic.Output().find("serving on") != std::string::npos; },
          milliseconds(60'000)))
          << cyclic.Output();
    }
    ASSERT_EQ(kill(cyclic.pid(), SIGTERM), 0);
    const int status = cyclic.Wait(milliseconds(10'000)).value_or(-1);
    ASSERT_NE(status, -1) << "still running 10 s after SIGTERM at " << delay_ms << " ms";
    SCOPED_TRACE("SIGTERM " + std::to_string(delay_ms) + " ms after the start, exit " +
                 std::to_string(status));
    ExpectWholeOrNothing(status, dir.path(), cyclic.Output());
    (status == kKilledByTerm ? killed : clean) += 1;
    EXPECT_TRUE(ChildrenOf(getpid()).empty());
  }
  std::printf("SIGTERM during start-up: %d killed before set-up, %d stopped cleanly\n", killed,
              clean);
  EXPECT_GT(clean, 0) << "the later signals find the run set up";
}

// SIGTERM during shutdown: a second SIGTERM at moments around the first one's stop. The run
// ends within bounded time, and what it wrote under a final name is whole.
TEST(ProcessFaults, ASecondSigtermDuringRtloopCyclicsShutdownNeverLeavesAHalfFileUnderItsName) {
  for (const int gap_ms : {0, 1, 5, 20, 100}) {
    const ScratchDir dir("sigterm_stop_" + std::to_string(gap_ms));
    ChildProcess cyclic(
        {TargetFile("rtloop-cyclic"), "-q", "-t2", "-i250", "-D10", "--default-system",
         "--telemetry=127.0.0.1:0", "--json=" + (dir / "j.json").string(),
         "--record=" + (dir / "r.bin").string()},
        dir / "out");
    ASSERT_TRUE(cyclic.started()) << cyclic.error();
    ASSERT_TRUE(telemetry::testing::WaitFor(
        [&] { return cyclic.Output().find("serving on") != std::string::npos; },
        milliseconds(10'000)));
    std::this_thread::sleep_for(milliseconds(300));  // measuring
    ASSERT_EQ(kill(cyclic.pid(), SIGTERM), 0);
    std::this_thread::sleep_for(milliseconds(gap_ms));
    kill(cyclic.pid(), SIGTERM);  // it may have exited already
    const int status = cyclic.Wait(milliseconds(10'000)).value_or(-1);
    ASSERT_NE(status, -1) << "still running 10 s after two SIGTERMs " << gap_ms << " ms apart";
    SCOPED_TRACE("second SIGTERM " + std::to_string(gap_ms) + " ms after the first, exit " +
                 std::to_string(status));
    EXPECT_TRUE(status == 0 || status == kKilledByTerm) << cyclic.Output();
    // Killed while writing the results: only FILE.partial names can be left, never a FILE that
    // is not whole.
    for (const std::string& f : FilesIn(dir.path())) {
      if (f.ends_with(".partial")) continue;
      if (f == "j.json") {
        const std::string json = ReadAll((dir / "j.json").string());
        EXPECT_EQ(json.substr(json.size() >= 2 ? json.size() - 2 : 0), "}\n") << json;
      } else {
        EXPECT_EQ(f, "r.bin");
        Result<telemetry::SampleLogContents> log =
            telemetry::ReadSampleLog((dir / "r.bin").string());
        ASSERT_TRUE(log.ok()) << log.status().ToString();
        EXPECT_TRUE(log->trailer.has_value()) << "r.bin without a trailer";
      }
    }
    if (status == 0) ExpectWholeOrNothing(status, dir.path(), cyclic.Output());
  }
}

// The example, a Runtime program: SIGTERM at any moment of its start ends it promptly, with the
// report (exit 0) or, before RunUntilSignal() took the signals, by the signal itself (exit 143);
// a second SIGTERM during the stop changes nothing.
TEST(ProcessFaults, SigtermDuringTheExamplesStartUpAndShutdownEndsItPromptly) {
  if (!HasTargetFile("rtloop-two-tasks"))
    GTEST_SKIP() << "rtloop-two-tasks is not built (RTLOOP_BUILD_EXAMPLES=OFF)";
  for (const int delay_ms : {0, 5, 20, 50, 100, 300}) {
    for (const bool twice : {false, true}) {
      const ScratchDir dir("two_tasks_" + std::to_string(delay_ms) + (twice ? "_twice" : ""));
      ChildProcess example({TargetFile("rtloop-two-tasks"), "--duration=10",
                            "--telemetry=127.0.0.1:0", "--metrics=127.0.0.1:0"},
                           dir / "out");
      ASSERT_TRUE(example.started()) << example.error();
      std::this_thread::sleep_for(milliseconds(delay_ms));
      ASSERT_EQ(kill(example.pid(), SIGTERM), 0);
      if (twice) {
        std::this_thread::sleep_for(milliseconds(2));
        kill(example.pid(), SIGTERM);
      }
      const int status = example.Wait(milliseconds(10'000)).value_or(-1);
      ASSERT_NE(status, -1) << "still running 10 s after SIGTERM at " << delay_ms << " ms";
      const std::string out = example.Output();
      SCOPED_TRACE("SIGTERM at " + std::to_string(delay_ms) + " ms" + (twice ? ", twice" : "") +
                   ": exit " + std::to_string(status));
      if (status == 0) {
        EXPECT_NE(out.find("SIGTERM: stopping"), std::string::npos) << out;
        EXPECT_NE(out.find("wake-up latency (us)"), std::string::npos) << "the report: " << out;
      } else {
        EXPECT_EQ(status, kKilledByTerm) << out;
        EXPECT_EQ(out.find("wake-up latency (us)"), std::string::npos) << out;
      }
      EXPECT_TRUE(ChildrenOf(getpid()).empty());
    }
  }
}

// ----------------------------------------------------------------------------------------------
// The sample log's disk: full, read-only.

// A tmpfs of `size` mounted on `dir` for one test (unmounted at the end); mounted() false when
// mounting is not permitted here.
class Tmpfs {
 public:
  Tmpfs(const fs::path& dir, const std::string& options) : dir_(dir) {
    fs::create_directories(dir_);
    mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~Tmpfs() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
  std::string error_;
};

// A 64 KiB tmpfs fills a few seconds into the recording: the tasks run all their cycles, the run
// exits 4 naming --record and how many samples FILE.partial holds; those samples are readable;
// no FILE appears; the JSON elsewhere is whole with return_code 4.
TEST(ProcessFaults, ASampleLogOnAFullTmpfsIsExitFourAndTheTasksKeepTheirCycles) {
  const ScratchDir dir("tmpfs_full");
  const Tmpfs disk(dir / "disk", "size=64k");
  if (!disk.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs (needs CAP_SYS_ADMIN): " << disk.error();
  const std::string rec = (dir / "disk/r.bin").string();
  ChildProcess cyclic({TargetFile("rtloop-cyclic"), "-q", "-i200", "-l6000", "--default-system",
                       "--record=" + rec, "--json=" + (dir / "j.json").string()},
                      dir / "out");
  const int status = cyclic.Wait(milliseconds(30'000)).value_or(-1);
  const std::string out = cyclic.Output();
  EXPECT_EQ(status, 4) << out;
  EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(rec)) << "a recording cut short never appears under its name";
  ASSERT_EQ(CyclesOf(out).size(), 1u) << out;
  EXPECT_EQ(CyclesOf(out)[0], 6000u) << "the task ran every cycle after the disk filled";
  Result<telemetry::SampleLogContents> partial = telemetry::ReadSampleLog(rec + ".partial");
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  const std::uint64_t recorded = SamplesIn(*partial);
  EXPECT_GT(recorded, 0u);
  EXPECT_LT(recorded, 6000u);
  EXPECT_NE(out.find("the " + std::to_string(recorded) + " samples recorded before are in"),
            std::string::npos)
      << "the message counts what the file holds (" << recorded << "): " << out;
  const std::string json = ReadAll((dir / "j.json").string());
  EXPECT_NE(json.find("\"return_code\": 4,"), std::string::npos) << json;
}

// The library's side: a Runtime whose sample log fills keeps its tasks running to their cycles;
// Stop() returns the log's error (ExitCode() makes it exit 1), naming the file and the fix.
TEST(ProcessFaults, ARuntimeWhoseSampleLogFillsRunsItsTasksAndStopSaysWhy) {
  constexpr std::uint64_t kCycles = 6000;
  const ScratchDir dir("tmpfs_runtime");
  const Tmpfs disk(dir / "disk", "size=64k");
  if (!disk.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs (needs CAP_SYS_ADMIN): " << disk.error();
  RuntimeConfig rc = TestRuntimeConfig("full_disk");
  rc.telemetry.serve_grpc = false;
  rc.telemetry.record_path = (dir / "disk/r.bin").string();
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  telemetry::testing::IdleTask task;
  ASSERT_TRUE((*rt)->AddTask(task, OtherTask("task", microseconds(250), kCycles)).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  const Status stop = (*rt)->Stop();
  EXPECT_FALSE(stop.ok());
  EXPECT_NE(stop.message().find("No space left on device"), std::string::npos) << stop.ToString();
  EXPECT_NE(stop.message().find("r.bin"), std::string::npos) << stop.ToString();
  EXPECT_EQ((*rt)->Reports()[0].stats.cycles, kCycles);
}

// A read-only directory (a tmpfs mounted ro: root writes through permission bits) is refused
// before anything is measured: exit 2, the option and the directory named, no file.
TEST(ProcessFaults, ASampleLogInAReadOnlyDirectoryIsRefusedBeforeMeasuring) {
  const ScratchDir dir("tmpfs_ro");
  const Tmpfs disk(dir / "ro", "size=1m,mode=0755");
  if (!disk.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs (needs CAP_SYS_ADMIN): " << disk.error();
  ASSERT_EQ(mount("tmpfs", (dir / "ro").c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m"), 0)
      << std::strerror(errno);
  const auto start = std::chrono::steady_clock::now();
  ChildProcess cyclic(
      {TargetFile("rtloop-cyclic"), "-q", "-i1000", "-D60", "--default-system",
       "--record=" + (dir / "ro/r.bin").string(), "--json=" + (dir / "j.json").string()},
      dir / "out");
  const int status = cyclic.Wait(milliseconds(75'000)).value_or(-1);
  const std::string out = cyclic.Output();
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--record"), std::string::npos) << out;
  EXPECT_NE(out.find("not writable"), std::string::npos) << out;
  // Far below the 60 s a measurement would take, far above a refusal on a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30))
      << "refused before measuring the 60 s";
  EXPECT_TRUE(FilesIn(dir.path()) == std::vector<std::string>{"ro"}) << "no output file";
  // The library refuses it at Create(), before anything starts (Runtime::Check()).
  RuntimeConfig rc = TestRuntimeConfig("read_only");
  rc.telemetry.serve_grpc = false;
  rc.telemetry.record_path = (dir / "ro/r.bin").string();
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("telemetry.record_path"), std::string::npos)
      << rt.status().ToString();
  EXPECT_NE(rt.status().message().find("r.bin"), std::string::npos) << rt.status().ToString();
  EXPECT_TRUE(FilesIn(dir.path()) == std::vector<std::string>{"ro"}) << "no output file";
}

// ----------------------------------------------------------------------------------------------
// The server ports already taken: rtloop-cyclic and the example exit 1 before measuring, naming
// the port and the fix, and create no output file.

TEST(ProcessFaults, ServerPortsAlreadyTakenStopTheToolsBeforeMeasuringWithTheFix) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(busy.port());
  std::vector<std::vector<std::string>> runs = {
      {TargetFile("rtloop-cyclic"), "-q", "-D5", "--telemetry=" + taken},
      {TargetFile("rtloop-cyclic"), "-q", "-D5", "--telemetry=127.0.0.1:0", "--metrics=" + taken}};
  if (HasTargetFile("rtloop-two-tasks")) {
    runs.push_back({TargetFile("rtloop-two-tasks"), "--duration=5", "--telemetry=" + taken});
    runs.push_back({TargetFile("rtloop-two-tasks"), "--duration=5", "--telemetry=127.0.0.1:0",
                    "--metrics=" + taken});
  }
  for (std::vector<std::string> argv : runs) {
    const ScratchDir dir("port_taken");
    if (argv[0] == TargetFile("rtloop-cyclic"))
      argv.push_back("--json=" + (dir / "j.json").string());
    ChildProcess tool(argv, dir / "out");
    const int status = tool.Wait(milliseconds(10'000)).value_or(-1);
    const std::string out = tool.Output();
    EXPECT_EQ(status, 1) << argv.back() << ": " << out;
    EXPECT_NE(out.find(taken + ": Address already in use"), std::string::npos) << out;
    EXPECT_NE(out.find("pick another port"), std::string::npos) << out;
    EXPECT_TRUE(FilesIn(dir.path()).empty()) << argv.back();
  }
}

}  // namespace
}  // namespace rtloop::faults
