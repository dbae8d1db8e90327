#pragma once
/// Small signal helpers shared by the processors: mid/side conversion, energy normalisation of
/// impulse responses, and seeded noise.
///
/// Signals are N×C×L; mid/side helpers need C = 2.

#include <ATen/Tensor.h>

#include <cstdint>

namespace grafx::dsp {

/// [L, R] → [M, S] = [(L + R)/2, (L − R)/2] (GRAFX's lr_to_ms).
at::Tensor to_mid_side(const at::Tensor& x);
/// [M, S] → [L, R] = [M + S, M − S], the inverse of to_mid_side.
at::Tensor from_mid_side(const at::Tensor& x);

/// Impulse responses N×C×K scaled to unit energy per channel on average:
/// h / sqrt(mean_c Σ_n h_c[n]² + 1e−12) (GRAFX's normalize_impulse).
at::Tensor normalize_energy(const at::Tensor& h);

/// How a reverb or delay applies its impulse responses (GRAFX's `processor_channel`): one on
/// every channel, one per stereo channel, one each on the mid and side of the input, or a pair
/// taken as mid/side and turned into left/right responses ("pseudo mid/side").
enum class ImpulseLayout { kMono, kStereo, kMidSide, kPseudoMidSide };

/// Impulse responses of a layout: 1 (mono) or 2.
inline int64_t n_impulse_responses(ImpulseLayout layout) {
  return layout == ImpulseLayout::kMono ? 1 : 2;
}

/// Raw responses N×C×K as they are convolved: energy-normalised, pseudo mid/side ones turned
/// into left/right first.
at::Tensor normalized_impulse_responses(const at::Tensor& h, ImpulseLayout layout);

/// x with `left` and `right` zeros (≥ 0) around its last dimension, as at::constant_pad_nd, but
/// writing each sample once: ATen fills the whole result with zeros before copying x in, a
/// pass more over the signal (the convolutions' transforms pad signals by half). Differentiable,
/// in reverse and forward mode.
at::Tensor zero_padded(const at::Tensor& x, int64_t left, int64_t right);

/// Overlap-add of frames [R, T, n] placed every `hop` samples: [R, length], out[r, t·hop + i] =
/// Σ frames[r, t, i], for length ≥ (T − 1)·hop + n (the adjoint of x.unfold(1, n, hop), which is
/// its gradient, a view). On the CPU, rows in parallel in one pass; elsewhere at::unfold_backward.
at::Tensor overlap_add(const at::Tensor& frames, int64_t length, int64_t hop);

/// A dry/wet mix, at::lerp(dry, processed, wet): dry and processed N×C×L, wet N×1×1 (or any
/// shape at::lerp broadcasts). Forward, at::lerp itself (its two-sided form, to the bit); its
/// backward on the CPU for a wet amount per item in one pass over the output gradient and both
/// signals (∂dry = g·(1 − w), ∂processed = g·w, ∂w = Σ g·(processed − dry), summed per row and
/// then per item in order: the same on any threads), where autograd's takes five.
at::Tensor dry_wet(const at::Tensor& dry, const at::Tensor& processed, const at::Tensor& wet);

/// The inverse of a centred STFT, as at::istft(…, center=true, onesided, length) computes it:
/// each frame's irfft (`spectra` [..., frames, bins], complex) times `window` [n], overlap-added
/// every `hop` samples, divided by the window's squared overlap-add, the first n/2 samples cut
/// and `length` kept ([..., length]). Its FFTs split their rows across threads in both passes
/// (dsp::irfft), where ATen's run on one thread and differentiate by a complex FFT.
at::Tensor inverse_stft(const at::Tensor& spectra, const at::Tensor& window, int64_t hop,
                        int64_t length);

/// inverse_stft by composed ATen operations, [rows, length] with rows the product of the
/// spectra's leading dimensions: what inverse_stft computes on other devices, for tangents, for
/// a window that wants a gradient and for recorded backward passes; on the CPU it makes about
/// eight passes over the frames or the signal each way where inverse_stft's Function makes one.
at::Tensor composed_inverse_stft(const at::Tensor& spectra, const at::Tensor& window, int64_t hop,
                                 int64_t length);

/// Values per sample of curves through points: `values` [R, K, shape...] at the sample positions
/// `positions` (K > 0, ascending, fractional and outside [0, length) allowed) -> [R, shape...,
/// length]: linear between neighbouring points, held before the first and after the last.
/// Positions are resolved in float64 whatever the values' type; differentiable in `values` (on
/// the CPU by one pass over the samples each way, elsewhere by composed ATen operations).
at::Tensor piecewise_linear(const at::Tensor& values, const std::vector<double>& positions,
                            int64_t length);

/// piecewise_linear for points that lie evenly, with each row's place read from a tensor on the
/// values' device: sample i of row r lies at point coordinate first_points[r] + i ·
/// points_per_sample (`first_points` [R], any floating type, resolved in float64). Composed of
/// ATen operations whatever the device, with no value read on the host, so that a captured CUDA
/// graph replays it at any place of the song; differentiable in `values`.
at::Tensor piecewise_linear_at(const at::Tensor& values, const at::Tensor& first_points,
                               double points_per_sample, int64_t length);

/// Uniform noise in [−1, 1), `n_channels`×`length` doubles on the CPU, from a 64-bit Mersenne
/// Twister seeded with `seed` (53 random bits per sample): the same numbers on every run and
/// platform, independent of LibTorch's global generator.
at::Tensor uniform_noise(int64_t n_channels, int64_t length, uint64_t seed);

}  // namespace grafx::dsp
