// OutputFile / OutputFifo: the file layer every result of rtloop's tools goes through.
#include "rtloop/telemetry/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "file_test_util.h"

namespace rtloop::telemetry {
namespace {

namespace fs = std::filesystem;
using rtloop::testing::FileSizeLimit;
using rtloop::testing::WithoutBlocking;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("rtloop_out_" + std::to_string(getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(OutputFileTest, NewFileAppearsOnlyWhenCommitted) {
  const std::string path = Path("out.json");
  Result<OutputFile> file = OutputFile::Open(path, {.what = "--json"});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(Exists(path + ".partial"));
  EXPECT_FALSE(Exists(path)) << "readers never see a half-written file";
  ASSERT_TRUE(file->Write("{\n").ok());
  ASSERT_TRUE(file->Write("}\n").ok());
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Slurp(path), "{\n}\n");
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_EQ(file->current_path(), file->target().final_path);
}

TEST_F(OutputFileTest, ExistingFileKeepsItsContentUntilCommitAndItsMode) {
  const std::string path = Path("hist.txt");
  std::ofstream(path) << "old\n";
  ::chmod(path.c_str(), 0600);
  Result<OutputFile> file = OutputFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE(file->Write("new\n").ok());
  EXPECT_EQ(Slurp(path), "old\n");
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Slurp(path), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(OutputFileTest, DiscardAndDestructionRemoveThePartialAndLeaveTheOldFile) {
  const std::string path = Path("keep.txt");
  std::ofstream(path) << "old\n";
  {
    Result<OutputFile> file = OutputFile::Open(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->Write("half").ok());
  }  // destroyed without Commit()
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_EQ(Slurp(path), "old\n");
  Result<OutputFile> file = OutputFile::Open(path);
  ASSERT_TRUE(file.ok());
  file->Discard();
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_FALSE(file->Write("x").ok()) << "a discarded file takes no more writes";
}

TEST_F(OutputFileTest, KeepPartialLeavesWhatWasWritten) {
  const std::string path = Path("run.rtrec");
  Result<OutputFile> file = OutputFile::Open(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(file->Write("header").ok());
  EXPECT_TRUE(file->KeepPartial().ok());
  EXPECT_EQ(Slurp(path + ".partial"), "header");
  EXPECT_FALSE(Exists(path));
}

TEST_F(OutputFileTest, AFailedWriteIsAnErrorAndNothingIsLeftBehind) {
  const std::string path = Path("full.json");
  std::ofstream(path) << "previous run\n";
  Result<OutputFile> file = OutputFile::Open(path, {.what = "--json"});
  ASSERT_TRUE(file.ok());
  Status write;
  {
    const FileSizeLimit limit(4096);
    write = file->Write(std::string(10000, 'x'));
  }
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.message().find("--json"), std::string::npos) << write.message();
  EXPECT_NE(write.message().find("full.json.partial"), std::string::npos) << write.message();
  EXPECT_NE(write.message().find("File too large"), std::string::npos) << write.message();
  EXPECT_FALSE(file->Write("more").ok()) << "the first error sticks";
  const Status commit = file->Commit();
  EXPECT_EQ(commit.message(), write.message());
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_EQ(Slurp(path), "previous run\n") << "a failed output never replaces a good one";
}

TEST_F(OutputFileTest, NonRegularTargetsAreRefusedBeforeAnythingIsCreated) {
  const std::string fifo = Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string sub = Path("sub");
  fs::create_directories(sub);
  const std::string file = Path("plain");
  std::ofstream(file) << "x";
  const std::string dangling = Path("dangling");
  ASSERT_EQ(::symlink((dir_ + "/nowhere").c_str(), dangling.c_str()), 0);
  struct Case {
    std::string path;
    std::string why;
  };
  std::vector<Case> cases = {
      {fifo, "named pipe (FIFO)"},
      {sub, "is a directory"},
      {sub + "/", "is a directory"},
      {dir_ + "/missing/out.json", "directory '" + dir_ + "/missing' does not exist"},
      {file + "/out.json", "'" + file + "' is a file, not a directory"},
      {dangling, "symbolic link to a file that does not exist"},
      {Path(std::string(300, 'n')), "300 bytes long"},
      {Path(std::string(250, 'n')), "'.partial'"},
  };
  if (Exists("/dev/full")) cases.push_back({"/dev/full", "character device"});
  if (Exists("/proc/version")) cases.push_back({"/proc/version", "kernel interface"});
  for (const Case& c : cases) {
    const Result<OutputTarget> t =
        WithoutBlocking([&] { return ResolveOutputPath(c.path, {.what = "--json"}); }, fifo);
    ASSERT_FALSE(t.ok()) << c.path;
    EXPECT_NE(t.status().message().find("--json '"), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.why), std::string::npos) << t.status().message();
    EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(Exists(fifo + ".partial"));
  EXPECT_EQ(Slurp(file), "x");
}

TEST_F(OutputFileTest, APartialThatIsNotARegularFileIsRefusedWithoutBlocking) {
  const std::string path = Path("out.json");
  const std::string partial = path + ".partial";
  Result<OutputTarget> target = ResolveOutputPath(path);
  ASSERT_TRUE(target.ok());
  ASSERT_EQ(::mkfifo(partial.c_str(), 0600), 0);  // planted after the check
  EXPECT_FALSE(ResolveOutputPath(path).ok());
  Result<OutputFile> file = WithoutBlocking([&] { return OutputFile::Open(*target); }, partial);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a regular file"), std::string::npos)
      << file.status().message();
}

TEST_F(OutputFileTest, ControlCharactersInANameKeepTheMessageOnOneLine) {
  const Result<OutputTarget> t = ResolveOutputPath(dir_ + "/no\ndir/x", {.what = "--json"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("no\\ndir"), std::string::npos) << t.status().message();
}

TEST_F(OutputFileTest, DashMeansStdoutAndDevNullIsWrittenDirectly) {
  for (const char* p : {"-", "/dev/stdout"}) {
    Result<OutputTarget> t = ResolveOutputPath(p);
    ASSERT_TRUE(t.ok()) << p;
    EXPECT_EQ(t->kind, OutputKind::kStdout);
  }
  Result<OutputTarget> binary = ResolveOutputPath("-", {.what = "--record", .allow_stdout = false});
  ASSERT_FALSE(binary.ok());
  EXPECT_NE(binary.status().message().find("standard output"), std::string::npos);
  EXPECT_FALSE(Exists("-"));
  if (!Exists("/dev/null")) GTEST_SKIP() << "needs /dev/null";
  Result<OutputFile> null = OutputFile::Open("/dev/null");
  ASSERT_TRUE(null.ok()) << null.status().ToString();
  EXPECT_EQ(null->target().kind, OutputKind::kNull);
  EXPECT_TRUE(null->Write("discarded").ok());
  EXPECT_TRUE(null->Commit().ok());
  EXPECT_FALSE(Exists("/dev/null.partial"));
}

TEST_F(OutputFileTest, SameAsFindsOneFileUnderTwoNames) {
  const std::string a = Path("a.out");
  std::ofstream(a) << "a";
  const std::string link = Path("link.out");
  ASSERT_EQ(::symlink(a.c_str(), link.c_str()), 0);
  const std::string hard = Path("hard.out");
  ASSERT_EQ(::link(a.c_str(), hard.c_str()), 0);
  const auto resolve = [](const std::string& p) { return *ResolveOutputPath(p); };
  EXPECT_TRUE(resolve(a).SameAs(resolve(dir_ + "/./a.out")));
  EXPECT_TRUE(resolve(a).SameAs(resolve(link)));
  EXPECT_TRUE(resolve(a).SameAs(resolve(hard)));
  EXPECT_TRUE(resolve(Path("new"))
                  .SameAs(resolve(dir_ + "/../" + fs::path(dir_).filename().string() + "/new")));
  EXPECT_FALSE(resolve(a).SameAs(resolve(Path("b.out"))));
  EXPECT_TRUE(resolve("-").SameAs(resolve("/dev/stdout")));
  if (Exists("/dev/null")) {
    EXPECT_FALSE(resolve("/dev/null").SameAs(resolve("/dev/null")));
  }
}

TEST_F(OutputFileTest, NoOutputMayNameAnInputOrAnotherOutput) {
  const std::string conf = Path("conf.toml");
  std::ofstream(conf) << "[plc]\n";
  const std::string hard = Path("hard.toml");
  ASSERT_EQ(::link(conf.c_str(), hard.c_str()), 0);
  const std::string link = Path("link.toml");
  ASSERT_EQ(::symlink(conf.c_str(), link.c_str()), 0);
  const auto out = [](const std::string& what, const std::string& p) {
    Result<OutputTarget> t = ResolveOutputPath(p, {.what = what});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  };
  const std::vector<InputPath> inputs = {{"--config", conf}};
  // The same file under its own name, a second name, a hard link, a symbolic link.
  for (const std::string& name : {conf, dir_ + "/./conf.toml", hard, link}) {
    const Status s = CheckOutputsApart({out("--record", name)}, inputs);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("--record '" + name + "' is the same file as --config '" + conf),
              std::string::npos)
        << s.message();
  }
  EXPECT_EQ(std::ifstream(conf).get(), '[') << "nothing was written";
  // An input where the output is written while incomplete (PATH.partial).
  const std::string partial_in = Path("r.log.partial");
  std::ofstream(partial_in) << "samples";
  EXPECT_EQ(CheckOutputsApart({out("--record", Path("r.log"))}, {{"INPUT", partial_in}}).code(),
            StatusCode::kInvalidArgument);
  // Two outputs on one file; several on stdout are fine; a missing input or stdin never collides.
  EXPECT_EQ(
      CheckOutputsApart({out("--json", Path("a")), out("--histfile", Path("./a"))}, {}).code(),
      StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckOutputsApart({out("--json", "-"), out("--histfile", "-")}, {}).ok());
  EXPECT_TRUE(CheckOutputsApart({out("--record", Path("new.log"))},
                                {{"--config", Path("missing")}, {"INPUT", "-"}, {"x", ""}})
                  .ok());
  EXPECT_TRUE(CheckOutputsApart({out("--record", Path("new.log"))}, inputs).ok());
}

TEST_F(OutputFileTest, ALivePartialIsNeverTakenOver) {
  const std::string path = Path("run.json");
  Result<OutputFile> first = OutputFile::Open(path, {.what = "--json"});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->Write("first").ok());
  // A second writer (here a second open file description: flock locks conflict within one
  // process too) finds the first one's PATH.partial locked.
  Result<OutputFile> second = OutputFile::Open(path, {.what = "--json"});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("another process is writing '" + path + ".partial'"),
            std::string::npos)
      << second.status().message();
  EXPECT_EQ(Slurp(path + ".partial"), "first");
  ASSERT_TRUE(first->Commit().ok()) << first->status().ToString();
  EXPECT_EQ(Slurp(path), "first");
  // Once it is complete, the path is free again.
  Result<OutputFile> third = OutputFile::Open(path, {.what = "--json"});
  ASSERT_TRUE(third.ok()) << third.status().ToString();
}

TEST_F(OutputFileTest, AStalePartialIsKeptUnderANewNameAndReported) {
  const std::string path = Path("run.rtlog");
  std::ofstream(path + ".partial") << "samples of a killed run";
  std::ofstream(path + ".partial.stale-1") << "an older one";
  std::vector<std::string> notices;
  Result<OutputFile> file = OutputFile::Open(
      path, {.what = "--record", .notice = [&](const std::string& l) { notices.push_back(l); }});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(Slurp(path + ".partial.stale-2"), "samples of a killed run");
  EXPECT_EQ(Slurp(path + ".partial.stale-1"), "an older one");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("kept as '" + path + ".partial.stale-2'"), std::string::npos)
      << notices[0];
  ASSERT_TRUE(file->Write("new").ok());
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Slurp(path), "new");
  // KeepPartial() ends the writer: what it leaves is stale for the next run.
  Result<OutputFile> cut = OutputFile::Open(path, {.what = "--record", .notice = [](auto&) {}});
  ASSERT_TRUE(cut.ok());
  ASSERT_TRUE(cut->Write("cut").ok());
  ASSERT_TRUE(cut->KeepPartial().ok());
  Result<OutputFile> next = OutputFile::Open(path, {.what = "--record", .notice = [](auto&) {}});
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(Slurp(path + ".partial.stale-3"), "cut");
}

TEST_F(OutputFileTest, ASymlinkedOutputReplacesItsTargetAndKeepsTheLink) {
  const std::string real = Path("real.json");
  std::ofstream(real) << "old";
  const std::string link = Path("link.json");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  Result<OutputFile> file = OutputFile::Open(link);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(file->Write("new").ok());
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Slurp(real), "new");
}

TEST_F(OutputFileTest, FifoPathRefusesAnExistingFileAndLeavesItAlone) {
  const std::string file = Path("f");
  std::ofstream(file) << "hi\n";
  Result<OutputTarget> t = OutputFifo::ResolveFifoPath(file, "-F/--fifo");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("regular file"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("never deletes"), std::string::npos);
  EXPECT_EQ(Slurp(file), "hi\n");
}

TEST_F(OutputFileTest, FifoIsCreatedWrittenWithoutBlockingAndRemovedOnlyIfStillOurs) {
  const std::string path = Path("ctfifo");
  Result<OutputTarget> t = OutputFifo::ResolveFifoPath(path, "-F/--fifo");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  {
    Result<OutputFifo> fifo = OutputFifo::Create(*t);
    ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    EXPECT_FALSE(WithoutBlocking([&] { return fifo->TryWrite("no reader\n"); }, path));
    const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    EXPECT_TRUE(fifo->TryWrite("T: 0\n"));
    char buf[16] = {};
    EXPECT_EQ(::read(reader, buf, sizeof buf), 5);
    ::close(reader);
  }
  EXPECT_FALSE(Exists(path)) << "our pipe is removed";
  // An existing FIFO is replaced; a file put in its place meanwhile is not removed.
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  t = OutputFifo::ResolveFifoPath(path, "-F/--fifo");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  {
    Result<OutputFifo> fifo = OutputFifo::Create(*t);
    ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
    ASSERT_EQ(::unlink(path.c_str()), 0);
    std::ofstream(path) << "someone else's\n";
  }
  EXPECT_EQ(Slurp(path), "someone else's\n");
}

}  // namespace
}  // namespace rtloop::telemetry
