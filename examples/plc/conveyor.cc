#include "conveyor.h"

#include <algorithm>
#include <cmath>

namespace plc {

using std::chrono::nanoseconds;

const char* ConveyorStateName(ConveyorState state) noexcept {
  switch (state) {
    case ConveyorState::kStopped:
      return "stopped";
    case ConveyorState::kRunning:
      return "running";
    case ConveyorState::kWaitRemoval:
      return "wait-removal";
    case ConveyorState::kEmergency:
      return "emergency";
  }
  return "?";
}

OutputImage RunConveyorLogic(const InputImage& in, MemoryImage& m) noexcept {
  const bool start = in.start_button && !m.last_start;  // rising edges
  const bool removed = !in.exit_eye && m.last_exit;
  m.last_start = in.start_button;
  m.last_exit = in.exit_eye;

  if (!in.estop_ok && m.state != ConveyorState::kEmergency) {
    m.state = ConveyorState::kEmergency;
    ++m.estops;
  }
  if (removed) ++m.items_delivered;
  switch (m.state) {
    case ConveyorState::kStopped:
      if (start && in.estop_ok) m.state = ConveyorState::kRunning;
      break;
    case ConveyorState::kRunning:
      if (in.stop_button) {
        m.state = ConveyorState::kStopped;
      } else if (in.exit_eye) {
        m.state = ConveyorState::kWaitRemoval;
      }
      break;
    case ConveyorState::kWaitRemoval:
      if (in.stop_button) {
        m.state = ConveyorState::kStopped;
      } else if (!in.exit_eye) {
        m.state = ConveyorState::kRunning;
      }
      break;
    case ConveyorState::kEmergency:
      if (start && in.estop_ok) m.state = ConveyorState::kRunning;
      break;
  }

  OutputImage out;
  out.motor_run = m.state == ConveyorState::kRunning;
  out.lamp_green = m.state == ConveyorState::kRunning;
  out.lamp_amber = m.state == ConveyorState::kWaitRemoval;
  out.lamp_red = m.state == ConveyorState::kEmergency;
  return out;
}

ConveyorSim::ConveyorSim(const ConveyorConfig& config) noexcept
    : config_(config),
      entry_eye_mm_(config.item_length_mm / 2.0),
      exit_eye_mm_(config.belt_length_mm - config.item_length_mm / 2.0),
      next_arrival_(config.item_interval / 5),
      start_press_at_(config.start_press_at) {}

bool ConveyorSim::Pressed(nanoseconds at, nanoseconds now) noexcept {
  return at.count() >= 0 && now >= at && now < at + kButtonPress;
}

bool ConveyorSim::Covers(double position_mm) const noexcept {
  for (int i = 0; i < count_; ++i) {
    const double front = items_[static_cast<std::size_t>(i)].front_mm;
    if (front >= position_mm && front - config_.item_length_mm <= position_mm) return true;
  }
  return false;
}

void ConveyorSim::Arrive() noexcept {
  if (now_ < next_arrival_) return;
  // The upstream machine waits while the entry is occupied (or the belt is full).
  const double gap_mm = config_.item_length_mm / 4.0;
  const bool entry_free =
      count_ == 0 ||
      items_[static_cast<std::size_t>(count_ - 1)].front_mm - config_.item_length_mm >= gap_mm;
  if (!entry_free || count_ == kMaxItems) return;
  items_[static_cast<std::size_t>(count_)] = Item{config_.item_length_mm, nanoseconds(-1)};
  ++count_;
  ++loaded_;
  next_arrival_ = now_ + config_.item_interval;
}

void ConveyorSim::Move(double distance_mm) noexcept {
  // Boxes ride the belt; the end stop and the box ahead hold them back (they slide on the belt).
  double limit = config_.belt_length_mm;
  for (int i = 0; i < count_; ++i) {
    Item& item = items_[static_cast<std::size_t>(i)];
    item.front_mm = std::min(item.front_mm + distance_mm, limit);
    limit = item.front_mm - config_.item_length_mm;
  }
}

void ConveyorSim::Operator() noexcept {
  // The operator takes the first box once it has been at the exit eye for removal_delay.
  if (count_ == 0) return;
  Item& first = items_[0];
  if (first.front_mm < exit_eye_mm_) return;
  if (first.at_exit_since.count() < 0) first.at_exit_since = now_;
  if (now_ - first.at_exit_since < config_.removal_delay) return;
  std::copy(items_.begin() + 1, items_.begin() + count_, items_.begin());
  --count_;
  ++removed_;
}

void ConveyorSim::Advance(nanoseconds now) noexcept {
  if (now <= now_) return;
  const double dt_s = static_cast<double>((now - now_).count()) * 1e-9;
  now_ = now;
  if (outputs_.motor_run) Move(config_.speed_mm_per_s * dt_s);
  Operator();
  Arrive();
}

InputImage ConveyorSim::ReadInputs() const noexcept {
  InputImage in;
  in.start_button = Pressed(start_press_at_, now_);
  in.stop_button = Pressed(stop_press_at_, now_);
  in.estop_ok = estop_ok_;
  in.entry_eye = Covers(entry_eye_mm_);
  in.exit_eye = Covers(exit_eye_mm_);
  in.belt_speed_mm_per_s =
      outputs_.motor_run ? static_cast<std::int32_t>(std::lround(config_.speed_mm_per_s)) : 0;
  return in;
}

}  // namespace plc
