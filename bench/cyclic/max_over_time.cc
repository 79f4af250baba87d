#include "max_over_time.h"

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "cyclic_recorder.h"

namespace rtloop::cyclic {
namespace {

// How often the writer thread drains the rings: at a 1 s window, a 4096-window ring holds an hour.
constexpr std::chrono::milliseconds kDrainPeriod{100};

bool IsPowerOfTwo(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

// --- WindowMaxTracker ---

WindowMaxTracker::WindowMaxTracker(std::chrono::nanoseconds window, TimePoint origin, bool nsecs,
                                   std::uint64_t warmup_cycles, std::size_t ring_capacity,
                                   CycleObserver* next)
    : window_ns_(window.count()),
      origin_(origin),
      nsecs_(nsecs),
      warmup_cycles_(warmup_cycles),
      next_(next),
      ring_(ring_capacity),  // value-initialised: every page is touched here
      mask_(ring_capacity - 1) {}

void WindowMaxTracker::OnRtThreadStart(TaskId task) {
  if (next_ != nullptr) next_->OnRtThreadStart(task);
}

void WindowMaxTracker::Publish() noexcept {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) > mask_) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ring_[head & mask_] = current_;
  head_.store(head + 1, std::memory_order_release);
}

void WindowMaxTracker::OnCycle(const CycleSample& sample) noexcept {
  if (seen_ < warmup_cycles_) {
    ++seen_;
  } else {
    const std::int64_t diff =
        CyclicRecorder::Diff(sample.release, sample.wakeup_latency_ns, nsecs_);
    const std::int64_t since_origin = (sample.release - origin_).count();
    // A release before the origin (a CLOCK_REALTIME step) counts into window 0.
    const std::int64_t window = since_origin > 0 ? since_origin / window_ns_ : 0;
    if (window != current_.window) {
      if (current_.cycles > 0) Publish();
      current_ = {window, diff, 1};
    } else {
      if (diff > current_.max) current_.max = diff;
      ++current_.cycles;
    }
  }
  if (next_ != nullptr) next_->OnCycle(sample);
}

bool WindowMaxTracker::TakeCurrent(WindowMax* out) noexcept {
  if (current_.cycles == 0) return false;
  *out = current_;
  current_.cycles = 0;
  return true;
}

// --- MaxOverTime ---

Result<std::unique_ptr<MaxOverTime>> MaxOverTime::Create(const MaxOverTimeConfig& config) {
  if (config.window.count() <= 0) {
    return InvalidArgumentError("--max-window must be at least 1 ms");
  }
  if (config.threads < 1) return InvalidArgumentError("--max-over-time needs a thread");
  if (!IsPowerOfTwo(config.ring_capacity)) {
    return InvalidArgumentError("max-over-time ring capacity must be a power of two");
  }
  std::FILE* f = std::fopen(config.path.c_str(), "w");
  if (f == nullptr) {
    const int err = errno;
    return ErrnoError(err, "cannot create the --max-over-time file " + config.path,
                      "check that the directory exists and is writable");
  }
  std::unique_ptr<MaxOverTime> mot(new MaxOverTime(config, f));
  const long long window_us = static_cast<long long>(config.window.count() / 1000);
  if (std::fprintf(f,
                   "# rtloop-cyclic max over time\n# window_us: %lld\n# unit: %s\n"
                   "# columns: thread window start_s max cycles\n",
                   window_us, config.nsecs ? "ns" : "us") < 0 ||
      std::fflush(f) != 0) {
    const int err = errno;
    return ErrnoError(err, "cannot write the --max-over-time file " + config.path);
  }
  return mot;
}

MaxOverTime::MaxOverTime(const MaxOverTimeConfig& config, std::FILE* file)
    : config_(config), file_(file) {
  trackers_.resize(static_cast<std::size_t>(config.threads));
}

MaxOverTime::~MaxOverTime() {
  if (!closed_) (void)Close();
}

CycleObserver* MaxOverTime::Observer(int index, CycleObserver* next) {
  RTLOOP_CHECK(index >= 0 && index < config_.threads, "thread index out of range");
  auto& slot = trackers_[static_cast<std::size_t>(index)];
  slot = std::make_unique<WindowMaxTracker>(config_.window, config_.origin, config_.nsecs,
                                            config_.warmup_cycles, config_.ring_capacity, next);
  return slot.get();
}

Status MaxOverTime::Start() {
  if (writer_.joinable()) return FailedPreconditionError("max-over-time writer already started");
  writer_ = std::thread([this] {
    while (!stop_.load(std::memory_order_acquire)) {
      DrainAll();
      for (int i = 0; i < 10 && !stop_.load(std::memory_order_acquire); ++i) {
        std::this_thread::sleep_for(kDrainPeriod / 10);
      }
    }
  });
  return Status::Ok();
}

void MaxOverTime::Write(int thread, const WindowMax& w) {
  if (error_ != 0) return;
  const double start_s =
      static_cast<double>(w.window) * static_cast<double>(config_.window.count()) / 1e9;
  if (std::fprintf(file_, "%d %" PRId64 " %.3f %" PRId64 " %" PRIu64 "\n", thread, w.window,
                   start_s, w.max, w.cycles) < 0) {
    error_ = errno != 0 ? errno : EIO;
  }
}

void MaxOverTime::DrainAll() {
  for (std::size_t i = 0; i < trackers_.size(); ++i) {
    if (trackers_[i] == nullptr) continue;
    trackers_[i]->Drain([&](const WindowMax& w) { Write(static_cast<int>(i), w); });
  }
  if (error_ == 0 && std::fflush(file_) != 0) error_ = errno != 0 ? errno : EIO;
}

Status MaxOverTime::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  stop_.store(true, std::memory_order_release);
  if (writer_.joinable()) writer_.join();
  DrainAll();
  std::uint64_t lost = 0;
  for (std::size_t i = 0; i < trackers_.size(); ++i) {
    if (trackers_[i] == nullptr) continue;
    WindowMax last;
    if (trackers_[i]->TakeCurrent(&last)) Write(static_cast<int>(i), last);
    lost += trackers_[i]->lost();
  }
  if (error_ == 0 && std::fprintf(file_, "# lost_windows: %" PRIu64 "\n# end\n", lost) < 0) {
    error_ = errno != 0 ? errno : EIO;
  }
  if (std::fclose(file_) != 0 && error_ == 0) error_ = errno != 0 ? errno : EIO;
  file_ = nullptr;
  if (error_ != 0) {
    return ErrnoError(error_, "--max-over-time " + config_.path + ": writing failed",
                      "free space or choose another file");
  }
  return Status::Ok();
}

}  // namespace rtloop::cyclic
