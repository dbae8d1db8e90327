#include <grafx/dsp/convolution.h>
#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/dsp/surrogate_delay.h>
#include <grafx/processors/delay.h>

#include "processors/units.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace grafx {

MultitapDelay::MultitapDelay(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      segment_(units::samples(kSegmentSeconds, config, "delay", "segment", 2 * kColourBins)) {}

ProcessorDescriptor delay_descriptor() {
  auto d       = ProcessorDescriptor::of<MultitapDelay>("delay", 'd');
  d.summary    = "multitap delay: 20 taps per channel over 2 s, surrogate delays, coloured taps";
  d.grafx_name = "MultitapDelay";
  d.response   = ResponsePicture::kImpulse;
  d.console_position    = 6;
  d.random_pruning_rate = 0.63;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  // The delay's pole angles are trained through a straight-through estimator, normalised.
  d.gradient_check.surrogate_parameters = {"delay_z"};
  d.musical_prior                       = [](const PriorContext& c) {
    // Echoes in two or three segments per channel, darker with frequency; the rest silent; and
    // sometimes no echo at all.
    constexpr int64_t kTaps = MultitapDelay::kTaps, kSegments = MultitapDelay::kSegments,
                      kColourBins = MultitapDelay::kColourBins;
    Random& r                     = c.random;
    at::Tensor gains              = at::full({kTaps, kColourBins}, -80.0, at::kDouble);
    at::Tensor tilt               = at::linspace(0, -12, kColourBins, at::kDouble);
    for (int64_t channel = 0; channel < 2; ++channel)
      for (int64_t echo = 1; echo <= 3; ++echo) {
        int64_t segment = echo * int64_t(r.uniform(2, 4)) + channel;
        if (segment < kSegments)
          gains[channel * kSegments + segment] = tilt - 4.0 * double(echo - 1);
      }
    double wet = r.uniform(0, 1) < 0.5 ? r.uniform(0.1, 0.3) : 0.02;
    return TensorDict{{"tap_gain_db", gains}, {"wet", at::full({1}, wet, at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> MultitapDelay::parameter_specs() const {
  const double ms_per_sample = 1000.0 / double(sample_rate_);
  const int64_t segment      = segment_;
  auto delay_ms              = [=](const at::Tensor& raw) {
    c10::NoGradGuard no_grad;
    at::Tensor within = dsp::surrogate_delay(raw, segment).impulse_responses.argmax(-1);
    at::Tensor first  = at::arange(kTaps, within.options()).remainder(kSegments) * segment;
    return (within + first).to(raw.scalar_type()) * ms_per_sample;
  };
  // A pole at angle −2π·d/S peaks at sample d of its segment; radius tanh(4) keeps it sharp.
  auto delay_z = [=](const at::Tensor& ms) {
    at::Tensor first  = at::arange(kTaps, ms.options()).remainder(kSegments) * segment;
    at::Tensor within = (ms / ms_per_sample - first).round();
    at::Tensor angle  = within * (-2 * M_PI / double(segment));
    return at::stack({4.0 * angle.cos(), 4.0 * angle.sin()}, -1);
  };
  return {ParameterSpec::raw("delay_z", {kTaps, 2})
              .physical("delay_ms", "ms", delay_ms, delay_z)
              .range(0.0, double(kTaps / 2 * segment) * ms_per_sample)
              .about("delay of each tap; taps 0-19 left, 20-39 right, tap k within 100 ms segment "
                     "k mod 20 (raw: the pole (re, im) of its surrogate delay)"),
          ParameterSpec::raw("log_fir_magnitude", {kTaps, kColourBins})
              .physical("tap_gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
              .about("colour of each tap: gain at 20 frequencies from 0 Hz to Nyquist "
                     "(natural-log raw value)")};
}

std::pair<at::Tensor, at::Tensor> MultitapDelay::impulse_responses(
    const TensorDict& parameters) const {
  at::Tensor log_magnitude = parameters.at("log_fir_magnitude");
  at::Tensor window        = constants_.get("window", log_magnitude.options(), [] {
    return dsp::zero_phase_window(kColourBins, at::TensorOptions(at::kDouble));
  });
  dsp::SurrogateDelay taps = dsp::surrogate_delay(parameters.at("delay_z"), segment_);
  at::Tensor colour        = dsp::zero_phase_fir(log_magnitude, window);  // N×40×39
  at::Tensor coloured = dsp::convolve(taps.impulse_responses, colour, dsp::ConvolutionMode::kFull);
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
  const at::Tensor x = units::as_stereo(inputs[0], name());
  auto [ir, radii]   = impulse_responses(parameters);
  return {{dsp::convolve(x, ir, dsp::ConvolutionMode::kCausal)}, {{"radii", radii}}};
}

TemporalSupport MultitapDelay::temporal_support(const TensorDict&) const {
  return TemporalSupport::causal(kSegments * segment_ - 1);  // the impulse response's length
}

}  // namespace grafx
