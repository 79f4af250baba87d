#include "served_tasks.h"

#include <algorithm>

#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/utf8.h"

namespace rtloop::telemetry::internal {

std::vector<TaskReport> ServedTasks(const TelemetryHub& hub, const Executor* executor) {
  std::vector<TaskReport> out;
  for (const TaskId id : hub.TaskIds()) {
    TaskReport r = MakeTaskReport(executor, &hub, id, {.histograms = false});
    r.name = ToValidUtf8(r.name);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> SeriesLabels(const std::vector<TaskReport>& tasks) {
  std::vector<std::string> labels;
  labels.reserve(tasks.size());
  for (const TaskReport& t : tasks) {
    const auto same = std::count_if(tasks.begin(), tasks.end(),
                                    [&](const TaskReport& o) { return o.name == t.name; });
    labels.push_back(same > 1 ? t.name + "#" + std::to_string(t.id) : t.name);
  }
  return labels;
}

}  // namespace rtloop::telemetry::internal
