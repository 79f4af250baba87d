// The /metrics content: prometheus-cpp MetricFamily values built at scrape time from a
// TelemetryHub, the executor's counters and WindowedStats readings, and the fixed `le` boundaries
// of the latency histograms. No civetweb here; the names are documented in README.md beside this
// file. Internal to rtloop_telemetry.
//
// Not RT-safe: allocates, reads /proc. Thread-safe: reads only thread-safe accessors.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop {
class Executor;
}  // namespace rtloop

namespace rtloop::explain {
class OutlierFeed;
}  // namespace rtloop::explain

namespace rtloop::telemetry {
class Collector;
class TelemetryHub;
class WindowedStats;
}  // namespace rtloop::telemetry

namespace rtloop::telemetry::internal {

// The `le` boundaries of rtloop_task_wakeup_latency_seconds and rtloop_task_execution_time_seconds:
// 1-2-5 steps from 1 us to 10 s, in nanoseconds (and +Inf). An HDR bucket [lower, upper) counts
// towards the first boundary L with upper - 1 <= L, i.e. only when all of its values are <= L
// (WindowedStats::Reading's bins). So
// bucket{le=L} counts exactly the values <= L except those in the one HDR bucket that straddles L
// (values in (L - w, L], w <= L / 1024), which move to the next boundary: exact for L < 2048 ns
// (1 us, 2 us), otherwise at most 0.1% of L too strict, never too lenient (a latency is never
// shown below the boundary it exceeds). Those are the default layout's figures: with P precision
// bits (TelemetryConfig::histogram_layout), w <= L / 2^P and exact below 2^(P+1) ns; the
// overflow bucket beyond the layout's range counts at the first boundary >= its exact max.
inline constexpr std::array<std::int64_t, 22> kHistogramBoundsNs = {
    1'000,         2'000,         5'000,         10'000,        20'000,      50'000,
    100'000,       200'000,       500'000,       1'000'000,     2'000'000,   5'000'000,
    10'000'000,    20'000'000,    50'000'000,    100'000'000,   200'000'000, 500'000'000,
    1'000'000'000, 2'000'000'000, 5'000'000'000, 10'000'000'000};
// The same boundaries in seconds, as written to `le`.
inline constexpr std::array<double, 22> kHistogramBoundsSeconds = {
    1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3,
    5e-3, 1e-2, 2e-2, 5e-2, 1e-1, 2e-1, 5e-1, 1.0,  2.0,  5.0,  10.0};

// The status codes the HTTP endpoint answers with: its own (200, 401, 404, 405, 429, 503) and
// those of requests civetweb refuses before they are routed (400 malformed, 411 bad
// Content-Length, 413 headers too large, 500, 505 HTTP version). Each is one
// rtloop_http_requests_total series.
inline constexpr std::array<int, 11> kHttpStatusCodes = {200, 400, 401, 404, 405, 411,
                                                         413, 429, 500, 503, 505};

// The code a reply goes out with: `code` when kHttpStatusCodes has it, else 400 for a 4xx and
// 500 for anything else, so what a client gets and what is counted never differ. RT-safe.
int KnownHttpStatus(int code) noexcept;

// The HTTP endpoint's own counters, shown as rtloop_http_* series.
struct HttpCounters {
  // Requests answered, one entry per kHttpStatusCodes code.
  std::array<std::atomic<std::uint64_t>, kHttpStatusCodes.size()> answered{};
  std::atomic<std::int64_t> last_scrape_cpu_ns{-1};  // -1: no scrape yet

  // Counts one reply with KnownHttpStatus(code). RT-safe (relaxed atomic).
  void Count(int code) noexcept;
  std::uint64_t Answered(int code) const noexcept;
};

struct MetricsInput {
  const TelemetryHub* hub = nullptr;
  const WindowedStats* windows = nullptr;  // required
  const Executor* executor = nullptr;      // optional
  const Collector* collector = nullptr;    // optional
  const HttpCounters* http = nullptr;      // optional
  // Optional: the outlier families (read with OutlierFeed::Counts(): no record is copied) and the
  // page's outlier panel.
  const explain::OutlierFeed* outliers = nullptr;
};

// Every family, in the order of the README's table.
std::vector<prometheus::MetricFamily> CollectMetrics(const MetricsInput& in);

// The same as a prometheus-cpp Collectable (what a prometheus::Registry or Exposer takes), so an
// application that already runs prometheus-cpp can register rtloop's metrics with its own.
class TelemetryCollectable final : public prometheus::Collectable {
 public:
  explicit TelemetryCollectable(const MetricsInput& in) : in_(in) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return CollectMetrics(in_); }

 private:
  MetricsInput in_;
};

// A TelemetryCollectable's families in Prometheus's text format (prometheus::TextSerializer).
std::string RenderMetrics(const MetricsInput& in);

}  // namespace rtloop::telemetry::internal
