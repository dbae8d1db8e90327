#include <grafx/dsp/biquad.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/parametric_eq.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

/// Each band's gain up to ±6 dB (±3 on subgroups) at a random frequency near its own.
TensorDict musical_bands(const PriorContext& c) {
  const ParameterSpec frequency = c.processor.parameter_specs().front();
  at::Tensor initial_hz = frequency.to_physical(at::zeros(frequency.shape_for(1), at::kDouble));
  const double depth    = c.subgroup ? 3.0 : 6.0;
  std::vector<double> hz, q, db;
  for (int64_t i = 0; i < initial_hz.numel(); ++i) {
    double moved = initial_hz.view(-1)[i].item<double>() * c.random.log_uniform(0.7, 1.4);
    hz.push_back(std::min(moved, 0.45 * double(c.sample_rate)));
    q.push_back(c.random.log_uniform(0.5, 2.0));
    db.push_back(c.random.uniform(-depth, depth));
  }
  auto values = [&](const std::vector<double>& v) {
    return at::tensor(v, at::kDouble).view(frequency.shape);
  };
  return {{"frequency_hz", values(hz)}, {"q", values(q)}, {"gain_db", values(db)}};
}

/// Each node's "eq_curvature" regulariser ([N]) from its cascade (b, a: N×C×sections×3): the
/// mean square of the second difference (dB) of its magnitude response over a 1/6-octave grid
/// from 40 Hz to 12 kHz (or 0.45·fs). Resonant shelves, bells much narrower than an octave and
/// neighbouring bands that cancel each other curve it strongly; the broad moves a mixing engineer
/// sets hardly do, so the fit keeps the curves an engineer would read (docs/loss.md). Zero at
/// sample rates too low for three points on the grid.
at::Tensor curvature(const at::Tensor& b, const at::Tensor& a, SampleRate sample_rate) {
  const double lowest_hz = 40, highest_hz = std::min(12000.0, 0.45 * double(sample_rate));
  const auto n_points =
      highest_hz > lowest_hz ? int64_t(std::floor(6 * std::log2(highest_hz / lowest_hz))) + 1 : 0;
  if (n_points < 3) return at::zeros({b.size(0)}, b.options());
  at::Tensor hz    = lowest_hz * at::pow(2.0, at::arange(n_points, b.options()) / 6.0);
  at::Tensor curve = dsp::biquad_magnitude_db(b, a, units::omega(hz, sample_rate));  // N×C×F
  return curve.diff(1, -1).diff(1, -1).square().mean({-2, -1});
}

ProcessorDescriptor parametric(std::string name, char letter, EqChannels channels,
                               ResponsePicture response, std::string summary) {
  auto d          = ProcessorDescriptor::of<ParametricEq>(std::move(name), letter, channels, 8);
  d.summary       = std::move(summary);
  d.grafx_name    = "ParametricEqualizer";
  d.response      = response;
  d.musical_prior = musical_bands;
  d.gain_staging  = true;
  return d;
}

}  // namespace

ProcessorDescriptor parametric_eq_descriptor() {
  return parametric(
      "parametric_eq", 'q', EqChannels::kMono, ResponsePicture::kMagnitude,
      "parametric EQ: low shelf, 8 bells, high shelf (cookbook biquads), 30 parameters");
}

ProcessorDescriptor parametric_eq_stereo_descriptor() {
  return parametric("parametric_eq_stereo", 'P', EqChannels::kStereo,
                    ResponsePicture::kMagnitudeLeftRight,
                    "parametric EQ with one filter per channel (left, right)");
}

ProcessorDescriptor parametric_eq_midside_descriptor() {
  return parametric("parametric_eq_midside", 'M', EqChannels::kMidSide,
                    ResponsePicture::kMagnitudeMidSide,
                    "parametric EQ with one filter for mid and one for side");
}

std::string ParametricEq::name() const {
  switch (channels_) {
    case EqChannels::kStereo:
      return "parametric_eq_stereo";
    case EqChannels::kMidSide:
      return "parametric_eq_midside";
    default:
      return "parametric_eq";
  }
}

std::vector<ParameterSpec> ParametricEq::parameter_specs() const {
  std::vector<int64_t> shape{n_peaks_ + 2};
  if (channels_ != EqChannels::kMono) shape.insert(shape.begin(), 2);
  std::vector<double> initial_hz{80.0};
  for (int64_t i = 0; i < n_peaks_; ++i)
    initial_hz.push_back(
        150.0 * std::pow(8000.0 / 150.0, double(i) / double(std::max<int64_t>(n_peaks_ - 1, 1))));
  initial_hz.push_back(12000.0);
  std::string filters = channels_ == EqChannels::kMono     ? ""
                        : channels_ == EqChannels::kStereo ? ", of the left and right filter"
                                                           : ", of the mid and side filter";
  return {units::frequency_spec("frequency", "frequency_hz", shape, sample_rate_, initial_hz)
              .about("corner of the low shelf, centres of the bells, corner of the high shelf" +
                     filters),
          units::q_spec(shape, M_SQRT1_2).about("the cookbook's Q of each band" + filters),
          units::gain_spec("log_gain", shape)
              .about("gain of each shelf and bell" + filters)
              .automatable("linear in dB")};
}

std::pair<at::Tensor, at::Tensor> ParametricEq::sections(const TensorDict& parameters) const {
  at::Tensor omega =
      units::omega(parameter_specs().front().to_physical(parameters.at("frequency")), sample_rate_);
  at::Tensor q = parameters.at("log_q").exp(), log_gain = parameters.at("log_gain");
  const bool automated = log_gain.dim() > omega.dim();  // gains per sample: [..., bands, L]
  if (automated) omega = omega.unsqueeze(-1), q = q.unsqueeze(-1);
  const int64_t band_axis = automated ? -2 : -1, n = n_peaks_ + 2;
  auto design = [&](dsp::CookbookShape shape, int64_t first, int64_t count) {
    return dsp::cookbook_biquad(shape, omega.narrow(band_axis, first, count),
                                q.narrow(band_axis, first, count),
                                log_gain.narrow(band_axis, first, count));
  };
  auto [b_low, a_low]   = design(dsp::CookbookShape::kLowShelf, 0, 1);
  auto [b_peak, a_peak] = design(dsp::CookbookShape::kPeaking, 1, n_peaks_);
  auto [b_high, a_high] = design(dsp::CookbookShape::kHighShelf, n - 1, 1);
  at::Tensor b          = at::cat({b_low, b_peak, b_high}, band_axis - 1);
  at::Tensor a          = at::cat({a_low, a_peak, a_high}, band_axis - 1);
  if (channels_ == EqChannels::kMono) b = b.unsqueeze(1), a = a.unsqueeze(1);  // N×1×n×(L×)3
  return {b, a};
}

ProcessorOutput ParametricEq::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor x =
      channels_ != EqChannels::kMono ? units::as_stereo(inputs[0], name()) : inputs[0];
  auto [b, a]        = sections(parameters);
  const bool varying = b.dim() == 5;  // automated gains
  auto cascade       = [&](const at::Tensor& signal) {
    return varying ? dsp::biquad_cascade_time_varying(signal, b, a)
                         : dsp::biquad_cascade(signal, b, a);
  };
  std::pair<at::Tensor, at::Tensor> still{b, a};  // the curve; automated gains at their mean
  if (varying) {
    TensorDict at_mean  = parameters;
    at_mean["log_gain"] = parameters.at("log_gain").mean(-1);
    still               = sections(at_mean);
  }
  TensorDict aux{{"eq_curvature", curvature(still.first, still.second, sample_rate_)}};
  if (channels_ != EqChannels::kMidSide) return {{cascade(x)}, aux};
  return {{dsp::from_mid_side(cascade(dsp::to_mid_side(x)))}, aux};
}

TemporalSupport ParametricEq::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(sections(parameters).second);
}

}  // namespace grafx
