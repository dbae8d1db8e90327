#include <grafx/loss/regularizers.h>

#include <grafx/dsp/forward_mode.h>
#include <grafx/error.h>

#include "loss/spectral.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <sstream>

namespace grafx {
namespace {

/// Σ x² over the channels and samples of N×C×L signals, [N]: one pass each way (the 2-norm
/// forward; backward 2g·x, in ATen operations, so a recorded backward differentiates again),
/// where autograd replays x·x and its sum in two passes forward and three backward. With a
/// tangent (forward mode), the product and sum, which carry it.
struct SumOfSquares : public torch::autograd::Function<SumOfSquares> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    return at::linalg_vector_norm(x, 2, {1, 2}).square();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {ctx->get_saved_variables()[0] * (2 * grads[0]).view({-1, 1, 1})};
  }
};

at::Tensor sum_of_squares(const at::Tensor& x) {
  return dsp::tangent_of(x).defined() ? (x * x).sum({1, 2}) : SumOfSquares::apply(x);
}

}  // namespace

at::Tensor gain_staging_loss(const at::Tensor& input, const at::Tensor& output) {
  detail::check_signal_pair(output, input, "gain staging loss");
  if (input.dim() != 3 || input.size(2) == 0) {
    std::ostringstream s;
    s << "gain staging loss: expected input and output of shape N×C×L, but got " << input.sizes();
    throw LossError("grafx.loss.shape", s.str());
  }
  // GRAFX's eps: a silent node costs nothing instead of giving log(0). The mean square through
  // sum_of_squares: autograd replays x.square().mean() in about seven passes (pow's backward
  // raises x to the power 1); the 2-norm squared would have no second derivative at silence.
  const double n  = double(input.size(1) * input.size(2));
  auto log_energy = [n](const at::Tensor& x) { return (sum_of_squares(x) / n + 1e-7).log(); };
  return (log_energy(output) - log_energy(input)).abs();
}

std::map<std::string, double> default_regularizer_weights() {
  return {{"gain_staging", 1e-3}, {"radii", 0.5}, {"eq_curvature", 0.03}};
}

at::Tensor regularization_loss(const TensorDict& aux_losses,
                               const std::map<std::string, double>& weights) {
  at::Tensor total;
  for (const auto& [key, loss] : aux_losses) {
    auto weight = weights.find(key);
    if (weight == weights.end()) {
      std::string known;
      for (const auto& [name, value] : weights) known += (known.empty() ? "" : ", ") + name;
      throw LossError("grafx.loss.unknown_regularizer",
                      "regularization loss: expected an auxiliary loss with a weight (" + known +
                          "), but got \"" + key + "\"");
    }
    if (weight->second == 0) continue;
    at::Tensor term = weight->second * loss.sum();
    total           = total.defined() ? total + term : term;
  }
  return total.defined() ? total : at::zeros({});
}

}  // namespace grafx
