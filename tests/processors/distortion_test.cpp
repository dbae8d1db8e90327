// Golden checks of the distortions against their curves written out independently.

#include <grafx/processors/distortion.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

using Curve = Distortion::Curve;

at::Tensor run(Curve curve, const at::Tensor& x, const TensorDict& parameters,
               ProcessorOptions options = {}) {
  ProcessorConfig config;
  config.options = std::move(options);
  return Distortion(config, curve).forward({x}, parameters).outputs[0];
}

at::Tensor scalar(double value) { return at::full({1, 1}, value, at::kDouble); }

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

TEST(Distortion, TanhOptionsBiasPostGainAndDcRemovalFollowTheirFormulas) {
  // GRAFX's TanhDistortion options, written out: remove the mean, drive, bias, output gain.
  at::Tensor x   = (at::linspace(-1.5, 1.5, 300, at::kDouble) + 0.2).view({1, 1, -1});
  const double g = 2.5, b = 0.3, post = 0.6;
  const double dc = x.mean().item<double>();
  at::Tensor y    = run(Curve::kTanh, x,
                        {{"log_pre_gain", scalar(std::log(g))},
                         {"log_post_gain", scalar(std::log(post))},
                         {"bias", scalar(b)}},
                        {{"use_bias", true}, {"inverse_post_gain", false}, {"remove_dc", true}});
  for (int64_t i = 0; i < 300; i += 29) {
    double u = g * (x[0][0][i].item<double>() - dc);
    EXPECT_NEAR(y[0][0][i].item<double>(), post * (std::tanh(u + b) - std::tanh(b)), 1e-14);
  }
  // Without a pre-gain the curve is tanh itself (no gain to undo).
  at::Tensor plain = run(Curve::kTanh, x, {}, {{"pre_post_gain", false}});
  EXPECT_TRUE(at::allclose(plain, x.tanh(), 0, 1e-15));
  // A bias makes even harmonics: the response to ±a is no longer odd.
  at::Tensor pm     = at::tensor({0.5, -0.5}, at::kDouble).view({1, 1, 2});
  at::Tensor biased = run(Curve::kTanh, pm, {{"log_pre_gain", scalar(0)}, {"bias", scalar(0.4)}},
                          {{"use_bias", true}});
  EXPECT_GT(std::abs((biased[0][0][0] + biased[0][0][1]).item<double>()), 1e-2);
}

TEST(Distortion, PolynomialOptionsSetTheOrderSquashTheTermsAndDropThePreGain) {
  const int64_t orders = 4;
  at::Tensor w         = at::tensor({0.1, 0.8, -0.3, 0.2}, at::kDouble).view({1, -1});
  at::Tensor x         = at::linspace(-1.2, 1.2, 97, at::kDouble).view({1, 1, -1});
  for (Curve curve : {Curve::kPower, Curve::kChebyshev}) {
    at::Tensor y = run(curve, x, {{"basis_weights", w.atanh()}},
                       {{"max_order", double(orders)}, {"pre_gain", false}, {"use_tanh", true}});
    for (int64_t i = 0; i < 97; i += 8) {
      const double u = x[0][0][i].item<double>();
      double t[4]    = {1, u, 0, 0};
      for (int k = 2; k < 4; ++k)
        t[k] = curve == Curve::kPower ? std::pow(u, k) : 2 * u * t[k - 1] - t[k - 2];
      double expected = 0;
      for (int k = 0; k < orders; ++k) expected += w[0][k].item<double>() * std::tanh(t[k]);
      EXPECT_NEAR(y[0][0][i].item<double>(), expected, 1e-14) << u;
    }
  }
}

TEST(Distortion, RejectsOptionsItDoesNotTake) {
  ProcessorConfig config;
  config.options = {{"use_bias", true}};
  EXPECT_GRAFX_ERROR(Distortion(config, Curve::kPower), "grafx.processor.options",
                     "unknown option \"use_bias\"; options: pre_gain, max_order, use_tanh");
  config.options = {{"max_order", 2.5}};
  EXPECT_GRAFX_ERROR(Distortion(config, Curve::kChebyshev), "grafx.processor.options",
                     "option \"max_order\": expected an integer in [2, 20], but got 2.5");
  config.options = {{"remove_dc", std::string("yes")}};
  EXPECT_GRAFX_ERROR(Distortion(config, Curve::kTanh), "grafx.processor.options",
                     "option \"remove_dc\": expected true or false, but got \"yes\"");
}

}  // namespace
}  // namespace grafx
