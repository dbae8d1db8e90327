#pragma once
/// Biquad filters with free coefficients, run exactly (grafx/dsp/biquad.h); one filter per node
/// on every channel. GRAFX's BiquadFilter, PoleZeroFilter and StateVariableFilter.
///
/// `biquad` (letter B): H(z) = (b0 + b1 z⁻¹ + b2 z⁻²)/(1 + a1 z⁻¹ + a2 z⁻²), with the denominator
/// inside the stability triangle (Nercessian): a1 = 2·tanh(ã1), a2 = ((2 − |a1|)·tanh(ã2) +
/// |a1|)/2.
///
/// Parameters: the table in docs/processors/filters.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// `pole_zero` (letter z): H(z) = g·(1 − q z⁻¹)(1 − q̄ z⁻¹)/((1 − p z⁻¹)(1 − p̄ z⁻¹)) with the
/// pole p = p̃·tanh|p̃|/|p̃| inside the unit circle and the zero q anywhere.
///
/// `state_variable_filter` (letter v): the bilinear-transformed state-variable filter mixing its
/// high-, band- and low-pass outputs: with G = tan(π·f/fs) and 2R = 1/Q,
///   b = [c_hp + c_bp·G + c_lp·G², 2c_lp·G² − 2c_hp, c_hp − c_bp·G + c_lp·G²],
///   a = [1 + G² + 2RG, 2G² − 2, 1 + G² − 2RG].
/// c_hp = c_lp = 1 with c_bp = 2R = 1/Q is the identity.
///
/// GRAFX parameterises the SVF's damping with a softplus and its frequency linearly; ours use
/// the cookbook filters' Q and log-frequency scale.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor biquad_descriptor();
ProcessorDescriptor pole_zero_descriptor();
ProcessorDescriptor state_variable_filter_descriptor();

class BiquadFilter : public LinearProcessor {
 public:
  explicit BiquadFilter(const ProcessorConfig&) {}
  std::string name() const override { return "biquad"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// The section's coefficients (b, a), each N×3.
  static std::pair<at::Tensor, at::Tensor> section(const TensorDict& parameters);
};

class PoleZeroFilter : public LinearProcessor {
 public:
  explicit PoleZeroFilter(const ProcessorConfig&) {}
  std::string name() const override { return "pole_zero"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// The section's coefficients (b, a), each N×3.
  static std::pair<at::Tensor, at::Tensor> section(const TensorDict& parameters);
};

class StateVariableFilter : public LinearProcessor {
 public:
  explicit StateVariableFilter(const ProcessorConfig& config) : sample_rate_(config.sample_rate) {}
  std::string name() const override { return "state_variable_filter"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// The section's coefficients (b, a), each N×3.
  std::pair<at::Tensor, at::Tensor> section(const TensorDict& parameters) const;
  SampleRate sample_rate_;
};

}  // namespace grafx
