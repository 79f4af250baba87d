#include "max_over_time.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

namespace rtloop::cyclic {
namespace {

// How often the writer thread drains the rings: at a 1 s window, a 4096-window ring holds an hour.
constexpr std::chrono::milliseconds kDrainPeriod{100};

bool IsPowerOfTwo(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

// --- WindowMaxTracker ---

WindowMaxTracker::WindowMaxTracker(int thread, std::chrono::nanoseconds window, TimePoint origin,
                                   bool nsecs, std::size_t ring_capacity, const BreakLatch* latch)
    : thread_(thread),
      window_ns_(window.count()),
      origin_(origin),
      nsecs_(nsecs),
      latch_(latch),
      ring_(ring_capacity),  // value-initialised: every page is touched here
      mask_(ring_capacity - 1) {}

void WindowMaxTracker::Publish() noexcept {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) > mask_) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ring_[static_cast<std::size_t>(head & mask_)] = current_;  // < ring size: an index
  head_.store(head + 1, std::memory_order_release);
}

void WindowMaxTracker::OnCycle(const CycleSample& sample) noexcept {
  if (latch_ != nullptr && latch_->Excludes(thread_, sample.seq)) return;  // after a -b break
  const std::int64_t diff = CyclictestDiff(sample.release, sample.wakeup_latency_ns, nsecs_);
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

bool WindowMaxTracker::TakeCurrent(WindowMax* out) noexcept {
  if (current_.cycles == 0) return false;
  *out = current_;
  current_.cycles = 0;
  return true;
}

// --- MaxOverTime ---

Result<std::unique_ptr<MaxOverTime>> MaxOverTime::Create(const MaxOverTimeConfig& config,
                                                         telemetry::OutputFile file) {
  if (config.window.count() <= 0) {
    return InvalidArgumentError("--max-window must be at least 1 ms");
  }
  if (config.threads < 1) return InvalidArgumentError("--max-over-time needs a thread");
  if (!IsPowerOfTwo(config.ring_capacity)) {
    return InvalidArgumentError("max-over-time ring capacity must be a power of two");
  }
  if (!file.is_open()) {
    return InvalidArgumentError("--max-over-time: the output file is not open");
  }
  char header[192];
  std::snprintf(header, sizeof header,
                "# rtloop-cyclic max over time\n# window_us: %lld\n# unit: %s\n"
                "# columns: thread window start_s max cycles\n",
                static_cast<long long>(config.window.count() / 1000), config.nsecs ? "ns" : "us");
  RTLOOP_RETURN_IF_ERROR(file.Write(header));
  return std::unique_ptr<MaxOverTime>(new MaxOverTime(config, std::move(file)));
}

MaxOverTime::MaxOverTime(const MaxOverTimeConfig& config, telemetry::OutputFile file)
    : config_(config), file_(std::move(file)) {
  trackers_.resize(static_cast<std::size_t>(config.threads));
}

MaxOverTime::~MaxOverTime() { Abandon(); }

CycleObserver* MaxOverTime::Observer(int index) {
  RTLOOP_CHECK(index >= 0 && index < config_.threads, "thread index out of range");
  auto& slot = trackers_[static_cast<std::size_t>(index)];
  slot = std::make_unique<WindowMaxTracker>(index, config_.window, config_.origin, config_.nsecs,
                                            config_.ring_capacity, config_.break_latch);
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

void MaxOverTime::StopWriter() {
  stop_.store(true, std::memory_order_release);
  if (writer_.joinable()) writer_.join();
}

void MaxOverTime::Append(int thread, const WindowMax& w, std::string& out) const {
  const double start_s =
      static_cast<double>(w.window) * static_cast<double>(config_.window.count()) / 1e9;
  char line[128];
  std::snprintf(line, sizeof line, "%d %" PRId64 " %.3f %" PRId64 " %" PRIu64 "\n", thread,
                w.window, start_s, w.max, w.cycles);
  out += line;
}

void MaxOverTime::DrainAll() {
  std::string out;
  for (std::size_t i = 0; i < trackers_.size(); ++i) {
    if (trackers_[i] == nullptr) continue;
    trackers_[i]->Drain([&](const WindowMax& w) { Append(static_cast<int>(i), w, out); });
  }
  // OutputFile keeps the first error; the rings go on being drained so that they never fill.
  if (!out.empty()) (void)file_.Write(out);
}

Status MaxOverTime::Close() {
  if (done_) return Status::Ok();
  done_ = true;
  StopWriter();
  DrainAll();
  std::string tail;
  std::uint64_t lost = 0;
  for (std::size_t i = 0; i < trackers_.size(); ++i) {
    if (trackers_[i] == nullptr) continue;
    WindowMax last;
    if (trackers_[i]->TakeCurrent(&last)) Append(static_cast<int>(i), last, tail);
    lost += trackers_[i]->lost();
  }
  tail += "# lost_windows: " + std::to_string(lost) + "\n# end\n";
  (void)file_.Write(tail);
  return file_.Commit();
}

void MaxOverTime::Abandon() {
  if (done_) return;
  done_ = true;
  StopWriter();
  file_.Discard();
}

}  // namespace rtloop::cyclic
