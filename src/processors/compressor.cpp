#include <grafx/processors/compressor.h>

#include <ATen/ATen.h>

#include <cmath>
#include <functional>

namespace grafx {
namespace {

constexpr double kThresholdOffset = 6.0;         // GRAFX: T = log_threshold − 6 (log energy)
constexpr double kMaxAlpha        = 1.0 - 1e-5;  // GRAFX's bound on the smoothing coefficient
constexpr double kEnergyFloor     = 1e-5;        // G_u = log(e + 1e−5)
const double kLogEnergyToDb       = 10.0 / std::log(10.0);

at::Tensor smoothing_alpha(const at::Tensor& z) { return z.sigmoid().clamp_max(kMaxAlpha); }

/// Raw smoothing coefficient to its time constant −1/ln α, in milliseconds.
std::function<at::Tensor(const at::Tensor&)> time_constant_ms(double sample_rate) {
  return [sample_rate](const at::Tensor& z) {
    return -1000.0 / (sample_rate * smoothing_alpha(z).log());
  };
}

/// The quadratic knee of half width w: 0 below −w, d above w, (d + w)²/(4w) between; it is
/// continuous with its slope (Giannoulis et al. 2012, with knee width 2w).
at::Tensor knee(const at::Tensor& d, const at::Tensor& w) {
  return at::minimum((d + w).relu(), 2 * w).pow(2) / (4 * w) + (d - w).relu();
}

}  // namespace

std::string Dynamics::name() const {
  std::string family = curve_ == Curve::compressor ? "compressor" : "noise_gate";
  return smoothing_ == dsp::EnvelopeSmoothing::ballistics ? family + "_ballistics" : family;
}

std::vector<ParameterSpec> Dynamics::parameter_specs() const {
  bool gate                        = curve_ == Curve::noise_gate;
  std::vector<ParameterSpec> specs = {
      {"log_threshold",
       {1},
       0.0,
       0.01,
       "threshold_db",
       "dB",
       std::string(gate ? "level below which the gate attenuates"
                        : "level above which the compressor attenuates") +
           " (mean square over channels, dB), raw - 6 in log energy",
       [](const at::Tensor& raw) { return (raw - kThresholdOffset) * kLogEnergyToDb; }},
      {"log_ratio",
       {1},
       0.0,
       0.01,
       "ratio",
       ":1",
       std::string(gate ? "expansion ratio below the threshold"
                        : "compression ratio above the threshold") +
           ", 1 + exp(raw) in (1, inf)",
       [](const at::Tensor& raw) { return 1 + raw.exp(); }},
      {"log_knee",
       {1},
       0.0,
       0.01,
       "knee_db",
       "dB",
       "width of the quadratic knee around the threshold, exp(raw) in log energy",
       [](const at::Tensor& raw) { return raw.exp() * kLogEnergyToDb; }},
  };
  if (smoothing_ == dsp::EnvelopeSmoothing::one_pole) {
    specs.push_back({"z_alpha",
                     {1},
                     0.0,
                     0.01,
                     "smoothing_ms",
                     "ms",
                     "time constant of the one-pole level smoother, alpha = sigmoid(raw)",
                     time_constant_ms(sample_rate_)});
  } else {
    specs.push_back(
        {"z_alpha_attack",
         {1},
         0.0,
         0.01,
         "attack_ms",
         "ms",
         "time constant of the level smoother while the level rises, alpha = sigmoid(raw)",
         time_constant_ms(sample_rate_)});
    specs.push_back(
        {"z_alpha_release",
         {1},
         0.0,
         0.01,
         "release_ms",
         "ms",
         "time constant of the level smoother while the level falls, alpha = sigmoid(raw)",
         time_constant_ms(sample_rate_)});
  }
  return specs;
}

ProcessorOutput Dynamics::forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  at::Tensor energy   = x.pow(2).mean(1, true);  // N×1×L: the level of the mid signal
  at::Tensor envelope;
  if (smoothing_ == dsp::EnvelopeSmoothing::one_pole) {
    envelope = dsp::one_pole(energy, smoothing_alpha(parameters.at("z_alpha")));
  } else {
    at::Tensor attack = smoothing_alpha(parameters.at("z_alpha_attack"));
    envelope = dsp::ballistics(energy, attack, smoothing_alpha(parameters.at("z_alpha_release")),
                               at::zeros_like(attack));
  }
  at::Tensor level     = (envelope + kEnergyFloor).log();
  at::Tensor threshold = (parameters.at("log_threshold") - kThresholdOffset).unsqueeze(-1);
  at::Tensor ratio     = (1 + parameters.at("log_ratio").exp()).unsqueeze(-1);
  at::Tensor half_knee = (parameters.at("log_knee").exp() / 2).unsqueeze(-1);
  at::Tensor gain      = curve_ == Curve::compressor
                             ? (1 / ratio - 1) * knee(level - threshold, half_knee)
                             : (1 - ratio) * knee(threshold - level, half_knee);
  // The curve maps log energies, so the amplitude gain is half the log-energy gain (GRAFX applies
  // exp(gain) to the amplitude, which doubles every gain in dB: see compressor.h).
  return {{x * (gain / 2).exp()}, {}};
}

}  // namespace grafx
