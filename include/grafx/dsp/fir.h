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

/// The window of zero_phase_fir for F log-magnitudes: [2F − 1].
at::Tensor zero_phase_window(int64_t n_bins, const at::TensorOptions& options);

/// [..., F] log-magnitudes to [..., 2F − 1] zero-phase FIRs (window from zero_phase_window).
at::Tensor zero_phase_fir(const at::Tensor& log_magnitude, const at::Tensor& window);

}  // namespace grafx::dsp
