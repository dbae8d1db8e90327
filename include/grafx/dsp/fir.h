#pragma once
/// Zero-phase FIR filters from log-magnitude responses (the EQ of the GRAFX paper, and the colour
/// filter of each delay tap).
///
/// F log-magnitudes, sampled uniformly from 0 Hz to just below Nyquist, become a symmetric
/// FIR of K = 2F − 1 taps whose centre tap F − 1 is lag 0:
///
///   h = w · roll(irfft(exp(log_magnitude), K), F − 1)
///
/// `w` is a Hann window centred on lag 0, w[m] = ½ + ½·cos(π·m/F) for m = −(F−1) … F−1 (the
/// Hann window of 2F + 1 points without its two zero end points). It is exactly symmetric, so
/// the FIR is exactly zero-phase and a flat response (all log-magnitudes 0) is exactly a unit
/// impulse. GRAFX uses a periodic Hann window of K points, which is symmetric about lag ½
/// instead of 0: its filters are half a sample short of zero phase and a flat EQ is not exactly
/// the identity.
///
///   at::Tensor window = zero_phase_window(1024, x.options());   // [2047]
///   at::Tensor fir = zero_phase_fir(log_magnitude, window);      // [..., 1024] -> [..., 2047]

#include <ATen/Tensor.h>

#include <cstdint>

namespace grafx::dsp {

/// Windows centred on lag 0 (m = −(F−1) … F−1), exactly symmetric, 1 at lag 0.
enum class Window {
  kHann,         ///< ½ + ½·cos(πm/F)
  kHamming,      ///< 0.54 + 0.46·cos(πm/F)
  kBlackman,     ///< 0.42 + 0.5·cos(πm/F) + 0.08·cos(2πm/F)
  kRectangular,  ///< 1
};

/// The window of zero_phase_fir for F log-magnitudes: [2F − 1].
at::Tensor zero_phase_window(int64_t n_bins, const at::TensorOptions& options,
                             Window window = Window::kHann);

/// [..., F] log-magnitudes to [..., 2F − 1] zero-phase FIRs (window from zero_phase_window).
at::Tensor zero_phase_fir(const at::Tensor& log_magnitude, const at::Tensor& window);

/// Frequency scales of GRAFX's filterbanks (scale.py): value = to_scale(hz).
enum class FrequencyScale {
  kLinear,           ///< f
  kLog,              ///< ln f
  kMelHtk,           ///< 2595·log10(1 + f/700)
  kMelSlaney,        ///< 3f/200 below 1 kHz, then 15 + ln(f/1000)·27/ln 6.4
  kBarkTraunmuller,  ///< 26.81f/(1960 + f) − 0.53, with the low (< 2) and high (> 20.1) corrections
  kBarkSchroeder,    ///< 7·asinh(f/650)
  kBarkWang,         ///< 6·asinh(f/600)
};

double to_scale(FrequencyScale scale, double hz);
/// The exact inverse of to_scale (GRAFX's inverse Traunmüller applies only one correction).
double from_scale(FrequencyScale scale, double value);

/// Weights [F, n] of F bands over the frequencies `hz` [n]: the band centres are evenly spaced on
/// the scale from f_min to f_max; between two centres the weights are linear in Hz (triangles);
/// the first band is 1 below its centre and the last 1 above its own. The weights sum to 1 at
/// every frequency, so a constant per-band value is the same constant everywhere. (GRAFX's
/// TriangularFilterBank lets its first band fill what the triangles leave out, also near and
/// above f_max, where that band's gain then reappears.)
at::Tensor band_weights(const at::Tensor& hz, int64_t n_bands, FrequencyScale scale,
                        double f_min_hz, double f_max_hz);

}  // namespace grafx::dsp
