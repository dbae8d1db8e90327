#include <grafx/processors/compressor.h>

#include "processors/dynamics.h"

namespace grafx {
namespace {

detail::Dynamics dynamics(dsp::EnvelopeSmoothing smoothing, double sample_rate) {
  return {detail::GainCurve::compressor, smoothing, sample_rate};
}

}  // namespace

std::string Compressor::name() const {
  return smoothing_ == dsp::EnvelopeSmoothing::ballistics ? "compressor_ballistics" : "compressor";
}

std::vector<ParameterSpec> Compressor::parameter_specs() const {
  return dynamics(smoothing_, sample_rate_).parameter_specs();
}

ProcessorOutput Compressor::forward(const std::vector<at::Tensor>& inputs, const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return {{dynamics(smoothing_, sample_rate_).forward(inputs[0], parameters)}, {}};
}

}  // namespace grafx
