#pragma once
/// Memoryless distortions (GRAFX's TanhDistortion, PiecewiseTanhDistortion, PowerDistortion and
/// ChebyshevDistortion, with GRAFX's default options: a pre-gain g, undone after the tanh
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
/// | parameter        | shape | physical                 | init         |
/// |------------------|-------|--------------------------|--------------|
/// | `log_pre_gain`   | [1]   | `drive_db`, dB           | 0 dB         |
/// | `log_hardness`   | [2]   | `hardness` (e^raw)       | 1 (piecewise)|
/// | `z_threshold`    | [2]   | `threshold` (σ(raw))     | 0.5          |
/// | `basis_weights`  | [10]  | `weight` (tanh(raw))     | 0            |
///
/// Input and output: N×C×L.

#include <grafx/processors/descriptor.h>

namespace grafx {

ProcessorDescriptor tanh_distortion_descriptor();            ///< letter w
ProcessorDescriptor piecewise_tanh_distortion_descriptor();  ///< letter W
ProcessorDescriptor power_distortion_descriptor();           ///< letter Z
ProcessorDescriptor chebyshev_distortion_descriptor();       ///< letter J

class Distortion : public Processor {
 public:
  enum class Curve { kTanh, kPiecewiseTanh, kPower, kChebyshev };
  static constexpr int64_t kOrders = 10;  ///< GRAFX's max_order: terms u^0 … u^9

  Distortion(const ProcessorConfig& config, Curve curve);
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }

 private:
  Curve curve_;
};

}  // namespace grafx
