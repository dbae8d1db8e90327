#pragma once
/// First-order recursions over time, computed exactly in O(L) and differentiated by their
/// adjoints: the adjoint of a linear recursion is the same recursion run backward in time.
///
/// Signals are `[..., L]` (any leading dimensions, e.g. N×C×L); coefficients and initial values
/// have the leading shape `[...]` (one value per row). Rows run in parallel (at::parallel_for),
/// each a tight loop over contiguous float or double samples. On CUDA devices (in a CUDA build)
/// every row is one block of threads, each running a chunk of the row, joined by scans: exact,
/// and no thread loops over the whole row (ballistics by Newton's method on the chunks' starts,
/// which ballistics_chunked emulates on the CPU). On other devices linear_recurrence (and so
/// one_pole and every adjoint) runs linear_recurrence_scan, a chunked scan of ATen operations,
/// with no copy to the host, and ballistics runs ballistics_scan: the branches its output
/// implies, then the scan of that linear recurrence, again until the branches settle.
///
///   one_pole(x, α):               y[n] = α·y[n−1] + (1 − α)·x[n],        y[−1] = 0
///   ballistics(x, α↑, α↓, y0):    α[n] = α↑ if x[n] > y[n−1] else α↓ (attack when rising,
///                                 release when falling), y[n] = α[n]·y[n−1] + (1 − α[n])·x[n],
///                                 y[−1] = y0
///   linear_recurrence(x, a, y0):  y[n] = a[n]·y[n−1] + x[n], y[−1] = y0; `a` per row ([...])
///                                 or per sample ([..., L]); `reverse` runs from n = L−1 down:
///                                 y[n] = a[n]·y[n+1] + x[n], y[L] = y0
///
/// All three are `torch::autograd::Function`s with hand-written backward passes that give
/// gradients for the signal, the coefficients and the initial value. The backward passes are
/// themselves built from `linear_recurrence` and ATen operations, so they are differentiable
/// again (double backward and Hessian-vector products work). For ballistics, the choice between
/// the attack and release coefficient is treated as a constant (the branch has no derivative),
/// as in torchcomp.
///
/// Coefficients near 1 are slow smoothers: one_pole's time constant is −1/ln(α) samples.
///
///   at::Tensor energy = x.pow(2).mean(1, true);                        // N×1×L
///   at::Tensor smooth = one_pole(energy, at::full({n, 1}, 0.999));    // same shape

#include <grafx/dsp/dynamics_steps.h>

#include <ATen/Tensor.h>

#include <algorithm>

namespace grafx::dsp {

at::Tensor linear_recurrence(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                             bool reverse = false);

/// linear_recurrence's kernel on devices other than the CPU: a chunked scan of ATen operations
/// (chunks of `chunk` samples, about chunk·log_chunk(L) operations on all rows at once instead of
/// L sequential steps), equal to the CPU's sequential loop up to rounding. Callable on the CPU
/// too, where the tests compare it with the loop. Values only, recorded by no autograd graph:
/// linear_recurrence is the differentiable form on every device (its adjoint is the same scan
/// run the other way).
at::Tensor linear_recurrence_scan(const at::Tensor& x, const at::Tensor& a,
                                  const at::Tensor& initial, bool reverse = false,
                                  int64_t chunk = 64);

at::Tensor one_pole(const at::Tensor& x, const at::Tensor& alpha);

at::Tensor ballistics(const at::Tensor& x, const at::Tensor& alpha_rise,
                      const at::Tensor& alpha_fall, const at::Tensor& initial);

/// ballistics' kernel on devices other than the CPU: starting from "all falling", each pass takes
/// the branches (x[n] > y[n−1]) that the last pass's output implies and runs the chunked scan of
/// that linear recurrence, until the branches no longer change (5–8 passes on real levels; rows
/// still changing after 32 passes run the CPU loop). The settled output satisfies the recursion
/// with its own branches, as only the exact solution does. Callable on the CPU for the tests;
/// values only (ballistics is the differentiable form on every device). `passes`, when given,
/// receives the scans that settled it (0: it did not, and the loop ran).
at::Tensor ballistics_scan(const at::Tensor& x, const at::Tensor& alpha_rise,
                           const at::Tensor& alpha_fall, const at::Tensor& initial,
                           int* passes = nullptr);

/// ballistics' CUDA kernel, its steps run on the CPU, so that the tests check it against the loop
/// in every build: each row is cut into `chunks_per_row` chunks (one per GPU thread). From start
/// states guessed by a coarse run (4 samples a chunk), each chunk runs sequentially to its end
/// state and that end's slope with respect to its start, and a scan of the linearised joints
/// gives new starts (Newton's method), until no start moves by more than rounding. A chunk
/// started exactly ends exactly, so iteration k leaves chunks 0 … k exact and chunks_per_row − 1
/// iterations always suffice: the result is the loop's up to rounding, never an approximation;
/// on real levels a few iterations settle it (docs/dsp.md). Values only. `iterations`, when
/// given, receives the most any row took.
at::Tensor ballistics_chunked(const at::Tensor& x, const at::Tensor& alpha_rise,
                              const at::Tensor& alpha_fall, const at::Tensor& initial,
                              int64_t chunks_per_row = 256, int* iterations = nullptr);

/// The most iterations any row took in the latest ballistics forward pass on a CUDA device (0 when
/// none ran, and always in a build without CUDA). Reads the device, waiting for it: for
/// benchmarks, not for a training loop.
int last_ballistics_iterations();

/// y[n] = x[n] + c1[n]·y[n∓1] + c2[n]·y[n∓2] from a zero state (`reverse`: from n = L−1 down), c1
/// and c2 per row ([...]) or per sample ([..., L]): the all-pole part of a biquad section
/// (c = −a₁/a₀, −a₂/a₀) as a chunked scan of its two-sample state, in float64 whatever x's
/// type. The biquad cascades' kernel on devices other than the CPU (dsp/biquad.h): on CUDA one
/// block per row (two_pole_chunked runs its steps on the CPU), elsewhere a scan of ATen
/// operations in chunks of `chunk` samples; callable on the CPU for the tests; values only.
at::Tensor two_pole_scan(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                         bool reverse = false, int64_t chunk = 64);

/// two_pole_scan's CUDA kernel, its steps run on the CPU, so that the tests check it against the
/// loop in every build: each row is cut into `chunks_per_row` chunks (one per GPU thread); each
/// chunk's affine map of the state (y[n−1], y[n−2]) from a zero start, their composition in
/// order for every chunk's start, and each chunk run again from its start. In float64, returned
/// in x's type; values only.
at::Tensor two_pole_chunked(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                            bool reverse = false, int64_t chunks_per_row = 256);

/// Samples after which a recursion whose slowest pole has radius `pole_radius` (any shape; the
/// largest element counts) has decayed below `tolerance` of its start: ⌈ln tolerance / ln r⌉,
/// 0 for r = 0, the largest int64 for r ≥ 1 (or NaN) that never decays.
int64_t decay_samples(const at::Tensor& pole_radius, double tolerance);
/// The same per element, in double precision (∞ where a pole never decays).
at::Tensor decay_samples_of(const at::Tensor& pole_radius, double tolerance);
/// The largest of such counts as samples (the largest int64 for ∞ or NaN; 0 when empty).
int64_t to_samples(const at::Tensor& decay_samples);

/// Plain sample-by-sample loops in double precision, without autograd: the references the
/// tests compare the kernels with.
namespace reference {
at::Tensor one_pole(const at::Tensor& x, const at::Tensor& alpha);
at::Tensor ballistics(const at::Tensor& x, const at::Tensor& alpha_rise,
                      const at::Tensor& alpha_fall, const at::Tensor& initial);
}  // namespace reference

}  // namespace grafx::dsp
