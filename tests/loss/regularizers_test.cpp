// The gain-staging loss and the weighting of auxiliary losses.

#include <grafx/dsp/forward_mode.h>
#include <grafx/loss/regularizers.h>

#include "loss/loss_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>

namespace grafx {
namespace {

TEST(GainStaging, IsTwiceTheLogGainOfAScaledSignalPerNode) {
  at::Tensor input = at::randn({3, 2, 500}, at::kDouble);
  at::Tensor gains = at::tensor({1.0, 0.5, 3.0}, at::kDouble);
  at::Tensor loss  = gain_staging_loss(input, input * gains.view({3, 1, 1}));
  ASSERT_EQ(loss.sizes(), (std::vector<int64_t>{3}));
  // log of energies: |log(g²E + ε) − log(E + ε)| = 2|log g| up to ε/E ≈ 1e-7.
  EXPECT_TRUE(at::allclose(loss, 2 * gains.log().abs(), 0, 1e-6));
  EXPECT_EQ(loss[0].item<double>(), 0.0);
}

TEST(GainStaging, CountsEnergyOverAllChannels) {
  // A node that moves energy from left to right keeps its level.
  at::Tensor x      = at::randn({1, 1, 400}, at::kDouble);
  at::Tensor input  = at::cat({x, at::zeros_like(x)}, 1),
             output = at::cat({at::zeros_like(x), x}, 1);
  EXPECT_NEAR(gain_staging_loss(input, output).item<double>(), 0.0, 1e-14);  // summation order
  // Silence in and out costs nothing (the 1e-7 floor).
  EXPECT_EQ(gain_staging_loss(at::zeros({1, 2, 10}), at::zeros({1, 2, 10})).item<float>(), 0.0f);
}

TEST(GainStaging, GradientMatchesFiniteDifferences) {
  at::Tensor input  = at::randn({2, 2, 64}, at::kDouble),
             output = 0.7 * at::randn({2, 2, 64}, at::kDouble);
  auto total        = [&](const at::Tensor& y) { return gain_staging_loss(input, y).sum(); };
  EXPECT_LT(testing::gradient_error(total, output, 64), 1e-6);
}

TEST(GainStaging, SecondDerivativesAndTangentsEqualTheComposition) {
  // Against |log(mean(y²) + ε) − log(mean(x²) + ε)| in ATen operations: values, gradients,
  // recorded gradients differentiated again (Hessian-vector products, finite at a silent
  // output) and tangents (forward mode).
  at::manual_seed(6);
  const at::Tensor input = at::randn({3, 2, 64}, at::kDouble);
  at::Tensor output      = 0.7 * at::randn({3, 2, 64}, at::kDouble);
  output[1].zero_();
  auto composed = [&](const at::Tensor& y) {
    auto log_energy = [](const at::Tensor& x) { return (x.square().mean({1, 2}) + 1e-7).log(); };
    return (log_energy(y) - log_energy(input)).abs();
  };
  const at::Tensor y = output.clone().requires_grad_(true), w = at::randn({3}, at::kDouble),
                   v    = at::randn_like(output);
  const at::Tensor ours = gain_staging_loss(input, y), theirs = composed(y);
  EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-14));
  const at::Tensor g1 = torch::autograd::grad({(ours * w).sum()}, {y}, {}, true, true)[0],
                   g2 = torch::autograd::grad({(theirs * w).sum()}, {y}, {}, true, true)[0];
  EXPECT_TRUE(at::allclose(g1, g2, 1e-12, 1e-14));
  const at::Tensor h1 = torch::autograd::grad({(g1 * v).sum()}, {y})[0],
                   h2 = torch::autograd::grad({(g2 * v).sum()}, {y})[0];
  EXPECT_TRUE(h1.isfinite().all().item<bool>());
  EXPECT_TRUE(at::allclose(h1, h2, 1e-10, 1e-12));
  at::Tensor t1, t2;
  {
    dsp::ForwardMode mode;
    t1 = dsp::unpack_dual(gain_staging_loss(input, dsp::make_dual(output, v))).second;
    t2 = dsp::unpack_dual(composed(dsp::make_dual(output, v))).second;
  }
  EXPECT_TRUE(at::allclose(t1, t2, 1e-12, 1e-14));
}

TEST(GainStaging, RejectsBadShapes) {
  EXPECT_GRAFX_ERROR(gain_staging_loss(at::zeros({2, 100}), at::zeros({2, 100})),
                     "grafx.loss.shape", "N×C×L, but got [2, 100]");
  EXPECT_GRAFX_ERROR(gain_staging_loss(at::zeros({1, 2, 100}), at::zeros({1, 2, 99})),
                     "grafx.loss.shape", "same shape");
}

TEST(RegularizationLoss, WeightsAndSumsTheAuxiliaryLosses) {
  TensorDict aux = {{"gain_staging", at::tensor({1.0, 2.0, 3.0}, at::kDouble)},
                    {"radii", at::tensor({4.0, 5.0}, at::kDouble)}};
  EXPECT_NEAR(regularization_loss(aux).item<double>(), 1e-3 * 6 + 0.5 * 9, 1e-15);
  EXPECT_NEAR(regularization_loss(aux, {{"gain_staging", 1.0}, {"radii", 0.0}}).item<double>(), 6.0,
              1e-15);
  EXPECT_EQ(regularization_loss({}).item<double>(), 0.0);
  EXPECT_EQ(default_regularizer_weights().at("gain_staging"), 1e-3);
  EXPECT_EQ(default_regularizer_weights().at("eq_curvature"), 0.03);  // the parametric EQs'
  // A term weighed 0 is left out: its values cost nothing, not even NaN·0.
  aux["eq_curvature"]                         = at::tensor({std::nan("")}, at::kDouble);
  const std::map<std::string, double> without = {
      {"gain_staging", 1e-3}, {"radii", 0.5}, {"eq_curvature", 0.0}};
  EXPECT_NEAR(regularization_loss(aux, without).item<double>(), 1e-3 * 6 + 0.5 * 9, 1e-15);
}

TEST(RegularizationLoss, RejectsAnUnknownKey) {
  EXPECT_GRAFX_ERROR(regularization_loss({{"sparsity", at::ones({2})}}),
                     "grafx.loss.unknown_regularizer",
                     "(eq_curvature, gain_staging, radii), but got \"sparsity\"");
}

}  // namespace
}  // namespace grafx
