#pragma once
// Signals and checks shared by the loss tests.

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace grafx::testing {

/// Deterministic broadband stereo test signal [2, n_samples], float64; the same formula as
/// test_signal() in tests/loss/make_golden.py.
inline at::Tensor test_signal(int64_t n_samples, double sample_rate, int seed) {
  const double pi = std::acos(-1.0);
  at::Tensor n = at::arange(n_samples, at::kDouble), t = n / sample_rate;
  std::vector<at::Tensor> channels;
  for (int c = 0; c < 2; ++c) {
    const double k = seed + 3 * c;
    channels.push_back(0.5 * at::sin(2 * pi * (220.0 * (k + 1)) * t + 0.1 * k) +
                       0.2 * at::sin(2 * pi * (1700.0 + 310.0 * k) * t + 0.7) +
                       0.1 * at::cos(2.1e-5 * (k + 1) * n * n) +
                       0.05 * at::sin(0.9 * n + k) * at::exp(-t));
  }
  return at::stack(channels);
}

/// Largest |autograd gradient − central finite difference| over `n_checks` coordinates of `x`
/// (float64), relative to the largest gradient magnitude.
inline double gradient_error(const std::function<at::Tensor(const at::Tensor&)>& f,
                             const at::Tensor& x, int64_t n_checks, double step = 1e-6) {
  at::Tensor input = x.detach().clone().requires_grad_(true);
  f(input).backward();
  at::Tensor grad      = input.grad().reshape(-1);
  at::Tensor flat      = x.detach().clone().reshape(-1);
  double worst         = 0.0;
  const int64_t stride = std::max<int64_t>(1, flat.numel() / n_checks);
  for (int64_t i = 0; i < flat.numel(); i += stride) {
    const double saved = flat[i].item<double>();
    flat[i]            = saved + step;
    const double up    = f(flat.view(x.sizes())).item<double>();
    flat[i]            = saved - step;
    const double down  = f(flat.view(x.sizes())).item<double>();
    flat[i]            = saved;
    worst = std::max(worst, std::abs((up - down) / (2 * step) - grad[i].item<double>()));
  }
  return worst / grad.abs().max().item<double>();
}

}  // namespace grafx::testing
