#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <random>
#include <vector>

namespace grafx::dsp {

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
  // Overlap-add as col2im of one row: frames [R, n, M] -> [R, 1, 1, total].
  auto overlap_add = [&](const at::Tensor& columns) {
    return at::col2im(columns, {1, total}, {1, n}, {1, 1}, {0, 0}, {1, hop})
        .view({columns.size(0), total});
  };
  at::Tensor frames = irfft(spectra, n) * window;  // [..., M, n]
  at::Tensor signal = overlap_add(frames.reshape({-1, n_frames, n}).transpose(1, 2));
  at::Tensor envelope =
      overlap_add(window.pow(2).view({1, n, 1}).expand({1, n, n_frames}).contiguous());
  const int64_t kept = std::min(length, total - n / 2);
  at::Tensor y       = (signal.narrow(1, n / 2, kept) / envelope.narrow(1, n / 2, kept));
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
