#include "rtloop/telemetry/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace rtloop::telemetry {
namespace {

// Recorded by the RT thread: no libatomic lock on any target (cmake/RtloopTargetChecks.cmake).
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int64_t>::is_always_lock_free);

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

// The largest layout the bounds allow is the default, and it must stay within 256 KiB.
static_assert(HistogramLayout().precision_bits() == HistogramLayout::kMaxPrecisionBits &&
              HistogramLayout().range_bits() == HistogramLayout::kMaxRangeBits);
static_assert(HistogramLayout().histogram_bytes() <= std::size_t{256} * 1024,
              "a histogram must stay within 256 KB");

using histogram_internal::AddI64;
using histogram_internal::Bump;

// `v` clamped to [lo, hi]; unchanged when a concurrent reader saw lo > hi.
std::int64_t ClampTo(std::int64_t v, std::int64_t lo, std::int64_t hi) noexcept {
  return lo > hi ? v : std::clamp(v, lo, hi);
}

// ceil(a * b / d), exact, for d < 2^47 and a result below 2^64, without a 128-bit integer type
// (32-bit targets such as armhf have none): the product as eight 16-bit limbs, then long
// division by d one limb at a time (the remainder stays below 2^47, so remainder << 16 fits).
std::uint64_t MulDivCeil(std::uint64_t a, std::uint64_t b, std::uint64_t d) noexcept {
  constexpr std::size_t kLimbs = 4;
  std::array<std::uint64_t, 2 * kLimbs> prod{};
  for (std::size_t i = 0; i < kLimbs; ++i) {
    std::uint64_t carry = 0;
    const std::uint64_t ai = (a >> (16 * i)) & 0xFFFF;
    for (std::size_t j = 0; j < kLimbs; ++j) {
      const std::uint64_t bj = (b >> (16 * j)) & 0xFFFF;
      const std::uint64_t t = prod[i + j] + ai * bj + carry;
      prod[i + j] = t & 0xFFFF;
      carry = t >> 16;
    }
    prod[i + kLimbs] += carry;
  }
  std::uint64_t quotient = 0;
  std::uint64_t rem = 0;
  for (int k = 2 * static_cast<int>(kLimbs) - 1; k >= 0; --k) {
    rem = (rem << 16) | prod[static_cast<std::size_t>(k)];
    quotient = (quotient << 16) | (rem / d);  // the high limbs' quotient is 0 when it fits
    rem %= d;
  }
  return quotient + (rem != 0 ? 1 : 0);
}

}  // namespace

std::uint64_t NearestRank(double percentile, std::uint64_t total) noexcept {
  if (total == 0) return 0;
  const double p = percentile > 0.0 ? std::min(percentile, 100.0) : 0.0;
  constexpr std::uint64_t kHundredPercent = 100'000'000'000;  // units of 1e-9 percent
  // std::llround without libm (a lean program then maps none of it: bench/footprint/README.md):
  // for x >= 0, x minus its integer part is exact, so this rounds half away from zero as it does.
  const double x = p * 1e9;
  auto units = static_cast<std::uint64_t>(x);
  if (x - static_cast<double>(units) >= 0.5) ++units;
  // units <= kHundredPercent, so the rank is at most total: it fits in 64 bits.
  const std::uint64_t rank = MulDivCeil(units, total, kHundredPercent);
  if (rank < 1) return 1;
  if (rank >= total) return total;
  return rank;
}

Result<HistogramLayout> HistogramLayout::Create(const HistogramLayoutConfig& c,
                                                std::string_view field_prefix) {
  const std::string prefix(field_prefix);
  if (c.precision_bits < kMinPrecisionBits || c.precision_bits > kMaxPrecisionBits) {
    return InvalidArgumentError(
        prefix + "precision_bits is " + std::to_string(c.precision_bits) + " — use " +
        std::to_string(kMinPrecisionBits) + ".." + std::to_string(kMaxPrecisionBits) +
        " (percentiles within 2^-bits: 10 = 0.1 %, the default; 7 = 0.8 %; 4 = 6.3 %)");
  }
  if (c.range_bits < kMinRangeBits || c.range_bits > kMaxRangeBits) {
    return InvalidArgumentError(
        prefix + "range_bits is " + std::to_string(c.range_bits) + " — use " +
        std::to_string(kMinRangeBits) + ".." + std::to_string(kMaxRangeBits) +
        " (values below 2^bits ns are bucketed: 37 = 137 s, the default; 30 = 1.07 s; 20 = 1.05 "
        "ms; larger values count as overflow, their exact max kept)");
  }
  return HistogramLayout(c.precision_bits, c.range_bits);
}

LatencyHistogram::LatencyHistogram(const HistogramLayout& layout)
    : layout_(layout),
      buckets_(new Counter[layout.bucket_count()]()),
      min_(kI64Max),
      max_(kI64Min) {
  // Value-initialised: every page is written now, at set-up.
  for (std::size_t i = 0; i < layout_.bucket_count(); ++i) {
    buckets_[i].store(0, std::memory_order_relaxed);
  }
}

LatencyHistogram::~LatencyHistogram() = default;

LatencyHistogram::LatencyHistogram(LatencyHistogram&& other) noexcept
    : layout_(other.layout_),
      buckets_(std::move(other.buckets_)),
      count_(other.count_.load()),
      negative_count_(other.negative_count_.load()),
      overflow_count_(other.overflow_count_.load()),
      negative_sum_(other.negative_sum_.load()),
      sum_(other.sum_.load()),
      min_(other.min_.load()),
      max_(other.max_.load()) {}

LatencyHistogram& LatencyHistogram::operator=(LatencyHistogram&& other) noexcept {
  if (this != &other) {
    layout_ = other.layout_;
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

void LatencyHistogram::Reset() noexcept {
  const std::size_t n = layout_.bucket_count();
  for (std::size_t i = 0; i < n; ++i) buckets_[i].store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  negative_count_.store(0, std::memory_order_relaxed);
  overflow_count_.store(0, std::memory_order_relaxed);
  negative_sum_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  min_.store(kI64Max, std::memory_order_relaxed);
  max_.store(kI64Min, std::memory_order_relaxed);
}

bool LatencyHistogram::Merge(const LatencyHistogram& other) noexcept {
  if (other.layout_ != layout_) return false;
  const std::size_t n = layout_.bucket_count();
  if (&other == this) {
    // Doubling: every count twice, sums twice, min/max unchanged.
    for (std::size_t i = 0; i < n; ++i) {
      Bump(buckets_[i], buckets_[i].load(std::memory_order_relaxed));
    }
    Bump(negative_count_, negative_count());
    Bump(overflow_count_, overflow_count());
    AddI64(negative_sum_, negative_sum_.load(std::memory_order_relaxed));
    AddI64(sum_, sum_ns());
    count_.store(2 * count_.load(std::memory_order_relaxed), std::memory_order_release);
    return true;
  }
  const std::uint64_t other_count = other.count();  // acquire: its min/max are visible
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t c = other.buckets_[i].load(std::memory_order_relaxed);
    if (c != 0) Bump(buckets_[i], c);
  }
  Bump(negative_count_, other.negative_count());
  Bump(overflow_count_, other.overflow_count());
  AddI64(negative_sum_, other.negative_sum_.load(std::memory_order_relaxed));
  AddI64(sum_, other.sum_ns());
  const std::int64_t omin = other.min_.load(std::memory_order_relaxed);
  const std::int64_t omax = other.max_.load(std::memory_order_relaxed);
  if (omin < min_.load(std::memory_order_relaxed)) min_.store(omin, std::memory_order_relaxed);
  if (omax > max_.load(std::memory_order_relaxed)) max_.store(omax, std::memory_order_relaxed);
  count_.store(count_.load(std::memory_order_relaxed) + other_count, std::memory_order_release);
  return true;
}

bool LatencyHistogram::CopyFrom(const LatencyHistogram& other) noexcept {
  if (other.layout_ != layout_) return false;
  if (&other == this) return true;
  const std::uint64_t other_count = other.count();  // acquire: its min/max are visible
  const std::size_t n = layout_.bucket_count();
  for (std::size_t i = 0; i < n; ++i) {
    buckets_[i].store(other.buckets_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  negative_count_.store(other.negative_count(), std::memory_order_relaxed);
  overflow_count_.store(other.overflow_count(), std::memory_order_relaxed);
  negative_sum_.store(other.negative_sum_.load(std::memory_order_relaxed),
                      std::memory_order_relaxed);
  sum_.store(other.sum_ns(), std::memory_order_relaxed);
  min_.store(other.min_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  max_.store(other.max_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  count_.store(other_count, std::memory_order_release);
  return true;
}

// The count decides emptiness, not the sentinels: INT64_MAX (or INT64_MIN) is a valid recorded
// value, and a histogram holding only INT64_MIN has that as its max.
std::int64_t LatencyHistogram::min_ns() const noexcept {
  return count() == 0 ? 0 : min_.load(std::memory_order_relaxed);
}

std::int64_t LatencyHistogram::max_ns() const noexcept {
  return count() == 0 ? 0 : max_.load(std::memory_order_relaxed);
}

std::int64_t LatencyHistogram::ValueAtPercentile(double percentile) const noexcept {
  std::int64_t value = 0;
  if (count() == 0) return value;  // acquire first: min and max are at least this recent
  ValuesAtPercentiles(std::span<const double>(&percentile, 1), min_ns(), max_ns(),
                      std::span<std::int64_t>(&value, 1));
  return value;
}

HistogramSummary LatencyHistogram::Summary() const noexcept {
  HistogramSummary s;
  s.count = count();  // acquire first: min, max and sum below are at least this recent
  s.negative_count = negative_count();
  s.overflow_count = overflow_count();
  s.min_ns = min_ns();
  s.max_ns = max_ns();
  s.sum_ns = sum_ns();
  s.mean_ns = s.count ? static_cast<double>(s.sum_ns) / static_cast<double>(s.count) : 0.0;
  // Clamped to this summary's own min and max: a value recorded since cannot push a percentile
  // beyond the max reported beside it.
  if (s.count > 0) {
    std::array<std::int64_t, Percentiles::kLevels.size()> values{};
    ValuesAtPercentiles(Percentiles::kLevels, s.min_ns, s.max_ns, values);
    for (std::size_t i = 0; i < values.size(); ++i) s.percentiles.set(i, values[i]);
    s.percentiles.valid = true;
  }
  return s;
}

void LatencyHistogram::ValuesAtPercentiles(std::span<const double> percentiles, std::int64_t lo,
                                           std::int64_t hi,
                                           std::span<std::int64_t> out) const noexcept {
  std::fill(out.begin(), out.end(), 0);
  // Two passes over the atomics (total, then ranks) instead of a copy: no allocation.
  const std::uint64_t negatives = negative_count();
  std::uint64_t in_buckets = 0;
  const std::size_t n = layout_.bucket_count();
  for (std::size_t i = 0; i < n; ++i) {
    in_buckets += buckets_[i].load(std::memory_order_relaxed);
  }
  const std::uint64_t total = negatives + in_buckets + overflow_count();
  if (total == 0) return;
  // Ranks of ascending percentiles ascend: one walk serves them all. `want` is the rank of
  // percentiles[next] (0 once every value is filled).
  std::size_t next = 0;
  auto advance = [&](std::int64_t v) {
    out[next++] = v;
    return next < out.size() ? NearestRank(percentiles[next], total) : std::uint64_t{0};
  };
  std::uint64_t want = out.empty() ? 0 : NearestRank(percentiles[0], total);
  if (negatives > 0) {
    // Negative values have no buckets: a rank among them reports their mean.
    const std::int64_t mean =
        negative_sum_.load(std::memory_order_relaxed) / static_cast<std::int64_t>(negatives);
    const std::int64_t v = std::clamp<std::int64_t>(mean, std::min<std::int64_t>(lo, -1), -1);
    while (want != 0 && want <= negatives) want = advance(v);
  }
  std::uint64_t cumulative = negatives;
  // A bucket may have grown since the first pass; ranks beyond the second pass's total fall to max.
  for (std::size_t i = 0; i < n && want != 0; ++i) {
    const std::uint64_t c = buckets_[i].load(std::memory_order_relaxed);
    if (c == 0) continue;
    cumulative += c;
    if (cumulative < want) continue;
    const std::int64_t lower = layout_.BucketLower(i);
    const std::int64_t mid = lower + (layout_.BucketUpper(i) - lower) / 2;
    const std::int64_t v = ClampTo(mid, lo, hi);
    while (want != 0 && want <= cumulative) want = advance(v);
  }
  while (next < out.size()) out[next++] = hi;
}

void LatencyHistogram::ExportBuckets(std::vector<HistogramBucket>* out) const {
  const std::uint64_t negatives = negative_count();
  if (negatives > 0) out->push_back({min_ns(), 0, negatives});
  const std::size_t n = layout_.bucket_count();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t c = buckets_[i].load(std::memory_order_relaxed);
    if (c != 0) out->push_back({layout_.BucketLower(i), layout_.BucketUpper(i), c});
  }
  const std::uint64_t overflow = overflow_count();
  if (overflow > 0) {
    const std::int64_t max = max_ns();
    out->push_back({layout_.max_trackable(), max == kI64Max ? kI64Max : max + 1, overflow});
  }
}

}  // namespace rtloop::telemetry
