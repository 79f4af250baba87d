// rtloop-bench plot end to end, against hostile names and hostile destinations: every string that
// reaches gnuplot (a title, an input's name as the default title, the output's path) must stay a
// string, and the PNG goes through the output layer like every result (no FIFO hang, no
// /dev/full "success", a full disk is exit 4, the input is never overwritten); and no file a run
// writes may be one it reads.
//
//   ctest --test-dir build -R BenchPlot
//
// Threading: each test runs rtloop-bench as a child process and waits for it (bounded).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_test_util.h"
#include "bench_util.h"
#include "latency_data.h"
#include "plots.h"
#include "run_result.h"
#include "test_paths.h"

using rtloop::testing::SourcePath;
using rtloop::testing::TargetFile;

namespace rtloop::bench {
namespace {

using std::chrono::seconds;
using testing::ReadFile;
using testing::RunResult;
using testing::TempDir;

const std::string kBench = TargetFile("rtloop-bench");

std::string HistogramText() {
  const std::string text = ReadFile(SourcePath("tests/cyclic/golden") + "/v2.10/17-histfile.txt");
  return text.substr(text.find('\n') + 1);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The worst strings for a gnuplot script: each would run `touch MARKER` if it escaped its quotes
// (a newline ends the command; a quote, a backslash or a line continuation ends the string;
// backquotes and @macros expand outside single quotes).
std::vector<std::string> WorstStrings(const std::string& marker) {
  const std::string cmd = "system \"touch " + marker + "\"";
  return {
      "evil\n" + cmd + "\n#",   "x'\n" + cmd + "\n#'",
      "x\r" + cmd + "\r#",      "x\\\n" + cmd,
      "x'; " + cmd + "; '",     "x''\n" + cmd + "\n''",
      "`touch " + marker + "`", "@GPVAL_TERM\n" + cmd,
      "x\x1b[2J\x7f\t" + cmd,   "' noenhanced\nset output '" + marker + "'\nplot x\n#",
  };
}

TEST(BenchPlot, GnuplotStringKeepsEveryStringOneQuotedLine) {
  for (const std::string& s : WorstStrings("/tmp/never")) {
    const std::string q = GnuplotString(s);
    ASSERT_GE(q.size(), 2u);
    EXPECT_EQ(q.front(), '\'');
    EXPECT_EQ(q.back(), '\'');
    // Single-quoted pieces joined by ."'". (a quote), nothing else, and no control character.
    std::size_t i = 1;
    while (true) {
      const std::size_t end = q.find('\'', i);
      ASSERT_NE(end, std::string::npos) << q;
      for (std::size_t k = i; k < end; ++k) {
        const auto c = static_cast<unsigned char>(q[k]);
        EXPECT_FALSE(c < 0x20 || c == 0x7f) << "control character in " << q;
      }
      if (end + 1 == q.size()) break;
      ASSERT_EQ(q.compare(end, 7, "'.\"'\".'"), 0) << "the string ends early: " << q;
      i = end + 7;
    }
    // The title is the only user text of a script: it adds no line.
    LatencyData data;
    ThreadLatency t;
    t.histogram = {0, 3, 5};
    data.threads.push_back(t);
    Result<PlotJob> plain = HistogramPlot(data, "plain");
    Result<PlotJob> hostile = HistogramPlot(data, s);
    ASSERT_TRUE(plain.ok() && hostile.ok());
    EXPECT_EQ(std::count(hostile->script.begin(), hostile->script.end(), '\n'),
              std::count(plain->script.begin(), plain->script.end(), '\n'));
  }
}

TEST(BenchPlot, GnuplotNeverRunsWhatATitleAFileNameOrAPathHolds) {
  if (FindInPath("gnuplot").empty()) GTEST_SKIP() << "needs gnuplot (apt-get install gnuplot-nox)";
  TempDir dir("plot-injection");
  const std::string marker = dir.path() + "/PWNED";
  const std::string hist = dir.path() + "/h.txt";
  ASSERT_TRUE(WriteTextFile(hist, HistogramText()).ok());
  int n = 0;
  for (const std::string& s : WorstStrings(marker)) {
    SCOPED_TRACE("string " + std::to_string(n));
    const std::string sub = dir.path() + "/" + std::to_string(n++);
    std::filesystem::create_directories(sub);
    // The input's name (the default title), the title, a directory and a file name of the output
    // (a '/' in the string makes directories).
    const std::string named = sub + "/" + s + ".txt";
    std::filesystem::create_directories(std::filesystem::path(named).parent_path());
    ASSERT_TRUE(WriteTextFile(named, HistogramText()).ok());
    RunResult r = testing::Run({kBench, "plot", named, "-o", sub + "/a.png"}, seconds(30));
    EXPECT_EQ(r.status, 0) << r.err;
    r = testing::Run({kBench, "plot", hist, "-o", sub + "/b.png", "--title=" + s}, seconds(30));
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string odd_dir = sub + "/" + s;
    std::filesystem::create_directories(std::filesystem::path(odd_dir + "/" + s).parent_path());
    r = testing::Run({kBench, "plot", hist, "-o", odd_dir + "/" + s + ".png"}, seconds(30));
    EXPECT_EQ(r.status, 0) << r.err;
    int w = 0, h = 0;
    for (const std::string& png : {sub + "/a.png", sub + "/b.png", odd_dir + "/" + s + ".png"}) {
      EXPECT_TRUE(testing::PngSize(png, &w, &h)) << png;
    }
  }
  EXPECT_FALSE(Exists(marker)) << "a string reached gnuplot as a command";
}

TEST(BenchPlot, TheOutputNeverNamesTheInput) {
  TempDir dir("plot-input");
  const std::string hist = dir.path() + "/h.txt";
  ASSERT_TRUE(WriteTextFile(hist, HistogramText()).ok());
  const std::string hard = dir.path() + "/hard.png";
  ASSERT_EQ(::link(hist.c_str(), hard.c_str()), 0);
  for (const std::string& out : {hist, dir.path() + "/./h.txt", hard}) {
    const RunResult r = testing::Run({kBench, "plot", hist, "-o", out}, seconds(30));
    EXPECT_EQ(r.status, kExitUsage) << out;
    EXPECT_NE(r.err.find("is the same file as INPUT"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFile(hist), HistogramText()) << "the input was overwritten";
}

TEST(BenchPlot, AFifoOrACharacterDeviceIsRefusedAndLeavesNothing) {
  TempDir dir("plot-targets");
  const std::string hist = dir.path() + "/h.txt";
  ASSERT_TRUE(WriteTextFile(hist, HistogramText()).ok());
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = testing::Run({kBench, "plot", hist, "-o", fifo}, seconds(30));
  EXPECT_EQ(r.status, kExitUsage) << "-1 is a hang: " << r.err;
  EXPECT_NE(r.err.find("named pipe"), std::string::npos) << r.err;
  for (const char* litter : {"/dev/full.gp", "/dev/full-t0.dat"}) ::unlink(litter);  // old bug's
  r = testing::Run({kBench, "plot", hist, "-o", "/dev/full"}, seconds(30));
  EXPECT_EQ(r.status, kExitUsage) << r.out << r.err;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
  EXPECT_FALSE(Exists("/dev/full.gp"));
  EXPECT_FALSE(Exists("/dev/full-t0.dat"));
  // A plot leaves the PNG and nothing else next to it.
  r = testing::Run({kBench, "plot", hist, "-o", dir.path() + "/p.png"}, seconds(30));
  if (FindInPath("gnuplot").empty()) return;
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"fifo", "h.txt", "p.png"}));
}

// A file system with 16 KiB free: the PNG (~70 KiB) does not fit. Before, plot said "wrote" and
// left 4 KiB; now the write's error is exit 4 and nothing is left under the name.
TEST(BenchPlot, AFullDiskIsExit4AndLeavesNoHalfPng) {
  if (FindInPath("gnuplot").empty()) GTEST_SKIP() << "needs gnuplot (apt-get install gnuplot-nox)";
  TempDir dir("plot-full");
  const std::string hist = dir.path() + "/h.txt";
  ASSERT_TRUE(WriteTextFile(hist, HistogramText()).ok());
  const std::string small = dir.path() + "/small";
  std::filesystem::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=16k") != 0) {
    GTEST_SKIP() << "needs CAP_SYS_ADMIN to mount a small tmpfs";
  }
  const RunResult r = testing::Run({kBench, "plot", hist, "-o", small + "/p.png"}, seconds(30));
  // gnuplot's own failure (its private directory full) is detected too: TMPDIR there.
  const RunResult g = testing::Run({kBench, "plot", hist, "-o", dir.path() + "/q.png"}, seconds(30),
                                   {"TMPDIR=" + small});
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(small)) {
    left.push_back(e.path().filename().string());
  }
  ::umount(small.c_str());
  EXPECT_EQ(r.status, kExitOutput) << r.out << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
  EXPECT_EQ(g.status, kExitFail) << g.out << g.err;
  EXPECT_NE(g.err.find("gnuplot"), std::string::npos) << g.err;
  EXPECT_FALSE(Exists(dir.path() + "/q.png"));
  EXPECT_TRUE(left.empty()) << left.front();
}

// --reference-file=DIR/result.json with --out=DIR: the run would replace its reference with its
// result. Refused with exit 2 before anything is measured.
TEST(BenchRunOutputs, NoFileARunWritesMayBeOneItReads) {
  TempDir dir("run-input");
  const std::string ref = dir.path() + "/result.json";
  ASSERT_TRUE(WriteTextFile(ref, "{}\n").ok());
  const RunResult r = testing::Run({kBench, "run", "--scenario=idle", "--duration=1",
                                    "--out=" + dir.path(), "--reference-file=" + ref},
                                   seconds(30));
  EXPECT_EQ(r.status, kExitUsage) << r.err;
  EXPECT_NE(r.err.find("is the same file as --reference-file '" + ref + "'"), std::string::npos)
      << r.err;
  EXPECT_TRUE(ReadFile(ref) == "{}\n") << "the reference was overwritten";
}

// Issue 19: with one fat-tailed thread the body was squashed (the zoom panel was skipped by a
// heuristic), the legend took a third of the width, the overflow label said "over 765 us" for -h800
// data, the title had no load, no published figure was drawn, the tail was a saw-tooth. The script
// for a fixed input is golden: RTLOOP_UPDATE_GOLDEN=1 rewrites tests/scenarios/golden/
// histogram-plot.gp after an intended change (look at the PNG: rtloop-bench plot
// tests/scenarios/golden/plot-input.json -o /tmp/p.png).
TEST(BenchPlot, TheHistogramScriptOfAFixedInputIsGolden) {
  const std::string input = SourcePath("tests/scenarios/golden") + "/plot-input.json";
  Result<LatencyData> data = LoadLatencyData(input);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  const nlohmann::json r = nlohmann::json::parse(ReadFile(input));
  Result<PlotJob> job =
      HistogramPlot(*data, "Latency histogram: " + RunTitle(r), PublishedMarks(r));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(testing::CheckGolden(job->script, "histogram-plot.gp"), "");
  const std::string& gp = job->script;
  EXPECT_NE(gp.find("(3 over 800 us)"), std::string::npos) << gp;
  EXPECT_NE(gp.find("stress-ng --cpu 2"), std::string::npos) << "the load in the title:\n" << gp;
  EXPECT_NE(gp.find("set xrange [0:27]"), std::string::npos) << "the body panel:\n" << gp;
  EXPECT_NE(gp.find("'T1 published 60'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set key inside"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("linespoints"), std::string::npos) << "no lines between sparse buckets";
  // Every bucket is a flat step: its left and right edge at the same count.
  ASSERT_FALSE(job->data.empty());
  EXPECT_NE(job->data[0].second.find("\n5 26"), std::string::npos) << job->data[0].second;
  EXPECT_NE(job->data[0].second.find("\n6 26"), std::string::npos) << job->data[0].second;
  // A summary-only reference: one black line for all CPUs.
  Result<PlotJob> summary = HistogramPlot(*data, "t", {{-1, 59}});
  ASSERT_TRUE(summary.ok());
  EXPECT_NE(summary->script.find("'published max 59'"), std::string::npos) << summary->script;
}

}  // namespace
}  // namespace rtloop::bench
