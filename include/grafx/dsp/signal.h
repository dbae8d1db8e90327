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

/// Uniform noise in [−1, 1), `n_channels`×`length` doubles on the CPU, from a 64-bit Mersenne
/// Twister seeded with `seed` (53 random bits per sample): the same numbers on every run and
/// platform, independent of LibTorch's global generator.
at::Tensor uniform_noise(int64_t n_channels, int64_t length, uint64_t seed);

}  // namespace grafx::dsp
