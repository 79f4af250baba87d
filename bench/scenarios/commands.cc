// rtloop-bench's entry point and its small subcommands: doctor, compare, plot, references.
#include "commands.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "latency_data.h"
#include "plots.h"
#include "process_group.h"
#include "reference.h"
#include "report.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/readiness.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

const char kUsage[] =
    "usage: rtloop-bench COMMAND [OPTIONS]\n"
    "  doctor [--json] [--cpus=LIST] [--root=DIR]\n"
    "                                    judge real-time readiness; exit 1 when a check fails\n"
    "  run --scenario=NAME [...]         the documented benchmark: load, measure, report\n"
    "  compare BASELINE CANDIDATE [...]  CI gate: exit 1 on a regression, 2 on bad input\n"
    "  plot INPUT -o FILE.png [...]      plot a result.json, cyclictest -h output or sample log\n"
    "  references                        the published results --reference can name\n"
    "Each command takes --help. Documentation: bench/scenarios/README.md\n";

bool WantsHelp(int argc, const char* const* argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

std::string Cell(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

struct CompareOptions {
  std::string baseline, candidate;
  double max_regression_pct = 10.0;
  double min_delta_us = 1.0;
  std::vector<std::string> metrics = {"avg", "p99", "max"};
  bool metrics_given = false;  // --metrics: each must be computable (else exit 2)
};

Result<CompareOptions> ParseCompare(int argc, const char* const* argv) {
  CompareOptions o;
  Args a(argc, argv, 2, "compare");
  std::vector<std::string> files;
  while (a.More() && a.error().ok()) {
    if (auto v = a.Value("--max-regression")) {
      char* end = nullptr;
      o.max_regression_pct = std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(o.max_regression_pct >= 0)) {
        return InvalidArgumentError("--max-regression='" + *v + "': expected a percentage >= 0");
      }
    } else if (auto d = a.Value("--min-delta")) {
      char* end = nullptr;
      o.min_delta_us = std::strtod(d->c_str(), &end);
      if (d->empty() || *end != '\0' || !(o.min_delta_us >= 0)) {
        return InvalidArgumentError("--min-delta='" + *d + "': expected us >= 0");
      }
    } else if (auto m = a.Value("--metrics")) {
      o.metrics.clear();
      o.metrics_given = true;
      std::string item;
      for (std::size_t i = 0; i <= m->size(); ++i) {
        if (i == m->size() || (*m)[i] == ',') {
          if (item != "min" && item != "avg" && item != "max" && !PercentileOf(item)) {
            return InvalidArgumentError("--metrics: unknown metric '" + item +
                                        "' (min, avg, max or pNN such as p99.9)");
          }
          o.metrics.push_back(item);
          item.clear();
        } else {
          item.push_back((*m)[i]);
        }
      }
    } else if (auto f = a.Positional()) {
      files.push_back(*f);
    } else {
      (void)a.Unknown();
    }
  }
  if (!a.error().ok()) return a.error();
  if (files.size() != 2) return InvalidArgumentError("compare needs BASELINE and CANDIDATE files");
  o.baseline = files[0];
  o.candidate = files[1];
  return o;
}

// --root names a tree to judge: a directory holding proc/ or sys/, else every fact would read as
// missing and the report would describe nothing.
Status CheckDoctorRoot(const std::string& root) {
  if (root.empty()) return Status::Ok();
  const std::string shown = "--root='" + telemetry::EscapeControlCharacters(root) + "'";
  struct stat st {};
  if (stat(root.c_str(), &st) != 0) {
    return ErrnoError(errno, shown, "give the directory of a saved or fake /proc, /sys tree");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(shown +
                                ": is not a directory; give the directory that holds "
                                "the tree's proc/ and sys/");
  }
  for (const char* sub : {"/proc", "/sys"}) {
    if (stat((root + sub).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  }
  return InvalidArgumentError(shown +
                              ": holds neither proc/ nor sys/; give the directory that "
                              "holds the saved or fake tree's proc/ and sys/");
}

// The board's tools rtloop-bench runs when present (its loads and plots): one finding each, WARN
// with the Debian package when missing (a static rtloop-bench on a bare board says what to add).
void AddToolFindings(ReadinessReport& report) {
  struct Tool {
    const char* name;
    const char* used_for;  // when present
    const char* lost;      // what cannot run without it
  };
  static const Tool kTools[] = {
      {"stress-ng", "the load of the stress, stress-fft and isolated scenarios",
       "run --scenario=stress, stress-fft or isolated cannot start"},
      {"hackbench", "the load of the hackbench scenario", "run --scenario=hackbench cannot start"},
      {"iperf3", "the load of the irq scenario", "run --scenario=irq cannot start"},
      {"gnuplot", "the plots of run and plot",
       "run writes no plot.png or max-over-time.png, plot cannot run"}};
  for (const Tool& tool : kTools) {
    const std::string path = FindInPath(tool.name);
    ReadinessFinding f;
    f.id = std::string("tool_") + tool.name;
    std::replace(f.id.begin(), f.id.end(), '-', '_');
    if (!path.empty()) {
      f.summary = std::string(tool.name) + " is " + path + " (" + tool.used_for + ")";
    } else {
      f.level = ReadinessLevel::kWarn;
      f.summary = std::string(tool.name) + " not found in PATH: " + tool.lost;
      f.fix = "apt-get install " + DebianPackageOf(tool.name) + " (or copy " + tool.name +
              " into a directory of PATH)";
    }
    report.findings.push_back(std::move(f));
  }
}

}  // namespace

int DoctorCommand(int argc, const char* const* argv) {
  if (WantsHelp(argc, argv)) {
    std::fputs(
        "usage: rtloop-bench doctor [--json] [--cpus=LIST] [--root=DIR]\n"
        "  --cpus=LIST the CPUs the real-time threads run on (e.g. 2-3): isolcpus=, nohz_full=\n"
        "              and rcu_nocbs= must cover each (default: the isolated CPUs)\n"
        "  --root=DIR  read /proc, /sys and /dev under DIR (a saved or fake tree)\n"
        "The board's tools (stress-ng, hackbench, iperf3, gnuplot) are findings too.\n"
        "exit: 0 nothing failed, 1 a check failed, 2 bad command line\n",
        stdout);
    return kExitOk;
  }
  bool as_json = false;
  ReadinessConfig config;
  Args a(argc, argv, 2, "doctor");
  while (a.More() && a.error().ok()) {
    if (a.Flag("--json")) {
      as_json = true;
    } else if (auto r = a.Value("--root")) {
      config.root = *r;
    } else if (auto c = a.Value("--cpus")) {
      Result<std::vector<int>> cpus = ParseCpuList(*c);
      if (!cpus.ok() || cpus->empty()) {
        return UsageError("doctor", "--cpus='" + telemetry::EscapeControlCharacters(*c) +
                                        "': expected a CPU list such as 2-3 or 1,3");
      }
      config.rt_cpus = *cpus;
    } else {
      (void)a.Unknown();
    }
  }
  if (!a.error().ok()) return UsageError("doctor", a.error().message());
  if (Status s = CheckDoctorRoot(config.root); !s.ok()) return UsageError("doctor", s.message());
  // What a killed run left (loads, --tune values) is undone first: the checks then see this
  // machine as it is meant to be, and stderr says what was undone.
  if (config.root.empty()) {
    for (const std::string& line : LoadGroup::UndoKilledRuns()) {
      std::fprintf(stderr, "rtloop-bench: %s\n", line.c_str());
    }
  }
  ReadinessReport report = CheckReadiness(config);
  AddToolFindings(report);
  const std::string out = as_json ? JsonText(FindingsJson(report)) : FormatFindings(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.Count(ReadinessLevel::kFail) == 0 ? kExitOk : kExitFail;
}

namespace {

// One row of compare's table: a thread (or "all" merged) of both inputs.
struct CompareRow {
  std::string name;
  ThreadLatency baseline, candidate;
};

// The two inputs made comparable like with like; `notes` says what was done.
struct ComparePlan {
  std::vector<CompareRow> rows;
  std::vector<std::string> notes;
};

// All threads merged, then thread by thread when both have the same threads. Percentiles come
// from one source in every row: the 1 us histograms when both inputs have them (the merged row
// can only be computed from them), else rtloop-cyclic's HDR percentiles. A truncated cyclictest
// average is compared with the other input's average truncated the same way.
ComparePlan PlanCompare(LatencyData base, LatencyData cand,
                        const std::vector<std::string>& metrics) {
  ComparePlan plan;
  const bool percentiles = std::any_of(metrics.begin(), metrics.end(),
                                       [](const std::string& m) { return PercentileOf(m); });
  const auto all_have_histograms = [](const LatencyData& d) {
    return std::all_of(d.threads.begin(), d.threads.end(),
                       [](const ThreadLatency& t) { return !t.histogram.empty(); });
  };
  if (all_have_histograms(base) && all_have_histograms(cand)) {
    bool dropped = false;
    for (LatencyData* d : {&base, &cand}) {
      for (ThreadLatency& t : d->threads) {
        dropped = dropped || !t.percentiles_us.empty();
        t.percentiles_us.clear();
      }
    }
    if (dropped && percentiles) {
      plan.notes.push_back(
          "percentiles: from the 1 us histograms in every row (the merged row has no other "
          "source), so whole us; the HDR percentiles are not used");
    }
  }
  const bool avg = std::find(metrics.begin(), metrics.end(), "avg") != metrics.end();
  if (base.avg_truncated != cand.avg_truncated && avg) {
    LatencyData& exact = base.avg_truncated ? cand : base;
    for (ThreadLatency& t : exact.threads) {
      if (t.avg_us) t.avg_us = std::trunc(*t.avg_us);
    }
    plan.notes.push_back("avg: cyclictest's -h output truncates the average to whole us; the " +
                         std::string(base.avg_truncated ? "candidate" : "baseline") +
                         "'s average is truncated the same way for the comparison");
  }
  plan.rows.push_back({"all", MergeThreads(base.threads), MergeThreads(cand.threads)});
  if (base.avg_truncated || cand.avg_truncated) {  // as cyclictest would divide the merged sum
    for (ThreadLatency* t : {&plan.rows[0].baseline, &plan.rows[0].candidate}) {
      if (t->avg_us) t->avg_us = std::trunc(*t->avg_us);
    }
  }
  if (base.threads.size() == cand.threads.size() && base.threads.size() > 1) {
    for (std::size_t i = 0; i < base.threads.size(); ++i) {
      plan.rows.push_back(
          {std::to_string(base.threads[i].index), base.threads[i], cand.threads[i]});
    }
  } else if (base.threads.size() != cand.threads.size()) {
    plan.notes.push_back(std::to_string(base.threads.size()) + " vs " +
                         std::to_string(cand.threads.size()) +
                         " threads: comparing all threads merged");
  }
  return plan;
}

// Why `metric` of one row cannot be compared, or "" when it can: the sample-count rule
// (SupportsPercentile, the rule report.md shares), then whether each input holds the metric.
std::string Unsupported(const CompareOptions& o, const std::string& metric, const CompareRow& row) {
  for (const auto& [which, t, file] : {std::tuple{"baseline", &row.baseline, o.baseline},
                                       std::tuple{"candidate", &row.candidate, o.candidate}}) {
    const std::string where = std::string(which) + " " + file + " thread " + row.name + ": ";
    if (Status s = SupportsPercentile(metric, t->cycles); !s.ok()) return where + s.message();
    if (Result<double> v = Metric(*t, metric); !v.ok()) return where + v.status().message();
  }
  return "";
}

}  // namespace

namespace {

// "outliers (explained, not gated): baseline 3 above 100 us (3 recorded, 0 without evidence, 0
// dropped), candidate 52 above 100 us (...)": result.json's counts, or "not explained".
std::string OutliersLine(const LatencyData& base, const LatencyData& cand) {
  const auto side = [](const char* which, const std::optional<OutlierCounts>& c) {
    std::string s = std::string(which) + " ";
    if (!c) return s + "not explained";
    return s + std::to_string(c->outliers) + " above " + std::to_string(c->latency_above_us) +
           " us (" + std::to_string(c->recorded) + " recorded, " + std::to_string(c->unexplained) +
           " without evidence, " + std::to_string(c->dropped) + " dropped, " +
           std::to_string(c->samples_lost) + " samples lost)";
  };
  return "outliers (not gated; report.md says why): " + side("baseline", base.outliers) + ", " +
         side("candidate", cand.outliers);
}

}  // namespace

int CompareCommand(int argc, const char* const* argv) {
  if (WantsHelp(argc, argv)) {
    std::fputs(
        "usage: rtloop-bench compare BASELINE CANDIDATE [--max-regression=PCT] "
        "[--metrics=avg,p99,max] [--min-delta=US]\n"
        "  inputs: result.json, cyclictest/rtloop-cyclic --json, cyclictest -h output (2.4/2.7+)\n"
        "  a metric regresses when CANDIDATE > BASELINE * (1 + PCT/100) and by >= US (default 10\n"
        "  %, 1 us); a percentile with fewer than 10 samples above it is not compared\n"
        "  without --metrics, the default metrics both inputs support are compared and the\n"
        "  others listed as skipped\n"
        "exit: 0 no regression, 1 a regression, 2 unreadable input or a metric named in\n"
        "      --metrics that cannot be computed\n",
        stdout);
    return kExitOk;
  }
  Result<CompareOptions> o = ParseCompare(argc, argv);
  if (!o.ok()) return UsageError("compare", o.status().message());
  Result<LatencyData> base = LoadLatencyData(o->baseline);
  if (!base.ok()) return UsageError("compare", base.status().message());
  Result<LatencyData> cand = LoadLatencyData(o->candidate);
  if (!cand.ok()) return UsageError("compare", cand.status().message());
  const std::string kinds = "baseline " + telemetry::EscapeControlCharacters(o->baseline) + " (" +
                            base->kind + ") vs candidate " +
                            telemetry::EscapeControlCharacters(o->candidate) + " (" + cand->kind +
                            ")";
  const std::string outliers =
      base->outliers || cand->outliers ? OutliersLine(*base, *cand) : std::string();
  const ComparePlan plan = PlanCompare(std::move(*base), std::move(*cand), o->metrics);
  std::string table = "metric   thread  baseline  candidate  change    verdict\n";
  std::vector<std::string> skipped;
  bool regression = false;
  for (const std::string& m : o->metrics) {
    for (const CompareRow& row : plan.rows) {
      if (const std::string why = Unsupported(*o, m, row); !why.empty()) {
        if (o->metrics_given) return UsageError("compare", why);
        skipped.push_back(m + ": " + why);
        continue;
      }
      const double bv = *Metric(row.baseline, m);
      const double cv = *Metric(row.candidate, m);
      const MetricChange change = CompareMetric(bv, cv, o->max_regression_pct, o->min_delta_us);
      regression = regression || change.regression;
      char percent[32] = "     n/a";
      if (change.percent) std::snprintf(percent, sizeof percent, "%+7.1f%%", *change.percent);
      char line[160];
      std::snprintf(line, sizeof line, "%-8s %-7s %-9s %-10s %s  %s\n", m.c_str(), row.name.c_str(),
                    Cell(bv).c_str(), Cell(cv).c_str(), percent,
                    change.regression ? "REGRESSION" : "ok");
      table += line;
    }
  }
  if (skipped.size() == plan.rows.size() * o->metrics.size()) {
    return UsageError("compare",
                      "no default metric can be computed on both inputs: " + skipped.front());
  }
  std::fputs(table.c_str(), stdout);
  for (const std::string& n : plan.notes) std::printf("note: %s\n", n.c_str());
  for (const std::string& s : skipped) std::printf("skipped %s\n", s.c_str());
  if (!outliers.empty()) std::printf("%s\n", outliers.c_str());
  std::printf("%s (max regression %.1f%%, min delta %.1f us; %s)\n",
              regression ? "REGRESSION" : "no regression", o->max_regression_pct, o->min_delta_us,
              kinds.c_str());
  return regression ? kExitFail : kExitOk;
}

int ReferencesCommand(int argc, const char* const* argv) {
  std::string file;
  Args a(argc, argv, 2, "references");
  while (a.More() && a.error().ok()) {
    if (auto f = a.Value("--reference-file")) {
      file = *f;
    } else {
      (void)a.Unknown();
    }
  }
  if (!a.error().ok()) return UsageError("references", a.error().message());
  Result<std::vector<ReferenceRun>> runs = LoadReferences(file);
  if (!runs.ok()) return UsageError("references", runs.status().message());
  for (const ReferenceRun& r : *runs) {
    std::printf("%-60s %s%s\n", r.key.c_str(), r.command.c_str(),
                r.threads.empty() ? "  (summary only)" : "");
  }
  return kExitOk;
}

int Main(int argc, const char* const* argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const std::string cmd = argv[1];
  if (cmd == "__guardian" || cmd == "__keeper") return LoadGroup::GuardianMain(argc, argv);
  if (cmd == "doctor") return DoctorCommand(argc, argv);
  if (cmd == "run") return RunCommand(argc, argv);
  if (cmd == "compare") return CompareCommand(argc, argv);
  if (cmd == "plot") return PlotCommand(argc, argv);
  if (cmd == "references") return ReferencesCommand(argc, argv);
  return UsageError("", "unknown command '" + cmd + "' (doctor, run, compare, plot, references)");
}

}  // namespace rtloop::bench
