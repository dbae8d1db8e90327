#include <grafx/dsp/float_math.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/tangents.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace grafx::dsp {

namespace {

/// y[r, t·hop + i] += x[r, t, i], rows in parallel (each row's frames in order).
template <typename T>
void overlap_add_rows(const T* x, T* y, int64_t rows, int64_t n_frames, int64_t n, int64_t length,
                      int64_t hop) {
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t t = 0; t < n_frames; ++t) {
        const T* frame = x + (r * n_frames + t) * n;
        T* place       = y + r * length + t * hop;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) place[i] += frame[i];
      }
  });
}

struct OverlapAdd : public torch::autograd::Function<OverlapAdd> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& frames,
                            int64_t length, int64_t hop) {
    const int64_t rows = frames.size(0), n_frames = frames.size(1), n = frames.size(2);
    ctx->saved_data["shape"] = std::vector<int64_t>{n_frames, n, hop};
    if (!frames.device().is_cpu() || !at::isFloatingType(frames.scalar_type()))
      return at::unfold_backward(frames, {rows, length}, 1, n, hop);
    const at::Tensor in = frames.contiguous();
    at::Tensor out      = at::zeros({rows, length}, frames.options());
    AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "overlap_add", [&] {
      overlap_add_rows(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), rows, n_frames, n, length,
                       hop);
    });
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto shape      = ctx->saved_data["shape"].toIntVector();  // frames, n, hop
    const int64_t covered = (shape[0] - 1) * shape[2] + shape[1];
    return {grads[0].narrow(1, 0, covered).unfold(1, shape[1], shape[2]), at::Tensor(),
            at::Tensor()};
  }
};

/// Where the frames of an inverse STFT land: frame t's sample i is output sample
/// t·hop + i − n/2 (the centring cut), kept where it falls in [0, kept).
struct StftGeometry {
  int64_t rows, n_frames, n, hop, length, kept;

  StftGeometry(const at::Tensor& spectra, int64_t n, int64_t hop, int64_t length)
      : rows(spectra.numel() / (spectra.size(-2) * spectra.size(-1))),
        n_frames(spectra.size(-2)),
        n(n),
        hop(hop),
        length(length),
        kept(std::min(length, (n_frames - 1) * hop + n - n / 2)) {}

  /// 1 / the window's squared overlap-add at each kept output sample, in the frames' order.
  template <typename T>
  std::vector<T> inverse_envelope(const T* w) const {
    std::vector<T> envelope(size_t(kept), T(0));
    for_kept([&](int64_t, int64_t i, int64_t j, int64_t count) {
      for (int64_t k = 0; k < count; ++k) envelope[size_t(j + k)] += w[i + k] * w[i + k];
    });
    for (T& e : envelope) e = T(1) / e;
    return envelope;
  }

  /// Calls span(t, i, j, count) for each frame t: its samples [i, i + count) land at output
  /// samples [j, j + count), the part of the frame that is kept (count may be 0).
  template <typename Span>
  void for_kept(const Span& span) const {
    for (int64_t t = 0; t < n_frames; ++t) {
      const int64_t start = t * hop - n / 2, i = std::clamp<int64_t>(-start, 0, n),
                    end = std::clamp<int64_t>(kept - start, i, n);
      span(t, i, start + i, end - i);
    }
  }
};

/// Row r of an inverse STFT from its frames f [rows, frames, n]: the kept samples of every
/// frame times the window, overlap-added, divided by the envelope (`scale`).
template <typename T>
void inverse_stft_row(const StftGeometry& g, const T* f, const T* w, const T* scale, T* row) {
  std::fill(row, row + g.length, T(0));
  g.for_kept([&](int64_t t, int64_t i, int64_t j, int64_t count) {
    const T *frame = f + t * g.n + i, *wi = w + i;
    T* place = row + j;
#pragma omp simd
    for (int64_t k = 0; k < count; ++k) place[k] += wi[k] * frame[k];
  });
#pragma omp simd
  for (int64_t j = 0; j < g.kept; ++j) row[j] *= scale[j];
}

/// inverse_stft_row's adjoint for a row of the output gradient: its kept samples times `scale`
/// into `scaled`, then framed by the window into the row's frames [frames, n] (zero where cut).
template <typename T>
void inverse_stft_row_adjoint(const StftGeometry& g, const T* row, const T* w, const T* scale,
                              T* scaled, T* frames) {
#pragma omp simd
  for (int64_t j = 0; j < g.kept; ++j) scaled[j] = row[j] * scale[j];
  g.for_kept([&](int64_t t, int64_t i, int64_t j, int64_t count) {
    T* frame    = frames + t * g.n;
    const T *wi = w + i, *from = scaled + j;
    std::fill(frame, frame + i, T(0));
#pragma omp simd
    for (int64_t k = 0; k < count; ++k) frame[i + k] = wi[k] * from[k];
    std::fill(frame + i + count, frame + g.n, T(0));
  });
}

/// inverse_stft on the CPU as one Function, row by row on every thread: forward, a row's
/// frames by irfft, overlap-added windowed and divided by the envelope while they are in cache;
/// backward, a row's output gradient framed times the window, 1/envelope and irfft's adjoint
/// scale 2/n, then their rfft. The composed form makes about eight passes over all the frames or
/// the signal each way, with pads and cuts, and ATen's split transforms copy their results.
struct InverseStft : public torch::autograd::Function<InverseStft> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& spectra,
                            const at::Tensor& window, int64_t hop, int64_t length) {
    const StftGeometry g(spectra, window.size(0), hop, length);
    const at::Tensor rows = spectra.reshape({g.rows, g.n_frames, spectra.size(-1)});
    const at::Tensor w    = window.to(c10::toRealValueType(spectra.scalar_type())).contiguous();
    at::Tensor y          = at::empty({g.rows, length}, w.options());
    AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "inverse_stft", [&] {
      const scalar_t* wp                = w.data_ptr<scalar_t>();
      const std::vector<scalar_t> scale = g.inverse_envelope(wp);
      scalar_t* out                     = y.data_ptr<scalar_t>();
      at::parallel_for(0, g.rows, 1, [&](int64_t begin, int64_t end) {
        c10::NoGradGuard no_grad;  // per thread: workers start with the grad mode on
        for (int64_t r = begin; r < end; ++r) {
          const at::Tensor frames = irfft_rows(rows[r], g.n).contiguous();
          inverse_stft_row(g, frames.data_ptr<scalar_t>(), wp, scale.data(), out + r * length);
        }
      });
    });
    ctx->save_for_backward({spectra, window});
    ctx->saved_data["geometry"] = std::vector<int64_t>{hop, length};
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved          = ctx->get_saved_variables();
    const auto geometry       = ctx->saved_data["geometry"].toIntVector();
    const at::Tensor &spectra = saved[0], &window = saved[1];
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined())
      return composed_backward(ctx, {spectra}, 4, grads[0], [&](const auto& in) {
        return composed_inverse_stft(in[0], window, geometry[0], geometry[1]);
      });
    const StftGeometry g(spectra, window.size(0), geometry[0], geometry[1]);
    const at::Tensor grad   = grads[0].contiguous();
    const at::Tensor w      = window.to(grad.scalar_type()).contiguous();
    at::Tensor grad_spectra = at::empty({g.rows, g.n_frames, g.n / 2 + 1}, spectra.options());
    AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "inverse_stft_backward", [&] {
      const scalar_t *gp = grad.data_ptr<scalar_t>(), *wp = w.data_ptr<scalar_t>();
      std::vector<scalar_t> scale = g.inverse_envelope(wp);
      for (scalar_t& s : scale) s *= scalar_t(2) / scalar_t(g.n);  // irfft's adjoint (DC below)
      at::parallel_for(0, g.rows, 1, [&](int64_t begin, int64_t end) {
        c10::NoGradGuard no_grad;
        std::vector<scalar_t> scaled(size_t(g.kept));
        at::Tensor frames = at::empty({g.n_frames, g.n}, grad.options());
        for (int64_t r = begin; r < end; ++r) {
          inverse_stft_row_adjoint(g, gp + r * g.length, wp, scale.data(), scaled.data(),
                                   frames.data_ptr<scalar_t>());
          at::Tensor row = grad_spectra[r];
          row.copy_(rfft_rows(frames, g.n));
          row.narrow(-1, 0, 1).mul_(0.5);  // DC and Nyquist appear once in the full spectrum
          if (g.n % 2 == 0) row.narrow(-1, g.n / 2, 1).mul_(0.5);
        }
      });
    });
    return {grad_spectra.view(spectra.sizes()), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// A row of dry_wet's backward: ∂dry, ∂processed where wanted, and Σ g·(processed − dry).
template <typename T>
double dry_wet_row_adjoint(const T* g, const T* dry, const T* processed, T w, T* grad_dry,
                           T* grad_processed, int64_t length) {
  double sum   = 0;
  const T kept = T(1) - w;
  if (grad_dry && grad_processed) {  // the usual case, in one loop
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < length; ++i) {
      grad_dry[i]       = g[i] * kept;
      grad_processed[i] = g[i] * w;
      sum += double(g[i] * (processed[i] - dry[i]));
    }
    return sum;
  }
  if (grad_dry) {
#pragma omp simd
    for (int64_t i = 0; i < length; ++i) grad_dry[i] = g[i] * kept;
  }
  if (grad_processed) {
#pragma omp simd
    for (int64_t i = 0; i < length; ++i) grad_processed[i] = g[i] * w;
  }
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < length; ++i) sum += double(g[i] * (processed[i] - dry[i]));
  return sum;
}

struct DryWet : public torch::autograd::Function<DryWet> {
  static bool applies(const at::Tensor& dry, const at::Tensor& processed, const at::Tensor& wet) {
    return plain_on_cpu({dry, processed, wet}) && dry.dim() == 3 &&
           dry.sizes() == processed.sizes() && wet.dim() == 3 && wet.size(0) == dry.size(0) &&
           wet.size(1) == 1 && wet.size(2) == 1 && at::isFloatingType(dry.scalar_type()) &&
           processed.scalar_type() == dry.scalar_type() && wet.scalar_type() == dry.scalar_type();
  }

  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& dry,
                            const at::Tensor& processed, const at::Tensor& wet) {
    ctx->save_for_backward({dry, processed, wet});
    return at::lerp(dry, processed, wet);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined())
      return composed_backward(ctx, {saved[0], saved[1], saved[2]}, 3, grads[0],
                               [](const auto& in) { return at::lerp(in[0], in[1], in[2]); });
    const at::Tensor g = grads[0].contiguous(), dry = saved[0].contiguous(),
                     processed = saved[1].contiguous(), wet = saved[2].contiguous();
    const int64_t items = dry.size(0), channels = dry.size(1), length = dry.size(2),
                  rows        = items * channels;
    at::Tensor grad_dry       = ctx->needs_input_grad(0) ? at::empty_like(dry) : at::Tensor();
    at::Tensor grad_processed = ctx->needs_input_grad(1) ? at::empty_like(dry) : at::Tensor();
    std::vector<double> sums(size_t(rows), 0.0);
    AT_DISPATCH_FLOATING_TYPES(dry.scalar_type(), "dry_wet_backward", [&] {
      using T     = scalar_t;
      const T *gp = g.data_ptr<T>(), *dp = dry.data_ptr<T>(), *pp = processed.data_ptr<T>(),
              *wp = wet.data_ptr<T>();
      T* gd       = grad_dry.defined() ? grad_dry.data_ptr<T>() : nullptr;
      T* gq       = grad_processed.defined() ? grad_processed.data_ptr<T>() : nullptr;
      at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t at = r * length;
          sums[size_t(r)] =
              dry_wet_row_adjoint(gp + at, dp + at, pp + at, wp[r / channels],
                                  gd ? gd + at : nullptr, gq ? gq + at : nullptr, length);
        }
      });
    });
    at::Tensor grad_wet;
    if (ctx->needs_input_grad(2)) {
      std::vector<double> per_item(size_t(items), 0.0);
      for (int64_t r = 0; r < rows; ++r) per_item[size_t(r / channels)] += sums[size_t(r)];
      grad_wet = at::tensor(per_item, at::kDouble).to(wet.scalar_type()).view(wet.sizes());
    }
    return {grad_dry, grad_processed, grad_wet};
  }
};

/// Where the samples of a curve through points at ascending `positions` lie: runs of samples
/// between the same two points (equal where the curve is held, before the first point and after
/// the last), and each sample's fraction of the way from one to the other, in float64.
struct CurveSamples {
  std::vector<int64_t> run_starts, before, after;  // per run; the last run ends at the length
  std::vector<double> fraction;                    // per sample
};

CurveSamples curve_samples(const std::vector<double>& positions, int64_t length) {
  CurveSamples s;
  s.fraction.assign(size_t(length), 0.0);
  const auto last = int64_t(positions.size()) - 1;
  int64_t next    = 0;  // the first point after sample i: samples ascend, so it only moves on
  for (int64_t i = 0; i < length; ++i) {
    const double at        = double(i);
    const int64_t was_next = next;
    while (next <= last && positions[size_t(next)] <= at) ++next;
    const int64_t before = std::max<int64_t>(next - 1, 0), after = std::min(next, last);
    if (i == 0 || next != was_next)  // a run starts where a point is passed
      s.run_starts.push_back(i), s.before.push_back(before), s.after.push_back(after);
    if (before != after)
      s.fraction[size_t(i)] =
          (at - positions[size_t(before)]) / (positions[size_t(after)] - positions[size_t(before)]);
  }
  s.run_starts.push_back(length);
  return s;
}

/// piecewise_linear by composed ATen operations: on other devices, for tangents and for
/// recorded backward passes.
at::Tensor composed_piecewise_linear(const at::Tensor& values, const CurveSamples& s,
                                     int64_t length) {
  std::vector<int64_t> before, after;  // per sample
  for (size_t run = 0; run + 1 < s.run_starts.size(); ++run) {
    const int64_t n = s.run_starts[run + 1] - s.run_starts[run];
    before.insert(before.end(), size_t(n), s.before[run]);
    after.insert(after.end(), size_t(n), s.after[run]);
  }
  const at::Device device = values.device();
  at::Tensor lo           = values.index_select(1, at::tensor(before, at::kLong).to(device));
  at::Tensor hi           = values.index_select(1, at::tensor(after, at::kLong).to(device));
  std::vector<int64_t> shape(size_t(values.dim()), 1);  // [1, length, 1...]
  shape[1]     = length;
  at::Tensor t = at::tensor(s.fraction, at::kDouble).to(values.options()).view(shape);
  return at::lerp(lo, hi, t).movedim(1, -1);
}

/// Curves through the points of rows [R, K, C] (row = r·C + c; `w`: each sample's fraction in
/// T) into y [R, C, length], run by run, rows in parallel; in the two-sided form the streams'
/// curves take too (stream/curve.cpp).
template <typename T>
void piecewise_linear_rows(const T* points, T* y, const CurveSamples& s, const std::vector<T>& w,
                           int64_t rows, int64_t n_points, int64_t channels) {
  const int64_t length = int64_t(w.size()), runs = int64_t(s.before.size());
  const T* weight = w.data();
  at::parallel_for(0, rows * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* curve = points + (row / channels) * n_points * channels + row % channels;
      T* out         = y + row * length;
      for (int64_t run = 0; run < runs; ++run) {
        const T lo          = curve[s.before[size_t(run)] * channels],
                hi          = curve[s.after[size_t(run)] * channels];
        const int64_t first = s.run_starts[size_t(run)], last = s.run_starts[size_t(run) + 1];
#pragma omp simd
        for (int64_t i = first; i < last; ++i) out[i] = lerp_two_sided(lo, hi, weight[i]);
      }
    }
  });
}

/// The adjoint of piecewise_linear_rows: each run's gradients g [R, C, length] summed into its
/// two points in float64 (∂/∂lo = 1 − w and ∂/∂hi = w in either form of the lerp), into
/// grad [R, K, C].
template <typename T>
void piecewise_linear_adjoint_rows(const T* g, T* grad, const CurveSamples& s,
                                   const std::vector<T>& w, int64_t rows, int64_t n_points,
                                   int64_t channels) {
  const int64_t length = int64_t(w.size()), runs = int64_t(s.before.size());
  const T* weight = w.data();
  at::parallel_for(0, rows * channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> sums(static_cast<size_t>(n_points));
    for (int64_t row = begin; row < end; ++row) {
      std::fill(sums.begin(), sums.end(), 0.0);
      const T* gy = g + row * length;
      for (int64_t run = 0; run < runs; ++run) {
        const int64_t first = s.run_starts[size_t(run)], last = s.run_starts[size_t(run) + 1];
        double lo = 0, hi = 0;
#pragma omp simd reduction(+ : lo, hi)
        for (int64_t i = first; i < last; ++i) {
          lo += double(gy[i] * (T(1) - weight[i]));
          hi += double(gy[i] * weight[i]);
        }
        sums[size_t(s.before[size_t(run)])] += lo;
        sums[size_t(s.after[size_t(run)])] += hi;
      }
      T* point = grad + (row / channels) * n_points * channels + row % channels;
      for (int64_t k = 0; k < n_points; ++k) point[k * channels] = T(sums[size_t(k)]);
    }
  });
}

/// piecewise_linear of values [R, K, C] on the CPU -> [R, C, length], one vectorised pass over
/// the output each way. The composed form's backward scatters each sample's gradient into its
/// two points (index_add, on one thread: about half of what automating the levels added to a
/// fit step).
struct PiecewiseLinear : public torch::autograd::Function<PiecewiseLinear> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& values,
                            CurveSamples samples) {
    const at::Tensor v = values.contiguous();
    const int64_t rows = v.size(0), points = v.size(1), channels = v.size(2);
    at::Tensor out = at::empty({rows, channels, int64_t(samples.fraction.size())}, v.options());
    AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "piecewise_linear", [&] {
      piecewise_linear_rows(v.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), samples,
                            weights<scalar_t>(samples), rows, points, channels);
    });
    ctx->saved_data["run_starts"] = std::move(samples.run_starts);
    ctx->saved_data["before"]     = std::move(samples.before);
    ctx->saved_data["after"]      = std::move(samples.after);
    ctx->saved_data["fraction"]   = std::move(samples.fraction);
    ctx->saved_data["points"]     = points;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const CurveSamples s{
        ctx->saved_data["run_starts"].toIntVector(), ctx->saved_data["before"].toIntVector(),
        ctx->saved_data["after"].toIntVector(), ctx->saved_data["fraction"].toDoubleVector()};
    const int64_t points = ctx->saved_data["points"].toInt();
    const at::Tensor g   = grads[0].contiguous();
    const int64_t rows = g.size(0), channels = g.size(1), length = g.size(2);
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined()) {
      // Recorded or carrying a tangent: by the composed form, which is linear in the values, so
      // any values serve as its point of differentiation.
      const at::Tensor zeros = at::zeros({rows, points, channels}, g.options());
      return composed_backward(ctx, {zeros.requires_grad_()}, 2, grads[0], [&](const auto& in) {
        return composed_piecewise_linear(in[0], s, length);
      });
    }
    at::Tensor grad = at::empty({rows, points, channels}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "piecewise_linear_backward", [&] {
      piecewise_linear_adjoint_rows(g.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(), s,
                                    weights<scalar_t>(s), rows, points, channels);
    });
    return {grad, at::Tensor()};
  }

  /// The fractions in T, as the forward pass weighs the points.
  template <typename T>
  static std::vector<T> weights(const CurveSamples& s) {
    return std::vector<T>(s.fraction.begin(), s.fraction.end());
  }
};

}  // namespace

at::Tensor zero_padded(const at::Tensor& x, int64_t left, int64_t right) {
  TORCH_CHECK(left >= 0 && right >= 0, "zero_padded: expected pads of at least 0, but got ", left,
              " and ", right);
  if (left == 0 && right == 0) return x;
  std::vector<int64_t> shape = x.sizes().vec();
  const int64_t length       = shape.back();
  shape.back() += left + right;
  at::Tensor out = at::empty(shape, x.options());
  out.narrow(-1, 0, left).zero_();
  out.narrow(-1, left + length, right).zero_();
  out.narrow(-1, left, length).copy_(x);  // recorded (CopySlices); a tangent goes along
  return out;
}

at::Tensor overlap_add(const at::Tensor& frames, int64_t length, int64_t hop) {
  TORCH_CHECK(
      frames.dim() == 3 && hop >= 1 && length >= (frames.size(1) - 1) * hop + frames.size(2),
      "overlap_add: expected frames [R, T, n] and a length of at least (T − 1)·hop + n, "
      "but got ",
      frames.sizes(), ", hop ", hop, " and length ", length);
  auto [primal, tangent] = unpack_dual(frames);  // linear: the tangent's overlap-add
  if (!tangent.defined()) return OverlapAdd::apply(frames, length, hop);
  return make_dual(OverlapAdd::apply(primal, length, hop), OverlapAdd::apply(tangent, length, hop));
}

at::Tensor to_mid_side(const at::Tensor& x) {
  at::Tensor left = x.narrow(1, 0, 1), right = x.narrow(1, 1, 1);
  return at::cat({left + right, left - right}, 1) * 0.5;
}

at::Tensor from_mid_side(const at::Tensor& x) {
  at::Tensor mid = x.narrow(1, 0, 1), side = x.narrow(1, 1, 1);
  return at::cat({mid + side, mid - side}, 1);
}

at::Tensor normalize_energy(const at::Tensor& h) {
  return h / (h.pow(2).sum(-1, true).mean(-2, true) + 1e-12).sqrt();
}

at::Tensor inverse_stft(const at::Tensor& spectra, const at::Tensor& window, int64_t hop,
                        int64_t length) {
  const int64_t n = window.size(0);
  TORCH_CHECK(spectra.dim() >= 2 && spectra.is_complex() && spectra.size(-1) == n / 2 + 1 &&
                  hop >= 1 && hop <= n && length >= 1,
              "inverse_stft: expected complex spectra [..., frames, ", n / 2 + 1,
              "], a hop in [1, ", n, "] and a positive length, but got ", spectra.sizes(),
              " and hop ", hop);
  std::vector<int64_t> shape(spectra.sizes().begin(), spectra.sizes().end() - 2);
  shape.push_back(length);
  const bool fused = plain_on_cpu({spectra, window}) && !window.requires_grad();
  return (fused ? InverseStft::apply(spectra, window, hop, length)
                : composed_inverse_stft(spectra, window, hop, length))
      .view(shape);
}

at::Tensor composed_inverse_stft(const at::Tensor& spectra, const at::Tensor& window, int64_t hop,
                                 int64_t length) {
  const int64_t n = window.size(0), n_frames = spectra.size(-2);
  const int64_t total = (n_frames - 1) * hop + n;
  at::Tensor frames   = irfft(spectra, n) * window;  // [..., M, n]
  at::Tensor signal   = overlap_add(frames.reshape({-1, n_frames, n}), total, hop);
  at::Tensor envelope = overlap_add(window.pow(2).expand({1, n_frames, n}), total, hop);
  const int64_t kept  = std::min(length, total - n / 2);
  at::Tensor y        = (signal.narrow(1, n / 2, kept) / envelope.narrow(1, n / 2, kept));
  return kept < length ? at::constant_pad_nd(y, {0, length - kept}) : y;
}

at::Tensor dry_wet(const at::Tensor& dry, const at::Tensor& processed, const at::Tensor& wet) {
  return DryWet::applies(dry, processed, wet) ? DryWet::apply(dry, processed, wet)
                                              : at::lerp(dry, processed, wet);
}

at::Tensor uniform_noise(int64_t n_channels, int64_t length, uint64_t seed) {
  std::mt19937_64 generator(seed);  // its sequence is fixed by the C++ standard
  at::Tensor noise = at::empty({n_channels, length}, at::kDouble);
  double* data     = noise.data_ptr<double>();
  for (int64_t i = 0; i < noise.numel(); ++i)
    data[i] = double(generator() >> 11) * 0x1.0p-52 - 1.0;  // 53 bits in [0, 2), minus 1
  return noise;
}

at::Tensor normalized_impulse_responses(const at::Tensor& h, ImpulseLayout layout) {
  return normalize_energy(layout == ImpulseLayout::kPseudoMidSide ? from_mid_side(h) : h);
}

at::Tensor piecewise_linear(const at::Tensor& values, const std::vector<double>& positions,
                            int64_t length) {
  TORCH_CHECK(values.dim() >= 2 && values.size(1) == int64_t(positions.size()) &&
                  !positions.empty() && length >= 0,
              "piecewise_linear: expected values [R, K, ...] with K = ", positions.size(),
              " > 0 points and a length of at least 0, but got ", values.sizes(), " and ", length);
  CurveSamples samples       = curve_samples(positions, length);
  std::vector<int64_t> shape = values.sizes().vec();  // [R, shape..., length]
  shape.erase(shape.begin() + 1);
  shape.push_back(length);
  if (!plain_on_cpu({values}) || !at::isFloatingType(values.scalar_type()) || values.numel() == 0)
    return composed_piecewise_linear(values, samples, length);
  const int64_t rows = values.size(0), points = values.size(1);
  return PiecewiseLinear::apply(values.reshape({rows, points, -1}), std::move(samples)).view(shape);
}

at::Tensor piecewise_linear_at(const at::Tensor& values, const at::Tensor& first_points,
                               double points_per_sample, int64_t length) {
  TORCH_CHECK(values.dim() >= 2 && values.size(1) > 0 && first_points.dim() == 1 &&
                  first_points.size(0) == values.size(0) && length >= 0 && points_per_sample > 0 &&
                  std::isfinite(points_per_sample),
              "piecewise_linear_at: expected values [R, K, ...] with K > 0, first points [R], a "
              "positive spacing and a length of at least 0, but got ",
              values.sizes(), ", ", first_points.sizes(), ", ", points_per_sample, " and ", length);
  const int64_t rows = values.size(0), points = values.size(1);
  const at::Tensor flat = values.reshape({rows, points, -1});  // [R, K, S]
  const at::Tensor place =
      first_points.to(at::kDouble).unsqueeze(1) +
      at::arange(length, first_points.options().dtype(at::kDouble)) * points_per_sample;  // [R, L]
  // Held before the first point (the fraction clamps to 0) and after the last (both ends there).
  const at::Tensor before   = place.floor().clamp(0, double(points - 1));
  const at::Tensor fraction = (place - before).clamp(0, 1).to(values.scalar_type()).unsqueeze(2);
  const at::Tensor lo_index = before.to(at::kLong);
  const at::Tensor hi_index = (lo_index + 1).clamp_max(points - 1);
  auto gathered             = [&](const at::Tensor& index) {  // [R, L, S]
    return flat.gather(1, index.unsqueeze(2).expand({rows, length, flat.size(2)}));
  };
  std::vector<int64_t> shape = values.sizes().vec();  // [R, shape..., length]
  shape.erase(shape.begin() + 1);
  shape.push_back(length);
  return at::lerp(gathered(lo_index), gathered(hi_index), fraction).movedim(1, -1).reshape(shape);
}

}  // namespace grafx::dsp
