#pragma once
/// Stereo matrices: each item's output channels as weighted sums of its input channels,
///
///   y[n, i, t] = Σ_j M[n, i, j] · x[n, j, t],   x N×C×L (C = 1 or 2: mono as dual mono),
///                                                M N×2×2, y N×2×L,
///
/// the form of every pointwise stereo processor (gain and pan, the stereo imager). One pass over
/// the signal each way on the CPU (rows and blocks of samples on every thread), where the same
/// product written with ATen's element-wise operations takes seven or more passes forward and
/// as many back (docs/benchmarks.md, "Roofline"). Elsewhere (other devices, tangents, a recorded
/// backward pass) it is the same product in ATen operations.
///
///   at::Tensor y = mix_channels(x, gains.diag_embed());   // per-channel gains

#include <ATen/Tensor.h>

namespace grafx::dsp {

at::Tensor mix_channels(const at::Tensor& x, const at::Tensor& matrix);
/// w·M + (1 − w)·I: the matrix of a dry/wet mix of the product with M, wet amounts w N×1×1.
at::Tensor with_dry(const at::Tensor& matrix, const at::Tensor& wet);

}  // namespace grafx::dsp
