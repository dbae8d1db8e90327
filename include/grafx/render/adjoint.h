#pragma once
/// The explicit backward pass: a render whose gradients come from running its adjoint plan
/// (plan/adjoint_plan.h) step by step, instead of LibTorch's tape of the whole render.
///
/// The forward pass renders as `render` does, but keeps each step apart: the step's inputs and
/// parameter rows enter it as leaves, so that what autograd records is one processor call's
/// vector-Jacobian product and nothing else. The backward pass is the adjoint plan: it gathers
/// each step's output cotangents (lazily: rows nobody added to are never made), runs the step's
/// vector-Jacobian product, transposes the step's reads into the cotangents of earlier steps and
/// writes parameter and source gradients, with an observer after every step and the signal
/// hooks of RenderOptions applied where the autograd renderer applies them. Per type, a memory
/// policy chooses between keeping the step's forward pass and recomputing it from its inputs.
///
///   AdjointRender run(plan, processors, parameters, sources);
///   Gradients g = run.backward(dloss_doutputs);   // equals autograd's gradients
///
/// The gradients equal those of `render` followed by LibTorch's backward (tested on random
/// multi-port graphs, to 1e-5 in float32 and 1e-10 in float64).
#include <grafx/plan/adjoint_plan.h>
#include <grafx/render/render.h>

#include <functional>
#include <memory>

namespace grafx {

/// What a backward observer sees after each adjoint step.
struct BackwardStepView {
  int64_t index           = 0;  ///< in the adjoint plan
  const AdjointStep* step = nullptr;
  std::vector<NodeId> nodes;  ///< graph ids of the step's nodes
  /// The step's output cotangents, per outlet [B, m, C, L]; undefined: a zero never made.
  std::vector<at::Tensor> output_cotangents;
  /// The cotangents it passes to each inlet of step->inlets, [B, m, C, L] (undefined: zero).
  std::vector<at::Tensor> input_cotangents;
  /// The gradients of its parameter rows, [m, ...] or [B, m, ...] (empty without any).
  TensorDict parameter_gradients;
};

struct AdjointOptions {
  RenderOptions render;  ///< frozen types, gradient and signal hooks, finiteness checks
  /// Memory policy per type (kSave for the others).
  std::map<std::string, MemoryPolicy> memory;
  /// Whether the sources get a gradient.
  bool source_gradients = true;
  std::function<void(const BackwardStepView&)> backward_observer;
};

struct Gradients {
  /// Shaped like the parameters; every type but the frozen ones, zeros where none arrives.
  Parameters parameters;
  at::Tensor sources;  ///< shaped like the sources (undefined unless source_gradients)
};

class AdjointRender {
 public:
  /// Renders. Throws RenderError as `render` does. Keeps references to `plan` and
  /// `processors`, which must outlive it.
  AdjointRender(const RenderPlan& plan, const Processors& processors, const Parameters& parameters,
                const at::Tensor& sources, AdjointOptions options = {});
  ~AdjointRender();
  AdjointRender(AdjointRender&&) noexcept;

  /// The outputs and auxiliary losses, as `render` gives them (without autograd history).
  const RenderResult& result() const;
  const AdjointPlan& adjoint_plan() const;

  /// Runs the adjoint plan for cotangents of the outputs (shaped like them) and, optionally, of
  /// auxiliary losses (type -> name -> shaped like result().aux_losses). Runs once: the saved
  /// forward passes are released as it goes. Throws RenderError [grafx.render.tangents] for
  /// cotangents shaped otherwise, [grafx.render.adjoint] when run twice.
  Gradients backward(const at::Tensor& output_cotangent,
                     const std::map<std::string, TensorDict>& aux_cotangents = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace grafx
