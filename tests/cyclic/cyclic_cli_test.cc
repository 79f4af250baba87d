// End-to-end tests of the rtloop-cyclic binary, run as a subprocess: exit codes, which stream
// carries what, output files, signals. Every run is short (-l/-D of well under a second). No test
// asserts a latency value.
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
using rtloop::cyclic::testing::IsThreadLine;
using rtloop::cyclic::testing::Lines;
using rtloop::cyclic::testing::Outcome;
using rtloop::cyclic::testing::ReadFile;

// -v's "%8d:%8lu:%8ld" for thread 0.
bool IsVerboseLine(const std::string& line, unsigned long cycle) {
  char expected[32];
  std::snprintf(expected, sizeof(expected), "%8d:%8lu:", 0, cycle);
  return line.rfind(expected, 0) == 0 && line.size() == 26;
}

TEST_F(CyclicCliTest, BadInputExitsTwoWithOneLineMessageAndNoOutputFile) {
  const std::string json = dir_ + "/out.json";
  // The list (and a few more), each with what its message must name.
  struct BadCase {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<BadCase> bad = {
      {{"-i", "0"}, "'0' for -i/--interval"},
      {{"-p", "100"}, "'100' for -p/--priority"},
      {{"-p", "-1"}, "'-1' for -p/--priority"},
      {{"-t", "0"}, "'0' for -t/--threads"},
      {{"-t", "abc"}, "'abc' for -t/--threads"},
      {{"-h", "0"}, "'0' for -h/--histogram"},
      {{"-h", "2000000"}, "'2000000' for -h/--histogram"},
      {{"-D", "5x"}, "'5x' for -D/--duration"},
      {{"-l", "-3"}, "'-3' for -l/--loops"},
      {{"--policy=bogus"}, "'bogus' for --policy"},
      {{"-o", "10"}, "-o/--oscope needs -v/--verbose"},
      {{"-A", "100", "--secaligned"}, "cannot be combined"},
      {{"-a", "100000"}, "CPU 100000 does not exist"},
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-q", "stray"}, "unexpected argument 'stray'"},
      {{"--hdr-layout=3:30"}, "'3:30' for --hdr-layout: precision_bits is 3 — use 4..10"},
      {{"--hdr-layout=7:40"}, "'7:40' for --hdr-layout: range_bits is 40 — use 20..37"},
      {{"--hdr-layout=7"}, "'7' for --hdr-layout: expected PRECISION_BITS:RANGE_BITS"},
  };
  if (sysconf(_SC_NPROCESSORS_CONF) <= 64) bad.push_back({{"-a", "64"}, "CPU 64 does not exist"});
  for (const auto& [args, message] : bad) {
    std::vector<std::string> full = args;
    full.push_back("--json=" + json);
    full.push_back("-l5");  // in case a bad value were accepted: still short
    const Outcome r = Run(full);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << joined << ": nothing on stdout, got: " << r.out;
    const std::vector<std::string> lines = Lines(r.err);
    ASSERT_EQ(lines.size(), 2u) << joined << "\n" << r.err;
    EXPECT_EQ(lines[0].rfind("rtloop-cyclic: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(message), std::string::npos) << joined << ": " << lines[0];
    EXPECT_NE(lines[1].find("--help"), std::string::npos) << lines[1];
    EXPECT_FALSE(Exists(json)) << joined;
  }
}

TEST_F(CyclicCliTest, JsonToMissingDirectoryExitsTwo) {
  const Outcome r = Run({"-l5", "--json=" + dir_ + "/missing/out.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(dir_ + "/missing"));
}

TEST_F(CyclicCliTest, QuietPrintsOnlyTheFinalThreadLinesOnStdout) {
  const Outcome r = Run({"-q", "-t2", "-i500", "-l20", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const std::string& l : lines) EXPECT_TRUE(IsThreadLine(l)) << l;
  EXPECT_NE(lines[0].find(" I:500 C: "), std::string::npos) << lines[0];
  // The first thread to reach -l ends the run (thread 0 may have skipped a late release).
  EXPECT_TRUE(lines[0].find("C:     20") != std::string::npos ||
              lines[1].find("C:     20") != std::string::npos)
      << r.out;
  EXPECT_NE(lines[1].find("I:1000"), std::string::npos) << "distance 500" << lines[1];
  EXPECT_NE(r.err.find("WARN: not setting cpu_dma_latency from cyclictest"), std::string::npos);
}

TEST_F(CyclicCliTest, QuietWithHistogramPrintsOnlyTheHistogramBlock) {
  const Outcome r = Run({"-q", "-i500", "-l20", "-h", "10", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 12u) << r.out;
  EXPECT_EQ(lines[0], "# Histogram");
  EXPECT_EQ(lines[1].rfind("000000 ", 0), 0u);
  EXPECT_EQ(r.out.find("T:"), std::string::npos) << "-h suppresses the -q T: lines";
  EXPECT_NE(r.out.find("# Max Latencies: "), std::string::npos);
}

TEST_F(CyclicCliTest, PercentilesGoToStderrUnderQuiet) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--percentiles"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.err.find("99.9"), std::string::npos) << r.err;
}

// Issue 18 §4: a run with a small histogram layout measures and reports its percentiles.
TEST_F(CyclicCliTest, ASmallHdrLayoutRunsAndReportsPercentiles) {
  const Outcome r =
      Run({"-q", "-i500", "-l20", "--default-system", "--percentiles", "--hdr-layout=7:30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.err.find("99.9"), std::string::npos) << r.err;
}

TEST_F(CyclicCliTest, JsonFileIsWrittenWithCyclictestKeysAndRtloopKey) {
  const std::string json = dir_ + "/ct.json";
  const Outcome r = Run({"-q", "-i500", "-l20", "-h", "50", "--default-system", "--json=" + json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Exists(json));
  const std::string text = ReadFile(json);
  EXPECT_NE(text.find("\"cmdline:\""), std::string::npos);
  EXPECT_NE(text.find("\"rt_test_version:\": \"2.40\""), std::string::npos);
  EXPECT_NE(text.find("\"num_threads\": 1"), std::string::npos);
  EXPECT_NE(text.find("\"cycles\": 20"), std::string::npos) << text;
  EXPECT_NE(text.find("\"rtloop\""), std::string::npos);
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
  std::string text = ReadFile(json);
  EXPECT_NE(text.find("\"cpu\": 0,\n"), std::string::npos) << text;
  if (Exists("/sys/devices/system/cpu/cpu0/node0")) {
    EXPECT_NE(text.find("\"node\": 0\n"), std::string::npos) << text;
  }
  const Outcome unpinned = Run({"-q", "-l5", "--default-system", "--json=" + json});
  ASSERT_EQ(unpinned.exit_code, 0) << unpinned.err;
  text = ReadFile(json);
  EXPECT_NE(text.find("\"cpu\": -1,\n      \"node\": -1\n"), std::string::npos) << text;
}

TEST_F(CyclicCliTest, SigtermStopsCleanlyWithTheFullFinalOutput) {
  const pid_t pid = Spawn({"-q", "-i1000", "--default-system", "-h", "20"});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it measure a little
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("# Histogram\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("# Histogram Overflow at cycle number:"), std::string::npos) << r.out;
}

TEST_F(CyclicCliTest, SigusrOnePrintsTheStatusBlockOnStderr) {
  const pid_t pid = Spawn({"-q", "-i1000", "-l600", "--default-system"});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  ASSERT_EQ(kill(pid, SIGUSR1), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("# cyclictest current status:\nT: 0"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("current status"), std::string::npos);
}

TEST_F(CyclicCliTest, FailAboveExitsThreeNamingThreadAndBound) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--fail-above=0"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("thread 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--fail-above=0"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << "stdout keeps cyclictest's shape: " << r.out;
}

TEST_F(CyclicCliTest, GenerousBoundsExitZero) {
  const Outcome r = Run({"-q", "-i500", "-l20", "--default-system", "--fail-above=10000000",
                         "--fail-percentile=99:10000000", "--fail-missed=1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CyclicCliTest, DashNIsANoOpWithANote) {
  const Outcome r = Run({"-mnq", "-i500", "-l10", "--default-system"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("-n ignored"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
}

TEST_F(CyclicCliTest, HelpExitsZeroOnStdout) {
  const Outcome r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--interval"), std::string::npos);
  EXPECT_TRUE(r.err.empty());
}

TEST_F(CyclicCliTest, LoopLimitEndsTheRunWhenTheFirstThreadIsDone) {
  const Outcome r = Run({"-q", "-t2", "-i1000", "-d1000", "-l30", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  // Thread 0 (1 ms) normally gets there first; a VM stall that makes it skip releases can let
  // thread 1 (2 ms) win. Either way exactly one thread reached -l and the other stopped short.
  const bool first_done = lines[0].find("C:     30 ") != std::string::npos;
  const bool second_done = lines[1].find("C:     30 ") != std::string::npos;
  EXPECT_NE(first_done, second_done) << "exactly one thread at C: 30\n" << r.out;
}

TEST_F(CyclicCliTest, LiveScreenRedrawsWithTheCursorUpEscape) {
  const Outcome r = Run({"-t2", "-i1000", "-l60", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("policy: other/other: loadavg: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("          \n\nT: 0 ("), std::string::npos);
  EXPECT_NE(r.out.find("\033[4Apolicy: "), std::string::npos) << "n_threads + 2 lines up";
  EXPECT_NE(r.out.back(), 'A') << "the last screen is not followed by the escape";
}

TEST_F(CyclicCliTest, VerbosePrintsInfoLinesAndEverySample) {
  const Outcome r = Run({"-v", "-i1000", "-l5", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 8u) << r.out;
  EXPECT_EQ(lines[0].rfind("Max CPUs = ", 0), 0u);
  EXPECT_EQ(lines[1].rfind("Online CPUs = ", 0), 0u);
  EXPECT_EQ(lines[2], "Thread 0 Interval: 1500") << "cyclictest's off-by-one, kept";
  EXPECT_TRUE(IsVerboseLine(lines[3], 0)) << lines[3];
  EXPECT_TRUE(IsVerboseLine(lines[7], 4)) << lines[7];
}

TEST_F(CyclicCliTest, HistfileTakesTheHistogramBlock) {
  const std::string hist = dir_ + "/hist.txt";
  const Outcome r =
      Run({"-q", "-i500", "-l20", "-h", "5", "--default-system", "--histfile=" + hist});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string text = ReadFile(hist);
  EXPECT_EQ(text.rfind("# Histogram\n000000 ", 0), 0u) << text;
  EXPECT_NE(text.find("# Total: "), std::string::npos) << text;
}

TEST_F(CyclicCliTest, BreaktraceEndsTheRunAndPrintsTheBreakLines) {
  // Under -N every sample exceeds 1 ns: the first one breaks.
  const Outcome b = Run({"-q", "-i1000", "-D5", "-N", "-b", "1", "--default-system"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::vector<std::string> lines = Lines(b.out);
  ASSERT_EQ(lines.size(), 4u) << b.out;
  EXPECT_NE(lines[0].find("C:      1 "), std::string::npos) << "stops with the breaking sample";
  EXPECT_EQ(lines[1].rfind("# Thread Ids: ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("# Break thread: ", 0), 0u);
  EXPECT_EQ(lines[3].rfind("# Break value: ", 0), 0u);
}

// cyclictest's figures come from the hub's drained samples (cyclic_thread_stats.h): the break
// trips at the drain after the breaking sample, and still the breaking thread's figures end at it.
TEST_F(CyclicCliTest, BreaktraceOfTwoThreadsEndsTheBreakingThreadsFiguresAtItsSample) {
  const Outcome b = Run({"-q", "-t2", "-d0", "-i1000", "-D5", "-N", "-b", "1", "--default-system"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::vector<std::string> lines = Lines(b.out);
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
  EXPECT_LE(t[1 - k].cycles, 1u) << "the other thread: what woke up to the break: " << b.out;
}

TEST_F(CyclicCliTest, TelemetryAndRecordRunAlongTheMeasurement) {
  const std::string rec = dir_ + "/run.rtrec";
  const Outcome r = Run(
      {"-q", "-i1000", "-l50", "--default-system", "--telemetry=127.0.0.1:0", "--record=" + rec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << "stdout unchanged: " << r.out;
  EXPECT_NE(r.err.find("127.0.0.1:"), std::string::npos) << r.err;
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
  EXPECT_NE(r.err.find(port), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("T:"), std::string::npos) << "nothing measured: " << r.out;
}

TEST_F(CyclicCliTest, MetricsServesTheEndpointWhileMeasuring) {
  const Outcome r = Run({"-q", "-i1000", "-l50", "--default-system", "--metrics=127.0.0.1:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u) << "stdout unchanged: " << r.out;
  EXPECT_NE(r.err.find("serving /metrics and the live page on http://127.0.0.1:"),
            std::string::npos)
      << r.err;
}

// ":PORT" is loopback for both servers (a bad address of either is a usage error:
// CyclicOutputsTest.BadTelemetryAddressIsAUsageErrorBeforeAnything).
TEST_F(CyclicCliTest, PortOnlyAddressesServeOnLoopback) {
  const Outcome r =
      Run({"-q", "-i1000", "-l50", "--default-system", "--telemetry=:0", "--metrics=:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rtloop telemetry: serving on 127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("serving /metrics and the live page on http://127.0.0.1:"),
            std::string::npos)
      << r.err;
}

TEST_F(CyclicCliTest, RefreshOnMaxEndsWithTheCursorDownEscape) {
  const Outcome r = Run({"-M", "-i1000", "-l60", "--default-system"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("policy: other/other: loadavg: ", 0), 0u) << r.out;
  ASSERT_GE(r.out.size(), 4u);
  EXPECT_EQ(r.out.substr(r.out.size() - 4), "\033[3B");
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
  EXPECT_TRUE(IsThreadLine(got.substr(0, got.find('\n')))) << got;
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
  EXPECT_NE(r.err.find("Unable to change scheduling policy!\nProbably missing capabilities, "
                       "either run as root or increase RLIMIT_RTPRIO limits.\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("CAP_SYS_NICE"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
