#include "run_result.h"

#include <fstream>

#include "bench_util.h"
#include "rtloop/framework/system_info.h"

#ifndef RTLOOP_VERSION_STRING
#define RTLOOP_VERSION_STRING "0.1.0"
#endif

namespace rtloop::bench {
namespace {

using nlohmann::json;

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "";
}

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(); }

}  // namespace

double LoadAverage1m() {
  std::ifstream in("/proc/loadavg");
  double v = -1;
  if (!(in >> v)) return -1;
  return v;
}

json ResultSkeleton() {
  return {{"schema", "rtloop-bench/result"},
          {"schema_version", kResultSchemaVersion},
          {"tool", {{"name", "rtloop-bench"}, {"version", RTLOOP_VERSION_STRING}}},
          {"created", UtcTimestamp()},
          {"unit", "us"}};
}

json SystemJson(double loadavg_start, double loadavg_end) {
  const SystemInfo s = ReadSystemInfo();
  return {{"host", s.host_name},
          {"kernel_release", s.kernel_release},
          {"kernel_version", s.kernel_version},
          {"machine", s.machine},
          {"cpu_model", CpuModel()},
          {"preempt_model", PreemptModelName(s.preempt_model)},
          {"realtime", s.realtime},
          {"online_cpus", FormatCpuList(s.online_cpus)},
          {"isolated_cpus", FormatCpuList(s.isolated_cpus)},
          {"loadavg_start", loadavg_start},
          {"loadavg_end", loadavg_end}};
}

json ThreadsJson(const LatencyData& data, const MaxOverTime* windows) {
  json threads = json::array();
  for (const ThreadLatency& t : data.threads) {
    json pct = json::object();
    for (const std::string& p : StandardPercentiles()) {
      Result<double> v = Metric(t, p);
      pct[p] = v.ok() ? json(*v) : json();
    }
    json counts = json::object();
    for (std::size_t b = 0; b < t.histogram.size(); ++b) {
      if (t.histogram[b] != 0) counts[std::to_string(b)] = t.histogram[b];
    }
    json th = {{"index", t.index},
               {"cpu", t.cpu},
               {"priority", t.priority},
               {"interval_us", t.interval_us},
               {"cycles", t.cycles},
               {"min", Optional(t.min_us)},
               {"act", nullptr},
               {"avg", Optional(t.avg_us)},
               {"max", Optional(t.max_us)},
               {"percentiles", pct},
               {"overruns", t.overruns ? json(*t.overruns) : json()},
               {"missed_releases", t.missed_releases ? json(*t.missed_releases) : json()},
               {"histogram",
                {{"bucket_us", 1},
                 {"buckets", t.histogram.size()},
                 {"overflows", t.histogram_overflows},
                 {"counts", counts}}}};
    json mot = nullptr;
    if (windows != nullptr && static_cast<std::size_t>(t.index) < windows->threads.size()) {
      json pts = json::array();
      for (const WindowPoint& p : windows->threads[static_cast<std::size_t>(t.index)]) {
        pts.push_back({p.start_s, p.max_us, p.cycles});
      }
      mot = {{"window_s", windows->window_s}, {"windows", pts}};
    }
    th["max_over_time"] = mot;
    threads.push_back(std::move(th));
  }
  return threads;
}

json ReferenceJson(const ReferenceRun& ref) {
  json threads = json::array();
  for (const ReferenceThread& t : ref.threads) {
    threads.push_back({{"thread", t.thread},
                       {"prio", t.prio},
                       {"interval_us", t.interval_us},
                       {"count", t.count},
                       {"min_us", t.min_us},
                       {"act_us", t.act_us},
                       {"avg_us", t.avg_us},
                       {"max_us", t.max_us}});
  }
  return {{"key", ref.key},
          {"board", ref.board},
          {"scenario", ref.scenario},
          {"kernel", ref.kernel},
          {"command", ref.command},
          {"load", ref.load.empty() ? json() : json(ref.load)},
          {"duration", ref.duration},
          {"source", ref.source},
          {"vendor", ref.vendor},
          {"document", ref.document},
          {"published_max_us", ref.summary_max_us >= 0 ? json(ref.summary_max_us) : json()},
          {"summary", ref.summary},
          {"threads", threads}};
}

std::string RunTitle(const json& result) {
  const auto str = [](const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string("?");
  };
  const json& scenario = result.value("scenario", json::object());
  const json& system = result.value("system", json::object());
  std::string load;
  for (const json& l : result.value("loads", json::array())) {
    if (l.is_object()) load += (load.empty() ? "" : " + ") + str(l, "command");
  }
  return str(scenario, "name") + " (load: " + (load.empty() ? "none" : load) + ") on " +
         str(system, "host") + ", " + str(system, "kernel_release");
}

std::vector<PublishedMark> PublishedMarks(const json& result) {
  std::vector<PublishedMark> marks;
  const auto ref = result.find("reference");
  if (ref == result.end() || !ref->is_object()) return marks;
  for (const json& t : ref->value("threads", json::array())) {
    if (t.is_object() && t.value("max_us", json()).is_number()) {
      marks.push_back({t.value("thread", 0), t["max_us"].get<double>()});
    }
  }
  const json& max = ref->value("published_max_us", json());
  if (marks.empty() && max.is_number()) marks.push_back({-1, max.get<double>()});
  return marks;
}

}  // namespace rtloop::bench
