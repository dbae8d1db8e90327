#include <grafx/dsp/convolution.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>
#include <grafx/dsp/surrogate_delay.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/tangents.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr double kEpsilon = 1e-7;  // GRAFX's guard against division by zero and 0^0

struct NormalizedGradient : public torch::autograd::Function<NormalizedGradient> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& z) { return z.clone(); }
  static variable_list backward(AutogradContext*, variable_list grads) {
    const at::Tensor& g = grads[0];
    return {g / (g.pow(2).sum(-1, true).sqrt() + kEpsilon)};
  }
};

struct StraightThroughOneHot : public torch::autograd::Function<StraightThroughOneHot> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& soft) {
    return at::one_hot(soft.argmax(-1), soft.size(-1)).to(soft.scalar_type());
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

/// segmented_taps as composed operations (any device, tangents, recorded backward passes).
at::Tensor composed_segmented_taps(const at::Tensor& soft, const at::Tensor& colour,
                                   int64_t segments, int64_t per_segment, int64_t centre) {
  at::Tensor taps = straight_through_one_hot(soft);
  if (colour.defined()) taps = convolve(taps, colour, ConvolutionMode::kFull);
  const int64_t n = soft.size(2), items = taps.size(0), frame = taps.size(2),
                responses = taps.size(1) / (segments * per_segment);
  const at::Tensor frames = taps.reshape({items * responses, segments, per_segment, frame}).sum(2);
  return overlap_add(frames, (segments - 1) * n + frame, n)
      .narrow(1, centre, segments * n)
      .reshape({items, responses, segments * n});
}

/// Where taps fall in their responses: tap t's FIR starts at sample start(t) + its delay of
/// response(t).
struct TapGeometry {
  int64_t items, taps, n, fir, segments, per_segment, centre;
  int64_t responses() const { return taps / (segments * per_segment); }
  int64_t length() const { return segments * n; }
  /// The sample of its response where tap t's FIR starts when its delay is 0.
  int64_t start(int64_t t) const { return (t / per_segment) % segments * n - centre; }
  int64_t response(int64_t t) const { return t / (segments * per_segment); }
};

/// out (N×R×length, zeros) += each tap's FIR at its delay; rows of responses in parallel, taps
/// in order within each.
template <typename T>
void place_taps(const T* colour, const int64_t* delays, T* out, const TapGeometry& g) {
  const int64_t per_response = g.segments * g.per_segment, length = g.length();
  at::parallel_for(0, g.items * g.responses(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t item = row / g.responses(), first = row % g.responses() * per_response;
      for (int64_t t = first; t < first + per_response; ++t) {
        const int64_t at = g.start(t) + delays[item * g.taps + t];
        const int64_t lo = std::max<int64_t>(0, -at), hi = std::min(g.fir, length - at);
        const T* c = colour + (item * g.taps + t) * g.fir;
        T* o       = out + row * length + at;
        for (int64_t k = lo; k < hi; ++k) o[k] += c[k];
      }
    }
  });
}

/// The adjoint of place_taps for output gradients `grad`: each tap's FIR gets the gradient under
/// it (grad_colour), and each tap's one-hot the correlation of the gradient with its FIR at
/// every delay (grad_soft, N×T×n).
template <typename T>
void placed_taps_adjoint(const T* grad, const T* colour, const int64_t* delays, T* grad_soft,
                         T* grad_colour, const TapGeometry& g) {
  const int64_t length = g.length();
  at::parallel_for(0, g.items * g.taps, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t item = row / g.taps, t = row % g.taps;
      const T* response = grad + (item * g.responses() + g.response(t)) * length;
      const T* c        = colour + row * g.fir;
      const int64_t at  = g.start(t);
      if (grad_colour) {
        const int64_t placed = at + delays[row];
        for (int64_t k = 0; k < g.fir; ++k) {
          const int64_t i              = placed + k;
          grad_colour[row * g.fir + k] = i >= 0 && i < length ? response[i] : T(0);
        }
      }
      if (!grad_soft) continue;
      T* out = grad_soft + row * g.n;
      std::fill(out, out + g.n, T(0));
      for (int64_t k = 0; k < g.fir; ++k) {  // out[j] += c[k]·grad[at + j + k], inside the response
        const int64_t lo = std::max<int64_t>(0, -(at + k)), hi = std::min(g.n, length - (at + k));
        const T weight = c[k], *from = response + at + k;
#pragma omp simd
        for (int64_t j = lo; j < hi; ++j) out[j] += weight * from[j];
      }
    }
  });
}

/// segmented_taps on the CPU: the taps placed forward, placed_taps_adjoint backward.
struct SegmentedTaps : public torch::autograd::Function<SegmentedTaps> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& soft, const at::Tensor& colour,
                            int64_t segments, int64_t per_segment, int64_t centre) {
    const at::Tensor delays = soft.argmax(-1).contiguous(), c = colour.contiguous();
    const TapGeometry g{soft.size(0), soft.size(1), soft.size(2), c.size(2),
                        segments,     per_segment,  centre};
    at::Tensor out = at::zeros({g.items, g.responses(), g.length()}, soft.options());
    AT_DISPATCH_FLOATING_TYPES(soft.scalar_type(), "segmented_taps", [&] {
      place_taps(c.data_ptr<scalar_t>(), delays.data_ptr<int64_t>(), out.data_ptr<scalar_t>(), g);
    });
    ctx->save_for_backward({soft, colour, delays});
    ctx->saved_data["geometry"] = std::vector<int64_t>{segments, per_segment, centre};
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved       = ctx->get_saved_variables();
    const auto geometry    = ctx->saved_data["geometry"].toIntVector();
    const at::Tensor &soft = saved[0], &colour = saved[1];
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined())
      return composed_backward(ctx, {soft, colour}, 5, grads[0], [&](const auto& in) {
        return composed_segmented_taps(in[0], in[1], geometry[0], geometry[1], geometry[2]);
      });
    const at::Tensor grad = grads[0].contiguous(), c = colour.contiguous();
    const TapGeometry g{soft.size(0), soft.size(1), soft.size(2), c.size(2),
                        geometry[0],  geometry[1],  geometry[2]};
    at::Tensor grad_soft   = ctx->needs_input_grad(0) ? at::empty_like(soft) : at::Tensor();
    at::Tensor grad_colour = ctx->needs_input_grad(1) ? at::empty_like(c) : at::Tensor();
    AT_DISPATCH_FLOATING_TYPES(soft.scalar_type(), "segmented_taps_backward", [&] {
      placed_taps_adjoint(grad.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(),
                          saved[2].data_ptr<int64_t>(),
                          grad_soft.defined() ? grad_soft.data_ptr<scalar_t>() : nullptr,
                          grad_colour.defined() ? grad_colour.data_ptr<scalar_t>() : nullptr, g);
    });
    return {grad_soft, grad_colour, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

void check_z(const at::Tensor& z, const char* where) {
  TORCH_CHECK(z.dim() >= 1 && z.size(-1) == 2 && at::isFloatingType(z.scalar_type()), where,
              ": expected real and imaginary parts [..., 2] of float or double, but got ",
              z.sizes(), " ", z.scalar_type());
}

}  // namespace

at::Tensor normalized_gradient(const at::Tensor& z) {
  check_z(z, "normalized_gradient");
  auto [primal, tangent] = unpack_dual(z);  // the identity's tangent: the tangent itself
  return make_dual(NormalizedGradient::apply(primal), tangent);
}

at::Tensor straight_through_one_hot(const at::Tensor& soft) {
  // The estimator's tangent, like its gradient, passes straight through.
  auto [primal, tangent] = unpack_dual(soft);
  return make_dual(StraightThroughOneHot::apply(primal), tangent);
}

SurrogateDelay surrogate_delay(const at::Tensor& z, int64_t n,
                               const SurrogateDelayOptions& options) {
  check_z(z, "surrogate_delay");
  TORCH_CHECK(n >= 2, "surrogate_delay: expected a length of at least 2, but got ", n);
  SurrogateDelay delay;
  delay.radii_loss = (1 - at::view_as_complex(z.contiguous()).abs().tanh()).pow(2);
  at::Tensor pole =
      at::view_as_complex((options.normalize_gradients ? normalized_gradient(z) : z).contiguous());
  at::Tensor radius = pole.abs();
  pole = pole * (radius.tanh() / (radius + kEpsilon)) + kEpsilon;  // inside the unit disk
  // pole^k = exp(k·log pole) for k = 0 … K − 1, as GRAFX computes it, but as the products
  // pole^(B·j) · pole^i of two tables of about √K powers each (k = B·j + i, 0 <= i < B): two
  // small complex exponentials and one product per power, where a complex exponential per power
  // was most of the delay's forward pass.
  const int64_t powers = n / 2 + 1, block = int64_t(std::ceil(std::sqrt(double(powers)))),
                blocks      = (powers + block - 1) / block;
  const at::Tensor log_pole = pole.log().unsqueeze(-1);
  const at::Tensor within   = at::exp(log_pole * at::arange(block, z.options()));
  const at::Tensor across   = at::exp(log_pole * at::arange(blocks, z.options()).mul_(block));
  const at::Tensor all      = (across.unsqueeze(-1) * within.unsqueeze(-2)).flatten(-2);
  at::Tensor soft           = irfft(all.narrow(-1, 0, powers), n);
  delay.impulse_responses   = options.straight_through ? straight_through_one_hot(soft) : soft;
  return delay;
}

at::Tensor segmented_taps(const at::Tensor& soft, const at::Tensor& colour, int64_t segments,
                          int64_t per_segment, int64_t centre) {
  TORCH_CHECK(soft.dim() == 3 && at::isFloatingType(soft.scalar_type()) && segments >= 1 &&
                  per_segment >= 1 && soft.size(1) % (segments * per_segment) == 0,
              "segmented_taps: expected soft responses N×T×n with T a multiple of segments × "
              "taps per segment (",
              segments, " × ", per_segment, "), but got ", soft.sizes());
  const int64_t fir = colour.defined() ? colour.size(-1) : 1;
  TORCH_CHECK(!colour.defined() ||
                  (colour.dim() == 3 && colour.size(0) == soft.size(0) &&
                   colour.size(1) == soft.size(1) && colour.scalar_type() == soft.scalar_type()),
              "segmented_taps: expected one FIR per tap, N×T×K of the soft responses' dtype, "
              "but got ",
              colour.sizes(), " for ", soft.sizes());
  TORCH_CHECK(centre >= 0 && centre < fir, "segmented_taps: expected a centre in [0, ", fir,
              "), but got ", centre);
  if (!plain_on_cpu({soft, colour}))
    return composed_segmented_taps(soft, colour, segments, per_segment, centre);
  const at::Tensor fir_taps =
      colour.defined() ? colour : at::ones({soft.size(0), soft.size(1), 1}, soft.options());
  return SegmentedTaps::apply(soft, fir_taps, segments, per_segment, centre);
}

at::Tensor delay_to_z(const at::Tensor& delay_samples, int64_t n, double radius) {
  TORCH_CHECK(radius > 0 && radius < 1, "delay_to_z: expected a radius in (0, 1), but got ",
              radius);
  at::Tensor angle  = delay_samples * (-2 * M_PI / double(n));
  double raw_radius = std::atanh(radius);  // tanh|z̃| = radius, up to the 1e−7 guards
  return at::stack({angle.cos() * raw_radius, angle.sin() * raw_radius}, -1);
}

}  // namespace grafx::dsp
