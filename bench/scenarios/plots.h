// Plots with gnuplot (run as a child process): the latency histogram (log-scale sample counts per
// latency µs, one curve per thread with its CPU and max in the legend, OSADL's layout), the max
// latency per time window, and a sample log's latency over time.
//
//   Result<telemetry::OutputTarget> out = telemetry::ResolveOutputPath("out/plot.png", ...);
//   Result<PlotJob> job = HistogramPlot(data, "stress on host");   // script + data, in memory
//   Result<std::string> png = RunGnuplot(*job);    // gnuplot missing or failed: exit 1
//   Status s = WritePlot(*out, *png);              // checked writes, .partial + rename: exit 4
//
// gnuplot never sees a path or a name the user chose: RunGnuplot writes the script and its data
// under fixed names in a private temporary directory (mkdtemp, removed after), runs gnuplot there
// and reads back the PNG, checked complete; WritePlot puts it where the user asked through the
// output layer like every other result. The only user text in a script is the title, and it
// goes through GnuplotString().
//
// Threading: free functions; not RT-safe (files, a child process).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "latency_data.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::bench {

// One window of rtloop-cyclic --max-over-time.
struct WindowPoint {
  double start_s = 0;
  double max_us = 0;
  std::uint64_t cycles = 0;
};
struct MaxOverTime {
  double window_s = 1.0;
  std::vector<std::vector<WindowPoint>> threads;  // by thread index
  std::uint64_t lost_windows = 0;
  bool complete = false;  // "# end" seen
};
// rtloop-cyclic's --max-over-time text (values in us; "# unit: ns" is converted).
Result<MaxOverTime> ParseMaxOverTime(const std::string& text);

// The name gnuplot writes its PNG under, in its private working directory.
inline constexpr char kPlotPngName[] = "plot.png";

// A gnuplot script and its data files, by name in gnuplot's working directory.
struct PlotJob {
  std::string script;                                     // writes kPlotPngName
  std::vector<std::pair<std::string, std::string>> data;  // "t0.dat" -> its rows
};

// `text` as a gnuplot string expression: single-quoted, a quote as '."'".', control characters
// shown as escapes
// (\n, \x1b): whatever the text, it stays one string on one line, and gnuplot expands nothing in
// it (no `command`, no @macro).
std::string GnuplotString(std::string_view text);

// A published maximum drawn on the histogram as a dashed vertical line: of one thread (thread >= 0,
// in that thread's colour) or of all CPUs (thread -1, black), when a reference is given.
struct PublishedMark {
  int thread = -1;
  double max_us = 0;
};

// The latency histogram, one curve per thread, in two panels that are always drawn: the body
// (0 .. three times the largest p90, at least 20 us) and the full range. Counts on a log scale as
// the vendors' scripts; each 1 us bucket a flat step in the body, needles in the full range (no
// saw-tooth of lines between sparse buckets); a compact legend inside the body panel; the overflow
// label gives -h's size ("over 800 us") when the input records it.
Result<PlotJob> HistogramPlot(const LatencyData& data, const std::string& title,
                              const std::vector<PublishedMark>& published = {});
// The max per window.
Result<PlotJob> MaxOverTimePlot(const MaxOverTime& windows, const std::string& title);
// A recorded sample log (rtloop-cyclic --record): latency over time for every task; fills
// `histogram` and `windows` (1 s) from the same samples when given.
Result<PlotJob> SampleLogPlot(const std::string& record_path, const std::string& title,
                              LatencyData* histogram, MaxOverTime* windows);

// Runs gnuplot on `job` in a private temporary directory ($TMPDIR or /tmp) and returns the PNG.
// FailedPrecondition when gnuplot is missing (naming gnuplot-nox), Internal when it fails or
// leaves no complete PNG (with what it printed).
Result<std::string> RunGnuplot(const PlotJob& job);
// Writes `png` to `target` through OutputFile (.partial, checked writes, rename).
Status WritePlot(const telemetry::OutputTarget& target, std::string_view png);

}  // namespace rtloop::bench
