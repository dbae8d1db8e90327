#include <grafx/dsp/fir.h>
#include <grafx/dsp/parallel_fft.h>

#include <ATen/ATen.h>

#include <cmath>

namespace grafx::dsp {

at::Tensor zero_phase_window(int64_t n_bins, const at::TensorOptions& options, Window window) {
  TORCH_CHECK(n_bins >= 1, "zero_phase_window: expected at least one bin, but got ", n_bins);
  at::Tensor phase =
      at::arange(-(n_bins - 1), n_bins, options.dtype(at::kDouble)) * (M_PI / double(n_bins));
  switch (window) {
    case Window::kHamming:
      return (0.54 + 0.46 * phase.cos()).to(options);
    case Window::kBlackman:
      return (0.42 + 0.5 * phase.cos() + 0.08 * (2 * phase).cos()).to(options);
    case Window::kRectangular:
      return at::ones_like(phase).to(options);
    default:
      return (0.5 + 0.5 * phase.cos()).to(options);
  }
}

at::Tensor zero_phase_fir(const at::Tensor& log_magnitude, const at::Tensor& window) {
  int64_t n_bins = log_magnitude.size(-1), n_taps = 2 * n_bins - 1;
  TORCH_CHECK(window.dim() == 1 && window.size(0) == n_taps,
              "zero_phase_fir: expected a window of ", n_taps, " taps for ", n_bins,
              " bins, but got ", window.sizes());
  return at::roll(irfft(log_magnitude.exp(), n_taps), n_bins - 1, -1) * window;
}

double to_scale(FrequencyScale scale, double f) {
  switch (scale) {
    case FrequencyScale::kLog:
      return std::log(f);
    case FrequencyScale::kMelHtk:
      return 2595.0 * std::log10(1.0 + f / 700.0);
    case FrequencyScale::kMelSlaney:
      return f < 1000.0 ? 3.0 * f / 200.0 : 15.0 + std::log(f / 1000.0) * 27.0 / std::log(6.4);
    case FrequencyScale::kBarkTraunmuller: {
      double b = 26.81 * f / (1960.0 + f) - 0.53;
      if (b < 2.0) return b + 0.15 * (2.0 - b);
      if (b > 20.1) return b + 0.22 * (b - 20.1);
      return b;
    }
    case FrequencyScale::kBarkSchroeder:
      return 7.0 * std::asinh(f / 650.0);
    case FrequencyScale::kBarkWang:
      return 6.0 * std::asinh(f / 600.0);
    default:
      return f;
  }
}

double from_scale(FrequencyScale scale, double v) {
  switch (scale) {
    case FrequencyScale::kLog:
      return std::exp(v);
    case FrequencyScale::kMelHtk:
      return 700.0 * (std::pow(10.0, v / 2595.0) - 1.0);
    case FrequencyScale::kMelSlaney:
      return v < 15.0 ? 200.0 * v / 3.0 : 1000.0 * std::exp((v - 15.0) * std::log(6.4) / 27.0);
    case FrequencyScale::kBarkTraunmuller: {
      // The corrections map b < 2 to values < 2 and b > 20.1 to values > 20.1: undo either.
      double b = v < 2.0 ? (v - 0.3) / 0.85 : v > 20.1 ? (v + 0.22 * 20.1) / 1.22 : v;
      return 1960.0 * (b + 0.53) / (26.28 - b);
    }
    case FrequencyScale::kBarkSchroeder:
      return 650.0 * std::sinh(v / 7.0);
    case FrequencyScale::kBarkWang:
      return 600.0 * std::sinh(v / 6.0);
    default:
      return v;
  }
}

at::Tensor band_weights(const at::Tensor& hz, int64_t n_bands, FrequencyScale scale,
                        double f_min_hz, double f_max_hz) {
  TORCH_CHECK(n_bands >= 1 && f_min_hz > 0 && f_max_hz > f_min_hz,
              "band_weights: expected at least one band and 0 < f_min < f_max, but got ", n_bands,
              " bands from ", f_min_hz, " to ", f_max_hz, " Hz");
  double lo = to_scale(scale, f_min_hz), hi = to_scale(scale, f_max_hz);
  std::vector<double> centres;
  for (int64_t j = 0; j < n_bands; ++j)
    centres.push_back(
        from_scale(scale, n_bands == 1 ? lo : lo + (hi - lo) * double(j) / double(n_bands - 1)));
  at::Tensor f       = hz.to(at::kDouble);
  at::Tensor weights = at::zeros({n_bands, f.size(0)}, f.options());
  for (int64_t j = 0; j < n_bands; ++j) {
    at::Tensor w = at::ones_like(f);
    if (j > 0) w = at::minimum(w, (f - centres[j - 1]) / (centres[j] - centres[j - 1]));
    if (j + 1 < n_bands) w = at::minimum(w, (centres[j + 1] - f) / (centres[j + 1] - centres[j]));
    weights[j] = w.clamp_min(0.0);
  }
  return weights.to(hz.options());
}

}  // namespace grafx::dsp
