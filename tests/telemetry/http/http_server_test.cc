// The HTTP endpoint on loopback, what it serves: /metrics content, the page and its JSON feed, the
// token, refused requests, and that scrapes cost the RT threads no allocation. Its start-up
// errors, its life in a Runtime and misbehaving clients are http_start_test.cc's.
#include "rtloop/telemetry/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "http_test_util.h"
#include "metrics.h"
#include "page_json.h"
#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/utf8.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::HttpGet;
using testing::HttpReply;
using testing::Rig;
using testing::RigConfig;
using testing::Sample;
using testing::ScratchDir;

void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path) << content;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A rig whose tasks have finished, a WindowedStats ticked by the test, and an HTTP server.
class HttpServerTest : public ::testing::Test {
 protected:
  void Build(int tasks, std::uint64_t cycles, HttpConfig hc = {}) {
    RigConfig rc;
    rc.tasks = tasks;
    rc.period = std::chrono::microseconds(200);
    rc.cycles = cycles;
    ASSERT_TRUE(rig_.Build(rc).ok());
    windows_ = std::make_unique<WindowedStats>(rig_.hub());
    windows_->Tick();  // baseline (before any cycle)
    if (hc.address == HttpConfig().address) hc.address = "127.0.0.1:0";
    hc.log_to_stderr = false;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(
        hc, rig_.hub(),
        {.executor = &rig_.executor(), .collector = &rig_.collector(), .windows = windows_.get()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    http_ = std::move(*s);
  }
  // One task of `cycles`, the server's token in dir/token.
  void BuildWithToken(const ScratchDir& dir, const std::string& token, std::uint64_t cycles) {
    WriteFile(dir / "token", token + "\n");
    HttpConfig hc;
    hc.token_file = (dir / "token").string();
    Build(1, cycles, hc);
  }
  void RunToEnd() {
    ASSERT_TRUE(rig_.StartTasks().ok());
    rig_.WaitTasks();
    windows_->Tick();
  }
  std::string Metrics(const std::string& headers = {}) {
    const HttpReply r = HttpGet(http_->port(), "/metrics", headers);
    EXPECT_EQ(r.status, 200) << r.error << r.body;
    return r.body;
  }

  Rig rig_;
  std::unique_ptr<WindowedStats> windows_;
  std::unique_ptr<HttpServer> http_;
};

// `n` cycles of task 0 with wake-up latency `v`, numbered from *seq on.
void RecordLatency(TelemetryHub& hub, std::uint64_t* seq, std::int64_t v, int n) {
  for (int i = 0; i < n; ++i) {
    CycleSample c;
    c.seq = (*seq)++;
    c.wakeup_latency_ns = v;
    hub.OnCycle(c);
  }
}

TEST(HttpMetricsTest, HdrBucketsCountTowardsTheFirstBoundaryThatHoldsAllTheirValues) {
  using internal::kHistogramBoundsNs;
  TelemetryHub hub;
  ASSERT_TRUE(hub.AddTask(0, TaskConfig{}).ok());
  hub.OnRtThreadStart(0);
  WindowedStats windows(hub);
  std::uint64_t seq = 0;
  auto record = [&](std::int64_t v, int n) { RecordLatency(hub, &seq, v, n); };
  record(-50, 3);             // early wake-ups: <= every boundary
  record(1000, 5);            // exact region: le=1us
  record(1001, 7);            // > 1 us: le=2us
  record(4999, 11);           // bucket [4996, 5000): all <= 5 us
  record(5001, 13);           // bucket [5000, 5004) straddles 5 us: counted at le=10us
  record(20'000'000'000, 2);  // beyond 10 s: +Inf only
  windows.Tick();
  const std::vector<std::uint64_t> bins =
      windows.Reading(0, false, kHistogramBoundsNs).latency.bins;
  ASSERT_EQ(bins.size(), kHistogramBoundsNs.size() + 1);
  EXPECT_EQ(bins[0], 3u + 5u);  // le=1e-06
  EXPECT_EQ(bins[1], 7u);       // le=2e-06
  EXPECT_EQ(bins[2], 11u);      // le=5e-06
  EXPECT_EQ(bins[3], 13u);      // le=1e-05
  EXPECT_EQ(bins.back(), 2u);   // +Inf
  // The seconds table says the same as the nanoseconds one.
  for (std::size_t i = 0; i < kHistogramBoundsNs.size(); ++i) {
    EXPECT_DOUBLE_EQ(internal::kHistogramBoundsSeconds[i],
                     static_cast<double>(kHistogramBoundsNs[i]) * 1e-9);
  }
}

// Issue 18 §4: with a small histogram layout (7 bits: values below 2^30 ns bucketed), /metrics'
// fixed boundaries beyond the range still count what they hold (the overflow bucket [2^30, max]
// at the first boundary >= its max), and the page's bins end at the top of the range (its
// overflow bin is left out, as before: the max shows it).
TEST(HttpMetricsTest, ASmallHistogramLayoutKeepsMetricsAndPageBinsRightBeyondItsRange) {
  using internal::kHistogramBoundsNs;
  const Result<HistogramLayout> small =
      HistogramLayout::Create({.precision_bits = 7, .range_bits = 30});
  ASSERT_TRUE(small.ok());
  TelemetryHub hub({.histogram_layout = *small});
  ASSERT_TRUE(hub.AddTask(0, TaskConfig{}).ok());
  hub.OnRtThreadStart(0);
  WindowedStats windows(hub);
  windows.Tick();
  std::uint64_t seq = 0;
  auto record = [&](std::int64_t v, int n) { RecordLatency(hub, &seq, v, n); };
  constexpr std::int64_t kTop = std::int64_t{1} << 30;
  record(999, 3);            // bucket [996, 1000): le=1us
  record(1000, 5);           // bucket [1000, 1004) straddles 1 us in this layout: le=2us
  record(kTop - 1, 7);       // the top bucket [2^30 - 2^22, 2^30): all <= 2 s, not <= 1 s
  record(1'500'000'000, 2);  // overflow, the max: <= 2 s
  windows.Tick();
  const std::vector<std::uint64_t> bins =
      windows.Reading(0, false, kHistogramBoundsNs).latency.bins;
  ASSERT_EQ(bins.size(), kHistogramBoundsNs.size() + 1);
  ASSERT_EQ(kHistogramBoundsNs[18], 1'000'000'000);
  ASSERT_EQ(kHistogramBoundsNs[19], 2'000'000'000);
  EXPECT_EQ(bins[0], 3u);        // le=1e-06
  EXPECT_EQ(bins[1], 5u);        // le=2e-06
  EXPECT_EQ(bins[18], 0u);       // le=1
  EXPECT_EQ(bins[19], 7u + 2u);  // le=2: the top bucket and the overflow
  EXPECT_EQ(bins.back(), 0u);    // +Inf: nothing beyond 2 s
  const internal::MetricsInput in{.hub = &hub, .windows = &windows};
  const std::string m = internal::RenderMetrics(in);
  const std::size_t le2 = m.find("rtloop_task_wakeup_latency_seconds_bucket{");
  ASSERT_NE(le2, std::string::npos) << m;
  const std::string line2 = "le=\"2\"} 17";  // cumulative: 3 + 5 + 9
  EXPECT_NE(m.find(line2, le2), std::string::npos) << m;
  // The page: bins up to 2^30 ns, the top bucket in the last one, the overflow left out.
  const std::vector<std::int64_t> bounds = internal::PageBinBounds(*small);
  EXPECT_EQ(bounds.front(), 256);
  EXPECT_EQ(bounds.back(), kTop);
  EXPECT_EQ(internal::PageBinBounds(HistogramLayout()).back(), std::int64_t{1} << 37);
  const std::string json = internal::RenderTasksJson(in, 0);
  const std::string top_bin =
      "[" + std::to_string(bounds[bounds.size() - 2]) + "," + std::to_string(kTop) + ",7]]";
  ASSERT_EQ(bounds[16], 1024);  // 2^(80/8): 999 and 1000..1003 are in its bin
  EXPECT_NE(json.find("\"histogram\":[[" + std::to_string(bounds[15]) + ",1024,8]," + top_bin),
            std::string::npos)
      << json;
}

TEST_F(HttpServerTest, MetricsReportEveryTaskCountersHistogramsAndPercentiles) {
  Build(2, 500);
  RunToEnd();
  const std::string m = Metrics();
  for (const char* name : {"rtloop_task_cycles_total",
                           "rtloop_task_overruns_total",
                           "rtloop_task_missed_releases_total",
                           "rtloop_task_faults_total",
                           "rtloop_task_state",
                           "rtloop_task_ring_dropped_samples_total",
                           "rtloop_task_subscriber_lost_samples_total",
                           "rtloop_task_rt_fallback",
                           "rtloop_task_period_seconds",
                           "rtloop_task_wakeup_latency_seconds_bucket",
                           "rtloop_task_execution_time_seconds_count",
                           "rtloop_task_wakeup_latency_max_seconds",
                           "rtloop_task_wakeup_latency_window_seconds",
                           "rtloop_task_execution_time_max_seconds",
                           "rtloop_task_execution_time_window_seconds",
                           "rtloop_process_memory_locked_bytes",
                           "rtloop_process_resident_memory_bytes",
                           "rtloop_process_cpu_seconds_total",
                           "rtloop_process_thread_cpu_seconds_total",
                           "rtloop_http_requests_total",
                           "rtloop_tasks"}) {
    EXPECT_NE(m.find(std::string("\n") + name), std::string::npos) << name;
  }
  const std::string labels0 = "{task=\"task0\",cpu=\"any\",policy=\"other\",priority=\"0\"";
  for (const TaskId id : rig_.ids()) {
    const TaskStatsSnapshot s = rig_.executor().Stats(id);
    const std::string labels = "{task=\"task" + std::to_string(id) + "\"";
    EXPECT_EQ(Sample(m, "rtloop_task_cycles_total" + labels), static_cast<double>(s.cycles));
    EXPECT_EQ(Sample(m, "rtloop_task_overruns_total" + labels), static_cast<double>(s.overruns));
    EXPECT_EQ(Sample(m, "rtloop_task_wakeup_latency_seconds_count" + labels), 500.0);
    EXPECT_EQ(Sample(m, "rtloop_task_wakeup_latency_seconds_bucket" + labels +
                            ",cpu=\"any\",policy=\"other\",priority=\"0\",le=\"+Inf\""),
              500.0);
    const Result<TaskReport> snap = rig_.hub().Snapshot(id);
    ASSERT_TRUE(snap.ok());
    // Since start: the exact max and rtloop's own p99 (same nearest-rank percentile).
    const double max = Sample(m, "rtloop_task_wakeup_latency_max_seconds" + labels +
                                     ",cpu=\"any\",policy=\"other\",priority=\"0\",window=\"all\"");
    EXPECT_DOUBLE_EQ(max, static_cast<double>(snap->latency.max_ns) * 1e-9);
    const double p99 = Sample(
        m, "rtloop_task_wakeup_latency_window_seconds" + labels +
               ",cpu=\"any\",policy=\"other\",priority=\"0\",window=\"all\",quantile=\"0.99\"");
    EXPECT_NEAR(p99, static_cast<double>(snap->latency.percentiles.p99_ns) * 1e-9,
                static_cast<double>(snap->latency.percentiles.p99_ns) * 1e-9 / 1024 + 1e-9);
    EXPECT_EQ(Sample(m, "rtloop_task_state" + labels +
                            ",cpu=\"any\",policy=\"other\",priority=\"0\",state=\"stopped\""),
              1.0);
    EXPECT_EQ(Sample(m, "rtloop_task_state" + labels +
                            ",cpu=\"any\",policy=\"other\",priority=\"0\",state=\"running\""),
              -1.0);  // only the current state has a series
  }
  EXPECT_NE(m.find(labels0), std::string::npos) << m.substr(0, 2000);
  // The window gauges carry the configured window.
  EXPECT_NE(m.find("window=\"10s\""), std::string::npos);
  EXPECT_NE(m.find("# TYPE rtloop_task_wakeup_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(m.find("le=\"1e-06\""), std::string::npos);
}

TEST_F(HttpServerTest, TaskWithoutDataHasNoPercentileOrMaxSeries) {
  Build(1, 100);
  windows_->Tick();  // nothing ran
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, "rtloop_task_cycles_total{task=\"task0\""), 0.0);
  EXPECT_EQ(m.find("rtloop_task_wakeup_latency_max_seconds{"), std::string::npos);
  EXPECT_EQ(m.find("rtloop_task_wakeup_latency_window_seconds{"), std::string::npos);
  const HttpReply j = HttpGet(http_->port(), "/api/v1/tasks");
  ASSERT_EQ(j.status, 200);
  EXPECT_NE(j.body.find("\"has_data\":false"), std::string::npos);
  EXPECT_NE(j.body.find("\"max\":null"), std::string::npos);
}

TEST_F(HttpServerTest, PageAndEmbeddedDygraphsAreServedWithoutAnythingInstalled) {
  Build(1, 10);
  const HttpReply page = HttpGet(http_->port(), "/");
  ASSERT_EQ(page.status, 200) << page.error;
  EXPECT_NE(page.headers.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(page.body.find("/dygraph.min.js"), std::string::npos);
  const HttpReply js = HttpGet(http_->port(), "/dygraph.min.js");
  ASSERT_EQ(js.status, 200);
  EXPECT_EQ(js.body, ReadFile(RTLOOP_DYGRAPHS_JS));  // Debian's file, byte for byte
  EXPECT_EQ(HttpGet(http_->port(), "/app.js").status, 200);
  EXPECT_EQ(HttpGet(http_->port(), "/dygraph.min.css").status, 200);
  const HttpReply head = HttpGet(http_->port(), "/", {}, milliseconds(10'000), "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST_F(HttpServerTest, TasksJsonHasEveryTaskWithItsHistoryAndHistogram) {
  Build(3, 300);
  RunToEnd();
  windows_->Tick();
  const HttpReply r = HttpGet(http_->port(), "/api/v1/tasks?history=60");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_NE(r.headers.find("application/json"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(r.body.find("\"name\":\"task" + std::to_string(i) + "\""), std::string::npos);
  }
  EXPECT_NE(r.body.find("\"cycles\":300"), std::string::npos);
  EXPECT_NE(r.body.find("\"histogram\":[["), std::string::npos);
  EXPECT_NE(r.body.find("\"history\":[["), std::string::npos);
}

// Issue 17: a task name is bytes; the page's JSON passed them through, and /metrics too, so a name
// that is not UTF-8 made the feed invalid (JSON.parse and Prometheus refuse it). Both now carry
// U+FFFD for each bad part (rtloop/telemetry/utf8.h), and two names that differ only in bad bytes
// still give two series.
TEST_F(HttpServerTest, TaskNamesThatAreNotUtf8AreServedAsValidUtf8) {
  RigConfig none;
  none.tasks = 0;
  ASSERT_TRUE(rig_.Build(none).ok());
  ASSERT_TRUE(rig_.AddTask("pos\xff\x1b", std::chrono::microseconds(200), 5).ok());
  ASSERT_TRUE(rig_.AddTask("pos\xfe\x1b", std::chrono::microseconds(200), 5).ok());
  windows_ = std::make_unique<WindowedStats>(rig_.hub());
  HttpConfig hc;
  hc.address = "127.0.0.1:0";
  hc.log_to_stderr = false;
  Result<std::unique_ptr<HttpServer>> s =
      HttpServer::Start(hc, rig_.hub(), {.executor = &rig_.executor(), .windows = windows_.get()});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  http_ = std::move(*s);
  const HttpReply j = HttpGet(http_->port(), "/api/v1/tasks");
  ASSERT_EQ(j.status, 200) << j.error;
  EXPECT_TRUE(IsValidUtf8(j.body)) << j.body;
  EXPECT_NE(j.body.find("\"name\":\"pos\xef\xbf\xbd\\u001b\""), std::string::npos) << j.body;
  const std::string m = Metrics();
  EXPECT_TRUE(IsValidUtf8(m));
  EXPECT_GE(Sample(m, "rtloop_task_cycles_total{task=\"pos\xef\xbf\xbd\x1b#0\""), 0.0) << m;
  EXPECT_GE(Sample(m, "rtloop_task_cycles_total{task=\"pos\xef\xbf\xbd\x1b#1\""), 0.0) << m;
}

// history=N gets at most what the server keeps (HttpConfig.history): a huge N, or one past the
// 86400 s cap, costs no more than that. (A value longer than 15 characters gets no history.)
TEST_F(HttpServerTest, HistoryBeyondWhatTheServerKeepsGetsWhatItKeeps) {
  Build(2, 300);
  RunToEnd();
  windows_->Tick();
  const HttpReply kept = HttpGet(http_->port(), "/api/v1/tasks?history=300");
  ASSERT_EQ(kept.status, 200) << kept.error;
  for (const char* n : {"86401", "999999999999999"}) {
    const HttpReply huge = HttpGet(http_->port(), std::string("/api/v1/tasks?history=") + n);
    EXPECT_EQ(huge.status, 200) << n;
    EXPECT_EQ(huge.body.size(), kept.body.size()) << "history=" << n;
  }
}

TEST_F(HttpServerTest, UnknownPathsAndMethodsAreRefused) {
  Build(1, 10);
  EXPECT_EQ(HttpGet(http_->port(), "/nothing").status, 404);
  EXPECT_EQ(HttpGet(http_->port(), "/metrics", {}, milliseconds(10'000), "POST").status, 405);
  EXPECT_EQ(HttpGet(http_->port(), "/../etc/passwd").status, 404);
}

TEST_F(HttpServerTest, DataNeedsTheTokenThePageDoesNot) {
  const ScratchDir dir("http_token");
  BuildWithToken(dir, "s3cret-token", 50);
  RunToEnd();
  const HttpReply none = HttpGet(http_->port(), "/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.headers.find("WWW-Authenticate: Bearer"), std::string::npos);
  EXPECT_NE(none.body.find("Authorization: Bearer"), std::string::npos);
  EXPECT_EQ(none.body.find("rtloop_task"), std::string::npos);
  EXPECT_EQ(HttpGet(http_->port(), "/metrics", "Authorization: Bearer wrong\r\n").status, 401);
  EXPECT_EQ(HttpGet(http_->port(), "/api/v1/tasks").status, 401);
  EXPECT_EQ(HttpGet(http_->port(), "/metrics", "Authorization: Bearer s3cret-token\r\n").status,
            200);
  EXPECT_EQ(
      HttpGet(http_->port(), "/api/v1/tasks", "authorization: bearer s3cret-token\r\n").status,
      200);
  EXPECT_EQ(HttpGet(http_->port(), "/").status, 200);
  const std::string m = Metrics("Authorization: Bearer s3cret-token\r\n");
  EXPECT_GE(Sample(m, "rtloop_http_requests_total{code=\"401\"}"), 3.0);
}

// Exactly one Authorization header with the token, as the gRPC server wants one value: a second
// header, right, wrong or empty, in either order, is refused.
TEST_F(HttpServerTest, TwoAuthorizationHeadersAreRefused) {
  const ScratchDir dir("http_two_tokens");
  BuildWithToken(dir, "RIGHT", 10);
  const std::string right = "Authorization: Bearer RIGHT\r\n";
  EXPECT_EQ(HttpGet(http_->port(), "/metrics", right).status, 200);
  for (const std::string& second :
       std::vector<std::string>{"Authorization: Bearer WRONG\r\n", "Authorization:\r\n",
                                "authorization: x\r\n", right}) {
    for (const std::string& headers : {right + second, second + right}) {
      for (const char* path : {"/metrics", "/api/v1/tasks"}) {
        const HttpReply r = HttpGet(http_->port(), path, headers);
        EXPECT_EQ(r.status, 401) << path << "\n" << headers << r.raw;
        EXPECT_EQ(r.body.find("rtloop_task"), std::string::npos);
      }
    }
  }
}

// Whatever a client sends, it gets an HTTP/1.1 status line (HttpRaw checks it) and the request
// is counted under that code: WebSocket upgrades (served as the plain request), absolute URIs
// (for this server: served; for another: 404), "*" targets, and what civetweb refuses itself.
TEST_F(HttpServerTest, EveryRequestGetsAStatusLineAndIsCounted) {
  Build(1, 10);
  const int port = http_->port();
  const std::string ws =
      " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  const std::string host = " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::pair<std::string, int> cases[] = {
      {"GET /" + ws, 200},
      {"GET /metrics" + ws, 200},
      {"GET /nothing" + ws, 404},
      {"GET /metrics HTTP/1.1\r\nConnection: Upgrade\r\n\r\n", 200},  // no Upgrade header
      {"GET http://127.0.0.1:" + std::to_string(port) + "/metrics" + host, 200},
      {"GET http://example.org:" + std::to_string(port) + "/" + host, 200},
      {"GET http://127.0.0.1:1/metrics" + host, 404},  // another server: not a proxy
      {"OPTIONS *" + host, 405},
      {"GET *" + host, 404},
      {"CONNECT 127.0.0.1:80" + host, 400},
      {"HELLO\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 411},
  };
  std::map<int, int> sent;
  for (const auto& [request, code] : cases) {
    const HttpReply r = testing::HttpRaw(port, request);
    EXPECT_EQ(r.status, code) << request.substr(0, 80) << "\n" << r.error << "\n" << r.raw;
    EXPECT_EQ(r.raw.rfind("HTTP/1.1 ", 0), 0u) << request.substr(0, 80) << "\n" << r.raw;
    ++sent[code];
  }
  EXPECT_EQ(http_->requests(), std::size(cases));
  const std::string m = Metrics();  // counted after it is rendered
  for (const int code : internal::kHttpStatusCodes) {
    EXPECT_EQ(Sample(m, "rtloop_http_requests_total{code=\"" + std::to_string(code) + "\"}"),
              static_cast<double>(sent[code]))
        << code;
  }
}

// Reads its own thread's allocation count at cycle kFrom and at its last cycle.
class AllocationWatchTask final : public PeriodicTask {
 public:
  static constexpr std::uint64_t kFrom = 200;
  explicit AllocationWatchTask(std::uint64_t last) : last_(last) {}
  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle == kFrom) from_.store(rtloop::testing::ThreadAllocations());
    if (ctx.cycle == last_) to_.store(rtloop::testing::ThreadAllocations());
    return StepResult::kContinue;
  }
  std::uint64_t steady_state_allocations() const { return to_.load() - from_.load(); }

 private:
  const std::uint64_t last_;
  std::atomic<std::uint64_t> from_{0};
  std::atomic<std::uint64_t> to_{0};
};

TEST(HttpRtSafetyTest, ScrapesAndThePageFeedCauseNoAllocationOnRtThreads) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is off under sanitizers";
  }
  constexpr int kTasks = 4;
  constexpr std::uint64_t kCyclesPerTask = 3000;  // 500 us period: 1.5 s under scraping
  ExecutorConfig ec;
  ec.lock_memory = false;
  Result<std::unique_ptr<Executor>> ex = Executor::Create(ec);
  ASSERT_TRUE(ex.ok());
  TelemetryHub hub;
  std::vector<std::unique_ptr<AllocationWatchTask>> tasks;
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<AllocationWatchTask>(kCyclesPerTask - 1));
    TaskConfig tc;
    tc.name = "watch" + std::to_string(i);
    tc.period = std::chrono::microseconds(500);
    tc.policy = SchedPolicy::kOther;
    tc.priority = 0;
    tc.max_cycles = kCyclesPerTask;
    tc.observers = {&hub};
    Result<TaskId> id = (*ex)->AddTask(*tasks.back(), tc);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(hub.AddTask(*id, tc).ok());
  }
  hub.AttachStats(**ex);
  Collector collector(hub);
  ASSERT_TRUE(collector.Start().ok());
  WindowedStats windows(hub, {.window = std::chrono::seconds(1),
                              .history = std::chrono::seconds(60),
                              .tick = milliseconds(50)});
  ASSERT_TRUE(windows.Start().ok());
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      {.address = "127.0.0.1:0", .max_requests_per_second = 0, .log_to_stderr = false}, hub,
      {.executor = ex->get(), .collector = &collector, .windows = &windows});
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  std::thread scraper([&] {
    while (!done.load()) {
      if (HttpGet((*http)->port(), "/metrics").status == 200) ++scrapes;
      if (HttpGet((*http)->port(), "/api/v1/tasks?history=300").status == 200) ++scrapes;
    }
  });
  ASSERT_TRUE((*ex)->Start().ok());
  (*ex)->Wait();
  done.store(true);
  scraper.join();
  EXPECT_GT(scrapes.load(), 10);
  for (const auto& t : tasks) EXPECT_EQ(t->steady_state_allocations(), 0u);
  (*http)->Stop();
  windows.Stop();
  collector.Stop();
}

}  // namespace
}  // namespace rtloop::telemetry
