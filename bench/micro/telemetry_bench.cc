// Telemetry microbenchmarks (issue #3 targets on the reference VM):
//   BM_PerCycleTelemetry       RT-side cost of one cycle in the hub: one ring push (median <=
//                              50 ns; the histograms are the drain's, below). The statistics are
//                              the executor's, counted in rtloop_bench_executor's
//                              BM_CycleBookkeeping.
//   BM_HistogramRecord         one LatencyHistogram::Record (median <= 10 ns)
//   BM_HistogramRecordLayout/P/R   the same with the layout P precision bits, range 2^R ns
//                              (TelemetryConfig::histogram_layout): 10/37 is the default, 7/30 a
//                              small board's; what a layout chosen at run time costs, if anything
//   BM_HistogramSummary        count/min/max/mean + 6 percentiles over a full histogram (<= 100 us)
//   BM_HistogramSummaryLayout/P/R  the same with that layout (the scan is linear in the buckets)
//   BM_CollectorDrain          samples/s the collector drains, records in the histograms and
//                              fans out (>= 5 M samples/s)
//
//   rtloop_bench_telemetry --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//       --benchmark_format=json        (one command line)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/sample_ring.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry {
namespace {

std::vector<std::int64_t> LatencyValues(std::size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(std::log(12'000.0), 0.8);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(dist(rng));
  return v;
}

TaskConfig Config(std::chrono::nanoseconds period) {
  TaskConfig c;
  c.name = "bench";
  c.period = period;
  return c;
}

void BM_PerCycleTelemetry(benchmark::State& state) {
  TelemetryHub hub({.max_tasks = 1, .ring_capacity = 8192});
  if (!hub.AddTask(0, Config(std::chrono::microseconds(100))).ok()) {
    state.SkipWithError("AddTask failed");
    return;
  }
  hub.OnRtThreadStart(0);
  SampleRing::Reader& reader = hub.task(0)->ring().reader();
  std::vector<Sample> drain(8192);
  const std::vector<std::int64_t> lat = LatencyValues(4096);
  CycleSample c;
  c.task = 0;
  std::uint64_t seq = 0;
  for (auto _ : state) {
    c.seq = seq;
    c.release = TimePoint(std::chrono::nanoseconds(static_cast<std::int64_t>(seq) * 100'000));
    c.wakeup_latency_ns = lat[seq & 4095];
    c.execution_ns = 3000 + (lat[(seq + 7) & 4095] & 1023);
    c.period_jitter_ns = lat[seq & 4095] - 12'000;
    hub.OnCycle(c);
    if ((++seq & 4095) == 0) {  // the collector's work, not timed
      state.PauseTiming();
      while (reader.Drain(drain.data(), drain.size()) != 0) {
      }
      state.ResumeTiming();
    }
  }
  state.counters["ring_dropped"] = static_cast<double>(hub.task(0)->ring().writer().dropped());
}
BENCHMARK(BM_PerCycleTelemetry);

void BM_RingPush(benchmark::State& state) {
  auto ring = SampleRing::Create({.capacity = 8192});
  if (!ring.ok()) {
    state.SkipWithError("ring");
    return;
  }
  SampleRing& r = **ring;
  r.writer().AttachToCurrentThread();
  std::vector<Sample> drain(8192);
  Sample s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(r.writer().TryPush(s));
    if ((++s.seq & 4095) == 0) {
      state.PauseTiming();
      while (r.reader().Drain(drain.data(), drain.size()) != 0) {
      }
      state.ResumeTiming();
    }
  }
}
BENCHMARK(BM_RingPush);

void BM_HistogramRecord(benchmark::State& state) {
  LatencyHistogram h;
  const std::vector<std::int64_t> v = LatencyValues(4096);
  std::size_t i = 0;
  for (auto _ : state) {
    h.Record(v[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(BM_HistogramRecord);

// The layout of the benchmark's two arguments (precision bits, range bits); a bad one skips it.
HistogramLayout LayoutOf(benchmark::State& state) {
  Result<HistogramLayout> layout =
      HistogramLayout::Create({.precision_bits = static_cast<int>(state.range(0)),
                               .range_bits = static_cast<int>(state.range(1))});
  if (!layout.ok()) state.SkipWithError(layout.status().message().c_str());
  return layout.ok() ? *layout : HistogramLayout();
}

void BM_HistogramRecordLayout(benchmark::State& state) {
  LatencyHistogram h(LayoutOf(state));
  const std::vector<std::int64_t> v = LatencyValues(4096);
  std::size_t i = 0;
  for (auto _ : state) {
    h.Record(v[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.count());
  state.counters["buckets"] = static_cast<double>(h.layout().bucket_count());
}
BENCHMARK(BM_HistogramRecordLayout)->Args({10, 37})->Args({7, 30});

void SummaryOfAFullHistogram(benchmark::State& state, const HistogramLayout& layout) {
  LatencyHistogram h(layout);
  // Every bucket non-empty: the worst case for a scan.
  for (std::size_t i = 0; i < layout.bucket_count(); ++i) h.Record(layout.BucketLower(i));
  for (std::int64_t x : LatencyValues(1'000'000)) h.Record(x);
  for (auto _ : state) {
    HistogramSummary s = h.Summary();
    benchmark::DoNotOptimize(s);
  }
}

void BM_HistogramSummary(benchmark::State& state) { SummaryOfAFullHistogram(state, {}); }
BENCHMARK(BM_HistogramSummary)->Unit(benchmark::kMicrosecond);

void BM_HistogramSummaryLayout(benchmark::State& state) {
  SummaryOfAFullHistogram(state, LayoutOf(state));
}
BENCHMARK(BM_HistogramSummaryLayout)->Args({7, 30})->Unit(benchmark::kMicrosecond);

// Drains `tasks` full rings of 32768 samples each through the collector (one pass), with
// `subscribers` all-task subscriptions. Filling the rings is not timed.
void BM_CollectorDrain(benchmark::State& state) {
  const auto tasks = static_cast<TaskId>(state.range(0));
  const auto subscribers = static_cast<int>(state.range(1));
  constexpr std::size_t kPerRing = 32768;
  TelemetryHub hub({.max_tasks = tasks, .ring_capacity = kPerRing});
  for (TaskId t = 0; t < tasks; ++t) {
    if (!hub.AddTask(t, Config(std::chrono::microseconds(10))).ok()) {
      state.SkipWithError("AddTask failed");
      return;
    }
    hub.OnRtThreadStart(t);
  }
  Collector collector(hub, {.chunk_size = 4096});
  std::vector<std::shared_ptr<Subscription>> subs;
  subs.reserve(static_cast<std::size_t>(subscribers));
  for (int i = 0; i < subscribers; ++i) {
    subs.push_back(collector.Subscribe({.tasks = {}, .capacity = kPerRing * tasks}));
  }
  std::vector<SampleBatch> batches;
  std::uint64_t seq = 0;
  std::int64_t items = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (TaskId t = 0; t < tasks; ++t) {
      Sample s;
      s.task = static_cast<std::uint16_t>(t);
      SampleRing::Writer& w = hub.task(t)->ring().writer();
      for (std::size_t i = 0; i < kPerRing; ++i) {
        s.seq = seq + i;
        (void)w.TryPush(s);
      }
    }
    seq += kPerRing;
    for (auto& sub : subs) {
      while (sub->Pop(&batches, std::chrono::nanoseconds(0), 1 << 20) != 0) {
      }
    }
    state.ResumeTiming();
    items += static_cast<std::int64_t>(collector.DrainOnce());
  }
  state.SetItemsProcessed(items);
}
BENCHMARK(BM_CollectorDrain)
    ->Args({1, 0})
    ->Args({4, 0})
    ->Args({4, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rtloop::telemetry

BENCHMARK_MAIN();
