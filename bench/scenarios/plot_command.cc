// rtloop-bench plot INPUT -o FILE.png [--kind=histogram|max|latency] [--title=TEXT]
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "commands.h"
#include "latency_data.h"
#include "plots.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

const char kPlotHelp[] =
    "usage: rtloop-bench plot INPUT -o FILE.png [--kind=histogram|max|latency] [--title=TEXT]\n"
    "  INPUT: result.json (histogram, max), cyclictest -h output 2.4/2.7+ or --json\n"
    "  (histogram), an rtloop sample log from --record (latency, histogram, max)\n"
    "exit: 0 plotted, 1 gnuplot missing or failed (the .gp script is written), 2 bad input\n";

bool IsSampleLog(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buf[64] = {0};
  const std::size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return std::string(buf, n).find("rtloop-record") != std::string::npos;
}

// result.json's per-thread max_over_time as MaxOverTime.
Result<MaxOverTime> WindowsFromResult(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  const json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("threads")) {
    return DataLossError(path + ": --kind=max needs a result.json (or a sample log)");
  }
  MaxOverTime m;
  for (const json& t : j["threads"]) {
    const json& mot = t.contains("max_over_time") ? t["max_over_time"] : json();
    std::vector<WindowPoint> pts;
    if (mot.is_object()) {
      m.window_s = mot.value("window_s", 1.0);
      for (const json& w : mot["windows"]) {
        pts.push_back({w[0].get<double>(), w[1].get<double>(), w[2].get<std::uint64_t>()});
      }
    }
    m.threads.push_back(std::move(pts));
  }
  return m;
}

}  // namespace

int PlotCommand(int argc, const char* const* argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::fputs(kPlotHelp, stdout);
      return kExitOk;
    }
  }
  std::string input, png, kind, title;
  Args a(argc, argv, 2, "plot");
  while (a.More() && a.error().ok()) {
    if (auto o = a.Value("-o")) {
      png = *o;
    } else if (auto k = a.Value("--kind")) {
      kind = *k;
    } else if (auto t = a.Value("--title")) {
      title = *t;
    } else if (auto p = a.Positional(); p && input.empty()) {
      input = *p;
    } else {
      (void)a.Unknown();
    }
  }
  if (!a.error().ok()) return UsageError("plot", a.error().message());
  if (input.empty() || png.empty()) return UsageError("plot", "plot needs INPUT and -o FILE.png");
  if (!kind.empty() && kind != "histogram" && kind != "max" && kind != "latency") {
    return UsageError("plot", "--kind='" + kind + "': expected histogram, max or latency");
  }
  if (title.empty()) title = input;
  Result<PlotJob> job = FailedPreconditionError("nothing to plot");
  if (IsSampleLog(input)) {
    LatencyData hist;
    MaxOverTime windows;
    const std::string tmp_png = kind.empty() || kind == "latency" ? png : png + ".latency.png";
    job = SampleLogPlot(input, "Latency over time: " + title, tmp_png, &hist, &windows);
    if (job.ok() && kind == "histogram")
      job = HistogramPlot(hist, "Latency histogram: " + title, png);
    if (job.ok() && kind == "max")
      job = MaxOverTimePlot(windows, "Max latency per 1 s: " + title, png);
  } else if (kind == "max") {
    Result<MaxOverTime> m = WindowsFromResult(input);
    if (!m.ok()) return UsageError("plot", m.status().message());
    job = MaxOverTimePlot(*m, "Max latency over time: " + title, png);
  } else if (kind == "latency") {
    return UsageError("plot", "--kind=latency needs a sample log (rtloop-cyclic --record)");
  } else {
    Result<LatencyData> d = LoadLatencyData(input);
    if (!d.ok()) return UsageError("plot", d.status().message());
    job = HistogramPlot(*d, "Latency histogram: " + title, png);
  }
  if (!job.ok()) return UsageError("plot", input + ": " + job.status().message());
  if (Status s = RunGnuplot(*job); !s.ok()) {
    std::fprintf(stderr, "rtloop-bench: %s\n", s.message().c_str());
    return kExitFail;
  }
  std::printf("rtloop-bench: wrote %s\n", png.c_str());
  return kExitOk;
}

}  // namespace rtloop::bench
