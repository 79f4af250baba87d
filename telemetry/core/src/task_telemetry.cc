#include "rtloop/telemetry/task_telemetry.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

namespace rtloop::telemetry {

TaskTelemetry::TaskTelemetry(TaskId id, const TaskConfig& config, std::unique_ptr<SampleRing> ring,
                             const HistogramLayout& layout)
    : id_(id), config_(config), ring_(std::move(ring)), latency_(layout), execution_(layout) {}

void TaskTelemetry::OnRtThreadStart() { ring_->writer().AttachToCurrentThread(); }

TelemetryHub::TelemetryHub(const TelemetryHubConfig& config) : config_(config), slots_(nullptr) {
  config_.max_tasks =
      std::clamp<std::size_t>(config_.max_tasks, 1, std::size_t{kMaxSampleTaskId} + 1);
  slots_.reset(new std::atomic<TaskTelemetry*>[config_.max_tasks]);
  for (std::size_t i = 0; i < config_.max_tasks; ++i) {
    slots_[i].store(nullptr, std::memory_order_relaxed);
  }
}

TelemetryHub::~TelemetryHub() = default;

Status TelemetryHub::AddTask(TaskId id, const TaskConfig& config) {
  if (id >= config_.max_tasks) {
    return InvalidArgumentError("task id " + std::to_string(id) + " (\"" + config.name +
                                "\") is beyond the telemetry hub's " +
                                std::to_string(config_.max_tasks) +
                                " task slots: raise TelemetryHubConfig::max_tasks");
  }
  if (config.period.count() <= 0) {
    return InvalidArgumentError("task \"" + config.name +
                                "\" has a period <= 0: telemetry cannot size its sample ring");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (slots_[id].load(std::memory_order_acquire) != nullptr) {
    return Status(StatusCode::kAlreadyExists,
                  "task id " + std::to_string(id) + " was already added to the telemetry hub");
  }
  const std::size_t capacity =
      config_.ring_capacity > 0
          ? config_.ring_capacity
          : RingCapacityFor(config.period, config_.drain_period, config_.min_ring_capacity);
  Result<std::unique_ptr<SampleRing>> ring = SampleRing::Create({.capacity = capacity});
  if (!ring.ok()) {
    return Status(ring.status().code(), "task \"" + config.name + "\": " + ring.status().message() +
                                            " (set TelemetryHubConfig::ring_capacity or a shorter "
                                            "drain_period)");
  }
  auto task = std::make_unique<TaskTelemetry>(id, config, std::move(ring).value(),
                                              config_.histogram_layout);
  slots_[id].store(task.get(), std::memory_order_release);
  owned_.push_back(std::move(task));
  return Status::Ok();
}

Status TelemetryHub::SetSampleObserver(TaskId id, TaskSampleObserver* observer) {
  TaskTelemetry* t = task(id);
  if (t == nullptr) {
    return NotFoundError("no telemetry for task id " + std::to_string(id) +
                         ": add it to the hub before setting its sample observer");
  }
  t->SetSampleObserver(observer);
  return Status::Ok();
}

void TelemetryHub::OnRtThreadStart(TaskId id) {
  if (TaskTelemetry* t = task(id)) t->OnRtThreadStart();
}

void TelemetryHub::OnCycle(const CycleSample& sample) noexcept {
  TaskTelemetry* t = task(sample.task);
  if (t == nullptr) {
    unknown_task_samples_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  t->OnCycle(sample);
}

CycleObserver* TelemetryHub::ForTask(TaskId id) noexcept {
  if (TaskTelemetry* t = task(id)) return t;
  return this;
}

TaskTelemetry* TelemetryHub::task(TaskId id) noexcept {
  return id < config_.max_tasks ? slots_[id].load(std::memory_order_acquire) : nullptr;
}

const TaskTelemetry* TelemetryHub::task(TaskId id) const noexcept {
  return id < config_.max_tasks ? slots_[id].load(std::memory_order_acquire) : nullptr;
}

std::vector<TaskId> TelemetryHub::TaskIds() const {
  std::vector<TaskId> ids;
  for (std::size_t i = 0; i < config_.max_tasks; ++i) {
    if (slots_[i].load(std::memory_order_acquire) != nullptr) ids.push_back(static_cast<TaskId>(i));
  }
  return ids;
}

void TelemetryHub::Drain() const {
  std::unique_lock<std::mutex> lock(drain_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a drain is under way: it brings the histograms up to date
  if (drainer_) {
    drainer_();
    return;
  }
  // No collector: the hub is the rings' consumer.
  std::array<Sample, 64> buffer;
  for (const TaskId id : TaskIds()) {
    TaskTelemetry* t = slots_[id].load(std::memory_order_acquire);
    const std::size_t limit = t->ring().capacity() + buffer.size();  // bounded, as the collector
    for (std::size_t taken = 0; taken < limit;) {
      const std::size_t n = t->ring().reader().Drain(buffer.data(), buffer.size());
      if (n == 0) break;
      t->RecordDrained(std::span<const Sample>(buffer.data(), n));
      taken += n;
    }
  }
}

void TelemetryHub::SetDrainer(std::function<void()> drainer) {
  std::lock_guard<std::mutex> lock(drain_mu_);
  drainer_ = std::move(drainer);
}

Result<TaskReport> TelemetryHub::Snapshot(TaskId id, TaskReportParts parts) const {
  const TaskTelemetry* t = task(id);
  if (t == nullptr) {
    return NotFoundError("no telemetry for task id " + std::to_string(id) +
                         ": it was never added to the hub");
  }
  if (!has_stats()) {
    return FailedPreconditionError(
        "the telemetry hub has no task statistics for task \"" + t->config().name +
        "\": call TelemetryHub::AttachStats(executor) (rtloop::Runtime does this)");
  }
  return MakeTaskReport(nullptr, this, id, parts);
}

TaskStatsSnapshot TelemetryHub::Stats(TaskId id) const {
  const TaskTelemetry* t = task(id);
  const TaskStatsReader* stats = stats_.load(std::memory_order_acquire);
  return t != nullptr && stats != nullptr ? stats->Stats(id) : TaskStatsSnapshot{};
}

std::vector<TaskReport> TelemetryHub::SnapshotAll(TaskReportParts parts) const {
  if (!has_stats()) return {};
  return MakeTaskReports(nullptr, this, parts);
}

}  // namespace rtloop::telemetry
