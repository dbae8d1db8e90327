#pragma once
// Building blocks of the spectral losses: STFT magnitudes, the mel filterbank, the A-weighting
// pre-filter and the two spectral distances. Private to the loss layer (tests and benchmarks
// include it through the source folder).

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace grafx::detail {

/// One STFT resolution: frames of `fft_size` samples every `hop_size` samples, weighted by a
/// periodic Hann window of `window_size` samples centred in the frame.
struct StftResolution {
  int64_t fft_size    = 0;
  int64_t hop_size    = 0;
  int64_t window_size = 0;
};

/// Throws LossError [grafx.loss.dtype] unless the two signals are both float32 or both float64
/// on one device, and [grafx.loss.shape] unless they have the same shape. `what` names
/// the loss in the message.
void check_signal_pair(const at::Tensor& x, const at::Tensor& y, const std::string& what);

/// Throws LossError [grafx.loss.skip] unless skip_samples < n_samples, and
/// [grafx.loss.too_short] unless n_samples − skip_samples >= min_samples.
void check_length(int64_t n_samples, int64_t skip_samples, int64_t min_samples,
                  const std::string& what);

/// Throws LossError [grafx.loss.options] unless there is at least one resolution and every one
/// has 2 <= window_size <= fft_size and hop_size >= 1. `what` names the loss in the message.
/// The largest FFT size a loss takes: 2^20 points (23.8 s at 44.1 kHz).
constexpr int64_t kMostFftSize = int64_t(1) << 20;
/// The most mel bands a loss takes.
constexpr int64_t kMostMelBands = 4096;
void check_resolutions(const std::vector<StftResolution>& resolutions, const std::string& what);

/// Periodic Hann window of `window_size` samples zero-padded on both sides to `fft_size`, as
/// torch.stft pads a shorter window (left padding (fft_size - window_size) / 2). [fft_size],
/// float64, CPU.
at::Tensor padded_hann_window(const StftResolution& resolution);

/// Magnitude STFT of `rows×T` signals, as torch.stft(center=True, pad_mode="reflect") followed
/// by sqrt(max(|X|², eps)): `rows×frames×(fft_size/2+1)` with frames = 1 + T / hop. `window` is
/// the padded window in the signal's dtype and device. Needs T > fft_size / 2.
at::Tensor stft_magnitude(const at::Tensor& x, const at::Tensor& window, int64_t hop_size,
                          double eps);

/// The magnitudes of the frames of already padded `rows×T` signals (frame f = samples
/// [f·hop, f·hop + fft_size)): `rows×frames×(fft_size/2+1)`, as stft_magnitude after its padding.
/// With `mid_side`, the rows are (left, right) pairs [..., 2, T] and the result holds four rows
/// per pair, [..., 4, frames, bins]: left, right, and left + right and left − right, whose
/// spectra are the sum and difference of the pair's (the transform is linear: half the
/// transforms of the four channels').
at::Tensor frame_magnitudes(const at::Tensor& padded, const at::Tensor& window, int64_t hop_size,
                            double eps, bool mid_side = false);

/// librosa.filters.mel(sr, n_fft, n_mels) with its defaults: triangles on the Slaney mel scale
/// (linear below 1 kHz, logarithmic above) from 0 Hz to sample_rate / 2, each scaled by
/// 2 / (upper − lower edge in Hz) so that every triangle has unit area in Hz.
/// `n_mels×(fft_size/2+1)`, float64, CPU.
at::Tensor mel_filterbank(double sample_rate, int64_t fft_size, int64_t n_mels);

/// Applies a filterbank to magnitudes: `magnitude` [..., bins] times the transpose of the
/// sparse COO `filterbank` [n_bands, bins] → [..., n_bands]. Each mel band covers few bins, so
/// the sparse product does ~20× less work than a dense one and needs no fast BLAS.
at::Tensor apply_filterbank(const at::Tensor& magnitude, const at::Tensor& filterbank);

/// A filterbank [n_bands, bins] whose every bin lies in at most two bands (triangles that overlap
/// their neighbours only, as the mel filters), as two (band, weight) pairs per bin: `bands`
/// [2, bins] (int64), `weights` [2, bins] (float64; 0 where a bin lies in fewer bands), CPU.
struct BandPairs {
  at::Tensor bands, weights;
  int64_t n_bands = 0;
};
/// The pairs of a dense filterbank; empty (undefined tensors) when a bin lies in three or more.
BandPairs band_pairs(const at::Tensor& filterbank);

/// apply_filterbank for a filterbank given as BandPairs (`weights` in the magnitudes' dtype):
/// [..., bins] → [..., n_bands] in one pass over the magnitudes each way, rows on every thread,
/// where the sparse product of apply_filterbank needs a transposed copy and a slower kernel
/// (docs/benchmarks.md, "Roofline"). CPU only; its backward pass, recorded (create_graph), is
/// made of ATen operations and so differentiable again.
at::Tensor apply_band_pairs(const at::Tensor& magnitude, const at::Tensor& bands,
                            const at::Tensor& weights, int64_t n_bands);

/// [..., L + 2·pad]: x reflected by `pad` samples at both ends (reflection_pad1d), pad < L.
at::Tensor reflection_padded(const at::Tensor& x, int64_t pad);

/// apply_band_pairs of frame_magnitudes of reflection_padded(signal, reflect_pad) in one
/// Function: [..., L] signals → [..., frames, n_bands], without the padded signals and the
/// frames' intermediate tensors (the windowed frames, their magnitudes, the floor's mask, and
/// their gradients): a third of the loss's time on a fit step's crops (docs/benchmarks.md,
/// "Roofline"). CPU only, without tangents; a backward pass that is recorded (create_graph) or
/// carries tangents differentiates the composition. `mid_side` as frame_magnitudes's:
/// [..., 2, L] → [..., 4, frames, n_bands].
at::Tensor mel_frame_magnitudes(const at::Tensor& signal, int64_t reflect_pad,
                                const at::Tensor& window, int64_t hop_size, double eps,
                                const at::Tensor& bands, const at::Tensor& weights, int64_t n_bands,
                                bool mid_side = false);

/// Slaney mel scale of librosa (htk=False) and its inverse.
double hz_to_mel(double frequency_hz);
double mel_to_hz(double mel);

/// Magnitude of the analog A-weighting filter of IEC 61672 (poles 20.6, 107.7, 737.9 and
/// 12194 Hz, normalised to 0 dB at 1 kHz) at `frequency_hz`.
double a_weighting_gain(double frequency_hz);

/// auraloss's A-weighting pre-filter (FIRFilter "aw"): the analog filter mapped by the bilinear
/// transform, its magnitude sampled at k·fs/1024 (k < 512), and a linear-phase FIR of `n_taps`
/// (odd) taps fitted to it by least squares over the bands [f_2i, f_2i+1], exactly as
/// scipy.signal.firls does. [n_taps], float64, CPU.
at::Tensor a_weighting_fir(double sample_rate, int64_t n_taps = 101);

/// Spectral convergence ‖y − x‖_F / ‖y‖_F over `dims` (y is the target's magnitude).
at::Tensor spectral_convergence(const at::Tensor& x_mag, const at::Tensor& y_mag,
                                at::IntArrayRef dims);

/// Mean |log y − log x| over `dims`.
at::Tensor log_magnitude_distance(const at::Tensor& x_mag, const at::Tensor& y_mag,
                                  at::IntArrayRef dims);

}  // namespace grafx::detail
