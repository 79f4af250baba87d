// The examples as a user runs them: rtloop-quickstart (the README's loop example) for ~2 s without
// real-time privileges, read by a C++ client and by the README's Python client, stopped with
// SIGTERM; rtloop-two-tasks for a second. Each program is a child process on loopback with a free
// port, killed if it outlives its test.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/telemetry/client.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A program in a child process with stdout and stderr in files; SIGKILLed at destruction if it
// still runs. `drop_rt` removes CAP_SYS_NICE from its bounding set and zeroes its rtprio limit,
// so it runs as a user without real-time privileges would (root keeps the other capabilities).
class Child {
 public:
  Child(const std::vector<std::string>& argv, bool drop_rt) : dir_(MakeDir()) {
    std::fflush(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      if (drop_rt) {
        prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0);
        const rlimit zero{0, 0};
        setrlimit(RLIMIT_RTPRIO, &zero);
      }
      if (!std::freopen(out().c_str(), "w", stdout) || !std::freopen(err().c_str(), "w", stderr)) {
        _exit(127);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && kill(pid_, SIGKILL) == 0) waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The address after "serving on " on its stderr, waiting up to 10 s; "" if none came.
  std::string WaitForAddress() const {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      const std::string e = ReadFile(err());
      if (const std::size_t at = e.find("serving on "); at != std::string::npos) {
        const std::size_t end = e.find(' ', at + 11);
        if (end != std::string::npos) return e.substr(at + 11, end - at - 11);
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return {};
  }
  // Sends `sig` (if given) and waits up to 20 s for the exit; the exit status, or -1.
  int Stop(int sig) {
    if (sig != 0) kill(pid_, sig);
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    int status = 0;
    while (Clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return -1;
  }
  std::string out() const { return (dir_ / "out").string(); }
  std::string err() const { return (dir_ / "err").string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  static std::filesystem::path MakeDir() {
    static int n = 0;
    std::filesystem::path d =
        std::filesystem::temp_directory_path() /
        ("rtloop_examples_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(d);
    return d;
  }
  std::filesystem::path dir_;
  pid_t pid_ = 0;
};

TEST(ExamplesTest, QuickstartServesItsTaskAndSamplesWithoutRtPrivilegesAndReportsAtTheEnd) {
  const auto start = Clock::now();
  Child child({RTLOOP_QUICKSTART_PATH, "127.0.0.1:0"}, /*drop_rt=*/true);
  const std::string address = child.WaitForAddress();
  ASSERT_FALSE(address.empty()) << ReadFile(child.err());
  ClientConfig cc;
  cc.address = address;
  Result<std::unique_ptr<Client>> client = Client::Create(cc);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<v1::ListTasksResponse> tasks = (*client)->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->tasks_size(), 1);
  EXPECT_EQ(tasks->tasks(0).task().name(), "position");
  EXPECT_EQ(tasks->tasks(0).task().period_ns(), 500'000);
  EXPECT_TRUE(tasks->tasks(0).non_rt_fallback()) << "the child had no RT privilege";
  // Samples of the task arrive in order, each batch of the one task.
  std::unique_ptr<SampleStream> stream = (*client)->StreamSamples({});
  ASSERT_TRUE(stream->WaitForReady());
  std::uint64_t samples = 0;
  std::uint64_t next_seq = 0;
  v1::StreamSamplesResponse r;
  while (samples < 1000 && Clock::now() - start < std::chrono::seconds(15) && stream->Next(&r)) {
    EXPECT_EQ(r.batch().task_id(), 0u);
    EXPECT_GE(r.batch().first_seq(), next_seq);
    next_seq = r.batch().first_seq() + static_cast<std::uint64_t>(r.batch().latency_ns_size());
    samples += static_cast<std::uint64_t>(r.batch().latency_ns_size());
  }
  EXPECT_GE(samples, 1000u);
  stream->Cancel();
  std::this_thread::sleep_until(start + std::chrono::seconds(2));  // run ~2 s in all
  EXPECT_EQ(child.Stop(SIGTERM), 0) << ReadFile(child.err());
  const std::string report = ReadFile(child.out());
  EXPECT_NE(report.find("position"), std::string::npos) << report;
  EXPECT_NE(report.find("wake-up latency (us)"), std::string::npos) << report;
  EXPECT_NE(report.find("other!"), std::string::npos) << "the fallback shows: " << report;
  const std::string err = ReadFile(child.err());
  EXPECT_NE(err.find("SCHED_OTHER (NOT real-time)"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGTERM: stopping"), std::string::npos) << err;
}

// A python3 that has Debian's python3-grpcio and python3-grpc-tools; "" if none.
std::string Python() {
  for (const char* p : {"/usr/bin/python3", "python3"}) {
    const std::string cmd = std::string(p) + " -c 'import grpc, grpc_tools' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return p;
  }
  return {};
}

// The README's fenced block that follows `marker` (the line after it starts with ```).
std::string ReadmeBlock(const std::string& marker) {
  const std::string readme = ReadFile(RTLOOP_README_PATH);
  std::size_t at = readme.find(marker);
  if (at == std::string::npos) return {};
  at = readme.find("```", at);
  if (at == std::string::npos) return {};
  at = readme.find('\n', at) + 1;
  const std::size_t end = readme.find("```", at);
  if (end == std::string::npos) return {};
  std::string block = readme.substr(at, end - at);
  while (!block.empty() && (block.back() == '\n' || block.back() == ' ')) block.pop_back();
  return block;
}

TEST(ExamplesTest, TheReadmesPythonClientListsTheTasksAndStreamsTheirSamples) {
  const std::string python = Python();
  if (python.empty()) GTEST_SKIP() << "needs python3-grpcio and python3-grpc-tools";
  const std::string protoc = ReadmeBlock("<!-- python-protoc -->");
  const std::string client = ReadmeBlock("<!-- python-client -->");
  ASSERT_NE(protoc.find("grpc_tools.protoc"), std::string::npos) << "README protoc line missing";
  ASSERT_NE(client.find("StreamSamples"), std::string::npos) << "README Python client missing";

  Child child({RTLOOP_QUICKSTART_PATH, "127.0.0.1:0"}, /*drop_rt=*/true);
  const std::string address = child.WaitForAddress();
  ASSERT_FALSE(address.empty()) << ReadFile(child.err());
  const std::filesystem::path dir = child.dir() / "py";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "client.py") << client;
  // The README's commands as written, run next to a link to this tree's proto/, with `python3`
  // the interpreter found above.
  std::filesystem::create_directory_symlink(RTLOOP_PROTO_DIR, dir / "proto");
  const std::string run = "cd '" + dir.string() + "' && python3() { " + python + " \"$@\"; } && " +
                          protoc + " && timeout 30 " + python + " client.py " + address +
                          " > out.txt 2>&1";
  const int rc = std::system(run.c_str());
  const std::string out = ReadFile((dir / "out.txt").string());
  EXPECT_EQ(rc, 0) << run << "\n" << out;
  EXPECT_NE(out.find("task 0 position"), std::string::npos) << out;
  EXPECT_NE(out.find("samples from seq"), std::string::npos) << out;
  EXPECT_EQ(child.Stop(SIGINT), 0) << ReadFile(child.err());
}

TEST(ExamplesTest, TwoTasksRunsForItsDurationAndPrintsTheStandardReport) {
  Child child({RTLOOP_TWO_TASKS_PATH, "--duration=1", "--telemetry=127.0.0.1:0"},
              /*drop_rt=*/false);
  EXPECT_EQ(child.Stop(0), 0) << ReadFile(child.err());
  const std::string out = ReadFile(child.out());
  for (const char* part : {"control", "logger", "wake-up latency (us)", "execution time (us)",
                           "period jitter (us)", "logger saw control output"}) {
    EXPECT_NE(out.find(part), std::string::npos) << part << " in:\n" << out;
  }
  Child bad({RTLOOP_TWO_TASKS_PATH, "--duration=-3"}, /*drop_rt=*/false);
  EXPECT_EQ(bad.Stop(0), 2);
  EXPECT_NE(ReadFile(bad.err()).find("bad --duration"), std::string::npos);
}

}  // namespace
}  // namespace rtloop::telemetry
