#pragma once
/// A differentiable integer delay: the damped-sinusoid surrogate of Hayes et al. (2023) with a
/// straight-through estimator, as GRAFX's SurrogateDelay.
///
/// Each delay is a complex number z̃ (given as its real and imaginary parts, the last dimension
/// of `z`, size 2). It is squashed into the unit disk, z = z̃·tanh|z̃| / (|z̃| + 1e−7), and
/// defines the "soft" impulse response of length n
///
///   h̃ = irfft(s, n),  s_k = (z + 1e−7)^k,  k = 0 … ⌊n/2⌋
///
/// a damped sinusoid that peaks near delay d = −arg(z)·n/(2π) and sharpens as |z| → 1. The
/// forward result is exactly the integer delay at the peak, one_hot(argmax h̃); the backward
/// pass takes the gradient of h̃ instead (straight-through). With `normalize_gradients`, the
/// gradient reaching each z̃ is scaled to unit length, g/(1e−7 + |g|), which keeps the step of
/// every delay alike whatever its surrogate's sharpness. Both adjoints are custom
/// `torch::autograd::Function`s; everything else is ATen, differentiated by LibTorch.
///
/// `radii_loss` = (1 − tanh|z̃|)² per delay (not normalised): a regulariser that pulls the poles
/// toward the unit circle, where the surrogate matches the hard delay.
///
///   auto delay = surrogate_delay(z, 3000);   // z: N×M×2  ->  delay.impulse_responses N×M×3000

#include <ATen/Tensor.h>

#include <cstdint>

namespace grafx::dsp {

struct SurrogateDelayOptions {
  bool straight_through    = true;  ///< forward: the exact one-hot delay, not the soft surrogate
  bool normalize_gradients = true;  ///< unit-length gradient per delay (the straight-through path)
};

struct SurrogateDelay {
  at::Tensor impulse_responses;  ///< [..., n]
  at::Tensor radii_loss;         ///< [...]: (1 − tanh|z̃|)² per delay
};

SurrogateDelay surrogate_delay(const at::Tensor& z, int64_t n,
                               const SurrogateDelayOptions& options = {});

/// Raw z̃ ([..., 2]) whose surrogate peaks at `delay_samples` (of n) with squashed radius
/// `radius` (0 < radius < 1), e.g. to initialise delays or to draw a response.
at::Tensor delay_to_z(const at::Tensor& delay_samples, int64_t n, double radius = 0.999);

/// Identity forward; backward scales each gradient pair (last dimension, size 2) to unit length.
at::Tensor normalized_gradient(const at::Tensor& z);

/// Forward one_hot(argmax(soft, −1)) in soft's dtype; backward passes the gradient through.
at::Tensor straight_through_one_hot(const at::Tensor& soft);

/// Impulse responses made of `segments` consecutive segments of n samples (n = soft.size(−1)),
/// each the sum of `per_segment` coloured taps (a multitap delay's): tap
/// t = (r·segments + m)·per_segment + p of response r and segment m is the straight-through
/// one-hot of its soft surrogate `soft[:, t]` convolved with its FIR `colour[:, t]` (K taps, lag 0
/// at tap `centre`; undefined: a bare tap, K = 1), so colour[:, t, k] lands at sample
/// m·n + argmax(soft[:, t]) + k − centre of response r, and samples outside the response are
/// dropped. soft N×T×n, colour N×T×K -> N×R×(segments·n).
///
/// The same as straight_through_one_hot, convolve (full) and overlap_add, but on the CPU by
/// placing each tap's FIR where its delay puts it, and backward in two loops (the gradient of
/// each one-hot is the output gradient's correlation with its FIR, and each FIR's the output
/// gradient under it), where the composed form convolves thousands of short rows by FFT both
/// ways. Tangents, other devices and recorded backward passes (create_graph) take the composed
/// form.
at::Tensor segmented_taps(const at::Tensor& soft, const at::Tensor& colour, int64_t segments,
                          int64_t per_segment, int64_t centre);

}  // namespace grafx::dsp
