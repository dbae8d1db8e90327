#pragma once
/// AdamW (Loshchilov & Hutter), as PyTorch's torch.optim.AdamW computes it, on a graph's
/// Parameters, with state that can be saved, restored and reset (the pruning paper re-creates
/// its optimizer every 500 steps).
///
///   AdamW optimizer(parameters, {/*lr=*/0.01});
///   loss.backward();
///   optimizer.step();        // uses and then clears the gradients

#include <grafx/render/render.h>

#include <cstdint>
#include <map>
#include <string>

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

  int64_t n_steps() const { return n_steps_; }
  /// Sets the learning rate of the next steps (a schedule's).
  void set_lr(double lr) { options_.lr = lr; }
  const AdamWOptions& options() const { return options_; }
  /// The moment estimates as named tensors ("exp_avg/<type>.<name>", "exp_avg_sq/...") plus
  /// "step", for checkpoints; `load_state` restores them (IoError-free: FitError on mismatch).
  TensorDict state() const;
  void load_state(const TensorDict& state);

 private:
  Parameters parameters_;
  AdamWOptions options_;
  TensorDict exp_avg_, exp_avg_sq_;  // by "<type>.<name>"
  int64_t n_steps_ = 0;
};

}  // namespace grafx
