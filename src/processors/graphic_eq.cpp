#include <grafx/dsp/biquad.h>
#include <grafx/error.h>
#include <grafx/processors/graphic_eq.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <iterator>

namespace grafx {
namespace {

// Liski & Välimäki (2017), as GRAFX's geq.py lists them (constant-initialised: the registry may
// be built during static initialisation).
constexpr double kBarkCentres[]    = {50,   150,  250,  350,  450,  570,  700,   840,
                                      1000, 1170, 1370, 1600, 1850, 2150, 2500,  2900,
                                      3400, 4000, 4800, 5800, 7000, 8500, 10500, 13500};
constexpr double kBarkBandwidths[] = {
    133.3, 160.0, 171.4, 177.8, 214.7,  235.9,  256.7,  294.4,  315.5,  370.8,  426.9,  466.2,
    558.1, 651.0, 744.8, 926.5, 1110.0, 1467.0, 1828.0, 2194.0, 2735.0, 3619.0, 5333.0, 6000.0};
constexpr double kThirdOctaveCentres[] = {
    19.69,  24.80,  31.25,  39.37,  49.61,  62.50,   78.75,   99.21,   125.0,  157.5,  198.4,
    250.0,  315.0,  396.9,  500.0,  630.0,  793.7,   1000.0,  1260.0,  1587.0, 2000.0, 2520.0,
    3175.0, 4000.0, 5040.0, 6350.0, 8000.0, 10080.0, 12700.0, 16000.0, 20160.0};
constexpr double kThirdOctaveBandwidths[] = {9.178, 11.56, 14.57, 18.36, 23.13, 29.14, 36.71, 46.25,
                                             58.28, 73.43, 92.51, 116.6, 146.9, 185.0, 233.1, 293.7,
                                             370.0, 466.2, 587.4, 740.1, 932.4, 1175,  1480,  1865,
                                             2350,  2846,  3502,  4253,  5038,  5689,  5573};

/// A smooth curve of up to ±6 dB (±3 on subgroups): a tilt and a bell over the bands.
TensorDict musical_curve(const PriorContext& c) {
  const auto& eq     = static_cast<const GraphicEq&>(c.processor);
  const double depth = c.subgroup ? 3.0 : 6.0;
  double tilt        = c.random.uniform(-0.4, 0.4) * depth / 3;
  double bell_octave = std::log2(c.random.log_uniform(100, 8000) / 1000.0);
  double bell_db     = c.random.uniform(-depth, depth);
  std::vector<double> db;
  for (double f : eq.centres_hz()) {
    double octave = std::log2(f / 1000.0);
    db.push_back(
        std::clamp(tilt * octave + bell_db * std::exp(-0.5 * std::pow(octave - bell_octave, 2)),
                   -depth, depth));
  }
  return {{"gain_db", at::tensor(db, at::kDouble)}};
}

ProcessorDescriptor graphic(std::string name, char letter, GraphicEqBands bands,
                            std::string summary) {
  auto d          = ProcessorDescriptor::of<GraphicEq>(std::move(name), letter, bands);
  d.summary       = std::move(summary);
  d.grafx_name    = "GraphicEqualizer";
  d.response      = ResponsePicture::kMagnitude;
  d.musical_prior = musical_curve;
  d.gain_staging  = true;
  // The narrowest low bands put poles within 0.3 % of z = 1, where a biquad amplifies float64
  // rounding ~10^4 times: central differences with step 1e-6 are then accurate to ~1e-5
  // (checked against steps 1e-3 … 1e-7), the hand-written gradient to ~1e-8.
  d.gradient_check.relative_tolerance = 5e-5;
  return d;
}

}  // namespace

ProcessorDescriptor graphic_eq_descriptor() {
  return graphic("graphic_eq", 'G', GraphicEqBands::kBark,
                 "graphic EQ: 24 Bark bands of peaking biquads (Liski & Välimäki)");
}

ProcessorDescriptor graphic_eq_third_octave_descriptor() {
  return graphic("graphic_eq_third_octave", 'T', GraphicEqBands::kThirdOctave,
                 "graphic EQ: 31 third-octave bands of peaking biquads (Liski & Välimäki)");
}

GraphicEq::GraphicEq(const ProcessorConfig& config, GraphicEqBands bands)
    : sample_rate_(config.sample_rate), bands_(bands) {
  bool bark           = bands == GraphicEqBands::kBark;
  const double* fc    = bark ? kBarkCentres : kThirdOctaveCentres;
  const double* width = bark ? kBarkBandwidths : kThirdOctaveBandwidths;
  size_t n_bands      = bark ? std::size(kBarkCentres) : std::size(kThirdOctaveCentres);
  for (size_t k = 0; k < n_bands; ++k)
    if (fc[k] < 0.5 * double(sample_rate_) && width[k] < 0.5 * double(sample_rate_))
      centres_hz_.push_back(fc[k]), bandwidths_hz_.push_back(width[k]);
  if (centres_hz_.empty())
    throw ProcessorError("grafx.processor.config",
                         name() + ": expected a sample rate above " +
                             std::to_string(int(2 * std::max(fc[0], width[0])) + 1) +
                             " Hz (its lowest band's centre and width below Nyquist), but got " +
                             std::to_string(sample_rate_) + " Hz");
}

std::string GraphicEq::name() const {
  return bands_ == GraphicEqBands::kBark ? "graphic_eq" : "graphic_eq_third_octave";
}

std::vector<ParameterSpec> GraphicEq::parameter_specs() const {
  return {units::gain_spec("log_gains", {int64_t(centres_hz_.size())})
              .about("gain of each band at its centre (" + std::to_string(centres_hz_.size()) +
                     " bands from " + std::to_string(int(centres_hz_.front())) + " Hz)")
              .automatable("linear in dB")};
}

std::pair<at::Tensor, at::Tensor> GraphicEq::band_filters(const at::Tensor& log_gain) const {
  const double c   = kEdgeGainExponent;
  auto options     = log_gain.options();
  auto hz          = [&](const std::vector<double>& v) { return at::tensor(v, at::kDouble); };
  at::Tensor omega = units::omega(hz(centres_hz_), sample_rate_).to(options);
  at::Tensor width = at::tan(units::omega(hz(bandwidths_hz_), sample_rate_) / 2).to(options);
  // ρ = −expm1(−2c·x)/expm1(2(1−c)·x), and its first-order series near x = 0.
  at::Tensor small = log_gain.abs() < 1e-4;
  at::Tensor safe  = at::where(small, at::ones_like(log_gain), log_gain);
  at::Tensor rho   = at::where(small, c / (1 - c) * (1 - log_gain),
                               -at::expm1(-2 * c * safe) / at::expm1(2 * (1 - c) * safe));
  at::Tensor beta = width * rho.sqrt(), g = log_gain.exp();
  at::Tensor cosine = -2 * at::cos(omega).expand_as(beta);
  return {dsp::section_coefficients(1 + g * beta, cosine, 1 - g * beta),
          dsp::section_coefficients(1 + beta, cosine, 1 - beta)};
}

at::Tensor GraphicEq::filter_gains(const at::Tensor& log_gains) const {
  at::Tensor interaction = constants_.get("interaction", log_gains.options(), [&] {
    // Liski & Välimäki: the response in dB of each band's filter at a prototype gain, at the
    // centres and the geometric midpoints between them, per dB of prototype gain (B); the
    // least-squares filter gains for commands at the centres, interpolated at the midpoints (E).
    const double prototype_db = kPrototypeGainDb;
    const int64_t n           = int64_t(centres_hz_.size());
    std::vector<double> hz;
    for (int64_t k = 0; k < n; ++k) {
      hz.push_back(centres_hz_[size_t(k)]);
      if (k + 1 < n) hz.push_back(std::sqrt(centres_hz_[size_t(k)] * centres_hz_[size_t(k + 1)]));
    }
    // Every band's filter at the prototype gain (the bands' filters are independent): n×1×3.
    auto [b, a] = band_filters(units::db_to_log_gain(at::full({n}, prototype_db, at::kDouble)));
    at::Tensor omega = units::omega(at::tensor(hz, at::kDouble), sample_rate_);
    at::Tensor response =
        20 * at::log10(dsp::biquad_response(b.unsqueeze(1), a.unsqueeze(1), omega).abs());
    at::Tensor interaction_b = (response / prototype_db).transpose(0, 1);  // points × n
    at::Tensor spread        = at::zeros({int64_t(hz.size()), n}, at::kDouble);
    for (int64_t k = 0; k < n; ++k) {
      spread[2 * k][k] = 1.0;
      if (k + 1 < n) spread[2 * k + 1][k] = 0.5, spread[2 * k + 1][k + 1] = 0.5;
    }
    return at::matmul(at::linalg_pinv(interaction_b), spread);  // n × n
  });
  return at::matmul(log_gains, interaction.transpose(0, 1));
}

ProcessorOutput GraphicEq::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& log_gains = parameters.at("log_gains");
  if (log_gains.dim() == 3) {  // automated: N×K×L, each sample's filters from its commands
    auto [b, a] = band_filters(filter_gains(log_gains.transpose(1, 2)));  // N×L×K×3
    return {{dsp::biquad_cascade_time_varying(inputs[0], b.transpose(1, 2).unsqueeze(1),
                                              a.transpose(1, 2).unsqueeze(1))},
            {}};
  }
  auto [b, a] = band_filters(filter_gains(log_gains));  // N×K×3
  return {{dsp::biquad_cascade(inputs[0], b.unsqueeze(1), a.unsqueeze(1))}, {}};
}

TemporalSupport GraphicEq::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(band_filters(filter_gains(parameters.at("log_gains"))).second);
}

}  // namespace grafx
