// dsp/float_math.h against the C library's logarithm and exponential in double.

#include <grafx/dsp/float_math.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace grafx::dsp {
namespace {

/// |got − exact| in units in the last place of the float nearest to exact.
double ulps(float got, double exact) {
  const float nearest = float(exact);
  const double ulp =
      double(std::nextafter(std::abs(nearest), std::numeric_limits<float>::infinity())) -
      std::abs(nearest);
  return std::abs(double(got) - exact) / ulp;
}

TEST(FloatMath, LogIsWithinTwoUlpsOverTheNormalFloats) {
  // Geometric steps of 1e-5 from the smallest normal float to the largest finite one, and every
  // float of [0.5, 2) a step of 2^-20 apart (where log crosses 0 and the mantissa's reduction
  // switches at √½).
  double worst = 0;
  for (float x = std::numeric_limits<float>::min(); x < 3e38f; x *= 1.00001f)
    worst = std::max(worst, ulps(log_float(x), std::log(double(x))));
  double absolute = 0;
  for (float x = 0.5f; x < 2.0f; x += 0x1p-20f) {
    worst    = std::max(worst, ulps(log_float(x), std::log(double(x))));
    absolute = std::max(absolute, std::abs(double(log_float(x)) - std::log(double(x))));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_LE(absolute, 6e-8);  // near 1, where log is near 0, a few ulps of 1 at most
  EXPECT_EQ(log_float(1.0f), 0.0f);
}

TEST(FloatMath, ExpIsWithinTwoUlpsAndClampsOutsideTheNormalRange) {
  double worst = 0;
  for (float x = -87.3f; x <= 88.3f; x += 1e-4f)
    worst = std::max(worst, ulps(exp_float(x), std::exp(double(x))));
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(exp_float(0.0f), 1.0f);
  // Beyond the range: the ends' values, finite and normal, not infinity, zero or garbage.
  EXPECT_EQ(exp_float(-1000.0f), exp_float(-87.3f));
  EXPECT_EQ(exp_float(1000.0f), exp_float(88.3f));
  EXPECT_TRUE(std::isnormal(exp_float(-1000.0f)) && std::isfinite(exp_float(1000.0f)));
}

// Outside their ranges: what a NaN or an infinity that reaches a gain computer gives (a NaN stays
// one, so that the stream's check of its outputs sees it). The stream engine's fuzz test, built
// with UBSan, runs the same values (no undefined behaviour on any float).
TEST(FloatMath, NaNStaysNaNAndTheEndsAreTheLimits) {
  const float nan      = std::numeric_limits<float>::quiet_NaN();
  const float infinity = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(log_float(nan)));
  EXPECT_TRUE(std::isnan(log_float(-1.0f)));
  EXPECT_TRUE(std::isnan(log_float(-infinity)));
  EXPECT_EQ(log_float(0.0f), -infinity);
  EXPECT_EQ(log_float(infinity), infinity);
  EXPECT_TRUE(std::isnan(exp_float(nan)));
  EXPECT_TRUE(std::isnan(exp_float(-nan)));
  EXPECT_EQ(exp_float(infinity), exp_float(88.3f));
  EXPECT_EQ(exp_float(-infinity), exp_float(-87.3f));
  // The exponent's bits, near 2^n for every n of the range.
  for (int n = -125; n <= 127; ++n) {
    const float x = float(n * std::log(2.0));
    EXPECT_LE(ulps(exp_float(x), std::exp(double(x))), 2.0) << n;
  }
}

}  // namespace
}  // namespace grafx::dsp
