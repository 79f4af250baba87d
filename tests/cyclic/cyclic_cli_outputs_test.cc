// rtloop-cyclic's outputs and set-up errors end to end (the binary as a subprocess): every output
// is checked before anything is measured, a failed output is a message and exit 4 (never a
// silent exit 0), a set-up error tears down in order and leaves no file, nothing can block.
// Issue 8's items 1, 2, 4, 5, 7, 8, 10, 11, 12 and 14, one test each (or more).
// Messages are checked whole against goldens (tests/cyclic/golden/e2e/): a test's usage errors
// as one transcript ("$ CASE", the stderr, "exit N") in outputs-<what>.txt.
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
using rtloop::cyclic::testing::Outcome;
using rtloop::cyclic::testing::ReadFile;
using rtloop::cyclic::testing::ReplaceAll;
using rtloop::testing::SplitLines;

// cyclictest prints an empty "histogram" object on one line: written as a filled one's first and
// last line, so that one golden ("%lines*" for the buckets a run fills) takes both forms.
std::string OneHistogramForm(const std::string& json) {
  return ReplaceAll(json, "\"histogram\": {      },", "\"histogram\": {\n      },");
}

class CyclicOutputsTest : public CyclicCliTest {
 protected:
  // A usage error: exit 2 and stdout empty; its stderr (the one-line message and the --help
  // hint) goes to transcript_, which the test matches against its golden at the end.
  void ExpectUsageError(const Outcome& r, const std::string& context) {
    EXPECT_EQ(r.exit_code, 2) << context << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << context << ": nothing measured, got " << r.out;
    transcript_ += "$ " + context + "\n" + r.err + "exit " + std::to_string(r.exit_code) + "\n";
  }
  std::string transcript_;
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // No file of the run is left in dir_ but stdout and stderr.
  void ExpectNoOtherFile(const std::string& context) {
    const std::string listing = dir_ + "/listing";  // ls output: a file of its own, excluded below
    const std::string cmd = "ls -A '" + dir_ + "' > '" + listing + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    for (const std::string& name : SplitLines(ReadFile(listing))) {
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
  EXPECT_TRUE(Golden("outputs-port-in-use.stderr.txt", ReplaceAll(r.err, taken.address(), "ADDR")));
  EXPECT_TRUE(r.out.empty()) << r.out;
  ExpectNoOtherFile("port in use");
}

// Item 12: a telemetry address that cannot be valid is a usage error found with the options
// (exit 2, nothing printed on stdout, not even the cpu_dma_latency line).
// Both servers' addresses (":PORT" is a valid one: loopback).
TEST_F(CyclicOutputsTest, BadTelemetryAddressIsAUsageErrorBeforeAnything) {
  for (const std::string option : {"--telemetry", "--metrics"}) {
    for (const std::string address : {"bogus:addr", "127.0.0.1:99999", "127.0.0.1", "[]:50051"}) {
      const Outcome r = Run({"-q", "-D1", option + "=" + address, "--record=" + Path("r.bin")});
      ExpectUsageError(r, option + "=" + address);
      ExpectNoOtherFile(address);
    }
  }
  EXPECT_TRUE(Golden("outputs-bad-address.txt", transcript_));
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
  EXPECT_TRUE(Golden("outputs-port-in-use-quiet.stderr.txt",
                     ReplaceAll(quiet.err, taken.address(), "ADDR")));
  const Outcome verbose = Wait(Spawn(args, &AskForGrpcLog));
  EXPECT_EQ(verbose.exit_code, 1) << verbose.err;
  // gRPC's own log: its text and how many lines it writes are gRPC's, not rtloop-cyclic's (a find).
  EXPECT_NE(verbose.err.find("gRPC E "), std::string::npos) << verbose.err;
}

// Item 2: outputs that could block (a FIFO opens only when a reader comes) are refused before
// anything is measured; the run could not be ended by SIGTERM then.
TEST_F(CyclicOutputsTest, OutputsThatCouldBlockAreRefusedBeforeMeasuring) {
  const std::string fifo = Path("ff");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> cases = {
      {"-D60", "-t2", "-q", "--json=" + fifo},
      {"-D60", "-q", "-h", "10", "--histfile=" + fifo},
      {"-D60", "-q", "--record=" + fifo},
      {"-D60", "-q", "--max-over-time=" + fifo},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
    const auto start = std::chrono::steady_clock::now();
    const Outcome r = Run(args);
    ExpectUsageError(r, joined);
    // Far below the 60 s a measurement would take, far above a refusal on a loaded machine.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30))
        << "refused before measuring the 60 s: " << args.back();
  }
  EXPECT_TRUE(Golden("outputs-could-block.txt", transcript_));
}

// Items 4 and 14: outputs that cannot keep a result are refused with the options, each with what
// is wrong (they exited 0 with nothing on stderr, or failed only after measuring).
TEST_F(CyclicOutputsTest, OutputsThatCannotKeepAResultAreRefusedBeforeMeasuring) {
  // Too long a name, a missing directory.
  const std::vector<std::string> cases = {
      "--json=" + Path(std::string(300, 'j')),
      "--json=" + Path("missing/out.json"),
      "--record=" + Path("missing/r.bin"),
  };
  for (const std::string& output : cases) {
    ExpectUsageError(Run({"-q", "-l5", "--default-system", output}), output);
  }
  EXPECT_TRUE(Golden("outputs-cannot-keep.txt", transcript_));
  // A character device, a kernel interface, a file as a directory: where the machine has them.
  if (Exists("/dev/full") && Exists("/proc/version") && Exists("/etc/hostname")) {
    transcript_.clear();
    const std::vector<std::vector<std::string>> system_cases = {
        {"--json=/dev/full"},     {"-h", "10", "--histfile=/dev/full"}, {"--record=/dev/full"},
        {"--json=/proc/version"}, {"--json=/etc/hostname/x.json"},
    };
    for (const auto& args : system_cases) {
      std::vector<std::string> full = args;
      full.insert(full.begin(), {"-q", "-l5", "--default-system"});
      ExpectUsageError(Run(full), args.back());
    }
    EXPECT_TRUE(Golden("outputs-cannot-keep-system-files.txt", transcript_));
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
  EXPECT_TRUE(Golden("outputs-full-disk.stderr.txt", r.err));
  EXPECT_FALSE(Exists(rec)) << "a failed recording never appears under its name";
  EXPECT_FALSE(Exists(hist)) << "nor a histogram cut short";
  EXPECT_FALSE(Exists(hist + ".partial"));
  rtloop::Result<rtloop::telemetry::SampleLogContents> partial =
      rtloop::telemetry::ReadSampleLog(rec + ".partial");
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_FALSE(partial->batches.empty()) << "what was recorded is readable";
  ASSERT_TRUE(Exists(json));
  EXPECT_TRUE(Golden("outputs-full-disk.json.txt", OneHistogramForm(ReadFile(json))))
      << "return_code 4";
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
  // The reader's message (not rtloop-cyclic's output): a find.
  EXPECT_NE(partial->error.message().find("without a trailer"), std::string::npos)
      << partial->error.ToString();
  // The next run keeps the stale FILE.partial as FILE.partial.stale-1, says so, and ends with FILE.
  const Outcome done = Run({"-q", "-i1000", "-l20", "--default-system", "--record=" + rec});
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_TRUE(Exists(rec));
  EXPECT_FALSE(Exists(rec + ".partial"));
  EXPECT_TRUE(Golden("outputs-stale-partial.stderr.txt", done.err));
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
  EXPECT_TRUE(Golden("outputs-second-run.stderr.txt", second.err));
  EXPECT_TRUE(Exists(json + ".partial")) << "the first run's file is still there";
  EXPECT_TRUE(Exists(rec + ".partial"));
  ASSERT_EQ(kill(first, SIGTERM), 0);
  const Outcome r = Wait(first);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Golden("outputs-first-run.json.txt", ReadFile(json))) << "return_code 0";
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
  // The windows written so far: how many is the run's ("%lines").
  EXPECT_TRUE(Golden("outputs-max-over-time.partial.txt", ReadFile(mot + ".partial")));
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const Outcome r = Wait(pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Exists(mot + ".partial"));
  EXPECT_TRUE(Golden("outputs-max-over-time.txt", ReadFile(mot))) << "ends with # end";
}

// Item 10: -F never deletes an existing file (it replaced it by the pipe, without a word).
TEST_F(CyclicOutputsTest, FifoOptionNeverDeletesAnExistingFile) {
  const std::string f = Path("keep");
  { std::ofstream(f) << "hi\n"; }
  ExpectUsageError(Run({"-q", "-l5", "--default-system", "-F", f}), "-F on a file");
  EXPECT_TRUE(Golden("outputs-fifo-on-a-file.txt", transcript_));
  EXPECT_EQ(ReadFile(f), "hi\n");
}

// Item 11: two outputs on one file (a name, a symlink or a hard link to it) are a usage error.
TEST_F(CyclicOutputsTest, TwoOutputsOnOneFileAreRefused) {
  const std::string x = Path("x");
  ExpectUsageError(Run({"-q", "-l5", "--json=" + x, "--record=" + x}), "same name");
  ExpectUsageError(Run({"-q", "-l5", "--json=" + x, "--record=" + dir_ + "/./x"}),
                   "same file, other spelling");
  ExpectUsageError(Run({"-q", "-l5", "--max-over-time=" + x, "--json=" + x}), "--max-over-time");
  { std::ofstream(Path("keep")) << "k"; }
  ASSERT_EQ(symlink(Path("keep").c_str(), Path("link").c_str()), 0);
  ExpectUsageError(
      Run({"-q", "-l5", "-h", "5", "--histfile=" + Path("keep"), "--record=" + Path("link")}),
      "symlink");
  EXPECT_TRUE(Golden("outputs-one-file-twice.txt", transcript_));
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
                   "--json on the token file");
  EXPECT_TRUE(Golden("outputs-output-on-input.txt", transcript_));
  EXPECT_EQ(ReadFile(tok), "s3cret\n");
}

// Item 14: '-' is standard output for every option: --record refuses it (binary output, and
// stdout carries the text), never creating a file named '-'.
TEST_F(CyclicOutputsTest, DashIsStandardOutputAndNeverAFile) {
  const Outcome rec = Run({"-q", "-l5", "--record=-"});
  ExpectUsageError(rec, "--record=-");
  EXPECT_TRUE(Golden("outputs-record-dash.txt", transcript_));
  EXPECT_FALSE(Exists("-"));
  const Outcome json =
      Run({"-q", "-l5", "--default-system", "--json=-", "-h", "5", "--histfile=-"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(Golden("outputs-json-and-histfile-dash.stdout.txt", OneHistogramForm(json.out)));
  EXPECT_FALSE(Exists("-"));
}

// Item 14: a value holding a newline keeps the message on one line.
TEST_F(CyclicOutputsTest, ControlCharactersInAValueKeepTheMessageOnOneLine) {
  ExpectUsageError(Run({"-i", "1000\n"}), "-i $'1000\\n'");
  ExpectUsageError(Run({"--json=" + dir_ + "/no\ndir/x.json"}), "newline in a path");
  EXPECT_TRUE(Golden("outputs-control-characters.txt", transcript_)) << "one line each";
}

// Item 5: an oversized --warmup is a usage error (it left no cycle to measure and gave "avg":
// -nan).
TEST_F(CyclicOutputsTest, WarmupThatLeavesNothingToMeasureIsAUsageError) {
  ExpectUsageError(Run({"--warmup=5000", "-D1", "-q", "--json=" + Path("w.json")}),
                   "--warmup=5000 -D1");
  ExpectUsageError(Run({"--warmup=700", "-D1", "-t2", "-q"}), "--warmup=700 -D1 -t2: thread 1");
  EXPECT_TRUE(Golden("outputs-warmup.txt", transcript_));
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
  EXPECT_TRUE(Golden("outputs-early.json.txt", text)) << "cycles 0, min/max/avg null, no nan";
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
  EXPECT_TRUE(Golden("outputs-memory.stderr.txt", r.err))
      << "needs about, ulimit -v, lower -h or -t";
  EXPECT_TRUE(r.out.empty()) << r.out;
  ExpectNoOtherFile("memory refused");
}

// The exit statuses are documented in --help.
TEST_F(CyclicOutputsTest, HelpDocumentsEveryExitStatus) {
  const Outcome r = Run({"--help"});
  ASSERT_EQ(r.exit_code, 0);
  // The exit statuses 0 to 4 and the token and TLS options are in the whole text.
  EXPECT_TRUE(Golden("help.stdout.txt", r.out));
}

// The server's token and TLS files are checked with the options: bounded reads that never block
// (a FIFO, a directory, a huge file); the token needs --telemetry or --metrics, TLS --telemetry.
TEST_F(CyclicOutputsTest, TokenAndTlsOptionsAreCheckedWithTheOptions) {
  const std::string fifo = Path("tokfifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  { std::ofstream(Path("tok")) << "s3cret\n"; }
  const std::vector<std::vector<std::string>> cases = {
      {"--token-file=" + Path("tok")},
      {"--tls-cert=" + Path("tok"), "--tls-key=" + Path("tok"), "--metrics=127.0.0.1:0"},
      {"--telemetry=127.0.0.1:0", "--token-file=" + fifo},
      {"--telemetry=127.0.0.1:0", "--token-file=" + dir_},
      {"--metrics=127.0.0.1:0", "--token-file=" + fifo},
      {"--telemetry=127.0.0.1:0", "--tls-cert=" + Path("tok")},
      {"--telemetry=127.0.0.1:0", "--tls-cert=" + fifo, "--tls-key=" + fifo},
  };
  for (const auto& args : cases) {
    std::vector<std::string> full = args;
    full.insert(full.begin(), {"-q", "-l5"});
    std::string joined;
    for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
    ExpectUsageError(Run(full), joined);
  }
  EXPECT_TRUE(Golden("outputs-token-and-tls.txt", transcript_));
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
  EXPECT_TRUE(Golden("outputs-closed-pipe.stderr.txt", r.err));
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
  EXPECT_TRUE(Golden("outputs-closed-stdout.stderr.txt", r.err));
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
  ExpectUsageError(r, "-D beyond its range");
  r = Run({"-q", "-D10", "--max-window=99999999999", "--check-options"});
  ExpectUsageError(r, "a window beyond its range");
  EXPECT_TRUE(Golden("outputs-check-options.txt", transcript_));
  ExpectNoOtherFile("--check-options");
}
