#include <grafx/dsp/convolution.h>
#include <grafx/dsp/signal.h>
#include <grafx/error.h>
#include <grafx/processors/fir_filters.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

/// A tilt and a bell of up to ±6 dB (±3 dB on subgroups) over the bands.
TensorDict musical_bands(const PriorContext& c) {
  int64_t n           = c.processor.parameter_specs().front().shape.back();
  const double depth  = c.subgroup ? 3.0 : 6.0;
  at::Tensor position = at::linspace(-1, 1, n, at::kDouble);
  at::Tensor db       = c.random.uniform(-0.5, 0.5) * depth * position +
                  c.random.uniform(-depth, depth) *
                      at::exp(-(position - c.random.uniform(-0.8, 0.8)).pow(2) / 0.1);
  return {{"gain_db", db.clamp(-depth, depth)}};
}

/// t = tanh(raw + δ) scaled to unit energy (N×K → N×1×K).
at::Tensor taps_of(const at::Tensor& raw) {
  at::Tensor impulse = at::zeros({raw.size(-1)}, raw.options());
  impulse[0]         = 1.0;
  return dsp::normalize_energy((raw + impulse).tanh().view({raw.size(0), 1, raw.size(-1)}))
      .view(raw.sizes());
}

}  // namespace

ProcessorDescriptor fir_eq_descriptor() {
  auto d          = ProcessorDescriptor::of<FirEqualizer>("fir_eq", 'f', FirEqOptions{});
  d.summary       = "zero-phase FIR EQ from 40 Bark-band gains (2047 taps, GRAFX's newer FIR EQ)";
  d.grafx_name    = "NewZeroPhaseFIREqualizer";
  d.response      = ResponsePicture::kMagnitude;
  d.musical_prior = musical_bands;
  d.gain_staging  = true;
  return d;
}

ProcessorDescriptor fir_filter_descriptor() {
  auto d       = ProcessorDescriptor::of<FirFilter>("fir_filter", 'F');
  d.summary    = "learnable causal FIR of 1023 taps with unit energy (starts as the identity)";
  d.grafx_name = "FIRFilter";
  d.response   = ResponsePicture::kMagnitude;
  return d;
}

FirEqualizer::FirEqualizer(const ProcessorConfig& config, FirEqOptions options)
    : sample_rate_(config.sample_rate), options_(options) {
  if (!(options_.n_bands >= 1 && options_.lowest_band_hz > 0 &&
        options_.lowest_band_hz < 0.5 * double(sample_rate_)))
    throw ProcessorError("grafx.processor.config",
                         options_.type_name +
                             ": expected at least one band and a lowest band between 0 Hz and "
                             "Nyquist, but got " +
                             std::to_string(options_.n_bands) + " bands from " +
                             std::to_string(options_.lowest_band_hz) + " Hz at " +
                             std::to_string(sample_rate_) + " Hz");
}

std::vector<ParameterSpec> FirEqualizer::parameter_specs() const {
  std::vector<int64_t> shape{options_.n_bands};
  if (options_.channels != EqChannels::kMono) shape.insert(shape.begin(), 2);
  return {units::gain_spec("log_magnitude", shape)
              .about("gain of each of " + std::to_string(options_.n_bands) + " bands from " +
                     std::to_string(int(options_.lowest_band_hz)) + " Hz to Nyquist")};
}

ProcessorOutput FirEqualizer::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor x =
      options_.channels != EqChannels::kMono ? units::as_stereo(inputs[0], name()) : inputs[0];
  at::Tensor window        = constants_.get("window", x.options(), [&] {
    return dsp::zero_phase_window(kBins, at::TensorOptions(at::kDouble), options_.window);
  });
  at::Tensor weights       = constants_.get("weights", x.options(), [&] {  // bands × bins
    at::Tensor hz = at::arange(kBins, at::kDouble) * (double(sample_rate_) / double(2 * kBins - 1));
    return dsp::band_weights(hz, options_.n_bands, options_.scale, options_.lowest_band_hz,
                                   0.5 * double(sample_rate_));
  });
  at::Tensor log_magnitude = parameters.at("log_magnitude");
  if (options_.channels == EqChannels::kMono) log_magnitude = log_magnitude.unsqueeze(1);
  at::Tensor bins = 0.5 * at::log(at::matmul((2 * log_magnitude).exp(), weights));
  at::Tensor fir  = dsp::zero_phase_fir(bins, window);
  if (options_.channels != EqChannels::kMidSide)
    return {{dsp::convolve(x, fir, dsp::ConvolutionMode::kZeroPhase)}, {}};
  return {{dsp::from_mid_side(
              dsp::convolve(dsp::to_mid_side(x), fir, dsp::ConvolutionMode::kZeroPhase))},
          {}};
}

std::vector<ParameterSpec> FirFilter::parameter_specs() const {
  return {ParameterSpec::raw("fir", {kTaps})
              .physical("taps", "", taps_of)
              .about("the filter's taps, scaled to unit energy (tap 0 first)")};
}

ProcessorOutput FirFilter::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  at::Tensor taps = taps_of(parameters.at("fir")).unsqueeze(1);  // N×1×K
  return {{dsp::convolve(inputs[0], taps, dsp::ConvolutionMode::kCausal)}, {}};
}

TemporalSupport FirEqualizer::temporal_support(const TensorDict&) const {
  return TemporalSupport::zero_phase(2 * kBins - 1);
}

TemporalSupport FirFilter::temporal_support(const TensorDict&) const {
  return TemporalSupport::causal(kTaps - 1);
}

}  // namespace grafx
