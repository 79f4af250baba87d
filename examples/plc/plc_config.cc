#include "plc_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>
#include <sstream>
#include <system_error>
#include <utility>

#include "rtloop/framework/system_info.h"
#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/output_file.h"

namespace plc {
namespace {

using rtloop::Result;
using rtloop::Status;
using std::chrono::nanoseconds;

// A configuration holds three tasks and a conveyor (conveyor.toml: under 1 KiB); a file above this
// is not one.
constexpr std::size_t kMaxConfigBytes = 256u << 10;

constexpr std::string_view kTopKeys[] = {"plc", "task", "conveyor"};
constexpr std::string_view kPlcKeys[] = {"name"};
constexpr std::string_view kTaskKeys[] = {"name",     "program",  "period",     "cpu",
                                          "priority", "watchdog", "sensitivity"};
constexpr std::string_view kConveyorKeys[] = {"belt_length_mm", "speed_mm_per_s", "item_length_mm",
                                              "item_interval",  "removal_delay",  "start_press_at"};

std::string Join(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// Reads one file's tables and turns every problem into "FILE:LINE: WHERE: WHAT — FIX".
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  Status Error(const toml::source_region& at, std::string_view where, std::string_view what,
               std::string_view fix) const {
    std::string msg = file_ + ":" + std::to_string(at.begin.line) + ": ";
    if (!where.empty()) msg.append(where).append(": ");
    msg.append(what).append(" — ").append(fix);
    // Names and values quoted from the file may hold newlines or escape sequences: the message
    // stays one line and shows them as escapes.
    return rtloop::InvalidArgumentError(rtloop::telemetry::EscapeControlCharacters(msg));
  }

  Status CheckKeys(const toml::table& table, std::span<const std::string_view> allowed,
                   std::string_view where) const {
    for (auto&& [key, node] : table) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
      return Error(key.source(), where, "unknown key \"" + std::string(key.str()) + "\"",
                   "use one of: " + Join(allowed));
    }
    return Status::Ok();
  }

  // `found` tells whether the key is present; a missing required key is an error at the table.
  const toml::node* Find(const toml::table& table, std::string_view key) const {
    return table.get(key);
  }

  Status Missing(const toml::table& table, std::string_view where, std::string_view key,
                 std::string_view fix) const {
    return Error(table.source(), where, "key \"" + std::string(key) + "\" is missing", fix);
  }

  Status WrongType(const toml::node& node, std::string_view where, std::string_view key,
                   std::string_view fix) const {
    return Error(node.source(), where,
                 "key \"" + std::string(key) + "\" is " + std::string(TypeName(node)), fix);
  }

  Status String(const toml::table& table, std::string_view key, std::string_view where,
                std::string_view example, bool* present, std::string& out) const {
    const toml::node* node = Find(table, key);
    *present = node != nullptr;
    if (node == nullptr) return Status::Ok();
    if (!node->is_string()) {
      return WrongType(*node, where, key, "write a string, e.g. " + std::string(example));
    }
    out = node->as_string()->get();
    return Status::Ok();
  }

  Status Integer(const toml::table& table, std::string_view key, std::string_view where,
                 std::int64_t min, std::int64_t max, std::string_view range_fix, bool* present,
                 std::int64_t& out) const {
    const toml::node* node = Find(table, key);
    *present = node != nullptr;
    if (node == nullptr) return Status::Ok();
    if (!node->is_integer()) {
      return WrongType(
          *node, where, key,
          "write a whole number, e.g. " + std::string(key) + " = " + std::to_string(min));
    }
    const std::int64_t v = node->as_integer()->get();
    if (v < min || v > max) {
      return Error(node->source(), where,
                   "key \"" + std::string(key) + "\" = " + std::to_string(v) + " is out of range",
                   range_fix);
    }
    out = v;
    return Status::Ok();
  }

  Status Number(const toml::table& table, std::string_view key, std::string_view where,
                double& out) const {
    const toml::node* node = Find(table, key);
    if (node == nullptr) return Status::Ok();
    double v = 0.0;
    if (node->is_integer()) {
      v = static_cast<double>(node->as_integer()->get());
    } else if (node->is_floating_point()) {
      v = node->as_floating_point()->get();
    } else {
      return WrongType(*node, where, key, "write a number, e.g. " + std::string(key) + " = 500");
    }
    if (!(v > 0.0) || !std::isfinite(v)) {
      return Error(node->source(), where,
                   "key \"" + std::string(key) + "\" = " + std::to_string(v) + " is not positive",
                   "give a value > 0");
    }
    out = v;
    return Status::Ok();
  }

  // A duration string. `allow_zero` false: 0 is an error.
  Status Duration(const toml::table& table, std::string_view key, std::string_view where,
                  bool allow_zero, bool* present, nanoseconds& out) const {
    const toml::node* node = Find(table, key);
    *present = node != nullptr;
    if (node == nullptr) return Status::Ok();
    const std::string fix = "write a duration string, e.g. " + std::string(key) + " = \"10ms\"";
    if (!node->is_string()) return WrongType(*node, where, key, fix);
    const std::string& text = node->as_string()->get();
    Result<nanoseconds> d = ParseDuration(text);
    if (!d.ok()) {
      return Error(node->source(), where,
                   "key \"" + std::string(key) + "\" = \"" + text + "\" is not a duration",
                   fix + " (units ns, us, ms, s)");
    }
    if (!allow_zero && d->count() == 0) {
      return Error(node->source(), where, "key \"" + std::string(key) + "\" is 0",
                   "give a duration > 0, e.g. " + std::string(key) + " = \"10ms\"");
    }
    out = *d;
    return Status::Ok();
  }

 private:
  std::string file_;
};

Result<Program> ProgramFromName(std::string_view name) {
  for (int i = 0; i < kProgramCount; ++i) {
    if (name == ProgramName(static_cast<Program>(i))) return static_cast<Program>(i);
  }
  return rtloop::InvalidArgumentError("no such program");
}

Status ParseTask(const Reader& r, const toml::table& table, std::size_t index,
                 const std::vector<int>& online_cpus, TaskSpec& task) {
  task.line = static_cast<int>(table.source().begin.line);
  bool present = false;
  std::string where = "task #" + std::to_string(index + 1);
  RTLOOP_RETURN_IF_ERROR(r.String(table, "name", where, "name = \"logic\"", &present, task.name));
  if (!present) return r.Missing(table, where, "name", "add name = \"...\" (unique per task)");
  if (task.name.empty()) {
    return r.Error(table.get("name")->source(), where, "key \"name\" is empty",
                   "give the task a name, e.g. name = \"logic\"");
  }
  where = "task \"" + task.name + "\"";
  RTLOOP_RETURN_IF_ERROR(r.CheckKeys(table, kTaskKeys, where));

  std::string program;
  RTLOOP_RETURN_IF_ERROR(
      r.String(table, "program", where, "program = \"logic\"", &present, program));
  if (!present) {
    return r.Missing(table, where, "program",
                     "add program = \"io_scan\", \"logic\" or \"housekeeping\"");
  }
  Result<Program> p = ProgramFromName(program);
  if (!p.ok()) {
    return r.Error(table.get("program")->source(), where,
                   "key \"program\" = \"" + program + "\" is not a program of this PLC",
                   "use \"io_scan\", \"logic\" or \"housekeeping\"");
  }
  task.program = *p;

  RTLOOP_RETURN_IF_ERROR(r.Duration(table, "period", where, false, &present, task.period));
  if (!present) return r.Missing(table, where, "period", "add e.g. period = \"10ms\"");

  const std::string cpus = rtloop::FormatCpuList(online_cpus);
  std::int64_t cpu = 0;
  RTLOOP_RETURN_IF_ERROR(
      r.Integer(table, "cpu", where, 0, 4095, "use an online CPU (" + cpus + ")", &present, cpu));
  if (!present)
    return r.Missing(table, where, "cpu", "add cpu = N with an online CPU (" + cpus + ")");
  if (std::find(online_cpus.begin(), online_cpus.end(), cpu) == online_cpus.end()) {
    return r.Error(table.get("cpu")->source(), where,
                   "key \"cpu\" = " + std::to_string(cpu) + " is not an online CPU",
                   "use one of " + cpus);
  }
  task.cpu = static_cast<int>(cpu);

  std::int64_t priority = 0;
  RTLOOP_RETURN_IF_ERROR(r.Integer(table, "priority", where, 1, 99,
                                   "use 1..99 (SCHED_FIFO priority, higher runs first)", &present,
                                   priority));
  if (!present) {
    return r.Missing(table, where, "priority", "add priority = 1..99 (higher runs first)");
  }
  task.priority = static_cast<int>(priority);

  RTLOOP_RETURN_IF_ERROR(r.Duration(table, "watchdog", where, false, &present, task.watchdog));
  std::int64_t sensitivity = 1;
  RTLOOP_RETURN_IF_ERROR(r.Integer(table, "sensitivity", where, 1, 1000,
                                   "use 1..1000 (consecutive violations that trip the watchdog)",
                                   &present, sensitivity));
  if (present && task.watchdog.count() == 0) {
    return r.Error(table.get("sensitivity")->source(), where,
                   "key \"sensitivity\" is set but the task has no watchdog",
                   "add watchdog = \"...\" or remove sensitivity");
  }
  task.sensitivity = static_cast<std::uint32_t>(sensitivity);
  return Status::Ok();
}

Status ParseTasks(const Reader& r, const toml::table& root, const std::vector<int>& online_cpus,
                  PlcConfig& config) {
  const toml::node* node = root.get("task");
  if (node == nullptr) {
    return r.Error(root.source(), "", "no [[task]] tables",
                   "add one [[task]] for each of io_scan, logic and housekeeping");
  }
  if (!node->is_array_of_tables()) {
    return r.WrongType(*node, "", "task", "write each task as an array-of-tables entry: [[task]]");
  }
  const toml::array& tasks = *node->as_array();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    TaskSpec task;
    RTLOOP_RETURN_IF_ERROR(ParseTask(r, *tasks[i].as_table(), i, online_cpus, task));
    const toml::source_region& at = tasks[i].as_table()->get("name")->source();
    for (const TaskSpec& other : config.tasks) {
      if (other.name == task.name) {
        return r.Error(at, "task \"" + task.name + "\"",
                       "the name is already used by the task at line " + std::to_string(other.line),
                       "give each task its own name");
      }
      if (other.program == task.program) {
        return r.Error(tasks[i].as_table()->get("program")->source(), "task \"" + task.name + "\"",
                       "program \"" + std::string(ProgramName(task.program)) +
                           "\" already runs in task \"" + other.name + "\" (line " +
                           std::to_string(other.line) + ")",
                       "each program runs in exactly one task");
      }
    }
    config.tasks.push_back(std::move(task));
  }
  for (int i = 0; i < kProgramCount; ++i) {
    const auto program = static_cast<Program>(i);
    const bool found = std::any_of(config.tasks.begin(), config.tasks.end(),
                                   [&](const TaskSpec& t) { return t.program == program; });
    if (!found) {
      const std::string name = ProgramName(program);
      return r.Error(node->source(), "", "no task runs program \"" + name + "\"",
                     "add a [[task]] with program = \"" + name + "\"");
    }
  }
  return Status::Ok();
}

Status ParseConveyor(const Reader& r, const toml::table& table, ConveyorConfig& c) {
  const std::string where = "[conveyor]";
  RTLOOP_RETURN_IF_ERROR(r.CheckKeys(table, kConveyorKeys, where));
  RTLOOP_RETURN_IF_ERROR(r.Number(table, "belt_length_mm", where, c.belt_length_mm));
  RTLOOP_RETURN_IF_ERROR(r.Number(table, "speed_mm_per_s", where, c.speed_mm_per_s));
  RTLOOP_RETURN_IF_ERROR(r.Number(table, "item_length_mm", where, c.item_length_mm));
  bool present = false;
  RTLOOP_RETURN_IF_ERROR(
      r.Duration(table, "item_interval", where, false, &present, c.item_interval));
  RTLOOP_RETURN_IF_ERROR(
      r.Duration(table, "removal_delay", where, true, &present, c.removal_delay));
  RTLOOP_RETURN_IF_ERROR(
      r.Duration(table, "start_press_at", where, true, &present, c.start_press_at));
  if (c.item_length_mm * 2.0 > c.belt_length_mm) {
    const toml::node* at = table.get("item_length_mm");
    return r.Error(at != nullptr ? at->source() : table.source(), where,
                   "items of " + std::to_string(c.item_length_mm) + " mm do not fit twice on a " +
                       std::to_string(c.belt_length_mm) + " mm belt",
                   "make item_length_mm at most half of belt_length_mm");
  }
  return Status::Ok();
}

// Accepts a table given as `key = {...}` or `[key]`; anything else is a type error.
Status TableOf(const Reader& r, const toml::table& root, std::string_view key,
               const toml::table** out) {
  *out = nullptr;
  const toml::node* node = root.get(key);
  if (node == nullptr) return Status::Ok();
  if (!node->is_table()) {
    return r.WrongType(*node, "", key, "write it as a table: [" + std::string(key) + "]");
  }
  *out = node->as_table();
  return Status::Ok();
}

}  // namespace

const char* ProgramName(Program program) noexcept {
  switch (program) {
    case Program::kIoScan:
      return "io_scan";
    case Program::kLogic:
      return "logic";
    case Program::kHousekeeping:
      return "housekeeping";
  }
  return "?";
}

const TaskSpec& PlcConfig::task(Program program) const {
  for (const TaskSpec& t : tasks) {
    if (t.program == program) return t;
  }
  RTLOOP_CHECK(false, "PlcConfig::task(): a validated configuration runs every program");
  return tasks.front();
}

Result<nanoseconds> ParseDuration(std::string_view text) {
  std::string_view s = text;
  if (s.size() > 2 && (s[0] == 'T' || s[0] == 't') && s[1] == '#') s.remove_prefix(2);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  const std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  double scale = 0.0;
  if (unit == "ns") {
    scale = 1.0;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  }
  const double ns = value * scale;
  if (ec != std::errc() || end == s.data() || scale == 0.0 || !(value >= 0.0) || ns > 1e18) {
    return rtloop::InvalidArgumentError("\"" + std::string(text) +
                                        "\" is not a duration: write a number and a unit (ns, us, "
                                        "ms, s), e.g. \"10ms\"");
  }
  return nanoseconds(std::llround(ns));
}

std::string FormatDuration(nanoseconds d) {
  const std::int64_t ns = d.count();
  struct Unit {
    std::int64_t scale;
    const char* name;
  };
  for (const Unit u : {Unit{1'000'000'000, "s"}, Unit{1'000'000, "ms"}, Unit{1'000, "us"}}) {
    if (ns >= u.scale || ns == 0) {
      std::ostringstream out;
      out << static_cast<double>(ns) / static_cast<double>(u.scale) << u.name;
      Result<nanoseconds> back = ParseDuration(out.str());
      if (back.ok() && *back == d) return out.str();
    }
  }
  return std::to_string(ns) + "ns";
}

Result<PlcConfig> ParsePlcConfig(std::string_view text, std::string_view source_name,
                                 const std::vector<int>& online_cpus) {
  const Reader r(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {  // toml++ reports syntax errors by exception
    return r.Error(e.source(), "",
                   "TOML syntax error at column " + std::to_string(e.source().begin.column) + ": " +
                       std::string(e.description()),
                   "fix the file at that place");
  }
  RTLOOP_RETURN_IF_ERROR(r.CheckKeys(root, kTopKeys, ""));

  PlcConfig config;
  config.source = std::string(source_name);
  const toml::table* plc = nullptr;
  RTLOOP_RETURN_IF_ERROR(TableOf(r, root, "plc", &plc));
  if (plc != nullptr) {
    RTLOOP_RETURN_IF_ERROR(r.CheckKeys(*plc, kPlcKeys, "[plc]"));
    bool present = false;
    RTLOOP_RETURN_IF_ERROR(
        r.String(*plc, "name", "[plc]", "name = \"conveyor\"", &present, config.name));
  }
  RTLOOP_RETURN_IF_ERROR(ParseTasks(r, root, online_cpus, config));
  const toml::table* conveyor = nullptr;
  RTLOOP_RETURN_IF_ERROR(TableOf(r, root, "conveyor", &conveyor));
  if (conveyor != nullptr) RTLOOP_RETURN_IF_ERROR(ParseConveyor(r, *conveyor, config.conveyor));
  return config;
}

Result<PlcConfig> LoadPlcConfig(const std::string& path, const std::vector<int>& online_cpus) {
  // The bounded, non-blocking reader of every small input file: a FIFO, a device (/dev/zero), a
  // directory or a huge file is refused by what it is, before anything is read or parsed.
  Result<std::string> text = rtloop::telemetry::ReadInputFile(
      path, {.what = "PLC configuration", .max_bytes = kMaxConfigBytes});
  if (!text.ok()) return text.status();
  return ParsePlcConfig(*text, path, online_cpus);
}

}  // namespace plc
