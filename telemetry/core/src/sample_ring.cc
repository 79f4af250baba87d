#include "rtloop/telemetry/sample_ring.h"

#include <algorithm>
#include <bit>
#include <new>
#include <string>

#include "concurrentqueue.h"

namespace rtloop::telemetry {
namespace {

// Larger blocks than the default 32: fewer block switches per bulk dequeue. The explicit producer
// reuses a block once the reader emptied it, so the usable capacity is within one block of the
// nominal one.
struct RingTraits : moodycamel::ConcurrentQueueDefaultTraits {
  // NOLINTNEXTLINE(readability-identifier-naming): the name is the queue's traits'.
  static const std::size_t BLOCK_SIZE = 256;
};

constexpr std::size_t kBlock = RingTraits::BLOCK_SIZE;

}  // namespace

struct SampleRing::Queue {
  explicit Queue(std::size_t capacity) : q(capacity) {}
  moodycamel::ConcurrentQueue<Sample, RingTraits> q;
};

using ProducerToken = moodycamel::ProducerToken;

std::size_t RingCapacityFor(std::chrono::nanoseconds period, std::chrono::nanoseconds drain_period,
                            std::size_t floor) noexcept {
  std::size_t need = floor;
  if (period.count() > 0 && drain_period.count() > 0) {
    // rate x 2 x drain = 2 x drain / period, rounded up.
    const auto p = static_cast<std::uint64_t>(period.count());
    const auto d = static_cast<std::uint64_t>(drain_period.count());
    const std::uint64_t by_rate = d / p * 2 + ((d % p) * 2 + p - 1) / p;  // no overflow
    need = std::max<std::size_t>(need, static_cast<std::size_t>(by_rate));
  }
  // Beyond 2^31 std::bit_ceil would overflow; SampleRing::Create rejects such sizes clearly.
  need = std::clamp<std::size_t>(need, kBlock, std::size_t{1} << 31);
  return std::bit_ceil(need);
}

Result<std::unique_ptr<SampleRing>> SampleRing::Create(const SampleRingConfig& config) {
  if (config.capacity == 0 || config.capacity > (std::size_t{1} << 30)) {
    return InvalidArgumentError("sample ring capacity " + std::to_string(config.capacity) +
                                " is out of range: use 1 .. 2^30 samples");
  }
  const std::size_t rounded = (config.capacity + kBlock - 1) / kBlock * kBlock;
  auto queue = std::make_unique<Queue>(rounded);
  // Prefault: fill and drain the whole ring once through an explicit producer. The producer (and
  // the blocks it now owns) is recycled by the RT thread's token later, so the RT thread touches
  // only pages already written here.
  std::size_t filled = 0;
  {
    ProducerToken token(queue->q);
    if (!token.valid()) {
      return InternalError("cannot create the sample ring's producer: out of memory");
    }
    while (queue->q.try_enqueue(token, Sample{})) ++filled;
    Sample sink[256];
    while (queue->q.try_dequeue_bulk(sink, std::size(sink)) != 0) {
    }
  }
  if (filled < rounded) {
    return InternalError("sample ring holds " + std::to_string(filled) + " of " +
                         std::to_string(rounded) + " samples after set-up");
  }
  return std::unique_ptr<SampleRing>(new SampleRing(std::move(queue), filled));
}

SampleRing::SampleRing(std::unique_ptr<Queue> queue, std::size_t capacity) noexcept
    : queue_(std::move(queue)), capacity_(capacity), writer_(*this), reader_(*this) {}

SampleRing::~SampleRing() { delete static_cast<ProducerToken*>(writer_.token_); }

std::size_t SampleRing::ApproxSize() const noexcept { return queue_->q.size_approx(); }

void SampleRing::Writer::AttachToCurrentThread() {
  delete static_cast<ProducerToken*>(token_);
  token_ = nullptr;
  auto* token = new ProducerToken(ring_.queue_->q);
  if (!token->valid()) {
    delete token;
    return;  // TryPush() then counts every sample as dropped
  }
  token_ = token;
}

bool SampleRing::Writer::TryPush(const Sample& sample) noexcept {
  auto* token = static_cast<ProducerToken*>(token_);
  if (token != nullptr && ring_.queue_->q.try_enqueue(*token, sample)) {
    pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return false;
}

std::size_t SampleRing::Reader::Drain(Sample* out, std::size_t max) noexcept {
  const std::size_t n = ring_.queue_->q.try_dequeue_bulk(out, max);
  if (n != 0)
    drained_.store(drained_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  return n;
}

}  // namespace rtloop::telemetry
