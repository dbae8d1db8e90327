#include <grafx/processors/cookbook_filters.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using dsp::CookbookShape;

struct Shape {
  CookbookShape shape;
  const char* name;
  char letter;
  const char* frequency;  ///< physical name of the frequency
  bool gain;
  const char* summary;
  const char* grafx_name;
};

constexpr Shape kShapes[] = {
    {CookbookShape::kLowpass, "lowpass", 'l', "cutoff_hz", false,
     "cookbook low-pass biquad (12 dB/octave; −3 dB at the cutoff for q = 0.7071)",
     "LowPassFilter"},
    {CookbookShape::kHighpass, "highpass", 'h', "cutoff_hz", false,
     "cookbook high-pass biquad (12 dB/octave; −3 dB at the cutoff for q = 0.7071)",
     "HighPassFilter"},
    {CookbookShape::kBandpass, "bandpass", 'p', "centre_hz", false,
     "cookbook band-pass biquad with 0 dB at the centre", "BandPassFilter"},
    {CookbookShape::kBandreject, "bandreject", 'x', "centre_hz", false,
     "cookbook band-reject (notch) biquad", "BandRejectFilter"},
    {CookbookShape::kAllpass, "allpass", 'a', "centre_hz", false,
     "cookbook all-pass biquad (flat magnitude, phase −180° at the centre)", "AllPassFilter"},
    {CookbookShape::kPeaking, "peaking", 'k', "centre_hz", true,
     "cookbook peaking (bell) biquad: gain_db at the centre", "PeakingFilter"},
    {CookbookShape::kLowShelf, "low_shelf", 'L', "cutoff_hz", true,
     "cookbook low-shelf biquad: gain_db below the corner", "LowShelf"},
    {CookbookShape::kHighShelf, "high_shelf", 'H', "cutoff_hz", true,
     "cookbook high-shelf biquad: gain_db above the corner", "HighShelf"},
};

const Shape& shape_of(CookbookShape shape) {
  for (const Shape& s : kShapes)
    if (s.shape == shape) return s;
  return kShapes[0];
}

/// A cutoff between 200 Hz and 5 kHz, or a ±9 dB bell or shelf, as an engineer might set.
TensorDict musical_setting(const PriorContext& c) {
  TensorDict values;
  for (const auto& spec : c.processor.parameter_specs()) {
    double value = 0;
    if (spec.name == "frequency") value = c.random.log_uniform(200, 5000);
    if (spec.name == "log_q") value = c.random.uniform(0.5, 2.0);
    if (spec.name == "log_gain")
      value = c.random.uniform(c.subgroup ? -4.0 : -9.0, c.subgroup ? 4.0 : 9.0);
    values[spec.physical_name] = at::full({1}, value, at::kDouble);
  }
  return values;
}

ProcessorDescriptor cookbook(CookbookShape shape) {
  const Shape& s  = shape_of(shape);
  auto d          = ProcessorDescriptor::of<CookbookFilter>(s.name, s.letter, shape);
  d.summary       = s.summary;
  d.grafx_name    = s.grafx_name;
  d.response      = ResponsePicture::kMagnitude;
  d.musical_prior = musical_setting;
  // A fit starts a track's high-pass where it hears nothing (its initial 1 kHz cuts the
  // track); its wet amount, where it has one, nearly whole, so that it cuts rather than shelves.
  if (shape == CookbookShape::kHighpass)
    d.fit_start = [](const PriorContext&) {
      return TensorDict{{"cutoff_hz", at::full({1}, 20.0, at::kDouble)},
                        {"wet", at::full({1}, 0.99, at::kDouble)}};
    };
  return d;
}

}  // namespace

ProcessorDescriptor lowpass_descriptor() { return cookbook(CookbookShape::kLowpass); }
ProcessorDescriptor highpass_descriptor() { return cookbook(CookbookShape::kHighpass); }
ProcessorDescriptor bandpass_descriptor() { return cookbook(CookbookShape::kBandpass); }
ProcessorDescriptor bandreject_descriptor() { return cookbook(CookbookShape::kBandreject); }
ProcessorDescriptor allpass_descriptor() { return cookbook(CookbookShape::kAllpass); }
ProcessorDescriptor peaking_descriptor() { return cookbook(CookbookShape::kPeaking); }
ProcessorDescriptor low_shelf_descriptor() { return cookbook(CookbookShape::kLowShelf); }
ProcessorDescriptor high_shelf_descriptor() { return cookbook(CookbookShape::kHighShelf); }

std::string CookbookFilter::name() const { return shape_of(shape_).name; }

std::vector<ParameterSpec> CookbookFilter::parameter_specs() const {
  const Shape& s = shape_of(shape_);
  std::vector<ParameterSpec> specs{
      units::frequency_spec("frequency", s.frequency, {1}, sample_rate_, {1000.0})
          .about(std::string(s.frequency) == "cutoff_hz" ? "corner frequency" : "centre frequency"),
      units::q_spec({1}, M_SQRT1_2)
          .about("the cookbook's Q (bandwidth; 0.7071 is maximally flat)")};
  if (s.gain)
    specs.push_back(
        units::gain_spec("log_gain", {1})
            .about(shape_ == CookbookShape::kPeaking ? "gain at the centre" : "gain of the shelf"));
  return specs;
}

std::pair<at::Tensor, at::Tensor> CookbookFilter::section(const TensorDict& parameters) const {
  const ParameterSpec frequency = parameter_specs().front();
  at::Tensor omega = units::omega(frequency.to_physical(parameters.at("frequency")), sample_rate_);
  at::Tensor q     = parameters.at("log_q").exp();
  auto gain        = parameters.find("log_gain");
  at::Tensor log_gain = gain == parameters.end() ? at::zeros_like(q) : gain->second;
  return dsp::cookbook_biquad(shape_, omega, q, log_gain);  // N×1×3
}

ProcessorOutput CookbookFilter::forward(const std::vector<at::Tensor>& inputs,
                                        const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  auto [b, a] = section(parameters);
  return {{dsp::biquad_cascade(inputs[0], b.unsqueeze(1), a.unsqueeze(1))}, {}};
}

TemporalSupport CookbookFilter::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(section(parameters).second);
}

}  // namespace grafx
