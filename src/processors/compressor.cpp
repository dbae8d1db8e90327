#include <grafx/dsp/forward_mode.h>
#include <grafx/graph/node_types.h>
#include <grafx/processors/compressor.h>

#include "processors/stream_forms.h"

#include "dsp/rows.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <type_traits>

namespace grafx {
namespace {

using dsp::curve_scale;
using dsp::knee_point;
using dsp::KneePoint;

using dsp::kEnergyFloor;
using dsp::kMaxAlpha;
using dsp::kThresholdOffset;
const double kLogEnergyToDb = 10.0 / std::log(10.0);

at::Tensor smoothing_alpha(const at::Tensor& z) { return z.sigmoid().clamp_max(kMaxAlpha); }

const char* kSmoothingChoices[] = {"one_pole", "ballistics", "none"};

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

dsp::EnvelopeSmoothing smoothing_of(const std::string& choice) {
  if (choice == "one_pole") return dsp::EnvelopeSmoothing::kOnePole;
  if (choice == "ballistics") return dsp::EnvelopeSmoothing::kBallistics;
  return dsp::EnvelopeSmoothing::kNone;
}

/// The gain computer's curve: the log-energy gain s·k(u) of levels u past the threshold (u = level
/// − T for a compressor, T − level for a gate) with s = 1/r − 1 (compressor) or 1 − r (gate), and
/// the derivatives its backward pass needs: k′ = dk/du and k_w = dk/dw. The knee k(u): u above
/// the knee, 0 below it, and between: quadratic with half width w (log energy), (u + w)²/(4w)
/// within ±w, continuous with its slope (Giannoulis et al. 2012); exponential with sharpness w,
/// softplus(w·u)/w (GRAFX's); hard, relu(u) (w unused).
struct KneeCurve {
  at::Tensor k, slope, k_w;
};
KneeCurve curve_of(Dynamics::Knee knee, const at::Tensor& u, const at::Tensor& w,
                   bool derivatives) {
  KneeCurve c;
  switch (knee) {
    case Dynamics::Knee::kHard:
      c.k = u.relu();
      if (derivatives) c.slope = (u > 0).to(u.scalar_type());
      break;
    case Dynamics::Knee::kQuadratic: {
      // q = clamp(u + w, 0, 2w): k = q²/(4w) + relu(u − w), k′ = q/(2w), k_w = k′(1 − k′).
      at::Tensor q = at::minimum((u + w).relu(), 2 * w);
      c.k          = q.pow(2) / (4 * w) + (u - w).relu();
      if (derivatives) {
        c.slope = q / (2 * w);
        c.k_w   = c.slope * (1 - c.slope);
      }
      break;
    }
    case Dynamics::Knee::kExponential:
      // k = softplus(w·u)/w, k′ = σ(w·u), k_w = (u·k′ − k)/w.
      c.k = at::softplus(w * u) / w;
      if (derivatives) {
        c.slope = (w * u).sigmoid();
        c.k_w   = (u * c.slope - c.k) / w;
      }
      break;
  }
  return c;
}

/// GainComputer's loops over a block of one item's samples, for a knee and curve fixed at compile
/// time: without a branch on them inside, the compiler vectorises them (the exponential knee's
/// transcendental functions aside).
template <typename T, Dynamics::Knee kKnee, bool kGate>
struct CurveLoops {
  static void forward(const T* level, T* half_gain, int64_t count, T threshold, T s, T w) {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) {
      const T u    = kGate ? threshold - level[i] : level[i] - threshold;
      half_gain[i] = s * knee_point(kKnee, u, w).k * T(0.5);
    }
  }
  /// grad_envelope, and adds the block's ∂/∂T, ∂/∂r (before ds/dr) and ∂/∂w to `sums`: in
  /// vectors over 256 samples, then in double.
  static void backward(const T* level, const T* shifted, const T* grad, const T* amplitude,
                       T* grad_envelope, int64_t count, T threshold, T s, T w, double* sums) {
    for (int64_t start = 0; start < count; start += 256) {
      const int64_t end = std::min(count, start + 256);
      T d_threshold = 0, d_ratio = 0, d_knee = 0;
#pragma omp simd reduction(+ : d_threshold, d_ratio, d_knee)
      for (int64_t i = start; i < end; ++i) {
        const T u            = kGate ? threshold - level[i] : level[i] - threshold;
        const KneePoint<T> p = knee_point(kKnee, u, w);
        const T grad_gain    = grad[i] * amplitude[i] * T(0.5);
        const T grad_u       = grad_gain * s * p.slope;
        grad_envelope[i]     = (kGate ? -grad_u : grad_u) / shifted[i];
        d_threshold += kGate ? grad_u : -grad_u;
        d_ratio += grad_gain * p.k;
        d_knee += grad_gain * s * p.k_w;
      }
      sums[0] += d_threshold, sums[1] += d_ratio, sums[2] += d_knee;
    }
  }
};

/// Calls work(CurveLoops<T, knee, gate>{}) for the knee and curve given at run time.
template <typename T, typename Work>
void with_curve_loops(Dynamics::Knee knee, bool gate, const Work& work) {
  auto pick = [&](auto knee_constant) {
    constexpr Dynamics::Knee kKnee = decltype(knee_constant)::value;
    if (gate)
      work(CurveLoops<T, kKnee, true>{});
    else
      work(CurveLoops<T, kKnee, false>{});
  };
  using Knee = Dynamics::Knee;
  if (knee == Knee::kHard) pick(std::integral_constant<Knee, Knee::kHard>{});
  if (knee == Knee::kQuadratic) pick(std::integral_constant<Knee, Knee::kQuadratic>{});
  if (knee == Knee::kExponential) pick(std::integral_constant<Knee, Knee::kExponential>{});
}

/// The curve's log-energy gain s·k(u) of envelope energies, in ATen operations.
at::Tensor log_energy_gain(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Dynamics::Knee knee_type) {
  const at::Tensor level = (envelope + kEnergyFloor).log();
  const KneeCurve c =
      curve_of(knee_type, gate ? threshold - level : level - threshold, knee, false);
  return curve_scale(ratio, gate) * c.k;
}

/// Amplitude gains exp(s·k(u)/2) of envelope energies e (N×1×L; level log(e + floor)) for a
/// compressor (`gate` false) or gate with threshold T, ratio r and knee w (N×1×1; w undefined
/// for a hard knee), with a hand-written backward pass: the curve's slopes once, then the
/// gradients of e, T, r and w in a few passes, where autograd replays a dozen element-wise steps
/// and keeps each one's saved tensors (docs/benchmarks.md, "Roofline"). The backward pass is built
/// of ATen operations on the saved inputs, so it is differentiable again (Hessian-vector
/// products); with tangents (forward mode) the same curve runs as plain ATen operations.
struct GainComputer : public torch::autograd::Function<GainComputer> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& envelope,
                            const at::Tensor& threshold, const at::Tensor& ratio,
                            const at::Tensor& knee, bool gate, int64_t knee_type) {
    const auto knee_kind = Dynamics::Knee(knee_type);
    at::Tensor amplitude = per_item_on_cpu(envelope, {threshold, ratio, knee})
                               ? amplitude_on_cpu(envelope, threshold, ratio, knee, gate, knee_kind)
                               : amplitude_of(envelope, threshold, ratio, knee, gate, knee_kind);
    ctx->save_for_backward({envelope, threshold, ratio, knee, amplitude});
    ctx->saved_data["gate"] = gate;
    ctx->saved_data["knee"] = knee_type;
    return amplitude;
  }

  /// Whether the CPU loops apply: N×1×L envelopes on the CPU, one value per item of the rest.
  static bool per_item_on_cpu(const at::Tensor& envelope, std::vector<at::Tensor> values) {
    if (!envelope.device().is_cpu() || envelope.dim() != 3 || envelope.size(1) != 1) return false;
    for (const auto& v : values)
      if (v.numel() != envelope.size(0) || v.scalar_type() != envelope.scalar_type()) return false;
    return true;
  }

  /// The forward pass on the CPU: the logarithm and the exponential by ATen's vectorised
  /// kernels, the curve between them in one loop (autograd's form takes a dozen passes).
  static at::Tensor amplitude_on_cpu(const at::Tensor& envelope, const at::Tensor& threshold,
                                     const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                                     Dynamics::Knee knee_type) {
    const at::Tensor level = (envelope.contiguous() + kEnergyFloor).log();
    at::Tensor half_gain   = at::empty_like(level);
    const at::Tensor t = threshold.contiguous(), r = ratio.contiguous(), w = knee.contiguous();
    AT_DISPATCH_FLOATING_TYPES(level.scalar_type(), "gain_computer", [&] {
      const scalar_t *lp = level.data_ptr<scalar_t>(), *tp = t.data_ptr<scalar_t>(),
                     *rp = r.data_ptr<scalar_t>(), *wp = w.data_ptr<scalar_t>();
      scalar_t* hp         = half_gain.data_ptr<scalar_t>();
      const int64_t length = level.size(2);
      with_curve_loops<scalar_t>(knee_type, gate, [&](auto loops) {
        dsp::for_sample_blocks(
            level.size(0), length, [&](int64_t, int64_t n, int64_t first, int64_t end) {
              const scalar_t s    = curve_scale(rp[n], gate);
              const int64_t start = n * length + first;
              loops.forward(lp + start, hp + start, end - first, tp[n], s, wp[n]);
            });
      });
    });
    return half_gain.exp_();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved           = ctx->get_saved_variables();
    const at::Tensor &envelope = saved[0], &threshold = saved[1], &ratio = saved[2],
                     &knee = saved[3], &amplitude = saved[4];
    const bool gate      = ctx->saved_data["gate"].toBool();
    const auto knee_type = Dynamics::Knee(ctx->saved_data["knee"].toInt());
    // Recorded (create_graph), or carrying tangents (forward over reverse): ATen operations.
    if (!c10::GradMode::is_enabled() && !dsp::tangent_of(grads[0]).defined() &&
        per_item_on_cpu(envelope, {threshold, ratio, knee}))
      return backward_on_cpu(ctx, envelope, threshold, ratio, knee, amplitude, grads[0], gate,
                             knee_type);
    const at::Tensor shifted = envelope + kEnergyFloor;
    const at::Tensor level   = shifted.log();
    const KneeCurve c =
        curve_of(knee_type, gate ? threshold - level : level - threshold, knee, true);
    const at::Tensor s = curve_scale(ratio, gate);
    // ∂/∂gain of exp(gain/2), then ∂/∂u = ∂/∂gain · s·k′ (u rises with the level for a
    // compressor, falls for a gate).
    const at::Tensor grad_gain = grads[0] * amplitude * 0.5;
    const at::Tensor grad_u    = grad_gain * s * c.slope;
    auto total                 = [](const at::Tensor& t, const at::Tensor& like) {
      return t.sum_to_size(like.sizes());
    };
    at::Tensor grad_envelope = (gate ? -grad_u : grad_u) / shifted;
    at::Tensor grad_threshold =
        ctx->needs_input_grad(1) ? total(gate ? grad_u : -grad_u, threshold) : at::Tensor();
    at::Tensor grad_ratio;  // ds/dr: −1/r² (compressor), −1 (gate)
    if (ctx->needs_input_grad(2))
      grad_ratio =
          gate ? -total(grad_gain * c.k, ratio) : -total(grad_gain * c.k, ratio) / ratio.pow(2);
    at::Tensor grad_knee;
    if (c.k_w.defined() && ctx->needs_input_grad(3)) grad_knee = total(grad_gain * s * c.k_w, knee);
    return {grad_envelope, grad_threshold, grad_ratio, grad_knee, at::Tensor(), at::Tensor()};
  }

  /// The backward pass on the CPU: one loop over the samples for every gradient, per-item sums
  /// of the parameters' gradients per block, added in block order (the same on any threads).
  static torch::autograd::variable_list backward_on_cpu(
      torch::autograd::AutogradContext* ctx, const at::Tensor& envelope,
      const at::Tensor& threshold, const at::Tensor& ratio, const at::Tensor& knee,
      const at::Tensor& amplitude, const at::Tensor& grad, bool gate, Dynamics::Knee knee_type) {
    const at::Tensor shifted = envelope.contiguous() + kEnergyFloor, level = shifted.log();
    const at::Tensor g = grad.contiguous(), a = amplitude.contiguous();
    const at::Tensor t = threshold.contiguous(), r = ratio.contiguous(), w = knee.contiguous();
    const int64_t items = level.size(0), length = level.size(2);
    const int64_t tasks      = dsp::sample_block_tasks(items, length);
    at::Tensor grad_envelope = at::empty_like(level);
    std::vector<double> sums(size_t(tasks) * 3, 0.0);  // per task: ∂T, ∂r (before ds/dr), ∂w
    AT_DISPATCH_FLOATING_TYPES(level.scalar_type(), "gain_computer_backward", [&] {
      const scalar_t *lp = level.data_ptr<scalar_t>(), *sp = shifted.data_ptr<scalar_t>(),
                     *gp = g.data_ptr<scalar_t>(), *ap = a.data_ptr<scalar_t>(),
                     *tp = t.data_ptr<scalar_t>(), *rp = r.data_ptr<scalar_t>(),
                     *wp = w.data_ptr<scalar_t>();
      scalar_t* dp       = grad_envelope.data_ptr<scalar_t>();
      with_curve_loops<scalar_t>(knee_type, gate, [&](auto loops) {
        dsp::for_sample_blocks(
            items, length, [&](int64_t task, int64_t n, int64_t first, int64_t end) {
              const scalar_t s    = curve_scale(rp[n], gate);
              const int64_t start = n * length + first;
              loops.backward(lp + start, sp + start, gp + start, ap + start, dp + start,
                             end - first, tp[n], s, wp[n], sums.data() + 3 * task);
            });
      });
    });
    const at::Tensor per_item =
        at::from_blob(sums.data(), {items, tasks / items, 3}, at::kDouble).sum(1);  // [N, 3]
    auto as = [&](const at::Tensor& column, const at::Tensor& like) {
      return column.to(like.scalar_type()).view(like.sizes());
    };
    at::Tensor grad_threshold, grad_ratio, grad_knee;
    if (ctx->needs_input_grad(1)) grad_threshold = as(per_item.select(1, 0), threshold);
    if (ctx->needs_input_grad(2))  // ds/dr: −1 (gate), −1/r² (compressor)
      grad_ratio = gate ? -as(per_item.select(1, 1), ratio)
                        : -as(per_item.select(1, 1), ratio) / ratio.pow(2);
    if (knee_type != Dynamics::Knee::kHard && ctx->needs_input_grad(3))
      grad_knee = as(per_item.select(1, 2), knee);
    return {grad_envelope, grad_threshold, grad_ratio, grad_knee, at::Tensor(), at::Tensor()};
  }

  static at::Tensor amplitude_of(const at::Tensor& envelope, const at::Tensor& threshold,
                                 const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                                 Dynamics::Knee knee_type) {
    return (log_energy_gain(envelope, threshold, ratio, knee, gate, knee_type) * 0.5).exp();
  }
};

/// GainComputer, or its curve in plain ATen operations where tangents are carried or the
/// threshold moves per sample (automated), which the CPU loops do not take.
at::Tensor amplitude_gains(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Dynamics::Knee knee_type) {
  bool plain = threshold.size(-1) > 1;
  for (const at::Tensor* t : {&envelope, &threshold, &ratio, &knee})
    plain = plain || (t->defined() && dsp::tangent_of(*t).defined());
  if (plain) return GainComputer::amplitude_of(envelope, threshold, ratio, knee, gate, knee_type);
  // A hard knee has no width: a placeholder, since a custom Function takes defined tensors.
  const at::Tensor width =
      knee.defined() ? knee : at::zeros({envelope.size(0), 1, 1}, envelope.options());
  return GainComputer::apply(envelope, threshold, ratio, width, gate, int64_t(knee_type));
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
  const std::vector<std::string> smoothers(std::begin(kSmoothingChoices),
                                           std::end(kSmoothingChoices));
  return {
      OptionSpec::choice("knee", "quadratic", {"hard", "quadratic", "exponential"},
                         "shape of the gain curve around the threshold"),
      OptionSpec::choice("detection", "energy", {"energy", "amplitude"},
                         "level detector: mean square, or mean absolute value, over channels"),
      OptionSpec::choice("level_smoothing", kSmoothingChoices[int(smoothing)], smoothers,
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
        .about("time constant of the " + what + ", alpha = sigmoid(raw)");
  };
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("log_threshold", {1})
          .physical(
              "threshold_db", "dB",
              [](const at::Tensor& raw) { return (raw - kThresholdOffset) * kLogEnergyToDb; },
              [](const at::Tensor& db) { return db / kLogEnergyToDb + kThresholdOffset; })
          .about(std::string(gate ? "level below which the gate attenuates"
                                  : "level above which the compressor attenuates") +
                 " (mean square over channels, dB), raw - 6 in log energy")
          .automatable("linear in dB"),
      ParameterSpec::raw("log_ratio", {1})
          .physical(
              "ratio", ":1", [](const at::Tensor& raw) { return 1 + raw.exp(); },
              [](const at::Tensor& ratio) { return (ratio - 1).log(); })
          .range(1.0, std::numeric_limits<double>::infinity())
          .about(std::string(gate ? "expansion ratio below the threshold"
                                  : "compression ratio above the threshold") +
                 ", 1 + exp(raw) in (1, inf)"),
  };
  if (knee_ == Knee::kQuadratic)
    specs.push_back(
        ParameterSpec::raw("log_knee", {1})
            .physical(
                "knee_db", "dB", [](const at::Tensor& raw) { return raw.exp() * kLogEnergyToDb; },
                [](const at::Tensor& db) { return (db / kLogEnergyToDb).log(); })
            .range(0.0, std::numeric_limits<double>::infinity())
            .about("width of the quadratic knee around the threshold, exp(raw) in log energy"));
  if (knee_ == Knee::kExponential)
    specs.push_back(
        ParameterSpec::raw("log_knee", {1})
            .physical(
                "knee_db", "dB",
                [](const at::Tensor& raw) { return (-raw).exp() * kLogEnergyToDb; },
                [](const at::Tensor& db) { return -(db / kLogEnergyToDb).log(); })
            .range(0.0, std::numeric_limits<double>::infinity())
            .about("softness of the exponential knee, exp(-raw) in log energy (GRAFX: its "
                   "sharpness exp(raw))"));
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

ProcessorOutput Dynamics::forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  // N×1×L: the level of the mid signal, of the sidechain for the sidechain types; an amplitude
  // detector smooths the mean absolute value and squares it, so levels stay energies.
  const at::Tensor& key = inputs.back();
  at::Tensor detected   = amplitude_detection_ ? key.abs().mean(1, true) : key.pow(2).mean(1, true);
  at::Tensor envelope   = detected;
  if (level_smoothing_ == dsp::EnvelopeSmoothing::kOnePole) {
    envelope = dsp::one_pole(detected, smoothing_alpha(parameters.at(kLevelSmoother.one_pole)));
  } else if (level_smoothing_ == dsp::EnvelopeSmoothing::kBallistics) {
    at::Tensor attack = smoothing_alpha(parameters.at(kLevelSmoother.attack));
    envelope =
        dsp::ballistics(detected, attack, smoothing_alpha(parameters.at(kLevelSmoother.release)),
                        at::zeros_like(attack));
  }
  if (amplitude_detection_) envelope = envelope.pow(2);
  const at::Tensor& log_threshold = parameters.at("log_threshold");  // [N, 1], or [N, 1, L]
  at::Tensor threshold            = log_threshold - kThresholdOffset;
  if (log_threshold.dim() == 2) threshold = threshold.unsqueeze(-1);
  at::Tensor ratio = (1 + parameters.at("log_ratio").exp()).unsqueeze(-1);
  // The quadratic knee's half width, or the exponential knee's sharpness.
  at::Tensor knee = knee_ == Knee::kHard ? at::Tensor() : parameters.at("log_knee").exp();
  if (knee_ == Knee::kQuadratic) knee = knee / 2;
  if (knee.defined()) knee = knee.unsqueeze(-1);
  // The curve maps log energies, so the amplitude gain is half the log-energy gain (GRAFX applies
  // exp(gain) to the amplitude, which doubles every gain in dB: see compressor.h).
  const bool gate = curve_ == Curve::kNoiseGate;
  at::Tensor amplitude_gain =
      gain_smoothing_in_log_
          ? smooth_gain(log_energy_gain(envelope, threshold, ratio, knee, gate, knee_) / 2,
                        gain_smoothing_, parameters, 0)
                .exp()
          : smooth_gain(amplitude_gains(envelope, threshold, ratio, knee, gate, knee_),
                        gain_smoothing_, parameters, 1);
  return {{x * amplitude_gain}, {}};
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
