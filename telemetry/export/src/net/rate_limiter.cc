#include "rate_limiter.h"

#include <algorithm>
#include <cstdio>

namespace rtloop::telemetry::internal {

bool RateLimiter::Allow(std::string_view client, Clock::time_point now) {
  if (limit_.rate <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(std::string(client));
  if (it == buckets_.end()) {
    if (buckets_.size() >= limit_.max_clients) {
      buckets_.erase(std::min_element(buckets_.begin(), buckets_.end(), [](auto& a, auto& b) {
        return a.second.last < b.second.last;
      }));
    }
    it = buckets_.emplace(std::string(client), Bucket{.tokens = limit_.burst, .last = now}).first;
  }
  Bucket& b = it->second;
  if (now > b.last) {
    const double seconds = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(limit_.burst, b.tokens + seconds * limit_.rate);
    b.last = now;
  }
  if (b.tokens < 1) {
    ++refused_;
    return false;
  }
  b.tokens -= 1;
  return true;
}

std::uint64_t RateLimiter::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

std::string_view ClientAddress(std::string_view peer) noexcept {
  if (!peer.starts_with("ipv4:") && !peer.starts_with("ipv6:")) return peer;
  const std::size_t colon = peer.rfind(':');
  if (colon <= 4) return peer;  // no port after the scheme's own colon
  const std::string_view port = peer.substr(colon + 1);
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return peer;
  }
  return peer.substr(0, colon);
}

std::string FormatRate(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", rate);
  return text;
}

Status ValidateRateLimit(const RateLimit& limit, std::string_view rate_field,
                         std::string_view burst_field) {
  // Written so that NaN fails every comparison and so every check.
  const bool rate_ok = limit.rate == 0 || (limit.rate >= 0.1 && limit.rate <= 1e6);
  const bool burst_ok = limit.burst >= 1 && limit.burst <= 1e6;
  if (rate_ok && burst_ok) return Status::Ok();
  return InvalidArgumentError(std::string(rate_field) + " must be 0 (no limit) or 0.1..1e6 and " +
                              std::string(burst_field) + " 1..1e6 (got " + FormatRate(limit.rate) +
                              " and " + FormatRate(limit.burst) + ")");
}

}  // namespace rtloop::telemetry::internal
