#include "loss/spectral.h"

#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/error.h>

#include "dsp/rows.h"
#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace grafx::detail {

namespace {

const double kPi = std::acos(-1.0);

// sin(πx)/(πx), NumPy's normalised sinc.
double sinc(double x) { return x == 0.0 ? 1.0 : std::sin(kPi * x) / (kPi * x); }

// Solves A·x = b for a symmetric positive definite A (row-major n×n) by Cholesky.
std::vector<double> solve_positive_definite(std::vector<double> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t j = 0; j < n; ++j) {
    for (size_t k = 0; k < j; ++k) a[j * n + j] -= a[j * n + k] * a[j * n + k];
    a[j * n + j] = std::sqrt(a[j * n + j]);
    for (size_t i = j + 1; i < n; ++i) {
      for (size_t k = 0; k < j; ++k) a[i * n + j] -= a[i * n + k] * a[j * n + k];
      a[i * n + j] /= a[j * n + j];
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L·z = b
    for (size_t k = 0; k < i; ++k) b[i] -= a[i * n + k] * b[k];
    b[i] /= a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // Lᵀ·x = z
    for (size_t k = i + 1; k < n; ++k) b[i] -= a[k * n + i] * b[k];
    b[i] /= a[i * n + i];
  }
  return b;
}

/// Band pairs regrouped by band: band m weighs the bins [first[m], first[m] + count[m]) by
/// weights[offset[m] ...] (0 for a bin of its span that is not its own). Each band's sum is then
/// a dot product over contiguous bins, where adding every bin's pair into its bands made a chain
/// of stores and loads through the same few outputs, bin after bin.
template <typename T>
struct BandSpans {
  std::vector<int64_t> first, count, offset;
  std::vector<T> weights;

  BandSpans(const int64_t* bands, const T* pair_weights, int64_t bins, int64_t n_bands)
      : first(size_t(n_bands), bins), count(size_t(n_bands), 0), offset(size_t(n_bands), 0) {
    std::vector<int64_t> last(size_t(n_bands), -1);
    for (int64_t j = 0; j < 2 * bins; ++j)
      if (pair_weights[j] != 0) {
        const size_t m = size_t(bands[j]);
        first[m]       = std::min(first[m], j % bins);
        last[m]        = std::max(last[m], j % bins);
      }
    int64_t total = 0;
    for (size_t m = 0; m < size_t(n_bands); ++m) {
      count[m]  = std::max<int64_t>(0, last[m] - first[m] + 1);
      offset[m] = total;
      total += count[m];
    }
    weights.assign(size_t(total), T(0));
    for (int64_t j = 0; j < 2 * bins; ++j)
      if (pair_weights[j] != 0) {
        const size_t m = size_t(bands[j]);
        weights[size_t(offset[m] + j % bins - first[m])] += pair_weights[j];
      }
  }

  /// out[m] = Σ weights of band m times x over its bins, for every band m.
  void project(const T* x, T* out) const {
    for (size_t m = 0; m < first.size(); ++m) {
      const T *w = weights.data() + offset[m], *in = x + first[m];
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < count[m]; ++i) sum += w[i] * in[i];
      out[m] = sum;
    }
  }

  /// The adjoint of project: grad_x[k] = Σ over the bands m around bin k of their weight times
  /// grad_out[m], for `bins` bins.
  void adjoint(const T* grad_out, T* grad_x, int64_t bins) const {
    std::fill(grad_x, grad_x + bins, T(0));
    for (size_t m = 0; m < first.size(); ++m) {
      const T *w = weights.data() + offset[m], g = grad_out[m];
      T* out = grad_x + first[m];
#pragma omp simd
      for (int64_t i = 0; i < count[m]; ++i) out[i] += w[i] * g;
    }
  }
};

/// y[r, bands[j, k]] += weights[j, k]·x[r, k] over both pairs j of every bin k, and its adjoint
/// g_x[r, k] = Σ_j weights[j, k]·g[r, bands[j, k]]: rows x [R, bins], y [R, n_bands].
struct BandPairProjection : public torch::autograd::Function<BandPairProjection> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& bands, const at::Tensor& weights, int64_t n_bands) {
    ctx->save_for_backward({bands, weights});
    const at::Tensor xc = x.contiguous(), b = bands.contiguous(), w = weights.contiguous();
    const int64_t rows = xc.size(0), bins = xc.size(1);
    at::Tensor y = at::empty({rows, n_bands}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "band_pairs", [&] {
      const scalar_t* xp = xc.data_ptr<scalar_t>();
      scalar_t* yp       = y.data_ptr<scalar_t>();
      const BandSpans<scalar_t> spans(b.data_ptr<int64_t>(), w.data_ptr<scalar_t>(), bins, n_bands);
      at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) spans.project(xp + r * bins, yp + r * n_bands);
      });
    });
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved        = ctx->get_saved_variables();
    const at::Tensor &bands = saved[0], &weights = saved[1];
    const at::Tensor g = grads[0].contiguous();
    // Recorded, or carrying tangents: gathers, differentiable again.
    if (c10::GradMode::is_enabled() || dsp::tangent_of(g).defined())
      return {g.index_select(1, bands[0]) * weights[0] + g.index_select(1, bands[1]) * weights[1],
              at::Tensor(), at::Tensor(), at::Tensor()};
    const int64_t rows = g.size(0), n_bands = g.size(1), bins = bands.size(1);
    const at::Tensor b = bands.contiguous(), w = weights.contiguous();
    at::Tensor grad = at::empty({rows, bins}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "band_pairs_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* dp       = grad.data_ptr<scalar_t>();
      const BandSpans<scalar_t> spans(b.data_ptr<int64_t>(), w.data_ptr<scalar_t>(), bins, n_bands);
      at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) spans.adjoint(gp + r * n_bands, dp + r * bins, bins);
      });
    });
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// Sample i of a signal of `length` samples reflected at both ends (as reflection_pad1d: sample
/// −i is sample i), for i within one length of the signal.
inline int64_t reflected(int64_t i, int64_t length) {
  return i < 0 ? -i : i >= length ? 2 * (length - 1) - i : i;
}

/// How MelFrames numbers its frames and mel rows. Rows are read in sets of `channels`: 1, or 2
/// for a (left, right) pair, which makes 4 mel rows per frame time (left, right, sum,
/// difference). Frame f is frame t of channel c of set s, f = (s·T + t)·channels + c, so that the
/// channels of one moment lie side by side (in one group of frames); mel row (s·outputs + o)·T + t
/// is output o at time t of set s.
struct FrameOrder {
  int64_t channels = 1, n_frames = 0;

  int64_t outputs() const { return channels == 1 ? 1 : 4; }
  int64_t row(int64_t f) const { return f / (channels * n_frames) * channels + f % channels; }
  int64_t time(int64_t f) const { return f / channels % n_frames; }
  int64_t frame(int64_t row, int64_t t) const {
    return (row / channels * n_frames + t) * channels + row % channels;
  }
  int64_t mel_row(int64_t f, int64_t o) const {
    return (f / (channels * n_frames) * outputs() + o) * n_frames + time(f);
  }
};

/// Frames [first, first + count) of rows reflected by `pad` samples at both ends, times the
/// window, frame f being padded row order.row(f)[t·hop, t·hop + F)·window with t =
/// order.time(f), written from `frames` on. Only the frames that reach past a row's ends read
/// it sample by sample.
template <typename T>
void windowed_frames(const T* rows, const T* window, T* frames, int64_t first, int64_t count,
                     int64_t length, int64_t pad, const FrameOrder& order, int64_t size,
                     int64_t hop) {
  for (int64_t f = first; f < first + count; ++f) {
    const T* row        = rows + order.row(f) * length;
    const int64_t start = order.time(f) * hop - pad;
    T* out              = frames + (f - first) * size;
    if (start >= 0 && start + size <= length) {
#pragma omp simd
      for (int64_t i = 0; i < size; ++i) out[i] = row[start + i] * window[i];
    } else {
      for (int64_t i = 0; i < size; ++i) out[i] = row[reflected(start + i, length)] * window[i];
    }
  }
}

/// |X[k]| of one spectrum of `bins` complex values (interleaved real and imaginary parts), as
/// sqrt(re² + im²): the loop vectorises (hypot, std::abs's, would not).
template <typename T>
void magnitudes(const c10::complex<T>* spectrum, int64_t bins, T* out) {
  const T* parts = reinterpret_cast<const T*>(spectrum);
#pragma omp simd
  for (int64_t k = 0; k < bins; ++k)
    out[k] = std::sqrt(parts[2 * k] * parts[2 * k] + parts[2 * k + 1] * parts[2 * k + 1]);
}

/// The spectra of the sum and the difference of two channels, from theirs (the transform is
/// linear): `sum` and `difference` hold `bins` values each.
template <typename T>
void sum_and_difference(const c10::complex<T>* left, const c10::complex<T>* right, int64_t bins,
                        c10::complex<T>* sum, c10::complex<T>* difference) {
  const T *l = reinterpret_cast<const T*>(left), *r = reinterpret_cast<const T*>(right);
  T *s = reinterpret_cast<T*>(sum), *d = reinterpret_cast<T*>(difference);
#pragma omp simd
  for (int64_t i = 0; i < 2 * bins; ++i) {
    s[i] = l[i] + r[i];
    d[i] = l[i] - r[i];
  }
}

/// The mel rows of transformed frames [first, first + count) of `spectra` (the group's): mel
/// row order.mel_row(f, o) = the bands' weights times max(|X[k]|, floor) over the bins k of
/// spectrum X, which for one channel is frame f's and for a (left, right) pair (frames f and
/// f + 1) is the left's, the right's, their sum's and their difference's (o = 0 … 3).
template <typename T>
void mel_of_spectra(const c10::complex<T>* spectra, const BandSpans<T>& spans, T* mel,
                    int64_t first, int64_t count, const FrameOrder& order, int64_t bins,
                    int64_t n_bands, T floor) {
  std::vector<T> magnitude(static_cast<size_t>(bins));
  std::vector<c10::complex<T>> combined(static_cast<size_t>(2 * bins));  // sum, difference
  auto project = [&](const c10::complex<T>* spectrum, int64_t f, int64_t o) {
    magnitudes(spectrum, bins, magnitude.data());
#pragma omp simd
    for (int64_t k = 0; k < bins; ++k) magnitude[k] = std::max(magnitude[k], floor);
    spans.project(magnitude.data(), mel + order.mel_row(f, o) * n_bands);
  };
  for (int64_t i = 0; i < count; i += order.channels) {
    const c10::complex<T>* x = spectra + i * bins;
    project(x, first + i, 0);
    if (order.channels == 1) continue;
    sum_and_difference(x, x + bins, bins, combined.data(), combined.data() + bins);
    project(x + bins, first + i, 1);
    project(combined.data(), first + i, 2);
    project(combined.data() + bins, first + i, 3);
  }
}

/// The adjoint of mel_of_spectra and of the real FFT of `size` points: for each spectrum X it
/// reads, the mel gradient through the band pairs, times X/|X| where |X| passed the floor, with
/// every bin but DC and Nyquist halved (they stand for two bins of the full spectrum) and times
/// `size` (undoing the inverse transform's 1/size), summed over the spectra made from a frame's,
/// so that the inverse transform of `out` (the group's) is the frames' gradient.
template <typename T>
void spectra_gradient(const T* grad_mel, const c10::complex<T>* spectra, const BandSpans<T>& spans,
                      c10::complex<T>* out, int64_t first, int64_t count, const FrameOrder& order,
                      int64_t bins, int64_t n_bands, int64_t size, T floor) {
  const size_t n = size_t(bins);
  std::vector<T> magnitude(n), bin_weight(n, T(size) / 2);
  // The scales of each spectrum read: left (or the one channel), right, sum, difference.
  std::vector<T> scales(4 * n);
  std::vector<c10::complex<T>> combined(2 * n);
  bin_weight[0] = T(size);
  if (size % 2 == 0) bin_weight[n - 1] = T(size);
  auto scale_of = [&](const c10::complex<T>* spectrum, int64_t f, int64_t o) {
    T* scale = scales.data() + size_t(o) * n;
    spans.adjoint(grad_mel + order.mel_row(f, o) * n_bands, scale, bins);
    magnitudes(spectrum, bins, magnitude.data());
#pragma omp simd
    for (int64_t k = 0; k < bins; ++k) {
      const T m = magnitude[k];
      scale[k]  = m >= floor && m > 0 ? scale[k] / m * bin_weight[k] : T(0);
    }
  };
  for (int64_t i = 0; i < count; i += order.channels) {
    const c10::complex<T>* x = spectra + i * bins;
    const T* left            = reinterpret_cast<const T*>(x);
    T* h                     = reinterpret_cast<T*>(out + i * bins);
    scale_of(x, first + i, 0);
    const T* own = scales.data();
    if (order.channels == 1) {
#pragma omp simd
      for (int64_t k = 0; k < 2 * bins; ++k) h[k] = left[k] * own[k / 2];
      continue;
    }
    // The left's gradient a_L·L + a_M·(L + R) + a_S·(L − R) = (a_L + a_M + a_S)·L + (a_M − a_S)·R,
    // the right's a_R·R + a_M·(L + R) − a_S·(L − R) = (a_M − a_S)·L + (a_R + a_M + a_S)·R.
    sum_and_difference(x, x + bins, bins, combined.data(), combined.data() + n);
    scale_of(x + bins, first + i, 1);
    scale_of(combined.data(), first + i, 2);
    scale_of(combined.data() + n, first + i, 3);
    const T* right   = left + 2 * bins;
    const T *a_right = own + n, *a_sum = own + 2 * n, *a_difference = own + 3 * n;
    T* h_right = h + 2 * bins;
#pragma omp simd
    for (int64_t k = 0; k < 2 * bins; ++k) {
      const int64_t b = k / 2;
      const T cross = a_sum[b] - a_difference[b], shared = a_sum[b] + a_difference[b];
      h[k]       = (own[b] + shared) * left[k] + cross * right[k];
      h_right[k] = cross * left[k] + (a_right[b] + shared) * right[k];
    }
  }
}

/// The adjoint of windowed_frames: grad_rows[r] = Σ_t frame gradients times the window, added at
/// their frames' places, reflections included (rows in parallel, each one's frames in order).
/// Frame f's gradient is row f mod `group` of groups[f / group].
template <typename T>
void windowed_overlap_add(const std::vector<const T*>& groups, int64_t group, const T* window,
                          T* grad_rows, int64_t n_rows, int64_t length, int64_t pad,
                          const FrameOrder& order, int64_t size, int64_t hop) {
  at::parallel_for(0, n_rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t t = 0; t < order.n_frames; ++t) {
        const int64_t f = order.frame(r, t), start = t * hop - pad;
        const T* in = groups[size_t(f / group)] + (f % group) * size;
        T* row      = grad_rows + r * length;
        if (start >= 0 && start + size <= length) {
#pragma omp simd
          for (int64_t i = 0; i < size; ++i) row[start + i] += in[i] * window[i];
        } else {
          for (int64_t i = 0; i < size; ++i) row[reflected(start + i, length)] += in[i] * window[i];
        }
      }
  });
}

/// Frames in groups of about 256 KiB of float32 (a multiple of four: pocketfft transforms rows in
/// fours), each group's frames, transform and bands in turn on one thread while the groups share
/// the threads: a group stays in cache between its steps, and no transform's result is copied
/// into a shared tensor. Fixed by frame index, so results do not depend on the threads.
int64_t frames_per_group(int64_t size) {
  return std::max<int64_t>(4, ((int64_t(1) << 16) / size) / 4 * 4);
}

/// frame_magnitudes then apply_band_pairs in one Function on the CPU, without their
/// intermediate tensors: forward, the windowed frames, their real FFT, and magnitudes, floor and
/// band pairs in one loop; backward, the band pairs' adjoint, the floor, X/|X| and the FFT's
/// bin weights in one loop, the inverse FFT, and the window and overlap-add in one loop, where
/// autograd replays about ten passes over the frames. A backward pass that is recorded
/// (create_graph) or carries tangents differentiates the composition instead.
struct MelFrames : public torch::autograd::Function<MelFrames> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& signal,
                            int64_t pad, const at::Tensor& window, int64_t hop, double eps,
                            const at::Tensor& bands, const at::Tensor& weights, int64_t n_bands,
                            bool mid_side) {
    const int64_t length = signal.size(-1), size = window.size(0), bins = size / 2 + 1;
    const FrameOrder order{mid_side ? 2 : 1, (length + 2 * pad - size) / hop + 1};
    const at::Tensor rows = signal.reshape({-1, length}).contiguous();
    const at::Tensor w = window.contiguous(), b = bands.contiguous(), p = weights.contiguous();
    const int64_t n_rows = rows.size(0), n_spectra = n_rows * order.n_frames;
    const int64_t group      = frames_per_group(size);  // even: a pair's frames share a group
    const int64_t n_mel_rows = n_rows / order.channels * order.outputs() * order.n_frames;
    at::Tensor mel           = at::empty({n_mel_rows, n_bands}, rows.options());
    std::vector<at::Tensor> spectra(size_t((n_spectra + group - 1) / group));
    AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "mel_frames", [&] {
      const BandSpans<scalar_t> spans(b.data_ptr<int64_t>(), p.data_ptr<scalar_t>(), bins, n_bands);
      dsp::for_groups(n_spectra, group, [&](int64_t g, int64_t first, int64_t count) {
        at::Tensor frames = at::empty({count, size}, rows.options());
        windowed_frames(rows.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                        frames.data_ptr<scalar_t>(), first, count, length, pad, order, size, hop);
        spectra[size_t(g)] = dsp::rfft_rows(frames, size);
        mel_of_spectra(spectra[size_t(g)].data_ptr<c10::complex<scalar_t>>(), spans,
                       mel.data_ptr<scalar_t>(), first, count, order, bins, n_bands,
                       scalar_t(std::sqrt(eps)));
      });
    });
    ctx->save_for_backward({signal, w, b, p});
    ctx->saved_data["spectra"]  = c10::List<at::Tensor>(spectra);
    ctx->saved_data["pad"]      = pad;
    ctx->saved_data["hop"]      = hop;
    ctx->saved_data["eps"]      = eps;
    ctx->saved_data["n_bands"]  = n_bands;
    ctx->saved_data["mid_side"] = mid_side;
    std::vector<int64_t> shape  = signal.sizes().vec();
    shape.back()                = order.n_frames;
    if (mid_side) shape[shape.size() - 2] = 4;
    shape.push_back(n_bands);
    return mel.view(shape);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved         = ctx->get_saved_variables();
    const at::Tensor &signal = saved[0], &window = saved[1], &bands = saved[2], &weights = saved[3];
    const int64_t hop = ctx->saved_data["hop"].toInt(), pad = ctx->saved_data["pad"].toInt(),
                  n_bands = ctx->saved_data["n_bands"].toInt();
    const double eps      = ctx->saved_data["eps"].toDouble();
    const bool mid_side   = ctx->saved_data["mid_side"].toBool();
    if (c10::GradMode::is_enabled() || dsp::tangent_of(grads[0]).defined())
      return dsp::composed_backward(ctx, {signal}, 9, grads[0], [&](const auto& in) {
        return apply_band_pairs(
            frame_magnitudes(reflection_padded(in[0], pad), window, hop, eps, mid_side), bands,
            weights, n_bands);
      });
    const int64_t length = signal.size(-1), size = window.size(0), bins = size / 2 + 1;
    const FrameOrder order{mid_side ? 2 : 1, (length + 2 * pad - size) / hop + 1};
    const int64_t n_rows = signal.numel() / length, n_spectra = n_rows * order.n_frames;
    const int64_t group                 = frames_per_group(size);
    const c10::List<at::Tensor> spectra = ctx->saved_data["spectra"].toTensorList();
    const at::Tensor g                  = grads[0].contiguous();
    at::Tensor grad_rows                = at::zeros({n_rows, length}, signal.options());
    std::vector<at::Tensor> grad_frames(spectra.size());
    AT_DISPATCH_FLOATING_TYPES(signal.scalar_type(), "mel_frames_backward", [&] {
      const BandSpans<scalar_t> spans(bands.data_ptr<int64_t>(), weights.data_ptr<scalar_t>(), bins,
                                      n_bands);
      dsp::for_groups(n_spectra, group, [&](int64_t k, int64_t first, int64_t count) {
        const at::Tensor x = spectra.get(size_t(k));
        at::Tensor h       = at::empty_like(x);
        spectra_gradient(g.data_ptr<scalar_t>(), x.data_ptr<c10::complex<scalar_t>>(), spans,
                         h.data_ptr<c10::complex<scalar_t>>(), first, count, order, bins, n_bands,
                         size, scalar_t(std::sqrt(eps)));
        grad_frames[size_t(k)] = dsp::irfft_rows(h, size).contiguous();
      });
      std::vector<const scalar_t*> groups;
      for (const at::Tensor& frames : grad_frames) groups.push_back(frames.data_ptr<scalar_t>());
      windowed_overlap_add(groups, group, window.data_ptr<scalar_t>(),
                           grad_rows.data_ptr<scalar_t>(), n_rows, length, pad, order, size, hop);
    });
    torch::autograd::variable_list result(9);
    result[0] = grad_rows.view(signal.sizes());
    return result;
  }
};

}  // namespace

BandPairs band_pairs(const at::Tensor& filterbank) {
  const at::Tensor dense = filterbank.to(at::kDouble).contiguous();
  const int64_t n_bands = dense.size(0), bins = dense.size(1);
  at::Tensor bands = at::zeros({2, bins}, at::kLong), weights = at::zeros({2, bins}, at::kDouble);
  auto f = dense.accessor<double, 2>();
  auto b = bands.accessor<int64_t, 2>();
  auto w = weights.accessor<double, 2>();
  for (int64_t k = 0; k < bins; ++k) {
    int64_t found = 0;
    for (int64_t m = 0; m < n_bands; ++m) {
      if (f[m][k] == 0) continue;
      if (found == 2) return {};
      b[found][k] = m;
      w[found][k] = f[m][k];
      ++found;
    }
  }
  return {bands, weights, n_bands};
}

at::Tensor apply_band_pairs(const at::Tensor& magnitude, const at::Tensor& bands,
                            const at::Tensor& weights, int64_t n_bands) {
  std::vector<int64_t> shape = magnitude.sizes().vec();
  shape.back()               = n_bands;
  at::Tensor rows            = magnitude.reshape({-1, magnitude.size(-1)});
  return BandPairProjection::apply(rows, bands, weights, n_bands).view(shape);
}

at::Tensor mel_frame_magnitudes(const at::Tensor& signal, int64_t reflect_pad,
                                const at::Tensor& window, int64_t hop_size, double eps,
                                const at::Tensor& bands, const at::Tensor& weights, int64_t n_bands,
                                bool mid_side) {
  TORCH_CHECK(reflect_pad >= 0 && reflect_pad < signal.size(-1),
              "mel_frame_magnitudes: expected a reflection shorter than the signal's ",
              signal.size(-1), " samples, but got ", reflect_pad);
  TORCH_CHECK(!mid_side || (signal.dim() >= 2 && signal.size(-2) == 2),
              "mel_frame_magnitudes: expected (left, right) pairs [..., 2, T], but got ",
              signal.sizes());
  return MelFrames::apply(signal, reflect_pad, window, hop_size, eps, bands, weights, n_bands,
                          mid_side);
}

void check_signal_pair(const at::Tensor& x, const at::Tensor& y, const std::string& what) {
  auto describe = [](const at::Tensor& t) {
    std::ostringstream s;
    if (t.defined())
      s << t.scalar_type() << " on " << t.device();
    else
      s << "an undefined tensor";
    return s.str();
  };
  auto real_float = [](const at::Tensor& t) {
    return t.defined() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
  };
  if (!real_float(x) || !real_float(y) || x.scalar_type() != y.scalar_type() ||
      x.device() != y.device())
    throw LossError("grafx.loss.dtype", what + ": expected two signals both float32 or both " +
                                            "float64 on one device, but got " + describe(x) +
                                            " and " + describe(y));
  if (x.sizes() != y.sizes()) {
    std::ostringstream s;
    s << what << ": expected two signals of the same shape, but got " << x.sizes() << " and "
      << y.sizes();
    throw LossError("grafx.loss.shape", s.str());
  }
}

void check_length(int64_t n_samples, int64_t skip_samples, int64_t min_samples,
                  const std::string& what) {
  if (skip_samples >= n_samples)
    throw LossError("grafx.loss.skip", what + ": expected more than the " +
                                           std::to_string(skip_samples) +
                                           " warm-up samples to skip, but got signals of " +
                                           std::to_string(n_samples) + " samples");
  if (n_samples - skip_samples < min_samples)
    throw LossError("grafx.loss.too_short", what + ": expected at least " +
                                                std::to_string(min_samples) +
                                                " samples (the largest FFT size) after skipping " +
                                                std::to_string(skip_samples) + ", but got " +
                                                std::to_string(n_samples - skip_samples) + " of " +
                                                std::to_string(n_samples));
}

void check_resolutions(const std::vector<StftResolution>& resolutions, const std::string& what) {
  if (resolutions.empty())
    throw LossError("grafx.loss.options",
                    what + ": expected at least one STFT resolution, but got none");
  for (const auto& r : resolutions)
    if (r.fft_size > kMostFftSize)  // its filterbank and window alone would take gigabytes
      throw LossError("grafx.loss.options", what + ": expected FFT sizes of at most " +
                                                std::to_string(kMostFftSize) + ", but got " +
                                                std::to_string(r.fft_size));
    else if (r.window_size < 2 || r.window_size > r.fft_size || r.hop_size < 1)
      throw LossError(
          "grafx.loss.options",
          what + ": expected 2 <= window size <= FFT size and hop size >= 1, but got FFT " +
              std::to_string(r.fft_size) + ", hop " + std::to_string(r.hop_size) + ", window " +
              std::to_string(r.window_size));
}

at::Tensor padded_hann_window(const StftResolution& resolution) {
  at::Tensor window  = at::hann_window(resolution.window_size, /*periodic=*/true, at::kDouble);
  const int64_t left = (resolution.fft_size - resolution.window_size) / 2;
  return at::constant_pad_nd(window, {left, resolution.fft_size - resolution.window_size - left});
}

at::Tensor reflection_padded(const at::Tensor& x, int64_t pad) {
  if (pad == 0) return x;
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() += 2 * pad;
  return at::reflection_pad1d(x.reshape({-1, 1, x.size(-1)}), {pad, pad}).view(shape);
}

at::Tensor stft_magnitude(const at::Tensor& x, const at::Tensor& window, int64_t hop_size,
                          double eps) {
  return frame_magnitudes(reflection_padded(x, window.size(0) / 2), window, hop_size, eps);
}

at::Tensor frame_magnitudes(const at::Tensor& padded, const at::Tensor& window, int64_t hop_size,
                            double eps, bool mid_side) {
  at::Tensor frames  = padded.unfold(-1, window.size(0), hop_size) * window;
  at::Tensor spectra = dsp::rfft(frames, frames.size(-1));
  if (mid_side) {  // [..., 2, frames, bins] → [..., 4, frames, bins]
    const at::Tensor left = spectra.select(-3, 0), right = spectra.select(-3, 1);
    spectra = at::stack({left, right, left + right, left - right}, -3);
  }
  // sqrt(max(|X|², eps)) = max(|X|, √eps); the complex abs is twice as fast as squaring the parts.
  return at::abs(spectra).clamp_min(std::sqrt(eps));
}

at::Tensor apply_filterbank(const at::Tensor& magnitude, const at::Tensor& filterbank) {
  std::vector<int64_t> shape = magnitude.sizes().vec();
  shape.back()               = filterbank.size(0);
  at::Tensor columns         = magnitude.reshape({-1, magnitude.size(-1)}).t().contiguous();
  // A sparse product's backward has no forward-mode rule (Hessian-vector products): dense then.
  const bool dense = filterbank.is_sparse() && dsp::tangent_of(magnitude).defined();
  return at::mm(dense ? filterbank.to_dense() : filterbank, columns).t().view(shape);
}

double hz_to_mel(double frequency_hz) {
  const double log_step = std::log(6.4) / 27.0;
  return frequency_hz < 1000.0 ? frequency_hz * 3.0 / 200.0
                               : 15.0 + std::log(frequency_hz / 1000.0) / log_step;
}

double mel_to_hz(double mel) {
  const double log_step = std::log(6.4) / 27.0;
  return mel < 15.0 ? mel * 200.0 / 3.0 : 1000.0 * std::exp(log_step * (mel - 15.0));
}

at::Tensor mel_filterbank(double sample_rate, int64_t fft_size, int64_t n_mels) {
  const int64_t n_bins = fft_size / 2 + 1;
  // Band edges: n_mels + 2 points evenly spaced in mel from 0 Hz to Nyquist.
  std::vector<double> edges(n_mels + 2);
  const double top_mel = hz_to_mel(sample_rate / 2);
  for (int64_t i = 0; i < n_mels + 2; ++i)
    edges[i] = mel_to_hz(i == n_mels + 1 ? top_mel : top_mel * i / (n_mels + 1));
  at::Tensor weights = at::zeros({n_mels, n_bins}, at::kDouble);
  auto w             = weights.accessor<double, 2>();
  for (int64_t m = 0; m < n_mels; ++m) {
    const double lower = edges[m], centre = edges[m + 1], upper = edges[m + 2];
    for (int64_t k = 0; k < n_bins; ++k) {
      const double f    = k * sample_rate / fft_size;
      const double rise = (f - lower) / (centre - lower), fall = (upper - f) / (upper - centre);
      w[m][k] = std::max(0.0, std::min(rise, fall)) * 2.0 / (upper - lower);
    }
  }
  return weights;
}

double a_weighting_gain(double frequency_hz) {
  const double w1 = 2 * kPi * 20.598997, w2 = 2 * kPi * 107.65265, w3 = 2 * kPi * 737.86223,
               w4 = 2 * kPi * 12194.217, gain_1khz_db = 1.9997;
  const double w = 2 * kPi * frequency_hz, w_sq = w * w;
  return w4 * w4 * std::pow(10.0, gain_1khz_db / 20) * w_sq * w_sq /
         ((w_sq + w4 * w4) * (w_sq + w1 * w1) * std::sqrt((w_sq + w3 * w3) * (w_sq + w2 * w2)));
}

at::Tensor a_weighting_fir(double sample_rate, int64_t n_taps) {
  // The target: |H| of the bilinear transform of the analog filter, which is the analog
  // response at the warped frequency fs/π·tan(πf/fs), on the grid f_k = k/512 (of Nyquist).
  const int n_grid = 512;
  std::vector<double> f(n_grid), d(n_grid);
  for (int k = 0; k < n_grid; ++k) {
    f[k] = static_cast<double>(k) / n_grid;
    d[k] = a_weighting_gain(sample_rate / kPi * std::tan(kPi * f[k] / 2));
  }
  // scipy.signal.firls: minimise Σ_bands ∫ (H(f) − D(f))² df over the bands [f_2i, f_2i+1], D
  // linear within a band, for H(f) = Σ_n a_n cos(πnf); normal equations Q·a = b.
  const int64_t n_half = (n_taps - 1) / 2;
  std::vector<double> q(n_taps, 0.0), b(n_half + 1, 0.0);
  for (int i = 0; i + 1 < n_grid; i += 2) {
    const double f1 = f[i], f2 = f[i + 1];
    const double slope = (d[i + 1] - d[i]) / (f2 - f1), offset = d[i] - f1 * slope;
    for (int64_t n = 0; n < n_taps; ++n) q[n] += f2 * sinc(f2 * n) - f1 * sinc(f1 * n);
    auto b_term = [&](double x, int64_t n) {  // antiderivative of (slope·x + offset)·cos(πnx)
      if (n == 0) return x * (slope * x + offset) - slope * x * x / 2;
      return x * (slope * x + offset) * sinc(x * n) +
             slope * std::cos(kPi * n * x) / std::pow(kPi * n, 2);
    };
    for (int64_t n = 0; n <= n_half; ++n) b[n] += b_term(f2, n) - b_term(f1, n);
  }
  std::vector<double> q_matrix((n_half + 1) * (n_half + 1));
  for (int64_t k = 0; k <= n_half; ++k)
    for (int64_t n = 0; n <= n_half; ++n)
      q_matrix[k * (n_half + 1) + n] = q[std::abs(k - n)] + q[k + n];
  std::vector<double> a = solve_positive_definite(std::move(q_matrix), std::move(b));
  at::Tensor taps       = at::empty({n_taps}, at::kDouble);
  auto t                = taps.accessor<double, 1>();
  t[n_half]             = 2 * a[0];
  for (int64_t n = 1; n <= n_half; ++n) t[n_half - n] = t[n_half + n] = a[n];
  return taps;
}

at::Tensor spectral_convergence(const at::Tensor& x_mag, const at::Tensor& y_mag,
                                at::IntArrayRef dims) {
  // linalg_vector_norm (not sqrt of a sum) has a zero gradient at a perfect match.
  return at::linalg_vector_norm(y_mag - x_mag, 2, dims) / at::linalg_vector_norm(y_mag, 2, dims);
}

at::Tensor log_magnitude_distance(const at::Tensor& x_mag, const at::Tensor& y_mag,
                                  at::IntArrayRef dims) {
  return (y_mag.log() - x_mag.log()).abs().mean(dims);
}

}  // namespace grafx::detail
