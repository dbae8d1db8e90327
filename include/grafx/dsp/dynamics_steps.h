#pragma once
/// The per-sample steps of dynamics processors, in plain C++: shared by the batched kernels
/// (grafx/dsp/recursion.h, grafx/dsp/dynamics.h) and the streaming forms, which run
/// without LibTorch.

#include <algorithm>
#include <cmath>

namespace grafx::dsp {

/// How a dynamics processor smooths its level detector or its gain.
enum class EnvelopeSmoothing {
  kOnePole,     ///< one coefficient for rising and falling levels (the GRAFX paper's default)
  kBallistics,  ///< separate attack (rising) and release (falling) coefficients
  kNone,        ///< not smoothed
};

/// One step of ballistics on state y with gains 1 − α↑ and 1 − α↓: y + (1 − α)(x − y), α chosen
/// by the sign of x − y, written with min/max (a branch is unpredictable on noisy levels, and
/// costs 3× more). The step of the row kernels, and of streams.
template <typename T>
inline T ballistics_step(T y, T x, T gain_rise, T gain_fall) {
  const T step = x - y;
  return y + (gain_rise * std::max(step, T(0)) + gain_fall * std::min(step, T(0)));
}

/// GRAFX's constants of the gain computer: T = log_threshold − 6 (log energy), a level
/// log(e + 1e−5), and smoothing coefficients at most 1 − 1e−5.
constexpr double kThresholdOffset = 6.0;
constexpr double kEnergyFloor     = 1e-5;
constexpr double kMaxAlpha        = 1.0 - 1e-5;

/// The shape of a gain computer's knee.
enum class Knee { kHard, kQuadratic, kExponential };

/// The curve's scale s: 1/r − 1 for a compressor, 1 − r for a gate (ratio r a tensor or a number).
template <typename Ratio>
Ratio curve_scale(const Ratio& ratio, bool gate) {
  return gate ? Ratio(1 - ratio) : Ratio(1 / ratio - 1);
}

/// The knee k(u) at one point of levels u past the threshold, with its derivatives k′ = dk/du
/// and k_w = dk/dw: quadratic with half width w, exponential with sharpness w, or hard
/// (processors/compressor.h gives the math).
template <typename T>
struct KneePoint {
  T k, slope, k_w;
};
template <typename T>
KneePoint<T> knee_point(Knee knee, T u, T w) {
  switch (knee) {
    case Knee::kQuadratic: {
      const T q = std::min(std::max(u + w, T(0)), 2 * w), slope = q / (2 * w);
      return {q * q / (4 * w) + std::max(u - w, T(0)), slope, slope * (1 - slope)};
    }
    case Knee::kExponential: {
      const T wu = w * u, k = (wu > 20 ? wu : std::log1p(std::exp(wu))) / w;  // softplus
      const T slope = 1 / (1 + std::exp(-wu));
      return {k, slope, (u * slope - k) / w};
    }
    default:
      return {std::max(u, T(0)), T(u > 0 ? 1 : 0), T(0)};
  }
}

}  // namespace grafx::dsp
