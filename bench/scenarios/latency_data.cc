#include "latency_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench_util.h"
#include "run_result.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF line ends (Windows)
    lines.push_back(line);
  }
  return lines;
}

// A number as cyclictest prints them ("00042", "12.50", "-3"): sign, digits, an optional
// fraction. Not what std::stod also takes (nan, inf, hex, exponents), which no cyclictest writes
// and which would reach compare's arithmetic as NaN or infinity.
std::optional<double> DecimalNumber(const std::string& word) {
  std::size_t i = word.size() > 1 && (word[0] == '-' || word[0] == '+') ? 1 : 0;
  const std::size_t digits = i;
  while (i < word.size() && word[i] >= '0' && word[i] <= '9') ++i;
  if (i == digits || word.size() > 40) return std::nullopt;
  if (i < word.size() && word[i] == '.') {
    const std::size_t fraction = ++i;
    while (i < word.size() && word[i] >= '0' && word[i] <= '9') ++i;
    if (i == fraction) return std::nullopt;
  }
  if (i != word.size()) return std::nullopt;
  return std::strtod(word.c_str(), nullptr);
}

// The numbers of footer line `line_no` after its "# Name:" prefix, up to a '#' (" # 00015
// others"); DataLoss naming the line and the word when one is not a number.
Result<std::vector<double>> FooterNumbers(const std::string& name, const std::string& rest,
                                          std::size_t line_no) {
  std::vector<double> out;
  std::istringstream in(rest);
  std::string word;
  while (in >> word) {
    if (word == "#") break;
    const std::optional<double> v = DecimalNumber(word);
    if (!v) {
      return DataLossError("line " + std::to_string(line_no) + ": '" + name + "' holds '" +
                           word.substr(0, 40) +
                           "', which is not a number (cyclictest writes whole numbers such as "
                           "00042 there)");
    }
    out.push_back(*v);
  }
  return out;
}

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

// The most 1-us buckets a histogram may have: cyclictest's HIST_MAX (-h 1000000). A bucket beyond
// it cannot come from cyclictest, and allocating for it would let a few bytes of input claim
// gigabytes.
constexpr std::size_t kMaxBuckets = 1'000'000;
// More threads than any run has (rtloop-cyclic runs at most 256; cyclictest one per CPU).
constexpr std::size_t kMaxThreads = 4096;
// Buckets of all threads of one histogram text together (16 threads of -h 1000000): the memory
// the parsed histograms take, 8 bytes each.
constexpr std::size_t kMaxHistogramCells = 16'000'000;

std::optional<double> JsonNumber(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// j[key] as an integer in [lo, hi]: a JSON integer, or a number with no fraction; nullopt when
// absent, not a number, fractional or out of range (a cast would be undefined there).
std::optional<std::int64_t> JsonInteger(const json& j, const char* key, std::int64_t lo,
                                        std::int64_t hi) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const std::uint64_t v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(hi)) return std::nullopt;
    const auto i = static_cast<std::int64_t>(v);
    return i < lo ? std::nullopt : std::optional<std::int64_t>(i);
  }
  if (it->is_number_integer()) {
    const std::int64_t v = it->get<std::int64_t>();
    return v < lo || v > hi ? std::nullopt : std::optional<std::int64_t>(v);
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || std::floor(d) != d) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

// A count (>= 0): j[key] or `fallback` when absent or not one.
std::uint64_t JsonCount(const json& j, const char* key, std::uint64_t fallback = 0) {
  const auto v = JsonInteger(j, key, 0, std::numeric_limits<std::int64_t>::max());
  return v ? static_cast<std::uint64_t>(*v) : fallback;
}

int JsonInt(const json& j, const char* key, int fallback) {
  const auto v =
      JsonInteger(j, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  return v ? static_cast<int>(*v) : fallback;
}

// A bucket number: decimal digits only, below `limit`.
std::optional<std::size_t> BucketNumber(const std::string& text, std::size_t limit) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::size_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  return v < limit ? std::optional<std::size_t>(v) : std::nullopt;
}

Status BucketError(const std::string& what, const std::string& text) {
  return DataLossError(what + " '" + text.substr(0, 40) + "' is not a histogram bucket (0 .. " +
                       std::to_string(kMaxBuckets - 1) + " us, as cyclictest -h writes them)");
}

void AddToBucket(std::vector<std::uint64_t>& h, std::size_t bucket, std::uint64_t count) {
  if (h.size() <= bucket) h.resize(bucket + 1, 0);
  h[bucket] = SaturatingAdd(h[bucket], count);  // CheckLatencyData refuses what saturates
}

// The "rtloop" object of rtloop-cyclic's --json (cyclic_report.h, FormatJson).
void ReadRtloopExtras(const json& rtloop, std::vector<ThreadLatency>& threads) {
  const auto per_thread = rtloop.find("thread");
  if (per_thread == rtloop.end() || !per_thread->is_object()) return;
  for (ThreadLatency& t : threads) {
    const auto it = per_thread->find(std::to_string(t.index));
    if (it == per_thread->end() || !it->is_object()) continue;
    const json& r = *it;
    constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
    t.priority = JsonInt(r, "priority", t.priority);
    if (auto v = JsonInteger(r, "interval_us", 0, kI64Max)) t.interval_us = *v;
    if (auto v = JsonInteger(r, "overruns", 0, kI64Max))
      t.overruns = static_cast<std::uint64_t>(*v);
    if (auto v = JsonInteger(r, "missed_releases", 0, kI64Max)) {
      t.missed_releases = static_cast<std::uint64_t>(*v);
    }
    t.histogram_overflows = JsonCount(r, "histogram_overflows", t.histogram_overflows);
    const auto lat = r.find("latency_ns");
    if (lat != r.end() && lat->is_object()) {
      for (const std::string& p : StandardPercentiles()) {
        if (auto v = JsonNumber(*lat, p.c_str())) t.percentiles_us[p] = *v / 1000.0;
      }
    }
  }
}

// The invariants every parser's result keeps (latency_data.h): finite values within
// kMaxLatencyUs, at most kMaxSamples samples in all threads together, so that compare's sums,
// merges and ranks can neither wrap nor reach NaN or infinity.
Status CheckLatencyData(const LatencyData& d) {
  std::uint64_t cycles = 0;
  std::uint64_t samples = 0;
  for (const ThreadLatency& t : d.threads) {
    const std::string thread = "thread " + std::to_string(t.index) + ": ";
    std::vector<std::pair<std::string, double>> values;
    for (const auto& [name, v] : {std::pair{"min", t.min_us}, {"avg", t.avg_us}, {"max", t.max_us}})
      if (v) values.emplace_back(name, *v);
    for (const auto& [name, v] : t.percentiles_us) values.emplace_back(name, v);
    for (const auto& [name, v] : values) {
      if (!(std::fabs(v) <= kMaxLatencyUs)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", v);
        return DataLossError(thread + name.substr(0, 40) + " " + buf +
                             " us is not a latency (a finite number of at most 10^12 us)");
      }
    }
    cycles = SaturatingAdd(cycles, t.cycles);
    samples = SaturatingAdd(samples, t.histogram_overflows);
    for (const std::uint64_t c : t.histogram) samples = SaturatingAdd(samples, c);
  }
  if (cycles > kMaxSamples || samples > kMaxSamples) {
    return DataLossError(std::string(cycles > kMaxSamples ? "the cycles" : "the histogram counts") +
                         " of all threads add up to more than 2^53 samples (over 285 years of "
                         "one sample per us): not a measurement");
  }
  return Status::Ok();
}

// result.json's version and unit: a later version or another unit may mean other things under
// the same keys, so it is refused rather than misread.
Status CheckResultVersion(const json& j) {
  const auto version = j.find("schema_version");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<std::int64_t>() != kResultSchemaVersion) {
    const std::string seen = version == j.end() ? "is missing" : "is " + version->dump();
    return DataLossError("result.json's schema_version " + seen.substr(0, 60) +
                         ": this rtloop-bench reads version " +
                         std::to_string(kResultSchemaVersion) +
                         " (compare with the rtloop-bench that wrote the file)");
  }
  const auto unit = j.find("unit");
  if (unit == j.end() || !unit->is_string() || *unit != "us") {
    const std::string seen = unit == j.end() ? "is missing" : "is " + unit->dump();
    return DataLossError("result.json's unit " + seen.substr(0, 60) +
                         ": schema_version 1 results are in \"us\"");
  }
  return Status::Ok();
}

// The "rtloop" object of rtloop-cyclic's --json: its schema_version (rtloop-cyclic's
// kJsonSchemaVersion, bench/cyclic/cyclic_report.h) and its unit, which must agree with
// cyclictest's resolution_in_ns flag.
Status CheckRtloopObject(const json& rtloop, bool resolution_ns) {
  constexpr std::int64_t kRtloopSchemaVersion = 1;
  if (const auto v = rtloop.find("schema_version"); v != rtloop.end()) {
    if (!v->is_number_integer() || v->get<std::int64_t>() != kRtloopSchemaVersion) {
      return DataLossError("the \"rtloop\" object's schema_version is " + v->dump().substr(0, 40) +
                           ": this rtloop-bench reads version 1 (rtloop-cyclic's --json)");
    }
  }
  if (const auto u = rtloop.find("unit"); u != rtloop.end()) {
    const char* want = resolution_ns ? "ns" : "us";
    if (!u->is_string() || *u != want) {
      return DataLossError("the \"rtloop\" object's unit is " + u->dump().substr(0, 40) +
                           " but resolution_in_ns says \"" + want +
                           "\": the file was edited or damaged");
    }
  }
  return Status::Ok();
}

// result.json's "outliers" counts; none when the run did not explain (or predates it) or the
// object is not as rtloop-bench writes it: the latencies are compared all the same.
std::optional<OutlierCounts> ResultOutliers(const json& j) {
  const auto o = j.find("outliers");
  if (o == j.end() || !o->is_object() || o->value("status", json()) != "ok") return std::nullopt;
  OutlierCounts c;
  for (const auto& [key, field] :
       {std::pair<const char*, std::uint64_t*>{"latency_above_us", &c.latency_above_us},
        {"outliers", &c.outliers},
        {"recorded", &c.recorded},
        {"unexplained", &c.unexplained},
        {"dropped", &c.dropped},
        {"samples_lost", &c.samples_lost}}) {
    const auto v = o->find(key);
    if (v == o->end() || !v->is_number_unsigned()) return std::nullopt;
    *field = v->get<std::uint64_t>();
  }
  return c;
}

Result<LatencyData> ParseResultJson(const json& j) {
  RTLOOP_RETURN_IF_ERROR(CheckResultVersion(j));
  LatencyData d;
  d.kind = "result.json";
  d.outliers = ResultOutliers(j);
  const auto threads = j.find("threads");
  if (threads == j.end() || !threads->is_array()) {
    return DataLossError("result.json has no \"threads\" array");
  }
  if (threads->size() > kMaxThreads) {
    return DataLossError("result.json holds " + std::to_string(threads->size()) +
                         " threads: more than any run has");
  }
  for (const json& th : *threads) {
    if (!th.is_object()) return DataLossError("result.json: a \"threads\" entry is not an object");
    constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
    ThreadLatency t;
    t.index = JsonInt(th, "index", 0);
    t.cpu = JsonInt(th, "cpu", -1);
    t.priority = JsonInt(th, "priority", -1);
    t.interval_us = JsonInteger(th, "interval_us", -1, kI64Max).value_or(-1);
    t.cycles = JsonCount(th, "cycles");
    t.min_us = JsonNumber(th, "min");
    t.avg_us = JsonNumber(th, "avg");
    t.max_us = JsonNumber(th, "max");
    if (auto v = JsonInteger(th, "overruns", 0, kI64Max))
      t.overruns = static_cast<std::uint64_t>(*v);
    if (auto v = JsonInteger(th, "missed_releases", 0, kI64Max)) {
      t.missed_releases = static_cast<std::uint64_t>(*v);
    }
    if (const auto p = th.find("percentiles"); p != th.end() && p->is_object()) {
      for (const auto& [k, v] : p->items()) {
        if (v.is_number()) t.percentiles_us[k] = v.get<double>();
      }
    }
    if (const auto h = th.find("histogram"); h != th.end() && h->is_object()) {
      const auto buckets = JsonInteger(*h, "buckets", 0, static_cast<std::int64_t>(kMaxBuckets));
      if (h->contains("buckets") && !buckets) {
        return DataLossError("result.json: histogram \"buckets\" is not 0 .. " +
                             std::to_string(kMaxBuckets));
      }
      const std::size_t n = static_cast<std::size_t>(buckets.value_or(0));
      t.histogram.assign(n, 0);
      t.histogram_size_known = h->contains("buckets");
      t.histogram_overflows = JsonCount(*h, "overflows");
      if (const auto c = h->find("counts"); c != h->end() && c->is_object()) {
        for (const auto& [k, v] : c->items()) {
          const std::optional<std::size_t> b = BucketNumber(k, n > 0 ? n : kMaxBuckets);
          if (!b) return BucketError("result.json: histogram count key", k);
          if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
            return DataLossError("result.json: the count of bucket " + k + " is not a count");
          }
          AddToBucket(t.histogram, *b, v.get<std::uint64_t>());
        }
      }
    }
    d.threads.push_back(std::move(t));
  }
  return d;
}

// cyclictest prints "avg": nan (or -nan) for a thread without cycles, which is not JSON: such a
// value (after ':' and blanks) becomes null. A scanner, not std::regex: libstdc++'s regex recurses
// per character and a long run of blanks would overflow the stack.
std::string NanToNull(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    out.push_back(text[i]);
    if (text[i++] != ':') continue;
    std::size_t j = i;
    while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])) != 0) ++j;
    std::size_t k = j < text.size() && text[j] == '-' ? j + 1 : j;
    const bool word_end =
        k + 3 >= text.size() ||
        (std::isalnum(static_cast<unsigned char>(text[k + 3])) == 0 && text[k + 3] != '_');
    if (text.compare(k, 3, "nan") == 0 && word_end) {
      out.append(text, i, j - i);
      out += "null";
      i = k + 3;
    }
  }
  return out;
}

// The threads of a histogram block: `rows` (bucket, one count per thread, maybe -H's sum) and
// the footer lines, which hold at least `n` values each (# Min/Max Latencies checked before).
Result<LatencyData> HistogramThreads(const std::vector<std::vector<std::uint64_t>>& rows,
                                     std::map<std::string, std::vector<double>>& footer,
                                     std::size_t n) {
  // Max, Avg and the overflows have one value per thread (plus the sum column's under -H).
  for (const char* name : {"# Avg Latencies", "# Max Latencies", "# Histogram Overflows"}) {
    const auto it = footer.find(name);
    if (it != footer.end() && it->second.size() < n) {
      return DataLossError("'" + std::string(name) + "' lists " +
                           std::to_string(it->second.size()) + " values for the " +
                           std::to_string(n) + " threads of '# Min Latencies'");
    }
  }
  LatencyData d;
  d.kind = footer.count("# Total") != 0 ? "histogram-2.4" : "histogram-2.7+";
  d.avg_truncated = true;
  const std::vector<double>& avgs = footer["# Avg Latencies"];
  const std::vector<double>& oflows = footer["# Histogram Overflows"];
  for (std::size_t t = 0; t < n; ++t) {
    ThreadLatency th;
    th.index = static_cast<int>(t);
    for (const auto& row : rows) {
      if (row.size() < n + 1)
        return DataLossError("a histogram row has fewer columns than threads");
      AddToBucket(th.histogram, row[0], row[1 + t]);
    }
    const double oflow = t < oflows.size() ? oflows[t] : 0;
    if (!(oflow >= 0 && oflow <= static_cast<double>(kMaxSamples)) || std::floor(oflow) != oflow) {
      return DataLossError("'# Histogram Overflows' of thread " + std::to_string(t) +
                           " is not a count of samples");
    }
    th.histogram_overflows = static_cast<std::uint64_t>(oflow);
    th.histogram_size_known = d.kind == "histogram-2.4";  // 2.4 prints every bucket below -h
    th.cycles = th.histogram_overflows;
    for (std::uint64_t c : th.histogram) th.cycles = SaturatingAdd(th.cycles, c);
    th.min_us = footer["# Min Latencies"][t];
    th.max_us = footer["# Max Latencies"][t];
    if (t < avgs.size()) th.avg_us = avgs[t];
    d.threads.push_back(std::move(th));
  }
  RTLOOP_RETURN_IF_ERROR(CheckLatencyData(d));
  return d;
}

// Removes a UTF-8 byte-order mark (Windows editors write one); UTF-16 and UTF-32 text, which
// would otherwise read as "no '# Histogram' line", is refused with the conversion to make.
Status StripByteOrderMark(std::string& text) {
  if (text.rfind("\xef\xbb\xbf", 0) == 0) {
    text.erase(0, 3);
    return Status::Ok();
  }
  if (text.rfind("\xff\xfe", 0) == 0 || text.rfind("\xfe\xff", 0) == 0 ||
      text.rfind(std::string("\0\0\xfe\xff", 4), 0) == 0) {
    return DataLossError(
        "the file is UTF-16 or UTF-32 text (it starts with a byte-order mark); convert it to "
        "UTF-8, e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.txt");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& StandardPercentiles() {
  static const std::vector<std::string> kAll = {"p50", "p90", "p99", "p99.9", "p99.99", "p99.999"};
  return kAll;
}

std::optional<double> PercentileOf(const std::string& metric) {
  if (metric.size() < 2 || metric[0] != 'p') return std::nullopt;
  try {
    std::size_t used = 0;
    const double p = std::stod(metric.substr(1), &used);
    if (used != metric.size() - 1 || !(p > 0.0) || !(p < 100.0)) return std::nullopt;
    return p;
  } catch (...) {
    return std::nullopt;
  }
}

Status SupportsPercentile(const std::string& metric, std::uint64_t cycles) {
  const std::optional<double> p = PercentileOf(metric);
  if (!p) return Status::Ok();
  const double tail = static_cast<double>(cycles) * (100.0 - *p) / 100.0;
  if (tail + 1e-9 >= kMinTailSamples) return Status::Ok();
  const double needed = std::ceil(kMinTailSamples * 100.0 / (100.0 - *p) - 1e-6);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s cannot be gated on %llu cycles: only %.1f samples lie above it (at least "
                "%.0f needed, i.e. %.0f cycles); measure longer or gate a lower percentile",
                metric.c_str(), static_cast<unsigned long long>(cycles), tail, kMinTailSamples,
                needed);
  return InvalidArgumentError(buf);
}

Result<double> Metric(const ThreadLatency& t, const std::string& metric) {
  auto need = [&](const std::optional<double>& v) -> Result<double> {
    if (v) return *v;
    return FailedPreconditionError(metric + " is not in this input");
  };
  if (metric == "min") return need(t.min_us);
  if (metric == "avg") return need(t.avg_us);
  if (metric == "max") return need(t.max_us);
  const std::optional<double> p = PercentileOf(metric);
  if (!p) return InvalidArgumentError("unknown metric '" + metric + "'");
  if (const auto it = t.percentiles_us.find(metric); it != t.percentiles_us.end()) {
    return it->second;
  }
  if (t.histogram.empty()) {
    return FailedPreconditionError(metric +
                                   " needs a histogram or percentiles: this input has neither "
                                   "(run cyclictest with -h)");
  }
  // The smallest bucket whose cumulative count reaches the rank ceil(p/100 * cycles).
  std::uint64_t total = t.histogram_overflows;
  for (std::uint64_t c : t.histogram) total = SaturatingAdd(total, c);
  if (total == 0) return FailedPreconditionError(metric + ": no samples");
  const double rank = std::ceil(*p / 100.0 * static_cast<double>(total));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < t.histogram.size(); ++b) {
    seen = SaturatingAdd(seen, t.histogram[b]);
    if (static_cast<double>(seen) >= rank) return static_cast<double>(b);
  }
  return FailedPreconditionError(
      metric + " lies in the histogram's overflow (>= " + std::to_string(t.histogram.size()) +
      " us): use a larger -h to measure it");
}

MetricChange CompareMetric(double baseline, double candidate, double max_regression_pct,
                           double min_delta_us) {
  MetricChange c;
  const double delta = candidate - baseline;
  if (baseline > 0) {
    c.percent = delta / baseline * 100.0;
  } else if (delta == 0) {
    c.percent = 0.0;
  }
  c.regression =
      delta >= min_delta_us && delta > std::fabs(baseline) * (max_regression_pct / 100.0);
  return c;
}

ThreadLatency MergeThreads(const std::vector<ThreadLatency>& threads) {
  ThreadLatency all;
  all.index = -1;
  double sum = 0;
  bool avg_known = true;
  bool hist_all = !threads.empty();
  for (const ThreadLatency& t : threads) {
    all.cycles = SaturatingAdd(all.cycles, t.cycles);  // the parsers keep the sum in range
    if (t.min_us) all.min_us = all.min_us ? std::min(*all.min_us, *t.min_us) : *t.min_us;
    if (t.max_us) all.max_us = all.max_us ? std::max(*all.max_us, *t.max_us) : *t.max_us;
    if (t.avg_us) {
      sum += *t.avg_us * static_cast<double>(t.cycles);
    } else {
      avg_known = false;
    }
    if (t.histogram.empty()) hist_all = false;
    if (t.overruns) all.overruns = all.overruns.value_or(0) + *t.overruns;
    if (t.missed_releases)
      all.missed_releases = all.missed_releases.value_or(0) + *t.missed_releases;
  }
  if (avg_known && all.cycles > 0) all.avg_us = sum / static_cast<double>(all.cycles);
  if (hist_all) {
    for (const ThreadLatency& t : threads) {
      for (std::size_t b = 0; b < t.histogram.size(); ++b)
        AddToBucket(all.histogram, b, t.histogram[b]);
      all.histogram_overflows = SaturatingAdd(all.histogram_overflows, t.histogram_overflows);
    }
  }
  return all;
}

Result<LatencyData> ParseHistogramText(const std::string& text) {
  static const std::set<std::string> kFooterLines = {
      "# Total", "# Min Latencies", "# Avg Latencies", "# Max Latencies", "# Histogram Overflows"};
  const std::vector<std::string> lines = SplitLines(text);
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == "# Histogram") {
      first = i;
      break;
    }
  }
  if (first == lines.size()) return DataLossError("no '# Histogram' line");
  std::map<std::string, std::vector<double>> footer;
  std::vector<std::vector<std::uint64_t>> rows;
  for (std::size_t i = first + 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty()) continue;
    if (l[0] == '#') {
      // The footer lines read below; others ("# Thread 0: ...", "# Break value: ...") are not.
      const std::size_t colon = l.find(':');
      const std::string name = l.substr(0, colon);
      if (colon != std::string::npos && kFooterLines.count(name) != 0) {
        Result<std::vector<double>> numbers = FooterNumbers(name, l.substr(colon + 1), i + 1);
        if (!numbers.ok()) return numbers.status();
        footer[name] = std::move(*numbers);
      }
      continue;
    }
    std::istringstream in(l);
    std::vector<std::uint64_t> row;
    std::string word;
    while (in >> word) {
      // A bucket (the first column) or a count; 18 digits at most, so it fits.
      const std::optional<std::size_t> v =
          BucketNumber(word, row.empty() ? kMaxBuckets : std::numeric_limits<std::size_t>::max());
      if (!v) {
        if (row.empty() && word.find_first_not_of("0123456789") == std::string::npos) {
          return BucketError("line " + std::to_string(i + 1) + ": bucket", word);
        }
        return DataLossError("line " + std::to_string(i + 1) + " is not a histogram row: '" +
                             l.substr(0, 80) + "'");
      }
      row.push_back(*v);
    }
    rows.push_back(std::move(row));
  }
  const auto mins = footer.find("# Min Latencies");
  const auto maxs = footer.find("# Max Latencies");
  if (mins == footer.end() || maxs == footer.end() || mins->second.empty()) {
    return DataLossError("the histogram block has no '# Min Latencies'/'# Max Latencies' lines");
  }
  const std::size_t n = mins->second.size();
  if (n > kMaxThreads) {
    return DataLossError("'# Min Latencies' lists " + std::to_string(n) +
                         " threads: more than any run has");
  }
  std::size_t buckets = 0;
  for (const auto& row : rows) {
    if (!row.empty()) buckets = std::max<std::size_t>(buckets, row[0] + 1);
  }
  if (buckets * n > kMaxHistogramCells) {
    return DataLossError(std::to_string(n) + " threads of " + std::to_string(buckets) +
                         " buckets: larger than the histograms rtloop-bench reads (" +
                         std::to_string(kMaxHistogramCells) + " buckets in all)");
  }
  return HistogramThreads(rows, footer, n);
}

Result<LatencyData> ParseCyclictestJson(const std::string& text) {
  const std::size_t brace = text.find('{');
  if (brace == std::string::npos) return DataLossError("no JSON object");
  const json j = json::parse(NanToNull(text.substr(brace)), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return DataLossError("not valid JSON");
  if (const auto schema = j.find("schema");
      schema != j.end() && schema->is_string() && *schema == "rtloop-bench/result") {
    Result<LatencyData> d = ParseResultJson(j);
    if (d.ok()) RTLOOP_RETURN_IF_ERROR(CheckLatencyData(*d));
    return d;
  }
  const auto threads = j.find("thread");
  if (threads == j.end() || !threads->is_object()) {
    return DataLossError("JSON without a \"thread\" object: not a cyclictest --json file");
  }
  if (threads->size() > kMaxThreads) {
    return DataLossError("JSON with " + std::to_string(threads->size()) +
                         " threads: more than any run has");
  }
  const bool ns = JsonCount(j, "resolution_in_ns") != 0;
  const double scale = ns ? 1e-3 : 1.0;
  LatencyData d;
  d.kind = j.contains("rtloop") ? "rtloop-cyclic-json" : "cyclictest-json";
  for (const auto& [key, th] : threads->items()) {
    ThreadLatency t;
    const std::optional<std::size_t> index = BucketNumber(key, kMaxThreads);
    if (!index)
      return DataLossError("thread key '" + key.substr(0, 40) + "' is not a thread number");
    if (!th.is_object()) return DataLossError("thread " + key + " is not an object");
    t.index = static_cast<int>(*index);
    t.cycles = JsonCount(th, "cycles");
    if (auto v = JsonNumber(th, "min")) t.min_us = *v * scale;
    if (auto v = JsonNumber(th, "max")) t.max_us = *v * scale;
    if (auto v = JsonNumber(th, "avg")) t.avg_us = *v * scale;
    t.cpu = JsonInt(th, "cpu", -1);
    if (const auto h = th.find("histogram"); h != th.end() && h->is_object()) {
      std::uint64_t in_range = 0;
      for (const auto& [b, c] : h->items()) {
        // -N writes buckets in ns: 1000 of them per 1-us bucket.
        const std::optional<std::size_t> bucket =
            BucketNumber(b, ns ? kMaxBuckets * 1000 : kMaxBuckets);
        if (!bucket) return BucketError("thread " + key + ": histogram key", b);
        const std::uint64_t count = c.is_number_unsigned() ? c.get<std::uint64_t>() : 0;
        AddToBucket(t.histogram, ns ? *bucket / 1000 : *bucket, count);
        in_range = SaturatingAdd(in_range, count);
      }
      // cyclictest's JSON has no overflow count: what the buckets miss overflowed.
      t.histogram_overflows = t.cycles > in_range ? t.cycles - in_range : 0;
    }
    d.threads.push_back(std::move(t));
  }
  std::sort(d.threads.begin(), d.threads.end(),
            [](const ThreadLatency& a, const ThreadLatency& b) { return a.index < b.index; });
  if (const auto r = j.find("rtloop"); r != j.end() && r->is_object()) {
    RTLOOP_RETURN_IF_ERROR(CheckRtloopObject(*r, ns));
    ReadRtloopExtras(*r, d.threads);
  }
  RTLOOP_RETURN_IF_ERROR(CheckLatencyData(d));
  return d;
}

Result<LatencyData> LoadLatencyData(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  if (Status s = StripByteOrderMark(*text); !s.ok())
    return DataLossError(path + ": " + s.message());
  const std::string kinds =
      " (understood: rtloop-bench result.json, cyclictest/rtloop-cyclic --json, cyclictest -h "
      "output in the 2.4 or 2.7+ layout)";
  std::string first_word;
  std::istringstream(*text) >> first_word;
  const bool json_like = first_word.rfind('{', 0) == 0 ||
                         (first_word == "#" && text->find("\n{") != std::string::npos &&
                          text->find("# Histogram") == std::string::npos);
  Result<LatencyData> d = json_like ? ParseCyclictestJson(*text) : ParseHistogramText(*text);
  if (!d.ok()) return DataLossError(path + ": " + d.status().message() + kinds);
  if (d->threads.empty()) return DataLossError(path + ": no thread in it" + kinds);
  return d;
}

}  // namespace rtloop::bench
