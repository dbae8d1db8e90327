#include <grafx/dsp/dynamics.h>
#include <grafx/dsp/recursion.h>
#include <grafx/enum_names.h>
#include <grafx/graph/node_types.h>
#include <grafx/processors/compressor.h>
#include <grafx/stream/dynamics_form.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

namespace grafx {
namespace {

using dsp::curve_scale;
using dsp::kMaxAlpha;
using dsp::kThresholdOffset;
const double kLogEnergyToDb = 10.0 / std::log(10.0);

at::Tensor smoothing_alpha(const at::Tensor& z) { return z.sigmoid().clamp_max(kMaxAlpha); }

constexpr EnumNames<dsp::EnvelopeSmoothing, 3> kSmoothings{
    {{dsp::EnvelopeSmoothing::kOnePole, "one_pole"},
     {dsp::EnvelopeSmoothing::kBallistics, "ballistics"},
     {dsp::EnvelopeSmoothing::kNone, "none"}}};

/// A smoother's parameters: raw names (its coefficient, or attack and release coefficients),
/// physical names, and when its attack acts. (Plain characters: processors may be made during
/// static initialisation, by registrations in other files.)
struct Smoother {
  const char *what, *one_pole, *attack, *release, *physical_prefix, *attack_while, *release_while;
};
constexpr Smoother kLevelSmoother{"level", "z_alpha",         "z_alpha_attack", "z_alpha_release",
                                  "",      "the level rises", "the level falls"};
constexpr Smoother kGainSmoother{
    "gain",  "z_alpha_gain",   "z_alpha_gain_attack", "z_alpha_gain_release",
    "gain_", "the gain falls", "the gain rises"};

dsp::EnvelopeSmoothing smoothing_of(const std::string& choice) {  // one of the option's choices
  return value_named(kSmoothings, choice).value_or(dsp::EnvelopeSmoothing::kNone);
}

/// The curve's threshold T, ratio r and knee w (the quadratic knee's half width, the exponential
/// knee's sharpness; undefined for a hard knee) of raw parameters, each N×1×1 (T N×1×L where
/// automated).
struct CurveParameters {
  at::Tensor threshold, ratio, knee;
};
CurveParameters curve_parameters(const TensorDict& parameters, Dynamics::Knee knee_type) {
  const at::Tensor& log_threshold = parameters.at("log_threshold");  // [N, 1], or [N, 1, L]
  CurveParameters c;
  c.threshold = log_threshold - kThresholdOffset;
  if (log_threshold.dim() == 2) c.threshold = c.threshold.unsqueeze(-1);
  c.ratio = (1 + parameters.at("log_ratio").exp()).unsqueeze(-1);
  if (knee_type == Dynamics::Knee::kHard) return c;
  c.knee = parameters.at("log_knee").exp();
  if (knee_type == Dynamics::Knee::kQuadratic) c.knee = c.knee / 2;
  c.knee = c.knee.unsqueeze(-1);
  return c;
}

/// A smoother of a gain that starts from `unity` (1, or 0 for a log gain): one pole, or
/// ballistics attacking while the gain falls (more reduction) and releasing while it rises.
at::Tensor smooth_gain(const at::Tensor& gain, dsp::EnvelopeSmoothing smoothing,
                       const TensorDict& parameters, double unity) {
  if (smoothing == dsp::EnvelopeSmoothing::kOnePole)
    return dsp::one_pole(gain - unity, smoothing_alpha(parameters.at(kGainSmoother.one_pole))) +
           unity;
  if (smoothing == dsp::EnvelopeSmoothing::kBallistics) {
    at::Tensor attack  = smoothing_alpha(parameters.at(kGainSmoother.attack));
    at::Tensor initial = at::full_like(attack, -unity);
    // Negated, a falling gain rises: ballistics' attack coefficient then applies.
    return -dsp::ballistics(-gain, attack, smoothing_alpha(parameters.at(kGainSmoother.release)),
                            initial);
  }
  return gain;
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
  std::map<std::string, std::function<double()>> timing = {
      {"smoothing_ms", [&] { return r.uniform(5, 40); }},
      {"attack_ms", [&] { return duck ? r.uniform(1, 8) : r.uniform(2, 15); }},
      {"release_ms", [&] { return duck ? r.uniform(80, 250) : r.uniform(40, 200); }},
      {"gain_smoothing_ms", [&] { return r.uniform(2, 20); }},
      {"gain_attack_ms", [&] { return r.uniform(1, 10); }},
      {"gain_release_ms", [&] { return r.uniform(30, 200); }},
  };
  bool knee = false;
  for (const auto& spec : c.processor.parameter_specs()) {
    if (timing.count(spec.physical_name))
      settings[spec.physical_name] = scalar(timing[spec.physical_name]());
    knee = knee || spec.physical_name == "knee_db";
  }
  if (!knee) settings.erase("knee_db");
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
  d.options  = Dynamics::option_specs(smoothing);
  d.response = ResponsePicture::kStaticCurve;
  // GRAFX's deprecated Approx* classes are its Compressor and NoiseGate with their defaults.
  if (!sidechain && !ballistics)
    d.grafx_name = gate ? "NoiseGate, ApproxNoiseGate" : "Compressor, ApproxCompressor";
  if (!sidechain && ballistics) d.grafx_name = gate ? "NoiseGate" : "Compressor";
  d.musical_prior = [gate, sidechain](const PriorContext& c) {
    return musical_dynamics(c, gate, sidechain && !gate);
  };
  // The specs' initial smoothing (0.05 ms) follows the waveform, not its level, and a gate
  // at −26 dB mutes quiet tracks: a fit starts from typical times and a gate for silence only.
  d.fit_start = [gate](const PriorContext&) {
    auto scalar = [](double value) { return at::full({1}, value, at::kDouble); };
    TensorDict start{{"smoothing_ms", scalar(10)},  {"attack_ms", scalar(5)},
                     {"release_ms", scalar(100)},   {"gain_smoothing_ms", scalar(10)},
                     {"gain_attack_ms", scalar(5)}, {"gain_release_ms", scalar(100)}};
    if (gate) start["threshold_db"] = scalar(-50);
    return start;
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

std::vector<OptionSpec> Dynamics::option_specs(dsp::EnvelopeSmoothing smoothing) {
  std::vector<std::string> smoothers;
  for (const auto& [value, name] : kSmoothings) smoothers.push_back(name);
  return {
      OptionSpec::choice("knee", "quadratic", {"hard", "quadratic", "exponential"},
                         "shape of the gain curve around the threshold"),
      OptionSpec::choice("detection", "energy", {"energy", "amplitude"},
                         "level detector: mean square, or mean absolute value, over channels"),
      OptionSpec::choice("level_smoothing", name_of(kSmoothings, smoothing), smoothers,
                         "smoother of the detected level"),
      OptionSpec::choice("gain_smoothing", "none", smoothers,
                         "smoother of the gain (attack while the gain falls)"),
      OptionSpec::choice("gain_smoothing_domain", "linear", {"linear", "log"},
                         "smooth the amplitude gain or its logarithm"),
  };
}

Dynamics::Dynamics(const ProcessorConfig& config, Curve curve, dsp::EnvelopeSmoothing smoothing,
                   Detector detector)
    : curve_(curve),
      type_smoothing_(smoothing),
      detector_(detector),
      sample_rate_(config.sample_rate) {
  ProcessorOptions options = resolve_options(option_specs(smoothing), config.options);
  const std::string& knee  = option_choice(options, "knee");
  knee_                    = knee == "hard"        ? Knee::kHard
                             : knee == "quadratic" ? Knee::kQuadratic
                                                   : Knee::kExponential;
  amplitude_detection_     = option_choice(options, "detection") == "amplitude";
  level_smoothing_         = smoothing_of(option_choice(options, "level_smoothing"));
  gain_smoothing_          = smoothing_of(option_choice(options, "gain_smoothing"));
  gain_smoothing_in_log_   = option_choice(options, "gain_smoothing_domain") == "log";
}

std::string Dynamics::name() const {
  if (detector_ == Detector::kSidechain)
    return curve_ == Curve::kCompressor ? "sidechain_compressor" : "sidechain_gate";
  std::string family = curve_ == Curve::kCompressor ? "compressor" : "noise_gate";
  return type_smoothing_ == dsp::EnvelopeSmoothing::kBallistics ? family + "_ballistics" : family;
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
        .about("how fast the " + what +
                   " follows the level (the time to move about 63 % of "
                       "the way)")
        .maps("its coefficient alpha = sigmoid(raw)");
  };
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("log_threshold", {1})
          .physical(
              "threshold_db", "dB",
              [](const at::Tensor& raw) { return (raw - kThresholdOffset) * kLogEnergyToDb; },
              [](const at::Tensor& db) { return db / kLogEnergyToDb + kThresholdOffset; })
          .about(std::string(gate ? "level below which the gate turns the signal down"
                                  : "level above which the compressor turns the signal down") +
                 " (the channels' mean power)")
          .maps("raw − 6 in log energy")
          .automatable("linear in dB"),
      ParameterSpec::raw("log_ratio", {1})
          .physical(
              "ratio", ":1", [](const at::Tensor& raw) { return 1 + raw.exp(); },
              [](const at::Tensor& ratio) { return (ratio - 1).log(); })
          .range(1.0, std::numeric_limits<double>::infinity())
          .about(gate ? "how steeply the gate turns down what falls below the threshold (n:1)"
                      : "how much the compressor holds back what rises above the threshold "
                        "(n:1)")
          .maps("1 + exp(raw), in (1, ∞)"),
  };
  if (knee_ == Knee::kQuadratic)
    specs.push_back(ParameterSpec::raw("log_knee", {1})
                        .physical(
                            "knee_db", "dB",
                            [](const at::Tensor& raw) { return raw.exp() * kLogEnergyToDb; },
                            [](const at::Tensor& db) { return (db / kLogEnergyToDb).log(); })
                        .range(0.0, std::numeric_limits<double>::infinity())
                        .about("width of the soft knee around the threshold")
                        .maps("exp(raw) in log energy"));
  if (knee_ == Knee::kExponential)
    specs.push_back(ParameterSpec::raw("log_knee", {1})
                        .physical(
                            "knee_db", "dB",
                            [](const at::Tensor& raw) { return (-raw).exp() * kLogEnergyToDb; },
                            [](const at::Tensor& db) { return -(db / kLogEnergyToDb).log(); })
                        .range(0.0, std::numeric_limits<double>::infinity())
                        .about("softness of the knee around the threshold")
                        .maps("exp(−raw) in log energy (GRAFX: its sharpness exp(raw))"));
  for (const auto& [smoothing, names] :
       {std::pair{level_smoothing_, kLevelSmoother}, std::pair{gain_smoothing_, kGainSmoother}}) {
    const std::string smoother_of = std::string(names.what) + " smoother";
    if (smoothing == dsp::EnvelopeSmoothing::kOnePole) {
      specs.push_back(smoother(names.one_pole, std::string(names.physical_prefix) + "smoothing_ms",
                               smoother_of + " (one pole)"));
    } else if (smoothing == dsp::EnvelopeSmoothing::kBallistics) {
      specs.push_back(smoother(names.attack, std::string(names.physical_prefix) + "attack_ms",
                               smoother_of + " while " + names.attack_while));
      specs.push_back(smoother(names.release, std::string(names.physical_prefix) + "release_ms",
                               smoother_of + " while " + names.release_while));
    }
  }
  return specs;
}

std::optional<ProcessorOutput> Dynamics::forward_mixed(const std::vector<at::Tensor>& inputs,
                                                       const TensorDict& parameters,
                                                       const at::Tensor& wet) const {
  check_arguments(inputs, parameters);
  return ProcessorOutput{{processed(inputs, parameters, wet)}, {}};
}

ProcessorOutput Dynamics::forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  return {{processed(inputs, parameters, {})}, {}};
}

at::Tensor Dynamics::processed(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                               const at::Tensor& wet) const {
  const at::Tensor& x = inputs[0];
  // N×1×L: the level of the mid signal, of the sidechain for the sidechain types; an amplitude
  // detector smooths the mean absolute value and squares it, so levels stay energies.
  const at::Tensor& key               = inputs.back();
  const bool gate                     = curve_ == Curve::kNoiseGate;
  const auto [threshold, ratio, knee] = curve_parameters(parameters, knee_);
  if (level_smoothing_ == dsp::EnvelopeSmoothing::kOnePole &&
      gain_smoothing_ == dsp::EnvelopeSmoothing::kNone && !amplitude_detection_) {
    const at::Tensor alpha = smoothing_alpha(parameters.at(kLevelSmoother.one_pole));
    if (dsp::smoothed_dynamics_applies(x, key, {alpha, threshold, ratio, knee, wet}))
      return dsp::smoothed_dynamics(x, key, alpha, threshold, ratio, knee, wet, gate, knee_,
                                    inputs.size() > 1);
  }
  at::Tensor detected = amplitude_detection_ ? key.abs().mean(1, true) : key.pow(2).mean(1, true);
  at::Tensor envelope = detected;
  if (level_smoothing_ == dsp::EnvelopeSmoothing::kOnePole) {
    envelope = dsp::one_pole(detected, smoothing_alpha(parameters.at(kLevelSmoother.one_pole)));
  } else if (level_smoothing_ == dsp::EnvelopeSmoothing::kBallistics) {
    at::Tensor attack = smoothing_alpha(parameters.at(kLevelSmoother.attack));
    envelope =
        dsp::ballistics(detected, attack, smoothing_alpha(parameters.at(kLevelSmoother.release)),
                        at::zeros_like(attack));
  }
  if (amplitude_detection_) envelope = envelope.pow(2);
  // The curve maps log energies, so the amplitude gain is half the log-energy gain (GRAFX applies
  // exp(gain) to the amplitude, which doubles every gain in dB: see compressor.h).
  at::Tensor amplitude_gain =
      gain_smoothing_in_log_
          ? smooth_gain(dsp::log_energy_gain(envelope, threshold, ratio, knee, gate, knee_) / 2,
                        gain_smoothing_, parameters, 0)
                .exp()
          : smooth_gain(dsp::amplitude_gains(envelope, threshold, ratio, knee, gate, knee_),
                        gain_smoothing_, parameters, 1);
  return dsp::applied_gain(x, amplitude_gain, wet);
}

std::unique_ptr<NodeStream> Dynamics::make_stream(const TensorDict& parameters,
                                                  const StreamSetup& setup) const {
  TensorDict raw;  // float32, as the offline render computes its coefficients
  for (const auto& [name, value] : parameters) raw[name] = value.to(at::kFloat).reshape({-1});
  DynamicsForm f;
  f.gate = curve_ == Curve::kNoiseGate, f.amplitude_detection = amplitude_detection_;
  f.log_domain = gain_smoothing_in_log_, f.knee = knee_;
  // The curve's T, s and w from raw values, as forward computes them.
  f.threshold = (raw.at("log_threshold") - kThresholdOffset).item<float>();
  f.scale     = curve_scale((1 + raw.at("log_ratio").exp()), f.gate).item<float>();
  if (knee_ != Knee::kHard) {
    at::Tensor width = raw.at("log_knee").exp();
    f.width          = (knee_ == Knee::kQuadratic ? width / 2 : width).item<float>();
  }
  auto smoother = [&](dsp::EnvelopeSmoothing kind, const Smoother& names) {
    auto alpha = [&](const char* name) { return smoothing_alpha(raw.at(name)).item<float>(); };
    DynamicsForm::Smoother s{kind};
    if (kind == dsp::EnvelopeSmoothing::kOnePole) s.alpha = alpha(names.one_pole);
    if (kind == dsp::EnvelopeSmoothing::kBallistics)
      s.gain_rise = 1 - alpha(names.attack), s.gain_fall = 1 - alpha(names.release);
    return s;
  };
  f.level       = smoother(level_smoothing_, kLevelSmoother);
  f.gain        = smoother(gain_smoothing_, kGainSmoother);
  f.channels    = setup.inlet_channels.front();
  f.sample_rate = setup.sample_rate;
  using Control = DynamicsForm::Control;
  for (const ParameterSpec& spec : parameter_specs()) {
    const at::Tensor& value = parameters.at(spec.name);
    const std::string& name = spec.physical_name;
    auto add                = [&](double minimum, double maximum, Control sets) {
      f.controls.push_back(stream_control(spec, value, 0, minimum, maximum));
      f.sets.push_back(sets);
    };
    if (name == "threshold_db" && setup.curves.count(spec.name)) {
      f.threshold_curve = setup.curves.at(spec.name);
      f.input_latency   = setup.input_latency;
    } else if (name == "threshold_db") {
      add(-80, 0, Control::kThreshold);
    } else if (name == "ratio") {
      add(1, 20, Control::kRatio);
    } else if (name == "knee_db") {
      add(0.1, 24, Control::kKnee);
    } else {  // a smoother's time constant
      const bool of_gain = spec.name == kGainSmoother.one_pole ||
                           spec.name == kGainSmoother.attack || spec.name == kGainSmoother.release;
      const Smoother& names = of_gain ? kGainSmoother : kLevelSmoother;
      const int step        = spec.name == names.attack ? 1 : spec.name == names.release ? 2 : 0;
      add(0.01, 2000,
          Control(int32_t(of_gain ? Control::kGainOnePole : Control::kLevelOnePole) + step));
    }
  }
  return dynamics_stream(std::move(f));
}

TemporalSupport Dynamics::temporal_support(const TensorDict& parameters) const {
  // The level smoother's recursion, then the gain smoother's; with ballistics the slower of the
  // two coefficients bounds the decay (two trajectories of it approach each other by at least
  // that factor per sample).
  auto support = [&](dsp::EnvelopeSmoothing smoothing, const Smoother& names) {
    if (smoothing == dsp::EnvelopeSmoothing::kNone) return TemporalSupport::pointwise();
    at::Tensor alpha = smoothing == dsp::EnvelopeSmoothing::kOnePole
                           ? smoothing_alpha(parameters.at(names.one_pole))
                           : at::maximum(smoothing_alpha(parameters.at(names.attack)),
                                         smoothing_alpha(parameters.at(names.release)));
    return TemporalSupport::causal(dsp::decay_samples(alpha, TemporalSupport::kDecayTolerance));
  };
  return support(level_smoothing_, kLevelSmoother).then(support(gain_smoothing_, kGainSmoother));
}

}  // namespace grafx
