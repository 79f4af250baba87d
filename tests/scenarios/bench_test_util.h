// Helpers for rtloop-bench's tests: run the binary (a thin layer over tests/testing's
// ChildProcess), find a run's processes, validate result.json against result.schema.json (the
// subset of JSON Schema the schema uses: type, enum, required, properties, items), golden files.
//
//   RunResult r = testing::Run({kBench, "doctor", "--json"}, std::chrono::seconds(10));
//   EXPECT_EQ(r.status, 0) << r.err;
//
// Threading: one test thread. Not RT-safe (starts processes, reads /proc).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"

namespace rtloop::bench::testing {

// A child process with stdout and stderr captured (Stdout(), Stderr()) and `env` entries ("K=V")
// added to the environment: rtloop::testing::ChildProcess (tests/testing/child_process.h), which
// stops (SIGTERM, then SIGKILL) and reaps it at destruction if it still runs.
class Child : public ::rtloop::testing::ChildProcess {
 public:
  explicit Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {})
      : ChildProcess(Config(argv, env)) {}

 private:
  static ::rtloop::testing::ChildConfig Config(const std::vector<std::string>& argv,
                                               const std::vector<std::string>& env) {
    ::rtloop::testing::ChildConfig config;
    config.argv = argv;
    config.env = env;
    return config;
  }
};

struct RunResult {
  int status = -1;  // -1: timed out
  std::string out, err;
};
// Runs to completion (bounded by `timeout`).
RunResult Run(const std::vector<std::string>& argv,
              std::chrono::milliseconds timeout = std::chrono::seconds(60),
              const std::vector<std::string>& env = {});

// The process group the bench reported on stderr ("process group N"), or -1.
pid_t LoadGroupOf(const std::string& bench_stderr);
// The cgroup it reported ("cgroup /sys/fs/cgroup/..."), or "".
std::string LoadCgroupOf(const std::string& bench_stderr);
// Live (non-zombie) processes of process group `pgid`, and their command names.
std::vector<std::string> GroupMembers(pid_t pgid);
// The run's tag it reported ("tag RTLOOP_BENCH_RUN=T"), or "".
std::string RunTagOf(const std::string& bench_stderr);
// Live processes whose environment holds RTLOOP_BENCH_RUN=tag.
int TaggedProcesses(const std::string& tag);

// Kills what is left of a run's load when it goes out of scope: its process group and its cgroup
// (SIGKILL, cgroup.kill), then waits (bounded) until they are gone. For a test that kills the bench
// with its guardian and keeper: should it fail before its doctor undoes the run, nothing else
// would, and ~700 hackbench processes would run on beside every later test (a CI run lost 15
// tests that way). Nothing to do when the run was undone.
class LoadReaper {
 public:
  LoadReaper(pid_t pgid, std::string cgroup) : pgid_(pgid), cgroup_(std::move(cgroup)) {}
  ~LoadReaper();
  LoadReaper(const LoadReaper&) = delete;
  LoadReaper& operator=(const LoadReaper&) = delete;

 private:
  pid_t pgid_;
  std::string cgroup_;
};

// Empty when `value` matches `schema`; else the first mismatch with its JSON path.
std::string ValidateSchema(const nlohmann::json& value, const nlohmann::json& schema,
                           const std::string& path = "$");

// PNG signature and IHDR width/height; false when not a PNG.
bool PngSize(const std::string& path, int* width, int* height);

std::string ReadFile(const std::string& path);
// The output of a real cyclictest run kept in tests/cyclic/golden/NAME, without its first line
// (the command that made it).
std::string Golden(const std::string& name);

// Compares `actual` byte for byte with tests/scenarios/golden/NAME: "" when equal, else what
// differs (the first differing line). With RTLOOP_UPDATE_GOLDEN=1 in the environment it writes
// `actual` as the new golden file instead (after an intended change; review the diff).
std::string CheckGolden(const std::string& actual, const std::string& name);
// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  const std::string& path() const { return path_; }
  // Writes `text` to path() + `absolute` ("/proc/cmdline": a fake tree's file), making the
  // directories on the way; false when it cannot.
  bool Write(const std::string& absolute, const std::string& text) const;

 private:
  std::string path_;
};

}  // namespace rtloop::bench::testing
