// rtloop-two-tasks' "control" task: a 6-state discrete state-space model (a chain of
// integrators) under state feedback, in fixed-size Eigen matrices that live inside the task
// object (no heap), publishing its first state for the logger task.
//
//   two_tasks::ControlTask control;         // on the stack or behind new/make_unique: Matrix6 and
//   runtime->AddTask(control, task_config);  // Vector6 are 16-byte aligned (cmake/README.md,
//   double y = control.output();             // "32-bit targets and alignment"); any thread
//
// Threading: OnStart() and Step() on the task's RT thread (the executor's contract); output() from
// any thread (a relaxed atomic: one value, single writer). Step() is RT-safe (fixed-size Eigen
// arithmetic, no allocation).
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cmath>

#include "rtloop/framework/periodic_task.h"

namespace two_tasks {

using Matrix6 = Eigen::Matrix<double, 6, 6>;  // fixed size: lives inside the task, no heap
using Vector6 = Eigen::Matrix<double, 6, 1>;

class ControlTask final : public rtloop::PeriodicTask {
 public:
  // Set-up may allocate; nothing here does, but this is where it would.
  rtloop::Status OnStart() override {
    a_.setIdentity();
    for (int i = 0; i < 5; ++i) a_(i, i + 1) = 0.001;  // chain of integrators, dt = 1 ms
    b_.setZero();
    b_(5) = 0.001;
    k_ << 1.0, 2.0, 3.0, 3.0, 2.0, 1.0;
    x_.setZero();
    x_(0) = 1.0;
    return rtloop::Status::Ok();
  }

  // RT-safe: fixed-size arithmetic only.
  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    const double reference = std::sin(static_cast<double>(ctx.cycle) * 0.001);
    const double u = k_.dot(Vector6::Constant(reference) - x_);
    x_ = a_ * x_ + b_ * u;
    output_.store(x_(0), std::memory_order_relaxed);
    return rtloop::StepResult::kContinue;
  }

  // The first state after the latest Step(). Any thread. RT-safe.
  double output() const noexcept { return output_.load(std::memory_order_relaxed); }
  // The whole state (for tests). The task's thread only, or after the run.
  const Vector6& state() const noexcept { return x_; }

 private:
  Matrix6 a_;
  Vector6 b_;
  Vector6 k_;
  Vector6 x_;
  std::atomic<double> output_{0.0};
};

}  // namespace two_tasks
