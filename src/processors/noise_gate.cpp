#include <grafx/processors/noise_gate.h>

#include "processors/dynamics.h"

namespace grafx {
namespace {

detail::Dynamics dynamics(dsp::EnvelopeSmoothing smoothing, double sample_rate) {
  return {detail::GainCurve::noise_gate, smoothing, sample_rate};
}

}  // namespace

std::string NoiseGate::name() const {
  return smoothing_ == dsp::EnvelopeSmoothing::ballistics ? "noise_gate_ballistics" : "noise_gate";
}

std::vector<ParameterSpec> NoiseGate::parameter_specs() const {
  return dynamics(smoothing_, sample_rate_).parameter_specs();
}

ProcessorOutput NoiseGate::forward(const std::vector<at::Tensor>& inputs, const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return {{dynamics(smoothing_, sample_rate_).forward(inputs[0], parameters)}, {}};
}

}  // namespace grafx
