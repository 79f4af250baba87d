// rtloop-bench on a board (issue 18): every tool it starts is the board's own, and each missing
// one is named with the Debian package that brings it (run, plot, and doctor's tool findings);
// doctor --cpus judges the boot parameters (isolcpus=, nohz_full=, rcu_nocbs=) for the CPUs the
// user measures on. The binary end to end, PATH pointed at a directory without the tools.
//
// Thread contract: each test runs the binary as a child process and waits for it (bounded).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench_test_util.h"
#include "bench_util.h"
#include "test_paths.h"

using rtloop::testing::TargetFile;

namespace rtloop::bench {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using testing::Golden;
using testing::ReadFile;
using testing::RunResult;
using testing::TempDir;

const std::string kBench = TargetFile("rtloop-bench");
const std::string kCyclic = TargetFile("rtloop-cyclic");

// Issue 18: on a board, every tool rtloop-bench starts is the board's own; each one missing is
// named with the Debian package that brings it, before anything starts (run) or instead of the
// plot (plot).
TEST(BenchRun, EveryLoadAndThePlotNameTheirDebianPackageWhenMissing) {
  TempDir dir("missing_each");
  for (const auto& [scenario, says] : std::vector<std::pair<std::string, std::string>>{
           {"hackbench", "'hackbench' not found in PATH: install it with apt-get install rt-tests"},
           {"irq", "'iperf3' not found in PATH: install it with apt-get install iperf3"}}) {
    RunResult r = testing::Run({kBench, "run", "--scenario=" + scenario, "--duration=1",
                                "--out=" + dir.path(), "--rtloop-cyclic=" + kCyclic},
                               seconds(10), {"PATH=/nonexistent"});
    EXPECT_EQ(r.status, kExitFail) << scenario;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("doctor:"), std::string::npos) << "started before the check: " << r.err;
  }
  const std::string hist = dir.path() + "/h.txt";
  ASSERT_TRUE(WriteTextFile(hist, Golden("v2.10/17-histfile.txt")).ok());
  RunResult p = testing::Run({kBench, "plot", hist, "-o", dir.path() + "/h.png"}, seconds(10),
                             {"PATH=/nonexistent"});
  EXPECT_EQ(p.status, kExitFail);
  EXPECT_NE(p.err.find("apt-get install gnuplot-nox"), std::string::npos) << p.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/h.png"));
}

// Issue 18: on a bare board the static rtloop-bench says which of its loads and plots cannot run
// and which Debian package brings the tool; a tool in PATH is found there.
TEST(BenchDoctor, TheBoardToolsAreFindingsNamingTheirDebianPackage) {
  TempDir dir("doctor_tools");
  ASSERT_EQ(system(("mkdir -p " + dir.path() + "/proc " + dir.path() + "/bin").c_str()), 0);
  const std::string gnuplot = dir.path() + "/bin/gnuplot";
  std::ofstream(gnuplot) << "#!/bin/sh\n";
  ASSERT_EQ(chmod(gnuplot.c_str(), 0755), 0);
  RunResult r = testing::Run({kBench, "doctor", "--json", "--root=" + dir.path()}, seconds(10),
                             {"PATH=" + dir.path() + "/bin"});
  const json j = json::parse(r.out);
  std::map<std::string, json> by_id;
  for (const json& f : j["findings"]) by_id[f["id"].get<std::string>()] = f;
  for (const auto& [id, package] :
       std::vector<std::pair<std::string, std::string>>{{"tool_stress_ng", "stress-ng"},
                                                        {"tool_hackbench", "rt-tests"},
                                                        {"tool_iperf3", "iperf3"}}) {
    ASSERT_TRUE(by_id.count(id)) << id << " missing: " << r.out;
    EXPECT_EQ(by_id[id]["level"], "WARN") << id;
    EXPECT_NE(by_id[id]["summary"].get<std::string>().find("not found in PATH"), std::string::npos);
    EXPECT_NE(by_id[id]["fix"].get<std::string>().find("apt-get install " + package),
              std::string::npos)
        << by_id[id]["fix"];
  }
  ASSERT_TRUE(by_id.count("tool_gnuplot"));
  EXPECT_EQ(by_id["tool_gnuplot"]["level"], "OK");
  EXPECT_NE(by_id["tool_gnuplot"]["summary"].get<std::string>().find(gnuplot), std::string::npos);
  RunResult text = testing::Run({kBench, "doctor", "--root=" + dir.path()}, seconds(10),
                                {"PATH=" + dir.path() + "/bin"});
  EXPECT_NE(text.out.find("iperf3 not found in PATH"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fix: apt-get install iperf3"), std::string::npos) << text.out;
}

// Issue 18: the boot parameters are judged for the CPUs the user names.
TEST(BenchDoctor, CpusNamesTheCpusTheBootParametersMustCover) {
  TempDir dir("doctor_cpus");
  auto write = [&](const std::string& path, const std::string& text) {
    ASSERT_TRUE(dir.Write(path, text)) << path;
  };
  write("/proc/cmdline", "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3\n");
  write("/sys/devices/system/cpu/online", "0-3\n");
  write("/sys/devices/system/cpu/isolated", "2-3\n");
  write("/sys/devices/system/cpu/nohz_full", "2-3\n");
  for (const auto& [cpus, level] :
       std::vector<std::pair<std::string, std::string>>{{"3", "OK"}, {"1-3", "WARN"}}) {
    RunResult r = testing::Run(
        {kBench, "doctor", "--json", "--cpus=" + cpus, "--root=" + dir.path()}, seconds(10));
    const json j = json::parse(r.out);
    int seen = 0;
    for (const json& f : j["findings"]) {
      const std::string id = f["id"];
      if (id != "isolcpus" && id != "nohz_full" && id != "rcu_nocbs") continue;
      ++seen;
      EXPECT_EQ(f["level"], level) << cpus << " " << id << ": " << f["summary"];
      if (level == "WARN") {
        EXPECT_NE(f["fix"].get<std::string>().find(id + "=1-3"), std::string::npos) << f["fix"];
      }
    }
    EXPECT_EQ(seen, 3) << r.out;
  }
  RunResult bad =
      testing::Run({kBench, "doctor", "--cpus=two", "--root=" + dir.path()}, seconds(10));
  EXPECT_EQ(bad.status, kExitUsage);
  EXPECT_NE(bad.err.find("--cpus='two'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace rtloop::bench
