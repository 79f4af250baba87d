// CyclicCliTest: the fixture of the rtloop-cyclic end-to-end tests, a thin layer over
// rtloop::testing::ChildProcess (tests/testing/child_process.h) that runs the binary with its
// stdout and stderr in files of a scratch directory, with a bounded wait. Shared by the test files
// of tests/cyclic that run the binary.
//
//   TEST_F(CyclicCliTest, Something) {
//     const Outcome r = Run({"-q", "-l5", "--default-system"});
//     EXPECT_EQ(r.exit_code, 0) << r.err;
//     EXPECT_TRUE(Golden("quiet-l5.stdout.txt", r.out));  // tests/cyclic/golden/e2e/...
//   }
//
// Golden() checks a whole output against a golden file with placeholders for what the run
// measures (tests/testing/golden_lines.h; tests/cyclic/golden/e2e/README.md says how to write and
// regenerate one). The binary's path is written BIN and the test's scratch directory DIR.
//
// Threading: the test's thread only. Not RT-safe (starts processes).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "golden_lines.h"
#include "test_paths.h"

namespace rtloop::cyclic::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// `text` with every `from` replaced by `to`.
inline std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

// `text` without the note a sanitizer build of the binary prints when asked to lock memory
// (framework/src/process_setup.cc): the build's line, not the run's, so the goldens leave it out.
// The tests are built with the binary's flags: in any other build the line stays, and a golden
// that does not expect it fails.
inline std::string WithoutSanitizerNote(std::string text) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static const std::string kNote = "rtloop: note: lock_memory ignored in a sanitizer build";
  for (std::size_t at = text.find(kNote); at != std::string::npos; at = text.find(kNote, at)) {
    if (at != 0 && text[at - 1] != '\n') {
      at += kNote.size();
      continue;
    }
    const std::size_t eol = text.find('\n', at);
    text.erase(at, eol == std::string::npos ? std::string::npos : eol + 1 - at);
  }
#endif
  return text;
}

// `actual` against tests/cyclic/golden/e2e/<name>: success, or the matcher's report (the first
// line that differs, its pattern, and the whole output).
inline ::testing::AssertionResult MatchesGolden(const std::string& name,
                                                const std::string& actual) {
  const std::string why = rtloop::testing::MatchGoldenFile(
      rtloop::testing::SourcePath("tests/cyclic/golden/e2e") + "/" + name,
      WithoutSanitizerNote(actual));
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

class CyclicCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rtloop-cyclic-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    children_.clear();  // stops (SIGTERM, then SIGKILL) and reaps any still running
    const std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  // Starts the binary with `args`; stdout/stderr go to files in dir_. `before_exec` runs in the
  // child (e.g. to drop privileges). The pid (also when it could not start: Wait() says why).
  pid_t Spawn(const std::vector<std::string>& args, void (*before_exec)() = nullptr) {
    rtloop::testing::ChildConfig config;
    config.argv.push_back(rtloop::testing::TargetFile("rtloop-cyclic"));
    config.argv.insert(config.argv.end(), args.begin(), args.end());
    config.stdout_path = dir_ + "/stdout";
    config.stderr_path = dir_ + "/stderr";
    config.before_exec = before_exec;
    auto child = std::make_unique<rtloop::testing::ChildProcess>(std::move(config));
    const pid_t pid = child->started() ? child->pid() : --unstarted_;
    children_[pid] = std::move(child);
    return pid;
  }

  // Waits (bounded: a hang fails the test instead of blocking CI) for the child `pid` of Spawn();
  // exit code 127 with the reason as its stderr when it could not start.
  Outcome Wait(pid_t pid) {
    Outcome r;
    const auto found = children_.find(pid);
    if (found == children_.end()) {
      ADD_FAILURE() << "no child " << pid << " of Spawn()";
      return r;
    }
    rtloop::testing::ChildProcess& child = *found->second;
    if (!child.started()) {
      r.exit_code = 127;
      r.err = child.error();
      return r;
    }
    std::optional<int> status = child.Wait(std::chrono::seconds(20));
    if (!status) {
      child.Signal(SIGKILL);
      status = child.Stop();
      ADD_FAILURE() << "rtloop-cyclic did not finish within 20 s";
    }
    r.exit_code = status.value_or(-1);
    r.out = child.Stdout();
    r.err = child.Stderr();
    return r;
  }

  Outcome Run(const std::vector<std::string>& args) { return Wait(Spawn(args)); }

  // MatchesGolden() with the binary's path written BIN and the scratch directory DIR (the build
  // tree's and a random name).
  ::testing::AssertionResult Golden(const std::string& name, const std::string& actual) const {
    return MatchesGolden(
        name, ReplaceAll(ReplaceAll(actual, rtloop::testing::TargetFile("rtloop-cyclic"), "BIN"),
                         dir_, "DIR"));
  }

  // Waits (bounded) until rtloop-cyclic `pid` has set up: its SIGUSR2 status file
  // /dev/shm/cyclictest<pid> exists, which it creates after blocking SIGINT/SIGTERM/SIGUSR1/2 for
  // its main loop. From then on a signal is taken by the main loop instead of killing the process,
  // however slowly the binary started (a fixed sleep is not enough on a loaded CI machine).
  static bool WaitUntilSetUp(pid_t pid) {
    const std::string marker = "/dev/shm/cyclictest" + std::to_string(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Exists(marker)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::string dir_;

 private:
  std::map<pid_t, std::unique_ptr<rtloop::testing::ChildProcess>> children_;
  pid_t unstarted_ = 0;  // negative keys of children that could not start
};

}  // namespace rtloop::cyclic::testing
