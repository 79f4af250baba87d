// Unit tests of the gRPC server's helpers that need no network.
#include "net_util.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "rtloop/telemetry/input_file.h"

namespace rtloop::telemetry::internal {
namespace {

TEST(NetUtil, ParseAddressAcceptsHostPortForms) {
  Result<HostPort> a = ParseAddress("127.0.0.1:50051", AddressRole::kListen);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 50051);
  Result<HostPort> b = ParseAddress("[::1]:0", AddressRole::kListen);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  EXPECT_EQ(FormatAddress("::1", 7), "[::1]:7");
  EXPECT_EQ(FormatAddress("localhost", 7), "localhost:7");
}

TEST(NetUtil, ParseAddressRejectsBadFormsWithAMessage) {
  for (const AddressRole role : {AddressRole::kListen, AddressRole::kConnect}) {
    for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", ":", "host:-1", "host:65536",
                            "host:12ab", "::1:80", "[::1]80", "[::1", "[]:80", ":99999"}) {
      Result<HostPort> r = ParseAddress(bad, role);
      ASSERT_FALSE(r.ok()) << bad;
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("HOST:PORT"), std::string::npos);
    }
  }
}

// ":PORT" means loopback, for servers and clients alike (the safe default, never every
// interface); port 0 is a server's "any free port" and no port a client can connect to.
TEST(NetUtil, PortOnlyIsLoopbackAndPortZeroIsForServers) {
  for (const AddressRole role : {AddressRole::kListen, AddressRole::kConnect}) {
    Result<HostPort> r = ParseAddress(":9101", role);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->host, "127.0.0.1");
    EXPECT_EQ(r->port, 9101);
  }
  Result<HostPort> any = ParseAddress(":0", AddressRole::kListen);
  ASSERT_TRUE(any.ok()) << any.status().message();
  EXPECT_EQ(FormatAddress(any->host, any->port), "127.0.0.1:0");
  for (const char* zero : {":0", "127.0.0.1:0"}) {
    Result<HostPort> r = ParseAddress(zero, AddressRole::kConnect);
    ASSERT_FALSE(r.ok()) << zero;
    EXPECT_NE(r.status().message().find("the server's"), std::string::npos) << r.status().message();
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

// Token files are read by input_file.h (tests/telemetry/input_file_test.cc); the server parses
// the authorization value strictly: one scheme, one space, one token.
TEST(NetUtil, BearerTokenAcceptsExactlyOneWellFormedValue) {
  EXPECT_EQ(BearerToken("Bearer s3cret-token"), std::optional<std::string_view>("s3cret-token"));
  EXPECT_EQ(BearerToken("bearer s3cret-token"), std::optional<std::string_view>("s3cret-token"));
  for (const char* bad : {"s3cret-token", "Bearer", "Bearer ", "Bearer  s3cret-token",
                          "Bearers3cret-token", "Basic s3cret-token", "Bearer s3cret token",
                          "Bearer s3cret-token ", "Bearer s3cret\x01", "Token s3cret-token"}) {
    EXPECT_EQ(BearerToken(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(BearerToken("Bearer " + std::string(kMaxBearerTokenBytes + 1, 'a')), std::nullopt);
}

TEST(NetUtil, ProbeBindReportsAPortInUse) {
  // Hold a port with a plain listening socket, then probe it.
  Result<HostPort> hp = ParseAddress("127.0.0.1:0", AddressRole::kListen);
  ASSERT_TRUE(hp.ok());
  EXPECT_TRUE(ProbeBind(*hp).ok());
  HostPort foreign{"192.0.2.1", 0};
  Status s = ProbeBind(foreign);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("192.0.2.1"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rtloop::telemetry::internal
