#include <grafx/dsp/biquad.h>
#include <grafx/dsp/convolution.h>

#include "dsp/rows.h"

#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- kernels on rows: signals R×L, normalised coefficients b R×K×3 and a R×K×2 (a1, a2) ----

/// Coefficients of one section of a group of rows.
template <typename Acc>
struct Section {
  Acc b0[kInterleavedRows], b1[kInterleavedRows], b2[kInterleavedRows], a1[kInterleavedRows],
      a2[kInterleavedRows];

  template <typename T>
  Section(const T* b, const T* a, int64_t first, int64_t count, int64_t section,
          int64_t n_sections) {
    for (int64_t j = 0; j < count; ++j) {
      const T* bj = b + ((first + j) * n_sections + section) * 3;
      const T* aj = a + ((first + j) * n_sections + section) * 2;
      b0[j] = bj[0], b1[j] = bj[1], b2[j] = bj[2], a1[j] = aj[0], a2[j] = aj[1];
    }
  }
};

/// v = section(u), sample by sample in the recursion's direction.
template <typename T, bool kReverse>
void section_forward(const T* u, T* v, const T* b, const T* a, int64_t section, int64_t n_sections,
                     int64_t n_rows, int64_t length) {
  using Acc = at::acc_type<T, false>;
  for_row_groups(n_rows, [&](int64_t first, int64_t count) {
    Section<Acc> s(b, a, first, count, section, n_sections);
    Acc u1[kInterleavedRows] = {}, u2[kInterleavedRows] = {}, v1[kInterleavedRows] = {},
        v2[kInterleavedRows] = {};
    const T* ug              = u + first * length;
    T* vg                    = v + first * length;
    for (int64_t i = 0; i < length; ++i) {
      int64_t n = kReverse ? length - 1 - i : i;
      for (int64_t j = 0; j < count; ++j) {
        Acc in = ug[j * length + n];
        // Only the last multiply-add waits for the previous output (the latency chain).
        Acc out = s.b0[j] * in + s.b1[j] * u1[j] + s.b2[j] * u2[j] - s.a2[j] * v2[j];
        out -= s.a1[j] * v1[j];
        u2[j] = u1[j], u1[j] = in, v2[j] = v1[j], v1[j] = out;
        vg[j * length + n] = T(out);
      }
    }
  });
}

/// The adjoint of section_forward, one sweep the other way in time: from g = ∂/∂v, writes
/// ∂/∂u to `grad_u` and the row's ∂/∂b (3) and ∂/∂a (a1, a2) of this section.
template <typename T, bool kReverse>
void section_backward(const T* g, const T* u, const T* v, const T* b, const T* a, T* grad_u,
                      T* grad_b, T* grad_a, int64_t section, int64_t n_sections, int64_t n_rows,
                      int64_t length) {
  using Acc = at::acc_type<T, false>;
  for_row_groups(n_rows, [&](int64_t first, int64_t count) {
    Section<Acc> s(b, a, first, count, section, n_sections);
    // w1, w2: the adjoint one and two samples later in the forward direction.
    Acc w1[kInterleavedRows] = {}, w2[kInterleavedRows] = {};
    Acc gb0[kInterleavedRows] = {}, gb1[kInterleavedRows] = {}, gb2[kInterleavedRows] = {},
        ga1[kInterleavedRows] = {}, ga2[kInterleavedRows] = {};
    int64_t offset = first * length;
    for (int64_t i = 0; i < length; ++i) {
      int64_t n = kReverse ? i : length - 1 - i;
      for (int64_t j = 0; j < count; ++j) {
        int64_t at = offset + j * length + n;
        Acc w      = Acc(g[at]) - s.a2[j] * w2[j];
        w -= s.a1[j] * w1[j];
        grad_u[at] = T(s.b0[j] * w + s.b1[j] * w1[j] + s.b2[j] * w2[j]);
        // Σ_n w[n]·u[n−i] = Σ_n u[n]·w[n+i]: every read stays inside the signal.
        Acc un = u[at], vn = v[at];
        gb0[j] += w * un, gb1[j] += w1[j] * un, gb2[j] += w2[j] * un;
        ga1[j] -= w1[j] * vn, ga2[j] -= w2[j] * vn;
        w2[j] = w1[j], w1[j] = w;
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      T* gb = grad_b + ((first + j) * n_sections + section) * 3;
      T* ga = grad_a + ((first + j) * n_sections + section) * 2;
      gb[0] = T(gb0[j]), gb[1] = T(gb1[j]), gb[2] = T(gb2[j]), ga[0] = T(ga1[j]), ga[1] = T(ga2[j]);
    }
  });
}

// ---- the autograd Function ------------------------------------------------------------------

/// t delayed by `lag` samples in the direction of the recursion (negative: advanced), zeros
/// shifted in.
at::Tensor shifted(const at::Tensor& t, int64_t lag, bool reverse) {
  if (reverse) lag = -lag;
  int64_t length = t.size(-1), n = std::abs(lag);
  if (n >= length) return at::zeros_like(t);
  at::Tensor zeros = at::zeros({t.size(0), n}, t.options());
  return lag > 0 ? at::cat({zeros, t.narrow(-1, 0, length - n)}, -1)
                 : at::cat({t.narrow(-1, n, length - n), zeros}, -1);
}

struct BiquadCascade : public torch::autograd::Function<BiquadCascade> {
  /// x R×L, b R×K×3, a R×K×2 (normalised: a0 = 1).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b,
                            const at::Tensor& a, bool reverse) {
    const int64_t rows = x.size(0), length = x.size(1), n_sections = b.size(1);
    at::Tensor xc = cpu(x), bc = cpu(b), ac = cpu(a);
    bool keep = x.requires_grad() || b.requires_grad() || a.requires_grad();
    // The sections' outputs: all kept for the backward pass, else two buffers in turn.
    at::Tensor signals = at::empty(
        {keep ? n_sections : std::min<int64_t>(n_sections, 2), rows, length}, xc.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "biquad_cascade", [&] {
      const scalar_t* in = xc.data_ptr<scalar_t>();
      for (int64_t k = 0; k < n_sections; ++k) {
        scalar_t* out = signals[keep ? k : k % 2].data_ptr<scalar_t>();
        auto run = reverse ? section_forward<scalar_t, true> : section_forward<scalar_t, false>;
        run(in, out, bc.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), k, n_sections, rows, length);
        in = out;
      }
    });
    ctx->saved_data["reverse"] = reverse;
    ctx->save_for_backward({x, b, a});
    if (keep) ctx->saved_data["signals"] = signals;
    return signals[keep ? n_sections - 1 : (n_sections - 1) % 2].to(x.device());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved          = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &b = saved[1], &a = saved[2];
    bool reverse = ctx->saved_data["reverse"].toBool();
    if (c10::GradMode::is_enabled()) return recorded_backward(x, b, a, grads[0], reverse);

    at::Tensor signals = ctx->saved_data["signals"].toTensor();
    const int64_t rows = x.size(0), length = x.size(1), n_sections = b.size(1);
    at::Tensor xc = cpu(x), bc = cpu(b), ac = cpu(a);
    at::Tensor grad = cpu(grads[0]).clone(), grad_u = at::empty_like(grad);
    at::Tensor grad_b = at::empty_like(bc), grad_a = at::empty_like(ac);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "biquad_cascade_backward", [&] {
      auto run = reverse ? section_backward<scalar_t, true> : section_backward<scalar_t, false>;
      for (int64_t k = n_sections - 1; k >= 0; --k) {
        const scalar_t* u = k == 0 ? xc.data_ptr<scalar_t>() : signals[k - 1].data_ptr<scalar_t>();
        run(grad.data_ptr<scalar_t>(), u, signals[k].data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
            ac.data_ptr<scalar_t>(), grad_u.data_ptr<scalar_t>(), grad_b.data_ptr<scalar_t>(),
            grad_a.data_ptr<scalar_t>(), k, n_sections, rows, length);
        std::swap(grad, grad_u);
      }
    });
    at::Device device = x.device();
    return {grad.to(device), grad_b.to(device), grad_a.to(device), at::Tensor()};
  }

  /// The same adjoint from differentiable pieces, for create_graph: each section's signals are
  /// recomputed by this function, w = A⁻ᵀ g is an all-pole section run the other way, and the
  /// sums over time are ATen operations.
  static variable_list recorded_backward(const at::Tensor& x, const at::Tensor& b,
                                         const at::Tensor& a, at::Tensor grad, bool reverse) {
    const int64_t n_sections = b.size(1);
    std::vector<at::Tensor> inputs{x};
    for (int64_t k = 0; k + 1 < n_sections; ++k)
      inputs.push_back(
          BiquadCascade::apply(inputs.back(), b.narrow(1, k, 1), a.narrow(1, k, 1), reverse));
    at::Tensor all_pole = at::zeros({x.size(0), 1, 3}, b.options());
    all_pole.select(2, 0).fill_(1.0);
    std::vector<at::Tensor> grad_b(n_sections), grad_a(n_sections);
    for (int64_t k = n_sections - 1; k >= 0; --k) {
      at::Tensor bk       = b.select(1, k);
      const at::Tensor& u = inputs[k];
      at::Tensor v        = k + 1 < n_sections
                                ? inputs[k + 1]
                                : BiquadCascade::apply(u, b.narrow(1, k, 1), a.narrow(1, k, 1), reverse);
      at::Tensor w        = BiquadCascade::apply(grad, all_pole, a.narrow(1, k, 1), !reverse);
      grad_b[k]           = at::stack({(w * u).sum(1), (w * shifted(u, 1, reverse)).sum(1),
                                       (w * shifted(u, 2, reverse)).sum(1)},
                                      1);
      grad_a[k] =
          -at::stack({(w * shifted(v, 1, reverse)).sum(1), (w * shifted(v, 2, reverse)).sum(1)}, 1);
      grad = bk.select(1, 0).unsqueeze(1) * w +
             bk.select(1, 1).unsqueeze(1) * shifted(w, -1, reverse) +
             bk.select(1, 2).unsqueeze(1) * shifted(w, -2, reverse);
    }
    return {grad, at::stack(grad_b, 1), at::stack(grad_a, 1), at::Tensor()};
  }
};

// ---- shapes ----------------------------------------------------------------------------------

/// Checks x [..., L] and coefficients [..., K, 3], and broadcasts the coefficients to x's
/// leading shape as R×K×3.
at::Tensor coefficient_rows(const at::Tensor& coefficients, const at::Tensor& x, const char* what) {
  TORCH_CHECK(coefficients.dim() >= 2 && coefficients.size(-1) == 3 && coefficients.size(-2) > 0,
              "biquad_cascade: expected ", what, " of shape [..., K, 3], but got ",
              coefficients.sizes());
  TORCH_CHECK(coefficients.scalar_type() == x.scalar_type(), "biquad_cascade: expected ", what,
              " of dtype ", x.scalar_type(), ", but got ", coefficients.scalar_type());
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(coefficients.size(-2));
  shape.push_back(3);
  at::Tensor expanded;
  try {
    expanded = coefficients.expand(shape);
  } catch (const c10::Error&) {
    TORCH_CHECK(false, "biquad_cascade: ", what, " of shape ", coefficients.sizes(),
                " does not broadcast to the signal's leading shape ", x.sizes());
  }
  return expanded.reshape({-1, shape[shape.size() - 2], 3});
}

}  // namespace

at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                          bool reverse) {
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0 && at::isFloatingType(x.scalar_type()),
              "biquad_cascade: expected a non-empty float or double signal [..., L], but got ",
              x.sizes(), " ", x.scalar_type());
  at::Tensor bs = coefficient_rows(b, x, "b"), as = coefficient_rows(a, x, "a");
  TORCH_CHECK(bs.size(1) == as.size(1), "biquad_cascade: expected as many sections in a as in b (",
              bs.size(1), "), but got ", as.size(1));
  at::Tensor a0 = as.narrow(2, 0, 1);
  at::Tensor y =
      BiquadCascade::apply(x.reshape({-1, x.size(-1)}), bs / a0, as.narrow(2, 1, 2) / a0, reverse);
  return y.view(x.sizes());
}

at::Tensor biquad_response(const at::Tensor& b, const at::Tensor& a, const at::Tensor& omega) {
  // Σ_i c_i·e^{−jωi} for each section, as real and imaginary parts: [..., K, F].
  auto polynomial = [&](const at::Tensor& c) {
    at::Tensor lags = at::arange(3, omega.options()).unsqueeze(1) * omega;  // 3×F
    at::Tensor re = at::matmul(c, at::cos(lags)), im = -at::matmul(c, at::sin(lags));
    return at::complex(re, im);
  };
  return (polynomial(b) / polynomial(a)).prod(-2);
}

at::Tensor biquad_cascade_frequency_sampling(const at::Tensor& x, const at::Tensor& b,
                                             const at::Tensor& a, int64_t n_taps) {
  TORCH_CHECK(n_taps >= 2 && n_taps % 2 == 0,
              "biquad_cascade_frequency_sampling: expected an even number of taps, but got ",
              n_taps);
  at::Tensor omega = at::arange(n_taps / 2 + 1, b.options()) * (2 * M_PI / double(n_taps));
  at::Tensor bs = coefficient_rows(b, x, "b"), as = coefficient_rows(a, x, "a");
  at::Tensor fir  = at::fft_irfft(biquad_response(bs, as, omega), n_taps, -1);  // R×N
  at::Tensor rows = x.reshape({-1, 1, x.size(-1)});
  return convolve(rows, fir.unsqueeze(1), ConvolutionMode::kCausal).view(x.sizes());
}

std::pair<at::Tensor, at::Tensor> cookbook_biquad(CookbookShape shape, const at::Tensor& omega,
                                                  const at::Tensor& q, const at::Tensor& log_gain) {
  at::Tensor c = at::cos(omega), alpha = at::sin(omega) / (2 * q);
  auto coefficients = [](const at::Tensor& c0, const at::Tensor& c1, const at::Tensor& c2) {
    auto all = at::broadcast_tensors({c0, c1, c2});
    return at::stack(all, -1);
  };
  at::Tensor one = at::ones_like(c);
  at::Tensor a   = coefficients(1 + alpha, -2 * c, 1 - alpha);
  switch (shape) {
    case CookbookShape::kLowpass:
      return {coefficients((1 - c) / 2, 1 - c, (1 - c) / 2), a};
    case CookbookShape::kHighpass:
      return {coefficients((1 + c) / 2, -(1 + c), (1 + c) / 2), a};
    case CookbookShape::kBandpass:
      return {coefficients(alpha, at::zeros_like(alpha), -alpha), a};
    case CookbookShape::kBandreject:
      return {coefficients(one, -2 * c, one), a};
    case CookbookShape::kAllpass:
      return {coefficients(1 - alpha, -2 * c, 1 + alpha), a};
    default:
      break;
  }
  at::Tensor amplitude = at::exp(log_gain / 2);  // the cookbook's A
  if (shape == CookbookShape::kPeaking)
    return {coefficients(1 + alpha * amplitude, -2 * c, 1 - alpha * amplitude),
            coefficients(1 + alpha / amplitude, -2 * c, 1 - alpha / amplitude)};
  // Shelves: the high shelf is the low shelf with c → −c and odd coefficients negated.
  at::Tensor sign = at::full({}, shape == CookbookShape::kLowShelf ? 1.0 : -1.0, c.options());
  at::Tensor cs   = c * sign;
  at::Tensor plus = amplitude + 1, minus = amplitude - 1;
  at::Tensor slope = 2 * at::sqrt(amplitude) * alpha;
  return {coefficients(amplitude * (plus - minus * cs + slope),
                       2 * sign * amplitude * (minus - plus * cs),
                       amplitude * (plus - minus * cs - slope)),
          coefficients(plus + minus * cs + slope, -2 * sign * (minus + plus * cs),
                       plus + minus * cs - slope)};
}

namespace reference {

at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a) {
  at::Tensor xs = x.detach().to(at::kDouble).reshape({-1, x.size(-1)}).contiguous();
  at::Tensor bs = coefficient_rows(b.detach().to(at::kDouble), x.to(at::kDouble), "b").contiguous();
  at::Tensor as = coefficient_rows(a.detach().to(at::kDouble), x.to(at::kDouble), "a").contiguous();
  at::Tensor y  = xs.clone();
  auto ya       = y.accessor<double, 2>();
  auto ba = bs.accessor<double, 3>(), aa = as.accessor<double, 3>();
  for (int64_t r = 0; r < y.size(0); ++r)
    for (int64_t k = 0; k < bs.size(1); ++k) {
      double a0 = aa[r][k][0], b0 = ba[r][k][0] / a0, b1 = ba[r][k][1] / a0, b2 = ba[r][k][2] / a0,
             a1 = aa[r][k][1] / a0, a2 = aa[r][k][2] / a0;
      double s1 = 0, s2 = 0;  // transposed direct form II
      for (int64_t n = 0; n < y.size(1); ++n) {
        double in = ya[r][n], out = b0 * in + s1;
        s1       = b1 * in - a1 * out + s2;
        s2       = b2 * in - a2 * out;
        ya[r][n] = out;
      }
    }
  return y.view(x.sizes());
}

}  // namespace reference
}  // namespace grafx::dsp
