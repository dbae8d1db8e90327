// Golden checks of the distortions against their curves written out independently.

#include <grafx/processors/distortion.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

using Curve = Distortion::Curve;

at::Tensor run(Curve curve, const at::Tensor& x, const TensorDict& parameters) {
  return Distortion({}, curve).forward({x}, parameters).outputs[0];
}

TEST(Distortion, TanhIsTanhOfTheDrivenSignalUndone) {
  at::Tensor x   = at::linspace(-2, 2, 401, at::kDouble).view({1, 1, -1});
  const double g = 3.0;
  at::Tensor y =
      run(Curve::kTanh, x, {{"log_pre_gain", at::full({1, 1}, std::log(g), at::kDouble)}});
  for (int64_t i = 0; i < 401; i += 40) {
    double v = x[0][0][i].item<double>();
    EXPECT_NEAR(y[0][0][i].item<double>(), std::tanh(g * v) / g, 1e-15) << v;
  }
  // Small signals pass unchanged (slope 1 at 0 whatever the drive).
  EXPECT_NEAR(run(Curve::kTanh, at::full({1, 1, 1}, 1e-6, at::kDouble),
                  {{"log_pre_gain", at::full({1, 1}, 2.0, at::kDouble)}})
                  .item<double>(),
              1e-6, 1e-15);
}

TEST(Distortion, PiecewiseTanhIsTanhInsideAndSlopeContinuousAtTheThresholds) {
  const double k_pos = 0.4, k_neg = 0.7, h_pos = 3.0, h_neg = 0.5;
  auto logit   = [](double p) { return std::log(p / (1 - p)); };
  TensorDict p = {
      {"log_pre_gain", at::zeros({1, 1}, at::kDouble)},
      {"log_hardness", at::tensor({std::log(h_pos), std::log(h_neg)}, at::kDouble).view({1, 2})},
      {"z_threshold", at::tensor({logit(k_pos), logit(k_neg)}, at::kDouble).view({1, 2})}};
  auto curve = [&](double u) {  // written out branch by branch
    if (u > k_pos)
      return (1 - std::pow(std::tanh(k_pos), 2)) / h_pos * std::tanh(h_pos * (u - k_pos)) +
             std::tanh(k_pos);
    if (u < -k_neg)
      return (1 - std::pow(std::tanh(k_neg), 2)) / h_neg * std::tanh(h_neg * (u + k_neg)) -
             std::tanh(k_neg);
    return std::tanh(u);
  };
  at::Tensor x = at::linspace(-3, 3, 601, at::kDouble).view({1, 1, -1});
  at::Tensor y = run(Curve::kPiecewiseTanh, x, p);
  for (int64_t i = 0; i < 601; ++i)
    EXPECT_NEAR(y[0][0][i].item<double>(), curve(x[0][0][i].item<double>()), 1e-14);
  // Value and slope continuous at both thresholds (GRAFX's own code breaks the slope).
  for (double k : {k_pos, -k_neg}) {
    const double e = 1e-6;
    at::Tensor at  = at::tensor({k - 2 * e, k - e, k + e, k + 2 * e}, at::kDouble).view({1, 1, 4});
    at::Tensor v   = run(Curve::kPiecewiseTanh, at, p)[0][0];
    double left = (v[1] - v[0]).item<double>() / e, right = (v[3] - v[2]).item<double>() / e;
    EXPECT_NEAR(left, right, 1e-4) << "slope at " << k;
    EXPECT_NEAR(v[1].item<double>(), v[2].item<double>(), 3e-6) << "value at " << k;
  }
}

TEST(Distortion, PowerIsItsPolynomialAndChebyshevMakesHarmonics) {
  at::Tensor w = at::linspace(-0.9, 0.8, Distortion::kOrders, at::kDouble).view({1, -1});
  TensorDict p = {{"log_pre_gain", at::full({1, 1}, std::log(0.8), at::kDouble)},
                  {"basis_weights", w.atanh()}};
  at::Tensor x = at::linspace(-1, 1, 101, at::kDouble).view({1, 1, -1});
  at::Tensor y = run(Curve::kPower, x, p);
  for (int64_t i = 0; i < 101; i += 10) {
    double u = 0.8 * x[0][0][i].item<double>(), expected = 0;
    for (int64_t k = 0; k < Distortion::kOrders; ++k)
      expected += w[0][k].item<double>() * std::pow(u, double(k));
    EXPECT_NEAR(y[0][0][i].item<double>(), expected, 1e-13) << u;
  }
  // T_k(cos θ) = cos kθ: a weight on T_3 alone turns a cosine into its third harmonic.
  at::Tensor third = at::zeros({1, Distortion::kOrders}, at::kDouble);
  third[0][3]      = std::atanh(0.5);
  at::Tensor theta = at::linspace(0, 2 * M_PI, 257, at::kDouble);
  at::Tensor out =
      run(Curve::kChebyshev, theta.cos().view({1, 1, -1}),
          {{"log_pre_gain", at::zeros({1, 1}, at::kDouble)}, {"basis_weights", third}});
  EXPECT_TRUE(at::allclose(out.view({-1}), 0.5 * (3 * theta).cos(), 1e-12, 1e-12));
}

}  // namespace
}  // namespace grafx
