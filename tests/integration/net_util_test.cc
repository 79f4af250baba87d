// Unit tests of the gRPC server's helpers that need no network.
#include "net_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rtloop::telemetry::internal {
namespace {

TEST(NetUtil, ParseAddressAcceptsHostPortForms) {
  Result<HostPort> a = ParseAddress("127.0.0.1:50051");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 50051);
  Result<HostPort> b = ParseAddress("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  EXPECT_EQ(FormatAddress("::1", 7), "[::1]:7");
  EXPECT_EQ(FormatAddress("localhost", 7), "localhost:7");
}

TEST(NetUtil, ParseAddressRejectsBadFormsWithAMessage) {
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", ":80", "host:-1", "host:65536",
                          "host:12ab", "::1:80", "[::1]80", "[::1"}) {
    Result<HostPort> r = ParseAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("HOST:PORT"), std::string::npos);
  }
}

TEST(NetUtil, LoopbackHostsAreRecognised) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("192.168.1.10"));
}

TEST(NetUtil, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
}

TEST(NetUtil, TokenFileIsTrimmedAndValidated) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rtloop_netutil_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "token").string();
  std::ofstream(path) << "  tok3n\n";
  Result<std::string> t = ReadTokenFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "tok3n");
  std::ofstream(path, std::ios::trunc) << "\n \n";
  EXPECT_EQ(ReadTokenFile(path).status().code(), StatusCode::kInvalidArgument);
  std::ofstream(path, std::ios::trunc) << "two words\n";
  EXPECT_EQ(ReadTokenFile(path).status().code(), StatusCode::kInvalidArgument);
  Result<std::string> missing = ReadTokenFile((dir / "missing").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(NetUtil, ProbeBindReportsAPortInUse) {
  // Hold a port with a plain listening socket, then probe it.
  Result<HostPort> hp = ParseAddress("127.0.0.1:0");
  ASSERT_TRUE(hp.ok());
  EXPECT_TRUE(ProbeBind(*hp).ok());
  HostPort foreign{"192.0.2.1", 0};
  Status s = ProbeBind(foreign);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("192.0.2.1"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rtloop::telemetry::internal
