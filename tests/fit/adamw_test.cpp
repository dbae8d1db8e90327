// AdamW against a hand computation of PyTorch's update rule, and its state.

#include <grafx/fit/adamw.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

TEST(AdamW, MatchesTheUpdateRule) {
  for (const auto& [beta1, beta2] : {std::pair{0.9, 0.999}, std::pair{0.8, 0.99}}) {
    at::Tensor p = at::tensor({1.0, -2.0}, at::kDouble).requires_grad_(true);
    Parameters parameters{{"eq", {{"w", p}}}};
    AdamWOptions options;
    options.lr           = 0.1;
    options.weight_decay = 0.01;
    options.beta1 = beta1, options.beta2 = beta2;
    AdamW optimizer(parameters, options);
    std::vector<double> value = {1.0, -2.0}, m = {0, 0}, v = {0, 0};
    for (int t = 1; t <= 5; ++t) {
      (p * p * p).sum().backward();  // gradient 3p²
      optimizer.step();
      for (size_t i = 0; i < 2; ++i) {
        double g = 3 * value[i] * value[i];
        value[i] *= 1 - 0.1 * 0.01;
        m[i]         = beta1 * m[i] + (1 - beta1) * g;
        v[i]         = beta2 * v[i] + (1 - beta2) * g * g;
        double m_hat = m[i] / (1 - std::pow(beta1, t)), v_hat = v[i] / (1 - std::pow(beta2, t));
        value[i] -= 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8);
        EXPECT_NEAR(p[int64_t(i)].item<double>(), value[i], 1e-12)
            << "step " << t << ", betas " << beta1 << ", " << beta2;
      }
      EXPECT_FALSE(p.grad().defined()) << "gradients are cleared";
    }
    EXPECT_EQ(optimizer.n_steps(), 5);
  }
}

TEST(AdamW, ParameterGroupsScaleTheirLearningRate) {
  // Three parameters with the same gradients: at lr, at 3·lr, and frozen. Adam's first step
  // is lr·g/(|g| + ε) and the weight decay lr·λ·p, so the moves are in the ratio of the rates.
  at::Tensor a = at::tensor({1.0, -2.0}, at::kDouble).requires_grad_(true);
  at::Tensor b = a.detach().clone().requires_grad_(true);
  at::Tensor c = a.detach().clone().requires_grad_(true);
  Parameters parameters{{"eq", {{"a", a}, {"b", b}}}, {"gain_pan", {{"c", c}}}};
  AdamWOptions options;
  options.lr           = 0.01;
  options.weight_decay = 0.1;
  options.lr_factors   = {{"eq.b", 3.0}, {"gain_pan.c", 0.0}};
  AdamW optimizer(parameters, options);
  (a * a * a + b * b * b + c * c * c).sum().backward();
  optimizer.step();
  const at::Tensor start = at::tensor({1.0, -2.0}, at::kDouble);
  EXPECT_TRUE(at::allclose((b - start) / (a - start), at::full({2}, 3.0, at::kDouble), 1e-9));
  EXPECT_NEAR((a - start)[0].item<double>(), -0.01 - 0.01 * 0.1, 1e-9);
  EXPECT_TRUE(at::equal(c, start)) << "a factor of 0 freezes the parameter";
}

TEST(AdamW, TakesTheSecondMomentFromCurvatureWhenGiven) {
  at::Tensor p = at::tensor({1.0, -2.0}, at::kDouble).requires_grad_(true);
  Parameters parameters{{"eq", {{"w", p}}}};
  AdamW optimizer(parameters, {0.1});
  std::vector<double> value = {1.0, -2.0}, m = {0, 0}, v = {0, 0};
  for (int t = 1; t <= 3; ++t) {
    (p * p * p).sum().backward();  // gradient 3p², Hessian diagonal 6p
    at::Tensor h = (6 * p).detach().abs();
    optimizer.step({{"eq", {{"w", h}}}});
    for (int i = 0; i < 2; ++i) {
      double x = value[size_t(i)], g = 3 * x * x, c = std::abs(6 * x);
      m[size_t(i)] = 0.9 * m[size_t(i)] + 0.1 * g;
      v[size_t(i)] = 0.999 * v[size_t(i)] + 0.001 * c * c;
      value[size_t(i)] -= 0.1 * (m[size_t(i)] / (1 - std::pow(0.9, t))) /
                          (std::sqrt(v[size_t(i)] / (1 - std::pow(0.999, t))) + 1e-8);
      EXPECT_NEAR(p[i].item<double>(), value[size_t(i)], 1e-12) << "step " << t;
    }
  }
}

TEST(AdamW, StateSavesRestoresAndResets) {
  at::Tensor p = at::ones({3}).requires_grad_(true);
  AdamW a({{"g", {{"x", p}}}});
  for (int t = 0; t < 3; ++t) {
    (p * p).sum().backward();
    a.step();
  }
  TensorDict state = a.state();
  EXPECT_EQ(state.at("step").item<int64_t>(), 3);
  at::Tensor q = p.detach().clone().requires_grad_(true);
  AdamW b({{"g", {{"x", q}}}});
  b.load_state(state);
  (p * p).sum().backward();
  a.step();
  (q * q).sum().backward();
  b.step();
  EXPECT_TRUE(at::allclose(p, q)) << "a restored optimizer continues exactly";
  b.reset();
  EXPECT_EQ(b.n_steps(), 0);
  EXPECT_EQ(b.state().at("exp_avg/g.x").abs().sum().item<double>(), 0.0);
  TensorDict broken = state;
  broken.erase("exp_avg/g.x");
  EXPECT_GRAFX_ERROR(b.load_state(broken), "grafx.fit.checkpoint", "lacks \"exp_avg/g.x\"");
}

}  // namespace
}  // namespace grafx
