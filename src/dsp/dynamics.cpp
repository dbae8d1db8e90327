// The dynamics processors' kernels (grafx/dsp/dynamics.h): the gain computer's curve with a
// hand-written backward pass, and the paper's compressor and gate as one autograd Function on the
// CPU. The processors (processors/compressor.cpp) choose among them; the per-sample steps they
// share with the streaming forms are in dsp/dynamics_steps.h.

#include <grafx/dsp/dynamics.h>
#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/recursion.h>

#include "dsp/rows.h"
#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace grafx::dsp {

namespace {

/// The gain computer's curve: the log-energy gain s·k(u) of levels u past the threshold (u = level
/// − T for a compressor, T − level for a gate) with s = 1/r − 1 (compressor) or 1 − r (gate), and
/// the derivatives its backward pass needs: k′ = dk/du and k_w = dk/dw. The knee k(u): u above
/// the knee, 0 below it, and between: quadratic with half width w (log energy), (u + w)²/(4w)
/// within ±w, continuous with its slope (Giannoulis et al. 2012); exponential with sharpness w,
/// softplus(w·u)/w (GRAFX's); hard, relu(u) (w unused).
struct KneeCurve {
  at::Tensor k, slope, k_w;
};
KneeCurve curve_of(Knee knee, const at::Tensor& u, const at::Tensor& w, bool derivatives) {
  KneeCurve c;
  switch (knee) {
    case Knee::kHard:
      c.k = u.relu();
      if (derivatives) c.slope = (u > 0).to(u.scalar_type());
      break;
    case Knee::kQuadratic: {
      // q = clamp(u + w, 0, 2w): k = q²/(4w) + relu(u − w), k′ = q/(2w), k_w = k′(1 − k′).
      at::Tensor q = at::minimum((u + w).relu(), 2 * w);
      c.k          = q.pow(2) / (4 * w) + (u - w).relu();
      if (derivatives) {
        c.slope = q / (2 * w);
        c.k_w   = c.slope * (1 - c.slope);
      }
      break;
    }
    case Knee::kExponential:
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
template <typename T, Knee kKnee, bool kGate>
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
void with_curve_loops(Knee knee, bool gate, const Work& work) {
  auto pick = [&](auto knee_constant) {
    constexpr Knee kKnee = decltype(knee_constant)::value;
    if (gate)
      work(CurveLoops<T, kKnee, true>{});
    else
      work(CurveLoops<T, kKnee, false>{});
  };
  using Knee = Knee;
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
                               Knee knee_type) {
  auto as = [&](int64_t column, const at::Tensor& like) {
    return per_item.select(1, column).to(like.scalar_type()).view(like.sizes());
  };
  CurveGradients d;
  if (ctx->needs_input_grad(first)) d.threshold = as(0, threshold);
  if (ctx->needs_input_grad(first + 1))  // ds/dr: −1 (gate), −1/r² (compressor)
    d.ratio = gate ? -as(1, ratio) : -as(1, ratio) / ratio.pow(2);
  if (knee_type != Knee::kHard && ctx->needs_input_grad(first + 2)) d.knee = as(2, knee);
  return d;
}

}  // namespace

/// The curve's log-energy gain s·k(u) of envelope energies, in ATen operations.
at::Tensor log_energy_gain(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Knee knee_type) {
  const at::Tensor level = (envelope + kEnergyFloor).log();
  const KneeCurve c =
      curve_of(knee_type, gate ? threshold - level : level - threshold, knee, false);
  return curve_scale(ratio, gate) * c.k;
}

namespace {

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
    const auto knee_kind = Knee(knee_type);
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
                                     Knee knee_type) {
    return amplitude_of_level((envelope.contiguous() + kEnergyFloor).log_(), threshold, ratio, knee,
                              gate, knee_type);
  }

  /// The amplitude gains of contiguous levels log(e + floor), N×1×L, on the CPU.
  static at::Tensor amplitude_of_level(const at::Tensor& level, const at::Tensor& threshold,
                                       const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                                       Knee knee_type) {
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
    const auto knee_type = Knee(ctx->saved_data["knee"].toInt());
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
      const at::Tensor& amplitude, const at::Tensor& grad, bool gate, Knee knee_type) {
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
                                 Knee knee_type) {
    return (log_energy_gain(envelope, threshold, ratio, knee, gate, knee_type) * 0.5).exp();
  }
};

}  // namespace

/// GainComputer, or its curve in plain ATen operations where tangents are carried or the
/// threshold moves per sample (automated), which the CPU loops do not take.
at::Tensor amplitude_gains(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Knee knee_type) {
  bool plain = threshold.size(-1) > 1;
  for (const at::Tensor* t : {&envelope, &threshold, &ratio, &knee})
    plain = plain || (t->defined() && dsp::tangent_of(*t).defined());
  if (plain) return GainComputer::amplitude_of(envelope, threshold, ratio, knee, gate, knee_type);
  // A hard knee has no width: a placeholder, since a custom Function takes defined tensors.
  const at::Tensor width =
      knee.defined() ? knee : at::zeros({envelope.size(0), 1, 1}, envelope.options());
  return GainComputer::apply(envelope, threshold, ratio, width, gate, int64_t(knee_type));
}

/// x·g, or with wet amounts w (N×1×1) the dry/wet mix of x·g and x folded into the gain,
/// x·(1 + w·(g − 1)): one form for every path, the same operations in the same order as
/// SmoothedDynamics' loops, so that each path gives the same output to the bit.
at::Tensor applied_gain(const at::Tensor& x, const at::Tensor& gain, const at::Tensor& wet) {
  return x * (wet.defined() ? (gain - 1) * wet + 1 : gain);
}

namespace {

/// `applied_gain` for the dynamics that detect the mean square of `key` over channels and smooth it
/// with one pole α: g = exp(s·k(u)/2), u from log(one_pole(mean_c key², α) + floor), in ATen
/// operations and the kernels (SmoothedDynamics' composed form).
at::Tensor one_pole_dynamics(const at::Tensor& x, const at::Tensor& key, const at::Tensor& alpha,
                             const at::Tensor& threshold, const at::Tensor& ratio,
                             const at::Tensor& knee, const at::Tensor& wet, bool gate,
                             Knee knee_type) {
  const at::Tensor envelope = dsp::one_pole(key.pow(2).mean(1, true), alpha);
  return applied_gain(x, amplitude_gains(envelope, threshold, ratio, knee, gate, knee_type), wet);
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
    const at::Tensor level = (envelope + kEnergyFloor).log_();
    const at::Tensor amplitude =
        GainComputer::amplitude_of_level(level, threshold, ratio, knee, gate, Knee(knee_type));
    ctx->save_for_backward(
        {x, key, alpha, threshold, ratio, knee, wet, envelope, level, amplitude});
    ctx->saved_data["gate"]  = gate;
    ctx->saved_data["knee"]  = knee_type;
    ctx->saved_data["keyed"] = keyed;
    ctx->saved_data["mixed"] = mixed;
    // `applied_gain` in one pass (in ATen operations, three passes more).
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
    const auto knee_type = Knee(ctx->saved_data["knee"].toInt());
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

}  // namespace

bool smoothed_dynamics_applies(const at::Tensor& x, const at::Tensor& key,
                               std::initializer_list<at::Tensor> per_item) {
  return SmoothedDynamics::applies(x, key, per_item);
}

at::Tensor smoothed_dynamics(const at::Tensor& x, const at::Tensor& key, const at::Tensor& alpha,
                             const at::Tensor& threshold, const at::Tensor& ratio,
                             const at::Tensor& knee, const at::Tensor& wet, bool gate,
                             Knee knee_type, bool keyed) {
  // A hard knee has no width, and no mix no wet amount: placeholders, since a custom Function
  // takes defined tensors.
  return SmoothedDynamics::apply(
      x, key, alpha, threshold, ratio, knee.defined() ? knee : at::zeros_like(ratio),
      wet.defined() ? wet : at::ones_like(ratio), gate, int64_t(knee_type), keyed, wet.defined());
}

}  // namespace grafx::dsp
