// rtloop-cyclic's outputs and set-up errors end to end (the binary as a subprocess): every output
// is checked before anything is measured, a failed output is a message and exit 4 (never a
// silent exit 0), a set-up error tears down in order and leaves no file, nothing can block.
// Issue 8's items 1, 2, 4, 5, 7, 8, 10, 11, 12 and 14, one test each (or more).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cyclic_cli_fixture.h"
#include "rtloop/telemetry/sample_log_file.h"

namespace {

using rtloop::cyclic::testing::CyclicCliTest;
using rtloop::cyclic::testing::Exists;
using rtloop::cyclic::testing::Lines;
using rtloop::cyclic::testing::Outcome;
using rtloop::cyclic::testing::ReadFile;

class CyclicOutputsTest : public CyclicCliTest {
 protected:
  // The one-line message and the --help hint of a usage error; stdout empty.
  void ExpectUsageError(const Outcome& r, const std::string& what, const std::string& context) {
    EXPECT_EQ(r.exit_code, 2) << context << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << context << ": nothing measured, got " << r.out;
    const std::vector<std::string> lines = Lines(r.err);
    ASSERT_EQ(lines.size(), 2u) << context << "\n" << r.err;
    EXPECT_NE(lines[0].find(what), std::string::npos) << context << ": " << lines[0];
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // No file of the run is left in dir_ but stdout and stderr.
  void ExpectNoOtherFile(const std::string& context) {
    const std::string listing = dir_ + "/listing";  // ls output: a file of its own, excluded below
    const std::string cmd = "ls -A '" + dir_ + "' > '" + listing + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    for (const std::string& name : Lines(ReadFile(listing))) {
      if (name == "stdout" || name == "stderr" || name == "listing" || name == "keep") continue;
      ADD_FAILURE() << context << ": left behind " << name;
    }
  }
};

// A listening socket on a free loopback port, held for the test's life.
class HeldPort {
 public:
  HeldPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        listen(fd_, 4) == 0 && getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~HeldPort() {
    if (fd_ >= 0) close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return port_ != 0; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Item 1: a set-up error after the outputs were opened (the telemetry port is taken) ends in
// order: no crash (it was SIGSEGV: the sample log read the executor after it was destroyed), exit
// 1, one message, and no output file of the run left behind.
TEST_F(CyclicOutputsTest, SetUpErrorTearsDownInOrderAndLeavesNoOutputFile) {
  const HeldPort taken;
  ASSERT_TRUE(taken.ok());
  const Outcome r = Run({"-q", "-D1", "--default-system", "--telemetry=" + taken.address(),
                         "--record=" + Path("r.bin"), "--json=" + Path("r.json"), "-h", "10",
                         "--histfile=" + Path("h.txt"), "--max-over-time=" + Path("m.txt")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on " + taken.address()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  ExpectNoOtherFile("port in use");
}

// Item 12: a telemetry address that cannot be valid is a usage error found with the options
// (exit 2, nothing printed on stdout, not even the cpu_dma_latency line).
// Both servers' addresses (":PORT" is a valid one: loopback).
TEST_F(CyclicOutputsTest, BadTelemetryAddressIsAUsageErrorBeforeAnything) {
  for (const std::string option : {"--telemetry", "--metrics"}) {
    for (const std::string address : {"bogus:addr", "127.0.0.1:99999", "127.0.0.1", "[]:50051"}) {
      const Outcome r = Run({"-q", "-D1", option + "=" + address, "--record=" + Path("r.bin")});
      ExpectUsageError(r, "for " + option, address);
      ExpectNoOtherFile(address);
    }
  }
}

void AskForGrpcLog() { setenv("RTLOOP_GRPC_VERBOSE", "1", 1); }

// Item 12: gRPC's own log (a ~700-character line for a port in use) stays off stderr unless
// RTLOOP_GRPC_VERBOSE=1 asks for it.
TEST_F(CyclicOutputsTest, GrpcLogStaysOffStderrUnlessAsked) {
  const HeldPort taken;
  ASSERT_TRUE(taken.ok());
  const std::vector<std::string> args = {"-q", "-D1", "--default-system",
                                         "--telemetry=" + taken.address()};
  const Outcome quiet = Run(args);
  EXPECT_EQ(quiet.exit_code, 1) << quiet.err;
  for (const std::string& line : Lines(quiet.err)) {
    EXPECT_TRUE(line.rfind("rtloop-cyclic: ", 0) == 0 || line.rfind("WARN: ", 0) == 0) << line;
    EXPECT_LT(line.size(), 300u) << line;
  }
  const Outcome verbose = Wait(Spawn(args, &AskForGrpcLog));
  EXPECT_EQ(verbose.exit_code, 1) << verbose.err;
  EXPECT_NE(verbose.err.find("gRPC E "), std::string::npos) << verbose.err;
}

// Item 2: outputs that could block (a FIFO opens only when a reader comes) are refused before
// anything is measured; the run could not be ended by SIGTERM then.
TEST_F(CyclicOutputsTest, OutputsThatCouldBlockAreRefusedBeforeMeasuring) {
  const std::string fifo = Path("ff");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> cases = {
      {"-D3", "-t2", "-q", "--json=" + fifo},
      {"-D3", "-q", "-h", "10", "--histfile=" + fifo},
      {"-D3", "-q", "--record=" + fifo},
      {"-D3", "-q", "--max-over-time=" + fifo},
  };
  for (const auto& args : cases) {
    const auto start = std::chrono::steady_clock::now();
    const Outcome r = Run(args);
    ExpectUsageError(r, "named pipe (FIFO)", args.back());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3))
        << "refused before measuring the 3 s: " << args.back();
  }
}

// Items 4 and 14: outputs that cannot keep a result are refused with the options, each with what
// is wrong (they exited 0 with nothing on stderr, or failed only after measuring).
TEST_F(CyclicOutputsTest, OutputsThatCannotKeepAResultAreRefusedBeforeMeasuring) {
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--json=" + Path(std::string(300, 'j'))}, "300 bytes long"},
      {{"--json=" + Path("missing/out.json")}, "does not exist"},
      {{"--record=" + Path("missing/r.bin")}, "does not exist"},
  };
  if (Exists("/dev/full")) {
    cases.push_back({{"--json=/dev/full"}, "character device"});
    cases.push_back({{"-h", "10", "--histfile=/dev/full"}, "character device"});
    cases.push_back({{"--record=/dev/full"}, "character device"});
  }
  if (Exists("/proc/version")) cases.push_back({{"--json=/proc/version"}, "kernel interface"});
  if (Exists("/etc/hostname")) {
    cases.push_back(
        {{"--json=/etc/hostname/x.json"}, "'/etc/hostname' is a file, not a directory"});
  }
  for (auto& [args, why] : cases) {
    std::vector<std::string> full = args;
    full.insert(full.begin(), {"-q", "-l5", "--default-system"});
    ExpectUsageError(Run(full), why, args.back());
  }
  ExpectNoOtherFile("refused outputs");
}

// A full file system without privileges: RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG
// (SIGXFSZ ignored), as ENOSPC does on a full disk. stdout/stderr are small files: they fit.
void LimitFileSizeTo64KiB() {
  signal(SIGXFSZ, SIG_IGN);
  rlimit lim{};
  getrlimit(RLIMIT_FSIZE, &lim);
  lim.rlim_cur = 64u << 10;
  setrlimit(RLIMIT_FSIZE, &lim);
}

// Items 4 and 8: a recording that fails (full disk) keeps the tasks running, but the run says so:
// a message, exit 4, return_code 4 in the JSON; PATH never appears, PATH.partial holds what was
// recorded; a histogram file that does not fit leaves nothing at all.
TEST_F(CyclicOutputsTest, AFullDiskIsExitFourAndLeavesNoHalfFileUnderItsName) {
  const std::string rec = Path("r.bin");
  const std::string json = Path("j.json");
  const std::string hist = Path("h.txt");
  const Outcome r = Wait(Spawn({"-q", "-i200", "-l6000", "--default-system", "--record=" + rec,
                                "--json=" + json, "-h", "20000", "--histfile=" + hist},
                               &LimitFileSizeTo64KiB));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("--record"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("r.bin.partial"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--histfile"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(rec)) << "a failed recording never appears under its name";
  EXPECT_FALSE(Exists(hist)) << "nor a histogram cut short";
  EXPECT_FALSE(Exists(hist + ".partial"));
  rtloop::Result<rtloop::telemetry::SampleLogContents> partial =
      rtloop::telemetry::ReadSampleLog(rec + ".partial");
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_FALSE(partial->batches.empty()) << "what was recorded is readable";
  ASSERT_TRUE(Exists(json));
  EXPECT_NE(ReadFile(json).find("\"return_code\": 4,"), std::string::npos) << ReadFile(json);
}

// A long recording is FILE.partial until the run ends: a run killed with SIGKILL leaves it,
// readable up to the cut, and never a FILE that looks complete; a normal end renames it.
TEST_F(CyclicOutputsTest, AKilledRecordingLeavesAReadablePartialFile) {
  const std::string rec = Path("long.rtrec");
  const pid_t pid = Spawn({"-q", "-i1000", "--default-system", "--record=" + rec});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // a few 200 ms flushes
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  const Outcome killed = Wait(pid);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  EXPECT_FALSE(Exists(rec));
  rtloop::Result<rtloop::telemetry::SampleLogContents> partial =
      rtloop::telemetry::ReadSampleLog(rec + ".partial");
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_FALSE(partial->batches.empty());
  EXPECT_NE(partial->error.message().find("without a trailer"), std::string::npos)
      << partial->error.ToString();
  // The next run keeps the stale FILE.partial as FILE.partial.stale-1, says so, and ends with FILE.
  const Outcome done = Run({"-q", "-i1000", "-l20", "--default-system", "--record=" + rec});
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_TRUE(Exists(rec));
  EXPECT_FALSE(Exists(rec + ".partial"));
  EXPECT_NE(done.err.find("kept as '" + rec + ".partial.stale-1'"), std::string::npos) << done.err;
  EXPECT_TRUE(rtloop::telemetry::ReadSampleLog(rec + ".partial.stale-1").ok());
}

// Two runs started together with the same --json and --record: the second used to replace the
// first's live FILE.partial (the first then ended with exit 4, its samples lost). A live
// FILE.partial is locked by its writer: the second run is refused and the first completes.
TEST_F(CyclicOutputsTest, ASecondRunNeverTakesOverALivePartialFile) {
  const std::string json = Path("run.json");
  const std::string rec = Path("run.rtrec");
  const std::vector<std::string> args = {"-q", "-i1000", "--default-system", "--json=" + json,
                                         "--record=" + rec};
  const pid_t first = Spawn(args);
  ASSERT_TRUE(WaitUntilSetUp(first)) << "rtloop-cyclic did not set up within 10 s";
  // The second run's stdout and stderr go to a directory of their own.
  const std::string first_dir = dir_;
  dir_ = first_dir + "/second";
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  std::vector<std::string> second_args = args;
  second_args.push_back("-l20");
  const Outcome second = Run(second_args);
  dir_ = first_dir;
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("another process is writing '" + json + ".partial'"), std::string::npos)
      << second.err;
  EXPECT_TRUE(Exists(json + ".partial")) << "the first run's file is still there";
  EXPECT_TRUE(Exists(rec + ".partial"));
  ASSERT_EQ(kill(first, SIGTERM), 0);
  const Outcome r = Wait(first);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFile(json).find("\"return_code\": 0"), std::string::npos) << ReadFile(json);
  rtloop::Result<rtloop::telemetry::SampleLogContents> log = rtloop::telemetry::ReadSampleLog(rec);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE(log->error.ok()) << log->error.ToString();
  EXPECT_FALSE(log->batches.empty());
}

// --max-over-time goes through the same file layer: FILE.partial while the run goes on (its
// windows can be read there), FILE once it ended.
TEST_F(CyclicOutputsTest, MaxOverTimeIsAPartialFileUntilTheRunEnds) {
  const std::string mot = Path("mot.txt");
  const pid_t pid =
      Spawn({"-q", "-i1000", "--default-system", "--max-window=100", "--max-over-time=" + mot});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // windows written meanwhile
  EXPECT_TRUE(Exists(mot + ".partial"));
  EXPECT_FALSE(Exists(mot));
  EXPECT_NE(ReadFile(mot + ".partial").find("\n0 1 0.100 "), std::string::npos)
      << ReadFile(mot + ".partial");
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Exists(mot + ".partial"));
  const std::string text = ReadFile(mot);
  EXPECT_NE(text.find("# end\n"), std::string::npos) << text;
}

// Item 10: -F never deletes an existing file (it replaced it by the pipe, without a word).
TEST_F(CyclicOutputsTest, FifoOptionNeverDeletesAnExistingFile) {
  const std::string f = Path("keep");
  { std::ofstream(f) << "hi\n"; }
  ExpectUsageError(Run({"-q", "-l5", "--default-system", "-F", f}), "exists and is a regular file",
                   "-F on a file");
  EXPECT_EQ(ReadFile(f), "hi\n");
}

// Item 11: two outputs on one file (a name, a symlink or a hard link to it) are a usage error.
TEST_F(CyclicOutputsTest, TwoOutputsOnOneFileAreRefused) {
  const std::string x = Path("x");
  ExpectUsageError(Run({"-q", "-l5", "--json=" + x, "--record=" + x}),
                   "--json and --record both write to", "same name");
  ExpectUsageError(Run({"-q", "-l5", "--json=" + x, "--record=" + dir_ + "/./x"}), "both write to",
                   "same file, other spelling");
  ExpectUsageError(Run({"-q", "-l5", "--max-over-time=" + x, "--json=" + x}),
                   "--json and --max-over-time both write to", "--max-over-time");
  { std::ofstream(Path("keep")) << "k"; }
  ASSERT_EQ(symlink(Path("keep").c_str(), Path("link").c_str()), 0);
  ExpectUsageError(
      Run({"-q", "-l5", "-h", "5", "--histfile=" + Path("keep"), "--record=" + Path("link")}),
      "--histfile and --record both write to", "symlink");
  EXPECT_EQ(ReadFile(Path("keep")), "k");
}

// No output may name an input: --json on the --token-file (under another name) used to replace
// the token with the run's JSON.
TEST_F(CyclicOutputsTest, AnOutputOnAnInputIsRefused) {
  const std::string tok = Path("tok");
  { std::ofstream(tok) << "s3cret\n"; }
  ASSERT_EQ(link(tok.c_str(), Path("hard").c_str()), 0);
  ExpectUsageError(Run({"-q", "-l5", "--default-system", "--telemetry=127.0.0.1:0",
                        "--token-file=" + tok, "--json=" + Path("hard")}),
                   "--json '" + Path("hard") + "' is the same file as --token-file '" + tok + "'",
                   "--json on the token file");
  EXPECT_EQ(ReadFile(tok), "s3cret\n");
}

// Item 14: '-' is standard output for every option: --record refuses it (binary output, and
// stdout carries the text), never creating a file named '-'.
TEST_F(CyclicOutputsTest, DashIsStandardOutputAndNeverAFile) {
  const Outcome rec = Run({"-q", "-l5", "--record=-"});
  ExpectUsageError(rec, "standard output", "--record=-");
  EXPECT_FALSE(Exists("-"));
  const Outcome json =
      Run({"-q", "-l5", "--default-system", "--json=-", "-h", "5", "--histfile=-"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{\n", 0), 0u) << json.out;
  EXPECT_NE(json.out.find("# Histogram"), std::string::npos) << json.out;
  EXPECT_FALSE(Exists("-"));
}

// Item 14: a value holding a newline keeps the message on one line.
TEST_F(CyclicOutputsTest, ControlCharactersInAValueKeepTheMessageOnOneLine) {
  ExpectUsageError(Run({"-i", "1000\n"}), "'1000\\n' for -i/--interval", "-i $'1000\\n'");
  ExpectUsageError(Run({"--json=" + dir_ + "/no\ndir/x.json"}), "no\\ndir", "newline in a path");
}

// Item 5: an oversized --warmup is a usage error (it left no cycle to measure and gave "avg":
// -nan).
TEST_F(CyclicOutputsTest, WarmupThatLeavesNothingToMeasureIsAUsageError) {
  ExpectUsageError(Run({"--warmup=5000", "-D1", "-q", "--json=" + Path("w.json")}),
                   "--warmup=5000 leaves nothing to measure", "--warmup=5000 -D1");
  ExpectUsageError(Run({"--warmup=700", "-D1", "-t2", "-q"}), "thread 1", "second thread");
  ExpectNoOtherFile("warm-up");
}

bool IsStrictJson(const std::string& path) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return true;  // checked otherwise
  const std::string cmd =
      "python3 -c 'import json,sys; json.load(open(sys.argv[1]), "
      "parse_constant=lambda c: sys.exit(1))' '" +
      path + "'";
  return std::system(cmd.c_str()) == 0;
}

// Item 5: a run stopped before its first cycle writes strict JSON: null where there is no value.
TEST_F(CyclicOutputsTest, JsonIsStrictWhenTheRunEndsBeforeTheFirstCycle) {
  const std::string json = Path("early.json");
  // The first release is one interval (10 s) after the start: SIGTERM comes before it.
  const pid_t pid = Spawn({"-q", "-i10000000", "--default-system", "--json=" + json});
  ASSERT_TRUE(WaitUntilSetUp(pid)) << "rtloop-cyclic did not set up within 10 s";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ReadFile(json);
  EXPECT_NE(text.find("\"cycles\": 0,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"avg\": null"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_TRUE(IsStrictJson(json)) << text;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kUnderSanitizer = true;
#else
constexpr bool kUnderSanitizer = false;
#endif

void LimitAddressSpaceTo1500MB() {
  rlimit lim{1'500'000'000ull, 1'500'000'000ull};
  setrlimit(RLIMIT_AS, &lim);
}

// Item 7: a configuration that cannot get its memory is refused with the numbers and the fix
// (it aborted with an uncaught std::bad_alloc, exit 134).
TEST_F(CyclicOutputsTest, MemoryThatCannotBeHadIsRefusedWithTheNumbersAndTheFix) {
  if (kUnderSanitizer) {
    GTEST_SKIP() << "ASan and TSan reserve more address space than ulimit -v leaves (their shadow "
                    "memory): run without sanitizers";
  }
  if (const char* emulator = std::getenv("RTLOOP_TEST_EMULATED")) {  // cmake/dev.sh test --arch
    GTEST_SKIP() << "under " << emulator << ": ulimit -v limits the emulator, which reserves the "
                 << "guest's address space itself (the child hangs instead of failing to allocate)";
  }
  const Outcome r =
      Wait(Spawn({"-t64", "-h1000000", "-D1", "-q", "--default-system", "--json=" + Path("m.json")},
                 &LimitAddressSpaceTo1500MB));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("needs about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ulimit -v"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lower -h or -t"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ExpectNoOtherFile("memory refused");
}

// The exit statuses are documented in --help.
TEST_F(CyclicOutputsTest, HelpDocumentsEveryExitStatus) {
  const Outcome r = Run({"--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* line : {"  0  done", "  1  runtime error", "  2  bad command line",
                           "  3  a --fail-* bound", "  4  a result could not be written"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
  for (const char* option : {"--token-file=FILE", "--tls-cert=FILE", "--tls-key=FILE"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
}

// The server's token and TLS files are checked with the options: bounded reads that never block
// (a FIFO, a directory, a huge file); the token needs --telemetry or --metrics, TLS --telemetry.
TEST_F(CyclicOutputsTest, TokenAndTlsOptionsAreCheckedWithTheOptions) {
  const std::string fifo = Path("tokfifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  { std::ofstream(Path("tok")) << "s3cret\n"; }
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--token-file=" + Path("tok")}, "--telemetry[=ADDR] and --metrics[=ADDR]: add one"},
      {{"--tls-cert=" + Path("tok"), "--tls-key=" + Path("tok"), "--metrics=127.0.0.1:0"},
       "add --telemetry"},
      {{"--telemetry=127.0.0.1:0", "--token-file=" + fifo}, "named pipe (FIFO)"},
      {{"--telemetry=127.0.0.1:0", "--token-file=" + dir_}, "is a directory"},
      {{"--metrics=127.0.0.1:0", "--token-file=" + fifo}, "named pipe (FIFO)"},
      {{"--telemetry=127.0.0.1:0", "--tls-cert=" + Path("tok")}, "go together"},
      {{"--telemetry=127.0.0.1:0", "--tls-cert=" + fifo, "--tls-key=" + fifo}, "named pipe"},
  };
  for (const auto& [args, why] : cases) {
    std::vector<std::string> full = args;
    full.insert(full.begin(), {"-q", "-l5"});
    ExpectUsageError(Run(full), why, args.back());
  }
}

}  // namespace

// Issue 17 item 12: standard output and standard error are outputs. `-v | head -c10` used to die
// of SIGPIPE (status 141, no word) leaving /dev/shm/cyclictest<pid>; `--percentiles 2>/dev/full`
// exited 0 with the table lost. Now each is exit 4 with a message, and no status file is left.
int g_pipe[2] = {-1, -1};
void StdoutToPipe() {
  dup2(g_pipe[1], 1);
  close(g_pipe[0]);
}
void StderrToDevFull() { dup2(open("/dev/full", O_WRONLY), 2); }
void StdoutClosed() { close(1); }

TEST_F(CyclicOutputsTest, AClosedPipeOnStdoutIsExitFourAndLeavesNoStatusFile) {
  ASSERT_EQ(pipe(g_pipe), 0);
  const pid_t pid = Spawn({"-v", "-i1000", "-D20", "--default-system"}, &StdoutToPipe);
  close(g_pipe[1]);
  char head[10];
  std::size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = read(g_pipe[0], head + got, sizeof head - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(g_pipe[0]);  // as `head -c10` does
  const Outcome r = Wait(pid);
  EXPECT_EQ(got, sizeof head);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists("/dev/shm/cyclictest" + std::to_string(pid)));
}

TEST_F(CyclicOutputsTest, AFullStderrLosingThePercentileTableIsExitFour) {
  const pid_t pid =
      Spawn({"-q", "--percentiles", "-i1000", "-l200", "--default-system"}, &StderrToDevFull);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_FALSE(Exists("/dev/shm/cyclictest" + std::to_string(pid)));
}

TEST_F(CyclicOutputsTest, AClosedStdoutIsExitFourBeforeMeasuring) {
  const Outcome r = Wait(Spawn({"-q", "-i1000", "-l200", "--default-system"}, &StdoutClosed));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("standard output is closed"), std::string::npos) << r.err;
}

// --check-options (issue 17 item 10: rtloop-bench checks its measurement with it before it starts
// anything): the whole command line checked, nothing measured or created.
TEST_F(CyclicOutputsTest, CheckOptionsChecksEverythingAndCreatesNothing) {
  const std::string json = Path("j.json");
  Outcome r = Run({"-q", "-D10", "--json=" + json, "--max-window=1000", "--check-options"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(Exists(json));
  r = Run({"-q", "-D999999999999h", "--json=" + json, "--check-options"});
  ExpectUsageError(r, "duration too long", "-D beyond its range");
  r = Run({"-q", "-D10", "--max-window=99999999999", "--check-options"});
  ExpectUsageError(r, "--max-window", "a window beyond its range");
  ExpectNoOtherFile("--check-options");
}
