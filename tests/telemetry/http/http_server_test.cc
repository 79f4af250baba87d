// The HTTP endpoint on loopback: /metrics content, the page and its JSON feed, the token, and bad
// input (port in use, bad address, unreadable token file, TLS asked for, slow clients, 100
// concurrent scrapers), each a clear error or a refused request, with the RT tasks unaffected and
// nothing leaked.
#include "rtloop/telemetry/http_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

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
#include "port_holder.h"
#include "rtloop/framework/executor.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/utf8.h"
#include "rtloop/telemetry/windowed_stats.h"
#include "scratch_dir.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::ConnectLoopback;
using testing::CountProcEntries;
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
    const Result<TaskTelemetrySnapshot> snap = rig_.hub().Snapshot(id);
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
  hub.AttachExecutor(**ex);
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

// ---------------------------------------------------------------------------------------------
// rtloop::Runtime owns the endpoint through TelemetryConfig::http.

RuntimeConfig RuntimeWithHttp() {
  RuntimeConfig rc;
  rc.app_name = "http_runtime_test";
  rc.executor.lock_memory = false;
  rc.executor.start_delay = milliseconds(5);
  rc.telemetry.grpc.address = "127.0.0.1:0";
  rc.telemetry.grpc.log_to_stderr = false;
  rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  return rc;
}

TEST(HttpRuntimeTest, RuntimeServesMetricsAndThePageWhenHttpIsSetAndStopsItWithTheRest) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(RuntimeWithHttp());
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  std::vector<testing::IdleTask> tasks(2);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    TaskConfig tc;
    tc.name = i == 0 ? "position" : "velocity";
    tc.period = std::chrono::microseconds(500);
    tc.policy = SchedPolicy::kOther;
    tc.priority = 0;
    tc.max_cycles = 400;
    ASSERT_TRUE((*rt)->AddTask(tasks[i], tc).ok());
  }
  ASSERT_NE((*rt)->http(), nullptr);
  const int port = (*rt)->http()->port();
  EXPECT_EQ((*rt)->http_address(), "127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  // The counters are those of the last reading (<= 1 s old, with the histograms): wait for the
  // reading that has the whole run.
  HttpReply m;
  for (int i = 0; i < 200; ++i) {
    m = HttpGet(port, "/metrics");
    ASSERT_EQ(m.status, 200) << m.error;
    if (Sample(m.body, "rtloop_task_cycles_total{task=\"velocity\"") == 400.0 &&
        Sample(m.body, "rtloop_task_cycles_total{task=\"position\"") == 400.0) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(Sample(m.body, "rtloop_task_cycles_total{task=\"position\""), 400.0);
  EXPECT_EQ(Sample(m.body, "rtloop_task_cycles_total{task=\"velocity\""), 400.0);
  EXPECT_NE(m.body.find("rtloop_task_subscriber_lost_samples_total{task=\"position\""),
            std::string::npos);
  EXPECT_EQ(HttpGet(port, "/").status, 200);
  ASSERT_TRUE((*rt)->Stop().ok());
  const int fd = ConnectLoopback(port);
  EXPECT_LT(fd, 0) << "the endpoint stops with the runtime";
  if (fd >= 0) close(fd);
}

TEST(HttpRuntimeTest, WithoutHttpConfigThereIsNoEndpoint) {
  RuntimeConfig rc = RuntimeWithHttp();
  rc.telemetry.http.reset();
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  EXPECT_EQ((*rt)->http(), nullptr);
  EXPECT_EQ((*rt)->http_address(), "");
}

TEST(HttpRuntimeTest, BadHttpConfigFailsCreateNamingTheField) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  RuntimeConfig in_use = RuntimeWithHttp();
  in_use.telemetry.http->address = "127.0.0.1:" + std::to_string(busy.port());
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(in_use);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(rt.status().message().find("telemetry.http->address"), std::string::npos)
      << rt.status().message();
  RuntimeConfig off = RuntimeWithHttp();
  off.telemetry.enabled = false;
  Result<std::unique_ptr<Runtime>> rt_off = Runtime::Create(off);
  ASSERT_FALSE(rt_off.ok());
  EXPECT_NE(rt_off.status().message().find("telemetry.enabled"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Start-up errors

Status StartError(const HttpConfig& hc) {
  TelemetryHub hub;
  HttpConfig c = hc;
  c.log_to_stderr = false;
  Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(c, hub);
  return s.ok() ? Status::Ok() : s.status();
}

TEST(HttpServerStartTest, PortInUseNamesThePortAndTheFix) {
  const rtloop::testing::PortHolder busy;
  ASSERT_GT(busy.port(), 0);
  const int port = busy.port();
  const Status s = StartError({.address = "127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_NE(s.message().find(std::to_string(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
}

TEST(HttpServerStartTest, BadAddressesAreClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"nonsense", "HOST:PORT"},
      {"127.0.0.1:99999", "port"},
      {"[::1]:0", "IPv6"},
      {"192.0.2.1:0", "192.0.2.1"},  // TEST-NET-1: not an address of this machine
  };
  for (const auto& [address, needle] : cases) {
    const Status s = StartError({.address = address});
    EXPECT_FALSE(s.ok()) << address;
    EXPECT_NE(s.message().find(needle), std::string::npos) << address << ": " << s.message();
  }
}

TEST(HttpServerStartTest, UnreadableOrEmptyTokenFileNamesTheFile) {
  const ScratchDir dir("http_bad_token");
  WriteFile(dir / "empty", "  \n");
  for (const std::string& path :
       {(dir / "missing").string(), (dir / "empty").string(), dir.path().string()}) {
    HttpConfig hc;
    hc.address = "127.0.0.1:0";
    hc.token_file = path;
    const Status s = StartError(hc);
    EXPECT_FALSE(s.ok()) << path;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

TEST(HttpServerStartTest, TlsIsRefusedWithTheReason) {
  const Status s =
      StartError({.address = "127.0.0.1:0", .tls_cert_file = "c.pem", .tls_key_file = "k.pem"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("OpenSSL 3"), std::string::npos) << s.message();
}

TEST(HttpServerStartTest, LimitsOutOfRangeNameTheField) {
  const std::pair<HttpConfig, const char*> cases[] = {
      {{.address = "127.0.0.1:0", .threads = 0}, "HttpConfig.threads"},
      {{.address = "127.0.0.1:0", .queue = 0}, "HttpConfig.queue"},
      {{.address = "127.0.0.1:0", .max_in_flight = 9}, "HttpConfig.max_in_flight"},
      {{.address = "127.0.0.1:0", .request_timeout = milliseconds(1)},
       "HttpConfig.request_timeout"},
      {{.address = "127.0.0.1:0", .max_requests_per_second = -1},
       "HttpConfig.max_requests_per_second"},
      {{.address = "127.0.0.1:0", .max_requests_burst = 0.5}, "max_requests_burst"},
      {{.address = "127.0.0.1:0", .window = std::chrono::seconds(0)}, "window"},
      {{.address = "127.0.0.1:0", .cpus = {100000}}, "HttpConfig.cpus"},
  };
  for (const auto& [config, field] : cases) {
    const Status s = StartError(config);
    EXPECT_FALSE(s.ok()) << field;
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  }
}

// ---------------------------------------------------------------------------------------------
// Misbehaving clients: the RT tasks keep running, other clients are served, nothing leaks.

class HttpLoadTest : public ::testing::Test {
 protected:
  // Tasks that run until stopped (1 ms period, SCHED_OTHER) and a server with a short timeout.
  void Build(int tasks, HttpConfig hc) {
    RigConfig rc;
    rc.tasks = tasks;
    rc.period = std::chrono::milliseconds(1);
    rc.cycles = 0;
    ASSERT_TRUE(rig_.Build(rc).ok());
    ASSERT_TRUE(rig_.StartTasks().ok());
    // What the process has without the HTTP server (the rig's gRPC server keeps its threads).
    fds_before_ = CountProcEntries("fd");
    threads_before_ = CountProcEntries("task");
    hc.address = "127.0.0.1:0";
    hc.log_to_stderr = false;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(
        hc, rig_.hub(), {.executor = &rig_.executor(), .collector = &rig_.collector()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    http_ = std::move(*s);
  }
  std::uint64_t Cycles() {
    std::uint64_t n = 0;
    for (const TaskId id : rig_.ids()) n += rig_.executor().Stats(id).cycles;
    return n;
  }
  void ExpectTasksUnaffected() {
    for (const TaskId id : rig_.ids()) {
      const TaskStatsSnapshot s = rig_.executor().Stats(id);
      EXPECT_EQ(s.state, TaskState::kRunning);
      EXPECT_EQ(rig_.hub().task(id)->ring().writer().dropped(), 0u);
    }
  }
  // After Stop(): every socket and thread the server had is gone (the tasks still run).
  void ExpectNothingLeaked() {
    http_->Stop();
    http_.reset();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline &&
           (CountProcEntries("fd") > fds_before_ || CountProcEntries("task") > threads_before_)) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_LE(CountProcEntries("fd"), fds_before_) << testing::ListFds();
    EXPECT_LE(CountProcEntries("task"), threads_before_);
  }
  static void WaitFor(const std::function<bool()>& done, milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }

  int fds_before_ = 0;
  int threads_before_ = 0;
  Rig rig_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpLoadTest, SlowClientsThatNeverReadOrNeverSendHoldOnlyTheirOwnWorkerUntilTheTimeout) {
  Build(64, {.threads = 4, .max_in_flight = 2, .request_timeout = milliseconds(700)});
  std::this_thread::sleep_for(milliseconds(1200));  // the server's own windows have a reading
  // A client that asks for /metrics with a tiny receive buffer and never reads its reply.
  const int reader = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 1024;
  setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(http_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(reader, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string get = "GET /metrics HTTP/1.0\r\n\r\n";
  ASSERT_EQ(send(reader, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
  // A client that connects and never sends its request.
  const int mute = ConnectLoopback(http_->port());
  ASSERT_GE(mute, 0);
  const std::uint64_t cycles_before = Cycles();
  for (int i = 0; i < 10; ++i) {
    const HttpReply r = HttpGet(http_->port(), "/metrics");
    EXPECT_TRUE(r.status == 200 || r.status == 503) << r.status << " " << r.error;
  }
  // Within the timeout (plus civetweb's polling) both stalled connections are released.
  WaitFor([&] { return http_->in_flight() == 0; }, milliseconds(5000));
  EXPECT_EQ(http_->in_flight(), 0u);
  EXPECT_EQ(HttpGet(http_->port(), "/metrics").status, 200);
  EXPECT_GT(Cycles(), cycles_before);
  ExpectTasksUnaffected();
  close(reader);
  close(mute);
  ExpectNothingLeaked();
}

TEST_F(HttpLoadTest, HundredConcurrentScrapersEachGetMetricsOrARefusal) {
  Build(8, {.threads = 4,
            .queue = 16,
            .max_in_flight = 2,
            .request_timeout = milliseconds(2000),
            .max_requests_per_second = 0});  // concurrency alone: 503, never 429
  std::this_thread::sleep_for(milliseconds(1100));
  const std::uint64_t cycles_before = Cycles();
  constexpr int kScrapers = 100;
  std::vector<HttpReply> replies(kScrapers);
  std::vector<std::thread> scrapers;
  std::atomic<bool> go{false};
  for (int i = 0; i < kScrapers; ++i) {
    scrapers.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      replies[static_cast<std::size_t>(i)] =
          HttpGet(http_->port(), "/metrics", {}, milliseconds(20'000));
    });
  }
  go.store(true);
  for (std::thread& t : scrapers) t.join();
  int ok = 0;
  int busy = 0;
  for (const HttpReply& r : replies) {
    if (r.status == 200) {
      ++ok;
      EXPECT_NE(r.body.find("rtloop_task_cycles_total"), std::string::npos);
    } else {
      EXPECT_EQ(r.status, 503) << r.error;
      EXPECT_NE(r.headers.find("Retry-After"), std::string::npos);
      ++busy;
    }
  }
  EXPECT_EQ(ok + busy, kScrapers);
  EXPECT_GT(ok, 0);
  EXPECT_EQ(http_->in_flight(), 0u);
  EXPECT_GT(Cycles(), cycles_before);
  ExpectTasksUnaffected();
  ExpectNothingLeaked();
}

TEST_F(HttpLoadTest, StopIsIdempotentAndReleasesThePort) {
  Build(1, {});
  const int port = http_->port();
  EXPECT_EQ(HttpGet(port, "/").status, 200);
  http_->Stop();
  http_->Stop();
  const int fd = ConnectLoopback(port);
  EXPECT_LT(fd, 0);
  if (fd >= 0) close(fd);
  ExpectNothingLeaked();
}

}  // namespace
}  // namespace rtloop::telemetry
