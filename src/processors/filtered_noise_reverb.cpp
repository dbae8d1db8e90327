#include <grafx/dsp/biquad.h>
#include <grafx/dsp/convolution.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/filtered_noise_reverb.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

/// Decay rate in nepers per sample of a 60 dB decay over `ms` milliseconds.
double rate_of(double ms, SampleRate sample_rate) {
  return -3.0 * std::log(10.0) / (ms * 1e-3 * double(sample_rate));
}

}  // namespace

std::vector<OptionSpec> FilteredNoiseReverb::option_specs() {
  return {units::impulse_layout_option("midside", {"midside", "stereo", "mono"}),
          OptionSpec::flag("use_fade_in", false,
                           "subtract a faster decay from each band's envelope: it swells in")};
}

FilteredNoiseReverb::FilteredNoiseReverb(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      length_(
          units::samples(kLengthSeconds, config, "filtered_noise_reverb", "impulse response", 2)) {
  ProcessorOptions options = resolve_options(option_specs(), config.options);
  layout_                  = units::impulse_layout(options);
  fade_in_                 = option_flag(options, "use_fade_in");
}

ProcessorDescriptor filtered_noise_reverb_descriptor() {
  auto d = ProcessorDescriptor::of<FilteredNoiseReverb>("filtered_noise_reverb", 'R');
  d.summary =
      "reverb: 2 s of mid/side noise in 12 Linkwitz-Riley bands, each with its decay time and "
      "gain, energy-normalised";
  d.grafx_name    = "FilteredNoiseShapingReverb";
  d.options       = FilteredNoiseReverb::option_specs();
  d.response      = ResponsePicture::kEnergyDecay;
  d.gain_staging  = true;  // a reverb, as the paper's
  d.musical_prior = [](const PriorContext& c) {
    // A room: longer and louder at low frequencies, the side a little quieter.
    Random& r        = c.random;
    const double low = r.uniform(600, 1600);
    at::Tensor decay = at::linspace(low, low * 0.35, FilteredNoiseReverb::kBands, at::kDouble);
    at::Tensor darker =
        at::linspace(0.0, -r.uniform(6, 15), FilteredNoiseReverb::kBands, at::kDouble);
    const double side_db   = -r.uniform(0, 6);
    const int64_t channels = c.processor.parameter_specs()[0].shape[0];
    TensorDict settings{
        {"decay_ms", at::stack({decay, decay * r.uniform(0.8, 1.0)}).narrow(0, 0, channels)},
        {"gain_db", at::stack({darker, darker + side_db}).narrow(0, 0, channels)},
        {"wet", at::full({1}, r.uniform(0.1, 0.35), at::kDouble)}};
    if (c.processor.parameter_specs().size() > 2) {  // a gentle swell
      settings["fade_in_position"] =
          at::full({channels, FilteredNoiseReverb::kBands}, r.uniform(0.3, 0.7), at::kDouble);
      settings["fade_in_depth"] =
          at::full({channels, FilteredNoiseReverb::kBands}, r.uniform(0.2, 0.6), at::kDouble);
    }
    return settings;
  };
  return d;
}

std::vector<ParameterSpec> FilteredNoiseReverb::parameter_specs() const {
  const double d_min               = rate_of(kMinDecayMs, sample_rate_),
               d_max               = rate_of(kMaxDecayMs, sample_rate_);
  const double ms_per_nepers       = -3.0 * std::log(10.0) * 1e3 / double(sample_rate_);
  const int64_t channels           = dsp::n_impulse_responses(layout_);
  const auto share                 = [](const at::Tensor& z) { return z.sigmoid(); };
  const auto logit                 = [](const at::Tensor& p) { return p.logit(); };
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("z_decay", {channels, kBands})
          .physical(
              "decay_ms", "ms",
              [=](const at::Tensor& z) {
                return ms_per_nepers / (z.sigmoid() * (d_max - d_min) + d_min);
              },
              [=](const at::Tensor& ms) {
                return ((ms_per_nepers / ms - d_min) / (d_max - d_min)).logit();
              })
          .range(kMinDecayMs, kMaxDecayMs)
          .about("time each band of each noise takes to decay by 60 dB"),
      units::gain_spec("log_gain", {channels, kBands})
          .about("level of each band of each noise (relative: the impulse response is "
                 "energy-normalised)")};
  if (fade_in_) {
    specs.push_back(ParameterSpec::raw("log_fade_in", {channels, kBands})
                        .physical("fade_in_position", "ratio", share, logit)
                        .range(0, 1)
                        .about("decay rate of the subtracted envelope: 0 the fastest (50 ms), 1 "
                               "the band's own"));
    specs.push_back(ParameterSpec::raw("z_fade_in_gain", {channels, kBands})
                        .physical("fade_in_depth", "ratio", share, logit)
                        .range(0, 1)
                        .about("share of the band's start the fade-in removes"));
  }
  return specs;
}

std::vector<double> FilteredNoiseReverb::crossovers_hz() const {
  const double lo = std::log(kLowestHz), hi = std::log(std::min(kHighestHz, 0.45 * sample_rate_));
  std::vector<double> hz;
  for (int64_t i = 1; i < 2 * kBands - 1; i += 2)
    hz.push_back(std::exp(lo + (hi - lo) * double(i) / double(2 * kBands - 2)));
  return hz;
}

at::Tensor FilteredNoiseReverb::band_noise() const {
  // Each crossover splits what is left above the previous one: a low band, and the rest.
  at::Tensor rest = dsp::uniform_noise(2, length_, kNoiseSeed);  // [2, L] float64
  std::vector<at::Tensor> bands;
  auto filtfilt = [](const at::Tensor& x, const std::pair<at::Tensor, at::Tensor>& section) {
    at::Tensor b = section.first.view({1, 1, 3}), a = section.second.view({1, 1, 3});
    return dsp::biquad_cascade(dsp::biquad_cascade(x, b, a), b, a, /*reverse=*/true);
  };
  for (double hz : crossovers_hz()) {
    at::Tensor omega = at::full({1}, 2 * M_PI * hz / double(sample_rate_), at::kDouble);
    at::Tensor q = at::full({1}, M_SQRT1_2, at::kDouble), zero = at::zeros({1}, at::kDouble);
    bands.push_back(
        filtfilt(rest, dsp::cookbook_biquad(dsp::CookbookShape::kLowpass, omega, q, zero)));
    rest = filtfilt(rest, dsp::cookbook_biquad(dsp::CookbookShape::kHighpass, omega, q, zero));
  }
  bands.push_back(rest);
  return at::stack(bands, 1);  // [2, K, L]
}

at::Tensor FilteredNoiseReverb::impulse_responses(const TensorDict& parameters,
                                                  const at::TensorOptions& options) const {
  at::Tensor rate  = parameters.at("z_decay");  // N×C×K
  at::Tensor noise = constants_.get("noise", options, [&] { return band_noise(); })
                         .narrow(0, 0, rate.size(1));  // C×K×L: the first noise for mono
  const double d_min = rate_of(kMinDecayMs, sample_rate_),
               d_max = rate_of(kMaxDecayMs, sample_rate_);
  rate               = rate.sigmoid() * (d_max - d_min) + d_min;
  at::Tensor gain    = parameters.at("log_gain");
  at::Tensor n       = at::arange(length_, options);
  at::Tensor fade_rate, fade_depth;
  if (fade_in_) {
    fade_rate  = parameters.at("log_fade_in").sigmoid() * (rate - d_min) + d_min;
    fade_depth = parameters.at("z_fade_in_gain").sigmoid();
  }
  at::Tensor ir;  // N×C×L, one band at a time (no N×C×K×L temporary)
  for (int64_t b = 0; b < kBands; ++b) {
    auto band_of        = [b](const at::Tensor& t) { return t.select(2, b).unsqueeze(-1); };
    at::Tensor envelope = (band_of(rate) * n + band_of(gain)).exp();
    if (fade_in_)
      envelope = envelope - band_of(fade_depth) * (band_of(fade_rate) * n + band_of(gain)).exp();
    at::Tensor band = envelope * noise.select(1, b);
    ir              = ir.defined() ? ir + band : band;
  }
  return dsp::normalized_impulse_responses(ir, layout_);
}

ProcessorOutput FilteredNoiseReverb::forward(const std::vector<at::Tensor>& inputs,
                                             const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  return {{units::convolve_impulse_responses(x, impulse_responses(parameters, x.options()), layout_,
                                             name())},
          {}};
}

TemporalSupport FilteredNoiseReverb::temporal_support(const TensorDict&) const {
  return TemporalSupport::causal(length_ - 1);  // the impulse response's length
}

at::Tensor FilteredNoiseReverb::response_support(const TensorDict& raw) const {
  return until_decayed(impulse_responses(raw, at::kFloat));
}

}  // namespace grafx
