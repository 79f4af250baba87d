#include "rtloop/telemetry/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace rtloop::telemetry {
namespace {

static_assert(noexcept(std::declval<LatencyHistogram&>().Record(0)));
static_assert(noexcept(std::declval<LatencyHistogram&>().RecordShared(0)));
static_assert(noexcept(std::declval<const LatencyHistogram&>().Summary()));
static_assert(noexcept(std::declval<const LatencyHistogram&>().ValueAtPercentile(99.0)));
static_assert(HistogramLayout().histogram_bytes() <= std::size_t{256} * 1024);
static_assert(HistogramLayout().max_trackable() >= 100'000'000'000);
static_assert(noexcept(std::declval<const HistogramLayout&>().BucketIndex(0)));

constexpr HistogramLayout kDefault;

// Nearest-rank percentile of sorted values, the definition the histogram follows: the value of
// rank ceil(p / 100 * n), computed in integers (p in thousandths of a percent) so that no rounding
// of doubles shifts the rank.
std::int64_t ExactPercentile(const std::vector<std::int64_t>& sorted, double p) {
  const auto milli = static_cast<std::uint64_t>(std::llround(p * 1000.0));
  const std::uint64_t n = sorted.size();
  std::uint64_t rank = (milli * n + 99'999) / 100'000;
  rank = std::clamp<std::uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

void ExpectPercentilesWithinError(const std::vector<std::int64_t>& values,
                                  const HistogramLayout& layout = {}) {
  // 0.1 % with the default layout (its buckets are 1/1024 wide, their midpoints half of that off).
  const double error = std::max(0.001, layout.max_relative_error());
  LatencyHistogram h(layout);
  for (std::int64_t v : values) h.Record(v);
  std::vector<std::int64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const HistogramSummary s = h.Summary();
  EXPECT_EQ(s.count, values.size());
  EXPECT_EQ(s.min_ns, sorted.front());
  EXPECT_EQ(s.max_ns, sorted.back());
  std::int64_t sum = 0;
  for (std::int64_t v : values) sum += v;
  EXPECT_EQ(s.sum_ns, sum);
  for (std::size_t i = 0; i < kSummaryPercentiles.size(); ++i) {
    const double p = kSummaryPercentiles[i];
    const std::int64_t exact = ExactPercentile(sorted, p);
    const std::int64_t got = s.percentiles.at(i);
    EXPECT_EQ(got, h.ValueAtPercentile(p)) << "p" << p;
    if (exact < layout.exact_limit()) {
      EXPECT_EQ(got, exact) << "p" << p;
    } else {
      const double rel = std::abs(static_cast<double>(got - exact)) / static_cast<double>(exact);
      EXPECT_LE(rel, error) << "p" << p << " exact " << exact << " got " << got;
    }
  }
  for (double p : {1.0, 10.0, 25.0, 75.0, 95.0, 100.0}) {
    const std::int64_t exact = ExactPercentile(sorted, p);
    const std::int64_t got = h.ValueAtPercentile(p);
    EXPECT_LE(std::abs(static_cast<double>(got - exact)),
              std::max(0.0, static_cast<double>(exact) * error))
        << "p" << p;
  }
}

constexpr std::size_t kN = 1'000'000;

// Every bucket of `layout`: contiguous from 0 to max_trackable(), each value's index its bucket's,
// one value per bucket below exact_limit(), within max_relative_error() above.
void ExpectContiguousLayout(const HistogramLayout& layout) {
  EXPECT_EQ(layout.BucketLower(0), 0);
  for (std::size_t i = 0; i + 1 < layout.bucket_count(); ++i) {
    const std::int64_t lo = layout.BucketLower(i);
    const std::int64_t hi = layout.BucketUpper(i);
    ASSERT_EQ(hi, layout.BucketLower(i + 1)) << i;
    ASSERT_EQ(layout.BucketIndex(lo), i);
    ASSERT_EQ(layout.BucketIndex(hi - 1), i);
    if (lo < layout.exact_limit()) {
      ASSERT_EQ(hi - lo, 1);
    } else {
      ASSERT_LE(static_cast<double>(hi - lo) / static_cast<double>(lo),
                layout.max_relative_error());
    }
  }
  EXPECT_EQ(layout.BucketUpper(layout.bucket_count() - 1), layout.max_trackable());
}

TEST(LatencyHistogramTest, BucketLayoutIsContiguousExactBelow2048AndWithinRelativeError) {
  ExpectContiguousLayout(kDefault);
  EXPECT_EQ(kDefault.bucket_count(), 28'672u);
  EXPECT_EQ(kDefault.exact_limit(), 2048);
  EXPECT_DOUBLE_EQ(kDefault.max_relative_error(), 1.0 / 1024);
}

TEST(LatencyHistogramTest, EmptyHistogramHasNoValidPercentiles) {
  LatencyHistogram h;
  const HistogramSummary s = h.Summary();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.min_ns, 0);
  EXPECT_EQ(s.max_ns, 0);
  EXPECT_EQ(h.ValueAtPercentile(99.0), 0);
  EXPECT_FALSE(s.percentiles.valid);
  for (std::size_t i = 0; i < Percentiles::kLevels.size(); ++i) EXPECT_EQ(s.percentiles.at(i), 0);
}

TEST(LatencyHistogramTest, PercentilesMatchSortedValuesOnUniformData) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::int64_t> dist(0, 200'000);
  std::vector<std::int64_t> v(kN);
  for (auto& x : v) x = dist(rng);
  ExpectPercentilesWithinError(v);
}

TEST(LatencyHistogramTest, PercentilesMatchSortedValuesOnLogNormalData) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> dist(std::log(15'000.0), 0.6);
  std::vector<std::int64_t> v(kN);
  for (auto& x : v) x = static_cast<std::int64_t>(dist(rng));
  ExpectPercentilesWithinError(v);
}

TEST(LatencyHistogramTest, PercentilesMatchSortedValuesOnBimodalData) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> fast(900.0, 80.0);        // exact region
  std::normal_distribution<double> slow(250'000.0, 9000.0);  // log region
  std::bernoulli_distribution pick_slow(0.02);
  std::vector<std::int64_t> v(kN);
  for (auto& x : v) {
    x = std::max<std::int64_t>(0,
                               static_cast<std::int64_t>(pick_slow(rng) ? slow(rng) : fast(rng)));
  }
  ExpectPercentilesWithinError(v);
}

TEST(LatencyHistogramTest, PercentilesMatchSortedValuesOnHeavyTailedData) {
  // Pareto, alpha 1.1, from 5 µs: the tail reaches seconds.
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::int64_t> v(kN);
  for (auto& x : v) {
    const double pareto = 5'000.0 / std::pow(1.0 - u(rng), 1.0 / 1.1);
    x = static_cast<std::int64_t>(std::min(pareto, 1.2e11));
  }
  ExpectPercentilesWithinError(v);
}

// `got` holds exactly what `expected` holds: every bucket, the counts, min, max, sums and
// percentiles.
void ExpectSameHistogram(const LatencyHistogram& got, const LatencyHistogram& expected) {
  std::vector<HistogramBucket> g, e;
  got.ExportBuckets(&g);
  expected.ExportBuckets(&e);
  ASSERT_EQ(g.size(), e.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i].lower_ns, e[i].lower_ns);
    EXPECT_EQ(g[i].upper_ns, e[i].upper_ns);
    EXPECT_EQ(g[i].count, e[i].count);
  }
  const HistogramSummary sg = got.Summary();
  const HistogramSummary se = expected.Summary();
  EXPECT_EQ(sg.count, se.count);
  EXPECT_EQ(sg.negative_count, se.negative_count);
  EXPECT_EQ(sg.overflow_count, se.overflow_count);
  EXPECT_EQ(sg.min_ns, se.min_ns);
  EXPECT_EQ(sg.max_ns, se.max_ns);
  EXPECT_EQ(sg.sum_ns, se.sum_ns);
  EXPECT_EQ(got.negative_sum_ns(), expected.negative_sum_ns());
  EXPECT_EQ(sg.percentiles, se.percentiles);
}

TEST(LatencyHistogramTest, MergeEqualsHistogramOfTheUnion) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(std::log(20'000.0), 1.0);
  LatencyHistogram a, b, all;
  for (int i = 0; i < 200'000; ++i) {
    std::int64_t x = static_cast<std::int64_t>(dist(rng)) - 50;  // a few negatives
    if (i % 10'007 == 0) x = 150'000'000'000;                    // a few overflows
    (i % 3 == 0 ? a : b).Record(x);
    all.Record(x);
  }
  ASSERT_TRUE(a.Merge(b));
  ExpectSameHistogram(a, all);
}

// RecordShared(): the drain and an RT thread whose ring was full record into one histogram at
// once (TaskTelemetry). Three writers at once give exactly the histogram one writer gives.
TEST(LatencyHistogramTest, RecordSharedFromThreeThreadsAtOnceEqualsOneWritersHistogram) {
  constexpr int kWriters = 3;
  constexpr int kPerWriter = 100'000;
  auto value = [](int writer, int i) -> std::int64_t {
    const std::int64_t x =
        (static_cast<std::int64_t>(i) * 7919 + writer * std::int64_t{104'729}) % 3'000'000;
    if (i % 997 == 0) return -x;                  // negatives
    if (i % 10'007 == 0) return 150'000'000'000;  // overflows
    return x;
  };
  LatencyHistogram shared, alone;
  std::vector<std::thread> writers;
  writers.reserve(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&shared, &value, w] {
      for (int i = 0; i < kPerWriter; ++i) shared.RecordShared(value(w, i));
    });
  }
  for (std::thread& t : writers) t.join();
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kPerWriter; ++i) alone.Record(value(w, i));
  }
  EXPECT_EQ(shared.count(), std::uint64_t{kWriters} * kPerWriter);
  ExpectSameHistogram(shared, alone);
}

TEST(LatencyHistogramTest, CopyFromMakesAnEqualSnapshotAndResetClears) {
  LatencyHistogram a, b;
  for (int i = 0; i < 5000; ++i) a.Record(i * std::int64_t{37});
  ASSERT_TRUE(b.CopyFrom(a));
  EXPECT_EQ(b.Summary().percentiles, a.Summary().percentiles);
  EXPECT_EQ(b.count(), a.count());
  b.Reset();
  EXPECT_EQ(b.count(), 0u);
  EXPECT_EQ(b.ValueAtPercentile(50), 0);
}

TEST(LatencyHistogramTest, NearestRankIsExactForCountsPastTwoToThe32) {
  // ceil(p / 100 * total) in integers, also where p * total needs more than 64 bits and on
  // 32-bit targets (armhf), which have no 128-bit integer type.
  constexpr std::uint64_t k2To32 = std::uint64_t{1} << 32;
  EXPECT_EQ(NearestRank(50.0, 2 * k2To32), k2To32);
  EXPECT_EQ(NearestRank(50.0, 2 * k2To32 + 1), k2To32 + 1);
  EXPECT_EQ(NearestRank(99.999, 10'000'000'000'000'000'000u), 9'999'900'000'000'000'000u);
  EXPECT_EQ(NearestRank(99.999, 10'000'000'000'000'000'001u), 9'999'900'000'000'000'001u);
  EXPECT_EQ(NearestRank(100.0, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(NearestRank(0.0, UINT64_MAX), 1u);
  EXPECT_EQ(NearestRank(99.9, 1000), 999u);
#ifdef __SIZEOF_INT128__  // a reference where the compiler has one (x86_64, arm64)
  __extension__ using U128 = unsigned __int128;
  for (const double p : {50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 0.001}) {
    for (const std::uint64_t total : {k2To32 - 1, k2To32, k2To32 + 3, UINT64_MAX / 3, UINT64_MAX}) {
      const auto units = static_cast<std::uint64_t>(std::llround(p * 1e9));
      const U128 want = (U128{units} * total + 99'999'999'999u) / 100'000'000'000u;
      EXPECT_EQ(NearestRank(p, total), static_cast<std::uint64_t>(want)) << p << " " << total;
    }
  }
#endif
}

TEST(LatencyHistogramTest, PercentileRanksFollowTheNearestRankDefinitionExactly) {
  // 1..n are all exact values, so every percentile must be exactly ceil(p / 100 * n). Computed in
  // doubles, 99.9 / 100 * 1000 is 999.0000000000001: a rank one too high (the max).
  for (std::int64_t n : {1000, 2000, 1999, 100, 7}) {
    LatencyHistogram h;
    std::vector<std::int64_t> sorted;
    for (std::int64_t v = 1; v <= n; ++v) {
      h.Record(v);
      sorted.push_back(v);
    }
    const HistogramSummary s = h.Summary();
    for (std::size_t i = 0; i < kSummaryPercentiles.size(); ++i) {
      EXPECT_EQ(s.percentiles.at(i), ExactPercentile(sorted, kSummaryPercentiles[i]))
          << "n " << n << " p" << kSummaryPercentiles[i];
    }
  }
  LatencyHistogram h;
  for (std::int64_t v = 1; v <= 1000; ++v) h.Record(v);
  EXPECT_EQ(h.ValueAtPercentile(99.9), 999);
  EXPECT_EQ(h.ValueAtPercentile(50.0), 500);
  EXPECT_EQ(h.ValueAtPercentile(90.0), 900);
  EXPECT_EQ(h.ValueAtPercentile(99.0), 990);
  EXPECT_EQ(h.ValueAtPercentile(100.0), 1000);
  EXPECT_EQ(h.ValueAtPercentile(0.0), 1);   // rank 1
  EXPECT_EQ(h.ValueAtPercentile(-5.0), 1);  // out of range: clamped
  EXPECT_EQ(h.ValueAtPercentile(250.0), 1000);
  EXPECT_EQ(h.ValueAtPercentile(std::nan("")), 1);
}

TEST(LatencyHistogramTest, BucketBoundariesAtTheExactLimitPowersOfTwoAndTheTopOfTheRange) {
  const HistogramLayout& l = kDefault;
  EXPECT_EQ(l.BucketIndex(2047), 2047u);  // last exact bucket
  EXPECT_EQ(l.BucketIndex(2048), 2048u);  // first log bucket: [2048, 2050)
  EXPECT_EQ(l.BucketLower(2048), 2048);
  EXPECT_EQ(l.BucketUpper(2048), 2050);
  EXPECT_EQ(l.BucketIndex(2049), 2048u);
  for (int k = 11; k < l.range_bits(); ++k) {
    const std::int64_t p = std::int64_t{1} << k;
    const std::size_t at = l.BucketIndex(p);
    EXPECT_EQ(l.BucketLower(at), p) << "2^" << k << " starts a bucket";
    EXPECT_EQ(l.BucketIndex(p - 1), at - 1) << "2^" << k << " - 1 ends the previous one";
  }
  EXPECT_EQ(l.BucketIndex(l.max_trackable() - 1), l.bucket_count() - 1);
  EXPECT_EQ(l.BucketIndex(-1), 0u);  // out of contract, but never out of bounds
  LatencyHistogram h;
  h.Record(l.max_trackable() - 1);  // last bucket
  h.Record(l.max_trackable());      // first overflow value
  EXPECT_EQ(h.overflow_count(), 1u);
  std::vector<HistogramBucket> buckets;
  h.ExportBuckets(&buckets);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].upper_ns, l.max_trackable());
  EXPECT_EQ(buckets[1].lower_ns, l.max_trackable());
  EXPECT_EQ(buckets[1].upper_ns, l.max_trackable() + 1);
}

TEST(LatencyHistogramTest, ExtremeValuesAreReportedExactly) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  LatencyHistogram only_max;
  only_max.Record(kMax);
  EXPECT_EQ(only_max.min_ns(), kMax);  // not mistaken for "empty"
  EXPECT_EQ(only_max.max_ns(), kMax);
  EXPECT_EQ(only_max.ValueAtPercentile(50.0), kMax);
  std::vector<HistogramBucket> buckets;
  only_max.ExportBuckets(&buckets);  // upper bound max + 1 saturates instead of overflowing
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].lower_ns, kDefault.max_trackable());
  EXPECT_EQ(buckets[0].upper_ns, kMax);
  LatencyHistogram only_min;
  only_min.Record(kMin);
  const HistogramSummary s = only_min.Summary();
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.negative_count, 1u);
  EXPECT_EQ(s.min_ns, kMin);
  EXPECT_EQ(s.max_ns, kMin);  // not mistaken for "empty"
  EXPECT_EQ(s.sum_ns, kMin);
  for (std::size_t i = 0; i < Percentiles::kLevels.size(); ++i) {
    EXPECT_EQ(s.percentiles.at(i), kMin);
  }
}

TEST(LatencyHistogramTest, ZeroIsExact) {
  LatencyHistogram h;
  for (int i = 0; i < 10; ++i) h.Record(0);
  const HistogramSummary s = h.Summary();
  EXPECT_EQ(s.min_ns, 0);
  EXPECT_EQ(s.max_ns, 0);
  EXPECT_TRUE(s.percentiles.valid);  // ten measured zeros are data, unlike an empty histogram
  for (std::size_t i = 0; i < Percentiles::kLevels.size(); ++i) EXPECT_EQ(s.percentiles.at(i), 0);
}

TEST(LatencyHistogramTest, NegativeValuesAreCountedSeparatelyAndReflectedInMin) {
  LatencyHistogram h;
  h.Record(-500);
  h.Record(-1500);
  for (int i = 0; i < 98; ++i) h.Record(10'000);
  const HistogramSummary s = h.Summary();
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.negative_count, 2u);
  EXPECT_EQ(s.min_ns, -1500);
  EXPECT_EQ(s.max_ns, 10'000);
  EXPECT_EQ(s.sum_ns, -2000 + 98 * 10'000);
  EXPECT_EQ(h.ValueAtPercentile(1.0), -1000);  // rank among the negatives: their mean
  EXPECT_EQ(h.ValueAtPercentile(50.0), 10'000);
  std::vector<HistogramBucket> buckets;
  h.ExportBuckets(&buckets);
  ASSERT_FALSE(buckets.empty());
  EXPECT_EQ(buckets.front().lower_ns, -1500);
  EXPECT_EQ(buckets.front().upper_ns, 0);
  EXPECT_EQ(buckets.front().count, 2u);
}

TEST(LatencyHistogramTest, ValuesBeyondTheRangeGoToOverflowAndReportTheExactMax) {
  LatencyHistogram h;
  h.Record(100'000'000'000);  // 100 s: still bucketed
  h.Record(200'000'000'000);  // 200 s: overflow
  h.Record(std::numeric_limits<std::int64_t>::max() / 4);
  EXPECT_EQ(h.overflow_count(), 2u);
  EXPECT_EQ(h.max_ns(), std::numeric_limits<std::int64_t>::max() / 4);
  EXPECT_EQ(h.ValueAtPercentile(100.0), std::numeric_limits<std::int64_t>::max() / 4);
  const std::int64_t p10 = h.ValueAtPercentile(10.0);
  EXPECT_LE(std::abs(static_cast<double>(p10) - 1e11), 1e11 * 0.001);
}

// ---------------------------------------------------------------------------------------------
// Issue 18 §4: the layout chosen at set-up (HistogramLayout).

HistogramLayout Layout(int precision_bits, int range_bits) {
  Result<HistogramLayout> l =
      HistogramLayout::Create({.precision_bits = precision_bits, .range_bits = range_bits});
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? *l : HistogramLayout();
}

TEST(HistogramLayoutTest, CreateRefusesFieldsOutOfRangeNamingTheFieldTheRangeAndTheEffect) {
  struct Bad {
    HistogramLayoutConfig config;
    const char* message;
  };
  const Bad bad[] = {
      {{.precision_bits = 3, .range_bits = 30}, "X.precision_bits is 3 — use 4..10 (percentiles"},
      {{.precision_bits = 11, .range_bits = 37}, "X.precision_bits is 11 — use 4..10"},
      {{.precision_bits = -1, .range_bits = 37}, "X.precision_bits is -1 — use 4..10"},
      {{.precision_bits = 7, .range_bits = 19}, "X.range_bits is 19 — use 20..37 (values below"},
      {{.precision_bits = 7, .range_bits = 38}, "X.range_bits is 38 — use 20..37"},
      {{.precision_bits = 10, .range_bits = 0}, "X.range_bits is 0 — use 20..37"},
  };
  for (const Bad& b : bad) {
    const Result<HistogramLayout> l = HistogramLayout::Create(b.config, "X.");
    ASSERT_FALSE(l.ok()) << b.message;
    EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(l.status().message().rfind(b.message, 0), 0u) << l.status().message();
  }
  // Without a prefix the message names the config type.
  EXPECT_EQ(HistogramLayout::Create({.precision_bits = 2})
                .status()
                .message()
                .rfind("HistogramLayoutConfig::precision_bits is 2", 0),
            0u);
  // The config's defaults are the default layout.
  const Result<HistogramLayout> d = HistogramLayout::Create({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, HistogramLayout());
  EXPECT_EQ(d->config().precision_bits, 10);
  EXPECT_EQ(d->config().range_bits, 37);
}

TEST(HistogramLayoutTest, EveryValidLayoutIsContiguousWithinItsErrorAndSizedByTheFormula) {
  for (int p = HistogramLayout::kMinPrecisionBits; p <= HistogramLayout::kMaxPrecisionBits; ++p) {
    for (int r = HistogramLayout::kMinRangeBits; r <= HistogramLayout::kMaxRangeBits; ++r) {
      SCOPED_TRACE("p " + std::to_string(p) + " R " + std::to_string(r));
      const HistogramLayout l = Layout(p, r);
      EXPECT_EQ(l.bucket_count(), static_cast<std::size_t>(r - p + 1) << p);
      EXPECT_EQ(l.exact_limit(), std::int64_t{2} << p);
      EXPECT_EQ(l.max_trackable(), std::int64_t{1} << r);
      EXPECT_LE(l.histogram_bytes(), kDefault.histogram_bytes());
      ExpectContiguousLayout(l);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // The worked example of bench/footprint/README.md: 7 bits, 2^30 ns.
  const HistogramLayout small = Layout(7, 30);
  EXPECT_EQ(small.bucket_count(), 3072u);
  EXPECT_EQ(small.histogram_bytes(), 24u * 1024);
  EXPECT_EQ(small.exact_limit(), 256);
  EXPECT_DOUBLE_EQ(small.max_relative_error(), 1.0 / 128);
}

TEST(HistogramLayoutTest, SmallLayoutBucketsPercentilesAndOverflowAtTheEdgesOfItsRange) {
  const HistogramLayout l = Layout(7, 30);
  constexpr std::int64_t kTop = std::int64_t{1} << 30;
  EXPECT_EQ(l.BucketIndex(255), 255u);  // last exact value
  EXPECT_EQ(l.BucketLower(256), 256);   // first log bucket: [256, 258)
  EXPECT_EQ(l.BucketUpper(256), 258);
  EXPECT_EQ(l.BucketIndex(257), 256u);
  EXPECT_EQ(l.BucketIndex(kTop - 1), l.bucket_count() - 1);
  EXPECT_EQ(l.BucketLower(l.bucket_count() - 1), kTop - (kTop >> 8));
  EXPECT_EQ(l.BucketIndex(-7), 0u);  // out of contract, never out of bounds
  LatencyHistogram h(l);
  EXPECT_EQ(h.layout(), l);
  h.Record(-40);
  h.Record(-20);
  h.Record(255);
  h.Record(kTop - 1);       // the last bucket
  h.Record(kTop);           // the first overflow value
  h.Record(1'500'000'000);  // 1.5 s: overflow, the exact max
  const HistogramSummary s = h.Summary();
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.negative_count, 2u);
  EXPECT_EQ(s.overflow_count, 2u);
  EXPECT_EQ(s.min_ns, -40);
  EXPECT_EQ(s.max_ns, 1'500'000'000);
  EXPECT_EQ(s.sum_ns, -60 + 255 + (kTop - 1) + kTop + 1'500'000'000);
  EXPECT_EQ(h.ValueAtPercentile(20.0), -30);  // rank 2 of 6: among the negatives, their mean
  EXPECT_EQ(h.ValueAtPercentile(50.0), 255);  // rank 3: exact
  const std::int64_t p4 = h.ValueAtPercentile(60.0);  // rank 4: the last bucket's midpoint
  EXPECT_LE(std::abs(static_cast<double>(p4 - (kTop - 1))), static_cast<double>(kTop) / 128);
  EXPECT_LT(p4, kTop);
  EXPECT_EQ(h.ValueAtPercentile(100.0), 1'500'000'000);  // overflow: the exact max
  std::vector<HistogramBucket> buckets;
  h.ExportBuckets(&buckets);
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].lower_ns, -40);  // the negatives
  EXPECT_EQ(buckets[0].upper_ns, 0);
  EXPECT_EQ(buckets[1].lower_ns, 255);
  EXPECT_EQ(buckets[1].upper_ns, 256);
  EXPECT_EQ(buckets[2].lower_ns, kTop - (kTop >> 8));  // the layout's last bucket
  EXPECT_EQ(buckets[2].upper_ns, kTop);
  EXPECT_EQ(buckets[3].lower_ns, kTop);  // overflow from the layout's range on
  EXPECT_EQ(buckets[3].upper_ns, 1'500'000'001);
  EXPECT_EQ(buckets[3].count, 2u);
}

TEST(HistogramLayoutTest, SmallLayoutPercentilesAreWithinItsRelativeError) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(15'000.0), 0.9);
  std::vector<std::int64_t> v(200'000);
  for (auto& x : v) x = static_cast<std::int64_t>(dist(rng));
  ExpectPercentilesWithinError(v, Layout(7, 30));
  ExpectPercentilesWithinError(v, Layout(4, 20));  // 6.25 %; the tail beyond 1 ms is overflow
}

TEST(HistogramLayoutTest, MergeAndCopyFromRefuseAnotherLayoutAndLeaveTheTargetUnchanged) {
  LatencyHistogram big;
  LatencyHistogram small(Layout(7, 30));
  LatencyHistogram small2(Layout(7, 30));
  LatencyHistogram other_range(Layout(7, 31));
  big.Record(5000);
  small.Record(7000);
  small2.Record(9000);
  other_range.Record(11000);
  EXPECT_FALSE(big.Merge(small));
  EXPECT_FALSE(small.Merge(big));
  EXPECT_FALSE(small.Merge(other_range));
  EXPECT_FALSE(small.CopyFrom(big));
  EXPECT_FALSE(big.CopyFrom(small));
  EXPECT_EQ(big.count(), 1u);
  EXPECT_EQ(big.max_ns(), 5000);
  EXPECT_EQ(small.count(), 1u);
  EXPECT_EQ(small.max_ns(), 7000);
  ASSERT_TRUE(small.Merge(small2));  // the same layout
  EXPECT_EQ(small.count(), 2u);
  EXPECT_EQ(small.max_ns(), 9000);
  ASSERT_TRUE(small2.CopyFrom(small));
  EXPECT_EQ(small2.Summary().percentiles, small.Summary().percentiles);
}

TEST(HistogramLayoutTest, AMovedHistogramKeepsItsLayout) {
  LatencyHistogram a(Layout(6, 24));
  a.Record(100);
  LatencyHistogram b(std::move(a));
  EXPECT_EQ(b.layout(), Layout(6, 24));
  LatencyHistogram c;
  c = std::move(b);
  EXPECT_EQ(c.layout(), Layout(6, 24));
  c.Record(std::int64_t{1} << 24);  // overflow in this layout
  EXPECT_EQ(c.overflow_count(), 1u);
  EXPECT_EQ(c.count(), 2u);
}

}  // namespace
}  // namespace rtloop::telemetry
