#include <grafx/dsp/fir.h>

#include <ATen/ATen.h>

#include <cmath>

namespace grafx::dsp {

at::Tensor zero_phase_window(int64_t n_bins, const at::TensorOptions& options) {
  TORCH_CHECK(n_bins >= 1, "zero_phase_window: expected at least one bin, but got ", n_bins);
  at::Tensor lag = at::arange(-(n_bins - 1), n_bins, options.dtype(at::kDouble));
  return (0.5 + 0.5 * (lag * (M_PI / double(n_bins))).cos()).to(options);
}

at::Tensor zero_phase_fir(const at::Tensor& log_magnitude, const at::Tensor& window) {
  int64_t n_bins = log_magnitude.size(-1), n_taps = 2 * n_bins - 1;
  TORCH_CHECK(window.dim() == 1 && window.size(0) == n_taps,
              "zero_phase_fir: expected a window of ", n_taps, " taps for ", n_bins,
              " bins, but got ", window.sizes());
  return at::roll(at::fft_irfft(log_magnitude.exp(), n_taps, -1), n_bins - 1, -1) * window;
}

}  // namespace grafx::dsp
