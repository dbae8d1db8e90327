#pragma once
/// gain/pan (letter g): one gain per channel of a stereo signal (GRAFX's StereoGain).
///
///   y_c = x_c · exp(log_gain_c),  c ∈ {left, right}
///
/// Parameters: the table in docs/processors/stereo.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Input and output: N×2×L.
///
///   GainPan gain_pan({/*sample_rate=*/30000});
///   auto y = gain_pan.forward({x}, {{"log_gain", at::zeros({x.size(0), 2})}}).outputs[0];

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor gain_pan_descriptor();

class GainPan : public LinearProcessor {
 public:
  explicit GainPan(const ProcessorConfig& config) {}
  std::string name() const override { return "gain_pan"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// The mix folded into its matrix (not when automated).
  std::optional<ProcessorOutput> forward_mixed(const std::vector<at::Tensor>& inputs,
                                               const TensorDict& parameters,
                                               const at::Tensor& wet) const override;
  /// Sample by sample, its gains as controls a host may change (they glide).
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }
};

}  // namespace grafx
