#include <grafx/dsp/biquad.h>
#include <grafx/dsp/signal.h>
#include <grafx/error.h>
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
  auto d          = ProcessorDescriptor::of<ParametricEq>(std::move(name), letter, channels);
  d.summary       = std::move(summary);
  d.options       = ParametricEq::option_specs();
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

std::vector<OptionSpec> ParametricEq::option_specs() {
  return {OptionSpec::integer("bells", 8, 0, 32, "peaking filters between the shelves"),
          OptionSpec::flag("shelves", true,
                           "a low shelf first and a high shelf last (else only bells)")};
}

ParametricEq::ParametricEq(const ProcessorConfig& config, EqChannels channels)
    : sample_rate_(config.sample_rate), channels_(channels) {
  const ProcessorOptions options = resolve_options(option_specs(), config.options);
  n_bells_                       = int64_t(option_number(options, "bells"));
  shelves_                       = option_flag(options, "shelves");
  if (n_bands() == 0)
    throw ProcessorError("grafx.processor.options",
                         "option \"bells\": expected at least 1 without shelves, but got 0");
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
  std::vector<int64_t> shape{n_bands()};
  if (channels_ != EqChannels::kMono) shape.insert(shape.begin(), 2);
  // The bells spread evenly in log frequency: 150 Hz to 8 kHz between the shelves (80 Hz and
  // 12 kHz), 80 Hz to 12 kHz without them; one bell alone sits at their geometric middle.
  const double lowest_hz = shelves_ ? 150.0 : 80.0, highest_hz = shelves_ ? 8000.0 : 12000.0;
  std::vector<double> initial_hz;
  if (shelves_) initial_hz.push_back(80.0);
  for (int64_t i = 0; i < n_bells_; ++i) {
    const double place = n_bells_ == 1 ? 0.5 : double(i) / double(n_bells_ - 1);
    initial_hz.push_back(lowest_hz * std::pow(highest_hz / lowest_hz, place));
  }
  if (shelves_) initial_hz.push_back(12000.0);
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
  const int64_t band_axis = automated ? -2 : -1;
  std::vector<at::Tensor> bs, as;
  auto design = [&](dsp::CookbookShape shape, int64_t first, int64_t count) {
    if (count == 0) return;
    auto [b, a] = dsp::cookbook_biquad(shape, omega.narrow(band_axis, first, count),
                                       q.narrow(band_axis, first, count),
                                       log_gain.narrow(band_axis, first, count));
    bs.push_back(b), as.push_back(a);
  };
  const int64_t first_bell = shelves_ ? 1 : 0;
  if (shelves_) design(dsp::CookbookShape::kLowShelf, 0, 1);
  design(dsp::CookbookShape::kPeaking, first_bell, n_bells_);
  if (shelves_) design(dsp::CookbookShape::kHighShelf, first_bell + n_bells_, 1);
  at::Tensor b = at::cat(bs, band_axis - 1), a = at::cat(as, band_axis - 1);
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
