// ReadInputFile / ReadTokenFile: bounded, non-blocking reading of token, TLS and config files.
#include "rtloop/telemetry/input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "file_test_util.h"

namespace rtloop::telemetry {
namespace {

namespace fs = std::filesystem;
using rtloop::testing::WithoutBlocking;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("rtloop_in_" + std::to_string(getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string dir_;
};

TEST_F(InputFileTest, ReadsARegularFile) {
  Result<std::string> r = ReadInputFile(Write("ca.pem", "-----BEGIN CERTIFICATE-----\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "-----BEGIN CERTIFICATE-----\n");
}

TEST_F(InputFileTest, DirectoriesFifosAndDevicesAreRefusedByWhatTheyAreWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string path;
    std::string why;
  };
  std::vector<Case> cases = {{dir_, "is a directory"}, {fifo, "named pipe (FIFO)"}};
  if (fs::exists("/dev/zero")) cases.push_back({"/dev/zero", "character device"});
  for (const Case& c : cases) {
    Result<std::string> r =
        WithoutBlocking([&] { return ReadInputFile(c.path, {.what = "TLS CA file"}); }, fifo);
    ASSERT_FALSE(r.ok()) << c.path;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("TLS CA file '" + c.path + "'"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
}

TEST_F(InputFileTest, FilesBeyondTheLimitAreRefusedWithoutReadingThem) {
  const std::string big = Write("big", std::string(5000, 'a'));
  Result<std::string> r = ReadInputFile(big, {.what = "config file", .max_bytes = 4096});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("5000 bytes"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("4096"), std::string::npos) << r.status().message();
  // A file whose size the kernel does not report (procfs says 0) is bounded by reading.
  if (const char* emulator = std::getenv("RTLOOP_TEST_EMULATED")) {  // cmake/dev.sh test --arch
    GTEST_SKIP() << "under " << emulator << ": /proc/self/maps is the emulator's own file, whose "
                 << "size is known (the checks above ran)";
  }
  if (fs::exists("/proc/self/maps")) {
    Result<std::string> proc = ReadInputFile("/proc/self/maps", {.max_bytes = 16});
    ASSERT_FALSE(proc.ok());
    EXPECT_EQ(proc.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(proc.status().message().find("larger than 16 bytes"), std::string::npos);
  }
}

TEST_F(InputFileTest, EmptyFilesAreRefusedUnlessAllowed) {
  const std::string empty = Write("empty", "");
  Result<std::string> r = ReadInputFile(empty, {.what = "TLS key"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is empty"), std::string::npos) << r.status().message();
  EXPECT_TRUE(ReadInputFile(empty, {.allow_empty = true}).ok());
  Result<std::string> missing = ReadInputFile(dir_ + "/missing", {.what = "TLS key"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
}

TEST_F(InputFileTest, TokenFileIsTrimmedAndEachProblemIsNamed) {
  Result<std::string> t = ReadTokenFile(Write("token", "  tok3n\r\n"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "tok3n");
  struct Case {
    std::string content;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"\n \n", "is empty"},
      {"two words\n", "whitespace (0x20) at byte 3"},
      {std::string("nul\0byte", 8), "control character (0x00) at byte 3"},
      {"caf\xc3\xa9", "non-ASCII byte (0xc3) at byte 3"},
      {std::string(kMaxBearerTokenBytes + 1, 'a'), "4097 characters long; at most 4096"},
  };
  for (const Case& c : cases) {
    Result<std::string> r = ReadTokenFile(Write("bad", c.content));
    ASSERT_FALSE(r.ok()) << c.why;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(ReadTokenFile(Write("max", std::string(kMaxBearerTokenBytes, 'a'))).ok());
}

TEST_F(InputFileTest, TokenFileThatIsADirectoryOrHugeSaysSo) {
  Result<std::string> dir = ReadTokenFile(dir_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos)
      << dir.status().message();
  Result<std::string> huge = ReadTokenFile(Write("huge", std::string(10u << 20, 'a')));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("10485760 bytes"), std::string::npos)
      << huge.status().message();
  if (fs::exists("/dev/zero")) {
    Result<std::string> zero = ReadTokenFile("/dev/zero");
    ASSERT_FALSE(zero.ok());
    EXPECT_NE(zero.status().message().find("character device"), std::string::npos);
  }
}

}  // namespace
}  // namespace rtloop::telemetry
