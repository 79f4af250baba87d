// LatencyHistogram: a log-linear (HDR-style) histogram of signed nanosecond values with exact
// count/min/max/sum beside it, recorded by one thread and readable from any other while it runs.
//
//   LatencyHistogram h;                  // allocates and zeroes all buckets (~224 KiB)
//   h.Record(latency_ns);                // RT thread: ~2-5 ns, no allocation, no locks
//   HistogramSummary s = h.Summary();    // any thread: count, min, max, mean, p50 ... p99.999
//   if (s.percentiles.valid) Show(s.percentiles.p99_ns);   // else "no data"
//
// Layout: values 0..2047 ns have one bucket each (exact). Above, every power of two [2^k, 2^(k+1))
// is split into 1024 equal sub-buckets, up to 2^37 ns (~137 s); a bucket's width is at most
// 1/1024 of its lower bound, so a reported percentile is within 0.1% of the exact sorted value
// (percentiles report the bucket midpoint, clamped to the exact min/max). Values >= 2^37 ns go to
// an overflow count and are reported as the exact max. Negative values (early wake-ups) are counted
// separately; they are reflected in min, count and sum, and a percentile whose rank falls among
// them reports their mean.
//
// Threading: Record(), Reset(), Merge() and CopyFrom() are for one writer thread. Every other
// method may be called from any thread while the writer runs: each counter is a relaxed atomic, so
// a reader sees each value exactly but possibly from adjacent records (e.g. count one ahead of the
// buckets). Percentiles are computed from the buckets actually read.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rtloop::telemetry {

// The percentiles every summary carries, by name (the unit is in each name), in ns. `valid` is
// false when nothing was recorded (then every value is 0, which is not a measurement: show
// "no data"). Value type; RT-safe.
struct Percentiles {
  // The levels of the fields below, in their order, for code that iterates (exporters).
  static constexpr std::array<double, 6> kLevels = {50.0, 90.0, 99.0, 99.9, 99.99, 99.999};

  bool valid = false;
  std::int64_t p50_ns = 0;
  std::int64_t p90_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t p99_9_ns = 0;
  std::int64_t p99_99_ns = 0;
  std::int64_t p99_999_ns = 0;

  // The value at kLevels[i] (i < kLevels.size()). RT-safe.
  constexpr std::int64_t at(std::size_t i) const noexcept;
  constexpr void set(std::size_t i, std::int64_t value) noexcept;

  friend constexpr bool operator==(const Percentiles&, const Percentiles&) = default;
};

// The fields of Percentiles in kLevels order.
inline constexpr std::array<std::int64_t Percentiles::*, Percentiles::kLevels.size()>
    kPercentileFields = {&Percentiles::p50_ns,   &Percentiles::p90_ns,    &Percentiles::p99_ns,
                         &Percentiles::p99_9_ns, &Percentiles::p99_99_ns, &Percentiles::p99_999_ns};

constexpr std::int64_t Percentiles::at(std::size_t i) const noexcept {
  return this->*kPercentileFields[i];
}
constexpr void Percentiles::set(std::size_t i, std::int64_t value) noexcept {
  this->*kPercentileFields[i] = value;
}

// The levels every summary carries (Percentiles::kLevels), for existing exporters.
inline constexpr const std::array<double, 6>& kSummaryPercentiles = Percentiles::kLevels;

struct HistogramSummary {
  std::uint64_t count = 0;           // all values, negatives and overflow included
  std::uint64_t negative_count = 0;  // values < 0
  std::uint64_t overflow_count = 0;  // values >= LatencyHistogram::kMaxTrackable
  std::int64_t min_ns = 0;           // exact; 0 when count == 0
  std::int64_t max_ns = 0;           // exact; 0 when count == 0
  std::int64_t sum_ns = 0;           // exact (wraps only beyond ~292 years of total)
  double mean_ns = 0.0;
  // p50, p90, p99, p99.9, p99.99, p99.999; valid when count > 0.
  Percentiles percentiles;
};

// One bucket of the layout: values v with lower_ns <= v < upper_ns.
struct HistogramBucket {
  std::int64_t lower_ns = 0;
  std::int64_t upper_ns = 0;  // exclusive
  std::uint64_t count = 0;
};

// The 1-based rank of `percentile` (0..100) among `total` values by the nearest-rank definition,
// ceil(percentile / 100 * total), computed in integers so that decimal percentiles are exact (in
// doubles, 99.9 / 100 * 1000 is 999.000...1 and would give rank 1000). NaN and values <= 0 give
// rank 1, values >= 100 give `total`; 0 when total is 0. RT-safe.
std::uint64_t NearestRank(double percentile, std::uint64_t total) noexcept;

class LatencyHistogram {
 public:
  static constexpr std::int64_t kExactLimit = 2048;  // values below are exact
  static constexpr int kSubBucketBits = 10;          // 1024 sub-buckets per power of two
  static constexpr int kMaxExponent = 37;            // values < 2^37 ns are bucketed
  static constexpr std::int64_t kMaxTrackable = std::int64_t{1} << kMaxExponent;  // ~137.4 s
  static constexpr std::size_t kBucketCount =
      static_cast<std::size_t>(kExactLimit) +
      static_cast<std::size_t>(kMaxExponent - 11) * (std::size_t{1} << kSubBucketBits);
  static constexpr double kMaxRelativeError = 1.0 / 1024.0;  // < 0.1%

  // Allocates and zeroes every bucket: all the memory this histogram will ever use. Not RT-safe.
  LatencyHistogram();
  ~LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;
  LatencyHistogram(LatencyHistogram&&) noexcept;
  LatencyHistogram& operator=(LatencyHistogram&&) noexcept;

  // Records one value. Writer thread. RT-safe.
  void Record(std::int64_t value_ns) noexcept;
  // Clears everything. Writer thread. RT-safe.
  void Reset() noexcept;
  // Adds `other` (read as a snapshot) into this. Writer thread of `this`. RT-safe.
  void Merge(const LatencyHistogram& other) noexcept;
  // Makes this a snapshot copy of `other`. Writer thread of `this`. RT-safe.
  void CopyFrom(const LatencyHistogram& other) noexcept;

  // Any thread. RT-safe.
  // Acquire: what the writer recorded before this count (buckets, sum, min, max) is visible.
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_acquire); }
  std::int64_t min_ns() const noexcept;
  std::int64_t max_ns() const noexcept;
  std::int64_t sum_ns() const noexcept { return sum_.load(std::memory_order_relaxed); }
  std::uint64_t negative_count() const noexcept {
    return negative_count_.load(std::memory_order_relaxed);
  }
  std::uint64_t overflow_count() const noexcept {
    return overflow_count_.load(std::memory_order_relaxed);
  }
  // Sum of the negative values (0 when there are none).
  std::int64_t negative_sum_ns() const noexcept {
    return negative_sum_.load(std::memory_order_relaxed);
  }
  // The value at `percentile` (0..100; outside clamped, NaN as 0) by the nearest-rank definition:
  // the value of rank ceil(percentile / 100 * count), computed exactly in integers. Two passes
  // over the buckets. 0 when empty. Any thread.
  std::int64_t ValueAtPercentile(double percentile) const noexcept;
  // Count, min, max, sum, mean and every Percentiles level in one pass. Any thread.
  HistogramSummary Summary() const noexcept;
  // Appends the non-empty buckets in ascending order (negatives as one bucket [min, 0), overflow as
  // [kMaxTrackable, max + 1), saturated at INT64_MAX). Any thread. Not RT-safe: grows `out`.
  void ExportBuckets(std::vector<HistogramBucket>* out) const;

  // The bucket layout (pure functions). RT-safe.
  static std::size_t BucketIndex(std::int64_t value_ns) noexcept;  // value in [0, kMaxTrackable)
  static std::int64_t BucketLower(std::size_t index) noexcept;
  static std::int64_t BucketUpper(std::size_t index) noexcept;  // exclusive

 private:
  using Counter = std::atomic<std::uint64_t>;
  // The values at `percentiles` (ascending) into `out` (same size), in two passes over the buckets,
  // clamped to [lo, hi] (the caller's min and max, read after a non-zero count).
  void ValuesAtPercentiles(std::span<const double> percentiles, std::int64_t lo, std::int64_t hi,
                           std::span<std::int64_t> out) const noexcept;
  std::unique_ptr<Counter[]> buckets_;
  Counter count_{0};
  Counter negative_count_{0};
  Counter overflow_count_{0};
  std::atomic<std::int64_t> negative_sum_{0};
  std::atomic<std::int64_t> sum_{0};
  std::atomic<std::int64_t> min_;
  std::atomic<std::int64_t> max_;
};

}  // namespace rtloop::telemetry
