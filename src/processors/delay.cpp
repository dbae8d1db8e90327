#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/dsp/surrogate_delay.h>
#include <grafx/processors/delay.h>

#include "processors/units.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace grafx {

std::vector<OptionSpec> MultitapDelay::option_specs() {
  return {
      units::impulse_layout_option("stereo", {"stereo", "midside", "mono"}),
      OptionSpec::integer("segments", kSegments, 1, 100, "segments per impulse response"),
      OptionSpec::number("segment_ms", kSegmentSeconds * 1000, 5, 1000, "length of a segment"),
      OptionSpec::integer("taps_per_segment", 1, 1, 8, "taps within each segment, summed"),
      OptionSpec::flag("colour_taps", true, "colour each tap with its own zero-phase FIR"),
      OptionSpec::integer("colour_bins", kColourBins, 2, 256,
                          "log-magnitudes per colour filter (2B - 1 taps)"),
      OptionSpec::number("pre_delay_ms", 0, 0, 2000, "silence before the impulse response"),
  };
}

MultitapDelay::MultitapDelay(const ProcessorConfig& config) : sample_rate_(config.sample_rate) {
  ProcessorOptions options = resolve_options(option_specs(), config.options);
  layout_                  = units::impulse_layout(options);
  segments_                = int64_t(option_number(options, "segments"));
  taps_per_segment_        = int64_t(option_number(options, "taps_per_segment"));
  colour_                  = option_flag(options, "colour_taps");
  colour_bins_             = int64_t(option_number(options, "colour_bins"));
  segment_ = units::samples(option_number(options, "segment_ms") / 1000, config, "delay", "segment",
                            colour_ ? 2 * colour_bins_ : 2);
  pre_delay_ = int64_t(
      std::llround(option_number(options, "pre_delay_ms") / 1000 * double(config.sample_rate)));
}

int64_t MultitapDelay::n_taps() const {
  return dsp::n_impulse_responses(layout_) * segments_ * taps_per_segment_;
}

ProcessorDescriptor delay_descriptor() {
  auto d       = ProcessorDescriptor::of<MultitapDelay>("delay", 'd');
  d.summary    = "multitap delay: 20 taps per channel over 2 s, surrogate delays, coloured taps";
  d.grafx_name = "MultitapDelay";
  d.options    = MultitapDelay::option_specs();
  d.response   = ResponsePicture::kImpulse;
  d.console_position    = 6;
  d.random_pruning_rate = 0.63;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  // The delay's pole angles are trained through a straight-through estimator, normalised.
  d.gradient_check.surrogate_parameters = {"delay_z"};
  d.musical_prior                       = [](const PriorContext& c) {
    // Echoes in two or three segments per channel (the first tap of each), darker with
    // frequency; the rest silent; and sometimes no echo at all.
    const auto& delay                      = dynamic_cast<const MultitapDelay&>(c.processor);
    Random& r                              = c.random;
    const std::vector<ParameterSpec> specs = delay.parameter_specs();
    TensorDict settings;
    if (specs.size() > 1) {  // coloured taps: gains to set (bare taps have none)
      const int64_t segments = delay.segments(), per_segment = delay.taps_per_segment(),
                    bins = specs[1].shape[1], responses = delay.n_taps() / (segments * per_segment);
      at::Tensor gains = at::full({delay.n_taps(), bins}, -80.0, at::kDouble);
      at::Tensor tilt  = at::linspace(0, -12, bins, at::kDouble);
      for (int64_t channel = 0; channel < responses; ++channel)
        for (int64_t echo = 1; echo <= 3; ++echo) {
          int64_t segment = echo * int64_t(r.uniform(2, 4)) + channel;
          if (segment < segments)
            gains[(channel * segments + segment) * per_segment] = tilt - 4.0 * double(echo - 1);
        }
      settings["tap_gain_db"] = gains;
    }
    double wet      = r.uniform(0, 1) < 0.5 ? r.uniform(0.1, 0.3) : 0.02;
    settings["wet"] = at::full({1}, wet, at::kDouble);
    return settings;
  };
  return d;
}

std::vector<ParameterSpec> MultitapDelay::parameter_specs() const {
  const double ms_per_sample = 1000.0 / double(sample_rate_);
  const int64_t segment = segment_, segments = segments_, per_segment = taps_per_segment_,
                taps = n_taps(), pre_delay = pre_delay_;
  // Where each tap's segment starts, in samples.
  auto first_sample = [=](const at::TensorOptions& options) {
    return at::arange(taps, options).div(per_segment, "floor").remainder(segments) * segment +
           pre_delay;
  };
  auto delay_ms = [=](const at::Tensor& raw) {
    c10::NoGradGuard no_grad;
    at::Tensor within = dsp::surrogate_delay(raw, segment).impulse_responses.argmax(-1);
    return (within + first_sample(within.options())).to(raw.scalar_type()) * ms_per_sample;
  };
  // A pole at angle −2π·d/S peaks at sample d of its segment; radius tanh(4) keeps it sharp.
  auto delay_z = [=](const at::Tensor& ms) {
    at::Tensor within = (ms / ms_per_sample - first_sample(ms.options())).round();
    at::Tensor angle  = within * (-2 * M_PI / double(segment));
    return at::stack({4.0 * angle.cos(), 4.0 * angle.sin()}, -1);
  };
  const std::string layout         = layout_ == dsp::ImpulseLayout::kMono      ? ""
                                     : layout_ == dsp::ImpulseLayout::kMidSide ? ", mid taps then side"
                                                                               : ", left taps then right";
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("delay_z", {taps, 2})
          .physical("delay_ms", "ms", delay_ms, delay_z)
          .range(0.0, double(segments * segment + pre_delay) * ms_per_sample)
          .about("delay of each tap (" + std::to_string(per_segment) + " per segment of " +
                 std::to_string(segments) + layout +
                 "); raw: the pole (re, im) of its surrogate delay")};
  if (colour_)
    specs.push_back(ParameterSpec::raw("log_fir_magnitude", {taps, colour_bins_})
                        .physical("tap_gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
                        .about("colour of each tap: gain at " + std::to_string(colour_bins_) +
                               " frequencies from 0 Hz to Nyquist (natural-log raw value)"));
  return specs;
}

std::pair<at::Tensor, at::Tensor> MultitapDelay::impulse_responses(
    const TensorDict& parameters) const {
  // The soft surrogates: segmented_taps takes their peaks forward (straight through).
  const dsp::SurrogateDelay taps =
      dsp::surrogate_delay(parameters.at("delay_z"), segment_, {false, true});
  at::Tensor colour;  // N×T×(2B − 1), lag 0 at tap B − 1; undefined for bare taps
  if (colour_) {
    at::Tensor log_magnitude = parameters.at("log_fir_magnitude");
    const int64_t bins       = colour_bins_;
    at::Tensor window        = constants_.get("window", log_magnitude.options(), [bins] {
      return dsp::zero_phase_window(bins, at::TensorOptions(at::kDouble));
    });
    colour                   = dsp::zero_phase_fir(log_magnitude, window);
  }
  at::Tensor ir = dsp::segmented_taps(taps.impulse_responses, colour, segments_, taps_per_segment_,
                                      colour_ ? colour_bins_ - 1 : 0);
  if (pre_delay_ > 0) ir = at::constant_pad_nd(ir, {pre_delay_, 0});
  return {dsp::normalized_impulse_responses(ir, layout_), taps.radii_loss.sum(-1)};
}

ProcessorOutput MultitapDelay::forward(const std::vector<at::Tensor>& inputs,
                                       const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  auto [ir, radii] = impulse_responses(parameters);
  return {{units::convolve_impulse_responses(inputs[0], ir, layout_, name())}, {{"radii", radii}}};
}

std::optional<ProcessorOutput> MultitapDelay::forward_mixed(const std::vector<at::Tensor>& inputs,
                                                            const TensorDict& parameters,
                                                            const at::Tensor& wet) const {
  check_arguments(inputs, parameters);
  auto [ir, radii] = impulse_responses(parameters);
  return ProcessorOutput{{units::convolve_impulse_responses(
                             inputs[0], units::with_dry_path(ir, wet), layout_, name())},
                         {{"radii", radii}}};
}

TemporalSupport MultitapDelay::temporal_support(const TensorDict&) const {
  // The impulse response's length.
  return TemporalSupport::causal(pre_delay_ + segments_ * segment_ - 1);
}

at::Tensor MultitapDelay::response_support(const TensorDict& raw) const {
  return nonzero_lags(impulse_responses(raw).first);  // [1, C, K], causal
}

}  // namespace grafx
