#include "rtloop/telemetry/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace rtloop::telemetry {
namespace {

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kSubBuckets = std::size_t{1} << LatencyHistogram::kSubBucketBits;
constexpr int kFirstExponent = 11;  // 2^11 == kExactLimit

static_assert(LatencyHistogram::kBucketCount * sizeof(std::uint64_t) <= 256 * 1024,
              "a histogram must stay within 256 KB");

// Single-writer increment: no read-modify-write instruction is needed because only the owning
// thread stores; readers only load.
inline void Bump(std::atomic<std::uint64_t>& c, std::uint64_t by = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
inline void AddI64(std::atomic<std::int64_t>& c, std::int64_t by) noexcept {
  // Wrapping add without signed-overflow UB.
  c.store(static_cast<std::int64_t>(static_cast<std::uint64_t>(c.load(std::memory_order_relaxed)) +
                                    static_cast<std::uint64_t>(by)),
          std::memory_order_relaxed);
}

// The 1-based rank of `percentile` among `total` values: the nearest-rank definition
// ceil(percentile / 100 * total), computed in integers so that decimal percentiles are exact (in
// doubles, 99.9 / 100 * 1000 is 999.0000000000001 and would give rank 1000, not 999). The
// percentile is taken to 1e-9 percent; NaN and values <= 0 give rank 1, values >= 100 give total.
std::uint64_t RankOf(double percentile, std::uint64_t total) noexcept {
  if (total == 0) return 0;
  const double p = percentile > 0.0 ? std::min(percentile, 100.0) : 0.0;
  __extension__ using U128 = unsigned __int128;
  constexpr std::uint64_t kHundredPercent = 100'000'000'000;  // units of 1e-9 percent
  const auto units = static_cast<std::uint64_t>(std::llround(p * 1e9));
  const U128 rank = (U128{units} * total + (kHundredPercent - 1)) / kHundredPercent;
  if (rank < 1) return 1;
  if (rank >= total) return total;
  return static_cast<std::uint64_t>(rank);
}

// `v` clamped to [lo, hi]; unchanged when a concurrent reader saw lo > hi.
std::int64_t ClampTo(std::int64_t v, std::int64_t lo, std::int64_t hi) noexcept {
  return lo > hi ? v : std::clamp(v, lo, hi);
}

}  // namespace

std::size_t LatencyHistogram::BucketIndex(std::int64_t value_ns) noexcept {
  if (value_ns < kExactLimit) return static_cast<std::size_t>(value_ns < 0 ? 0 : value_ns);
  const auto v = static_cast<std::uint64_t>(value_ns);
  const int k = static_cast<int>(std::bit_width(v)) - 1;  // kFirstExponent .. kMaxExponent-1
  const int shift = k - kSubBucketBits;
  const std::size_t sub = static_cast<std::size_t>(v >> shift) - kSubBuckets;
  return static_cast<std::size_t>(kExactLimit) +
         static_cast<std::size_t>(k - kFirstExponent) * kSubBuckets + sub;
}

std::int64_t LatencyHistogram::BucketLower(std::size_t index) noexcept {
  if (index < static_cast<std::size_t>(kExactLimit)) return static_cast<std::int64_t>(index);
  const std::size_t j = index - static_cast<std::size_t>(kExactLimit);
  const int k = kFirstExponent + static_cast<int>(j / kSubBuckets);
  const std::size_t sub = j % kSubBuckets;
  return static_cast<std::int64_t>((kSubBuckets + sub) << (k - kSubBucketBits));
}

std::int64_t LatencyHistogram::BucketUpper(std::size_t index) noexcept {
  if (index < static_cast<std::size_t>(kExactLimit)) return static_cast<std::int64_t>(index) + 1;
  const std::size_t j = index - static_cast<std::size_t>(kExactLimit);
  const int k = kFirstExponent + static_cast<int>(j / kSubBuckets);
  return BucketLower(index) + (std::int64_t{1} << (k - kSubBucketBits));
}

LatencyHistogram::LatencyHistogram()
    : buckets_(new Counter[kBucketCount]()), min_(kI64Max), max_(kI64Min) {
  // Value-initialised: every page is written now, at set-up.
  for (std::size_t i = 0; i < kBucketCount; ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

LatencyHistogram::~LatencyHistogram() = default;

LatencyHistogram::LatencyHistogram(LatencyHistogram&& other) noexcept
    : buckets_(std::move(other.buckets_)),
      count_(other.count_.load()),
      negative_count_(other.negative_count_.load()),
      overflow_count_(other.overflow_count_.load()),
      negative_sum_(other.negative_sum_.load()),
      sum_(other.sum_.load()),
      min_(other.min_.load()),
      max_(other.max_.load()) {}

LatencyHistogram& LatencyHistogram::operator=(LatencyHistogram&& other) noexcept {
  if (this != &other) {
    buckets_ = std::move(other.buckets_);
    count_.store(other.count_.load());
    negative_count_.store(other.negative_count_.load());
    overflow_count_.store(other.overflow_count_.load());
    negative_sum_.store(other.negative_sum_.load());
    sum_.store(other.sum_.load());
    min_.store(other.min_.load());
    max_.store(other.max_.load());
  }
  return *this;
}

void LatencyHistogram::Record(std::int64_t value_ns) noexcept {
  if (value_ns < 0) {
    Bump(negative_count_);
    AddI64(negative_sum_, value_ns);
  } else if (value_ns >= kMaxTrackable) {
    Bump(overflow_count_);
  } else {
    Bump(buckets_[BucketIndex(value_ns)]);
  }
  AddI64(sum_, value_ns);
  if (value_ns < min_.load(std::memory_order_relaxed)) {
    min_.store(value_ns, std::memory_order_relaxed);
  }
  if (value_ns > max_.load(std::memory_order_relaxed)) {
    max_.store(value_ns, std::memory_order_relaxed);
  }
  // Last, so that a reader that sees the count also tends to see the value's bucket.
  Bump(count_);
}

void LatencyHistogram::Reset() noexcept {
  for (std::size_t i = 0; i < kBucketCount; ++i) buckets_[i].store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  negative_count_.store(0, std::memory_order_relaxed);
  overflow_count_.store(0, std::memory_order_relaxed);
  negative_sum_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  min_.store(kI64Max, std::memory_order_relaxed);
  max_.store(kI64Min, std::memory_order_relaxed);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) noexcept {
  if (&other == this) {
    // Doubling: every count twice, sums twice, min/max unchanged.
    for (std::size_t i = 0; i < kBucketCount; ++i) {
      Bump(buckets_[i], buckets_[i].load(std::memory_order_relaxed));
    }
    Bump(count_, count());
    Bump(negative_count_, negative_count());
    Bump(overflow_count_, overflow_count());
    AddI64(negative_sum_, negative_sum_.load(std::memory_order_relaxed));
    AddI64(sum_, sum_ns());
    return;
  }
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    const std::uint64_t c = other.buckets_[i].load(std::memory_order_relaxed);
    if (c != 0) Bump(buckets_[i], c);
  }
  Bump(count_, other.count());
  Bump(negative_count_, other.negative_count());
  Bump(overflow_count_, other.overflow_count());
  AddI64(negative_sum_, other.negative_sum_.load(std::memory_order_relaxed));
  AddI64(sum_, other.sum_ns());
  const std::int64_t omin = other.min_.load(std::memory_order_relaxed);
  const std::int64_t omax = other.max_.load(std::memory_order_relaxed);
  if (omin < min_.load(std::memory_order_relaxed)) min_.store(omin, std::memory_order_relaxed);
  if (omax > max_.load(std::memory_order_relaxed)) max_.store(omax, std::memory_order_relaxed);
}

void LatencyHistogram::CopyFrom(const LatencyHistogram& other) noexcept {
  if (&other == this) return;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    buckets_[i].store(other.buckets_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  count_.store(other.count(), std::memory_order_relaxed);
  negative_count_.store(other.negative_count(), std::memory_order_relaxed);
  overflow_count_.store(other.overflow_count(), std::memory_order_relaxed);
  negative_sum_.store(other.negative_sum_.load(std::memory_order_relaxed),
                      std::memory_order_relaxed);
  sum_.store(other.sum_ns(), std::memory_order_relaxed);
  min_.store(other.min_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  max_.store(other.max_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

std::int64_t LatencyHistogram::min_ns() const noexcept {
  const std::int64_t v = min_.load(std::memory_order_relaxed);
  return v == kI64Max ? 0 : v;
}

std::int64_t LatencyHistogram::max_ns() const noexcept {
  const std::int64_t v = max_.load(std::memory_order_relaxed);
  return v == kI64Min ? 0 : v;
}

std::int64_t LatencyHistogram::ValueAtPercentile(double percentile) const noexcept {
  // Summary() computes the standard set in one pass; an arbitrary percentile uses the same walk.
  const std::uint64_t negatives = negative_count();
  const std::uint64_t overflow = overflow_count();
  std::uint64_t in_buckets = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    in_buckets += buckets_[i].load(std::memory_order_relaxed);
  }
  const std::uint64_t total = negatives + in_buckets + overflow;
  if (total == 0) return 0;
  const std::uint64_t rank = RankOf(percentile, total);
  const std::int64_t lo = min_ns();
  const std::int64_t hi = max_ns();
  if (rank <= negatives) {
    const std::int64_t mean =
        negative_sum_.load(std::memory_order_relaxed) / static_cast<std::int64_t>(negatives);
    return std::clamp<std::int64_t>(mean, std::min<std::int64_t>(lo, -1), -1);
  }
  std::uint64_t cumulative = negatives;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    if (cumulative >= rank) {
      const std::int64_t lower = BucketLower(i);
      const std::int64_t mid = lower + (BucketUpper(i) - lower) / 2;
      return ClampTo(mid, lo, hi);
    }
  }
  return hi;
}

HistogramSummary LatencyHistogram::Summary() const noexcept {
  HistogramSummary s;
  s.count = count();
  s.negative_count = negative_count();
  s.overflow_count = overflow_count();
  s.min_ns = min_ns();
  s.max_ns = max_ns();
  s.sum_ns = sum_ns();
  s.mean_ns = s.count ? static_cast<double>(s.sum_ns) / static_cast<double>(s.count) : 0.0;
  // Two passes over the atomics (total, then ranks) instead of a copy: no allocation.
  std::uint64_t in_buckets = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    in_buckets += buckets_[i].load(std::memory_order_relaxed);
  }
  const std::uint64_t total = s.negative_count + in_buckets + s.overflow_count;
  if (total == 0) return s;
  std::array<std::uint64_t, kSummaryPercentiles.size()> ranks{};
  for (std::size_t p = 0; p < ranks.size(); ++p) ranks[p] = RankOf(kSummaryPercentiles[p], total);
  std::size_t next = 0;
  const std::int64_t lo = s.min_ns;
  const std::int64_t hi = s.max_ns;
  if (s.negative_count > 0) {
    const std::int64_t mean =
        negative_sum_.load(std::memory_order_relaxed) / static_cast<std::int64_t>(s.negative_count);
    const std::int64_t v = std::clamp<std::int64_t>(mean, std::min<std::int64_t>(lo, -1), -1);
    while (next < ranks.size() && ranks[next] <= s.negative_count) s.percentiles_ns[next++] = v;
  }
  std::uint64_t cumulative = s.negative_count;
  // A bucket may have grown since the first pass; ranks beyond the second pass's total fall to max.
  for (std::size_t i = 0; i < kBucketCount && next < ranks.size(); ++i) {
    const std::uint64_t c = buckets_[i].load(std::memory_order_relaxed);
    if (c == 0) continue;
    cumulative += c;
    if (cumulative < ranks[next]) continue;
    const std::int64_t lower = BucketLower(i);
    const std::int64_t mid = lower + (BucketUpper(i) - lower) / 2;
    const std::int64_t v = ClampTo(mid, lo, hi);
    while (next < ranks.size() && ranks[next] <= cumulative) s.percentiles_ns[next++] = v;
  }
  while (next < ranks.size()) s.percentiles_ns[next++] = hi;
  return s;
}

void LatencyHistogram::ExportBuckets(std::vector<HistogramBucket>* out) const {
  const std::uint64_t negatives = negative_count();
  if (negatives > 0) out->push_back({min_ns(), 0, negatives});
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    const std::uint64_t c = buckets_[i].load(std::memory_order_relaxed);
    if (c != 0) out->push_back({BucketLower(i), BucketUpper(i), c});
  }
  const std::uint64_t overflow = overflow_count();
  if (overflow > 0) out->push_back({kMaxTrackable, max_ns() + 1, overflow});
}

}  // namespace rtloop::telemetry
