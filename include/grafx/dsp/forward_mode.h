#pragma once
/// Forward-mode derivatives (tangents) through grafx's kernels.
///
/// LibTorch's forward mode carries a tangent on each "dual" tensor and pushes it through ATen
/// operations; its C++ custom Functions have no tangent rule ("jvp is not implemented for the
/// c++ API of custom Function"). grafx's kernels (the FFT convolution, the linear recursions,
/// ballistics, the biquad cascade, the surrogate delay's estimators) therefore carry their own
/// rules: while a ForwardMode scope is open, each kernel unpacks its dual inputs, runs on the
/// primals and returns its output with the tangent its rule gives. Convolution and the
/// recursions are linear in their signal, so their tangent is the same operation on the
/// tangent plus the terms of their coefficients' tangents (docs/derivatives.md).
///
/// The rules are built from the kernels themselves and ATen operations, so a reverse pass over
/// a dual computation propagates tangents too: a gradient taken inside a ForwardMode scope with
/// dual parameters carries the Hessian-vector product (forward over reverse).
///
///   ForwardMode mode;
///   at::Tensor x  = make_dual(signal, direction);
///   auto [y, dy]  = unpack_dual(convolve(x, h));   // dy = convolve(direction, h)
#include <ATen/Tensor.h>

#include <cstdint>
#include <utility>

namespace grafx::dsp {

/// Opens LibTorch's forward-mode level for its lifetime (scopes nest: inner ones share the
/// outer level; a level opened elsewhere, e.g. by PyTorch's forward_ad.dual_level, is shared
/// too). Tangents exist only inside one; the kernels carry them inside any.
class ForwardMode {
 public:
  ForwardMode();
  ~ForwardMode();
  ForwardMode(const ForwardMode&)            = delete;
  ForwardMode& operator=(const ForwardMode&) = delete;
};

/// `primal` carrying `tangent` (same shape and dtype); `primal` itself when `tangent` is
/// undefined. Needs an open forward-mode level.
at::Tensor make_dual(const at::Tensor& primal, const at::Tensor& tangent);

/// The primal and tangent of a tensor (tangent undefined when it carries none). The primal
/// keeps the tensor's reverse-mode history.
std::pair<at::Tensor, at::Tensor> unpack_dual(const at::Tensor& t);

/// The tangent of a tensor, or undefined.
at::Tensor tangent_of(const at::Tensor& t);

}  // namespace grafx::dsp
