#include <grafx/dsp/convolution.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/reverb.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr double kMaskExponent = 1.0 / 8;  // GRAFX: mask = exp(log M / 8)

}  // namespace

NoiseReverb::NoiseReverb(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      length_(units::samples(kLengthSeconds, config, "reverb", "impulse response", kFftSize)),
      n_frames_(1 + length_ / kHop) {}

std::vector<ParameterSpec> NoiseReverb::parameter_specs() const {
  double seconds_per_frame = kHop / sample_rate_;
  // The mask falls by softplus(raw)/8 nepers per frame; 60 dB are 3·ln(10) nepers.
  auto decay_time_s = [seconds_per_frame](const at::Tensor& raw) {
    return 3 * std::log(10.0) / (at::softplus(raw) * kMaskExponent) * seconds_per_frame;
  };
  int64_t n_bins = kFftSize / 2 + 1;
  return {{"init_log_magnitude",
           {2, n_bins},
           0.0,
           0.01,
           "initial_level_db",
           "dB",
           "level of the mid and side noise per frequency bin at the start (relative: the "
           "impulse response is energy-normalised)",
           [](const at::Tensor& raw) { return units::log_gain_to_db(raw * kMaskExponent); }},
          {"delta_log_magnitude",
           {2, n_bins},
           0.0,
           0.01,
           "decay_time_s",
           "s",
           "time the mid and side noise take to decay by 60 dB, per frequency bin",
           decay_time_s}};
}

at::Tensor NoiseReverb::impulse_responses(const TensorDict& parameters,
                                          const at::TensorOptions& options) const {
  at::TensorOptions cpu_double = at::TensorOptions(at::kDouble);
  at::Tensor window            = constants_.get("window", options,
                                                [] { return at::hann_window(kFftSize, true, at::kDouble); });
  at::Tensor noise_stft        = constants_.get("noise_stft", options, [&] {
    at::Tensor noise = dsp::uniform_noise(2, length_, kNoiseSeed);
    at::Tensor hann  = at::hann_window(kFftSize, true, cpu_double);
    return at::view_as_real(
               at::stft(noise, kFftSize, kHop, kFftSize, hann, true, "reflect", false, true, true));
  });
  at::Tensor initial           = parameters.at("init_log_magnitude").unsqueeze(-1);  // N×2×193×1
  at::Tensor decay             = at::softplus(parameters.at("delta_log_magnitude")).unsqueeze(-1);
  at::Tensor frames            = at::arange(n_frames_, options);
  at::Tensor mask     = ((initial - decay * frames) * kMaskExponent).exp();  // N×2×193×M
  at::Tensor spectrum = at::view_as_complex(noise_stft) * mask;
  int64_t n           = mask.size(0);
  at::Tensor mid_side = at::istft(spectrum.reshape({n * 2, mask.size(2), n_frames_}), kFftSize,
                                  kHop, kFftSize, window, true, false, true, length_, false);
  return dsp::normalize_energy(dsp::from_mid_side(mid_side.view({n, 2, length_})));
}

ProcessorOutput NoiseReverb::forward(const std::vector<at::Tensor>& inputs,
                                     const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  units::check_stereo(x, name());
  return {
      {dsp::convolve(x, impulse_responses(parameters, x.options()), dsp::ConvolutionMode::causal)},
      {}};
}

}  // namespace grafx
