#include "cyclic_options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "cyclic_memory.h"
#include "cyclic_option_values.h"

namespace rtloop::cyclic {
namespace {

MachineCpus FourCpus() {
  MachineCpus m;
  m.configured = 4;
  m.online = {0, 1, 2, 3};
  m.allowed = {0, 1, 2, 3};
  return m;
}

Result<CyclicOptions> Parse(std::initializer_list<const char*> args,
                            const MachineCpus& machine = FourCpus()) {
  std::vector<const char*> argv{"rtloop-cyclic"};
  argv.insert(argv.end(), args.begin(), args.end());
  return ParseCyclicOptions(static_cast<int>(argv.size()), argv.data(), machine);
}

CyclicOptions ParseOk(std::initializer_list<const char*> args,
                      const MachineCpus& machine = FourCpus()) {
  Result<CyclicOptions> r = Parse(args, machine);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : CyclicOptions{};
}

// The error message of a command line that must fail.
std::string ParseError(std::initializer_list<const char*> args,
                       const MachineCpus& machine = FourCpus()) {
  Result<CyclicOptions> r = Parse(args, machine);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line only";
  return r.status().message();
}

std::vector<std::int64_t> Intervals(const CyclicOptions& o) {
  std::vector<std::int64_t> v;
  for (const ThreadPlan& t : o.threads) v.push_back(t.interval_us);
  return v;
}

std::vector<int> Cpus(const CyclicOptions& o) {
  std::vector<int> v;
  for (const ThreadPlan& t : o.threads) v.push_back(t.cpu);
  return v;
}

std::vector<int> Priorities(const CyclicOptions& o) {
  std::vector<int> v;
  for (const ThreadPlan& t : o.threads) v.push_back(t.priority);
  return v;
}

TEST(CyclicOptionsTest, DefaultsMatchCyclictest) {
  CyclicOptions o = ParseOk({});
  EXPECT_EQ(o.num_threads, 1);
  EXPECT_EQ(o.interval_us, 1000);
  EXPECT_EQ(o.distance_us, 500);
  EXPECT_EQ(o.priority, 0);
  EXPECT_EQ(o.policy, SchedPolicy::kOther);
  EXPECT_EQ(o.affinity, AffinityMode::kNone);
  ASSERT_EQ(o.threads.size(), 1u);
  EXPECT_EQ(o.threads[0].cpu, -1) << "threads float unless -a or -S asks";
  EXPECT_EQ(o.wait_mode, WaitMode::kAbsolute);
  EXPECT_EQ(o.clock, Clock::kMonotonic);
  EXPECT_EQ(o.histogram_style, HistogramStyle::kFull);
  EXPECT_TRUE(o.stderr_notes.empty());
}

TEST(CyclicOptionsTest, IntervalAcceptsAttachedDetachedAndLongForms) {
  EXPECT_EQ(ParseOk({"-i800"}).interval_us, 800);
  EXPECT_EQ(ParseOk({"-i", "800"}).interval_us, 800);
  EXPECT_EQ(ParseOk({"--interval=800"}).interval_us, 800);
  EXPECT_EQ(ParseOk({"--interval", "800"}).interval_us, 800);
  EXPECT_EQ(ParseOk({"--int=800"}).interval_us, 800) << "unique prefix, as getopt_long";
}

TEST(CyclicOptionsTest, CombinedShortFlagsWithTrailingValue) {
  CyclicOptions o = ParseOk({"-Sp99"});
  EXPECT_TRUE(o.smp);
  EXPECT_EQ(o.priority, 99);
  EXPECT_EQ(o.policy, SchedPolicy::kFifo);
  EXPECT_EQ(o.num_threads, 4);
  EXPECT_EQ(Cpus(o), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Intervals(o), (std::vector<std::int64_t>{1000, 1500, 2000, 2500}))
      << "-S keeps the distance";
  EXPECT_EQ(Priorities(o), (std::vector<int>{99, 99, 99, 99}));
}

TEST(CyclicOptionsTest, MnqIsMlockallNoopQuietWithANote) {
  CyclicOptions o = ParseOk({"-mnq"});
  EXPECT_TRUE(o.mlockall);
  EXPECT_TRUE(o.quiet);
  ASSERT_EQ(o.stderr_notes.size(), 1u);
  EXPECT_NE(o.stderr_notes[0].find("-n ignored"), std::string::npos);
}

TEST(CyclicOptionsTest, VendorCommandLinesParse) {
  CyclicOptions a = ParseOk({"-c", "0", "-m", "-a", "-t", "4", "-p", "99"});
  EXPECT_EQ(a.num_threads, 4);
  EXPECT_EQ(a.affinity, AffinityMode::kAllCpus);
  EXPECT_EQ(Intervals(a), (std::vector<std::int64_t>{1000, 1500, 2000, 2500}));

  CyclicOptions b = ParseOk({"-m", "-Sp99", "-i1000", "-h800", "-D24h", "-q"});
  EXPECT_EQ(b.histogram, 800u);
  EXPECT_EQ(b.duration_s, 24 * 3600);
  EXPECT_EQ(Intervals(b), (std::vector<std::int64_t>{1000, 1000, 1000, 1000}));
  EXPECT_TRUE(b.stderr_notes.empty()) << "-d not given: no distance warning";

  CyclicOptions c = ParseOk({"-l1000000", "-m", "-Sp99", "--policy=fifo", "-h25000", "-q"});
  EXPECT_EQ(c.loops, 1000000u);
  EXPECT_EQ(c.histogram, 25000u);

  CyclicOptions d = ParseOk(
      {"-m", "-a", "1", "-p", "99", "-t", "1", "-i", "1000", "--mainaffinity=0", "-D", "2h"});
  EXPECT_EQ(d.affinity, AffinityMode::kCpuSet);
  EXPECT_EQ(Cpus(d), (std::vector<int>{1}));
  EXPECT_EQ(d.main_affinity, (std::vector<int>{0}));
  EXPECT_EQ(d.duration_s, 7200);

  CyclicOptions e = ParseOk({"-t5", "-p98", "-m", "-D10m"});
  EXPECT_EQ(e.num_threads, 5);
  EXPECT_EQ(Priorities(e), (std::vector<int>{98, 98, 98, 98, 98}));
  EXPECT_EQ(Cpus(e), (std::vector<int>{-1, -1, -1, -1, -1}));

  CyclicOptions f = ParseOk({"-i", "700000", "-r", "-p", "80", "-l", "33"});
  EXPECT_EQ(f.wait_mode, WaitMode::kRelative);
  EXPECT_EQ(f.loops, 33u);

  CyclicOptions g = ParseOk({"-c0", "-m", "-n", "-t", "-p99", "-D", "2H"});
  EXPECT_EQ(g.num_threads, 4) << "-t followed by an option takes no number";
  EXPECT_EQ(g.priority, 99);
  EXPECT_EQ(g.duration_s, 7200);
}

// Every command line board vendors publish (reference/documented-results.json), with
// "cyclictest" replaced: all must parse. Split on spaces like a shell would.
TEST(CyclicOptionsTest, EveryDocumentedVendorCommandLineParses) {
  MachineCpus board;
  board.configured = 8;
  board.online = board.allowed = {0, 1, 2, 3, 4, 5, 6, 7};
  const char* const lines[] = {
      "-c 0 -m -n -t 8 -p 99 -D 2H",
      "-c0 -m -n -t -p99 -D 2H",
      "-c 0 -m -n -t 4 -p 99",
      "-c 0 -m -a -t 4 -p 99",
      "-c 0 -m -t 8 -p 99",
      "-c0 -m -t -p99 -D8H",
      "-i 700000 -r -p 80 -l 33",
      "-l1000000 -m -Sp99 --policy=fifo -h25000 -q",
      "-m -Sp99 -i1000 -h800 -D24h -q",
      "-m -a -p 99 -t 3 -i 1000 -D 2h",
      "-m -a 1 -p 99 -t 1 -i 1000 --mainaffinity=0 -D 2h",
      "-m -a 1 -p 99 -t 1 -i 1000 -D 2h",
      "-m -n -p80 -t1 -i800",
      "-m -n -p99 -i800 -l100000 -q",
      "-t5 -p98 -m -D10m",
  };
  for (const char* line : lines) {
    std::vector<std::string> words;
    std::string word;
    for (const char* c = line;; ++c) {
      if (*c == ' ' || *c == '\0') {
        if (!word.empty()) words.push_back(word);
        word.clear();
        if (*c == '\0') break;
      } else {
        word += *c;
      }
    }
    std::vector<const char*> argv{"rtloop-cyclic"};
    for (const std::string& w : words) argv.push_back(w.c_str());
    Result<CyclicOptions> r = ParseCyclicOptions(static_cast<int>(argv.size()), argv.data(), board);
    EXPECT_TRUE(r.ok()) << line << ": " << r.status().message();
  }
  // Spot checks of what 2.4 makes of them.
  std::vector<const char*> a{"rtloop-cyclic", "-c0", "-m", "-t", "-p99", "-D8H"};
  Result<CyclicOptions> r = ParseCyclicOptions(static_cast<int>(a.size()), a.data(), board);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->num_threads, 8);
  EXPECT_EQ(r->duration_s, 8 * 3600);
  EXPECT_EQ(r->threads[7].interval_us, 4500);
}

TEST(CyclicOptionsTest, ThreadsOptionalArgumentForms) {
  EXPECT_EQ(ParseOk({"-t"}).num_threads, 4);
  EXPECT_EQ(ParseOk({"-t4"}).num_threads, 4);
  EXPECT_EQ(ParseOk({"-t", "3"}).num_threads, 3);
  EXPECT_EQ(ParseOk({"--threads=2"}).num_threads, 2);
  EXPECT_EQ(ParseOk({"--threads", "2"}).num_threads, 2);
  EXPECT_EQ(ParseOk({"-t", "-p99"}).num_threads, 4);
  EXPECT_EQ(ParseOk({"-a", "2-3", "-t"}).num_threads, 2) << "-t alone: CPUs of the -a set";
}

TEST(CyclicOptionsTest, AffinityOptionalArgumentForms) {
  EXPECT_EQ(ParseOk({"-a"}).affinity, AffinityMode::kAllCpus);
  EXPECT_EQ(Cpus(ParseOk({"-a", "-t3"})), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Cpus(ParseOk({"-a1", "-t2"})), (std::vector<int>{1, 1}));
  EXPECT_EQ(Cpus(ParseOk({"-a", "1", "-t2"})), (std::vector<int>{1, 1}));
  EXPECT_EQ(Cpus(ParseOk({"--affinity=2"})), (std::vector<int>{2}));
  // cyclictest's help example: -a 3-5,0 -t 5 -> 0,3,4,5,0 (ascending set, round robin).
  MachineCpus six;
  six.configured = 6;
  six.online = six.allowed = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(Cpus(ParseOk({"-a", "3-5,0", "-t", "5"}, six)), (std::vector<int>{0, 3, 4, 5, 0}));
  EXPECT_EQ(Cpus(ParseOk({"-a", "!0", "-t2"})), (std::vector<int>{1, 2}));
  EXPECT_EQ(Cpus(ParseOk({"-a", "+1", "-t2"})), (std::vector<int>{1, 1}));
  EXPECT_EQ(Cpus(ParseOk({"-a", "all", "-t"})), (std::vector<int>{0, 1, 2, 3}));
}

TEST(CyclicOptionsTest, VerboseBeforeCpusetPrintsUsingCpus) {
  CyclicOptions o = ParseOk({"-v", "-a", "1,0", "-t4"});
  ASSERT_EQ(o.stdout_notes.size(), 1u);
  EXPECT_EQ(o.stdout_notes[0], "Using 2 cpus.\n");
  EXPECT_TRUE(ParseOk({"-a", "1,0", "-v"}).stdout_notes.empty());
}

TEST(CyclicOptionsTest, DurationSuffixesInEitherCase) {
  EXPECT_EQ(ParseOk({"-D", "30"}).duration_s, 30);
  EXPECT_EQ(ParseOk({"-D30s"}).duration_s, 30);
  EXPECT_EQ(ParseOk({"-D", "30S"}).duration_s, 30);
  EXPECT_EQ(ParseOk({"-D", "10m"}).duration_s, 600);
  EXPECT_EQ(ParseOk({"-D", "10M"}).duration_s, 600);
  EXPECT_EQ(ParseOk({"-D", "2h"}).duration_s, 7200);
  EXPECT_EQ(ParseOk({"--duration=2H"}).duration_s, 7200);
  EXPECT_EQ(ParseOk({"-D", "1d"}).duration_s, 86400);
  EXPECT_EQ(ParseOk({"-D", "1D"}).duration_s, 86400);
}

TEST(CyclicOptionsTest, DistanceAppliesUnlessHistogram) {
  EXPECT_EQ(Intervals(ParseOk({"-t3", "-i1000", "-d500"})),
            (std::vector<std::int64_t>{1000, 1500, 2000}));
  EXPECT_EQ(Intervals(ParseOk({"-t3", "-d", "0"})), (std::vector<std::int64_t>{1000, 1000, 1000}));
  CyclicOptions h = ParseOk({"-t3", "-d500", "-h20"});
  EXPECT_EQ(Intervals(h), (std::vector<std::int64_t>{1000, 1000, 1000}));
  ASSERT_EQ(h.stderr_notes.size(), 1u);
  EXPECT_EQ(h.stderr_notes[0], "WARN: distance is ignored and set to 0, if histogram enabled\n");
}

TEST(CyclicOptionsTest, PrioritySpreadAndDefaults) {
  EXPECT_EQ(Priorities(ParseOk({"-p90", "-t3", "--priospread"})), (std::vector<int>{90, 89, 88}));
  EXPECT_EQ(Priorities(ParseOk({"-p90", "-t3"})), (std::vector<int>{90, 90, 90}));

  CyclicOptions rr = ParseOk({"--policy=rr", "-t2"});
  EXPECT_EQ(rr.policy, SchedPolicy::kRr);
  EXPECT_EQ(Priorities(rr), (std::vector<int>{3, 3}));
  EXPECT_EQ(rr.stderr_notes, (std::vector<std::string>{"defaulting realtime priority to 3\n"}));

  CyclicOptions spread = ParseOk({"--priospread", "-t2"});
  EXPECT_EQ(spread.stderr_notes,
            (std::vector<std::string>{
                "defaulting realtime priority to 3\n",
                "policy and priority don't match: setting policy to SCHED_FIFO\n"}));
  EXPECT_EQ(Priorities(spread), (std::vector<int>{3, 2}));
  EXPECT_EQ(spread.threads[0].policy, SchedPolicy::kFifo);
}

TEST(CyclicOptionsTest, PolicyOrderAgainstPriorityFollowsCyclictest) {
  CyclicOptions a = ParseOk({"-p", "50", "--policy=other"});
  EXPECT_EQ(a.policy, SchedPolicy::kFifo);
  EXPECT_EQ(a.stderr_notes,
            (std::vector<std::string>{
                "policy and priority don't match: setting policy to SCHED_FIFO\n"}));
  CyclicOptions b = ParseOk({"--policy=other", "-p", "50"});
  EXPECT_EQ(b.policy, SchedPolicy::kFifo);
  EXPECT_TRUE(b.stderr_notes.empty());
}

TEST(CyclicOptionsTest, NonRtPoliciesRunAsOtherButKeepTheirName) {
  CyclicOptions batch = ParseOk({"--policy=batch"});
  EXPECT_EQ(batch.policy_name, "batch");
  EXPECT_EQ(batch.threads[0].policy, SchedPolicy::kOther);
  EXPECT_EQ(batch.threads[0].priority, 0);
  EXPECT_EQ(ParseOk({"--policy=normal"}).threads[0].policy, SchedPolicy::kOther);
  EXPECT_EQ(ParseOk({"--policy=FIFO", "-p1"}).policy, SchedPolicy::kFifo);
}

TEST(CyclicOptionsTest, SmpAndAffinityOrder) {
  CyclicOptions sa = ParseOk({"-S", "-a", "-p99"});
  EXPECT_EQ(sa.stderr_notes, (std::vector<std::string>{"WARN: -a ignored due to smp mode\n"}));
  EXPECT_EQ(sa.num_threads, 4);
  std::string as = ParseError({"-a", "-S", "-p99"});
  EXPECT_NE(as.find("mutually exclusive"), std::string::npos) << as;
  CyclicOptions st = ParseOk({"-S", "-t", "2"});
  EXPECT_EQ(st.num_threads, 4);
  EXPECT_EQ(st.stderr_notes, (std::vector<std::string>{"WARN: -t ignored due to smp mode\n"}));
}

TEST(CyclicOptionsTest, WaitModesAndClock) {
  EXPECT_EQ(ParseOk({"-r"}).wait_mode, WaitMode::kRelative);
  EXPECT_EQ(ParseOk({"-s"}).wait_mode, WaitMode::kNanosleep);
  EXPECT_EQ(ParseOk({"-x"}).wait_mode, WaitMode::kPosixTimer);
  CyclicOptions sx = ParseOk({"-s", "-x"});
  EXPECT_EQ(sx.wait_mode, WaitMode::kNanosleep);
  EXPECT_EQ(sx.stderr_notes.size(), 3u);
  EXPECT_EQ(ParseOk({"-c", "1"}).clock, Clock::kRealtime);
  EXPECT_EQ(ParseOk({"--clock=0"}).clock, Clock::kMonotonic);
}

// --timerlat (rtloop's): the kernel's timer releases the threads, so its needs are checked before
// anything runs, each with the fix.
TEST(CyclicOptionsTest, TimerlatWaitModeAndWhatItNeeds) {
  CyclicOptions t = ParseOk({"--timerlat", "-t1", "-a1", "-i1000"});
  EXPECT_EQ(t.wait_mode, WaitMode::kTimerlat);
  EXPECT_EQ(Cpus(t), (std::vector<int>{1}));
  EXPECT_EQ(ParseOk({"--timerlat", "-t2", "-a1,2", "-d0"}).wait_mode, WaitMode::kTimerlat);
  EXPECT_EQ(ParseOk({"--timerlat", "-S", "-d0"}).wait_mode, WaitMode::kTimerlat);  // one per CPU

  std::string e = ParseError({"--timerlat", "-t1"});
  EXPECT_NE(e.find("pinned to one CPU"), std::string::npos) << e;
  EXPECT_NE(e.find("-a"), std::string::npos) << e;
  e = ParseError({"--timerlat", "-t2", "-a1"});
  EXPECT_NE(e.find("share CPU 1"), std::string::npos) << e;
  e = ParseError({"--timerlat", "-t2", "-a1,2"});  // -d defaults to 500 us
  EXPECT_NE(e.find("give -d0"), std::string::npos) << e;
  e = ParseError({"--timerlat", "-t1", "-a1", "-i50"});
  EXPECT_NE(e.find("from 100 to 1000000 us"), std::string::npos) << e;
  for (const char* other : {"-r", "-s", "-x"}) {
    e = ParseError({"--timerlat", "-t1", "-a1", other});
    EXPECT_NE(e.find("leave out -r, -s and -x"), std::string::npos) << other << ": " << e;
  }
  e = ParseError({"--timerlat", "-t1", "-a1", "-c1"});
  EXPECT_NE(e.find("CLOCK_MONOTONIC"), std::string::npos) << e;
}

TEST(CyclicOptionsTest, AlignmentPhases) {
  CyclicOptions a = ParseOk({"-A", "100", "-t3"});
  EXPECT_TRUE(a.aligned);
  EXPECT_EQ(a.threads[2].phase_ns, 200'000);
  EXPECT_EQ(ParseOk({"-A100"}).align_offset_us, 100);
  EXPECT_EQ(ParseOk({"-A", "-t2"}).align_offset_us, 0);
  CyclicOptions s = ParseOk({"--secaligned", "250", "-t2"});
  EXPECT_TRUE(s.secaligned);
  EXPECT_EQ(s.threads[1].phase_ns, 250'000);
  EXPECT_TRUE(ParseOk({"--secaligned"}).secaligned);
}

TEST(CyclicOptionsTest, OutputAndTracingOptions) {
  CyclicOptions o = ParseOk({"-H100",        "--histfile=/tmp/h.txt",
                             "--json=-",     "-b",
                             "50",           "--tracemark",
                             "--spike=20",   "--spike-nodes=20",
                             "-N",           "-u",
                             "-M",           "-v",
                             "-o",           "10",
                             "-R",           "--laptop",
                             "--latency=10", "-F",
                             "/tmp/ctfifo",  "--dbg_cyclictest"});
  EXPECT_EQ(o.histogram, 100u);
  EXPECT_TRUE(o.histofall);
  EXPECT_EQ(o.histfile, "/tmp/h.txt");
  EXPECT_EQ(o.json_path, "-");
  EXPECT_EQ(o.breaktrace, 50);
  EXPECT_TRUE(o.tracemark);
  EXPECT_EQ(o.spike, 20);
  EXPECT_EQ(o.spike_nodes, 20u);
  EXPECT_TRUE(o.nsecs && o.unbuffered && o.refresh_on_max && o.verbose && o.resolution);
  EXPECT_EQ(o.oscope, 10u);
  EXPECT_TRUE(o.laptop);
  EXPECT_EQ(o.latency_us, 10);
  EXPECT_EQ(o.fifo_path, "/tmp/ctfifo");
  EXPECT_EQ(ParseOk({"--latency=-5"}).latency_us, 0) << "negative -> 0, as cyclictest";
  EXPECT_TRUE(ParseOk({"--default-system"}).default_system);
  EXPECT_TRUE(ParseOk({"--smi"}).smi);
}

TEST(CyclicOptionsTest, Extensions) {
  CyclicOptions o =
      ParseOk({"--telemetry", "--record=/tmp/r.bin", "--percentiles", "--fail-above=100",
               "--fail-percentile=99.9:50", "--fail-percentile=50:20", "--fail-missed=0",
               "--warmup=100", "--histogram-style=sparse"});
  EXPECT_TRUE(o.telemetry);
  EXPECT_TRUE(o.telemetry_address.empty());
  EXPECT_EQ(o.record_path, "/tmp/r.bin");
  EXPECT_TRUE(o.percentiles);
  EXPECT_EQ(o.fail_above_us, 100);
  ASSERT_EQ(o.fail_percentiles.size(), 2u);
  EXPECT_DOUBLE_EQ(o.fail_percentiles[0].percentile, 99.9);
  EXPECT_EQ(o.fail_percentiles[0].limit_us, 50);
  EXPECT_EQ(o.fail_missed, 0u);
  EXPECT_EQ(o.warmup, 100u);
  EXPECT_EQ(o.histogram_style, HistogramStyle::kSparse);
  EXPECT_EQ(ParseOk({"--telemetry=127.0.0.1:5000"}).telemetry_address, "127.0.0.1:5000");
  EXPECT_EQ(ParseOk({"--histogram-style=2.4"}).histogram_style, HistogramStyle::kFull);
}

TEST(CyclicOptionsTest, MetricsServesTheHttpEndpointAtTheDefaultOrTheGivenAddress) {
  const CyclicOptions plain = ParseOk({"--metrics"});
  EXPECT_TRUE(plain.metrics);
  EXPECT_TRUE(plain.metrics_address.empty());
  EXPECT_FALSE(plain.telemetry);
  EXPECT_EQ(ParseOk({"--metrics=127.0.0.1:9101"}).metrics_address, "127.0.0.1:9101");
  EXPECT_FALSE(ParseOk({}).metrics);
  EXPECT_NE(ParseError({"--metrics="}).find("--metrics"), std::string::npos);
}

// Issue 18 §4: --hdr-layout=P:R chooses the telemetry histograms' layout (HistogramLayout).
TEST(CyclicOptionsTest, HdrLayoutChoosesTheHistogramsLayout) {
  EXPECT_EQ(ParseOk({}).hdr_layout, telemetry::HistogramLayout());
  const CyclicOptions o = ParseOk({"--hdr-layout=7:30"});
  EXPECT_EQ(o.hdr_layout.precision_bits(), 7);
  EXPECT_EQ(o.hdr_layout.range_bits(), 30);
  EXPECT_EQ(ParseOk({"--hdr-layout=10:37"}).hdr_layout, telemetry::HistogramLayout());
  EXPECT_EQ(ParseOk({"--hdr-layout", "4:20"}).hdr_layout.bucket_count(), 17u * 16u);
  EXPECT_NE(UsageText().find("--hdr-layout=P:R"), std::string::npos);
}

TEST(CyclicOptionsTest, HdrLayoutOutOfRangeOrMalformedIsRejectedWithTheReason) {
  const struct {
    const char* arg;
    const char* message;
  } bad[] = {
      {"--hdr-layout=3:30",
       "invalid value '3:30' for --hdr-layout: precision_bits is 3 — use 4..10"},
      {"--hdr-layout=11:37", "precision_bits is 11 — use 4..10"},
      {"--hdr-layout=7:19", "invalid value '7:19' for --hdr-layout: range_bits is 19 — use 20..37"},
      {"--hdr-layout=7:38", "range_bits is 38 — use 20..37 (values below 2^bits ns are bucketed"},
      {"--hdr-layout=7", "expected PRECISION_BITS:RANGE_BITS, e.g. 7:30"},
      {"--hdr-layout=7:", "expected PRECISION_BITS:RANGE_BITS"},
      {"--hdr-layout=:30", "expected PRECISION_BITS:RANGE_BITS"},
      {"--hdr-layout=7:30s", "expected PRECISION_BITS:RANGE_BITS"},
      {"--hdr-layout=4294967303:30", "expected PRECISION_BITS:RANGE_BITS"},  // not wrapped to 7
      {"--hdr-layout=", "--hdr-layout"},
  };
  for (const auto& b : bad) {
    const std::string e = ParseError({b.arg});
    EXPECT_NE(e.find(b.message), std::string::npos) << b.arg << ": " << e;
  }
}

// The memory rtloop-cyclic checks before it allocates follows the layout: 2 histograms a thread,
// 4 with --metrics (the windowed statistics' previous reading) plus its buffers once.
TEST(CyclicOptionsTest, MemoryPlanCountsTheHistogramsOfTheChosenLayout) {
  const std::uint64_t big = telemetry::HistogramLayout().histogram_bytes();  // 224 KiB
  const std::uint64_t small = std::uint64_t{3072} * 8;                       // 7:30: 24 KiB
  const MemoryPlan plain = PlanMemory(ParseOk({"-t2"}));
  const MemoryPlan smaller = PlanMemory(ParseOk({"-t2", "--hdr-layout=7:30"}));
  EXPECT_EQ(plain.telemetry_bytes - smaller.telemetry_bytes, 4 * (big - small));
  EXPECT_EQ(plain.total_bytes - smaller.total_bytes, 4 * (big - small));
  const MemoryPlan metrics = PlanMemory(ParseOk({"-t2", "--metrics"}));
  const MemoryPlan metrics_small = PlanMemory(ParseOk({"-t2", "--metrics", "--hdr-layout=7:30"}));
  EXPECT_EQ(metrics.telemetry_bytes - plain.telemetry_bytes,
            4 * big + big + 2 * (std::size_t{28'672} + 2) * sizeof(telemetry::HistogramBucket));
  EXPECT_EQ(metrics_small.telemetry_bytes - smaller.telemetry_bytes,
            4 * small + small + 2 * (std::size_t{3072} + 2) * sizeof(telemetry::HistogramBucket));
}

TEST(CyclicOptionsTest, ServerAddressesAreCheckedAlikeAndPortOnlyMeansLoopback) {
  EXPECT_EQ(ParseOk({"--telemetry=:0"}).telemetry_address, ":0");
  EXPECT_EQ(ParseOk({"--metrics=:0"}).metrics_address, ":0");
  EXPECT_EQ(ParseOk({"--metrics=:9101"}).metrics_address, ":9101");
  for (const char* option : {"--telemetry", "--metrics"}) {
    const std::string port = ParseError({(std::string(option) + "=127.0.0.1:99999").c_str()});
    EXPECT_NE(port.find(std::string("for ") + option), std::string::npos) << port;
    EXPECT_NE(port.find("0 (a free port) to 65535"), std::string::npos) << port;
    const std::string no_port = ParseError({(std::string(option) + "=127.0.0.1").c_str()});
    EXPECT_NE(no_port.find("missing :PORT"), std::string::npos) << no_port;
  }
  // The HTTP server has no IPv6 (Debian's civetweb): refused with the options, not at start.
  EXPECT_NE(ParseError({"--metrics=[::1]:0"}).find("IPv6"), std::string::npos);
}

TEST(CyclicOptionsTest, HelpRequests) {
  EXPECT_TRUE(ParseOk({"--help"}).help);
  EXPECT_TRUE(ParseOk({"-?"}).help);
  EXPECT_NE(UsageText().find("--fail-percentile"), std::string::npos);
}

// ---- Bad input: one line naming the option and the problem ----

TEST(CyclicOptionsTest, BadInputListedInTheIssueIsRejected) {
  EXPECT_NE(ParseError({"-i", "0"}).find("'0' for -i/--interval"), std::string::npos);
  EXPECT_NE(ParseError({"-p", "100"}).find("'100' for -p/--priority"), std::string::npos);
  EXPECT_NE(ParseError({"-p", "-1"}).find("'-1' for -p/--priority"), std::string::npos);
  EXPECT_NE(ParseError({"-t", "0"}).find("'0' for -t/--threads"), std::string::npos);
  EXPECT_NE(ParseError({"-t", "abc"}).find("'abc' for -t/--threads"), std::string::npos);
  EXPECT_NE(ParseError({"-h", "0"}).find("'0' for -h/--histogram"), std::string::npos);
  EXPECT_NE(ParseError({"-h", "2000000"}).find("'2000000' for -h/--histogram"), std::string::npos);
  EXPECT_NE(ParseError({"-D", "5x"}).find("'5x' for -D/--duration"), std::string::npos);
  EXPECT_NE(ParseError({"-l", "-3"}).find("'-3' for -l/--loops"), std::string::npos);
  const std::string cpu = ParseError({"-a", "64"});
  EXPECT_NE(cpu.find("CPU 64 does not exist"), std::string::npos) << cpu;
  EXPECT_NE(ParseError({"--policy=bogus"}).find("'bogus' for --policy"), std::string::npos);
  const std::string json = ParseError({"--json=/nonexistent-dir/out.json"});
  EXPECT_NE(json.find("directory '/nonexistent-dir' does not exist"), std::string::npos) << json;
  EXPECT_NE(ParseError({"-o", "10"}).find("needs -v"), std::string::npos);
  EXPECT_NE(ParseError({"-A", "100", "--secaligned"}).find("cannot be combined"),
            std::string::npos);
}

TEST(CyclicOptionsTest, MoreBadInputIsRejected) {
  EXPECT_NE(ParseError({"-X"}).find("unknown option '-X'"), std::string::npos);
  EXPECT_NE(ParseError({"-Up99"}).find("-U"), std::string::npos);
  EXPECT_NE(ParseError({"--bogus"}).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(ParseError({"--hist=10"}).find("ambiguous"), std::string::npos);
  EXPECT_NE(ParseError({"-i"}).find("needs a value"), std::string::npos);
  EXPECT_NE(ParseError({"--quiet=1"}).find("takes no value"), std::string::npos);
  EXPECT_NE(ParseError({"-q", "extra"}).find("unexpected argument 'extra'"), std::string::npos);
  EXPECT_NE(ParseError({"-c", "2"}).find("-c/--clock"), std::string::npos);
  EXPECT_NE(ParseError({"-t", "257"}).find("1 to 256"), std::string::npos);
  EXPECT_NE(ParseError({"-D", "0.05m"}).find("fractions"), std::string::npos);
  EXPECT_NE(ParseError({"-i", "12abc"}).find("-i/--interval"), std::string::npos);
  EXPECT_NE(ParseError({"-a", "3-1"}).find("reversed"), std::string::npos);
  EXPECT_NE(ParseError({"-a", "x"}).find("-a/--affinity"), std::string::npos);
  EXPECT_NE(ParseError({"--mainaffinity=9"}).find("CPU 9"), std::string::npos);
  EXPECT_NE(ParseError({"--fail-percentile=99.9"}).find("P:US"), std::string::npos);
  EXPECT_NE(ParseError({"--fail-percentile=101:5"}).find("P:US"), std::string::npos);
  EXPECT_NE(ParseError({"--histogram-style=fancy"}).find("sparse"), std::string::npos);
  EXPECT_NE(ParseError({"--json=/tmp"}).find("is a directory"), std::string::npos);
  EXPECT_NE(ParseError({"--histfile=/nonexistent-dir/h"}).find("does not exist"),
            std::string::npos);
}

TEST(CyclicOptionsTest, CpuOutsideAffinityOrOfflineIsRejected) {
  MachineCpus m = FourCpus();
  m.online = {0, 1, 3};
  m.allowed = {0, 1};
  EXPECT_NE(ParseError({"-a", "2"}, m).find("offline"), std::string::npos);
  EXPECT_NE(ParseError({"-a", "3"}, m).find("affinity"), std::string::npos);
}

// Found by the PREEMPT_RT lab (tests/rtlab): with isolcpus=1 every process's affinity is CPU 0,
// and `-a 1` (the isolated CPU, as cyclictest -a 1 measures it) was refused as outside it.
// `-a` alone still means the process's affinity, as cyclictest's.
TEST(CyclicOptionsTest, AnIsolatedCpuOutsideTheAffinityMayBeNamed) {
  MachineCpus m = FourCpus();
  m.allowed = {0};
  m.isolated = {1};
  EXPECT_EQ(Cpus(ParseOk({"-a", "1"}, m)), (std::vector<int>{1}));
  EXPECT_NE(ParseError({"-a", "2"}, m).find("affinity (0)"), std::string::npos);
  EXPECT_EQ(ParseOk({"-a"}, m).affinity, AffinityMode::kAllCpus);
}

// Found by cyclic_options_fuzzer: 19 digits beyond int64 overflowed (UBSan) instead of being
// refused.
TEST(CyclicOptionsTest, NumbersBeyondInt64AreRefusedNotWrapped) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(ParseStrictInt("9223372036854775807"), kMax);
  EXPECT_EQ(ParseStrictInt("-922337203685477580"), -922337203685477580);
  EXPECT_EQ(ParseStrictInt("+42"), 42);
  EXPECT_FALSE(ParseStrictInt("9223372036854775808").has_value());
  EXPECT_FALSE(ParseStrictInt("9559799597975959799").has_value());
  EXPECT_FALSE(ParseStrictInt("9999999999999999999").has_value());
  EXPECT_NE(ParseError({"-i", "9559799597975959799"}).find("-i/--interval"), std::string::npos);
  EXPECT_NE(ParseError({"-a", "9999999999999999999"}).find("-a/--affinity"), std::string::npos);
  EXPECT_NE(ParseError({"--fail-percentile=99:9999999999999999999"}).find("P:US"),
            std::string::npos);
}

TEST(CyclicOptionsTest, DurationParserRejectsJunk) {
  EXPECT_FALSE(ParseDurationSeconds("").ok());
  EXPECT_FALSE(ParseDurationSeconds("m").ok());
  EXPECT_FALSE(ParseDurationSeconds("-5").ok());
  EXPECT_FALSE(ParseDurationSeconds("5ms").ok());
  EXPECT_FALSE(ParseDurationSeconds("1.5h").ok());
  EXPECT_EQ(*ParseDurationSeconds("0"), 0);
}

}  // namespace
}  // namespace rtloop::cyclic
