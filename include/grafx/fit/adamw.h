#pragma once
/// AdamW (Loshchilov & Hutter), as PyTorch's torch.optim.AdamW computes it, on a graph's
/// Parameters, with state that can be saved, restored and reset (the pruning paper re-creates
/// its optimizer every 500 steps).
///
///   AdamW optimizer(parameters, {/*lr=*/0.01});
///   loss.backward();
///   optimizer.step();        // uses and then clears the gradients
///
/// Fused: the optimizer keeps every parameter's values, and its moments, in one flat buffer
/// (each parameter tensor is rebound to its slice of it, so the caller's tensors stay the
/// parameters), and an update is a dozen operations over all of them at once, whatever their
/// number: on a GPU a dozen kernels instead of a chain per tensor. The update can also run as
/// device work alone, with nothing read back (`prepare`, `update`, `count_step`): what a fit
/// step captured as a CUDA graph replays.

#include <grafx/render/render.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grafx {

struct AdamWOptions {
  double lr           = 0.01;
  double beta1        = 0.9;
  double beta2        = 0.999;
  double eps          = 1e-8;
  double weight_decay = 0.0;  ///< decoupled; the pruning paper uses 0
  /// Factors on lr for some parameters, by "<type>.<name>" (parameter groups; 1 elsewhere).
  std::map<std::string, double> lr_factors;
};

class AdamW {
 public:
  /// Takes the parameters (all of one dtype, on one device; FitError [grafx.fit.options]
  /// otherwise) and rebinds each to its slice of the optimizer's flat buffer, values kept.
  AdamW(Parameters parameters, AdamWOptions options = {});

  /// One update of every parameter that has a gradient, then the gradients are cleared.
  void step();
  /// The same with the second moment taken from `curvature` (shaped like the parameters)
  /// instead of the gradients, as AdaHessian (Yao et al., 2021) does with an estimate of the
  /// Hessian's diagonal.
  void step(const Parameters& curvature);
  /// Clears the gradients without updating.
  void zero_grad();
  /// Forgets the moment estimates and the step count (a fresh optimizer on the same tensors).
  void reset();

  // ---- an update as device work alone ------------------------------------------------------

  /// Writes the scalars of the next update (the learning rate, the bias corrections of step
  /// n_steps() + 1) to the device, where `update` reads them: outside a captured graph, before
  /// each of its replays.
  void prepare();
  /// What an update did, as device tensors: reading one waits for the device.
  struct Update {
    at::Tensor gradient_norm;  ///< the global norm of the gradients before clipping (float64)
    at::Tensor applied;        ///< bool: the update was made (nothing changes otherwise)
  };
  /// The update `prepare` set up, with no host read: the gradients of the parameters that have
  /// one, scaled to a global norm of at most `max_gradient_norm` (0: not scaled), applied unless
  /// their norm or `loss` (when given) is not finite, in which case the values and moments stay
  /// as they were. The gradients are cleared. Call `count_step` once `applied` reads true.
  Update update(double max_gradient_norm = 0, const at::Tensor& loss = {},
                const Parameters& curvature = {});
  void count_step() { ++n_steps_; }

  int64_t n_steps() const { return n_steps_; }
  /// Sets the learning rate of the next steps (a schedule's).
  void set_lr(double lr) { options_.lr = lr; }
  const AdamWOptions& options() const { return options_; }
  /// The moment estimates as named tensors ("exp_avg/<type>.<name>", "exp_avg_sq/...") plus
  /// "step", for checkpoints; `load_state` restores them (IoError-free: FitError on mismatch).
  TensorDict state() const;
  void load_state(const TensorDict& state);

 private:
  /// A parameter's place in the flat buffers.
  struct Slot {
    std::string key;  ///< "<type>.<name>"
    at::Tensor parameter;
    int64_t offset = 0, numel = 0;
  };
  /// The flat tensor of each slot's gradient (zeros where none) and the mask of the elements
  /// that have one (cached per pattern of slots with gradients).
  std::pair<at::Tensor, at::Tensor> gathered(const Parameters& curvature,
                                             at::Tensor* flat_curvature);

  std::vector<Slot> slots_;
  AdamWOptions options_;
  at::Tensor values_, exp_avg_, exp_avg_sq_;  // flat, one element per parameter element
  at::Tensor lr_factors_;                     // flat; undefined when every factor is 1
  at::Tensor padding_;                        // zeros: the gradients of the gaps between slices
  at::Tensor scalars_;  // on the device: lr, 1 − β₁ᵗ, 1 − β₂ᵗ of the next update (prepare)
  std::map<std::vector<bool>, at::Tensor> masks_;  // by which slots have gradients
  int64_t n_steps_ = 0;
};

}  // namespace grafx
