#pragma once
/// Real FFTs of many rows on every CPU thread. ATen's CPU FFT (pocketfft) transforms a whole
/// batch on one thread; these split the rows of the last dimension across LibTorch's threads,
/// one pocketfft call per share, with results bit-identical to the plain call
/// (docs/benchmarks.md, "Both cores"). They do so only where nothing records a graph (inside
/// autograd Functions, outside create_graph), on the CPU and without tangents; elsewhere they
/// are the plain call.
///
///   at::Tensor spectra = rfft_rows(frames, 4096);   // frames [..., 4096] -> [..., 2049]
#include <ATen/Tensor.h>

#include <cstdint>

namespace grafx::dsp {

/// at::fft_rfft(x, n, -1).
at::Tensor rfft_rows(const at::Tensor& x, int64_t n);
/// at::fft_irfft(x, n, -1).
at::Tensor irfft_rows(const at::Tensor& x, int64_t n);

}  // namespace grafx::dsp
