#pragma once
// Gradients of tensor functions against central finite differences in float64.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace grafx::testing {

using TensorFunction = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

/// Expects the autograd gradients of loss = Σ w·f(inputs) (w fixed random weights) with respect
/// to each input to match central finite differences at `n_coordinates` spread coordinates, to
/// |error| ≤ tolerance·(1 + |numeric|). Inputs must be float64; all get gradients.
inline void expect_gradients_match(const TensorFunction& f, const std::vector<at::Tensor>& inputs,
                                   double tolerance = 1e-6, int64_t n_coordinates = 8) {
  std::vector<at::Tensor> leaves;
  for (const auto& x : inputs) leaves.push_back(x.detach().clone().requires_grad_(true));
  at::Tensor y       = f(leaves);
  at::Tensor weights = at::randn(y.sizes(), y.options().requires_grad(false));
  auto loss_of       = [&](const std::vector<at::Tensor>& xs) {
    return (f(xs) * weights).sum().item<double>();
  };
  (f(leaves) * weights).sum().backward();
  const double step = 1e-6;
  for (size_t i = 0; i < leaves.size(); ++i) {
    ASSERT_TRUE(leaves[i].grad().defined()) << "input " << i << " gets no gradient";
    at::Tensor grad = leaves[i].grad().reshape(-1);
    for (int64_t k = 0; k < std::min(n_coordinates, grad.numel()); ++k) {
      int64_t index = (k * 7919 + 3) % grad.numel();
      std::vector<at::Tensor> plus, minus;
      for (const auto& x : leaves)
        plus.push_back(x.detach().clone()), minus.push_back(x.detach().clone());
      plus[i].view(-1)[index] += step;
      minus[i].view(-1)[index] -= step;
      double numeric = (loss_of(plus) - loss_of(minus)) / (2 * step);
      EXPECT_NEAR(grad[index].item<double>(), numeric, tolerance * (1 + std::abs(numeric)))
          << "input " << i << ", coordinate " << index;
    }
  }
}

}  // namespace grafx::testing
