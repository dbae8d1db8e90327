#pragma once
/// Memoryless distortions (GRAFX's TanhDistortion, PiecewiseTanhDistortion, PowerDistortion and
/// ChebyshevDistortion, with GRAFX's options and defaults: a pre-gain g, undone after the tanh
/// curves, no bias, no DC removal). Every channel the same; u = g·x.
///
/// | type                        | letter | y                                                    |
/// |-----------------------------|--------|------------------------------------------------------|
/// | `tanh_distortion`           | w      | tanh(u) / g                                          |
/// | `piecewise_tanh_distortion` | W      | tanh(u) between −k₋ and k₊, softer or harder beyond (below) |
/// | `power_distortion`          | Z      | Σ_{k<10} tanh(w_k)·u^k                               |
/// | `chebyshev_distortion`      | J      | Σ_{k<10} tanh(w_k)·T_k(u), T_0 = 1, T_1 = u, T_k = 2u·T_{k−1} − T_{k−2} |
///
/// Piecewise tanh, with k = σ(z) and hardness h = e^{raw} for the positive [0] and negative [1]
/// side: beyond k₊, y = a₊·tanh(h₊(u − k₊)) + tanh k₊ with a₊ = (1 − tanh² k₊)/h₊ (and the mirror
/// below −k₋), so the curve and its slope are continuous at the thresholds. GRAFX's code uses
/// a = (1 − tanh k)/h (its documentation says 1 − tanh²), which breaks the slope there.
///
/// Parameters: the table in docs/processors/distortion.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Options (GRAFX's constructor arguments; set in a graph file's configured type):
///
/// | option              | types            | default | effect                                       |
/// |---------------------|------------------|---------|----------------------------------------------|
/// | `pre_post_gain`     | tanh, piecewise  | true    | `log_pre_gain` before the curve; false: g = 1 |
/// | `inverse_post_gain` | tanh, piecewise  | true    | after the curve 1/g; false: its own `log_post_gain` (`output_gain_db`) |
/// | `use_bias`          | tanh             | false   | y = tanh(u + b) − tanh b, `bias` learned: even harmonics |
/// | `pre_gain`          | power, chebyshev | true    | `log_pre_gain` before the polynomial         |
/// | `max_order`         | power, chebyshev | 10      | K terms, k = 0 … K − 1 (2 to 20)              |
/// | `use_tanh`          | power, chebyshev | false   | each term squashed: tanh(u^k), tanh(T_k(u))   |
/// | `remove_dc`         | all              | false   | subtract each channel's mean over the whole signal first |
///
/// With `remove_dc` every output sample depends on the whole input (its temporal support is
/// unbounded, so chunked rendering renders such a graph whole).
///
/// Input and output: N×C×L.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor tanh_distortion_descriptor();            ///< letter w
ProcessorDescriptor piecewise_tanh_distortion_descriptor();  ///< letter W
ProcessorDescriptor power_distortion_descriptor();           ///< letter Z
ProcessorDescriptor chebyshev_distortion_descriptor();       ///< letter J

class Distortion : public Processor {
 public:
  enum class Curve { kTanh, kPiecewiseTanh, kPower, kChebyshev };
  static constexpr int64_t kOrders = 10;  ///< GRAFX's default max_order: terms u^0 … u^9

  Distortion(const ProcessorConfig& config, Curve curve);
  static std::vector<OptionSpec> option_specs(Curve curve);
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict&) const override;
  /// Sample by sample, its drive (and output gain) as controls; refused with remove_dc, which
  /// needs the whole signal.
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;

 private:
  bool tanh_curve() const { return curve_ == Curve::kTanh || curve_ == Curve::kPiecewiseTanh; }

  Curve curve_;
  bool pre_gain_;       // log_pre_gain is learned
  bool own_post_gain_;  // log_post_gain is learned (else 1/g after the tanh curves)
  bool bias_;           // tanh only
  bool remove_dc_;
  bool squash_terms_;         // power and Chebyshev: tanh of each term
  int64_t orders_ = kOrders;  // power and Chebyshev: number of terms
};

}  // namespace grafx
