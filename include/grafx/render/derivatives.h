#pragma once
/// Derivatives of renders beyond the gradient: forward mode (Jacobian-vector products) and
/// Hessian-vector products, forward over reverse.
///
/// Forward mode pushes a direction through the render alongside the audio: every ATen operation
/// carries LibTorch's tangent, and grafx's kernels (convolutions, recursions, biquads) their own
/// tangent rules (grafx/dsp/forward_mode.h). One render gives the outputs and their derivative
/// along the direction, at about the cost of two renders, with no backward pass and no tape.
///
///   Parameters direction = {{"eq", {{"gain_db", at::randn_like(eq_gain)}}}};
///   TangentResult t = jvp(plan, processors, parameters, sources, direction);
///   // t.tangent = d outputs / dε of render(parameters + ε·direction) at ε = 0
///
/// A Hessian-vector product runs the gradient of a loss inside forward mode: the gradient's
/// tangent along v is H·v (forward over reverse), at the cost of about two gradients.
///
///   CurvatureResult c = hvp([&](const Parameters& p) {
///     return loss(render(plan, processors, p, sources).outputs, target);
///   }, parameters, direction);   // c.gradient, c.hessian_vector
///
/// Parameters a direction leaves out have a zero tangent. Surrogate parameters (the delay's
/// straight-through pole) carry their estimator's tangent: the one its gradient is the
/// transpose of.
#include <grafx/render/render.h>

#include <functional>

namespace grafx {

struct TangentResult {
  at::Tensor outputs;  ///< as render's
  at::Tensor tangent;  ///< their directional derivative, shaped like them
  /// The directional derivatives of the auxiliary losses, as render's aux_losses.
  std::map<std::string, TensorDict> aux_tangents;
};

/// Renders with a direction for the parameters (any subset, shaped like them) and, optionally,
/// for the sources. Throws RenderError [grafx.render.tangents] for a direction naming a type or
/// parameter the parameters lack, or shaped or typed otherwise.
TangentResult jvp(const RenderPlan& plan, const Processors& processors,
                  const Parameters& parameters, const at::Tensor& sources,
                  const Parameters& parameter_tangents, const at::Tensor& source_tangent = {},
                  const RenderOptions& options = {});

struct CurvatureResult {
  at::Tensor loss;            ///< the loss's value
  Parameters gradient;        ///< ∇loss, shaped like the parameters
  Parameters hessian_vector;  ///< H·v, shaped like the parameters
};

/// The gradient and Hessian-vector product of a scalar loss of the parameters along
/// `direction` (any subset of the parameters). The loss function is called once, with
/// parameters that carry the direction. Throws RenderError [grafx.render.tangents] as jvp does,
/// and for a loss that is not a scalar.
CurvatureResult hvp(const std::function<at::Tensor(const Parameters&)>& loss,
                    const Parameters& parameters, const Parameters& direction);

}  // namespace grafx
