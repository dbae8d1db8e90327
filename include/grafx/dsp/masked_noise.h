#pragma once
/// The noise reverb's kernel (processors/reverb.h, GRAFX's FilteredNoiseShapingReverb): noise
/// spectra shaped by exponentially decaying masks, in LibTorch.

#include <ATen/core/Tensor.h>

namespace grafx::dsp {

/// The masks' exponent κ: GRAFX's mask is exp(log M / 8).
constexpr double kMaskExponent = 1.0 / 8;

/// The masked noise spectrum noise[c, m, b]·exp(κ·(initial[n, c, b] − decay[n, c, b]·m +
/// envelope[n, c, m])), N×C×M×B complex, for real N×C×B initial levels and decays, N×C×M
/// envelopes and C'×M×B complex noise (its first C rows). On the CPU without tangents, one
/// Function whose forward pass writes the log masks in one pass and whose backward pass is
/// written by hand; elsewhere ATen operations (differentiable again, tangents carried).
at::Tensor masked_noise(const at::Tensor& initial, const at::Tensor& decay,
                        const at::Tensor& envelope, const at::Tensor& noise);

}  // namespace grafx::dsp
