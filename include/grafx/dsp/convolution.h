#pragma once
/// Exact linear convolution of batches of signals with batches of filters, by FFT.
///
/// `x` is N×C×L (N items, C channels, L samples) and `h` is Nh×Ch×K with Nh ∈ {1, N} and
/// Ch ∈ {1, C} (one filter shared by the items or the channels is broadcast). With the full
/// linear convolution `full[n] = Σ_k h[k]·x[n − k]`, n ∈ [0, L + K − 1), the modes return
///
///   causal      y[n] = full[n],          n ∈ [0, L)          (a causal filter)
///   zero_phase  y[n] = full[n + K/2],    n ∈ [0, L)          (tap K/2, integer division, is lag 0)
///   full        y[n] = full[n],          n ∈ [0, L + K − 1)
///
/// The result is exact linear convolution: FFT sizes are always large enough that no circular
/// wrap-around reaches an output sample (GRAFX's `irfft` without a length is not: for an odd
/// padded length it returns one sample less and warps time). Sizes are the next "fast" size
/// (see fast_fft_size), never an arbitrary length with a large prime factor.
///
/// `fft_convolve` transforms whole signals; `block_convolve` cuts them into overlapping blocks
/// (overlap-save), which suits short filters on long signals; `convolve` picks the cheaper of the
/// two with the cost model of `plan_convolution`. All three run one overlap-save
/// `torch::autograd::Function` (a whole signal is one block) with a hand-written adjoint: the
/// gradients of `x` and `h` are correlations with the spectra saved by the forward pass, one
/// rfft of the output gradient and one irfft per gradient (autograd through rfft/irfft would
/// take twice the transforms, some of them complex). When the backward pass itself is recorded
/// (create_graph), it recomputes the spectra from `x` and `h`, so double backward works.
///
///   at::Tensor y = convolve(x, fir, ConvolutionMode::kZeroPhase);  // x N×2×L, fir N×1×2047

#include <ATen/Tensor.h>

#include <cstdint>

namespace grafx::dsp {

enum class ConvolutionMode { kCausal, kZeroPhase, kFull };

/// The smallest even 5-smooth number (2^a·3^b·5^c, a ≥ 1) that is ≥ n: sizes pocketfft (LibTorch's
/// CPU FFT) transforms fastest. Measured in bench/dsp_bench.cpp against powers of two, 7-smooth
/// sizes and exact lengths (see docs/benchmarks.md).
int64_t fast_fft_size(int64_t n);

/// Number of output samples of a mode: L, or L + K − 1 for `full`.
int64_t output_length(int64_t signal_length, int64_t filter_length, ConvolutionMode mode);

/// How `convolve` will compute one convolution.
struct ConvolutionPlan {
  bool block       = false;  ///< overlap-save blocks instead of one transform of the whole signal
  int64_t fft_size = 0;      ///< transform size (of a block, or of the whole signal)
  int64_t n_blocks = 1;
  double cost      = 0;  ///< model cost: Σ n·log2(n) over the transforms of one signal row
};

/// The cheaper of one whole-signal transform and overlap-save blocks (every fast block size from
/// 2K up), under a cost model counting n·log2(n) per transform of size n (checked against
/// measured times in bench/dsp_bench.cpp).
ConvolutionPlan plan_convolution(int64_t signal_length, int64_t filter_length,
                                 ConvolutionMode mode);

/// Whole-signal FFT convolution (one transform per row).
at::Tensor fft_convolve(const at::Tensor& x, const at::Tensor& h,
                        ConvolutionMode mode = ConvolutionMode::kCausal);

/// Overlap-save block convolution with blocks of `fft_size` samples (0: the cheapest size by
/// the cost model). `fft_size` must be at least the filter length.
at::Tensor block_convolve(const at::Tensor& x, const at::Tensor& h,
                          ConvolutionMode mode = ConvolutionMode::kCausal, int64_t fft_size = 0);

/// fft_convolve or block_convolve, whichever plan_convolution finds cheaper.
at::Tensor convolve(const at::Tensor& x, const at::Tensor& h,
                    ConvolutionMode mode = ConvolutionMode::kCausal);

}  // namespace grafx::dsp
