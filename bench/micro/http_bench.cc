// HTTP endpoint microbenchmarks (issue #12 targets on the reference VM):
//   BM_RenderMetrics/64       one /metrics body for 64 tasks with realistic histograms, as a
//                             scrape renders it (target <= 2 ms of CPU)
//   BM_CollectMetrics/64      the metric families alone, before the text serializer writes them
//   BM_RenderTasksJson/64     the live page's /api/v1/tasks body for 64 tasks (history=5)
//   BM_ScrapeOverHttp/64      a whole GET /metrics over loopback: civetweb, render and transfer;
//                             the counter server_cpu_us is the render CPU the server measured
//   BM_WindowedStatsTick/64   the once-a-second reading of 64 tasks' histograms (housekeeping
//                             thread, not the scrape)
//
//   rtloop_bench_http --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//       --benchmark_format=json
// The RT-thread side (no allocation while scraped) is a test: HttpRtSafetyTest in
// tests/telemetry/http/http_server_test.cc.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "metrics.h"
#include "page_json.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/windowed_stats.h"

namespace rtloop::telemetry {
namespace {

// A hub with `tasks` tasks, each with 200k cycles of log-normal latency (median ~15 us, a tail to
// ms) and execution time, read by a WindowedStats over 12 ticks: the window and history full.
struct Fixture {
  explicit Fixture(int tasks) : hub({.max_tasks = 64}), windows(hub) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> latency(std::log(15'000.0), 0.6);
    std::lognormal_distribution<double> execution(std::log(3'000.0), 0.4);
    for (int t = 0; t < tasks; ++t) {
      TaskConfig c;
      c.name = "task" + std::to_string(t);
      c.period = std::chrono::milliseconds(1);
      c.cpus = {t % 2};
      const auto id = static_cast<TaskId>(t);
      (void)hub.AddTask(id, c);
      hub.OnRtThreadStart(id);
    }
    windows.Tick();
    std::uint64_t seq = 0;
    for (int tick = 0; tick < 12; ++tick) {
      for (int t = 0; t < tasks; ++t) {
        for (int i = 0; i < 16'000; ++i) {
          CycleSample s;
          s.task = static_cast<TaskId>(t);
          s.seq = seq++;
          s.wakeup_latency_ns = static_cast<std::int64_t>(latency(rng));
          s.execution_ns = static_cast<std::int64_t>(execution(rng));
          hub.OnCycle(s);
        }
      }
      windows.Tick();
    }
  }
  internal::MetricsInput Input() const { return {.hub = &hub, .windows = &windows}; }
  TelemetryHub hub;
  WindowedStats windows;
};

void BM_RenderMetrics(benchmark::State& state) {
  const Fixture f(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string body = internal::RenderMetrics(f.Input());
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetrics)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);

// The families alone (what the text serializer then writes out).
void BM_CollectMetrics(benchmark::State& state) {
  const Fixture f(static_cast<int>(state.range(0)));
  std::size_t series = 0;
  for (auto _ : state) {
    const std::vector<prometheus::MetricFamily> families = internal::CollectMetrics(f.Input());
    series = 0;
    for (const prometheus::MetricFamily& m : families) series += m.metric.size();
    benchmark::DoNotOptimize(families.data());
  }
  state.counters["series"] = static_cast<double>(series);
}
BENCHMARK(BM_CollectMetrics)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_RenderTasksJson(benchmark::State& state) {
  const Fixture f(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string body = internal::RenderTasksJson(f.Input(), 5);
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderTasksJson)->Arg(64)->Unit(benchmark::kMicrosecond);

// GET /metrics over loopback, read to the end.
std::size_t Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::size_t total = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const char request[] = "GET /metrics HTTP/1.0\r\n\r\n";
    (void)send(fd, request, sizeof request - 1, MSG_NOSIGNAL);
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) total += static_cast<std::size_t>(n);
  }
  close(fd);
  return total;
}

double ServerScrapeCpuUs(const HttpServer& server) {
  const std::string m = server.RenderMetrics();
  const std::size_t at = m.find("\nrtloop_http_scrape_cpu_seconds ");
  return at == std::string::npos ? -1 : std::stod(m.substr(m.find(' ', at + 1) + 1)) * 1e6;
}

void BM_ScrapeOverHttp(benchmark::State& state) {
  const Fixture f(static_cast<int>(state.range(0)));
  HttpConfig hc;
  hc.address = "127.0.0.1:0";
  hc.max_requests_per_second = 0;  // scrapes back to back
  hc.log_to_stderr = false;
  Result<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(hc, f.hub, {.windows = &f.windows});
  if (!server.ok()) {
    state.SkipWithError(server.status().ToString().c_str());
    return;
  }
  std::size_t bytes = 0;
  double server_cpu = 0;
  for (auto _ : state) {
    bytes = Scrape((*server)->port());
    state.PauseTiming();
    server_cpu += ServerScrapeCpuUs(**server);
    state.ResumeTiming();
  }
  state.counters["reply_bytes"] = static_cast<double>(bytes);
  state.counters["server_cpu_us"] =
      benchmark::Counter(server_cpu, benchmark::Counter::kAvgIterations);
  (*server)->Stop();
}
BENCHMARK(BM_ScrapeOverHttp)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_WindowedStatsTick(benchmark::State& state) {
  Fixture f(static_cast<int>(state.range(0)));
  for (auto _ : state) f.windows.Tick();
}
BENCHMARK(BM_WindowedStatsTick)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rtloop::telemetry

BENCHMARK_MAIN();
