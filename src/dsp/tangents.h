#pragma once
// Helpers of the kernels' tangent rules (private to dsp; see grafx/dsp/forward_mode.h).

#include <grafx/dsp/forward_mode.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <initializer_list>
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

/// Every defined tensor on the CPU, none carrying a tangent: where a kernel's hand-written CPU
/// Function serves (elsewhere, its composed ATen form).
inline bool plain_on_cpu(std::initializer_list<at::Tensor> tensors) {
  for (const at::Tensor& t : tensors)
    if (t.defined() && (!t.device().is_cpu() || tangent_of(t).defined())) return false;
  return true;
}

/// The backward pass of a hand-written Function where its own loops cannot serve: recorded
/// (create_graph: the gradients must be differentiable again) or carrying the tangent of
/// `grad` (forward over reverse). Recomputes the Function's composed form from its saved
/// inputs under autograd, `composed(in)`, and returns its gradients, one slot per Function
/// input (`slots`). `inputs[i]` is input i, or undefined where no gradient is wanted; `in` holds
/// an alias of each wanted one (else the input itself), so that an input passed twice (dry and
/// wet of a pass-through, x as its own key) gets each slot's part, not their sum twice.
template <typename Composed>
torch::autograd::variable_list composed_backward(torch::autograd::AutogradContext* ctx,
                                                 const std::vector<at::Tensor>& inputs,
                                                 size_t slots, const at::Tensor& grad,
                                                 Composed composed) {
  const bool recorded = c10::GradMode::is_enabled();
  c10::AutoGradMode recording(true);
  std::vector<at::Tensor> in = inputs, wanted;
  std::vector<size_t> wanted_slots;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad() && ctx->needs_input_grad(i)) {
      in[i] = inputs[i].view_as(inputs[i]);
      wanted.push_back(in[i]), wanted_slots.push_back(i);
    }
  torch::autograd::variable_list result(slots);
  if (wanted.empty()) return result;
  const at::Tensor y   = composed(in);
  const auto gradients = torch::autograd::grad({y}, wanted, {grad}, recorded, recorded, true);
  for (size_t j = 0; j < wanted_slots.size(); ++j) result[wanted_slots[j]] = gradients[j];
  return result;
}

}  // namespace grafx::dsp
