// Fleet telemetry end to end with the real tools: Debian's Prometheus server, started here on a
// loopback port with a temporary TSDB and a 1 s scrape interval, scrapes the HTTP endpoint of a
// running pipeline (and a running rtloop-cyclic when it is built); the test queries Prometheus's
// HTTP API and compares with the gRPC API, runs every PromQL expression of the Grafana dashboard,
// lints the exposition with promtool, and loads the live page in headless Chromium. A second
// Runtime (job "explained") has a task whose every cycle is an outlier (explanation threshold
// 1 ns): its outlier series in Prometheus are the Runtime's counts, and its page shows the last
// outliers; the pipeline's tasks have no threshold: no outlier series, "not explained".
//
// One Prometheus serves the whole suite (SetUpTestSuite) to stay within the time budget. Skips
// name the package to install when a tool is missing (cmake/dev.sh installs them).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "http_test_util.h"
#include "measure_lock.h"
#include "metrics.h"
#include "page_json.h"
#include "port_holder.h"
#include "rtloop/telemetry/client.h"
#include "rtloop/telemetry/http_server.h"
#include "scratch_dir.h"
#include "spinner.h"
#include "telemetry_rig.h"
#include "test_paths.h"

using rtloop::testing::BuildPath;
using rtloop::testing::HasTargetFile;
using rtloop::testing::SourcePath;
using rtloop::testing::TargetFile;

namespace rtloop::telemetry {
namespace {

using nlohmann::json;
using ::rtloop::testing::ChildProcess;
using ::rtloop::testing::FreeLoopbackPort;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::HttpGet;
using testing::HttpReply;
using testing::IdleTask;
using testing::OtherTask;
using testing::Rig;
using testing::RigConfig;
using testing::ScratchDir;

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kChromium = "/usr/bin/chromium";
constexpr int kTasks = 3;
constexpr std::uint64_t kCycles = 5000;  // 1 ms period: ~5 s of running tasks while scraped

bool Executable(const char* path) { return access(path, X_OK) == 0; }

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// The `le` bucket [lower, upper] holding a percentile `v` (seconds), widened by one HDR bucket on
// each side: a value within 1/1024 of a boundary may be counted in the bucket next to it
// (metrics.h). "Within the bucket resolution" means histogram_quantile() lands in here.
std::pair<double, double> LeBucketAround(double v) {
  const auto& bounds = internal::kHistogramBoundsSeconds;
  const double slack = v / 1024 + 1e-9;
  double lower = 0;
  for (const double b : bounds) {
    if (b < v - slack) lower = b;
    if (b >= v + slack) return {lower, b};
  }
  return {lower, bounds.back()};
}

// The pipeline, its HTTP endpoint and a Prometheus scraping it, shared by the suite.
class FleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!Executable(kPrometheus)) {
      skip_ = "Debian's prometheus is not installed (apt-get install prometheus)";
      return;
    }
    dir_ = std::make_unique<ScratchDir>("fleet");
    rig_ = std::make_unique<Rig>();
    RigConfig rc;
    rc.tasks = kTasks;
    rc.period = milliseconds(1);
    rc.cycles = kCycles;
    if (Status s = rig_->Build(rc); !s.ok()) {
      setup_error_ = s.ToString();
      return;
    }
    HttpConfig hc;
    hc.address = "127.0.0.1:0";
    hc.log_to_stderr = false;
    // The rig's feed: none of its tasks has a threshold, so nothing is explained.
    Result<std::unique_ptr<HttpServer>> http =
        HttpServer::Start(hc, rig_->hub(),
                          {.executor = &rig_->executor(),
                           .collector = &rig_->collector(),
                           .outliers = &rig_->runtime().outlier_feed()});
    if (!http.ok()) {
      setup_error_ = http.status().ToString();
      return;
    }
    http_ = std::move(*http);
    if (Status s = BuildExplained(); !s.ok()) {
      setup_error_ = s.ToString();
      return;
    }
    prom_port_ = FreeLoopbackPort();
    const std::filesystem::path config = *dir_ / "prometheus.yml";
    std::ofstream prom_config(config);
    prom_config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                << "scrape_configs:\n  - job_name: rtloop\n    static_configs:\n"
                << "      - targets: ['" << http_->address() << "']\n"
                << "  - job_name: explained\n    static_configs:\n"
                << "      - targets: ['" << explained_->http_address() << "']\n";
    if (HasTargetFile("rtloop-cyclic")) {
      // A running rtloop-cyclic in its own process: gRPC and HTTP on ports picked here.
      cyclic_grpc_ = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
      const std::string cyclic_http = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
      cyclic_ = std::make_unique<ChildProcess>(
          std::vector<std::string>{TargetFile("rtloop-cyclic"), "-t", "2", "-i", "1000", "-q", "-D",
                                   "90", "--telemetry=" + cyclic_grpc_, "--metrics=" + cyclic_http},
          *dir_ / "cyclic.log");
      prom_config << "  - job_name: cyclic\n    static_configs:\n"
                  << "      - targets: ['" << cyclic_http << "']\n";
    }
    prom_config.close();
    prometheus_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kPrometheus, "--config.file=" + config.string(),
                                 "--storage.tsdb.path=" + (*dir_ / "tsdb").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_),
                                 "--log.level=warn"},
        *dir_ / "prometheus.log");
    if (!prometheus_->started()) {
      setup_error_ = prometheus_->error();
      return;
    }
    if (!WaitUntil([] { return !Query("up == 1").empty(); }, seconds(30))) {
      setup_error_ = "Prometheus did not scrape the endpoint: " + prometheus_->Output();
      return;
    }
    // Scraped while running; then the tasks end and the values stay put for exact comparison.
    if (Status s = rig_->StartTasks(); !s.ok()) {
      setup_error_ = s.ToString();
      return;
    }
    if (Status s = explained_->Start(); !s.ok()) {
      setup_error_ = s.ToString();
      return;
    }
    rig_->WaitTasks();
    explained_->executor().Wait();
    // The endpoint's windows read the histograms once a second; Prometheus scrapes once a second.
    const double want = static_cast<double>(kCycles);
    if (!WaitUntil(
            [want] {
              const json r = Query("min(rtloop_task_wakeup_latency_seconds_count{job=\"rtloop\"})");
              return !r.empty() && std::stod(r[0]["value"][1].get<std::string>()) == want &&
                     !Query("min(rtloop_task_cycles_total{job=\"rtloop\"}) == " +
                            std::to_string(kCycles))
                          .empty();
            },
            seconds(20))) {
      setup_error_ = "Prometheus never saw the final counts: " + prometheus_->Output();
    }
  }
  static void TearDownTestSuite() {
    prometheus_.reset();
    cyclic_.reset();
    if (explained_ != nullptr) (void)explained_->Stop();
    explained_.reset();
    explained_tasks_.reset();
    http_.reset();
    rig_.reset();
    dir_.reset();
  }
  // The explained Runtime: "explained" (pinned to CPU 0, threshold 1 ns: every cycle is an
  // outlier) and "plain" (no threshold), kCycles each at 1 ms, its HTTP endpoint on a free port.
  static Status BuildExplained() {
    RuntimeConfig rc = testing::TestRuntimeConfig("fleet_explained");
    // The explainer subscribes once the threads run (ExplainSession::Begin(), after the
    // executor's Start()): cycles drained before it are not seen. TestRuntimeConfig's 5 ms start
    // delay let a loaded ASan run release 6 of 5000 cycles before it; 500 ms leaves room.
    rc.executor.start_delay = milliseconds(500);
    rc.telemetry.serve_grpc = false;
    rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
    RTLOOP_RETURN_IF_ERROR(rt.status());
    explained_ = std::move(*rt);
    explained_tasks_ = std::make_unique<IdleTask[]>(2);
    TaskConfig tc = OtherTask("explained", milliseconds(1), kCycles);
    tc.cpus = {0};
    tc.explain_latency_above = std::chrono::nanoseconds(1);
    RTLOOP_RETURN_IF_ERROR(explained_->AddTask(explained_tasks_[0], tc).status());
    return explained_->AddTask(explained_tasks_[1], OtherTask("plain", milliseconds(1), kCycles))
        .status();
  }
  // The explained Runtime's counts once every cycle was seen and recorded or dropped (they then
  // stay put); a test failure when that takes beyond the bound.
  static explain::ExplainerStats SettledOutliers() {
    explain::ExplainerStats s;
    WaitUntil(
        [&] {
          s = explained_->OutlierStats();
          return s.outliers == kCycles && s.recorded + s.dropped == s.outliers;
        },
        seconds(30));
    EXPECT_EQ(s.outliers, kCycles) << "every cycle is above 1 ns";
    EXPECT_EQ(s.recorded + s.dropped, s.outliers) << "none pending";
    return s;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(200));
    }
    return false;
  }
  // Prometheus's /api/v1/query reply for `expr`; `status` gets "success" or the error.
  static json QueryReply(const std::string& expr) {
    // "EXPR&time=T" queries at time T.
    const std::size_t at = expr.find("&time=");
    const std::string query =
        at == std::string::npos ? UrlEncode(expr) : UrlEncode(expr.substr(0, at)) + expr.substr(at);
    const HttpReply r = HttpGet(prom_port_, "/api/v1/query?query=" + query);
    if (r.status == 0) return json{{"status", "error"}, {"error", r.error}};
    return json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }
  // The result vector of an instant query (empty on error or no data).
  static json Query(const std::string& expr) {
    const json r = QueryReply(expr);
    if (!r.is_object() || r.value("status", "") != "success") return json::array();
    return r["data"]["result"];
  }
  static double Value(const json& sample) {
    return std::stod(sample["value"][1].get<std::string>());
  }
  // Per task name: the value of `expr`'s samples (at Unix time `at`, when given).
  static std::map<std::string, double> ByTask(const std::string& expr, double at = 0) {
    std::map<std::string, double> out;
    const std::string q = at > 0 ? expr + "&time=" + std::to_string(at) : expr;
    for (const json& s : Query(q)) out[s["metric"]["task"].get<std::string>()] = Value(s);
    return out;
  }
  // GetStats over gRPC; an empty response (and a test failure) when it fails.
  static v1::GetStatsResponse GetStats(const std::string& address = {}) {
    ClientConfig cc;
    cc.address = address.empty() ? rig_->address() : address;
    Result<std::unique_ptr<Client>> client = Client::Create(cc);
    if (!client.ok()) {
      ADD_FAILURE() << client.status().ToString();
      return {};
    }
    Result<v1::GetStatsResponse> stats = (*client)->GetStats({}, false);
    if (!stats.ok()) {
      ADD_FAILURE() << stats.status().ToString();
      return {};
    }
    return *stats;
  }

  static inline std::string skip_;
  static inline std::string setup_error_;
  static inline std::unique_ptr<ScratchDir> dir_;
  static inline std::unique_ptr<Rig> rig_;
  static inline std::unique_ptr<HttpServer> http_;
  static inline std::unique_ptr<ChildProcess> prometheus_;
  static inline int prom_port_ = 0;
  static inline std::unique_ptr<IdleTask[]> explained_tasks_;  // outlive explained_
  static inline std::unique_ptr<Runtime> explained_;
  static inline std::unique_ptr<ChildProcess> cyclic_;  // a running rtloop-cyclic, when built
  static inline std::string cyclic_grpc_;
};

TEST_F(FleetTest, PrometheusScrapesTheEndpointAndUpIsOne) {
  const json up = Query("up{job=\"rtloop\"}");
  ASSERT_EQ(up.size(), 1u) << up.dump();
  EXPECT_EQ(Value(up[0]), 1.0);
  EXPECT_EQ(Value(Query("rtloop_tasks{job=\"rtloop\"}")[0]), kTasks);
  // Scraped while the tasks ran: more than one distinct cycle count over the run.
  const json changes = Query("max(changes(rtloop_task_cycles_total{job=\"rtloop\"}[1m]))");
  ASSERT_FALSE(changes.empty());
  EXPECT_GE(Value(changes[0]), 1.0);
}

TEST_F(FleetTest, CountersInPrometheusMatchGetStatsOverGrpc) {
  const v1::GetStatsResponse stats = GetStats();
  ASSERT_EQ(stats.tasks_size(), kTasks);
  const auto cycles = ByTask("rtloop_task_cycles_total{job=\"rtloop\"}");
  const auto overruns = ByTask("rtloop_task_overruns_total{job=\"rtloop\"}");
  const auto missed = ByTask("rtloop_task_missed_releases_total{job=\"rtloop\"}");
  const auto faults = ByTask("rtloop_task_faults_total{job=\"rtloop\"}");
  const auto dropped = ByTask("rtloop_task_ring_dropped_samples_total{job=\"rtloop\"}");
  const auto count = ByTask("rtloop_task_wakeup_latency_seconds_count{job=\"rtloop\"}");
  const auto max = ByTask("rtloop_task_wakeup_latency_max_seconds{job=\"rtloop\",window=\"all\"}");
  for (const v1::TaskStats& t : stats.tasks()) {
    const std::string& name = t.task_name();
    ASSERT_TRUE(cycles.count(name)) << name;
    EXPECT_EQ(cycles.at(name), static_cast<double>(t.cycles())) << name;
    EXPECT_EQ(overruns.at(name), static_cast<double>(t.overruns())) << name;
    EXPECT_EQ(missed.at(name), static_cast<double>(t.missed_releases())) << name;
    EXPECT_EQ(faults.at(name), static_cast<double>(t.faults())) << name;
    EXPECT_EQ(dropped.at(name), static_cast<double>(t.ring_dropped())) << name;
    EXPECT_EQ(count.at(name), static_cast<double>(t.latency().count())) << name;
    EXPECT_DOUBLE_EQ(max.at(name), static_cast<double>(t.latency().max_ns()) * 1e-9) << name;
  }
}

TEST_F(FleetTest, HistogramQuantileAgreesWithRtloopsOwnP99WithinTheBucket) {
  const v1::GetStatsResponse stats = GetStats();
  const auto from_buckets =
      ByTask("histogram_quantile(0.99, rtloop_task_wakeup_latency_seconds_bucket{job=\"rtloop\"})");
  const auto gauge = ByTask(
      "rtloop_task_wakeup_latency_window_seconds{job=\"rtloop\",window=\"all\","
      "quantile=\"0.99\"}");
  for (const v1::TaskStats& t : stats.tasks()) {
    double p99 = -1;
    for (const v1::Percentile& p : t.latency().percentiles()) {
      if (p.percentile() == 99.0) p99 = static_cast<double>(p.value_ns()) * 1e-9;
    }
    ASSERT_GT(p99, 0) << t.task_name();
    const auto [lower, upper] = LeBucketAround(p99);
    const double got = from_buckets.at(t.task_name());
    EXPECT_GE(got, lower) << t.task_name() << ": rtloop p99 " << p99;
    EXPECT_LE(got, upper) << t.task_name() << ": rtloop p99 " << p99;
    EXPECT_NEAR(gauge.at(t.task_name()), p99, p99 / 1024 + 1e-9) << t.task_name();
  }
}

// Issue 20: the explained task's outlier series, as Prometheus scraped them, are the Runtime's
// counts (OutlierStats()); tasks without a threshold, and the pipeline without any, have none.
TEST_F(FleetTest, OutlierSeriesInPrometheusAreTheRuntimesCountsAndOnlyForExplainedTasks) {
  const explain::ExplainerStats s = SettledOutliers();
  ASSERT_EQ(s.tasks.size(), 1u);
  const explain::TaskOutlierStats& t = s.tasks[0];
  const std::string sel = "{job=\"explained\",task=\"explained\"}";
  // A scrape taken after the counts settled: the analysis's CPU time changes with every record.
  const std::string cpu_expr = "rtloop_outlier_analysis_cpu_seconds_total{job=\"explained\"}";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json cpu = Query(cpu_expr);
        return cpu.size() == 1 &&
               std::abs(Value(cpu[0]) - static_cast<double>(s.explain_cpu_ns_total) * 1e-9) < 1e-9;
      },
      seconds(20)))
      << Query(cpu_expr).dump() << " vs " << s.explain_cpu_ns_total << " ns";
  const json outliers = Query("rtloop_task_outliers_total" + sel);
  ASSERT_EQ(outliers.size(), 1u) << outliers.dump();
  EXPECT_EQ(Value(outliers[0]), static_cast<double>(t.outliers));
  EXPECT_EQ(Value(Query("rtloop_task_outliers_dropped_total" + sel)[0]),
            static_cast<double>(t.dropped));
  std::map<std::string, double> want;
  for (std::size_t k = 0; k < explain::kCauseKindCount; ++k) {
    want[explain::CauseKindName(static_cast<explain::CauseKind>(k))] =
        static_cast<double>(t.by_leading_cause[k]);
  }
  want["none"] = static_cast<double>(t.without_cause);
  std::map<std::string, double> got;
  for (const json& r : Query("rtloop_task_outlier_records_total" + sel)) {
    got[r["metric"]["cause"].get<std::string>()] = Value(r);
  }
  EXPECT_EQ(got, want);
  const json sum = Query("sum(rtloop_task_outlier_records_total" + sel + ")");
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(Value(sum[0]), static_cast<double>(t.recorded));
  const json threshold = Query("rtloop_task_outlier_threshold_seconds" + sel);
  ASSERT_EQ(threshold.size(), 1u) << "latency only: execution time is not judged";
  EXPECT_EQ(threshold[0]["metric"]["kind"], "latency");
  EXPECT_EQ(Value(threshold[0]), 1e-9);
  const json cpu_max = Query("rtloop_outlier_analysis_cpu_max_seconds{job=\"explained\"}");
  ASSERT_EQ(cpu_max.size(), 1u);
  EXPECT_NEAR(Value(cpu_max[0]), static_cast<double>(s.explain_cpu_ns_max) * 1e-9, 1e-9);
  EXPECT_EQ(Query("rtloop_outlier_samples_lost_total{job=\"explained\"}").size(), 1u);
  // No series at all (absent, not 0) for a task without a threshold, nor for the pipeline.
  EXPECT_EQ(Query("{__name__=~\"rtloop_.*outlier.*\",task=\"plain\"}").dump(), "[]");
  EXPECT_EQ(Query("{__name__=~\"rtloop_.*outlier.*\",job=\"rtloop\"}").dump(), "[]");
}

// The issue's set-up: Prometheus scraping a running rtloop-cyclic (another process). Counters move,
// so each is checked against GetStats just before and just after the scrape Prometheus reports.
TEST_F(FleetTest, PrometheusScrapesARunningRtloopCyclicAndItsCountersMatchGetStats) {
  if (!HasTargetFile("rtloop-cyclic"))
    GTEST_SKIP() << "rtloop-cyclic is not built (RTLOOP_BUILD_BENCH=OFF)";
  ASSERT_TRUE(cyclic_ != nullptr && cyclic_->started()) << (cyclic_ ? cyclic_->error() : "");
  ASSERT_TRUE(WaitUntil([] { return !Query("up{job=\"cyclic\"} == 1").empty(); }, seconds(20)))
      << cyclic_->Output();
  ASSERT_TRUE(WaitUntil(
      [] { return Query("rtloop_task_wakeup_latency_seconds_count{job=\"cyclic\"}").size() == 2; },
      seconds(20)))
      << cyclic_->Output();
  const v1::GetStatsResponse before = GetStats(cyclic_grpc_);
  ASSERT_EQ(before.tasks_size(), 2) << cyclic_->Output();
  const double before_s = static_cast<double>(before.unix_time_ns()) * 1e-9;
  // The first scrape whose reading was taken after `before` (the counters and histograms of a
  // scrape are of one reading, <= 1 s old: rtloop_task_reading_timestamp_seconds).
  double scraped_at = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json read = Query("min(rtloop_task_reading_timestamp_seconds{job=\"cyclic\"})");
        const json t =
            Query("min(timestamp(rtloop_task_reading_timestamp_seconds{job=\"cyclic\"}))");
        if (read.empty() || t.empty()) return false;
        scraped_at = Value(t[0]);
        return Value(read[0]) > before_s;
      },
      seconds(20)));
  const v1::GetStatsResponse after = GetStats(cyclic_grpc_);
  const auto cycles = ByTask("rtloop_task_cycles_total{job=\"cyclic\"}", scraped_at);
  const auto overruns = ByTask("rtloop_task_overruns_total{job=\"cyclic\"}", scraped_at);
  const auto missed = ByTask("rtloop_task_missed_releases_total{job=\"cyclic\"}", scraped_at);
  ASSERT_EQ(cycles.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const v1::TaskStats& a = before.tasks(i);
    const v1::TaskStats& b = after.tasks(i);
    const std::string& name = a.task_name();
    EXPECT_GE(cycles.at(name), static_cast<double>(a.cycles())) << name;
    EXPECT_LE(cycles.at(name), static_cast<double>(b.cycles())) << name;
    EXPECT_GT(b.cycles(), a.cycles()) << name << " is running";
    EXPECT_GE(overruns.at(name), static_cast<double>(a.overruns())) << name;
    EXPECT_LE(overruns.at(name), static_cast<double>(b.overruns())) << name;
    EXPECT_GE(missed.at(name), static_cast<double>(a.missed_releases())) << name;
    EXPECT_LE(missed.at(name), static_cast<double>(b.missed_releases())) << name;
  }
  // histogram_quantile over the scrape's buckets agrees with rtloop's own p99 of the same scrape.
  const auto from_buckets =
      ByTask("histogram_quantile(0.99, rtloop_task_wakeup_latency_seconds_bucket{job=\"cyclic\"})",
             scraped_at);
  const auto own = ByTask(
      "rtloop_task_wakeup_latency_window_seconds{job=\"cyclic\",window=\"all\","
      "quantile=\"0.99\"}",
      scraped_at);
  for (const auto& [name, p99] : own) {
    const auto [lower, upper] = LeBucketAround(p99);
    ASSERT_TRUE(from_buckets.count(name)) << name;
    EXPECT_GE(from_buckets.at(name), lower) << name << ": rtloop p99 " << p99;
    EXPECT_LE(from_buckets.at(name), upper) << name << ": rtloop p99 " << p99;
  }
}

TEST_F(FleetTest, PromtoolAcceptsTheExposition) {
  if (!Executable(kPromtool))
    GTEST_SKIP() << "promtool is not installed (apt-get install prometheus)";
  // The pipeline's, and the explained Runtime's with its outlier families.
  (void)SettledOutliers();
  for (const int port : {http_->port(), explained_->http()->port()}) {
    const std::filesystem::path body = *dir_ / ("metrics-" + std::to_string(port) + ".txt").c_str();
    const std::string text = HttpGet(port, "/metrics").body;
    std::ofstream(body) << text;
    if (port == explained_->http()->port()) {
      ASSERT_NE(text.find("rtloop_task_outlier_records_total{"), std::string::npos) << text;
    }
    ChildProcess lint(
        {"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + body.string()},
        *dir_ / "promtool.log");
    EXPECT_EQ(lint.Wait(seconds(30)), 0) << lint.Output();
  }
}

// Every PromQL expression in the dashboard (panels and variables), with Grafana's variables
// replaced by what an "All" selection sends.
std::vector<std::string> DashboardExpressions(const json& dashboard) {
  std::vector<std::string> out;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) out.push_back(target["expr"].get<std::string>());
  }
  // label_values(SELECTOR, label): the selector is the query Grafana runs.
  const std::regex label_values(R"(label_values\((.*),\s*\w+\))");
  for (const json& v : dashboard["templating"]["list"]) {
    std::smatch m;
    const std::string q = v["query"]["query"].get<std::string>();
    if (std::regex_match(q, m, label_values)) out.push_back(m[1]);
  }
  for (std::string& e : out) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"$__rate_interval", "5s"},
                                   {"$__interval", "5s"},
                                   {"$job", ".*"},
                                   {"$instance", ".*"},
                                   {"$task", ".*"}}) {
      for (std::size_t at; (at = e.find(from)) != std::string::npos;)
        e.replace(at, from.size(), to);
    }
  }
  return out;
}

TEST_F(FleetTest, GrafanaDashboardHasItsPanelsAndEveryExpressionReturnsData) {
  std::ifstream in(SourcePath("telemetry/grafana/rtloop-dashboard.json"));
  const json d = json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(d.is_object()) << "the dashboard is not valid JSON";
  EXPECT_EQ(d["uid"], "rtloop-fleet");
  ASSERT_EQ(d["__inputs"][0]["pluginId"], "prometheus");
  std::map<std::string, int> kinds;
  std::vector<std::string> titles;
  for (const json& p : d["panels"]) {
    ++kinds[p["type"].get<std::string>()];
    titles.push_back(p["title"].get<std::string>());
    EXPECT_TRUE(p.contains("gridPos")) << p["title"];
    EXPECT_EQ(p["datasource"]["uid"], "${DS_PROMETHEUS}") << p["title"];
    ASSERT_FALSE(p["targets"].empty()) << p["title"];
  }
  EXPECT_GE(kinds["heatmap"], 1);  // per-task latency heatmap
  EXPECT_GE(kinds["table"], 1);    // fleet overview, worst first
  auto has = [&](const char* word) {
    for (const std::string& t : titles) {
      if (t.find(word) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("p99"));
  EXPECT_TRUE(has("Overruns"));
  EXPECT_TRUE(has("drops"));
  EXPECT_TRUE(has("worst boards first"));
  // Rates need two scrapes inside their range: Prometheus has had several by now.
  for (const std::string& expr : DashboardExpressions(d)) {
    const json r = QueryReply(expr);
    ASSERT_TRUE(r.is_object()) << expr;
    EXPECT_EQ(r.value("status", ""), "success") << expr << ": " << r.dump();
    EXPECT_FALSE(r["data"]["result"].empty()) << expr << " returned no data";
  }
}

// ---------------------------------------------------------------------------------------------
// The live page in headless Chromium (Debian's flags for root, a fresh profile).

std::vector<std::string> ChromiumArgs(const ScratchDir& dir, const std::string& profile) {
  return {kChromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--no-first-run",
          "--disable-dev-shm-usage",
          "--enable-logging=stderr",
          "--v=0",
          "--user-data-dir=" + (dir / profile.c_str()).string(),
          "--virtual-time-budget=4000"};
}

// The DOM of the page served on `address` once Chromium ran its script (4 s of virtual time:
// several polls), followed by what Chromium logged; empty, and a test failure, when it failed.
std::string PageDom(const ScratchDir& dir, const std::string& address, const std::string& profile) {
  std::vector<std::string> args = ChromiumArgs(dir, profile);
  args.push_back("--dump-dom");
  args.push_back("http://" + address + "/");
  ChildProcess chrome(args, dir / (profile + ".html").c_str());
  if (!chrome.started()) {
    ADD_FAILURE() << chrome.error();
    return {};
  }
  if (const int rc = chrome.Wait(seconds(60)).value_or(-1); rc != 0) {
    ADD_FAILURE() << "chromium exited with " << rc << ": " << chrome.Output().substr(0, 4000);
    return {};
  }
  return chrome.Output();
}

// The page counted no error of its own (window.onerror, unhandled rejections: #errors), Chromium
// logged none, and the page got data.
void ExpectPageWithoutErrors(const std::string& dom) {
  const std::size_t errors = dom.find("id=\"errors\"");
  EXPECT_NE(dom.find("id=\"errors\" data-count=\"0\""), std::string::npos)
      << dom.substr(errors == std::string::npos ? 0 : errors, 400);
  EXPECT_EQ(dom.find(":ERROR:CONSOLE"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(dom.find("Uncaught"), std::string::npos);
  EXPECT_NE(dom.find("data-updates=\""), std::string::npos) << "the page never got data";
}

// `text` as Chromium writes a text node: &, < and > escaped.
std::string HtmlText(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  }
  return out;
}

TEST_F(FleetTest, PageInHeadlessChromiumShowsEveryTaskWithTheApiNumbersAndNoErrors) {
  if (!Executable(kChromium))
    GTEST_SKIP() << "Debian's chromium is not installed (apt-get install chromium)";
  const std::string dom = PageDom(*dir_, http_->address(), "profile-dom");
  ASSERT_FALSE(dom.empty());
  ExpectPageWithoutErrors(dom);
  // No task of the pipeline has a threshold: the outlier panel says so, with no zeros.
  EXPECT_NE(dom.find("data-state=\"not-explained\">not explained — set "
                     "TaskConfig::explain_latency_above or rtloop-cyclic --explain<"),
            std::string::npos)
      << dom.substr(dom.find("id=\"outliers\""), 800);
  EXPECT_EQ(dom.find("<tr data-outlier="), std::string::npos);
  // Every task has a row and a chart card, and the row's numbers are the API's.
  const json api = json::parse(HttpGet(http_->port(), "/api/v1/tasks").body);
  ASSERT_EQ(api["tasks"].size(), static_cast<std::size_t>(kTasks));
  for (const json& t : api["tasks"]) {
    const std::string id = std::to_string(t["id"].get<int>());
    const std::size_t row = dom.find("<tr data-task-id=\"" + id + "\">");
    ASSERT_NE(row, std::string::npos) << "no row for task " << id;
    const std::string tr = dom.substr(row, dom.find("</tr>", row) - row);
    EXPECT_NE(tr.find(">" + t["name"].get<std::string>() + "<"), std::string::npos) << tr;
    EXPECT_NE(
        tr.find("data-field=\"cycles\">" + std::to_string(t["cycles"].get<long long>()) + "<"),
        std::string::npos)
        << tr;
    EXPECT_NE(tr.find("data-field=\"latency.max\" data-ns=\"" +
                      std::to_string(t["latency"]["max"].get<long long>()) + "\""),
              std::string::npos)
        << tr;
    EXPECT_NE(tr.find("data-field=\"overruns\">" + std::to_string(t["overruns"].get<long long>())),
              std::string::npos)
        << tr;
    EXPECT_NE(dom.find("<div class=\"task\" data-task-id=\"" + id + "\">"), std::string::npos);
  }
  // dygraphs drew its canvases (two charts per task).
  std::size_t canvases = 0;
  for (std::size_t at = 0; (at = dom.find("<canvas", at)) != std::string::npos; ++at) ++canvases;
  EXPECT_GE(canvases, static_cast<std::size_t>(2 * kTasks));
}

// Issue 20: the explained Runtime's page shows the last outliers, newest first, with the API's
// figures, the per-task counts and the evidence note.
TEST_F(FleetTest, PageShowsWhyTheLastCyclesWereLate) {
  if (!Executable(kChromium))
    GTEST_SKIP() << "Debian's chromium is not installed (apt-get install chromium)";
  const explain::ExplainerStats s = SettledOutliers();
  const std::string dom = PageDom(*dir_, explained_->http_address(), "profile-outliers");
  ASSERT_FALSE(dom.empty());
  ExpectPageWithoutErrors(dom);
  EXPECT_NE(dom.find("data-state=\"records\">evidence: " + HtmlText(explained_->OutlierEvidence())),
            std::string::npos)
      << dom.substr(dom.find("id=\"outliers\""), 800);
  const json api = json::parse(HttpGet(explained_->http()->port(), "/api/v1/tasks").body);
  const json& records = api["outliers"]["records"];
  ASSERT_EQ(records.size(), internal::kPageOutliers);
  std::size_t previous = 0;
  for (const json& r : records) {
    const std::size_t row =
        dom.find("<tr data-outlier=\"" + std::to_string(r["index"].get<std::size_t>()) + "\">");
    ASSERT_NE(row, std::string::npos) << r.dump();
    EXPECT_GT(row, previous) << "newest first";
    previous = row;
    const std::string tr = dom.substr(row, dom.find("</tr>", row) - row);
    EXPECT_NE(tr.find("data-field=\"task\">explained<"), std::string::npos) << tr;
    EXPECT_NE(tr.find("data-field=\"cycle\">" + std::to_string(r["cycle"].get<long long>()) + "<"),
              std::string::npos)
        << tr;
    EXPECT_NE(tr.find("data-field=\"late\">latency "), std::string::npos) << tr;
    EXPECT_NE(tr.find(">" + r["evidence"].get<std::string>() + "</td>"), std::string::npos) << tr;
    if (!r["causes"].empty()) {  // each cause on its line: "KIND NAME (...) TIME"
      const std::string kind = r["causes"][0]["kind"].get<std::string>();
      const std::string name = r["causes"][0]["name"].get<std::string>();
      EXPECT_NE(tr.find("\">" + HtmlText(name == kind ? kind : kind + " " + name)),
                std::string::npos)
          << tr;
    }
  }
  const std::size_t counts = dom.find("<tr data-task=\"0\">");
  ASSERT_NE(counts, std::string::npos);
  const std::string tr = dom.substr(counts, dom.find("</tr>", counts) - counts);
  EXPECT_NE(tr.find(">1 ns<"), std::string::npos) << tr;
  EXPECT_NE(tr.find("data-field=\"outliers\">" + std::to_string(s.tasks[0].outliers) + "<"),
            std::string::npos)
      << tr;
  EXPECT_NE(tr.find("data-field=\"recorded\">" + std::to_string(s.tasks[0].recorded) + "<"),
            std::string::npos)
      << tr;
}

// Names are untrusted: a thread's comm is whatever its process set. A SCHED_FIFO spinner named as
// markup causes the outliers of a task whose name is markup too; the page shows both as text.
TEST_F(FleetTest, PageShowsHostileThreadAndTaskNamesAsText) {
  if (!Executable(kChromium))
    GTEST_SKIP() << "Debian's chromium is not installed (apt-get install chromium)";
  if (geteuid() != 0) GTEST_SKIP() << "the spinner's SCHED_FIFO 95 needs root (CAP_SYS_NICE)";
  const rtloop::testing::MeasureLock lock(seconds(60));  // the spinner is a load
  ASSERT_TRUE(lock.held()) << lock.why_not();
  const std::string thread = "<b id=pwn>x</b>";  // 15 bytes: all a comm holds
  rtloop::testing::Spinner spin(0, 95, std::chrono::microseconds(3000), milliseconds(100),
                                thread.c_str());
  if (!spin.ok()) GTEST_SKIP() << "SCHED_FIFO 95 on CPU 0 was refused";
  IdleTask task;  // outlives the Runtime
  RuntimeConfig rc = testing::TestRuntimeConfig("fleet_hostile");
  rc.telemetry.serve_grpc = false;
  rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(rc);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  const std::string name = "<img src=x onerror=document.body.dataset.pwned=1>";
  TaskConfig tc = OtherTask(name, milliseconds(1), 1500);
  tc.cpus = {0};
  tc.explain_latency_above = milliseconds(1);  // the spinner's 3 ms bursts
  ASSERT_TRUE((*rt)->AddTask(task, tc).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  ASSERT_TRUE(WaitUntil(
      [&] {
        const explain::ExplainerStats s = (*rt)->OutlierStats();
        return s.recorded > 0 && s.recorded + s.dropped == s.outliers;
      },
      seconds(30)));
  const json api = json::parse(HttpGet((*rt)->http()->port(), "/api/v1/tasks").body);
  // The trace names it when it ran inside a window; the counters as a candidate.
  int named = 0;
  for (const json& r : api["outliers"]["records"]) {
    for (const json& c : r["causes"]) named += c["kind"] == "thread" && c["name"] == thread;
  }
  ASSERT_GT(named, 0) << "the spinner is in none of the last records: " << api["outliers"].dump();
  const std::string dom = PageDom(*dir_, (*rt)->http_address(), "profile-hostile");
  ASSERT_FALSE(dom.empty());
  ExpectPageWithoutErrors(dom);
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos) << "the task name ran as markup";
  EXPECT_EQ(dom.find("<b id=\"pwn\">"), std::string::npos) << "the thread name became markup";
  // As text: on a cause's line ("thread <b id=pwn>x</b> (tid N, FIFO 95) 3.0 ms"), or among the
  // "+N more: ..." names when it ranks below the first three (a candidate of the counters).
  EXPECT_NE(dom.find("thread " + HtmlText(thread)), std::string::npos)
      << dom.substr(dom.find("id=\"outlier-rows\""), 2000);
  EXPECT_NE(dom.find("data-field=\"task\">" + HtmlText(name) + "<"), std::string::npos);
  EXPECT_TRUE((*rt)->Stop().ok());
}

// The README's picture: the explained Runtime's page (the outlier panel with records).
TEST_F(FleetTest, ScreenshotOfThePage) {
  if (!Executable(kChromium))
    GTEST_SKIP() << "Debian's chromium is not installed (apt-get install chromium)";
  const std::filesystem::path png = BuildPath("fleet-page.png");
  std::filesystem::remove(png);
  std::vector<std::string> args = ChromiumArgs(*dir_, "profile-shot");
  args.push_back("--hide-scrollbars");
  args.push_back("--window-size=1400,1200");
  args.push_back("--screenshot=" + png.string());
  args.push_back("http://" + explained_->http_address() + "/");
  ChildProcess chrome(args, *dir_ / "screenshot.log");
  ASSERT_EQ(chrome.Wait(seconds(60)), 0) << chrome.Output().substr(0, 4000);
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 20'000u);  // a drawn page, not a blank one
  std::printf("screenshot: %s\n", png.c_str());
}

}  // namespace
}  // namespace rtloop::telemetry
