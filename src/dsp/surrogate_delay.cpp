#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/surrogate_delay.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/tangents.h"

#include <cmath>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr double kEpsilon = 1e-7;  // GRAFX's guard against division by zero and 0^0

struct NormalizedGradient : public torch::autograd::Function<NormalizedGradient> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& z) { return z.clone(); }
  static variable_list backward(AutogradContext*, variable_list grads) {
    const at::Tensor& g = grads[0];
    return {g / (g.pow(2).sum(-1, true).sqrt() + kEpsilon)};
  }
};

struct StraightThroughOneHot : public torch::autograd::Function<StraightThroughOneHot> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& soft) {
    return at::one_hot(soft.argmax(-1), soft.size(-1)).to(soft.scalar_type());
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

void check_z(const at::Tensor& z, const char* where) {
  TORCH_CHECK(z.dim() >= 1 && z.size(-1) == 2 && at::isFloatingType(z.scalar_type()), where,
              ": expected real and imaginary parts [..., 2] of float or double, but got ",
              z.sizes(), " ", z.scalar_type());
}

}  // namespace

at::Tensor normalized_gradient(const at::Tensor& z) {
  check_z(z, "normalized_gradient");
  auto [primal, tangent] = unpack_dual(z);  // the identity's tangent: the tangent itself
  return make_dual(NormalizedGradient::apply(primal), tangent);
}

at::Tensor straight_through_one_hot(const at::Tensor& soft) {
  // The estimator's tangent, like its gradient, passes straight through.
  auto [primal, tangent] = unpack_dual(soft);
  return make_dual(StraightThroughOneHot::apply(primal), tangent);
}

SurrogateDelay surrogate_delay(const at::Tensor& z, int64_t n,
                               const SurrogateDelayOptions& options) {
  check_z(z, "surrogate_delay");
  TORCH_CHECK(n >= 2, "surrogate_delay: expected a length of at least 2, but got ", n);
  SurrogateDelay delay;
  delay.radii_loss = (1 - at::view_as_complex(z.contiguous()).abs().tanh()).pow(2);
  at::Tensor pole =
      at::view_as_complex((options.normalize_gradients ? normalized_gradient(z) : z).contiguous());
  at::Tensor radius = pole.abs();
  pole = pole * (radius.tanh() / (radius + kEpsilon)) + kEpsilon;  // inside the unit disk
  // pole^k = exp(k·log pole) for k = 0 … K − 1, as GRAFX computes it, but as the products
  // pole^(B·j) · pole^i of two tables of about √K powers each (k = B·j + i, 0 <= i < B): two
  // small complex exponentials and one product per power, where a complex exponential per power
  // was most of the delay's forward pass.
  const int64_t powers = n / 2 + 1, block = int64_t(std::ceil(std::sqrt(double(powers)))),
                blocks      = (powers + block - 1) / block;
  const at::Tensor log_pole = pole.log().unsqueeze(-1);
  const at::Tensor within   = at::exp(log_pole * at::arange(block, z.options()));
  const at::Tensor across   = at::exp(log_pole * at::arange(blocks, z.options()).mul_(block));
  const at::Tensor all      = (across.unsqueeze(-1) * within.unsqueeze(-2)).flatten(-2);
  at::Tensor soft           = irfft(all.narrow(-1, 0, powers), n);
  delay.impulse_responses   = options.straight_through ? straight_through_one_hot(soft) : soft;
  return delay;
}

at::Tensor delay_to_z(const at::Tensor& delay_samples, int64_t n, double radius) {
  TORCH_CHECK(radius > 0 && radius < 1, "delay_to_z: expected a radius in (0, 1), but got ",
              radius);
  at::Tensor angle  = delay_samples * (-2 * M_PI / double(n));
  double raw_radius = std::atanh(radius);  // tanh|z̃| = radius, up to the 1e−7 guards
  return at::stack({angle.cos() * raw_radius, angle.sin() * raw_radius}, -1);
}

}  // namespace grafx::dsp
