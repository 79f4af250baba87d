#include "plots.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "bench_util.h"
#include "rtloop/telemetry/sample.h"
#include "rtloop/telemetry/sample_log_file.h"

namespace rtloop::bench {
namespace {

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// The common look: readable fonts, a grid, the legend outside the data. The PNG is written in
// gnuplot's working directory (RunGnuplot's private one) under a fixed name.
std::string Preamble(const std::string& title) {
  return "set terminal pngcairo size 1280,720 font 'Sans,11'\n"
         "set output " +
         GnuplotString(kPlotPngName) +
         "\n"
         "set title " +
         GnuplotString(title) +
         " noenhanced\n"
         "set grid xtics ytics mytics\n"
         "set key outside right top noenhanced\n";
}

// The data file of one curve, in gnuplot's working directory: "t0.dat", "task3.dat".
std::string DataName(const std::string& prefix, std::uint64_t index) {
  return prefix + std::to_string(index) + ".dat";
}

// PNG signature first, IEND chunk last: a file gnuplot completed (a full disk leaves it short).
bool IsCompletePng(const std::string& png) {
  static const std::string kSignature("\x89PNG\r\n\x1a\n", 8);
  static const std::string kEnd("\0\0\0\0IEND\xae\x42\x60\x82", 12);
  return png.size() > kSignature.size() + kEnd.size() && png.compare(0, 8, kSignature) == 0 &&
         png.compare(png.size() - kEnd.size(), kEnd.size(), kEnd) == 0;
}

// A private directory (mode 0700) for gnuplot's files, removed with everything in it.
class PrivateDirectory {
 public:
  static Result<PrivateDirectory> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rtloop-plot-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return ErrnoError(errno,
                        "cannot create a private directory for gnuplot ('" +
                            telemetry::EscapeControlCharacters(pattern) + "')",
                        "set TMPDIR to a writable directory");
    }
    PrivateDirectory d;
    d.path_ = pattern;
    return d;
  }
  PrivateDirectory() = default;
  PrivateDirectory(PrivateDirectory&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  PrivateDirectory& operator=(PrivateDirectory&&) = delete;
  ~PrivateDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string GnuplotString(std::string_view text) {
  // Control characters become visible escapes: a newline would end the command and start
  // another. Inside single quotes gnuplot expands nothing (no `command`, no @macro, no \). A
  // quote is a concatenated "'": gnuplot 5.4 misreads a doubled '' next to another one or at the
  // start of a string.
  const std::string visible = telemetry::EscapeControlCharacters(text);
  std::string out = "'";
  for (const char c : visible) {
    if (c == '\'') {
      out += "'.\"'\".'";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

Result<MaxOverTime> ParseMaxOverTime(const std::string& text) {
  MaxOverTime m;
  std::istringstream in(text);
  std::string line;
  double scale = 1.0;
  bool header = false;
  // "# name: N", N a whole number >= 0 (no exception, no overflow); nullopt otherwise.
  const auto header_number = [](const std::string& l, std::size_t at) -> std::optional<double> {
    char* end = nullptr;
    const char* begin = l.c_str() + at;
    errno = 0;
    const unsigned long long v = std::strtoull(begin, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
    if (end == begin || errno != 0 || *end != '\0' || l.find('-', at) != std::string::npos) {
      return std::nullopt;
    }
    return static_cast<double>(v);
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line == "# rtloop-cyclic max over time") header = true;
      if (line.rfind("# window_us:", 0) == 0) {
        const std::optional<double> us = header_number(line, 12);
        if (!us || *us <= 0) return DataLossError("bad '# window_us:' line: '" + line + "'");
        m.window_s = *us / 1e6;
      }
      if (line == "# unit: ns") scale = 1e-3;
      if (line.rfind("# lost_windows:", 0) == 0) {
        const std::optional<double> n = header_number(line, 15);
        if (!n) return DataLossError("bad '# lost_windows:' line: '" + line + "'");
        m.lost_windows = static_cast<std::uint64_t>(*n);
      }
      if (line == "# end") m.complete = true;
      continue;
    }
    int thread = 0;
    long long window = 0, max = 0;
    unsigned long long cycles = 0;
    double start = 0;
    // start_s must be a number the windows can be sorted by (not nan, not inf).
    if (std::sscanf(line.c_str(), "%d %lld %lf %lld %llu", &thread, &window, &start, &max,
                    &cycles) != 5 ||
        thread < 0 || thread > 4096 || !std::isfinite(start)) {
      return DataLossError("not a max-over-time line: '" + line.substr(0, 80) + "'");
    }
    if (m.threads.size() <= static_cast<std::size_t>(thread)) {
      m.threads.resize(static_cast<std::size_t>(thread) + 1);
    }
    m.threads[static_cast<std::size_t>(thread)].push_back(
        {start, static_cast<double>(max) * scale, cycles});
  }
  if (!header) return DataLossError("no '# rtloop-cyclic max over time' header");
  for (auto& t : m.threads) {
    std::sort(t.begin(), t.end(),
              [](const WindowPoint& a, const WindowPoint& b) { return a.start_s < b.start_s; });
  }
  return m;
}

namespace {

// The body panel's right edge: three times the largest p90 (the bulk of every thread, which one
// fat-tailed thread does not move), at least 20 us, at most the full range.
double BodyRange(const LatencyData& data, double full) {
  double p90 = 0;
  for (const ThreadLatency& t : data.threads) {
    if (Result<double> p = Metric(t, "p90"); p.ok()) p90 = std::max(p90, *p);
  }
  return std::min(full, std::max(20.0, std::ceil(3 * p90)));
}

// "T0 CPU0 max 812 (3 over 800 us)": short, for a compact legend.
std::string CurveLabel(const ThreadLatency& t) {
  std::string label = "T" + std::to_string(t.index);
  if (t.cpu >= 0) label += " CPU" + std::to_string(t.cpu);
  if (t.max_us) label += " max " + Fmt(*t.max_us);
  if (t.histogram_overflows > 0) {
    label += " (" + std::to_string(t.histogram_overflows) +
             (t.histogram_size_known ? " over " + std::to_string(t.histogram.size()) + " us)"
                                     : " beyond the histogram)");
  }
  return label;
}

// The published maxima as dashed vertical lines within (xmin, xmax], labelled near the top.
std::string PublishedLines(const std::vector<PublishedMark>& marks,
                           const std::vector<int>& colour_of_thread, double xmin, double xmax) {
  std::string out;
  int row = 0;
  for (const PublishedMark& m : marks) {
    if (m.max_us > xmax || m.max_us <= xmin) continue;
    const bool all = m.thread < 0 || m.thread >= static_cast<int>(colour_of_thread.size());
    const std::string n =
        all ? "" : std::to_string(colour_of_thread[static_cast<std::size_t>(m.thread)]);
    const std::string x = Fmt(m.max_us);
    out += "set arrow from " + x + ", graph 0 to " + x + ", graph 1 nohead dt 2 lw 1.5 lc " +
           (all ? "rgb 'black'" : n) + "\n";
    const std::string text =
        (all ? std::string("published max ") : "T" + std::to_string(m.thread) + " published ") + x;
    // Beside its line near the top, one row lower per mark so that close ones stay readable.
    char y[16];
    std::snprintf(y, sizeof y, "%.2f", 0.94 - 0.06 * static_cast<double>(row++ % 8));
    out += "set label " + GnuplotString(text) + " at " + x + ", graph " + y +
           " left offset 0.5,0 font ',8' tc " + (all ? "rgb 'black'" : "lt " + n) + "\n";
  }
  return out;
}

}  // namespace

Result<PlotJob> HistogramPlot(const LatencyData& data, const std::string& title,
                              const std::vector<PublishedMark>& published) {
  PlotJob job;
  std::string body_plot, full_plot;
  double xmax = 1;
  std::vector<int> colour_of_thread;  // gnuplot linecolor index per thread index
  int colour = 0;
  for (const ThreadLatency& t : data.threads) {
    if (t.histogram.empty()) continue;
    const std::string dat = DataName("t", static_cast<std::uint64_t>(t.index));
    std::string rows = "# latency_us samples (thread " + std::to_string(t.index) + ")\n";
    // Bucket b holds the latencies b .. b+1 us: two rows each (its left and right edge), so that
    // `with lines` draws the histogram's outline, flat tops and vertical steps, never a slope
    // between buckets. Empty buckets cannot be drawn on a log scale: a blank line ends a run.
    bool gap = false;
    for (std::size_t b = 0; b < t.histogram.size(); ++b) {
      if (t.histogram[b] == 0) {
        gap = true;
        continue;
      }
      if (gap) rows += "\n";
      gap = false;
      const std::string count = " " + std::to_string(t.histogram[b]) + "\n";
      rows += std::to_string(b) + count + std::to_string(b + 1) + count;
      xmax = std::max(xmax, static_cast<double>(b + 1));
    }
    job.data.emplace_back(dat, std::move(rows));
    ++colour;
    if (t.index >= 0 && static_cast<std::size_t>(t.index) >= colour_of_thread.size()) {
      colour_of_thread.resize(static_cast<std::size_t>(t.index) + 1, colour);
    }
    if (t.index >= 0) colour_of_thread[static_cast<std::size_t>(t.index)] = colour;
    const std::string lc = " lw 1.5 lc " + std::to_string(colour);
    body_plot += std::string(body_plot.empty() ? "plot " : ", \\\n     ") + GnuplotString(dat) +
                 " using 1:2 with lines" + lc + " title " + GnuplotString(CurveLabel(t));
    full_plot += std::string(full_plot.empty() ? "plot " : ", \\\n     ") + GnuplotString(dat) +
                 " using 1:2 every 2 with impulses" + lc + " notitle";
  }
  if (body_plot.empty()) return FailedPreconditionError("no histogram to plot (run with -h)");
  if (!published.empty()) {
    body_plot +=
        ", \\\n     NaN with lines dt 2 lw 1.5 lc rgb 'black' title 'published max (dashed)'";
  }
  const double full = std::ceil(xmax * 1.05 + 1);  // room right of the last bucket
  const double body = BodyRange(data, full);
  std::string script =
      "set terminal pngcairo size 1280,900 font 'Sans,11'\n"
      "set output " +
      GnuplotString(kPlotPngName) +
      "\n"
      "set multiplot layout 2,1 title " +
      GnuplotString(title) +
      " noenhanced font ',13'\n"
      "set grid xtics ytics\n"
      "set logscale y\nset yrange [0.8:*]\n"
      "set ylabel 'Latency samples (log)'\n"
      "set key inside top right noenhanced font ',9' samplen 1.5 spacing 0.9 maxrows 8 box "
      "opaque\n";
  script += "set xrange [0:" + Fmt(body) + "]\nset xlabel 'Latency (us), body: 0 to " + Fmt(body) +
            " us'\n" + PublishedLines(published, colour_of_thread, -1, body) + body_plot + "\n";
  // The full range marks only what the body panel could not show.
  script += "unset arrow\nunset label\nunset key\nset xrange [0:" + Fmt(full) +
            "]\nset xlabel 'Latency (us), full range: 0 to " + Fmt(full) + " us'\n" +
            PublishedLines(published, colour_of_thread, body, full) + full_plot +
            "\nunset multiplot\n";
  job.script = std::move(script);
  return job;
}

Result<PlotJob> MaxOverTimePlot(const MaxOverTime& m, const std::string& title) {
  PlotJob job;
  std::string plot;
  for (std::size_t i = 0; i < m.threads.size(); ++i) {
    if (m.threads[i].empty()) continue;
    const std::string dat = DataName("t", i);
    std::string rows = "# start_s max_us cycles (thread " + std::to_string(i) + ")\n";
    double max = 0;
    for (const WindowPoint& p : m.threads[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.3f %.3f %llu\n", p.start_s, p.max_us,
                    static_cast<unsigned long long>(p.cycles));
      rows += buf;
      max = std::max(max, p.max_us);
    }
    job.data.emplace_back(dat, std::move(rows));
    plot += std::string(plot.empty() ? "plot " : ", \\\n     ") + GnuplotString(dat) +
            " using 1:2 with linespoints pt 7 ps 0.5 lw 1.5 title " +
            GnuplotString("T" + std::to_string(i) + ", max " + Fmt(max) + " us");
  }
  if (plot.empty()) return FailedPreconditionError("no max-over-time windows to plot");
  char window[64];
  std::snprintf(window, sizeof window, "%g", m.window_s);
  job.script = Preamble(title) +
               "set logscale y\n"
               "set xlabel 'Time since start (s)'\n"
               "set ylabel 'Max latency per " +
               std::string(window) + " s window (us, log)'\n" + plot + "\n";
  return job;
}

Result<PlotJob> SampleLogPlot(const std::string& record_path, const std::string& title,
                              LatencyData* histogram, MaxOverTime* windows) {
  Result<telemetry::SampleLogContents> rec = telemetry::ReadSampleLog(record_path);
  if (!rec.ok()) return rec.status();
  PlotJob job;
  std::map<std::uint32_t, std::string> rows;
  std::map<std::uint32_t, ThreadLatency> threads;
  std::map<std::uint32_t, std::int64_t> first_release;
  std::int64_t origin = INT64_MAX;
  for (const auto& b : rec->batches) {
    if (b.release_ns_size() > 0) origin = std::min(origin, b.release_ns(0));
  }
  for (const auto& b : rec->batches) {
    // rtloop's samples carry 16-bit task ids (sample.h): a larger one is damage, and indexing the
    // windows by it would allocate for billions of tasks.
    if (b.task_id() > telemetry::kMaxSampleTaskId) {
      return DataLossError(record_path + " holds a batch of task " + std::to_string(b.task_id()) +
                           ": rtloop's task ids are 0.." +
                           std::to_string(telemetry::kMaxSampleTaskId) + "; the file is damaged");
    }
    ThreadLatency& t = threads[b.task_id()];
    t.index = static_cast<int>(b.task_id());
    std::string& r = rows[b.task_id()];
    for (int i = 0; i < b.latency_ns_size() && i < b.release_ns_size(); ++i) {
      const double us = static_cast<double>(b.latency_ns(i)) / 1000.0;
      // release >= origin, so the difference fits 64 unsigned bits (not always 63 signed ones).
      const std::uint64_t since =
          static_cast<std::uint64_t>(b.release_ns(i)) - static_cast<std::uint64_t>(origin);
      const double at = static_cast<double>(since) / 1e9;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6f %.3f\n", at, us);
      r += buf;
      const std::size_t bucket = us < 0 ? 0 : static_cast<std::size_t>(us);
      if (bucket < 100000) {
        if (t.histogram.size() <= bucket) t.histogram.resize(bucket + 1, 0);
        ++t.histogram[bucket];
      } else {
        ++t.histogram_overflows;
      }
      ++t.cycles;
      t.max_us = t.max_us ? std::max(*t.max_us, us) : us;
      t.min_us = t.min_us ? std::min(*t.min_us, us) : us;
      const std::size_t w = static_cast<std::size_t>(std::max(0.0, at));
      if (windows != nullptr) {
        if (windows->threads.size() <= b.task_id()) windows->threads.resize(b.task_id() + 1);
        auto& pts = windows->threads[b.task_id()];
        if (pts.empty() || pts.back().start_s != static_cast<double>(w)) {
          pts.push_back({static_cast<double>(w), us, 0});
        }
        pts.back().max_us = std::max(pts.back().max_us, us);
        ++pts.back().cycles;
      }
    }
  }
  if (rows.empty()) return FailedPreconditionError(record_path + " holds no samples");
  std::string plot;
  for (const auto& [task, r] : rows) {
    const std::string dat = DataName("task", task);
    job.data.emplace_back(dat, "# time_s latency_us\n" + r);
    plot += std::string(plot.empty() ? "plot " : ", \\\n     ") + GnuplotString(dat) +
            " using 1:2 with dots title " +
            GnuplotString("task " + std::to_string(task) + ", max " + Fmt(*threads[task].max_us) +
                          " us");
  }
  if (histogram != nullptr) {
    histogram->kind = "sample-log";
    for (auto& [task, t] : threads) histogram->threads.push_back(t);
  }
  job.script = Preamble(title) +
               "set logscale y\nset xlabel 'Time since first release (s)'\n"
               "set ylabel 'Wake-up latency (us, log)'\n" +
               plot + "\n";
  return job;
}

Result<std::string> RunGnuplot(const PlotJob& job) {
  if (FindInPath("gnuplot").empty()) {
    return FailedPreconditionError(
        "gnuplot not found: install it with apt-get install gnuplot-nox");
  }
  Result<PrivateDirectory> dir = PrivateDirectory::Create();
  if (!dir.ok()) return dir.status();
  for (const auto& [name, content] : job.data) {
    if (Status s = WriteTextFile(dir->File(name), content); !s.ok()) {
      return InternalError("cannot prepare gnuplot's data: " + s.message());
    }
  }
  const std::string script = "plot.gp";
  if (Status s = WriteTextFile(dir->File(script), job.script); !s.ok()) {
    return InternalError("cannot prepare gnuplot's script: " + s.message());
  }
  const std::string err_path = dir->File("gnuplot.err");
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError(errno, "cannot start gnuplot");
  if (pid == 0) {
    // Everything gnuplot reads and writes is in the private directory, by fixed names.
    if (chdir(dir->path().c_str()) != 0) _exit(126);
    const int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    // -d: no ~/.gnuplot or system init file changes what the script does.
    execlp("gnuplot", "gnuplot", "-d", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Result<std::string> err = ReadTextFile(err_path, 1 << 20);
  const std::string said = err.ok() && !err->empty() ? ": " + *err : std::string();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("gnuplot failed (" +
                         (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                            : std::string("killed")) +
                         ")" + said);
  }
  Result<std::string> png = ReadTextFile(dir->File(kPlotPngName), 64u << 20);
  if (!png.ok() || !IsCompletePng(*png)) {
    return InternalError("gnuplot made no complete PNG" +
                         (png.ok() ? " (" + std::to_string(png->size()) + " bytes)"
                                   : ": " + png.status().message()) +
                         " in " + dir->path() + " (is its file system full?)" + said);
  }
  return png;
}

Status WritePlot(const telemetry::OutputTarget& target, std::string_view png) {
  Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(target);
  if (!file.ok()) return file.status();
  RTLOOP_RETURN_IF_ERROR(file->Write(png));
  return file->Commit();
}

}  // namespace rtloop::bench
