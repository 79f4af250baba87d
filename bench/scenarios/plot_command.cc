// rtloop-bench plot INPUT -o FILE.png [--kind=histogram|max|latency] [--title=TEXT]
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "commands.h"
#include "latency_data.h"
#include "plots.h"
#include "run_result.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;

const char kPlotHelp[] =
    "usage: rtloop-bench plot INPUT -o FILE.png [--kind=histogram|max|latency] [--title=TEXT]\n"
    "  INPUT: result.json (histogram, max), cyclictest -h output 2.4/2.7+ or --json\n"
    "  (histogram), an rtloop sample log from --record (latency, histogram, max)\n"
    "  -o FILE.png: a regular file (written as FILE.png.partial, renamed when complete); never\n"
    "  the input\n"
    "exit: 0 plotted, 1 gnuplot missing or failed, 2 bad command line or input, 4 the PNG could\n"
    "not be written\n";

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

// The plot `kind` of `input` asks for; errors are the input's (exit 2).
Result<PlotJob> MakePlotJob(const std::string& input, const std::string& kind,
                            const std::string& given_title) {
  // By default INPUT's name; a result.json's histogram says its scenario and load instead.
  const std::string& title = given_title.empty() ? input : given_title;
  // "INPUT: no histogram to plot (run with -h)".
  const auto named = [&](Result<PlotJob> job) -> Result<PlotJob> {
    if (job.ok()) return job;
    return Status(job.status().code(), input + ": " + job.status().message());
  };
  if (IsSampleLog(input)) {
    LatencyData hist;
    MaxOverTime windows;
    Result<PlotJob> job = SampleLogPlot(input, "Latency over time: " + title, &hist, &windows);
    if (!job.ok() || kind.empty() || kind == "latency") return named(std::move(job));
    if (kind == "histogram") return named(HistogramPlot(hist, "Latency histogram: " + title));
    return named(MaxOverTimePlot(windows, "Max latency per 1 s: " + title));
  }
  if (kind == "max") {
    Result<MaxOverTime> m = WindowsFromResult(input);
    if (!m.ok()) return m.status();
    return named(MaxOverTimePlot(*m, "Max latency over time: " + title));
  }
  if (kind == "latency") {
    return InvalidArgumentError("--kind=latency needs a sample log (rtloop-cyclic --record)");
  }
  Result<LatencyData> d = LoadLatencyData(input);
  if (!d.ok()) return d.status();
  if (d->kind != "result.json") return named(HistogramPlot(*d, "Latency histogram: " + title));
  // A run's result: its scenario and load in the title, the published maxima marked.
  Result<std::string> text = ReadTextFile(input);
  const json r = text.ok() ? json::parse(*text, nullptr, false) : json();
  const bool ok = r.is_object();
  return named(HistogramPlot(*d,
                             "Latency histogram: " + (!given_title.empty() ? given_title
                                                      : ok                 ? RunTitle(r)
                                                                           : input),
                             ok ? PublishedMarks(r) : std::vector<PublishedMark>{}));
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
  Result<telemetry::OutputTarget> out =
      telemetry::ResolveOutputPath(png, {.what = "-o", .allow_stdout = false});
  if (!out.ok()) return UsageError("plot", out.status().message());
  if (Status s = telemetry::CheckOutputsApart({*out}, {{"INPUT", input}}); !s.ok()) {
    return UsageError("plot", s.message());
  }
  Result<PlotJob> job = MakePlotJob(input, kind, title);
  // One line whatever INPUT's name holds (the message quotes it).
  if (!job.ok()) {
    return UsageError("plot", telemetry::EscapeControlCharacters(job.status().message()));
  }
  Result<std::string> image = RunGnuplot(*job);
  if (!image.ok()) {
    std::fprintf(stderr, "rtloop-bench: %s\n", image.status().message().c_str());
    return kExitFail;
  }
  if (Status s = WritePlot(*out, *image); !s.ok()) {
    std::fprintf(stderr, "rtloop-bench: %s\n", s.message().c_str());
    return kExitOutput;
  }
  std::printf("rtloop-bench: wrote %s\n", telemetry::EscapeControlCharacters(png).c_str());
  return kExitOk;
}

}  // namespace rtloop::bench
