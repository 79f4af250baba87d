// rtloop-cyclic --explain end to end (the binary as a subprocess): the options' errors, and a run
// with a real cause: a SCHED_FIFO thread of this test, of higher priority than the measurement
// thread and on its CPU, busy for 3 ms at a time. Every late cycle must be recorded and, with the
// trace as evidence (root, tracefs), blamed on that thread by name, tid and priority.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cyclic_cli_fixture.h"
#include "measure_lock.h"
#include "spinner.h"

namespace {

using rtloop::cyclic::testing::CyclicCliTest;
using rtloop::cyclic::testing::Exists;
using rtloop::cyclic::testing::Outcome;
using rtloop::cyclic::testing::ReadFile;
using rtloop::testing::Spinner;

class CyclicExplainTest : public CyclicCliTest {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
};

TEST_F(CyclicExplainTest, ThresholdsWithoutExplainAndExplainOnAnotherOutputAreUsageErrors) {
  // Each case's exit status and whole stderr, in explain-usage-errors.txt.
  const std::vector<std::vector<std::string>> cases = {
      {"--explain-above=200"},
      {"--explain-execution-above=200"},
      {"--explain-above=0", "--explain=" + Path("x.json")},
      {"--explain=" + Path("x.json"), "--json=" + Path("x.json")},
  };
  std::string transcript;
  for (const auto& args : cases) {
    std::vector<std::string> full = {"-D1", "-q"};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome r = Run(full);
    std::string joined;
    for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
    transcript += "$ " + joined + "\n" + r.err + "exit " + std::to_string(r.exit_code) + "\n";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << joined << ": " << r.out;
  }
  EXPECT_TRUE(Golden("explain-usage-errors.txt", transcript));
  EXPECT_FALSE(Exists(Path("x.json")));
}

TEST_F(CyclicExplainTest, EveryLateCycleIsRecordedAndTheBusyThreadIsNamed) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO for the measurement and the spinner needs root";
  const rtloop::testing::MeasureLock lock(std::chrono::seconds(300));
  ASSERT_TRUE(lock.held()) << lock.why_not();
  Spinner spin(0, 95, std::chrono::microseconds(3000), std::chrono::milliseconds(150));
  if (!spin.ok()) GTEST_SKIP() << "SCHED_FIFO 95 on CPU 0 was refused";
  const std::string json = Path("explain.json");
  const Outcome r = Run(
      {"-t1", "-a0", "-p80", "-i1000", "-D3", "-q", "--explain=" + json, "--explain-above=1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Exists(json)) << r.err;
  const std::string check =
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "sys.exit(0 if d[\"version\"]==1 and d[\"recorded\"]==len(d[\"records\"]) "
      "and d[\"outliers\"]>=d[\"recorded\"] else 1)' '" +
      json + "'";
  EXPECT_EQ(std::system(check.c_str()), 0) << ReadFile(json);
  const std::string doc = ReadFile(json);
  // The outlier records and the notices: how many, and in which order, is the run's (which cycles
  // were late, what the trace caught), so these are finds.
  EXPECT_NE(r.out.find("wake-up latency above 1000 us: "), std::string::npos) << r.out;
  EXPECT_NE(doc.find("\"outlier\":\"latency\""), std::string::npos)
      << "the spinner's 3 ms bursts made late cycles: " << doc.substr(0, 2000);
  if (doc.find("\"evidence\":\"trace\"") == std::string::npos) {
    GTEST_SKIP() << "no trace evidence here (see the records' notes); the counters' own tests "
                    "cover that evidence: "
                 << r.out;
  }
  // The trace names the spinner with its tid and priority, in the JSON and in the summary (where
  // it leads the records of the windows it ran in).
  const std::string named = "\"kind\":\"thread\",\"name\":\"rtloop-spin\"";
  EXPECT_NE(doc.find(named), std::string::npos) << doc.substr(0, 3000);
  EXPECT_NE(doc.find("\"id\":" + std::to_string(spin.tid())), std::string::npos);
  EXPECT_NE(doc.find("FIFO 95"), std::string::npos);
  EXPECT_NE(r.out.find("thread rtloop-spin (tid " + std::to_string(spin.tid())), std::string::npos)
      << r.out;
}

}  // namespace
