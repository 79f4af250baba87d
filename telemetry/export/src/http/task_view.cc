#include "task_view.h"

#include <algorithm>

#include "rtloop/framework/executor.h"
#include "rtloop/telemetry/collector.h"
#include "rtloop/telemetry/task_telemetry.h"
#include "rtloop/telemetry/utf8.h"

namespace rtloop::telemetry::internal {

std::vector<TaskView> ViewTasks(const TelemetryHub& hub, const Executor* executor,
                                const Collector* collector) {
  std::vector<TaskView> out;
  for (const TaskId id : hub.TaskIds()) {
    const TaskTelemetry* t = hub.task(id);
    if (t == nullptr) continue;
    TaskView v;
    v.id = id;
    const TaskConfig& config = t->config();
    v.name = ToValidUtf8(config.name);  // /metrics labels and the page are UTF-8 (utf8.h)
    for (const int cpu : config.cpus) {
      if (!v.cpus.empty()) v.cpus += ',';
      v.cpus += std::to_string(cpu);
    }
    if (v.cpus.empty()) v.cpus = "any";
    v.stats = hub.Stats(id);
    v.policy = SchedPolicyName(config.policy);
    v.priority = config.priority;
    const bool applied =
        v.stats.state != TaskState::kCreated && v.stats.state != TaskState::kStarting;
    if (executor != nullptr && applied && id < executor->TaskCount()) {
      const TaskInfo info = executor->Info(id);
      v.policy = SchedPolicyName(info.effective_policy);
      v.priority = info.effective_priority;
      v.rt_fallback = info.fell_back_to_non_rt;
    }
    v.period_ns = config.period.count();
    v.watchdog = config.watchdog;
    v.ring_dropped = t->ring().writer().dropped();
    if (collector != nullptr) {
      v.has_subscriber_lost = true;
      v.subscriber_lost = t->subscriber_lost();
    }
    out.push_back(std::move(v));
  }
  for (TaskView& v : out) {
    const auto same =
        std::count_if(out.begin(), out.end(), [&](const TaskView& o) { return o.name == v.name; });
    v.label = same > 1 ? v.name + "#" + std::to_string(v.id) : v.name;
  }
  return out;
}

}  // namespace rtloop::telemetry::internal
