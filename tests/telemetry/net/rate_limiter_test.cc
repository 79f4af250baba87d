// The per-client rate limit of both servers (rate_limiter.h), on a clock the test moves: bursts,
// refill, clients apart, the bounded table, no limit, and the client key of a gRPC peer.
#include "rate_limiter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace rtloop::telemetry::internal {
namespace {

using std::chrono::milliseconds;
using Clock = RateLimiter::Clock;

TEST(RateLimiterTest, AClientGetsItsBurstThenItsRate) {
  RateLimiter limit({.rate = 2, .burst = 3});
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limit.Allow("a", t0)) << i;
  EXPECT_FALSE(limit.Allow("a", t0));
  EXPECT_FALSE(limit.Allow("a", t0 + milliseconds(400)));  // 0.8 of a request refilled
  EXPECT_TRUE(limit.Allow("a", t0 + milliseconds(500)));   // 1.0
  EXPECT_FALSE(limit.Allow("a", t0 + milliseconds(500)));
  // A long pause refills the burst, never more.
  const Clock::time_point later = t0 + std::chrono::seconds(60);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limit.Allow("a", later)) << i;
  EXPECT_FALSE(limit.Allow("a", later));
  EXPECT_EQ(limit.refused(), 4u);
}

TEST(RateLimiterTest, ClientsHaveTheirOwnBudget) {
  RateLimiter limit({.rate = 1, .burst = 1});
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(limit.Allow("ipv4:10.0.0.1", t0));
  EXPECT_FALSE(limit.Allow("ipv4:10.0.0.1", t0));
  EXPECT_TRUE(limit.Allow("ipv4:10.0.0.2", t0));
}

TEST(RateLimiterTest, TheTableKeepsAtMostMaxClientsAndDropsTheOneSeenLongestAgo) {
  RateLimiter limit({.rate = 1, .burst = 1, .max_clients = 2});
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(limit.Allow("old", t0));
  EXPECT_TRUE(limit.Allow("recent", t0 + milliseconds(10)));
  EXPECT_TRUE(limit.Allow("new", t0 + milliseconds(20)));  // "old" leaves the table
  EXPECT_FALSE(limit.Allow("recent", t0 + milliseconds(30))) << "kept: still has no budget";
  EXPECT_TRUE(limit.Allow("old", t0 + milliseconds(40))) << "dropped: starts with a full budget";
}

TEST(RateLimiterTest, RateZeroIsNoLimit) {
  RateLimiter limit({.rate = 0, .burst = 1});
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 10'000; ++i) ASSERT_TRUE(limit.Allow("a", t0)) << i;
  EXPECT_EQ(limit.refused(), 0u);
}

TEST(RateLimiterTest, TheClientOfAGrpcPeerIsItsAddressWithoutThePort) {
  EXPECT_EQ(ClientAddress("ipv4:127.0.0.1:54321"), "ipv4:127.0.0.1");
  EXPECT_EQ(ClientAddress("ipv6:[::1]:54321"), "ipv6:[::1]");
  EXPECT_EQ(ClientAddress("ipv6:%5B::1%5D:54321"), "ipv6:%5B::1%5D");
  EXPECT_EQ(ClientAddress("127.0.0.1"), "127.0.0.1");  // civetweb's remote_addr
  EXPECT_EQ(ClientAddress("unix:/run/rtloop.sock"), "unix:/run/rtloop.sock");
  EXPECT_EQ(ClientAddress("ipv4:"), "ipv4:");
  EXPECT_EQ(ClientAddress("ipv4:10.0.0.1:x"), "ipv4:10.0.0.1:x");
  EXPECT_EQ(ClientAddress(""), "");
  EXPECT_EQ(FormatRate(100), "100");
  EXPECT_EQ(FormatRate(2.5), "2.5");
}

}  // namespace
}  // namespace rtloop::telemetry::internal
