// LatencyHistogram: a log-linear (HDR-style) histogram of signed nanosecond values with exact
// count/min/max/sum beside it, recorded by one thread and readable from any other while it runs.
// Its HistogramLayout (precision and range) is chosen at set-up; the default is the layout below.
//
//   LatencyHistogram h;                  // allocates and zeroes all buckets (~224 KiB)
//   h.Record(latency_ns);                // RT thread: ~2-5 ns, no allocation, no locks
//   HistogramSummary s = h.Summary();    // any thread: count, min, max, mean, p50 ... p99.999
//   if (s.percentiles.valid) Show(s.percentiles.p99_ns);   // else "no data"
//
//   // A small board: 0.8 % precision up to ~1.07 s, 3,072 buckets (24 KiB) a histogram.
//   Result<HistogramLayout> small = HistogramLayout::Create({.precision_bits = 7,
//                                                            .range_bits = 30});
//   LatencyHistogram s(*small);
//
// Layout (default: precision p = 10 bits, range R = 37): values 0 .. 2^(p+1)-1 ns (0..2047) have
// one bucket each (exact). Above, every power of two [2^k, 2^(k+1)) is split into 2^p (1024) equal
// sub-buckets, up to 2^R ns (~137 s); a bucket's width is at most 2^-p (1/1024) of its lower
// bound, so a reported percentile is within 2^-p (0.1%) of the exact sorted value (percentiles
// report the bucket midpoint, clamped to the exact min/max). Values >= 2^R ns go to an overflow
// count and are reported as the exact max. Negative values (early wake-ups) are counted
// separately; they are reflected in min, count and sum, and a percentile whose rank falls among
// them reports their mean. Memory: (R - p + 1) x 2^p buckets of 8 bytes (default 28,672: 224 KiB).
//
// Threading: Record(), Reset(), Merge() and CopyFrom() are for one writer thread; RecordShared()
// instead of Record() lets several threads record into one histogram at once. Every other
// method may be called from any thread while the writer runs: each counter is a relaxed atomic, so
// a reader sees each value exactly but possibly from adjacent records (e.g. count one ahead of the
// buckets). Percentiles are computed from the buckets actually read. HistogramLayout is a value
// type: any thread, RT-safe (but Create()).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "rtloop/framework/status.h"

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
  std::uint64_t overflow_count = 0;  // values >= the layout's max_trackable() (2^37 by default)
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

// How a LatencyHistogram's buckets are laid out, as a user sets it (validated by
// HistogramLayout::Create). The default is the layout every figure of rtloop was measured with.
struct HistogramLayoutConfig {
  // Precision p: each power of two above the exact range is split into 2^p buckets, so a
  // percentile is within 2^-p of the exact value (10: 0.098 %, 8: 0.39 %, 7: 0.78 %, 4: 6.25 %),
  // and values below 2^(p+1) ns are exact. 4..10. Each bit less halves the buckets.
  int precision_bits = 10;
  // Range R: values below 2^R ns are bucketed (37: ~137 s, 30: ~1.07 s, 20: ~1.05 ms); larger
  // ones count as overflow, reported as the exact max. 20..37. Each bit less saves 2^p buckets.
  int range_bits = 37;
};

// A validated HistogramLayoutConfig with the arithmetic of the bucket layout:
//   buckets B = (R - p + 1) x 2^p,   exact below 2^(p+1) ns,   relative error <= 2^-p.
// Bucket i < 2^(p+1) holds the value i. Above, with s = (i >> p) - 1 octaves over the exact range,
// bucket i holds [(i - s x 2^p) x 2^s, (i - s x 2^p + 1) x 2^s). The index of a value v is
// (s << p) + (v >> s) with s = max(bit_width(v) - (p + 1), 0): no branch but a max, no table.
// Value type. RT-safe, but Create().
class HistogramLayout {
 public:
  // The bounds of HistogramLayoutConfig. Precision: below 4 bits a percentile may be 12.5 % off,
  // too coarse to judge a latency bound; above 10, a histogram outgrows the 256 KiB per histogram
  // that the rest of telemetry (windowed statistics, export buffers) is sized for, to resolve
  // less than 0.1 % of a value. Range: below 2^20 ns (1.05 ms) a loaded board's latencies are
  // overflow, whose percentiles are only the max (and rtloop-top's bins end at 1 ms); above
  // 2^37 ns (137 s) a cycle is no longer a control loop's.
  static constexpr int kMinPrecisionBits = 4;
  static constexpr int kMaxPrecisionBits = 10;
  static constexpr int kMinRangeBits = 20;
  static constexpr int kMaxRangeBits = 37;

  // The default layout: p = 10, R = 37 (28,672 buckets, 224 KiB).
  constexpr HistogramLayout() noexcept = default;
  // InvalidArgument for a field out of range, its message starting with `field_prefix` and the
  // field's name (e.g. "RuntimeConfig::telemetry.histogram_layout.precision_bits is 12 — use
  // ..."). Not RT-safe: builds the message.
  static Result<HistogramLayout> Create(const HistogramLayoutConfig& config,
                                        std::string_view field_prefix = "HistogramLayoutConfig::");

  constexpr int precision_bits() const noexcept { return precision_bits_; }
  constexpr int range_bits() const noexcept { return range_bits_; }
  constexpr HistogramLayoutConfig config() const noexcept {
    return {.precision_bits = precision_bits_, .range_bits = range_bits_};
  }
  // Values below are exact (one bucket per ns): 2^(p+1).
  constexpr std::int64_t exact_limit() const noexcept { return std::int64_t{2} << precision_bits_; }
  // Values below are bucketed, the others are overflow: 2^R.
  constexpr std::int64_t max_trackable() const noexcept { return std::int64_t{1} << range_bits_; }
  constexpr std::size_t bucket_count() const noexcept {
    return static_cast<std::size_t>(range_bits_ - precision_bits_ + 1) << precision_bits_;
  }
  // The largest bucket width relative to its lower bound: 2^-p.
  constexpr double max_relative_error() const noexcept {
    return 1.0 / static_cast<double>(std::int64_t{1} << precision_bits_);
  }
  // The buckets' memory in one histogram (8 bytes each).
  constexpr std::size_t histogram_bytes() const noexcept {
    return bucket_count() * sizeof(std::uint64_t);
  }

  // The bucket holding `value_ns` (in [0, max_trackable()); a negative value gives 0: out of
  // contract, never out of bounds).
  constexpr std::size_t BucketIndex(std::int64_t value_ns) const noexcept {
    const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(value_ns, 0));
    const int s = std::max(static_cast<int>(std::bit_width(v)) - (precision_bits_ + 1), 0);
    return (static_cast<std::size_t>(s) << precision_bits_) + static_cast<std::size_t>(v >> s);
  }
  // The bounds of bucket `index` (< bucket_count()): [BucketLower, BucketUpper).
  constexpr std::int64_t BucketLower(std::size_t index) const noexcept {
    const int s = OctavesAbove(index);
    return static_cast<std::int64_t>(index - (static_cast<std::size_t>(s) << precision_bits_)) << s;
  }
  constexpr std::int64_t BucketUpper(std::size_t index) const noexcept {
    return BucketLower(index) + (std::int64_t{1} << OctavesAbove(index));
  }

  friend constexpr bool operator==(const HistogramLayout&, const HistogramLayout&) = default;

 private:
  constexpr HistogramLayout(int precision_bits, int range_bits) noexcept
      : precision_bits_(precision_bits), range_bits_(range_bits) {}
  // s of the class comment: 0 in the exact range.
  constexpr int OctavesAbove(std::size_t index) const noexcept {
    return std::max(static_cast<int>(index >> precision_bits_) - 1, 0);
  }

  int precision_bits_ = 10;
  int range_bits_ = 37;
};

// The layout's figures, as documented: a change of the default changes every published figure.
static_assert(HistogramLayout().bucket_count() == 28'672);
static_assert(HistogramLayout().exact_limit() == 2048);
static_assert(HistogramLayout().max_trackable() == std::int64_t{1} << 37);

class LatencyHistogram {
 public:
  // Allocates and zeroes every bucket of `layout` (layout.histogram_bytes()): all the memory this
  // histogram will ever use. Not RT-safe.
  explicit LatencyHistogram(const HistogramLayout& layout = {});
  ~LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;
  LatencyHistogram(LatencyHistogram&&) noexcept;
  LatencyHistogram& operator=(LatencyHistogram&&) noexcept;

  // Records one value. Writer thread. RT-safe.
  void Record(std::int64_t value_ns) noexcept;
  // Records one value; any number of threads may call it at once (atomic read-modify-writes,
  // lock-free on every target rtloop builds for; min/max by compare-exchange). Not to be mixed
  // with Record(), Reset(), Merge() or CopyFrom() on the same histogram. RT-safe (lock-free, not
  // wait-free: a compare-exchange retries while another writer moves min or max).
  void RecordShared(std::int64_t value_ns) noexcept;
  // Clears everything. Writer thread. RT-safe.
  void Reset() noexcept;
  // Adds `other` (read as a snapshot) into this. False, and this unchanged, when `other` has
  // another layout (its buckets hold other values). Writer thread of `this`. RT-safe.
  [[nodiscard]] bool Merge(const LatencyHistogram& other) noexcept;
  // Makes this a snapshot copy of `other`. False, and this unchanged, when `other` has another
  // layout. Writer thread of `this`. RT-safe.
  [[nodiscard]] bool CopyFrom(const LatencyHistogram& other) noexcept;

  // The bucket layout, fixed at construction. Any thread. RT-safe.
  const HistogramLayout& layout() const noexcept { return layout_; }

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
  // [layout().max_trackable(), max + 1), saturated at INT64_MAX). Any thread. Not RT-safe: grows
  // `out`.
  void ExportBuckets(std::vector<HistogramBucket>* out) const;

 private:
  using Counter = std::atomic<std::uint64_t>;
  // The values at `percentiles` (ascending) into `out` (same size), in two passes over the buckets,
  // clamped to [lo, hi] (the caller's min and max, read after a non-zero count).
  void ValuesAtPercentiles(std::span<const double> percentiles, std::int64_t lo, std::int64_t hi,
                           std::span<std::int64_t> out) const noexcept;
  HistogramLayout layout_;
  std::unique_ptr<Counter[]> buckets_;
  Counter count_{0};
  Counter negative_count_{0};
  Counter overflow_count_{0};
  std::atomic<std::int64_t> negative_sum_{0};
  std::atomic<std::int64_t> sum_{0};
  std::atomic<std::int64_t> min_;
  std::atomic<std::int64_t> max_;
};

namespace histogram_internal {

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

// Lowers/raises `a` to `v` with other writers about: a compare-exchange loop.
inline void AtomicMin(std::atomic<std::int64_t>& a, std::int64_t v) noexcept {
  std::int64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
inline void AtomicMax(std::atomic<std::int64_t>& a, std::int64_t v) noexcept {
  std::int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace histogram_internal

// Inline: the RT thread records two values a cycle (bench/rtcost/README.md).
inline void LatencyHistogram::Record(std::int64_t value_ns) noexcept {
  if (value_ns < 0) {
    histogram_internal::Bump(negative_count_);
    histogram_internal::AddI64(negative_sum_, value_ns);
  } else if (value_ns >= layout_.max_trackable()) {
    histogram_internal::Bump(overflow_count_);
  } else {
    histogram_internal::Bump(buckets_[layout_.BucketIndex(value_ns)]);
  }
  histogram_internal::AddI64(sum_, value_ns);
  if (value_ns < min_.load(std::memory_order_relaxed)) {
    min_.store(value_ns, std::memory_order_relaxed);
  }
  if (value_ns > max_.load(std::memory_order_relaxed)) {
    max_.store(value_ns, std::memory_order_relaxed);
  }
  // Last, with release: a reader that loads the count (acquire) also sees this value's bucket,
  // sum, min and max.
  count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

inline void LatencyHistogram::RecordShared(std::int64_t value_ns) noexcept {
  // Atomic integer arithmetic wraps (C++20): the sums never overflow into undefined behaviour.
  if (value_ns < 0) {
    negative_count_.fetch_add(1, std::memory_order_relaxed);
    negative_sum_.fetch_add(value_ns, std::memory_order_relaxed);
  } else if (value_ns >= layout_.max_trackable()) {
    overflow_count_.fetch_add(1, std::memory_order_relaxed);
  } else {
    buckets_[layout_.BucketIndex(value_ns)].fetch_add(1, std::memory_order_relaxed);
  }
  sum_.fetch_add(value_ns, std::memory_order_relaxed);
  histogram_internal::AtomicMin(min_, value_ns);
  histogram_internal::AtomicMax(max_, value_ns);
  // Last, with release (a read-modify-write continues every other writer's release sequence): a
  // reader that loads the count (acquire) sees the bucket, sum, min and max of every value counted.
  count_.fetch_add(1, std::memory_order_release);
}

}  // namespace rtloop::telemetry
