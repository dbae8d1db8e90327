#include <grafx/dsp/convolution.h>
#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/dsp/surrogate_delay.h>
#include <grafx/processors/delay.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {

MultitapDelay::MultitapDelay(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      segment_(units::samples(kSegmentSeconds, config, "delay", "segment", 2 * kColourBins)) {}

std::vector<ParameterSpec> MultitapDelay::parameter_specs() const {
  auto delay_ms = [this](const at::Tensor& raw) {
    at::NoGradGuard no_grad;
    at::Tensor within  = dsp::surrogate_delay(raw, segment_).impulse_responses.argmax(-1);
    at::Tensor segment = at::arange(kTaps, within.options()).remainder(kSegments);
    return (within + segment * segment_).to(raw.scalar_type()) * (1000.0 / sample_rate_);
  };
  return {
      {"delay_z",
       {kTaps, 2},
       0.0,
       0.01,
       "delay_ms",
       "ms",
       "pole (re, im) of each tap's surrogate delay; taps 0-19 left, 20-39 right, one per 100 ms "
       "segment",
       delay_ms},
      {"log_fir_magnitude",
       {kTaps, kColourBins},
       0.0,
       0.01,
       "tap_gain_db",
       "dB",
       "colour of each tap: gain at 20 frequencies from 0 Hz to Nyquist (natural-log raw value)",
       units::log_gain_to_db}};
}

std::pair<at::Tensor, at::Tensor> MultitapDelay::impulse_responses(
    const TensorDict& parameters) const {
  at::Tensor log_magnitude = parameters.at("log_fir_magnitude");
  at::Tensor window        = constants_.get("window", log_magnitude.options(), [] {
    return dsp::zero_phase_window(kColourBins, at::TensorOptions(at::kDouble));
  });
  dsp::SurrogateDelay taps = dsp::surrogate_delay(parameters.at("delay_z"), segment_);
  at::Tensor colour        = dsp::zero_phase_fir(log_magnitude, window);  // N×40×39
  at::Tensor coloured = dsp::convolve(taps.impulse_responses, colour, dsp::ConvolutionMode::full);
  // Overlap-add the segments of each channel: segment m starts at m·S, and its coloured tap
  // starts kColourBins − 1 samples early (the colour filter's centre is lag 0).
  int64_t n = coloured.size(0), frame = coloured.size(2), half = kColourBins - 1;
  at::Tensor frames = coloured.view({n * 2, kSegments, frame}).transpose(1, 2);
  at::Tensor ir =
      at::col2im(frames, {1, kSegments * segment_}, {1, frame}, {1, 1}, {0, half}, {1, segment_});
  return {dsp::normalize_energy(ir.view({n, 2, kSegments * segment_})), taps.radii_loss.sum(-1)};
}

ProcessorOutput MultitapDelay::forward(const std::vector<at::Tensor>& inputs,
                                       const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  units::check_stereo(x, name());
  auto [ir, radii] = impulse_responses(parameters);
  return {{dsp::convolve(x, ir, dsp::ConvolutionMode::causal)}, {{"radii", radii}}};
}

}  // namespace grafx
