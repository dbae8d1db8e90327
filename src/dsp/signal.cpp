#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/tangents.h"

#include <algorithm>
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
  const int64_t n = window.size(0), n_frames = spectra.size(-2);
  TORCH_CHECK(spectra.dim() >= 2 && spectra.is_complex() && spectra.size(-1) == n / 2 + 1 &&
                  hop >= 1 && hop <= n && length >= 1,
              "inverse_stft: expected complex spectra [..., frames, ", n / 2 + 1,
              "], a hop in [1, ", n, "] and a positive length, but got ", spectra.sizes(),
              " and hop ", hop);
  const int64_t total = (n_frames - 1) * hop + n;
  at::Tensor frames   = irfft(spectra, n) * window;  // [..., M, n]
  at::Tensor signal   = overlap_add(frames.reshape({-1, n_frames, n}), total, hop);
  at::Tensor envelope = overlap_add(window.pow(2).expand({1, n_frames, n}), total, hop);
  const int64_t kept  = std::min(length, total - n / 2);
  at::Tensor y        = (signal.narrow(1, n / 2, kept) / envelope.narrow(1, n / 2, kept));
  if (kept < length) y = at::constant_pad_nd(y, {0, length - kept});
  std::vector<int64_t> shape(spectra.sizes().begin(), spectra.sizes().end() - 2);
  shape.push_back(length);
  return y.view(shape);
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
  const auto n = static_cast<size_t>(length);
  std::vector<int64_t> before(n), after(n);
  std::vector<double> fraction(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double at = double(i);
    const auto next = std::upper_bound(positions.begin(), positions.end(), at) - positions.begin();
    before[i]       = std::max<int64_t>(next - 1, 0);
    after[i]        = std::min<int64_t>(next, int64_t(positions.size()) - 1);
    if (before[i] != after[i])
      fraction[i] = (at - positions[size_t(before[i])]) /
                    (positions[size_t(after[i])] - positions[size_t(before[i])]);
    else
      after[i] = before[i];  // held
  }
  const at::Device device = values.device();
  at::Tensor lo           = values.index_select(1, at::tensor(before, at::kLong).to(device));
  at::Tensor hi           = values.index_select(1, at::tensor(after, at::kLong).to(device));
  std::vector<int64_t> shape(size_t(values.dim()), 1);  // [1, length, 1...]
  shape[1]     = length;
  at::Tensor t = at::tensor(fraction, at::kDouble).to(values.options()).view(shape);
  return at::lerp(lo, hi, t).movedim(1, -1);
}

}  // namespace grafx::dsp
