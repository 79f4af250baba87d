// Helpers for rtloop-bench's tests: run the binary, find a run's processes, validate result.json
// against result.schema.json (the subset of JSON Schema the schema uses: type, enum, required,
// properties, items).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace rtloop::bench::testing {

// A child process with stdout and stderr in files.
class Child {
 public:
  // Starts `argv` (argv[0] a path); `env` entries ("K=V") are added to the environment.
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~Child();  // kills (SIGKILL) and reaps it if still running
  pid_t pid() const { return pid_; }
  // Exit status (128+signal when killed), or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool Running();
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string out_, err_;
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
