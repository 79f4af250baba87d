// Per-client request rate limit of the gRPC and HTTP servers: a token bucket per client address
// (`rate` requests per second on average, at most `burst` at once), so one client cannot make a
// server spend its CPU time on requests, nor probe tokens, faster than that. Internal to
// rtloop_telemetry.
//
//   RateLimiter limit({.rate = 100, .burst = 200});
//   if (!limit.Allow(ClientAddress(context->peer()))) return ResourceExhausted("...");
//
// The table holds at most `max_clients` addresses; a new address beyond that takes the place of
// the one seen longest ago (its bucket starts full again: a client with that many addresses gets
// that many buckets; the servers' connection and in-flight limits still bound its work).
//
// Thread-safe (one mutex); for the servers' request threads, never an RT thread: Allow() may
// allocate when it meets a new address. rate 0 disables the limit (Allow() is always true).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rtloop/framework/status.h"

namespace rtloop::telemetry::internal {

struct RateLimit {
  double rate = 0;   // requests per second per client; 0: no limit
  double burst = 1;  // requests a client may make at once (the bucket's size), >= 1
  std::size_t max_clients = 4096;
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RateLimiter(RateLimit limit) : limit_(limit) {}

  // True when `client` may make one more request at `now` (and counts it); false: refuse it.
  bool Allow(std::string_view client, Clock::time_point now = Clock::now());
  // Requests refused so far.
  std::uint64_t refused() const;

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point last;
  };
  const RateLimit limit_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::uint64_t refused_ = 0;
};

// The client's address without its port, as the limit's key: gRPC's peer "ipv4:127.0.0.1:54321"
// -> "ipv4:127.0.0.1", "ipv6:[::1]:54321" -> "ipv6:[::1]"; a civetweb remote_addr ("127.0.0.1")
// or anything without a port as it is.
std::string_view ClientAddress(std::string_view peer) noexcept;

// A rate for a message: "100", "2.5".
std::string FormatRate(double rate);

// OK for rate 0 (no limit) or 0.1..1e6 with burst 1..1e6; else InvalidArgument naming the two
// config fields (e.g. "HttpConfig.max_requests_per_second", "max_requests_burst").
Status ValidateRateLimit(const RateLimit& limit, std::string_view rate_field,
                         std::string_view burst_field);

}  // namespace rtloop::telemetry::internal
