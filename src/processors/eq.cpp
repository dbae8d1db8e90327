#include <grafx/dsp/convolution.h>
#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/eq.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {

std::string Equalizer::name() const {
  switch (channels_) {
    case EqChannels::stereo:
      return "eq_stereo";
    case EqChannels::mid_side:
      return "eq_midside";
    default:
      return "eq";
  }
}

std::vector<ParameterSpec> Equalizer::parameter_specs() const {
  std::vector<int64_t> shape{kBins};
  std::string filters = "";
  if (channels_ != EqChannels::mono) {
    shape.insert(shape.begin(), 2);
    filters = channels_ == EqChannels::stereo ? " of the left and right filter"
                                              : " of the mid and side filter";
  }
  return {{"log_magnitude", shape, 0.0, 0.01, "gain_db", "dB",
           "gain at 1024 frequencies from 0 Hz to Nyquist" + filters + " (natural-log raw value)",
           units::log_gain_to_db}};
}

ProcessorOutput Equalizer::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  if (channels_ != EqChannels::mono) units::check_stereo(x, name());
  at::Tensor window        = constants_.get("window", x.options(), [] {
    return dsp::zero_phase_window(kBins, at::TensorOptions(at::kDouble));
  });
  at::Tensor log_magnitude = parameters.at("log_magnitude");
  if (channels_ == EqChannels::mono) log_magnitude = log_magnitude.unsqueeze(1);  // N×1×1024
  at::Tensor fir = dsp::zero_phase_fir(log_magnitude, window);
  if (channels_ != EqChannels::mid_side)
    return {{dsp::convolve(x, fir, dsp::ConvolutionMode::zero_phase)}, {}};
  at::Tensor mid_side = dsp::convolve(dsp::to_mid_side(x), fir, dsp::ConvolutionMode::zero_phase);
  return {{dsp::from_mid_side(mid_side)}, {}};
}

}  // namespace grafx
