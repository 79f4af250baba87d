// rtloop-top's output: the text dashboard and the JSON snapshot of one moment of a telemetry
// server (system facts, tasks, statistics). Pure functions of the v1 messages, so the format is
// testable without a server.
//
// The dashboard fits a terminal as top and htop do: given its width, the task table drops its
// least important columns first (LOSS, jitter, EXEC_AVG, DROPS, PERIOD, POLICY, ...; NAME, STATE
// and LAT_MAX always stay) and cuts what is still too long; given its height, it shows the
// header and as many tasks (then histograms) as fit, and says how many tasks it left out. A task
// without cycles shows "no data" (never 0.0); a missing percentile or jitter shows "-". FAULTS is
// always shown; below the table, one line per task with a watchdog or a fault gives the
// watchdog's limits, action, violations and trips and the last fault (cycle, t from the task's
// first release, reason, execution time). When some task is explained (TaskStats.outliers, API
// revision 2), OUTL (its outliers) and LAST_OUTLIER (its last record's leading cause, "thread
// rtl-spinner 4.0ms") follow; "-" for a task that is not explained, and no such columns when none
// is. The JSON has TaskStats.outliers as the server sends it, null when not explained.
//
// Not RT-safe: allocates. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtloop/telemetry/v1/telemetry.pb.h"

namespace rtloop::telemetry::top {

namespace v1 = ::rtloop::telemetry::v1;

struct Snapshot {
  std::string address;
  v1::GetSystemInfoResponse system;
  v1::ListTasksResponse tasks;
  v1::GetStatsResponse stats;  // with histograms
};

// Coarse latency bins for the per-task histogram: counts of values below each upper edge (µs),
// the last bin open-ended.
struct LatencyBin {
  std::int64_t upper_us = 0;  // exclusive; 0 for the last (open) bin
  std::uint64_t count = 0;
};
inline constexpr std::int64_t kBinEdgesUs[] = {5, 10, 20, 50, 100, 200, 500, 1000};

std::vector<LatencyBin> BinLatency(const v1::Histogram& histogram);

struct RenderOptions {
  bool show_histograms = true;
  // The time shown (and the uptime's end), ns since the Unix epoch; < 0: the current time.
  std::int64_t now_unix_ns = -1;
  // The terminal's columns and rows; 0: no limit (every column; every task and histogram).
  int width = 0;
  int height = 0;
};

// The dashboard as plain text lines (no terminal control codes). With a height, at most
// height - 1 lines, so that a redraw from the top-left corner never scrolls the header away.
std::string RenderText(const Snapshot& snapshot, const RenderOptions& options = {});

// One JSON object: {"schema_version":1,"address":...,"system":{...},"tasks":[...],"stats":{...},
// "latency_bins":[...]} with proto field names; 64-bit integers are JSON strings as in the proto3
// JSON mapping.
std::string RenderJson(const Snapshot& snapshot);

}  // namespace rtloop::telemetry::top
