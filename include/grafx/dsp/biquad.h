#pragma once
/// Cascades of second-order sections (biquads), run exactly in the time domain.
///
///   H(z) = Π_k (b_k0 + b_k1·z⁻¹ + b_k2·z⁻²) / (a_k0 + a_k1·z⁻¹ + a_k2·z⁻²),   k = 0 … K−1
///
/// `x` is `[..., L]`; `b` and `a` are `[..., K, 3]` whose leading dimensions broadcast to x's
/// (e.g. x N×2×L with b N×1×K×3: one filter per node on both channels), so every row of a
/// batched call has its own filter. Coefficients need not be normalised (a_k0 ≠ 0 divides).
///
/// Each section is the direct-form recursion
///   v[n] = b0·u[n] + b1·u[n−1] + b2·u[n−2] − a1·v[n−1] − a2·v[n−2]   (zero initial state),
/// O(L) per section, rows in parallel, state in double precision for float and double signals.
/// `reverse` runs it from the last sample to the first (u[n+1], v[n+1], …): filtering then
/// reversing in time, as the adjoint and zero-phase filtering need.
///
/// The backward pass is hand-written: the adjoint of a linear recursion is the same recursion
/// run the other way in time. For each section, one backward sweep gives
///   w = A⁻ᵀ g (the all-pole part run backward),  ∂/∂u = Bᵀ w,
///   ∂/∂b_i = Σ_n w[n]·u[n−i],  ∂/∂a_i = −Σ_n w[n]·v[n−i],
/// from the sections' signals saved by the forward pass (K·L values per row, kept only when
/// something needs a gradient). When the backward pass is itself recorded (create_graph), it
/// is built from this function and ATen operations instead, so double backward works.
/// On other devices both cascades run biquad_cascade_scan / biquad_cascade_time_varying_scan
/// (each section's numerator by shifts, its poles by dsp::two_pole_scan, with no copy to the
/// host) and their backward passes are the recorded form's ATen operations.
///
///   at::Tensor b = at::tensor({1.0, 2.0, 1.0}).view({1, 1, 1, 3}) * 0.25;
///   at::Tensor y = biquad_cascade(x, b, a);   // x N×2×L, b and a N×1×1×3
///
/// `biquad_cascade_frequency_sampling` is GRAFX's default IIR backend, for comparison: the
/// response sampled at N/2 + 1 frequencies becomes an N-tap FIR (the impulse response
/// time-aliased to N samples), applied by exact causal convolution.

#include <ATen/Tensor.h>

#include <cstdint>
#include <utility>

namespace grafx::dsp {

at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                          bool reverse = false);

/// The cascade with coefficients that change at every sample, for filters whose parameters
/// follow automation curves: `b` and `a` are `[..., K, L, 3]` (not normalised), their leading
/// dimensions broadcasting to x's (b N×1×K×L×3 runs one filter per node on both channels of
/// x N×2×L, stored once). Section k at sample n is the direct form
///   a0[n]·v[n] + a1[n]·v[n−1] + a2[n]·v[n−2] = b0[n]·u[n] + b1[n]·u[n−1] + b2[n]·u[n−2],
/// so constant coefficients give biquad_cascade's output. One pass per section, rows in
/// parallel, states in double precision; the backward pass is hand-written (the adjoint runs
/// backward in time reading each coefficient where the forward pass used it:
/// a0[n]·λ[n] = g[n] − a1[n+1]·λ[n+1] − a2[n+2]·λ[n+2]), differentiable again, with a tangent
/// rule. Costs 6·K·L coefficients per filter, where biquad_cascade needs 6·K.
at::Tensor biquad_cascade_time_varying(const at::Tensor& x, const at::Tensor& b,
                                       const at::Tensor& a);

/// The cascades' kernels on devices other than the CPU (see above), callable on the CPU where the
/// tests compare them with the CPU kernels; values only.
at::Tensor biquad_cascade_scan(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                               bool reverse = false);
at::Tensor biquad_cascade_time_varying_scan(const at::Tensor& x, const at::Tensor& b,
                                            const at::Tensor& a);

/// The cascade's complex response H(e^{jω}) at `omega` (rad/sample, [F]): `[..., F]` complex.
at::Tensor biquad_response(const at::Tensor& b, const at::Tensor& a, const at::Tensor& omega);
/// The cascade's magnitude response in dB at `omega` (rad/sample, [F]): `[..., F]`, summed over
/// its sections' |B|²/|A|² (each floored at 1e-12, so differentiable everywhere).
at::Tensor biquad_magnitude_db(const at::Tensor& b, const at::Tensor& a, const at::Tensor& omega);

/// GRAFX's frequency-sampling approximation with `n_taps` (even) taps.
at::Tensor biquad_cascade_frequency_sampling(const at::Tensor& x, const at::Tensor& b,
                                             const at::Tensor& a, int64_t n_taps = 4000);

/// One section's coefficients [c0, c1, c2] as a [..., 3] tensor, the arguments broadcast.
at::Tensor section_coefficients(const at::Tensor& c0, const at::Tensor& c1, const at::Tensor& c2);

/// The filter shapes of the RBJ Audio EQ Cookbook (R. Bristow-Johnson).
enum class CookbookShape {
  kLowpass,
  kHighpass,
  kBandpass,  ///< constant 0 dB peak gain
  kBandreject,
  kAllpass,
  kPeaking,
  kLowShelf,
  kHighShelf,
};

/// The larger pole radius of each section: `[..., K]` from denominators `[..., K, 3]`.
at::Tensor pole_radii(const at::Tensor& a);
/// Samples after which the cascades' impulse responses have decayed below `tolerance`: the sum
/// over sections of each one's decay_samples (a cascade's response is their convolution), the
/// largest over the rows.
int64_t cascade_decay_samples(const at::Tensor& a, double tolerance);

/// The cookbook's coefficients (b, a), each `[..., 3]`, from the centre or corner frequency
/// `omega` = 2π·f0/fs (rad/sample), the cookbook's Q and, for peaking and shelves, `log_gain`,
/// the natural log of the linear gain at the centre or on the shelf (the cookbook's A is
/// e^{log_gain/2}, i.e. 10^{dB/40}); other shapes ignore it. Arguments broadcast.
std::pair<at::Tensor, at::Tensor> cookbook_biquad(CookbookShape shape, const at::Tensor& omega,
                                                  const at::Tensor& q, const at::Tensor& log_gain);

/// A plain transposed-direct-form-II loop in double precision, without autograd: the reference
/// the tests compare the kernel with.
namespace reference {
at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a);
}  // namespace reference

}  // namespace grafx::dsp
