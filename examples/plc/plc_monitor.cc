#include "plc_monitor.h"

#include <algorithm>
#include <cinttypes>

namespace plc {
namespace {

using rtloop::StrFormat;

// The first column's width in rtloop::FormatTaskReport's section tables, so the tables line up.
constexpr std::size_t kLabelWidth = 19;

std::string Lamps(const OutputImage& out) {
  std::string lamps;
  for (const auto& [on, name] :
       {std::pair{out.lamp_green, "green"}, std::pair{out.lamp_amber, "amber"},
        std::pair{out.lamp_red, "red"}}) {
    if (!on) continue;
    if (!lamps.empty()) lamps += "+";
    lamps += name;
  }
  return lamps.empty() ? "lamps off" : "lamp " + lamps;
}

// The statistics of the task named `name` in `reports`; nullptr when it has none (yet).
const rtloop::TaskStatsSnapshot* StatsOf(std::span<const rtloop::TaskReport> reports,
                                         const std::string& name) {
  for (const rtloop::TaskReport& r : reports) {
    if (r.name == name) return &r.stats;
  }
  return nullptr;
}

// The framework's watchdog of each task (TaskConfig::watchdog, from the configuration) and its
// state from the executor's statistics: armed, or TRIPPED once it tripped; the violations so
// far; IN A ROW: the run of violations that tripped it (0 while armed).
std::string WatchdogTable(const Plc& plc, std::span<const rtloop::TaskReport> reports) {
  std::size_t width = kLabelWidth;
  for (const TaskSpec& t : plc.config().tasks) width = std::max(width, t.name.size());
  std::string title = "watchdog";
  title.resize(width + 2, ' ');
  std::string out = title + StrFormat("%9s %6s  %-8s %10s %9s\n", "TIME", "SENS", "STATE",
                                      "VIOLATIONS", "IN A ROW");
  for (const TaskSpec& t : plc.config().tasks) {
    std::string name = t.name;
    name.resize(width, ' ');
    if (t.watchdog.count() == 0) {
      out += "  " + name + StrFormat("%9s %6s  %s\n", "-", "-", "off");
      continue;
    }
    const rtloop::TaskStatsSnapshot* s = StatsOf(reports, t.name);
    const bool tripped = s != nullptr && s->watchdog_trips > 0;
    out += "  " + name +
           StrFormat("%9s %6" PRIu32 "  %-8s %10" PRIu64 " %9" PRIu32 "\n",
                     FormatDuration(t.watchdog).c_str(), t.sensitivity,
                     tripped ? "TRIPPED" : "armed", s != nullptr ? s->watchdog_violations : 0,
                     tripped ? s->last_fault.consecutive : 0);
  }
  return out;
}

}  // namespace

std::string FormatPlcStatus(const Plc& plc, std::span<const rtloop::TaskReport> reports) {
  const DeviceStatus dev = plc.device();
  const ProcessImage image = plc.image();
  const Diagnostics diag = plc.diagnostics();
  std::string out = WatchdogTable(plc, reports) + "\n";
  const char* state = ConveyorStateName(image.memory.state);
  out += diag.logic_stalled ? StrFormat(
                                  "conveyor: logic STALLED (its image stopped changing; "
                                  "last state %s)",
                                  state)
                            : StrFormat("conveyor: %s", state);
  out += StrFormat(", motor %s, %s; %" PRIu32 " items delivered, %" PRId32
                   " on the belt, %.1f items/min, motor duty %.0f%%\n",
                   dev.outputs.motor_run ? "on" : "off", Lamps(dev.outputs).c_str(),
                   image.memory.items_delivered, dev.items_on_belt, diag.items_per_minute,
                   diag.motor_duty * 100.0);
  out += dev.outputs_forced_safe ? "outputs: SAFE (motor off, red lamp) since the PLC fault\n"
                                 : "outputs: from the logic task\n";
  out += FormatFaultReport(plc.fault(), plc.config()) + "\n";
  return out;
}

std::string FormatPlcMonitor(const Plc& plc, std::span<const rtloop::TaskReport> reports) {
  const PlcConfig& c = plc.config();
  std::string out = "PLC \"" + c.name + "\" task monitor";
  if (!c.source.empty()) out += " (" + c.source + ")";
  out += "\n" + rtloop::FormatTaskReport(reports) + "\n" + FormatPlcStatus(plc, reports);
  return out;
}

}  // namespace plc
