// The HTTP endpoint's outlier views (issue 20): /metrics's outlier families and the page feed's
// "outliers" object, read from a real rtloop::Runtime whose task has an explanation threshold of
// 1 ns (every cycle is an outlier; the evidence is whatever this machine gives: the /proc counters
// without root, the trace with root). The kernel is never mocked.
//
// Example: `ctest -R HttpOutliersTest`. One test thread; each test owns its Runtime.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "http_test_util.h"
#include "page_json.h"
#include "rtloop/explain/outlier_feed.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/http_server.h"
#include "telemetry_rig.h"

namespace rtloop::telemetry {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::HttpGet;
using testing::HttpReply;
using testing::IdleTask;
using testing::OtherTask;

constexpr std::uint64_t kCycles = 300;
// Bytes a task name may hold: markup, a quote, a backslash and a byte that is not UTF-8.
const std::string kHostileTask = "<img src=x onerror=alert(1)>\"\\\xff";

RuntimeConfig WithHttp() {
  RuntimeConfig rc = testing::TestRuntimeConfig("http_outliers_test");
  rc.telemetry.serve_grpc = false;
  rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  return rc;
}

// The sample lines of `metrics` whose name is `name` and that carry every label of `labels`
// (`key="value"` strings), joined by newlines.
std::string Lines(const std::string& metrics, const std::string& name,
                  std::initializer_list<std::string> labels = {}) {
  std::istringstream in(metrics);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    bool all = true;
    for (const std::string& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) out += line + "\n";
  }
  return out;
}

// The value of the one sample line of `name` with `labels`; -1 when there is none, -2 when more.
double Value(const std::string& metrics, const std::string& name,
             std::initializer_list<std::string> labels = {}) {
  const std::string lines = Lines(metrics, name, labels);
  if (lines.empty()) return -1;
  if (lines.find('\n') != lines.size() - 1) return -2;
  return std::stod(lines.substr(lines.rfind(' ') + 1));
}

// A running Runtime with an explained task ("explained", threshold 1 ns, kCycles cycles) and a
// task without a threshold ("plain"), its HTTP endpoint on a free port.
class HttpOutliersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Runtime>> rt = Runtime::Create(WithHttp());
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    rt_ = std::move(*rt);
    TaskConfig explained = OtherTask(task_name_, milliseconds(1), kCycles);
    explained.cpus = {0};  // one CPU's evidence (an unpinned task's trace reads every CPU's)
    explained.explain_latency_above = std::chrono::nanoseconds(1);
    ASSERT_TRUE(rt_->AddTask(tasks_[0], explained).ok());
    ASSERT_TRUE(rt_->AddTask(tasks_[1], OtherTask("plain", milliseconds(1), kCycles)).ok());
    ASSERT_TRUE(rt_->Start().ok());
    rt_->executor().Wait();
    port_ = rt_->http()->port();
  }
  void TearDown() override {
    if (rt_ != nullptr) {
      EXPECT_TRUE(rt_->Stop().ok());
    }
  }
  // Waits (bounded) until the explanation has seen and recorded or dropped every cycle: the counts
  // then stay put, and a scrape can be compared with Runtime::OutlierStats(). 60 s: a bound for
  // "eventually" that holds under `ctest -j2` with TSan on a loaded machine, not a speed claim.
  explain::ExplainerStats Settled() {
    explain::ExplainerStats s;
    for (int i = 0; i < 1200; ++i) {
      s = rt_->OutlierStats();
      if (s.outliers == kCycles && s.recorded + s.dropped == s.outliers) break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_EQ(s.outliers, kCycles) << "every cycle is above 1 ns";
    EXPECT_EQ(s.recorded + s.dropped, s.outliers) << "none pending";
    return s;
  }
  std::string Get(const std::string& path) {
    const HttpReply r = HttpGet(port_, path);
    EXPECT_EQ(r.status, 200) << r.error << r.body;
    return r.body;
  }

  std::string task_name_ = "explained";
  IdleTask tasks_[2];
  std::unique_ptr<Runtime> rt_;
  int port_ = 0;
};

TEST_F(HttpOutliersTest, ExplainedTaskHasOutlierSeriesEqualToOutlierStatsAndOthersNone) {
  const explain::ExplainerStats s = Settled();
  ASSERT_EQ(s.tasks.size(), 1u);
  const explain::TaskOutlierStats& t = s.tasks[0];
  const std::string m = Get("/metrics");
  const std::string task = "task=\"explained\"";
  EXPECT_EQ(Value(m, "rtloop_task_outliers_total", {task}), static_cast<double>(t.outliers)) << m;
  EXPECT_EQ(Value(m, "rtloop_task_outliers_dropped_total", {task}), static_cast<double>(t.dropped));
  double by_cause = 0;
  for (std::size_t k = 0; k < explain::kCauseKindCount; ++k) {
    const std::string kind = explain::CauseKindName(static_cast<explain::CauseKind>(k));
    const double v =
        Value(m, "rtloop_task_outlier_records_total", {task, "cause=\"" + kind + "\""});
    EXPECT_EQ(v, static_cast<double>(t.by_leading_cause[k])) << kind;
    by_cause += v;
  }
  const double none = Value(m, "rtloop_task_outlier_records_total", {task, "cause=\"none\""});
  EXPECT_EQ(none, static_cast<double>(t.without_cause));
  EXPECT_EQ(by_cause + none, static_cast<double>(t.recorded)) << "every record counted once";
  // The same labels as every per-task series, then `cause`.
  EXPECT_NE(
      m.find("rtloop_task_outlier_records_total{task=\"explained\",cpu=\"0\",policy=\"other\","
             "priority=\"0\",cause=\"none\"}"),
      std::string::npos)
      << Lines(m, "rtloop_task_outlier_records_total");
  EXPECT_EQ(Value(m, "rtloop_task_outlier_threshold_seconds", {task, "kind=\"latency\""}), 1e-9);
  EXPECT_EQ(Value(m, "rtloop_task_outlier_threshold_seconds", {task, "kind=\"execution\""}), -1)
      << "execution time is not judged: no series";
  EXPECT_DOUBLE_EQ(Value(m, "rtloop_outlier_analysis_cpu_seconds_total"),
                   static_cast<double>(s.explain_cpu_ns_total) * 1e-9);
  EXPECT_DOUBLE_EQ(Value(m, "rtloop_outlier_analysis_cpu_max_seconds"),
                   static_cast<double>(s.explain_cpu_ns_max) * 1e-9);
  EXPECT_EQ(Value(m, "rtloop_outlier_samples_lost_total"), static_cast<double>(s.samples_lost));
  // The task without a threshold has no outlier series at all (absent, not 0).
  for (const char* name :
       {"rtloop_task_outliers_total", "rtloop_task_outlier_records_total",
        "rtloop_task_outliers_dropped_total", "rtloop_task_outlier_threshold_seconds"}) {
    EXPECT_EQ(Lines(m, name, {"task=\"plain\""}), "") << name;
  }
}

TEST_F(HttpOutliersTest, PageFeedHasTheLastTenRecordsNewestFirstWithoutRawLines) {
  const explain::ExplainerStats s = Settled();
  const json page = json::parse(Get("/api/v1/tasks"), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(page.is_object());
  const json& o = page["outliers"];
  ASSERT_TRUE(o["explaining"].get<bool>()) << o.dump();
  EXPECT_EQ(o["evidence"], rt_->OutlierEvidence());
  EXPECT_EQ(o["total"].get<std::uint64_t>(), s.recorded);
  ASSERT_EQ(o["tasks"].size(), 1u);
  EXPECT_EQ(o["tasks"][0]["task_name"], "explained");
  EXPECT_EQ(o["tasks"][0]["outliers"].get<std::uint64_t>(), s.tasks[0].outliers);
  EXPECT_EQ(o["tasks"][0]["latency_above_ns"], 1);
  EXPECT_TRUE(o["tasks"][0]["execution_above_ns"].is_null());
  EXPECT_EQ(o["tasks"][0]["by_cause"].size(), explain::kCauseKindCount + 1);
  const json& records = o["records"];
  ASSERT_EQ(records.size(), std::min<std::size_t>(internal::kPageOutliers, s.recorded));
  const std::vector<explain::OutlierRecord> all = rt_->Outliers();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    const std::size_t index = all.size() - 1 - i;  // newest first
    EXPECT_EQ(r["index"].get<std::size_t>(), index);
    EXPECT_EQ(r["cycle"].get<std::uint64_t>(), all[index].window.cycle);
    EXPECT_EQ(r["task_name"], "explained");
    EXPECT_EQ(r["outlier"], "latency");
    EXPECT_FALSE(r.contains("raw")) << "raw evidence lines are not sent";
    EXPECT_LE(r["causes"].size(), internal::kPageCausesPerOutlier);
    EXPECT_EQ(r["causes"].size() + r["more_causes"].get<std::size_t>(), all[index].causes.size());
    EXPECT_EQ(r["unexplained_ns"].get<std::int64_t>(), all[index].unexplained_ns);
  }
}

class HttpOutliersHostileNameTest : public HttpOutliersTest {
 protected:
  HttpOutliersHostileNameTest() { task_name_ = kHostileTask; }
};

TEST_F(HttpOutliersHostileNameTest, NamesAreEscapedValidUtf8InThePageFeedAndLabels) {
  (void)Settled();
  const std::string body = Get("/api/v1/tasks");
  const json page = json::parse(body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(page.is_object()) << body.substr(0, 2000);
  const std::string shown = "<img src=x onerror=alert(1)>\"\\\xEF\xBF\xBD";  // U+FFFD
  EXPECT_EQ(page["outliers"]["tasks"][0]["task_name"], shown);
  ASSERT_FALSE(page["outliers"]["records"].empty());
  EXPECT_EQ(page["outliers"]["records"][0]["task_name"], shown);
  const std::string m = Get("/metrics");
  EXPECT_NE(m.find("rtloop_task_outliers_total{task=\"<img src=x onerror=alert(1)>\\\"\\\\"),
            std::string::npos)
      << Lines(m, "rtloop_task_outliers_total");
}

TEST(HttpOutliersNotExplainedTest, WithoutAThresholdNoOutlierSeriesAndThePageSaysNotExplained) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::Create(WithHttp());
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  IdleTask task;
  ASSERT_TRUE((*rt)->AddTask(task, OtherTask("plain", milliseconds(1), 50)).ok());
  ASSERT_TRUE((*rt)->Start().ok());
  (*rt)->executor().Wait();
  const int port = (*rt)->http()->port();
  const std::string m = HttpGet(port, "/metrics").body;
  ASSERT_NE(m.find("rtloop_task_cycles_total{task=\"plain\""), std::string::npos) << m;
  EXPECT_EQ(m.find("outlier"), std::string::npos) << "no outlier family while nothing is explained";
  const json page = json::parse(HttpGet(port, "/api/v1/tasks").body, nullptr, false);
  ASSERT_TRUE(page.is_object());
  EXPECT_EQ(page["outliers"], json({{"explaining", false}})) << "not explained: never zeros";
  EXPECT_TRUE((*rt)->Stop().ok());
}

}  // namespace
}  // namespace rtloop::telemetry
