#include <grafx/dsp/convolution.h>
#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/masked_noise.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/reverb.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace grafx {

std::vector<OptionSpec> NoiseReverb::option_specs() {
  return {units::impulse_layout_option("pseudo_midside",
                                       {"pseudo_midside", "midside", "stereo", "mono"}),
          OptionSpec::flag("gain_envelope", false,
                           "learn a level per STFT frame on top of the per-bin decays")};
}

NoiseReverb::NoiseReverb(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      length_(units::samples(kLengthSeconds, config, "reverb", "impulse response", kFftSize)),
      n_frames_(1 + length_ / kHop) {
  ProcessorOptions options = resolve_options(option_specs(), config.options);
  layout_                  = units::impulse_layout(options);
  gain_envelope_           = option_flag(options, "gain_envelope");
}

ProcessorDescriptor reverb_descriptor() {
  auto d                = ProcessorDescriptor::of<NoiseReverb>("reverb", 'r');
  d.summary             = "reverb: 2 s of mid/side noise shaped by an STFT mask, energy-normalised";
  d.grafx_name          = "STFTMaskedNoiseReverb";
  d.options             = NoiseReverb::option_specs();
  d.response            = ResponsePicture::kEnergyDecay;
  d.console_position    = 7;
  d.gain_staging        = true;  // grafx-prune regularises its reverbs' gain staging
  d.random_pruning_rate = 0.71;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  d.musical_prior       = [](const PriorContext& c) {
    // A small room: darker above 1 kHz, decaying faster at high frequencies, a little wet.
    Random& r                  = c.random;
    constexpr int64_t kFftSize = NoiseReverb::kFftSize, n = kFftSize / 2 + 1;
    const int64_t channels = c.processor.parameter_specs()[0].shape[0];
    at::Tensor hz      = at::arange(n, at::kDouble) * (double(c.sample_rate) / double(kFftSize));
    at::Tensor darker  = -3.0 * at::log2(hz.clamp_min(1000.0) / 1000.0);
    double low         = r.uniform(0.6, 1.6);
    at::Tensor shorter = at::linspace(low, low * 0.4, n, at::kDouble);
    at::Tensor level   = at::stack({darker, darker - r.uniform(0, 6)});
    at::Tensor decay   = at::stack({shorter, shorter * r.uniform(0.8, 1.0)});
    return TensorDict{{"initial_level_db", level.narrow(0, 0, channels)},
                      {"decay_time_s", decay.narrow(0, 0, channels)},
                      {"wet", at::full({1}, r.uniform(0.1, 0.35), at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> NoiseReverb::parameter_specs() const {
  const double seconds_per_frame = double(kHop) / double(sample_rate_);
  // The mask falls by softplus(raw)/8 nepers per frame; 60 dB are 3·ln(10) nepers.
  const double decay_nepers = 3 * std::log(10.0) / dsp::kMaskExponent * seconds_per_frame;
  const int64_t n_bins      = kFftSize / 2 + 1;
  const int64_t channels    = dsp::n_impulse_responses(layout_);
  const std::string which   = channels == 1 ? "the noise" : "each noise (see the option channels)";
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("init_log_magnitude", {channels, n_bins})
          .physical(
              "initial_level_db", "dB",
              [](const at::Tensor& raw) { return units::log_gain_to_db(raw * dsp::kMaskExponent); },
              [](const at::Tensor& db) { return units::db_to_log_gain(db) / dsp::kMaskExponent; })
          .about("level of " + which +
                 " per frequency bin at the start (relative: the impulse response is "
                 "energy-normalised)"),
      ParameterSpec::raw("delta_log_magnitude", {channels, n_bins})
          .physical(
              "decay_time_s", "s",
              [=](const at::Tensor& raw) { return decay_nepers / at::softplus(raw); },
              // softplus⁻¹(y) = y + log(1 − e^−y), stable for large y
              [=](const at::Tensor& seconds) {
                at::Tensor y = decay_nepers / seconds;
                return y + (-(-y).exp()).log1p();
              })
          .range(0.0, std::numeric_limits<double>::infinity())
          .about("time " + which + " takes to decay by 60 dB, per frequency bin")};
  if (gain_envelope_)
    specs.push_back(
        ParameterSpec::raw("gain_env_log_magnitude", {channels, n_frames_})
            .physical(
                "envelope_db", "dB",
                [](const at::Tensor& raw) {
                  return units::log_gain_to_db(raw * dsp::kMaskExponent);
                },
                [](const at::Tensor& db) { return units::db_to_log_gain(db) / dsp::kMaskExponent; })
            .about("level of " + which + " per STFT frame (hop " + std::to_string(kHop) +
                   " samples), added to every bin"));
  return specs;
}

at::Tensor NoiseReverb::impulse_responses(const TensorDict& parameters,
                                          const at::TensorOptions& options) const {
  at::TensorOptions cpu_double = at::TensorOptions(at::kDouble);
  at::Tensor window            = constants_.get("window", options,
                                                [] { return at::hann_window(kFftSize, true, at::kDouble); });
  at::Tensor noise_stft        = constants_.get("noise_stft", options, [&] {
    at::Tensor noise = dsp::uniform_noise(2, length_, kNoiseSeed);
    at::Tensor hann  = at::hann_window(kFftSize, true, cpu_double);
    return at::view_as_real(  // C×frames×bins: frames first, as inverse_stft takes them
        at::stft(noise, kFftSize, kHop, kFftSize, hann, true, "reflect", false, true, true)
            .transpose(1, 2)
            .contiguous());
  });
  const at::Tensor& initial    = parameters.at("init_log_magnitude");  // N×C×193
  const at::Tensor decay       = at::softplus(parameters.at("delta_log_magnitude"));
  const at::Tensor envelope =
      gain_envelope_ ? parameters.at("gain_env_log_magnitude")
                     : at::zeros({initial.size(0), initial.size(1), n_frames_}, initial.options());
  // N×C×M×193; the first noise alone for mono.
  at::Tensor spectrum =
      dsp::masked_noise(initial, decay, envelope, at::view_as_complex(noise_stft));
  at::Tensor h = dsp::inverse_stft(spectrum, window, kHop, length_);  // N×C×L
  return dsp::normalized_impulse_responses(h, layout_);
}

ProcessorOutput NoiseReverb::forward(const std::vector<at::Tensor>& inputs,
                                     const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  return {{units::convolve_impulse_responses(x, impulse_responses(parameters, x.options()), layout_,
                                             name())},
          {}};
}

TemporalSupport NoiseReverb::temporal_support(const TensorDict&) const {
  return TemporalSupport::causal(length_ - 1);  // the impulse response's length
}

at::Tensor NoiseReverb::response_support(const TensorDict& raw) const {
  return until_decayed(impulse_responses(raw, at::kFloat));
}

}  // namespace grafx
