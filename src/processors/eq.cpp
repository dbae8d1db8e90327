#include <grafx/dsp/convolution.h>
#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/eq.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

/// A smooth EQ curve: a tilt plus three bells on a log-frequency axis, up to ±depth_db, at the
/// EQ's 1024 frequencies; the same on both filters of a two-filter EQ.
TensorDict musical_curve(const PriorContext& c) {
  const ParameterSpec spec = c.processor.parameter_specs().at(0);
  const int64_t n_bins     = spec.shape.back();
  const double depth_db    = c.subgroup ? 3.0 : 6.0;
  at::Tensor hz =
      at::arange(n_bins, at::kDouble) * (double(c.sample_rate) / double(2 * n_bins - 1));
  at::Tensor octaves = at::log2(hz.clamp_min(20.0) / 1000.0);
  at::Tensor curve   = c.random.uniform(-0.8, 0.8) * octaves;
  for (int bell = 0; bell < 3; ++bell) {
    double centre = std::log2(c.random.log_uniform(80, 8000) / 1000.0);
    double width  = c.random.uniform(0.4, 1.5);
    curve         = curve + c.random.uniform(-depth_db, depth_db) *
                        at::exp(-(octaves - centre).pow(2) / (2 * width * width));
  }
  return {{spec.physical_name, curve.expand(spec.shape).contiguous()}};
}

ProcessorDescriptor equalizer(std::string name, char letter, EqChannels channels,
                              ResponsePicture response, std::string summary) {
  auto d                    = ProcessorDescriptor::of<Equalizer>(std::move(name), letter, channels);
  d.summary                 = std::move(summary);
  d.grafx_name              = "ZeroPhaseFIREqualizer";
  d.response                = response;
  d.musical_prior           = musical_curve;
  d.gain_staging            = true;  // grafx-prune regularises its EQs' gain staging
  d.spectral_gain_parameter = "log_magnitude";
  d.random_pruning_rate     = 0.46;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  return d;
}

}  // namespace

ProcessorDescriptor eq_descriptor() {
  ProcessorDescriptor d = equalizer(
      "eq", 'e', EqChannels::kMono, ResponsePicture::kMagnitude,
      "zero-phase FIR EQ: 1024 log-magnitudes, one 2047-tap filter on all channels (the paper's)");
  d.console_position = 1;
  return d;
}

ProcessorDescriptor eq_stereo_descriptor() {
  return equalizer("eq_stereo", 'E', EqChannels::kStereo, ResponsePicture::kMagnitudeLeftRight,
                   "zero-phase FIR EQ with one filter per channel (left, right)");
}

ProcessorDescriptor eq_midside_descriptor() {
  return equalizer("eq_midside", 'Q', EqChannels::kMidSide, ResponsePicture::kMagnitudeMidSide,
                   "zero-phase FIR EQ with one filter for mid and one for side");
}

std::string Equalizer::name() const {
  switch (channels_) {
    case EqChannels::kStereo:
      return "eq_stereo";
    case EqChannels::kMidSide:
      return "eq_midside";
    default:
      return "eq";
  }
}

std::vector<ParameterSpec> Equalizer::parameter_specs() const {
  std::vector<int64_t> shape{kBins};
  std::string filters = "";
  if (channels_ != EqChannels::kMono) {
    shape.insert(shape.begin(), 2);
    filters = channels_ == EqChannels::kStereo ? " of the left and right filter"
                                               : " of the mid and side filter";
  }
  return {ParameterSpec::raw("log_magnitude", shape)
              .physical("gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
              .about("gain at 1024 frequencies from 0 Hz to Nyquist" + filters +
                     " (natural-log raw value)")};
}

ProcessorOutput Equalizer::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor x =
      channels_ != EqChannels::kMono ? units::as_stereo(inputs[0], name()) : inputs[0];
  at::Tensor window        = constants_.get("window", x.options(), [] {
    return dsp::zero_phase_window(kBins, at::TensorOptions(at::kDouble));
  });
  at::Tensor log_magnitude = parameters.at("log_magnitude");
  if (channels_ == EqChannels::kMono) log_magnitude = log_magnitude.unsqueeze(1);  // N×1×1024
  at::Tensor fir = dsp::zero_phase_fir(log_magnitude, window);
  if (channels_ != EqChannels::kMidSide)
    return {{dsp::convolve(x, fir, dsp::ConvolutionMode::kZeroPhase)}, {}};
  at::Tensor mid_side = dsp::convolve(dsp::to_mid_side(x), fir, dsp::ConvolutionMode::kZeroPhase);
  return {{dsp::from_mid_side(mid_side)}, {}};
}

TemporalSupport Equalizer::temporal_support(const TensorDict&) const {
  return TemporalSupport::zero_phase(2 * kBins - 1);
}

}  // namespace grafx
