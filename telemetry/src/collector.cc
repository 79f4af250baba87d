#include "rtloop/telemetry/collector.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

namespace rtloop::telemetry {
namespace {

// Empty: all tasks. Ids beyond kMaxSampleTaskId can never carry samples and are ignored (a
// client asking for id 4e9 must not make us allocate 512 MB); a filter of only such ids still
// matches nothing rather than everything.
std::vector<bool> MakeFilter(const std::vector<TaskId>& tasks) {
  std::vector<bool> filter;
  if (tasks.empty()) return filter;
  filter.resize(1, false);
  for (TaskId t : tasks) {
    if (t > kMaxSampleTaskId) continue;
    if (t >= filter.size()) filter.resize(std::size_t{t} + 1, false);
    filter[t] = true;
  }
  return filter;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Subscription

Subscription::Subscription(const SubscriptionConfig& config)
    : filter_(MakeFilter(config.tasks)),
      capacity_(std::max<std::size_t>(config.capacity, 1)),
      ring_(capacity_) {}

bool Subscription::Wants(TaskId task) const noexcept {
  if (filter_.empty()) return true;
  return task < filter_.size() && filter_[task];
}

void Subscription::Offer(TaskId task, std::span<const Sample> samples) {
  if (samples.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.load(std::memory_order_relaxed)) return;
    offered_ += samples.size();
    auto lose = [this](TaskId t, std::uint64_t n) {
      if (t >= pending_lost_.size()) pending_lost_.resize(std::size_t{t} + 1, 0);
      pending_lost_[t] += n;
      if (t >= lost_by_task_.size()) lost_by_task_.resize(std::size_t{t} + 1, 0);
      lost_by_task_[t] += n;
      lost_ += n;
    };
    if (samples.size() >= capacity_) {
      // Everything queued and the head of `samples` are lost; the newest capacity_ samples stay.
      for (std::size_t i = 0; i < size_; ++i) lose(ring_[(head_ + i) % capacity_].task, 1);
      lose(task, samples.size() - capacity_);
      samples = samples.subspan(samples.size() - capacity_);
      head_ = 0;
      size_ = 0;
    } else if (size_ + samples.size() > capacity_) {
      const std::size_t drop = size_ + samples.size() - capacity_;
      for (std::size_t i = 0; i < drop; ++i) lose(ring_[(head_ + i) % capacity_].task, 1);
      head_ = (head_ + drop) % capacity_;
      size_ -= drop;
    }
    // Copy in at most two contiguous pieces.
    std::size_t tail = (head_ + size_) % capacity_;
    std::size_t first = std::min(samples.size(), capacity_ - tail);
    std::memcpy(&ring_[tail], samples.data(), first * sizeof(Sample));
    if (first < samples.size()) {
      std::memcpy(&ring_[0], samples.data() + first, (samples.size() - first) * sizeof(Sample));
    }
    size_ += samples.size();
  }
  cv_.notify_one();
}

std::size_t Subscription::Pop(std::vector<SampleBatch>* out, std::chrono::nanoseconds timeout,
                              std::size_t max_samples) {
  out->clear();
  if (max_samples == 0) return 0;
  std::vector<Sample> taken;
  std::vector<std::uint64_t> lost_for;  // per task: loss to report on its first batch
  {
    std::unique_lock<std::mutex> lock(mu_);
    // now() + nanoseconds::max() would overflow inside wait_for and not wait at all: "forever" is
    // taken as a (renewable) day.
    timeout = std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24));
    cv_.wait_for(lock, timeout,
                 [this] { return size_ > 0 || closed_.load(std::memory_order_relaxed); });
    const std::size_t n = std::min(size_, max_samples);
    if (n == 0) return 0;
    taken.resize(n);
    const std::size_t first = std::min(n, capacity_ - head_);
    std::memcpy(taken.data(), &ring_[head_], first * sizeof(Sample));
    if (first < n) std::memcpy(taken.data() + first, &ring_[0], (n - first) * sizeof(Sample));
    head_ = (head_ + n) % capacity_;
    size_ -= n;
    received_ += n;
    // Losses of a task precede every queued sample of it, so they belong to its first batch here.
    for (const Sample& s : taken) {
      if (s.task >= lost_for.size()) lost_for.resize(std::size_t{s.task} + 1, UINT64_MAX);
      if (lost_for[s.task] != UINT64_MAX) continue;
      std::uint64_t lost = 0;
      if (s.task < pending_lost_.size()) std::swap(lost, pending_lost_[s.task]);
      lost_for[s.task] = lost;
    }
  }
  // Group into batches of consecutive seqs per task, outside the lock.
  std::vector<std::size_t> open(lost_for.size(), SIZE_MAX);  // task -> index in *out
  for (const Sample& s : taken) {
    std::size_t& idx = open[s.task];
    if (idx != SIZE_MAX) {
      SampleBatch& b = (*out)[idx];
      if (s.seq == b.first_seq + b.samples.size()) {
        b.samples.push_back(s);
        continue;
      }
    }
    SampleBatch b;
    b.task = s.task;
    b.first_seq = s.seq;
    if (idx == SIZE_MAX) b.lost_before = lost_for[s.task];
    b.samples.push_back(s);
    idx = out->size();
    out->push_back(std::move(b));
  }
  return taken.size();
}

void Subscription::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

SubscriptionStats Subscription::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {.offered = offered_, .received = received_, .lost = lost_, .queued = size_};
}

std::vector<std::uint64_t> Subscription::LostByTask() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_by_task_;
}

// ---------------------------------------------------------------------------------------------
// Collector

Collector::Collector(TelemetryHub& hub, const CollectorConfig& config)
    : hub_(hub), config_(config), buffer_(std::max<std::size_t>(config.chunk_size, 1)) {}

Collector::~Collector() {
  // Only a running collector drains here: sinks may already be gone after an explicit Stop().
  if (running_.load(std::memory_order_acquire)) Stop();
}

Status Collector::AddSink(SampleSink* sink) {
  if (sink == nullptr) return InvalidArgumentError("Collector::AddSink: the sink is null");
  if (running_.load(std::memory_order_acquire)) {
    return FailedPreconditionError(
        "Collector::AddSink after Start(): add every sink before starting the collector");
  }
  std::lock_guard<std::mutex> lock(drain_mu_);
  sinks_.push_back(sink);
  return Status::Ok();
}

Status Collector::Start() {
  if (config_.drain_period.count() <= 0) {
    return InvalidArgumentError("collector drain period must be > 0");
  }
  if (running_.exchange(true, std::memory_order_acq_rel)) {
    return FailedPreconditionError("the collector is already running");
  }
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_requested_ = false;
  }
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    running_.store(false, std::memory_order_release);
    return ErrnoError(e.code().value(), "cannot create the telemetry collector thread",
                      "raise the thread limit (ulimit -u) or free memory");
  }
  return Status::Ok();
}

void Collector::Stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stop_requested_ = true;
    }
    stop_cv_.notify_all();
    thread_.join();
  }
  // Drain what remains; bounded in case producers are still running.
  for (int pass = 0; pass < 64; ++pass) {
    if (DrainOnce() == 0) break;
  }
  running_.store(false, std::memory_order_release);
}

std::size_t Collector::DrainOnce() { return DrainPass(); }

void Collector::Run() {
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_requested_) {
    lock.unlock();
    DrainPass();
    lock.lock();
    next += config_.drain_period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // fell behind: do not burst to catch up
    stop_cv_.wait_until(lock, next, [this] { return stop_requested_; });
  }
}

std::size_t Collector::DrainPass() {
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  std::size_t total = 0;
  const std::size_t max_tasks = hub_.max_tasks();
  for (std::size_t i = 0; i < max_tasks; ++i) {
    const auto id = static_cast<TaskId>(i);
    TaskTelemetry* t = hub_.task(id);
    if (t == nullptr) continue;
    SampleRing::Reader& reader = t->ring().reader();
    // Bounded: a producer running flat out cannot keep one pass here forever.
    const std::size_t limit = t->ring().capacity() + buffer_.size();
    std::size_t taken = 0;
    while (taken < limit) {
      const std::size_t n = reader.Drain(buffer_.data(), buffer_.size());
      if (n == 0) break;
      taken += n;
      const std::span<const Sample> chunk(buffer_.data(), n);
      {
        std::lock_guard<std::mutex> lock(subs_mu_);
        for (const std::shared_ptr<Subscription>& sub : subs_) {
          if (!sub->closed() && sub->Wants(id)) sub->Offer(id, chunk);
        }
      }
      for (SampleSink* sink : sinks_) sink->OnSamples(id, chunk);
    }
    total += taken;
  }
  {
    std::lock_guard<std::mutex> lock(subs_mu_);
    std::erase_if(subs_, [this](const std::shared_ptr<Subscription>& s) {
      if (!s->closed()) return false;
      RetireLocked(*s);
      return true;
    });
  }
  for (SampleSink* sink : sinks_) sink->OnDrainEnd();
  passes_.fetch_add(1, std::memory_order_relaxed);
  delivered_.fetch_add(total, std::memory_order_relaxed);
  return total;
}

std::shared_ptr<Subscription> Collector::Subscribe(const SubscriptionConfig& config) {
  auto sub = std::make_shared<Subscription>(config);
  std::lock_guard<std::mutex> lock(subs_mu_);
  subs_.push_back(sub);
  return sub;
}

void Collector::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  if (!sub) return;
  sub->Close();
  std::lock_guard<std::mutex> lock(subs_mu_);
  if (std::erase(subs_, sub) > 0) RetireLocked(*sub);
}

void Collector::RetireLocked(const Subscription& sub) {
  const std::vector<std::uint64_t> lost = sub.LostByTask();
  if (retired_lost_.size() < lost.size()) retired_lost_.resize(lost.size(), 0);
  for (std::size_t t = 0; t < lost.size(); ++t) retired_lost_[t] += lost[t];
}

std::uint64_t Collector::SubscriberLoss(TaskId task) const {
  std::lock_guard<std::mutex> lock(subs_mu_);
  std::uint64_t lost = task < retired_lost_.size() ? retired_lost_[task] : 0;
  for (const std::shared_ptr<Subscription>& sub : subs_) {
    const std::vector<std::uint64_t> by_task = sub->LostByTask();
    if (task < by_task.size()) lost += by_task[task];
  }
  return lost;
}

CollectorStats Collector::stats() const {
  CollectorStats s;
  s.passes = passes_.load(std::memory_order_relaxed);
  s.delivered = delivered_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(subs_mu_);
  s.subscriptions = subs_.size();
  return s;
}

}  // namespace rtloop::telemetry
