// End-to-end tests of the rtloop-cyclic binary, run as a subprocess: exit codes, which stream
// carries what, output files, signals. Every run is short (-l/-D of well under a second). No test
// asserts a latency value. Outputs are checked whole, line by line, against goldens with
// placeholders for the measured numbers (tests/cyclic/golden/e2e/, its README says how to
// regenerate one); a substring find is left only where the output's order or count is the run's
// (said at each).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cyclic_cli_fixture.h"
#include "port_holder.h"
#include "rtloop/telemetry/sample_log_file.h"

namespace {

using rtloop::cyclic::testing::CyclicCliTest;
using rtloop::cyclic::testing::Exists;
using rtloop::cyclic::testing::Outcome;
using rtloop::cyclic::testing::ReadFile;
using rtloop::cyclic::testing::ReplaceAll;
using rtloop::testing::MatchLine;
using rtloop::testing::SplitLines;

// The C: figure of each T: line of `text` (a golden has matched the lines).
std::vector<unsigned long> Cycles(const std::string& text) {
  std::vector<unsigned long> cycles;
  for (const std::string& line : SplitLines(text)) {
    unsigned long c = 0;
    if (std::sscanf(line.c_str(), "T:%*d (%*d) P:%*d I:%*d C:%lu", &c) == 1) cycles.push_back(c);
  }
  return cycles;
}

// `text` cut at every `separator` (which is dropped); the pieces, the first too when empty.
std::vector<std::string> Split(const std::string& text, const std::string& separator) {
  std::vector<std::string> pieces;
  std::size_t from = 0;
  for (std::size_t at = text.find(separator); at != std::string::npos;
       at = text.find(separator, from)) {
    pieces.push_back(text.substr(from, at - from));
    from = at + separator.size();
  }
  pieces.push_back(text.substr(from));
  return pieces;
}

TEST_F(CyclicCliTest, BadInputExitsTwoWithOneLineMessageAndNoOutputFile) {
  const std::string json = dir_ + "/out.json";
  // A bad command line, with --json (the file must not appear) and -l5 (in case a bad value were
  // accepted: still short).
  auto run_bad = [&](const std::vector<std::string>& args) {
    std::vector<std::string> full = args;
    full.push_back("--json=" + json);
    full.push_back("-l5");
    return Run(full);
  };
  // The list (and a few more). bad-input.txt has each case's whole stderr (the message
  // naming the option and the value, then the --help hint) and its exit status.
  const std::vector<std::vector<std::string>> bad = {
      {"-i", "0"},           {"-p", "100"},      {"-p", "-1"},      {"-t", "0"},
      {"-t", "abc"},         {"-h", "0"},        {"-h", "2000000"}, {"-D", "5x"},
      {"-l", "-3"},          {"--policy=bogus"}, {"-o", "10"},      {"-A", "100", "--secaligned"},
      {"-a", "100000"},      {"--bogus"},        {"-q", "stray"},   {"--hdr-layout=3:30"},
      {"--hdr-layout=7:40"}, {"--hdr-layout=7"},
  };
  std::string transcript;
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
    const Outcome r = run_bad(args);
    transcript += "$ " + joined + "\n" + r.err + "exit " + std::to_string(r.exit_code) + "\n";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << joined << ": nothing on stdout, got: " << r.out;
    EXPECT_FALSE(Exists(json)) << joined;
  }
  EXPECT_TRUE(Golden("bad-input.txt", transcript));
  if (sysconf(_SC_NPROCESSORS_CONF) <= 64) {  // a CPU this machine does not have
    const Outcome r = run_bad({"-a", "64"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_TRUE(Golden("bad-input-cpu64.txt", r.err));
    EXPECT_FALSE(Exists(json));
  }
}

TEST_F(CyclicCliTest, JsonToMissingDirectoryExitsTwo) {
  const Outcome r = Run({"-l5", "--json=" + dir_ + "/missing/out.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(Golden("json-missing-dir.stderr.txt", r.err));
  EXPECT_FALSE(Exists(dir_ + "/missing"));
}

TEST_F(CyclicCliTest, QuietPrintsOnlyTheFinalThreadLinesOnStdout) {
  const Outcome r = Run({"-q", "-t2", "-i500", "-l20", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-t2.stdout.txt", r.out)) << "I:1000: distance 500";
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
  // The first thread to reach -l ends the run (thread 0 may have skipped a late release): which
  // one is the run's, so the golden has C:%7int for both, and one of them is at 20.
  const std::vector<unsigned long> cycles = Cycles(r.out);
  ASSERT_EQ(cycles.size(), 2u) << r.out;
  EXPECT_TRUE(cycles[0] == 20 || cycles[1] == 20) << r.out;
}

TEST_F(CyclicCliTest, QuietWithHistogramPrintsOnlyTheHistogramBlock) {
  const Outcome r = Run({"-q", "-i500", "-l20", "-h", "10", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // -h suppresses the -q T: lines: the histogram block is the whole of stdout.
  EXPECT_TRUE(Golden("quiet-h10.stdout.txt", r.out));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
}

TEST_F(CyclicCliTest, PercentilesGoToStderrUnderQuiet) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--percentiles"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-i500-l20.stdout.txt", r.out));
  EXPECT_TRUE(Golden("percentiles.stderr.txt", r.err));
}

// Issue 18 §4: a run with a small histogram layout measures and reports its percentiles.
TEST_F(CyclicCliTest, ASmallHdrLayoutRunsAndReportsPercentiles) {
  const Outcome r =
      Run({"-q", "-i500", "-l20", "--default-system", "--percentiles", "--hdr-layout=7:30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-i500-l20.stdout.txt", r.out));
  EXPECT_TRUE(Golden("percentiles.stderr.txt", r.err));
}

// The integer after the first `key` that follows `after` in `text`; -1 when absent.
long long JsonNumberAfter(const std::string& text, const std::string& after,
                          const std::string& key) {
  const std::size_t from = text.find(after);
  if (from == std::string::npos) return -1;
  const std::size_t at = text.find(key, from);
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size());
}

TEST_F(CyclicCliTest, JsonFileIsWrittenWithCyclictestKeysAndRtloopKey) {
  const std::string json = dir_ + "/ct.json";
  const Outcome r = Run({"-q", "-i500", "-l20", "-h", "50", "--default-system", "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Exists(json));
  // cyclictest prints an empty "histogram" on one line: written as the non-empty one's first and
  // last line, so that one golden ("%lines*" for the buckets a run fills) takes both.
  const std::string text =
      ReplaceAll(ReadFile(json), "\"histogram\": {      },", "\"histogram\": {\n      },");
  EXPECT_TRUE(Golden("json-h50.json.txt", text));
  // The buckets (each under 50, in order) and the overflows account for every cycle.
  long long counted = 0;
  int last_bucket = -1;
  for (const std::string& line : SplitLines(text)) {
    int bucket = -1;
    long long count = 0;
    if (std::sscanf(line.c_str(), "        \"%d\": %lld", &bucket, &count) != 2) continue;
    EXPECT_GT(bucket, last_bucket) << line;
    EXPECT_LT(bucket, 50) << line;
    last_bucket = bucket;
    counted += count;
  }
  EXPECT_EQ(counted + JsonNumberAfter(text, "\"rtloop\": {", "\"histogram_overflows\": "), 20)
      << text;
}

// One owner per statistic, end to end: cyclictest's max (its own sample value, kept by
// CyclicThreadStats) and the executor's exact max (JSON rtloop.latency_ns.max) agree: equal under
// -N, truncated to us otherwise (rounded up when the sample crossed a second boundary); the
// cycle counts agree, and --warmup is the executor's.
TEST_F(CyclicCliTest, CyclictestsFiguresAgreeWithTheExecutorsWhereTheyCoincide) {
  const std::string json = dir_ + "/owners.json";
  for (const bool nsecs : {true, false}) {
    std::vector<std::string> args = {
        "-q", "-i500", "-l200", "--warmup=20", "--default-system", "--json=" + json};
    if (nsecs) args.push_back("-N");
    const Outcome r = Run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = ReadFile(json);
    const long long cyclictest_max = JsonNumberAfter(text, "\"thread\": {", "\"max\": ");
    const long long executor_max_ns = JsonNumberAfter(text, "\"latency_ns\": {", "\"max\": ");
    ASSERT_GE(cyclictest_max, 0) << text;
    ASSERT_GE(executor_max_ns, 0) << text;
    if (nsecs) {
      EXPECT_EQ(cyclictest_max, executor_max_ns) << text;
    } else {
      EXPECT_GE(cyclictest_max, executor_max_ns / 1000) << text;
      EXPECT_LE(cyclictest_max, executor_max_ns / 1000 + 1) << text;
    }
    EXPECT_EQ(JsonNumberAfter(text, "\"thread\": {", "\"cycles\": "), 200) << text;
    EXPECT_EQ(JsonNumberAfter(text, "\"rtloop\": {", "\"cycles\": "), 200) << text;
    EXPECT_EQ(JsonNumberAfter(text, "\"rtloop\": {", "\"warmup_cycles\": "), 20) << text;
  }
}

// cyclictest 2.4 (Debian's, built with libnuma) reports a pinned thread's CPU and its NUMA node.
TEST_F(CyclicCliTest, JsonNamesThePinnedCpuAndItsNumaNode) {
  const std::string json = dir_ + "/pinned.json";
  const Outcome pinned = Run({"-q", "-a", "0", "-l5", "--default-system", "--json=" + json});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  // The golden has "node": %int (a machine without NUMA nodes in sysfs says -1); node 0 where
  // sysfs has it.
  std::string text = ReadFile(json);
  EXPECT_TRUE(Golden("json-a0.json.txt", text));
  if (Exists("/sys/devices/system/cpu/cpu0/node0")) {
    EXPECT_EQ(JsonNumberAfter(text, "\"thread\": {", "\"node\": "), 0) << text;
  }
  const Outcome unpinned = Run({"-q", "-l5", "--default-system", "--json=" + json});
  ASSERT_EQ(unpinned.exit_code, 0) << unpinned.err;
  EXPECT_TRUE(Golden("json-l5.json.txt", ReadFile(json)));
}

TEST_F(CyclicCliTest, SigtermStopsCleanlyWithTheFullFinalOutput) {
  const pid_t pid = Spawn({"-q", "-i1000", "--default-system", "-h", "20"});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it measure a little
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("sigterm-h20.stdout.txt", r.out));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
}

TEST_F(CyclicCliTest, SigusrOnePrintsTheStatusBlockOnStderr) {
  const pid_t pid = Spawn({"-q", "-i1000", "-l600", "--default-system"});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  ASSERT_EQ(kill(pid, SIGUSR1), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("sigusr1.stderr.txt", r.err));
  EXPECT_TRUE(Golden("quiet-i1000-l600.stdout.txt", r.out)) << "the status is not on stdout";
}

TEST_F(CyclicCliTest, FailAboveExitsThreeNamingThreadAndBound) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--fail-above=0"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Golden("fail-above-0.stderr.txt", r.err));
  EXPECT_TRUE(Golden("quiet-i500-l20.stdout.txt", r.out)) << "stdout keeps cyclictest's shape";
}

TEST_F(CyclicCliTest, GenerousBoundsExitZero) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--fail-above=10000000",
                         "--fail-percentile=99:10000000", "--fail-missed=1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CyclicCliTest, DashNIsANoOpWithANote) {
  const Outcome r = Run({"-mnq", "-i500", "-l10", "--default-system"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("dash-n.stderr.txt", r.err));
  EXPECT_TRUE(Golden("quiet-i500-l10.stdout.txt", r.out));
}

TEST_F(CyclicCliTest, HelpExitsZeroOnStdout) {
  const Outcome r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Golden("help.stdout.txt", r.out));
  EXPECT_TRUE(r.err.empty());
}

TEST_F(CyclicCliTest, LoopLimitEndsTheRunWhenTheFirstThreadIsDone) {
  const Outcome r = Run({"-q", "-t2", "-i1000", "-d1000", "-l30", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-t2-d1000.stdout.txt", r.out));
  // Thread 0 (1 ms) normally gets there first; a VM stall that makes it skip releases can let
  // thread 1 (2 ms) win. Either way exactly one thread reached -l and the other stopped short:
  // which one is the run's, so the golden has C:%7int for both.
  const std::vector<unsigned long> cycles = Cycles(r.out);
  ASSERT_EQ(cycles.size(), 2u) << r.out;
  const bool first_done = cycles[0] == 30;
  const bool second_done = cycles[1] == 30;
  EXPECT_NE(first_done, second_done) << "exactly one thread at C: 30\n" << r.out;
}

TEST_F(CyclicCliTest, LiveScreenRedrawsWithTheCursorUpEscape) {
  const Outcome r = Run({"-t2", "-i1000", "-l60", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // How many screens a run draws is the run's: each screen, after the cursor-up escape (n_threads
  // + 2 lines up) that starts every one but the first, is matched whole.
  const std::vector<std::string> screens = Split(r.out, "\033[4A");
  ASSERT_GE(screens.size(), 1u) << r.out;
  for (const std::string& screen : screens) EXPECT_TRUE(Golden("live-screen-t2.txt", screen));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
}

TEST_F(CyclicCliTest, VerbosePrintsInfoLinesAndEverySample) {
  const Outcome r = Run({"-v", "-i1000", "-l5", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "Thread 0 Interval: 1500": cyclictest's off-by-one, kept.
  EXPECT_TRUE(Golden("verbose-l5.stdout.txt", r.out));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
}

TEST_F(CyclicCliTest, NsecsPrintsTheThreadLineInNanoseconds) {
  const Outcome r = Run({"-q", "-N", "-i500", "-l20", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // -N widens Act and Avg to 8 columns (cyclictest's format for ns).
  EXPECT_TRUE(Golden("quiet-N.stdout.txt", r.out));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
}

// -D ends the run by time (each thread's from its own start): one second, with a suffix.
TEST_F(CyclicCliTest, DurationEndsTheRunWithTheFinalThreadLine) {
  const Outcome r = Run({"-q", "-i10000", "-D1s", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-D1s.stdout.txt", r.out));
  EXPECT_TRUE(Golden("default-system.stderr.txt", r.err));
  const std::vector<unsigned long> cycles = Cycles(r.out);
  ASSERT_EQ(cycles.size(), 1u) << r.out;
  EXPECT_GE(cycles[0], 1u) << "it measured: " << r.out;
  EXPECT_LE(cycles[0], 101u) << "no more releases than a second holds at 10 ms: " << r.out;
}

// -H with two threads: a row's tab-separated columns per thread plus their sum, and the summary
// lines with the all-threads column, in the --histfile (stdout stays empty under -q).
TEST_F(CyclicCliTest, HistofallOfTwoThreadsAddsTheSumColumnInTheHistfile) {
  const std::string hist = dir_ + "/hist.txt";
  const Outcome r =
      Run({"-q", "-t2", "-i500", "-l20", "-H", "5", "--default-system", "--histfile=" + hist});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(Golden("histofall-t2-H5.txt", ReadFile(hist)));
}

TEST_F(CyclicCliTest, HistfileTakesTheHistogramBlock) {
  const std::string hist = dir_ + "/hist.txt";
  const Outcome r =
      Run({"-q", "-i500", "-l20", "-h", "5", "--default-system", "--histfile=" + hist});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(Golden("histfile-h5.txt", ReadFile(hist)));
}

TEST_F(CyclicCliTest, BreaktraceEndsTheRunAndPrintsTheBreakLines) {
  // Under -N every sample exceeds 1 ns: the first one breaks.
  const Outcome b = Run({"-q", "-i1000", "-D5", "-N", "-b", "1", "--default-system"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // C: 1: it stops with the breaking sample.
  EXPECT_TRUE(Golden("breaktrace-N.stdout.txt", b.out));
  int tid = 0, thread_ids = 0, break_tid = 0;
  long long act = 0, break_value = 0;
  const std::vector<std::string> lines = SplitLines(b.out);
  ASSERT_EQ(lines.size(), 4u) << b.out;
  ASSERT_EQ(
      std::sscanf(lines[0].c_str(), "T: 0 (%d) P: 0 I:1000 C: 1 Min: %*d Act: %lld", &tid, &act), 2)
      << b.out;
  ASSERT_EQ(std::sscanf(lines[1].c_str(), "# Thread Ids: %d", &thread_ids), 1) << b.out;
  ASSERT_EQ(std::sscanf(lines[2].c_str(), "# Break thread: %d", &break_tid), 1) << b.out;
  ASSERT_EQ(std::sscanf(lines[3].c_str(), "# Break value: %lld", &break_value), 1) << b.out;
  EXPECT_EQ(thread_ids, tid) << b.out;
  EXPECT_EQ(break_tid, tid) << b.out;
  EXPECT_EQ(break_value, act) << b.out;
}

// cyclictest's figures come from the hub's drained samples (cyclic_thread_stats.h): the break
// trips at the drain after the breaking sample, and still the breaking thread's figures end at it.
TEST_F(CyclicCliTest, BreaktraceOfTwoThreadsEndsTheBreakingThreadsFiguresAtItsSample) {
  const Outcome b = Run({"-q", "-t2", "-d0", "-i1000", "-D5", "-N", "-b", "1", "--default-system"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(Golden("breaktrace-N-t2.stdout.txt", b.out));
  const std::vector<std::string> lines = SplitLines(b.out);
  ASSERT_EQ(lines.size(), 5u) << b.out;
  struct T {
    int tid = 0;
    unsigned long cycles = 0;
    long act = 0, max = 0;
  } t[2];
  for (int i = 0; i < 2; ++i) {
    int index = -1, prio = 0;
    long interval = 0, min = 0, avg = 0;
    ASSERT_EQ(
        std::sscanf(lines[static_cast<std::size_t>(i)].c_str(),
                    "T:%d (%d) P:%d I:%ld C:%lu Min:%ld Act:%ld Avg:%ld Max:%ld", &index, &t[i].tid,
                    &prio, &interval, &t[i].cycles, &min, &t[i].act, &avg, &t[i].max),
        9)
        << lines[static_cast<std::size_t>(i)];
  }
  int break_tid = 0;
  long break_value = 0;
  ASSERT_EQ(std::sscanf(lines[3].c_str(), "# Break thread: %d", &break_tid), 1) << b.out;
  ASSERT_EQ(std::sscanf(lines[4].c_str(), "# Break value: %ld", &break_value), 1) << b.out;
  const int k = t[0].tid == break_tid ? 0 : 1;
  ASSERT_EQ(t[k].tid, break_tid) << b.out;
  EXPECT_EQ(t[k].cycles, 1u) << "the breaking thread stops at its first sample: " << b.out;
  EXPECT_EQ(t[k].act, break_value) << b.out;
  EXPECT_EQ(t[k].max, break_value) << b.out;
  // The other thread keeps its samples that woke before the breaking one (its releases share the
  // grid: at most 1 + break value / interval of them) and may keep one drain's worth after it
  // (bench/cyclic/README.md, -b: -b's poll drains every 10 ms, 10 cycles at -i1000). Under
  // qemu-user beside another test the break's sample woke 1.68 ms late, after the other's second.
  const unsigned long bound = 2 + static_cast<unsigned long>(break_value / 1'000'000) + 10;
  EXPECT_LE(t[1 - k].cycles, bound) << "the other thread stops at the break, not at -D5: " << b.out;
}

TEST_F(CyclicCliTest, TelemetryAndRecordRunAlongTheMeasurement) {
  const std::string rec = dir_ + "/run.rtrec";
  const Outcome r = Run(
      {"-q", "-i1000", "-l50", "--default-system", "--telemetry=127.0.0.1:0", "--record=" + rec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-i1000-l50.stdout.txt", r.out)) << "stdout unchanged";
  EXPECT_TRUE(Golden("telemetry.stderr.txt", r.err));
  rtloop::Result<rtloop::telemetry::SampleLogContents> file = rtloop::telemetry::ReadSampleLog(rec);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_TRUE(file->error.ok()) << file->error.message();
  std::size_t samples = 0;
  for (const auto& batch : file->batches)
    samples += static_cast<std::size_t>(batch.latency_ns_size());
  EXPECT_EQ(samples, 50u) << "every sample of the run is in the log";
}

TEST_F(CyclicCliTest, MetricsOnAPortInUseStopsBeforeMeasuringWithTheReason) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  const std::string port = std::to_string(busy.port());
  const Outcome r =
      Run({"-q", "-i1000", "-l50", "--default-system", "--metrics=127.0.0.1:" + port});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(Golden("metrics-port-in-use.stderr.txt", ReplaceAll(r.err, ":" + port, ":PORT")));
  EXPECT_TRUE(r.out.empty()) << "nothing measured: " << r.out;
}

TEST_F(CyclicCliTest, MetricsServesTheEndpointWhileMeasuring) {
  const Outcome r = Run({"-q", "-i1000", "-l50", "--default-system", "--metrics=127.0.0.1:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("quiet-i1000-l50.stdout.txt", r.out)) << "stdout unchanged";
  EXPECT_TRUE(Golden("metrics.stderr.txt", r.err));
}

// ":PORT" is loopback for both servers (a bad address of either is a usage error:
// CyclicOutputsTest.BadTelemetryAddressIsAUsageErrorBeforeAnything).
TEST_F(CyclicCliTest, PortOnlyAddressesServeOnLoopback) {
  const Outcome r =
      Run({"-q", "-i1000", "-l50", "--default-system", "--telemetry=:0", "--metrics=:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("telemetry-and-metrics.stderr.txt", r.err));
}

TEST_F(CyclicCliTest, RefreshOnMaxEndsWithTheCursorDownEscape) {
  const Outcome r = Run({"-M", "-i1000", "-l60", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // As the live screen: the number of screens is the run's. Every screen is matched whole; the
  // cursor-down escape ends the output, after the last screen or after its cursor-up (whether
  // the run ended before or after it redrew once more is the run's).
  std::vector<std::string> screens = Split(r.out, "\033[3A");
  std::string& last = screens.back();
  const std::string down = "\033[3B";
  ASSERT_TRUE(last.size() >= down.size() &&
              last.compare(last.size() - down.size(), down.size(), down) == 0)
      << r.out;
  last.resize(last.size() - down.size());
  if (last.empty()) screens.pop_back();
  ASSERT_GE(screens.size(), 1u) << r.out;
  for (const std::string& screen : screens) EXPECT_TRUE(Golden("refresh-on-max.txt", screen));
}

TEST_F(CyclicCliTest, FifoServesThreadLinesToAReader) {
  const std::string fifo = dir_ + "/ctfifo";
  const pid_t pid = Spawn({"-q", "-i1000", "-l1500", "--default-system", "-F", fifo});
  // The pipe appears once the run started; a non-blocking reader then gets the T: lines within
  // the writer's 500 ms poll.
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  int fd = -1;
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < deadline && got.find('\n') == std::string::npos) {
    if (fd < 0) fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd >= 0) {
      char buf[512];
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (fd >= 0) close(fd);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(got.find('\n'), std::string::npos) << "nothing read from " << fifo;
  EXPECT_TRUE(MatchLine("T: 0 (%5tid) P: 0 I:1000 C:%7int Min:%7int Act:%5int Avg:%5int Max:%8int",
                        got.substr(0, got.find('\n'))))
      << got;
  EXPECT_FALSE(Exists(fifo)) << "the pipe is removed at exit";
}

void DropToNobody() {
  rlimit none{0, 0};
  setrlimit(RLIMIT_RTPRIO, &none);
  if (setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
}

TEST_F(CyclicCliTest, NoPrivilegeForFifoGivesCyclictestsMessageAndTheFix) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user (nobody)";
  const Outcome r = Wait(Spawn({"-p", "99", "-l5", "-q"}, &DropToNobody));
  if (r.exit_code == 126 || r.exit_code == 127) {
    GTEST_SKIP() << "cannot run the binary as nobody here (exit " << r.exit_code << ")";
  }
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Debian's cyclictest's two lines, then the fix (CAP_SYS_NICE, RLIMIT_RTPRIO).
  EXPECT_TRUE(Golden("no-privilege.stderr.txt", r.err));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
