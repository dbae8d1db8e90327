#include <grafx/dsp/forward_mode.h>
#include <grafx/graph/node_types.h>
#include <grafx/processors/compressor.h>

#include <grafx/stream/dynamics_form.h>

#include "dsp/rows.h"
#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <type_traits>
#include <vector>

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
  /// grad_envelope (which may be `grad`), and adds the block's ∂/∂T, ∂/∂r (before ds/dr) and
  /// ∂/∂w to `sums`: in vectors over 256 samples, then in double.
  static void backward(const T* level, const T* envelope, const T* grad, const T* amplitude,
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
        grad_envelope[i]     = (kGate ? -grad_u : grad_u) / (envelope[i] + T(kEnergyFloor));
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

/// Per-task partial sums (`width` per task, tasks item by item) added in task order: [N, width].
at::Tensor per_item_sums(const std::vector<double>& sums, int64_t items, int64_t width) {
  const int64_t tasks = int64_t(sums.size()) / width;
  return at::from_blob(const_cast<double*>(sums.data()), {items, tasks / items, width}, at::kDouble)
      .sum(1);
}

/// The gradients of the curve's threshold, ratio and knee (inputs `first`, `first` + 1 and
/// `first` + 2 of a Function), from per-item sums [N, ≥3] of ∂T, ∂s·(ds/dr)⁻¹ and ∂w.
struct CurveGradients {
  at::Tensor threshold, ratio, knee;
};
CurveGradients curve_gradients(torch::autograd::AutogradContext* ctx, size_t first,
                               const at::Tensor& per_item, const at::Tensor& threshold,
                               const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                               Dynamics::Knee knee_type) {
  auto as = [&](int64_t column, const at::Tensor& like) {
    return per_item.select(1, column).to(like.scalar_type()).view(like.sizes());
  };
  CurveGradients d;
  if (ctx->needs_input_grad(first)) d.threshold = as(0, threshold);
  if (ctx->needs_input_grad(first + 1))  // ds/dr: −1 (gate), −1/r² (compressor)
    d.ratio = gate ? -as(1, ratio) : -as(1, ratio) / ratio.pow(2);
  if (knee_type != Dynamics::Knee::kHard && ctx->needs_input_grad(first + 2)) d.knee = as(2, knee);
  return d;
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
    return amplitude_of_level((envelope.contiguous() + kEnergyFloor).log_(), threshold, ratio, knee,
                              gate, knee_type);
  }

  /// The amplitude gains of contiguous levels log(e + floor), N×1×L, on the CPU.
  static at::Tensor amplitude_of_level(const at::Tensor& level, const at::Tensor& threshold,
                                       const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                                       Dynamics::Knee knee_type) {
    at::Tensor half_gain = at::empty_like(level);
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
    const at::Tensor e = envelope.contiguous(), level = (e + kEnergyFloor).log_();
    const at::Tensor g = grad.contiguous(), a = amplitude.contiguous();
    const at::Tensor t = threshold.contiguous(), r = ratio.contiguous(), w = knee.contiguous();
    const int64_t items = level.size(0), length = level.size(2);
    const int64_t tasks      = dsp::sample_block_tasks(items, length);
    at::Tensor grad_envelope = at::empty_like(level);
    std::vector<double> sums(size_t(tasks) * 3, 0.0);  // per task: ∂T, ∂r (before ds/dr), ∂w
    AT_DISPATCH_FLOATING_TYPES(level.scalar_type(), "gain_computer_backward", [&] {
      const scalar_t *lp = level.data_ptr<scalar_t>(), *ep = e.data_ptr<scalar_t>(),
                     *gp = g.data_ptr<scalar_t>(), *ap = a.data_ptr<scalar_t>(),
                     *tp = t.data_ptr<scalar_t>(), *rp = r.data_ptr<scalar_t>(),
                     *wp = w.data_ptr<scalar_t>();
      scalar_t* dp       = grad_envelope.data_ptr<scalar_t>();
      with_curve_loops<scalar_t>(knee_type, gate, [&](auto loops) {
        dsp::for_sample_blocks(
            items, length, [&](int64_t task, int64_t n, int64_t first, int64_t end) {
              const scalar_t s    = curve_scale(rp[n], gate);
              const int64_t start = n * length + first;
              loops.backward(lp + start, ep + start, gp + start, ap + start, dp + start,
                             end - first, tp[n], s, wp[n], sums.data() + 3 * task);
            });
      });
    });
    const at::Tensor per_item = per_item_sums(sums, items, 3);
    CurveGradients d = curve_gradients(ctx, 1, per_item, threshold, ratio, knee, gate, knee_type);
    return {grad_envelope, d.threshold, d.ratio, d.knee, at::Tensor(), at::Tensor()};
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

/// x·g, or with wet amounts w (N×1×1) the dry/wet mix of x·g and x folded into the gain,
/// x·(1 + w·(g − 1)): one form for every path, the same operations in the same order as
/// SmoothedDynamics' loops, so that each path gives the same output to the bit.
at::Tensor applied(const at::Tensor& x, const at::Tensor& gain, const at::Tensor& wet) {
  return x * (wet.defined() ? (gain - 1) * wet + 1 : gain);
}

/// `applied` for the dynamics that detect the mean square of `key` over channels and smooth it
/// with one pole α: g = exp(s·k(u)/2), u from log(one_pole(mean_c key², α) + floor), in ATen
/// operations and the kernels (SmoothedDynamics' composed form).
at::Tensor one_pole_dynamics(const at::Tensor& x, const at::Tensor& key, const at::Tensor& alpha,
                             const at::Tensor& threshold, const at::Tensor& ratio,
                             const at::Tensor& knee, const at::Tensor& wet, bool gate,
                             Dynamics::Knee knee_type) {
  const at::Tensor envelope = dsp::one_pole(key.pow(2).mean(1, true), alpha);
  return applied(x, amplitude_gains(envelope, threshold, ratio, knee, gate, knee_type), wet);
}

/// The paper's compressor and gate (energy detection, one-pole level smoothing, no gain
/// smoothing, one threshold per item) as one Function on the CPU. Autograd records about twenty
/// operations for them and replays as many element-wise passes backward; here the forward pass
/// is two loops, ATen's vectorised logarithm and exponential and one loop applying the gain,
/// and the backward pass three loops: the curve's gradients of Σ_c ∂y_c·x_c; the adjoint
/// recursion λ[n] = ∂ē[n] + α·λ[n+1], in place; the signals' gradients, with
/// ∂α = Σ λ[n]·(ē[n−1] − e[n]) (docs/benchmarks.md, "Roofline"). A node's dry/wet mix folds into
/// the gain (1 + w·(g − 1)), sparing the render's mix a pass each way. A backward pass that is
/// recorded (create_graph) or whose gradient carries a tangent (forward over reverse)
/// differentiates one_pole_dynamics (and the mix) instead. `key` is x itself unless `keyed` (a
/// sidechain).
struct SmoothedDynamics : public torch::autograd::Function<SmoothedDynamics> {
  /// Whether it applies: CPU tensors of one floating dtype, no tangents, one value per item.
  static bool applies(const at::Tensor& x, const at::Tensor& key,
                      std::initializer_list<at::Tensor> per_item) {
    if (!x.device().is_cpu() || x.dim() != 3 || key.dim() != 3 || key.size(0) != x.size(0) ||
        key.size(2) != x.size(2) || key.scalar_type() != x.scalar_type() ||
        !at::isFloatingType(x.scalar_type()) || dsp::tangent_of(x).defined() ||
        dsp::tangent_of(key).defined())
      return false;
    for (const at::Tensor& t : per_item)
      if (t.defined() && (t.numel() != x.size(0) || t.scalar_type() != x.scalar_type() ||
                          !t.device().is_cpu() || dsp::tangent_of(t).defined()))
        return false;
    return true;
  }

  /// y = x·g, or with `mixed` the dry/wet mix x·(1 + w·(g − 1)) with wet amounts w N×1×1 (a
  /// placeholder otherwise).
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& key, const at::Tensor& alpha,
                            const at::Tensor& threshold, const at::Tensor& ratio,
                            const at::Tensor& knee, const at::Tensor& wet, bool gate,
                            int64_t knee_type, bool keyed, bool mixed) {
    const at::Tensor k = key.contiguous(), a = alpha.reshape({-1}).contiguous();
    const int64_t items = x.size(0), length = x.size(2), channels = k.size(1);
    at::Tensor envelope = at::empty({items, 1, length}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "smoothed_dynamics", [&] {
      const scalar_t *kp = k.data_ptr<scalar_t>(), *ap = a.data_ptr<scalar_t>();
      scalar_t* ep = envelope.data_ptr<scalar_t>();
      // (1 − α)·mean_c key², then ē[n] = α·ē[n−1] + that, in place.
      dsp::for_sample_blocks(items, length, [&](int64_t, int64_t n, int64_t first, int64_t end) {
        mean_square(kp + n * channels * length, channels, length, first, end, 1 - ap[n],
                    ep + n * length);
      });
      const std::vector<scalar_t> silence(size_t(items), scalar_t(0));
      dsp::recurrence_rows<scalar_t, false, false>(ep, ap, silence.data(), ep, items, length);
    });
    const at::Tensor level     = (envelope + kEnergyFloor).log_();
    const at::Tensor amplitude = GainComputer::amplitude_of_level(level, threshold, ratio, knee,
                                                                  gate, Dynamics::Knee(knee_type));
    ctx->save_for_backward(
        {x, key, alpha, threshold, ratio, knee, wet, envelope, level, amplitude});
    ctx->saved_data["gate"]  = gate;
    ctx->saved_data["knee"]  = knee_type;
    ctx->saved_data["keyed"] = keyed;
    ctx->saved_data["mixed"] = mixed;
    // `applied` in one pass (in ATen operations, three passes more).
    const at::Tensor xc = x.contiguous(), w = wet.reshape({-1}).contiguous();
    at::Tensor y = at::empty_like(xc);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "smoothed_dynamics_gain", [&] {
      const scalar_t *xp = xc.data_ptr<scalar_t>(), *gp = amplitude.data_ptr<scalar_t>(),
                     *wp     = w.data_ptr<scalar_t>();
      scalar_t* yp           = y.data_ptr<scalar_t>();
      const int64_t channels = x.size(1);
      dsp::for_sample_blocks(items, length, [&](int64_t, int64_t n, int64_t first, int64_t end) {
        apply_gain(xp + n * channels * length, gp + n * length, yp + n * channels * length,
                   channels, length, first, end, mixed, wp[n]);
      });
    });
    return y;
  }

  /// y[first, end) of one item: x·g, or with `mixed` x·(1 + w·(g − 1)), for x C×L (contiguous).
  template <typename T>
  static void apply_gain(const T* x, const T* gain, T* y, int64_t channels, int64_t length,
                         int64_t first, int64_t end, bool mixed, T wet) {
    for (int64_t c = 0; c < channels; ++c) {
      const T* xc = x + c * length;
      T* yc       = y + c * length;
      if (mixed) {
#pragma omp simd
        for (int64_t i = first; i < end; ++i) yc[i] = xc[i] * ((gain[i] - 1) * wet + 1);
      } else {
#pragma omp simd
        for (int64_t i = first; i < end; ++i) yc[i] = xc[i] * gain[i];
      }
    }
  }

  /// e[first, end) of one item: scale·mean_c key_c² (key C×L, contiguous), as ATen's mean
  /// computes it (the sum over channels, then the division).
  template <typename T>
  static void mean_square(const T* key, int64_t channels, int64_t length, int64_t first,
                          int64_t end, T scale, T* e) {
#pragma omp simd
    for (int64_t i = first; i < end; ++i) e[i] = key[i] * key[i];
    for (int64_t c = 1; c < channels; ++c) {
      const T* row = key + c * length;
#pragma omp simd
      for (int64_t i = first; i < end; ++i) e[i] += row[i] * row[i];
    }
#pragma omp simd
    for (int64_t i = first; i < end; ++i) e[i] = e[i] / T(channels) * scale;
  }

  /// d[first, end) of one item: Σ_c g_c·x_c (C×L each, contiguous), the gradient of the
  /// applied gain; with `mixed`, then the gain's, w·d, returning ∂w = Σ d·(gain − 1).
  template <typename T>
  static double gain_gradient(const T* g, const T* x, const T* gain, int64_t channels,
                              int64_t length, int64_t first, int64_t end, bool mixed, T wet, T* d) {
#pragma omp simd
    for (int64_t i = first; i < end; ++i) d[i] = g[i] * x[i];
    for (int64_t c = 1; c < channels; ++c)
#pragma omp simd
      for (int64_t i = first; i < end; ++i) d[i] += g[c * length + i] * x[c * length + i];
    if (!mixed) return 0;
    T d_wet = 0;
#pragma omp simd reduction(+ : d_wet)
    for (int64_t i = first; i < end; ++i) {
      d_wet += d[i] * (gain[i] - 1);
      d[i] *= wet;
    }
    return d_wet;
  }

  /// One item's rows of the backward pass over samples [first, end), given λ: the gradients of
  /// x (C×L) and, when the key is a sidechain (out_key set), of the key (K×L); returns ∂α's part.
  template <typename T>
  static double signal_gradients(const T* lambda, const T* envelope, const T* gain, const T* grad,
                                 const T* x, const T* key, T* out, T* out_key, int64_t channels,
                                 int64_t key_channels, int64_t length, int64_t first, int64_t end,
                                 T alpha, bool mixed, T wet) {
    const T scale = (1 - alpha) * 2 / T(key_channels);  // ∂ē/∂key_c = (1 − α)·2key_c/K
    T detected[256], drive[256], applied[256];
    double d_alpha = 0;
    for (int64_t start = first; start < end; start += 256) {
      const int64_t count = std::min<int64_t>(256, end - start);
      mean_square(key + start, key_channels, length, 0, count, T(1), detected);
      // ∂α = Σ λ[n]·(ē[n−1] − e[n]), ē[−1] = 0: the first sample apart, so that the loop
      // vectorises.
      T part           = start == 0 ? -lambda[0] * detected[0] : T(0);
      const int64_t i0 = start == 0 ? 1 : 0;
#pragma omp simd reduction(+ : part)
      for (int64_t i = i0; i < count; ++i)
        part += lambda[start + i] * (envelope[start + i - 1] - detected[i]);
#pragma omp simd
      for (int64_t i = 0; i < count; ++i) {
        drive[i]   = lambda[start + i] * scale;
        applied[i] = mixed ? (gain[start + i] - 1) * wet + 1 : gain[start + i];
      }
      d_alpha += part;
      for (int64_t c = 0; c < channels; ++c) {
        const T *grad_c = grad + c * length + start, *x_c = x + c * length + start;
        T* out_c = out + c * length + start;
        if (out_key) {
#pragma omp simd
          for (int64_t i = 0; i < count; ++i) out_c[i] = grad_c[i] * applied[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < count; ++i) out_c[i] = grad_c[i] * applied[i] + drive[i] * x_c[i];
        }
      }
      for (int64_t c = 0; out_key && c < key_channels; ++c) {
        const T* key_c = key + c * length + start;
        T* out_c       = out_key + c * length + start;
#pragma omp simd
        for (int64_t i = 0; i < count; ++i) out_c[i] = drive[i] * key_c[i];
      }
    }
    return d_alpha;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved    = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &key = saved[1], &alpha = saved[2], &threshold = saved[3],
                     &ratio = saved[4], &knee = saved[5];
    const bool gate = ctx->saved_data["gate"].toBool(), keyed = ctx->saved_data["keyed"].toBool(),
               mixed     = ctx->saved_data["mixed"].toBool();
    const auto knee_type = Dynamics::Knee(ctx->saved_data["knee"].toInt());
    if (c10::GradMode::is_enabled() || dsp::tangent_of(grads[0]).defined()) {
      const at::Tensor none;
      return dsp::composed_backward(
          ctx, {x, keyed ? key : none, alpha, threshold, ratio, knee, mixed ? saved[6] : none}, 11,
          grads[0], [&](const auto& in) {
            return one_pole_dynamics(in[0], keyed ? in[1] : in[0], in[2], in[3], in[4], in[5],
                                     in[6], gate, knee_type);
          });
    }

    const at::Tensor &envelope = saved[7], &level = saved[8], &amplitude = saved[9];
    const at::Tensor wet = saved[6].reshape({-1}).contiguous();
    const at::Tensor xc = x.contiguous(), kc = key.contiguous(), gy = grads[0].contiguous();
    const at::Tensor a = alpha.reshape({-1}).contiguous(), t = threshold.reshape({-1}).contiguous(),
                     r = ratio.reshape({-1}).contiguous(), w = knee.reshape({-1}).contiguous();
    const int64_t items = x.size(0), channels = x.size(1), length = x.size(2),
                  key_channels = kc.size(1);
    const int64_t tasks        = dsp::sample_block_tasks(items, length);
    at::Tensor lambda          = at::empty({items, length}, x.options());
    at::Tensor grad_x = at::empty_like(xc), grad_key = keyed ? at::empty_like(kc) : at::Tensor();
    // Per task: ∂T, ∂r (before ds/dr), ∂w (the knee), ∂α, ∂wet.
    std::vector<double> sums(size_t(tasks) * 5, 0.0);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "smoothed_dynamics_backward", [&] {
      using T     = scalar_t;
      const T *xp = xc.data_ptr<T>(), *kp = kc.data_ptr<T>(), *gp = gy.data_ptr<T>(),
              *ep = envelope.data_ptr<T>(), *lp = level.data_ptr<T>(),
              *mp = amplitude.data_ptr<T>(), *ap = a.data_ptr<T>(), *tp = t.data_ptr<T>(),
              *rp = r.data_ptr<T>(), *wp = w.data_ptr<T>(), *mixp = wet.data_ptr<T>();
      T *dp = lambda.data_ptr<T>(), *gxp = grad_x.data_ptr<T>();
      T* gkp = keyed ? grad_key.data_ptr<T>() : nullptr;
      // ∂g into λ's rows, then the curve's backward in place.
      with_curve_loops<T>(knee_type, gate, [&](auto loops) {
        dsp::for_sample_blocks(
            items, length, [&](int64_t task, int64_t n, int64_t first, int64_t end) {
              T* d = dp + n * length;
              sums[5 * size_t(task) + 4] +=
                  gain_gradient(gp + n * channels * length, xp + n * channels * length,
                                mp + n * length, channels, length, first, end, mixed, mixp[n], d);
              const int64_t start = n * length + first;
              loops.backward(lp + start, ep + start, d + first, mp + start, d + first, end - first,
                             tp[n], curve_scale(rp[n], gate), wp[n], sums.data() + 5 * task);
            });
      });
      // λ[n] = ∂ē[n] + α·λ[n+1], in place.
      const std::vector<T> none(size_t(items), T(0));
      dsp::recurrence_rows<T, false, true>(dp, ap, none.data(), dp, items, length);
      dsp::for_sample_blocks(
          items, length, [&](int64_t task, int64_t n, int64_t first, int64_t end) {
            sums[5 * size_t(task) + 3] += signal_gradients(
                dp + n * length, ep + n * length, mp + n * length, gp + n * channels * length,
                xp + n * channels * length, kp + n * key_channels * length,
                gxp + n * channels * length, keyed ? gkp + n * key_channels * length : nullptr,
                channels, key_channels, length, first, end, ap[n], mixed, mixp[n]);
          });
    });
    const at::Tensor per_item = per_item_sums(sums, items, 5);
    CurveGradients d = curve_gradients(ctx, 3, per_item, threshold, ratio, knee, gate, knee_type);
    auto column      = [&](int64_t i, const at::Tensor& like) {
      return per_item.select(1, i).to(like.scalar_type()).view(like.sizes());
    };
    at::Tensor grad_alpha, grad_wet;
    if (ctx->needs_input_grad(2)) grad_alpha = column(3, alpha);
    if (mixed && ctx->needs_input_grad(6)) grad_wet = column(4, saved[6]);
    return {grad_x,   grad_key,     grad_alpha,   d.threshold,  d.ratio,     d.knee,
            grad_wet, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

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
    if (SmoothedDynamics::applies(x, key, {alpha, threshold, ratio, knee, wet})) {
      // A hard knee has no width, and no mix no wet amount: placeholders, since a custom
      // Function takes defined tensors.
      const at::Tensor width = knee.defined() ? knee : at::zeros_like(ratio);
      return SmoothedDynamics::apply(x, key, alpha, threshold, ratio, width,
                                     wet.defined() ? wet : at::ones_like(ratio), gate,
                                     int64_t(knee_), inputs.size() > 1, wet.defined());
    }
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
          ? smooth_gain(log_energy_gain(envelope, threshold, ratio, knee, gate, knee_) / 2,
                        gain_smoothing_, parameters, 0)
                .exp()
          : smooth_gain(amplitude_gains(envelope, threshold, ratio, knee, gate, knee_),
                        gain_smoothing_, parameters, 1);
  return applied(x, amplitude_gain, wet);
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
