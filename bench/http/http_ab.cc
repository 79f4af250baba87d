// rtloop-http-ab: the A/B latency effect of the HTTP endpoint on RT tasks. Runs the same task set
// alternately without (A) and with (B) the endpoint being used as a fleet uses it: Prometheus
// scraping /metrics once a second and one open live page polling /api/v1/tasks once a second.
// Prints per pair and as medians the ratios B/A of the tasks' mean and p99 wake-up latency (and
// max, for the record).
//
//   rtloop-http-ab [--pairs N] [--duration S] [--period-us US] [--priority P] [--json]
//
// Tasks: one rtloop::CyclicTask per online CPU, pinned, SCHED_FIFO at --priority (99) with memory
// locked when permitted (else SCHED_OTHER, said on stderr), period --period-us (1000), on an
// rtloop::Runtime with its defaults (hub, collector, gRPC API) in A and B alike; B sets
// TelemetryConfig::http, so the difference is what an application gets by turning the endpoint on:
// the HTTP server, its windowed statistics and its clients. The page's browser runs on the
// engineer's laptop, not the board: the board sees its HTTP requests, which this program sends
// (history=300 on the first poll, then history=5, as the page does).
//
// Take measurements with `flock /tmp/rtloop-measure.lock`; on a shared machine label them noisy.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/framework/cyclic_task.h"
#include "rtloop/runtime.h"
#include "rtloop/telemetry/http_server.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace {

using rtloop::Status;
using namespace rtloop::telemetry;  // NOLINT(google-build-using-namespace): a small program

struct Options {
  int pairs = 5;
  double duration_s = 10;
  int period_us = 1000;
  int priority = 99;
  bool json = false;
};

struct RunResult {
  double mean_ns = 0;  // mean over tasks of each task's mean
  double p99_ns = 0;   // max over tasks of each task's p99
  double max_ns = 0;   // max over tasks
  std::uint64_t scrapes = 0;
  bool rt = false;
};

void Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
    (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buf[65536];
    while (recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }
  close(fd);
}

rtloop::Result<RunResult> Run(const Options& o, bool with_http) {
  rtloop::RuntimeConfig rc;
  rc.app_name = "rtloop-http-ab";
  rc.executor.lock_memory = geteuid() == 0;
  rc.executor.allow_non_rt_fallback = true;
  rc.telemetry.grpc.address = "127.0.0.1:0";
  rc.telemetry.grpc.log_to_stderr = false;
  if (with_http) rc.telemetry.http = HttpConfig{.address = "127.0.0.1:0", .log_to_stderr = false};
  rtloop::Result<std::unique_ptr<rtloop::Runtime>> rt = rtloop::Runtime::Create(rc);
  if (!rt.ok()) return rt.status();
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<std::unique_ptr<rtloop::CyclicTask>> tasks;
  const auto cycles = static_cast<std::uint64_t>(o.duration_s * 1e6 / o.period_us);
  for (int cpu = 0; cpu < cpus && cpu < 64; ++cpu) {
    tasks.push_back(std::make_unique<rtloop::CyclicTask>());
    rtloop::TaskConfig tc;
    tc.name = "cyclic" + std::to_string(cpu);
    tc.period = std::chrono::microseconds(o.period_us);
    tc.cpus = {cpu};
    tc.policy = rtloop::SchedPolicy::kFifo;
    tc.priority = o.priority;
    tc.max_cycles = cycles;
    rtloop::Result<rtloop::TaskId> id = (*rt)->AddTask(*tasks.back(), tc);
    if (!id.ok()) return id.status();
  }
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> scrapes{0};
  std::thread clients;
  if (HttpServer* http = (*rt)->http(); http != nullptr) {
    clients = std::thread([&done, &scrapes, port = http->port()] {
      bool first = true;
      auto next = std::chrono::steady_clock::now();
      while (!done.load()) {
        Get(port, "/metrics");
        Get(port, first ? "/api/v1/tasks?history=300" : "/api/v1/tasks?history=5");
        first = false;
        scrapes.fetch_add(1);
        next += std::chrono::seconds(1);
        while (!done.load() && std::chrono::steady_clock::now() < next) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    });
  }
  RTLOOP_RETURN_IF_ERROR((*rt)->Start());
  (*rt)->executor().Wait();
  done.store(true);
  if (clients.joinable()) clients.join();
  RTLOOP_RETURN_IF_ERROR((*rt)->Stop());
  RunResult r;
  r.scrapes = scrapes.load();
  r.rt = true;
  double mean_sum = 0;
  const std::vector<rtloop::TaskReport> reports = (*rt)->Reports();
  for (const rtloop::TaskReport& t : reports) {
    const rtloop::Result<rtloop::TaskReport> s = (*rt)->hub()->Snapshot(t.id);
    if (!s.ok()) continue;
    mean_sum += s->latency.mean_ns;
    r.p99_ns = std::max(r.p99_ns, static_cast<double>(s->latency.percentiles.p99_ns));
    r.max_ns = std::max(r.max_ns, static_cast<double>(s->latency.max_ns));
    r.rt = r.rt && !t.info.fell_back_to_non_rt;
  }
  r.mean_ns = mean_sum / static_cast<double>(std::max<std::size_t>(reports.size(), 1));
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "rtloop-http-ab: %s\nusage: rtloop-http-ab [--pairs N] [--duration S] "
               "[--period-us US] [--priority P] [--json]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](double lo, double hi, double* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (end == nullptr || *end != '\0' || v < lo || v > hi) return false;
      *out = v;
      return true;
    };
    double v = 0;
    if (a == "--json") {
      o.json = true;
    } else if (a == "--pairs" && value(1, 100, &v)) {
      o.pairs = static_cast<int>(v);
    } else if (a == "--duration" && value(1, 3600, &v)) {
      o.duration_s = v;
    } else if (a == "--period-us" && value(50, 1'000'000, &v)) {
      o.period_us = static_cast<int>(v);
    } else if (a == "--priority" && value(1, 99, &v)) {
      o.priority = static_cast<int>(v);
    } else {
      return Usage(("bad option or value: " + a).c_str());
    }
  }
  std::vector<double> mean_ratio, p99_ratio, max_ratio;
  std::string pairs_json;
  bool rt = true;
  for (int p = 0; p < o.pairs; ++p) {
    rtloop::Result<RunResult> a = Run(o, false);
    if (!a.ok()) {
      std::fprintf(stderr, "rtloop-http-ab: %s\n", a.status().ToString().c_str());
      return 1;
    }
    rtloop::Result<RunResult> b = Run(o, true);
    if (!b.ok()) {
      std::fprintf(stderr, "rtloop-http-ab: %s\n", b.status().ToString().c_str());
      return 1;
    }
    rt = rt && a->rt && b->rt;
    mean_ratio.push_back(b->mean_ns / a->mean_ns);
    p99_ratio.push_back(b->p99_ns / a->p99_ns);
    max_ratio.push_back(b->max_ns / a->max_ns);
    std::fprintf(stderr,
                 "pair %d: A mean %.0f p99 %.0f max %.0f ns | B mean %.0f p99 %.0f max %.0f ns "
                 "(%llu scrapes+polls) | B/A mean %.3f p99 %.3f max %.3f\n",
                 p + 1, a->mean_ns, a->p99_ns, a->max_ns, b->mean_ns, b->p99_ns, b->max_ns,
                 static_cast<unsigned long long>(b->scrapes), mean_ratio.back(), p99_ratio.back(),
                 max_ratio.back());
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s{\"a_mean_ns\":%.1f,\"a_p99_ns\":%.0f,\"b_mean_ns\":%.1f,\"b_p99_ns\":%.0f}",
                  p ? "," : "", a->mean_ns, a->p99_ns, b->mean_ns, b->p99_ns);
    pairs_json += buf;
  }
  if (!rt) std::fprintf(stderr, "rtloop-http-ab: NOTE: tasks ran SCHED_OTHER (no RT privilege)\n");
  if (o.json) {
    std::printf(
        "{\"pairs\":[%s],\"median_mean_ratio\":%.4f,\"median_p99_ratio\":%.4f,"
        "\"median_max_ratio\":%.4f,\"rt\":%s}\n",
        pairs_json.c_str(), Median(mean_ratio), Median(p99_ratio), Median(max_ratio),
        rt ? "true" : "false");
  } else {
    std::printf(
        "median B/A over %d pairs: mean %.3f  p99 %.3f  max %.3f  (target mean, p99 <= 1.01)\n",
        o.pairs, Median(mean_ratio), Median(p99_ratio), Median(max_ratio));
  }
  return 0;
}
