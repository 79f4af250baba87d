// The position controller: discrete LQR state feedback with integral action, designed at start-up
// on the plant model discretised at the loop's period, plus model-based feed-forward from the
// trajectory.
//
//   motion::Controller c = *motion::Controller::Design(plant, period, weights);   // set-up
//   double u = c.Update(sensed_state, setpoint);                                  // RT-safe
//
// The law, with r = the setpoint (position, velocity, acceleration) for this cycle:
//   reference state  x_ref = [r.pos + Δ, r.vel, r.pos, r.vel],  Δ = (Jl r.acc + bl r.vel) / k
//                    (the coupling twist that accelerates the load)
//   feed-forward     u_ff = (Jm + Jl) r.acc + (bm + bl) r.vel
//   integral         z += T (θl - r.pos)       (frozen while the torque saturates: anti-windup)
//   torque           u = clamp(u_ff - K [x - x_ref; z], ±torque_limit)
// K minimises Σ eᵀQe + R u² over the augmented model [[Ad, 0], [T·C_load, 1]], found by
// iterating the discrete Riccati equation to convergence (Design(), not RT-safe). The weights
// are Bryson's rule: Q_ii = 1 / (the largest acceptable value of that error)^2.
//
// Threading: one thread (the control task) per Controller; Update() is RT-safe (fixed-size Eigen
// arithmetic, no allocation).
#pragma once

#include <Eigen/Core>
#include <chrono>

#include "plant.h"
#include "rtloop/framework/status.h"
#include "trajectory.h"

namespace motion {

// Largest acceptable errors (Bryson's rule) and torque.
struct LqrWeights {
  double motor_angle_rad = 5e-3;
  double motor_speed_rad_per_s = 2.0;
  double load_angle_rad = 1e-3;
  double load_speed_rad_per_s = 2.0;
  double integral_rad_s = 2e-5;  // ∫ load angle error dt
  double torque_nm = 0.5;
};

class Controller {
 public:
  using Gain = Eigen::Matrix<double, 1, 5>;

  // Designs K for `period`. InvalidArgument when the period or a weight is not positive, or when
  // the Riccati iteration does not converge or the closed loop is not stable.
  static rtloop::Result<Controller> Design(const PlantParams& plant,
                                           std::chrono::nanoseconds period,
                                           const LqrWeights& weights);

  // One control cycle. RT-safe.
  double Update(const Vector4& x, const Setpoint& r) noexcept;
  // Back to zero integral state. RT-safe.
  void Reset() noexcept { integral_ = 0.0; }

  const Gain& gain() const noexcept { return k_; }
  // Largest |eigenvalue| of the closed loop (< 1: stable), computed at design.
  double spectral_radius() const noexcept { return spectral_radius_; }
  bool saturated() const noexcept { return saturated_; }

 private:
  Controller() = default;
  PlantParams plant_;
  double period_s_ = 0.0;
  Gain k_ = Gain::Zero();
  double spectral_radius_ = 0.0;
  double integral_ = 0.0;
  bool saturated_ = false;
};

}  // namespace motion
