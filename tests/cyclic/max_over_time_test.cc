#include "max_over_time.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "child_process.h"
#include "cyclic_options.h"
#include "cyclic_thread_stats.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::cyclic {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr TimePoint kOrigin{std::chrono::seconds(100)};

CycleSample At(std::int64_t release_us, std::int64_t latency_us, std::uint64_t seq = 0) {
  CycleSample s;
  s.seq = seq;
  s.release = kOrigin + microseconds(release_us);
  s.wakeup_latency_ns = latency_us * 1000;
  return s;
}

std::vector<WindowMax> DrainAll(WindowMaxTracker& t) {
  std::vector<WindowMax> out;
  t.Drain([&](const WindowMax& w) { out.push_back(w); });
  return out;
}

TEST(WindowMaxTracker, WindowsFollowTheReleaseTimeAndKeepTheExactMax) {
  WindowMaxTracker t(0, milliseconds(1), kOrigin, false, 16);
  t.OnCycle(At(100, 5));
  t.OnCycle(At(500, 9));
  t.OnCycle(At(900, 2));
  t.OnCycle(At(1200, 3));  // window 1
  t.OnCycle(At(3500, 7));  // window 3: window 2 had no release and is absent
  const std::vector<WindowMax> done = DrainAll(t);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].window, 0);
  EXPECT_EQ(done[0].max, 9);
  EXPECT_EQ(done[0].cycles, 3u);
  EXPECT_EQ(done[1].window, 1);
  EXPECT_EQ(done[1].max, 3);
  WindowMax last;
  ASSERT_TRUE(t.TakeCurrent(&last));
  EXPECT_EQ(last.window, 3);
  EXPECT_EQ(last.max, 7);
  EXPECT_FALSE(t.TakeCurrent(&last));
  EXPECT_EQ(t.lost(), 0u);
}

TEST(WindowMaxTracker, UsesCyclictestsDiffSoMaximaMatchTheThreadLine) {
  // 1.5 us after a release at x.999999600 s: calcdiff's truncated ns part makes it 2 us.
  WindowMaxTracker t(0, milliseconds(10), TimePoint{}, false, 16);
  CycleSample s;
  s.release = TimePoint{std::chrono::nanoseconds(1'999'999'600)};
  s.wakeup_latency_ns = 1500;
  t.OnCycle(s);
  WindowMax w;
  ASSERT_TRUE(t.TakeCurrent(&w));
  EXPECT_EQ(w.max, CyclictestDiff(s.release, s.wakeup_latency_ns, false));
  WindowMaxTracker ns(0, milliseconds(10), TimePoint{}, true, 16);
  ns.OnCycle(s);
  ASSERT_TRUE(ns.TakeCurrent(&w));
  EXPECT_EQ(w.max, 1500);
}

// The same samples as the T: line: after a -b break (in any thread) the windows stop too, and
// the breaking sample is in, whichever of the thread's observers saw it first.
TEST(WindowMaxTracker, SamplesAfterTheBreakAreLeftOutLikeTheThreadLine) {
  BreakLatch latch;
  WindowMaxTracker t(1, milliseconds(1), kOrigin, false, 16, &latch);
  t.OnCycle(At(100, 4, 0));
  ASSERT_TRUE(latch.TryTrip(1, 1, 500));  // as thread 1's CyclicThreadStats does on sample 1
  t.OnCycle(At(200, 500, 1));
  t.OnCycle(At(300, 900, 2));  // after the break
  WindowMax w;
  ASSERT_TRUE(t.TakeCurrent(&w));
  EXPECT_EQ(w.max, 500);
  EXPECT_EQ(w.cycles, 2u);
}

TEST(WindowMaxTracker, AFullRingCountsTheWindowsItLost) {
  WindowMaxTracker t(0, milliseconds(1), kOrigin, false, 2);
  for (int k = 0; k < 5; ++k) t.OnCycle(At(k * 1000 + 10, k));
  // Windows 0 and 1 fit, 2 and 3 were lost, 4 is the current one.
  EXPECT_EQ(t.lost(), 2u);
  const std::vector<WindowMax> done = DrainAll(t);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].window, 1);
  t.OnCycle(At(5010, 9));  // room again after the drain
  EXPECT_EQ(DrainAll(t).size(), 1u);
}

TEST(WindowMaxTracker, OnCycleAllocatesNothingInSteadyState) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is off under sanitizers";
  }
  static_assert(noexcept(std::declval<WindowMaxTracker&>().OnCycle(CycleSample{})));
  BreakLatch latch;
  WindowMaxTracker t(0, microseconds(100), kOrigin, false, 1024, &latch);
  testing::AllocationCounter counter;
  for (int k = 0; k < 100000; ++k) {
    t.OnCycle(At(k * std::int64_t{10}, k % 50, static_cast<std::uint64_t>(k)));
    if (k % 5000 == 0) t.Drain([](const WindowMax&) {});  // the reader's side, concurrently
  }
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "mot_" + std::to_string(getpid()) + "_" + name;
}

std::unique_ptr<MaxOverTime> Make(const MaxOverTimeConfig& c, const std::string& path) {
  Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path, {"--max-over-time"});
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  Result<std::unique_ptr<MaxOverTime>> mot = MaxOverTime::Create(c, std::move(*file));
  EXPECT_TRUE(mot.ok()) << mot.status().ToString();
  return mot.ok() ? std::move(*mot) : nullptr;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(MaxOverTime, FileListsEveryWindowOfEveryThreadAndEndsWithEnd) {
  const std::string path = TempPath("windows.txt");
  MaxOverTimeConfig c;
  c.window = milliseconds(500);
  c.origin = kOrigin;
  c.threads = 2;
  std::unique_ptr<MaxOverTime> mot = Make(c, path);
  ASSERT_NE(mot, nullptr);
  CycleObserver* t0 = mot->Observer(0);
  CycleObserver* t1 = mot->Observer(1);
  t0->OnCycle(At(100, 11));
  t0->OnCycle(At(600'000, 12));
  t1->OnCycle(At(200, 21));
  EXPECT_TRUE(Exists(path + ".partial")) << "FILE.partial until complete";
  EXPECT_FALSE(Exists(path));
  ASSERT_TRUE(mot->Close().ok());
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_EQ(ReadFile(path),
            "# rtloop-cyclic max over time\n# window_us: 500000\n# unit: us\n"
            "# columns: thread window start_s max cycles\n"
            "0 0 0.000 11 1\n"  // drained: finished before Close
            "0 1 0.500 12 1\n"  // the current windows, thread by thread
            "1 0 0.000 21 1\n"
            "# lost_windows: 0\n# end\n");
  std::remove(path.c_str());
}

TEST(MaxOverTime, AbandonLeavesNoFile) {
  const std::string path = TempPath("abandoned.txt");
  MaxOverTimeConfig c;
  c.origin = kOrigin;
  std::unique_ptr<MaxOverTime> mot = Make(c, path);
  ASSERT_NE(mot, nullptr);
  mot->Observer(0)->OnCycle(At(1, 1));
  ASSERT_TRUE(mot->Start().ok());
  mot->Abandon();
  EXPECT_TRUE(mot->Close().ok()) << "nothing left to close";
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".partial"));
}

// A full file system without privileges, in a child process: RLIMIT_FSIZE makes writes past 256
// bytes fail with EFBIG (SIGXFSZ ignored), as ENOSPC does on a full disk.
TEST(MaxOverTime, AFullDiskIsAnErrorNamingTheOptionAndNoFileAppears) {
  const std::string path = TempPath("full.txt");
  const rtloop::testing::ForkedResult r = rtloop::testing::RunForked([&path] {
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    getrlimit(RLIMIT_FSIZE, &lim);
    lim.rlim_cur = 256;
    setrlimit(RLIMIT_FSIZE, &lim);
    MaxOverTimeConfig c;
    c.window = milliseconds(1);
    c.origin = kOrigin;
    Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path, {"--max-over-time"});
    if (!file.ok()) return 10;
    Result<std::unique_ptr<MaxOverTime>> mot = MaxOverTime::Create(c, std::move(*file));
    if (!mot.ok()) return 11;
    CycleObserver* thread0 = (*mot)->Observer(0);
    for (int k = 0; k < 100; ++k) thread0->OnCycle(At(k * 1000 + 1, k));
    const Status s = (*mot)->Close();
    if (s.ok()) return 12;
    if (s.message().find("--max-over-time") == std::string::npos) return 13;
    if (s.message().find(path) == std::string::npos) return 14;
    return 0;
  });
  EXPECT_EQ(r.status, 0) << "10: open, 11: create, 12: no error, 13/14: message; >128: a signal";
  EXPECT_FALSE(Exists(path)) << "a cut-short file never appears under its name";
  EXPECT_FALSE(Exists(path + ".partial"));
}

MachineCpus TwoCpus() {
  MachineCpus m;
  m.configured = 2;
  m.online = {0, 1};
  m.allowed = {0, 1};
  return m;
}

TEST(MaxOverTimeOptions, KeepDistanceKeepsTheIntervalsUnderAHistogram) {
  const char* plain[] = {"rtloop-cyclic", "-t", "3", "-i", "1000", "-h", "100"};
  Result<CyclicOptions> o = ParseCyclicOptions(7, plain, TwoCpus());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->threads[2].interval_us, 1000);
  const char* kept[] = {"rtloop-cyclic", "-t", "3", "-i", "1000", "-h", "100", "--keep-distance"};
  o = ParseCyclicOptions(8, kept, TwoCpus());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->threads[1].interval_us, 1500);
  EXPECT_EQ(o->threads[2].interval_us, 2000);
  EXPECT_TRUE(o->stderr_notes.empty());
}

TEST(MaxOverTimeOptions, WindowMustBeAtLeastOneMillisecond) {
  const char* bad[] = {"rtloop-cyclic", "--max-window=0"};
  Result<CyclicOptions> o = ParseCyclicOptions(2, bad, TwoCpus());
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--max-window"), std::string::npos);
  const char* missing[] = {"rtloop-cyclic", "--max-over-time=/nonexistent-dir/x"};
  EXPECT_FALSE(ParseCyclicOptions(2, missing, TwoCpus()).ok());
  const char* dash[] = {"rtloop-cyclic", "--max-over-time=-"};
  o = ParseCyclicOptions(2, dash, TwoCpus());
  ASSERT_FALSE(o.ok()) << "standard output carries the text output";
  EXPECT_NE(o.status().message().find("give a file name"), std::string::npos)
      << o.status().message();
}

// End to end: the windows of each thread add up to its cycle count and their max is the T: Max.
TEST(MaxOverTimeCli, WindowMaximaAgreeWithTheThreadLines) {
  const std::string path = ::testing::TempDir() + "mot_cli_" + std::to_string(getpid()) + ".txt";
  rtloop::testing::ChildConfig cyclic;
  cyclic.argv = {TargetFile("rtloop-cyclic"), "-t2", "-i1000", "-D1", "-q", "--max-window=100",
                 "--max-over-time=" + path};
  cyclic.stderr_path = "/dev/null";
  const rtloop::testing::ChildResult run = rtloop::testing::RunChild(cyclic);
  ASSERT_TRUE(run.error.empty()) << run.error;
  std::map<int, std::pair<unsigned long long, long long>> lines;  // thread -> cycles, max
  std::istringstream out(run.out);
  for (std::string text; std::getline(out, text);) {
    int t = 0, tid = 0, prio = 0;
    long long interval = 0, min = 0, act = 0, avg = 0, max = 0;
    unsigned long long cycles = 0;
    if (std::sscanf(text.c_str(),
                    "T:%d (%d) P:%d I:%lld C:%llu Min:%lld Act:%lld Avg:%lld Max:%lld", &t, &tid,
                    &prio, &interval, &cycles, &min, &act, &avg, &max) == 9) {
      lines[t] = {cycles, max};
    }
  }
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(lines.size(), 2u);
  std::map<int, std::pair<unsigned long long, long long>> windows;
  std::istringstream in(ReadFile(path));
  std::string line;
  bool ended = false;
  while (std::getline(in, line)) {
    if (line == "# end") ended = true;
    if (line.empty() || line[0] == '#') continue;
    int t = 0;
    long long w = 0, max = 0;
    unsigned long long cycles = 0;
    double start = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d %lld %lf %lld %llu", &t, &w, &start, &max, &cycles), 5)
        << line;
    windows[t].first += cycles;
    windows[t].second = std::max(windows[t].second, max);
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(windows, lines);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rtloop::cyclic
