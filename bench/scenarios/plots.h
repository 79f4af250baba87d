// Plots with gnuplot (run as a child process): the latency histogram (log-scale sample counts per
// latency µs, one curve per thread with its CPU and max in the legend, OSADL's layout), the max
// latency per time window, and a sample log's latency over time.
//
//   PlotJob job = HistogramPlot(data, "stress on host", "out/plot.png");   // script + data files
//   Status s = RunGnuplot(job);   // without gnuplot: the error says so and where the script is
//
// Every job writes its data files and its .gp script next to the PNG first, so a machine without
// gnuplot can plot later with `gnuplot out/plot.gp`.
//
// Threading: free functions; not RT-safe (files, a child process).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "latency_data.h"
#include "rtloop/framework/status.h"

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

struct PlotJob {
  std::string png;     // output
  std::string script;  // the .gp file written next to it
};

// Writes <png without .png>.gp and one .dat per thread; the PNG appears when RunGnuplot runs.
Result<PlotJob> HistogramPlot(const LatencyData& data, const std::string& title,
                              const std::string& png);
Result<PlotJob> MaxOverTimePlot(const MaxOverTime& windows, const std::string& title,
                                const std::string& png);
// A recorded sample log (rtloop-cyclic --record): latency over time for every task.
Result<PlotJob> SampleLogPlot(const std::string& record_path, const std::string& title,
                              const std::string& png, LatencyData* histogram, MaxOverTime* windows);

// Runs `gnuplot SCRIPT`. FailedPrecondition when gnuplot is missing (naming gnuplot-nox and the
// script to run later), Internal when it fails (with its stderr).
Status RunGnuplot(const PlotJob& job);

}  // namespace rtloop::bench
