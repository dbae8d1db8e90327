#pragma once
// Helpers of the kernels' tangent rules (private to dsp; see grafx/dsp/forward_mode.h).

#include <grafx/dsp/forward_mode.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace grafx::dsp {

/// A kernel's dual inputs, handed through its custom Function's `apply` (which refuses dual
/// tensors) into the Function's context: a backward pass run inside ForwardMode recomputes
/// from them, so that its gradients carry the tangents of the saved values too (forward over
/// reverse). Empty outside forward mode.
struct SavedDuals {
  std::vector<at::Tensor> tensors;

  void save(torch::autograd::AutogradContext* ctx) const {
    if (!tensors.empty()) ctx->saved_data["duals"] = tensors;
  }
  /// The saved duals, or none.
  static std::vector<at::Tensor> of(torch::autograd::AutogradContext* ctx) {
    auto it = ctx->saved_data.find("duals");
    return it == ctx->saved_data.end() ? std::vector<at::Tensor>{} : it->second.toTensorVector();
  }
};

/// a + b, either of which may be undefined (a zero kept lazy).
inline at::Tensor add_lazy(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

/// A tangent, or zeros shaped like its primal where it has none.
inline at::Tensor or_zeros(const at::Tensor& tangent, const at::Tensor& primal) {
  return tangent.defined() ? tangent : at::zeros_like(primal);
}

}  // namespace grafx::dsp
