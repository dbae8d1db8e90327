#include <grafx/graph/node_types.h>
#include <grafx/processors/compressor.h>

#include <ATen/ATen.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <limits>

namespace grafx {
namespace {

constexpr double kThresholdOffset = 6.0;         // GRAFX: T = log_threshold − 6 (log energy)
constexpr double kMaxAlpha        = 1.0 - 1e-5;  // GRAFX's bound on the smoothing coefficient
constexpr double kEnergyFloor     = 1e-5;        // G_u = log(e + 1e−5)
const double kLogEnergyToDb       = 10.0 / std::log(10.0);

at::Tensor smoothing_alpha(const at::Tensor& z) { return z.sigmoid().clamp_max(kMaxAlpha); }

/// The quadratic knee of half width w: 0 below −w, d above w, (d + w)²/(4w) between; it is
/// continuous with its slope (Giannoulis et al. 2012, with knee width 2w).
at::Tensor knee(const at::Tensor& d, const at::Tensor& w) {
  return at::minimum((d + w).relu(), 2 * w).pow(2) / (4 * w) + (d - w).relu();
}

/// Moderate compression, or gentle gating of what is well below the music; keyed by a
/// sidechain, a compressor ducks (deep, fast attack, a release that breathes with the beat).
TensorDict musical_dynamics(const PriorContext& c, bool gate, bool duck) {
  Random& r   = c.random;
  auto scalar = [](double value) { return at::full({1}, value, at::kDouble); };
  TensorDict settings{
      {"threshold_db", scalar(gate   ? r.uniform(-60, -45)
                              : duck ? r.uniform(-40, -28)
                                     : r.uniform(-32, -18))},
      {"ratio", scalar(gate   ? r.uniform(2, 4)
                       : duck ? r.uniform(4, 10)
                              : r.uniform(2, 6))},
      {"knee_db", scalar(r.uniform(3, 9))},
  };
  for (const auto& spec : c.processor.parameter_specs()) {
    if (spec.physical_name == "smoothing_ms")
      settings[spec.physical_name] = scalar(r.uniform(5, 40));
    if (spec.physical_name == "attack_ms")
      settings[spec.physical_name] = scalar(duck ? r.uniform(1, 8) : r.uniform(2, 15));
    if (spec.physical_name == "release_ms")
      settings[spec.physical_name] = scalar(duck ? r.uniform(80, 250) : r.uniform(40, 200));
  }
  return settings;
}

}  // namespace

ProcessorDescriptor dynamics_descriptor(Dynamics::Curve curve, dsp::EnvelopeSmoothing smoothing,
                                        Dynamics::Detector detector) {
  const bool gate        = curve == Dynamics::Curve::kNoiseGate;
  const bool ballistics  = smoothing == dsp::EnvelopeSmoothing::kBallistics;
  const bool sidechain   = detector == Dynamics::Detector::kSidechain;
  const std::string what = gate ? "noise gate" : "compressor";
  char letter            = sidechain ? (gate ? 'K' : 'S') : gate ? 'n' : 'c';
  if (ballistics && !sidechain) letter = char(std::toupper(letter));
  ProcessorDescriptor d = ProcessorDescriptor::of<Dynamics>(
      Dynamics(ProcessorConfig(), curve, smoothing, detector).name(), letter, curve, smoothing,
      detector);
  d.summary  = sidechain ? what +
                              " keyed by its sidechain inlet (level detected there, gain "
                               "applied to main), attack/release ballistics"
               : ballistics ? what + " with attack/release ballistics on its level detector"
                            : what +
                                 ": level of the mid, one-pole smoothing, quadratic knee "
                                  "(the paper's)";
  d.response = ResponsePicture::kStaticCurve;
  if (!sidechain) d.grafx_name = gate ? "NoiseGate" : "Compressor";
  d.musical_prior = [gate, sidechain](const PriorContext& c) {
    return musical_dynamics(c, gate, sidechain && !gate);
  };
  // The paper's console and its hybrid pruning ratios at tolerance 0.01 (Table 2).
  d.console_position    = ballistics ? 0 : (gate ? 3 : 2);
  d.random_pruning_rate = sidechain ? 0.0 : gate ? 0.79 : 0.71;
  return d;
}

ProcessorDescriptor compressor_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kCompressor, dsp::EnvelopeSmoothing::kOnePole);
}
ProcessorDescriptor compressor_ballistics_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kCompressor, dsp::EnvelopeSmoothing::kBallistics);
}
ProcessorDescriptor noise_gate_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kNoiseGate, dsp::EnvelopeSmoothing::kOnePole);
}
ProcessorDescriptor noise_gate_ballistics_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kNoiseGate, dsp::EnvelopeSmoothing::kBallistics);
}
ProcessorDescriptor sidechain_compressor_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kCompressor, dsp::EnvelopeSmoothing::kBallistics,
                             Dynamics::Detector::kSidechain);
}
ProcessorDescriptor sidechain_gate_descriptor() {
  return dynamics_descriptor(Dynamics::Curve::kNoiseGate, dsp::EnvelopeSmoothing::kBallistics,
                             Dynamics::Detector::kSidechain);
}

std::string Dynamics::name() const {
  if (detector_ == Detector::kSidechain)
    return curve_ == Curve::kCompressor ? "sidechain_compressor" : "sidechain_gate";
  std::string family = curve_ == Curve::kCompressor ? "compressor" : "noise_gate";
  return smoothing_ == dsp::EnvelopeSmoothing::kBallistics ? family + "_ballistics" : family;
}

std::vector<std::string> Dynamics::inlets() const {
  if (detector_ == Detector::kSidechain) return {"main", kSidechainInlet};
  return {"main"};
}

std::vector<ParameterSpec> Dynamics::parameter_specs() const {
  const bool gate   = curve_ == Curve::kNoiseGate;
  const double rate = double(sample_rate_);
  auto smoother     = [rate](std::string name, std::string physical_name, std::string what) {
    return ParameterSpec::raw(std::move(name), {1})
        .physical(
                std::move(physical_name), "ms",
                [rate](const at::Tensor& z) { return -1000.0 / (rate * smoothing_alpha(z).log()); },
                [rate](const at::Tensor& ms) { return (-1000.0 / (rate * ms)).exp().logit(); })
        .range(0.0, -1000.0 / (rate * std::log(kMaxAlpha)))
        .about("time constant of the level smoother" + what + ", alpha = sigmoid(raw)");
  };
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("log_threshold", {1})
          .physical(
              "threshold_db", "dB",
              [](const at::Tensor& raw) { return (raw - kThresholdOffset) * kLogEnergyToDb; },
              [](const at::Tensor& db) { return db / kLogEnergyToDb + kThresholdOffset; })
          .about(std::string(gate ? "level below which the gate attenuates"
                                  : "level above which the compressor attenuates") +
                 " (mean square over channels, dB), raw - 6 in log energy"),
      ParameterSpec::raw("log_ratio", {1})
          .physical(
              "ratio", ":1", [](const at::Tensor& raw) { return 1 + raw.exp(); },
              [](const at::Tensor& ratio) { return (ratio - 1).log(); })
          .range(1.0, std::numeric_limits<double>::infinity())
          .about(std::string(gate ? "expansion ratio below the threshold"
                                  : "compression ratio above the threshold") +
                 ", 1 + exp(raw) in (1, inf)"),
      ParameterSpec::raw("log_knee", {1})
          .physical(
              "knee_db", "dB", [](const at::Tensor& raw) { return raw.exp() * kLogEnergyToDb; },
              [](const at::Tensor& db) { return (db / kLogEnergyToDb).log(); })
          .range(0.0, std::numeric_limits<double>::infinity())
          .about("width of the quadratic knee around the threshold, exp(raw) in log energy"),
  };
  if (smoothing_ == dsp::EnvelopeSmoothing::kOnePole) {
    specs.push_back(smoother("z_alpha", "smoothing_ms", " (one pole)"));
  } else {
    specs.push_back(smoother("z_alpha_attack", "attack_ms", " while the level rises"));
    specs.push_back(smoother("z_alpha_release", "release_ms", " while the level falls"));
  }
  return specs;
}

ProcessorOutput Dynamics::forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  // N×1×L: the level of the mid signal, of the sidechain for the sidechain types.
  at::Tensor energy = inputs.back().pow(2).mean(1, true);
  at::Tensor envelope;
  if (smoothing_ == dsp::EnvelopeSmoothing::kOnePole) {
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
  at::Tensor gain      = curve_ == Curve::kCompressor
                             ? (1 / ratio - 1) * knee(level - threshold, half_knee)
                             : (1 - ratio) * knee(threshold - level, half_knee);
  // The curve maps log energies, so the amplitude gain is half the log-energy gain (GRAFX applies
  // exp(gain) to the amplitude, which doubles every gain in dB: see compressor.h).
  return {{x * (gain / 2).exp()}, {}};
}

TemporalSupport Dynamics::temporal_support(const TensorDict& parameters) const {
  // The level detector's recursion; with ballistics the slower of its two coefficients bounds
  // the decay (two trajectories of it approach each other by at least that factor per sample).
  at::Tensor alpha = smoothing_alpha(
      parameters.at(smoothing_ == dsp::EnvelopeSmoothing::kOnePole ? "z_alpha" : "z_alpha_attack"));
  if (smoothing_ == dsp::EnvelopeSmoothing::kBallistics)
    alpha = at::maximum(alpha, smoothing_alpha(parameters.at("z_alpha_release")));
  return TemporalSupport::causal(dsp::decay_samples(alpha, TemporalSupport::kDecayTolerance));
}

}  // namespace grafx
