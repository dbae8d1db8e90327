#include <grafx/dsp/biquad.h>
#include <grafx/error.h>
#include <grafx/processors/free_filters.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

/// One section per node on every channel: N×3 coefficients to N×1×1×3.
ProcessorOutput filter(const at::Tensor& x, const std::pair<at::Tensor, at::Tensor>& section) {
  return {{dsp::biquad_cascade(x, section.first.view({-1, 1, 1, 3}),
                               section.second.view({-1, 1, 1, 3}))},
          {}};
}

// biquad: the stability triangle.
at::Tensor a1_of(const at::Tensor& raw) { return 2 * raw.tanh(); }
at::Tensor a2_of(const at::Tensor& raw, const at::Tensor& a1) {
  return ((2 - a1.abs()) * raw.tanh() + a1.abs()) / 2;
}

// pole_zero: raw (re, im) [..., 2] inside the unit circle, |p| = tanh|p̃|.
at::Tensor radius_of(const at::Tensor& z) { return (z.pow(2).sum(-1, true) + 1e-24).sqrt(); }
at::Tensor pole_of(const at::Tensor& raw) {
  at::Tensor r = radius_of(raw);
  return raw * r.tanh() / r;
}
at::Tensor raw_of_pole(const at::Tensor& pole) {
  at::Tensor r = radius_of(pole);
  if (!(r < 1).all().item<bool>())
    throw ProcessorError(
        "grafx.processor.parameters",
        "pole_zero: expected a pole inside the unit circle (|p| < 1), but got |p| = " +
            std::to_string(r.max().item<double>()));
  return pole * at::atanh(r) / r;
}
/// (1 − z·x)(1 − z̄·x) = 1 − 2·Re z·x + |z|²·x² as [..., 3].
at::Tensor conjugate_pair(const at::Tensor& z) {
  at::Tensor re = z.select(-1, 0);
  return dsp::section_coefficients(at::ones_like(re), -2 * re, z.pow(2).sum(-1));
}

}  // namespace

ProcessorDescriptor biquad_descriptor() {
  auto d       = ProcessorDescriptor::of<BiquadFilter>("biquad", 'B');
  d.summary    = "biquad with free coefficients, its denominator inside the stability triangle";
  d.grafx_name = "BiquadFilter";
  d.response   = ResponsePicture::kMagnitude;
  return d;
}

ProcessorDescriptor pole_zero_descriptor() {
  auto d       = ProcessorDescriptor::of<PoleZeroFilter>("pole_zero", 'z');
  d.summary    = "a conjugate pole pair (inside the unit circle) and zero pair, and a gain";
  d.grafx_name = "PoleZeroFilter";
  d.response   = ResponsePicture::kMagnitude;
  return d;
}

ProcessorDescriptor state_variable_filter_descriptor() {
  auto d       = ProcessorDescriptor::of<StateVariableFilter>("state_variable_filter", 'v');
  d.summary    = "state-variable filter: a mix of its high-, band- and low-pass outputs";
  d.grafx_name = "StateVariableFilter";
  d.response   = ResponsePicture::kMagnitude;
  return d;
}

std::vector<ParameterSpec> BiquadFilter::parameter_specs() const {
  return {ParameterSpec::raw("b", {3})
              .physical(
                  "numerator", "",
                  [](const at::Tensor& raw) {
                    return raw + at::tensor({1.0, 0.0, 0.0}, raw.options());
                  },
                  [](const at::Tensor& b) {
                    return b - at::tensor({1.0, 0.0, 0.0}, b.options());
                  })
              .about("numerator b0, b1, b2")
              .maps("b0 = 1 + raw b0"),
          ParameterSpec::raw("z_a1", {1})
              .physical("a1", "", a1_of, [](const at::Tensor& a1) { return at::atanh(a1 / 2); })
              .range(-1.999, 1.999)
              .about("denominator a1")
              .maps("a1 = 2·tanh(raw)"),
          ParameterSpec::raw("z_a2", {1})
              .physical(
                  "a2_position", "", [](const at::Tensor& raw) { return raw.tanh(); },
                  [](const at::Tensor& t) { return at::atanh(t); })
              .range(-0.999, 0.999)
              .about("where a2 lies between its stability bounds |a1| − 1 (−1) and 1 (+1)")};
}

std::pair<at::Tensor, at::Tensor> BiquadFilter::section(const TensorDict& parameters) {
  at::Tensor a1 = a1_of(parameters.at("z_a1")), a2 = a2_of(parameters.at("z_a2"), a1);
  // b0 = 1 + raw b0, with the 1 made where a1 is (a copy from the host would stop a capture).
  at::Tensor one = at::zeros({3}, a1.options());
  one.select(0, 0).fill_(1.0);
  return {parameters.at("b") + one, dsp::section_coefficients(at::ones_like(a1), a1, a2)};
}

ProcessorOutput BiquadFilter::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return filter(inputs[0], section(parameters));
}

std::vector<ParameterSpec> PoleZeroFilter::parameter_specs() const {
  return {units::gain_spec("log_gain", {1}).about("overall gain"),
          ParameterSpec::raw("z_pole", {2})
              .physical("pole", "", pole_of, raw_of_pole)
              .range(-0.9999, 0.9999)
              .about("real and imaginary part of the pole (and its conjugate)")
              .maps("|p| = tanh|raw|"),
          ParameterSpec::raw("zero", {2})
              .physical("zero", "")
              .about("real and imaginary part of the zero (and its conjugate)")};
}

std::pair<at::Tensor, at::Tensor> PoleZeroFilter::section(const TensorDict& parameters) {
  return {conjugate_pair(parameters.at("zero")) * parameters.at("log_gain").exp(),
          conjugate_pair(pole_of(parameters.at("z_pole")))};
}

ProcessorOutput PoleZeroFilter::forward(const std::vector<at::Tensor>& inputs,
                                        const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return filter(inputs[0], section(parameters));
}

std::vector<ParameterSpec> StateVariableFilter::parameter_specs() const {
  auto mix = [](const std::string& name, double initial, const std::string& output) {
    return ParameterSpec::raw(name, {1}).initial(initial).physical(name, "").about(
        "gain of the " + output + " output");
  };
  return {units::frequency_spec("frequency", "cutoff_hz", {1}, sample_rate_, {1000.0})
              .about("cutoff (centre) frequency"),
          units::q_spec({1}, M_SQRT1_2).about("resonance Q = 1/(2R)"),
          mix("highpass_mix", 0.0, "high-pass"), mix("bandpass_mix", 0.0, "band-pass"),
          mix("lowpass_mix", 1.0, "low-pass")};
}

std::pair<at::Tensor, at::Tensor> StateVariableFilter::section(const TensorDict& parameters) const {
  at::Tensor hz = parameter_specs().front().to_physical(parameters.at("frequency"));
  at::Tensor g = at::tan(units::omega(hz, sample_rate_) / 2), g2 = g * g;
  at::Tensor r2 = (-parameters.at("log_q")).exp();  // 2R = 1/Q
  at::Tensor hp = parameters.at("highpass_mix"), bp = parameters.at("bandpass_mix"),
             lp = parameters.at("lowpass_mix");
  at::Tensor b =
      dsp::section_coefficients(hp + bp * g + lp * g2, 2 * lp * g2 - 2 * hp, hp - bp * g + lp * g2);
  return {b, dsp::section_coefficients(1 + g2 + r2 * g, 2 * g2 - 2, 1 + g2 - r2 * g)};
}

ProcessorOutput StateVariableFilter::forward(const std::vector<at::Tensor>& inputs,
                                             const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return filter(inputs[0], section(parameters));
}

TemporalSupport BiquadFilter::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(section(parameters).second);
}

TemporalSupport PoleZeroFilter::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(section(parameters).second);
}

TemporalSupport StateVariableFilter::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(section(parameters).second);
}

}  // namespace grafx
