#pragma once
// The shared implementation of the compressor and the noise gate (private to the library):
// level detector, envelope smoothing and gain computer of grafx/processors/compressor.h.

#include <grafx/dsp/recursion.h>
#include <grafx/processors/processor.h>

namespace grafx::detail {

enum class GainCurve { compressor, noise_gate };

struct Dynamics {
  GainCurve curve;
  dsp::EnvelopeSmoothing smoothing;
  double sample_rate;

  std::vector<ParameterSpec> parameter_specs() const;
  /// y = exp(gain(log-energy envelope)) · x, the same gain on every channel.
  at::Tensor forward(const at::Tensor& x, const TensorDict& parameters) const;
};

}  // namespace grafx::detail
