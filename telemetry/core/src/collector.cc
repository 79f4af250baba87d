#include "rtloop/telemetry/collector.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

namespace rtloop::telemetry {
namespace {

// The longest wait between drain passes when nobody consumes samples.
constexpr std::chrono::nanoseconds kMaxIdleWait = std::chrono::seconds(1);

// The collector thread is housekeeping: SCHED_OTHER whatever it inherited, SIGINT/SIGTERM left to
// the controlling thread, and on `cpus` when given.
void SetUpCollectorThread(const std::vector<int>& cpus) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  int policy = 0;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) == 0 && policy != SCHED_OTHER &&
      policy != SCHED_BATCH && policy != SCHED_IDLE) {
    param.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);
  }
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  pthread_setname_np(pthread_self(), "rtloop-collect");
}

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

Subscription::Subscription(const SubscriptionConfig& config, TelemetryHub* hub)
    : hub_(hub),
      filter_(MakeFilter(config.tasks)),
      capacity_(std::max<std::size_t>(config.capacity, 1)),
      ring_(capacity_) {}

bool Subscription::Wants(TaskId task) const noexcept {
  if (filter_.empty()) return true;
  return task < filter_.size() && filter_[task];
}

void Subscription::LoseLocked(TaskId task, std::uint64_t n) {
  if (n == 0) return;
  if (task >= pending_lost_.size()) pending_lost_.resize(std::size_t{task} + 1, 0);
  pending_lost_[task] += n;
  lost_ += n;
  if (hub_ != nullptr) {
    if (TaskTelemetry* tt = hub_->task(task)) tt->AddSubscriberLoss(n);
  }
}

void Subscription::Offer(TaskId task, std::span<const Sample> samples) {
  if (samples.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.load(std::memory_order_relaxed)) return;
    offered_ += samples.size();
    if (samples.size() >= capacity_) {
      // Everything queued and the head of `samples` are lost; the newest capacity_ samples stay.
      for (std::size_t i = 0; i < size_; ++i) LoseLocked(ring_[(head_ + i) % capacity_].task, 1);
      LoseLocked(task, samples.size() - capacity_);
      samples = samples.subspan(samples.size() - capacity_);
      head_ = 0;
      size_ = 0;
    } else if (size_ + samples.size() > capacity_) {
      const std::size_t drop = size_ + samples.size() - capacity_;
      for (std::size_t i = 0; i < drop; ++i) LoseLocked(ring_[(head_ + i) % capacity_].task, 1);
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

void Subscription::SetOnSamples(std::function<void()> fn) {
  std::shared_ptr<const std::function<void()>> held;
  if (fn) held = std::make_shared<const std::function<void()>>(std::move(fn));
  std::lock_guard<std::mutex> lock(mu_);
  on_samples_.swap(held);  // the old one is destroyed outside the lock
}

void Subscription::NotifySamples() {
  std::shared_ptr<const std::function<void()>> fn;  // a reference count, no allocation per pass
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn = on_samples_;
  }
  if (fn) (*fn)();
}

void Subscription::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

std::vector<std::uint64_t> Subscription::Abandon(std::span<const SampleBatch> undelivered) {
  std::vector<std::uint64_t> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_.store(true, std::memory_order_release);
    for (const SampleBatch& b : undelivered) {
      // Its lost_before was counted when the samples were dropped; it is unreported again.
      if (b.task >= pending_lost_.size()) pending_lost_.resize(std::size_t{b.task} + 1, 0);
      pending_lost_[b.task] += b.lost_before;
      received_ -= b.samples.size();
      LoseLocked(b.task, b.samples.size());
    }
    for (std::size_t i = 0; i < size_; ++i) LoseLocked(ring_[(head_ + i) % capacity_].task, 1);
    head_ = 0;
    size_ = 0;
    out.swap(pending_lost_);
  }
  cv_.notify_all();
  return out;
}

SubscriptionStats Subscription::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {.offered = offered_, .received = received_, .lost = lost_, .queued = size_};
}

// ---------------------------------------------------------------------------------------------
// Collector

Collector::Collector(TelemetryHub& hub, const CollectorConfig& config)
    : hub_(hub),
      config_(config),
      drain_period_(config.drain_period.count() == 0 ? hub.config().drain_period
                                                     : config.drain_period),
      buffer_(std::max<std::size_t>(config.chunk_size, 1)) {
  hub_.SetDrainer([this] { DrainIfIdle(); });
}

Collector::~Collector() {
  // Only a running collector drains here: sinks may already be gone after an explicit Stop().
  if (running_.load(std::memory_order_acquire)) Stop();
  hub_.SetDrainer(nullptr);  // waits for a reader's pass under way
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
  if (drain_period_.count() <= 0) {
    return InvalidArgumentError(
        "collector drain period must be > 0 (CollectorConfig::drain_period, or 0 for the hub's "
        "TelemetryHubConfig::drain_period)");
  }
  if (running_.exchange(true, std::memory_order_acq_rel)) {
    return FailedPreconditionError("the collector is already running");
  }
  hub_.SetDrainer([this] { DrainIfIdle(); });  // again, after a Stop()
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_requested_ = false;
  }
  // Start() returns once the thread runs with its CPU set and scheduling and tid() is known, so a
  // caller can check or change where it runs.
  std::promise<void> ready;
  std::future<void> set_up = ready.get_future();
  try {
    thread_ = std::thread([this, &ready] { Run(&ready); });
  } catch (const std::system_error& e) {
    running_.store(false, std::memory_order_release);
    return ErrnoError(e.code().value(), "cannot create the telemetry collector thread",
                      "raise the thread limit (ulimit -u) or free memory");
  }
  set_up.wait();
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
  // From now on the hub drains its rings itself for its readers: the sinks may go.
  hub_.SetDrainer(nullptr);
  running_.store(false, std::memory_order_release);
}

std::size_t Collector::DrainOnce() { return DrainPass(); }

void Collector::Run(std::promise<void>* ready) {
  SetUpCollectorThread(config_.cpus);
  tid_.store(static_cast<int>(syscall(SYS_gettid)), std::memory_order_release);
  ready->set_value();  // `ready` lives in Start(), which returns now: not touched again
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_requested_) {
    lock.unlock();
    DrainPass();
    const std::chrono::nanoseconds wait = NextWait();
    lock.lock();
    next += wait;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // fell behind: do not burst to catch up
    wake_requested_ = false;
    stop_cv_.wait_until(lock, next, [this] { return stop_requested_ || wake_requested_; });
    if (wake_requested_) next = std::chrono::steady_clock::now();
  }
  tid_.store(0, std::memory_order_release);
}

std::chrono::nanoseconds Collector::NextWait() {
  {
    std::lock_guard<std::mutex> lock(subs_mu_);
    if (!subs_.empty() || !sinks_.empty()) return drain_period_;
  }
  // Nobody waits for samples: drain only so often that no ring gets past half full.
  std::chrono::nanoseconds wait = kMaxIdleWait;
  for (TaskId id : hub_.TaskIds()) {
    const TaskTelemetry* t = hub_.task(id);
    const std::chrono::nanoseconds half =
        t->config().period * static_cast<std::int64_t>(t->ring().capacity() / 2);
    wait = std::min(wait, half);
  }
  return std::max(wait, drain_period_);
}

std::size_t Collector::DrainPass() {
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  return DrainPassLocked();
}

std::size_t Collector::DrainIfIdle() {
  std::unique_lock<std::mutex> drain_lock(drain_mu_, std::try_to_lock);
  return drain_lock.owns_lock() ? DrainPassLocked() : 0;
}

std::size_t Collector::DrainPassLocked() {
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
      t->RecordDrained(chunk);  // the histograms first: a consumer's reaction may read them
      {
        std::lock_guard<std::mutex> lock(subs_mu_);
        for (const std::shared_ptr<Subscription>& sub : subs_) {
          if (sub->closed() || !sub->Wants(id)) continue;
          sub->Offer(id, chunk);
          if (std::find(notify_.begin(), notify_.end(), sub) == notify_.end()) {
            notify_.push_back(sub);
          }
        }
      }
      for (SampleSink* sink : sinks_) sink->OnSamples(id, chunk);
    }
    total += taken;
  }
  {
    std::lock_guard<std::mutex> lock(subs_mu_);
    std::erase_if(subs_, [](const std::shared_ptr<Subscription>& s) { return s->closed(); });
  }
  for (SampleSink* sink : sinks_) sink->OnDrainEnd();
  // Outside subs_mu_: a consumer's reaction may subscribe or unsubscribe.
  for (const std::shared_ptr<Subscription>& sub : notify_) sub->NotifySamples();
  notify_.clear();
  passes_.fetch_add(1, std::memory_order_relaxed);
  delivered_.fetch_add(total, std::memory_order_relaxed);
  return total;
}

std::shared_ptr<Subscription> Collector::Subscribe(const SubscriptionConfig& config) {
  auto sub = std::make_shared<Subscription>(config, config.count_loss_in_hub ? &hub_ : nullptr);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(subs_mu_);
    first = subs_.empty() && sinks_.empty();
    subs_.push_back(sub);
  }
  if (first) {
    // The collector may be in a long idle wait: the first consumer gets samples at the drain
    // period from now on, not after it.
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      wake_requested_ = true;
    }
    stop_cv_.notify_all();
  }
  return sub;
}

void Collector::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  if (!sub) return;
  sub->Close();
  std::lock_guard<std::mutex> lock(subs_mu_);
  std::erase(subs_, sub);
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
