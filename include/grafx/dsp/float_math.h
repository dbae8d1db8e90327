#pragma once
/// The natural logarithm and exponential of floats in plain arithmetic, without branches or
/// calls, so that a loop of them vectorises (std::log and std::exp are calls GCC vectorises only
/// under -ffast-math): the streams' gain computers run them on blocks of samples. Range
/// reduction to a power of two and Cephes' minimax polynomials (S. Moshier, Cephes Math
/// Library): within 2 units in the last place of the float result over the ranges below
/// (tests/dsp/float_math_test.cpp, against double). And the linear interpolation the automation
/// curves share.

#include <algorithm>
#include <cstdint>

namespace grafx::dsp {

/// log(x) for finite x > 0 (normal numbers: from 1.2e-38 on); log(0) = −∞, log(∞) = ∞, and
/// NaN for NaN and x < 0, so that a NaN that reaches a gain computer stays one (a stream
/// silences a block whose outputs are not finite, stream/stream.h).
inline float log_float(float x) {
  const int32_t bits = __builtin_bit_cast(int32_t, x);
  // x = m · 2^e, m in [0.5, 1), then m in [√½, √2) − 1 (e lowered where m < √½).
  float m         = __builtin_bit_cast(float, (bits & 0x007fffff) | 0x3f000000);
  const float low = m < 0.707106781186547524f ? 1.0f : 0.0f;
  const float e   = float(((bits >> 23) & 0xff) - 126) - low;
  m               = m + low * m - 1.0f;
  const float z   = m * m;
  float p         = 7.0376836292e-2f;
  p               = p * m - 1.1514610310e-1f;
  p               = p * m + 1.1676998740e-1f;
  p               = p * m - 1.2420140846e-1f;
  p               = p * m + 1.4249322787e-1f;
  p               = p * m - 1.6668057665e-1f;
  p               = p * m + 2.0000714765e-1f;
  p               = p * m - 2.4999993993e-1f;
  p               = p * m + 3.3333331174e-1f;
  // log(1 + m) + e·log 2, with log 2 = 0.693359375 − 2.12194440e-4 (the first part exact).
  const float y        = m * z * p - 2.12194440e-4f * e - 0.5f * z;
  const float inside   = (m + y) + 0.693359375f * e;
  const float infinity = __builtin_inff();
  const float outside  = x == 0.0f ? -infinity : x > 0.0f ? x : __builtin_nanf("");
  return x > 0.0f && x < infinity ? inside : outside;  // selects: the loops still vectorise
}

/// exp(x), x clamped to [−87.3, 88.3] (the normal floats' range); NaN for NaN.
inline float exp_float(float x) {
  x = std::min(std::max(x, -87.3f), 88.3f);  // NaN stays NaN
  // x = n·log 2 + r, |r| ≤ ½·log 2: n rounded by the magic number 1.5·2^23, which leaves n in
  // the low bits of `shifted` (whose float lies where integers are a unit apart).
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n       = shifted - 12582912.0f;
  const float r       = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p             = 1.9875691500e-4f;
  p                   = p * r + 1.3981999507e-3f;
  p                   = p * r + 8.3334519073e-3f;
  p                   = p * r + 4.1665795894e-2f;
  p                   = p * r + 1.6666665459e-1f;
  p                   = p * r + 5.0000001201e-1f;
  const float y       = (p * r * r + r) + 1.0f;
  // y·2^n, the exponent built from n's bits in unsigned arithmetic: defined for every x (a float
  // NaN's conversion to an integer, and a negative one's shift, are not), NaN giving NaN by y.
  const uint32_t exponent = (__builtin_bit_cast(uint32_t, shifted) - 0x4B400000u + 127u) << 23;
  return y * __builtin_bit_cast(float, exponent);
}

/// lo + w·(hi − lo) in at::lerp's two-sided form (from the nearer end, exact at w = 0 and 1): one
/// formula for the curves sampled offline (dsp::piecewise_linear) and by the streams
/// (stream/curve.h).
template <typename T>
inline T lerp_two_sided(T lo, T hi, T w) {
  return w < T(0.5) ? lo + w * (hi - lo) : hi - (hi - lo) * (T(1) - w);
}

}  // namespace grafx::dsp
