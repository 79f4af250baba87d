// Cost of one cycle's bookkeeping in the executor: everything a cycle does except the sleep and
// the Step() (CycleEngine::BeginCycle + EndCycle: context, next release per overrun policy,
// TaskStats, watchdog, observer call). Target: median <= 100 ns.
//
//   build/bin/rtloop_bench_executor --benchmark_format=json --benchmark_repetitions=10
//       --benchmark_report_aggregates_only=true   (one command line)
//
// BM_CycleBookkeeping uses fake times (pure bookkeeping); BM_CycleBookkeepingWithClock adds the
// two clock_gettime calls (wake and done) that the real loop makes.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>

#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/time.h"

namespace {

using rtloop::CycleEngine;
using rtloop::CycleEngineConfig;
using rtloop::CycleObserver;
using rtloop::CycleSample;
using rtloop::OverrunPolicy;
using rtloop::StepResult;
using rtloop::TaskStats;
using rtloop::TimePoint;

// Like a telemetry tap: looks at the sample and counts it.
class CountingObserver final : public CycleObserver {
 public:
  void OnCycle(const CycleSample& s) noexcept override {
    count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    benchmark::DoNotOptimize(s.wakeup_latency_ns);
  }

 private:
  std::atomic<std::uint64_t> count_{0};
};

CycleEngineConfig MakeConfig(TaskStats* stats, CycleObserver* observer, OverrunPolicy policy) {
  CycleEngineConfig c;
  c.period = std::chrono::microseconds(1000);
  c.overrun_policy = policy;
  c.watchdog.max_consecutive_overruns = 10;
  c.watchdog.keep_running_after_fault = true;
  c.observers = {observer};
  c.stats = stats;
  return c;
}

void BM_CycleBookkeeping(benchmark::State& state) {
  TaskStats stats;
  CountingObserver observer;
  const auto policy = static_cast<OverrunPolicy>(state.range(0));
  CycleEngine engine(MakeConfig(&stats, &observer, policy), TimePoint(std::chrono::seconds(1)));
  std::int64_t i = 0;
  for (auto _ : state) {
    // Vary latency and execution a little so min/max branches are exercised; every 64th cycle
    // overruns.
    const TimePoint wake = engine.release() + std::chrono::nanoseconds(5'000 + (i & 1023));
    const auto exec = std::chrono::nanoseconds((i & 63) == 0 ? 1'500'000 : 20'000 + (i & 511));
    const rtloop::CycleContext& ctx = engine.BeginCycle(wake);
    benchmark::DoNotOptimize(&ctx);
    const rtloop::CycleOutcome out = engine.EndCycle(wake + exec, StepResult::kContinue);
    benchmark::DoNotOptimize(out);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CycleBookkeeping)
    ->Arg(static_cast<int>(OverrunPolicy::kSkip))
    ->Arg(static_cast<int>(OverrunPolicy::kCatchUp))
    ->Arg(static_cast<int>(OverrunPolicy::kReanchor));

void BM_CycleBookkeepingWithClock(benchmark::State& state) {
  TaskStats stats;
  CountingObserver observer;
  CycleEngine engine(MakeConfig(&stats, &observer, OverrunPolicy::kSkip),
                     rtloop::Now(rtloop::Clock::kMonotonic));
  for (auto _ : state) {
    const TimePoint wake = rtloop::Now(rtloop::Clock::kMonotonic);
    const rtloop::CycleContext& ctx = engine.BeginCycle(wake);
    benchmark::DoNotOptimize(&ctx);
    const rtloop::CycleOutcome out =
        engine.EndCycle(rtloop::Now(rtloop::Clock::kMonotonic), StepResult::kContinue);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CycleBookkeepingWithClock);

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(rtloop::Now(rtloop::Clock::kMonotonic));
}
BENCHMARK(BM_ClockGettimeMonotonic);

}  // namespace

BENCHMARK_MAIN();
