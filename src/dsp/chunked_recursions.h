#pragma once
// The per-chunk pieces of the recursions run in parallel along time (private to dsp): a row of
// L samples is cut into T chunks of ⌈L/T⌉ samples (the last ones short or empty), one per
// thread; each thread runs its chunk sequentially, and a scan over the chunks' affine maps
// joins them. Shared by the CUDA kernels (dsp/cuda/recursion_kernels.cu) and the CPU emulation
// of the same steps (ballistics_chunked in recursion.cpp), which the tests compare with the
// sequential loop. Plain C++ without LibTorch or CUDA headers; under nvcc every function is
// callable on the host and the device (std::max/min there need --expt-relaxed-constexpr).
//
// Ballistics, y[n] = step(y[n−1], x[n]), is not linear, but each step is a continuous,
// monotone, piecewise linear map of y with slope α ∈ [0, 1), and so is a chunk's map from its
// start state to its end state. Newton's method on the chunks' start states (DEER): run every
// chunk from its start s[t] (first guessed by a coarse sequential run), giving its end e[t] and
// slope p[t] (the product of its steps' slopes α: the exact derivative while the branches do
// not change), then the linearised joints s'[t+1] = e[t] + p[t]·(s'[t] − s[t]), s'[0] = y0, a
// scan of affine maps; until no start moves by more than rounding, then the output from the
// starts. A chunk whose start is exact ends exactly, so after iteration k chunks 0 … k start
// exactly, bit for bit as a sequential run would (their differences δ are exact zeros): T − 1
// iterations always suffice and the result is exact, not an approximation. In practice the
// starts stop moving after a few (≤ 8 in the tests, 4–5 on detector levels).

#include <grafx/dsp/dynamics_steps.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#ifdef __CUDACC__
#define GRAFX_HOST_DEVICE __host__ __device__
#else
#define GRAFX_HOST_DEVICE
#endif

namespace grafx::dsp::chunked {

/// Samples per chunk when a row of `length` samples is cut into `chunks`: ⌈length/chunks⌉.
GRAFX_HOST_DEVICE inline int64_t chunk_length(int64_t length, int64_t chunks) {
  return (length + chunks - 1) / chunks;
}

/// The samples [begin, end) of chunk t (empty past the row's end).
struct Range {
  int64_t begin, end;
};
GRAFX_HOST_DEVICE inline Range chunk_range(int64_t t, int64_t chunk, int64_t length) {
  const int64_t begin = t * chunk < length ? t * chunk : length;
  return {begin, begin + chunk < length ? begin + chunk : length};
}

/// v ↦ slope·v + offset: a chunk's map of a linear recursion's state (or of a Newton step's
/// difference).
template <typename T>
struct Affine {
  T slope, offset;
};

template <typename T>
GRAFX_HOST_DEVICE inline Affine<T> identity() {
  return {T(1), T(0)};
}

/// `first`, then `second`: v ↦ second(first(v)).
template <typename T>
GRAFX_HOST_DEVICE inline Affine<T> compose(const Affine<T>& first, const Affine<T>& second) {
  return {second.slope * first.slope, second.slope * first.offset + second.offset};
}

template <typename T>
GRAFX_HOST_DEVICE inline T magnitude(T v) {
  return v < T(0) ? -v : v;
}

#ifdef __CUDA_ARCH__
/// Products and sums rounded on their own, never contracted into a fused multiply-add.
__device__ inline float multiply_rounded(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double multiply_rounded(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rounded(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rounded(double a, double b) { return __dadd_rn(a, b); }
#endif

// ---- ballistics: the forward pass ----------------------------------------------------------

/// A row's coefficients: α for the slopes, 1 − α for the steps (as the CPU loop computes them).
template <typename T>
struct BallisticsGains {
  T alpha_rise, alpha_fall, gain_rise, gain_fall;
  GRAFX_HOST_DEVICE BallisticsGains(T rise, T fall)
      : alpha_rise(rise), alpha_fall(fall), gain_rise(T(1) - rise), gain_fall(T(1) - fall) {}
};

/// One step of ballistics: dynamics_steps.h's ballistics_step, which the CPU loop runs. On the
/// device the same expression spelled out (ballistics_step is host code), its products and sum
/// rounded separately as the host's are (no fused multiply-add), so that a chunk started from
/// the CPU loop's state continues it bit for bit.
template <typename T>
GRAFX_HOST_DEVICE inline T step(T y, T x, T gain_rise, T gain_fall) {
#ifdef __CUDA_ARCH__
  const T change = x - y, rise = std::max(change, T(0)), fall = std::min(change, T(0));
  return add_rounded(
      y, add_rounded(multiply_rounded(gain_rise, rise), multiply_rounded(gain_fall, fall)));
#else
  return ballistics_step(y, x, gain_rise, gain_fall);
#endif
}

/// The slope of one step, d(next)/dy: α↑ when x > y, else α↓ (the branch the adjoint takes),
/// except where the step left y unchanged, which it does not only at a tie (x = y) but
/// wherever (1 − α)·(x − y) rounds away (within 0.5/(1 − α) rounding units of x: 50000 for
/// α = 0.99999): there the rounded map is the identity for nearby starts, slope 1. A trajectory
/// stalled there (a constant level, a detector's floor in silence) then passes a change of its
/// start on, as the sequential loop's rounding does; with the slope of exact arithmetic,
/// ~α^C, Newton's step would predict a decay the rounding never makes, and only the
/// propagation of exact starts, one chunk per iteration, would find the stall. The slope
/// steers the iteration only: whatever it is, the settled starts are the run's fixed point.
template <typename T>
GRAFX_HOST_DEVICE inline T step_slope(T x, T y, T next, const BallisticsGains<T>& g) {
  return next == y ? T(1) : x > y ? g.alpha_rise : g.alpha_fall;
}

/// A chunk run from a start: its end state and d(end)/d(start).
template <typename T>
struct BallisticsRun {
  T state, slope;
};

/// Runs `count` samples x[0 … count) on from `run`: the same ballistics_step as the CPU loop,
/// and the product of the steps' slopes.
template <typename T>
GRAFX_HOST_DEVICE inline void ballistics_run(BallisticsRun<T>& run, const T* x, int64_t count,
                                             const BallisticsGains<T>& g) {
  T y = run.state, p = run.slope;
  for (int64_t n = 0; n < count; ++n) {
    const T next = step(y, x[n], g.gain_rise, g.gain_fall);
    p *= step_slope(x[n], y, next, g);
    y = next;
  }
  run = {y, p};
}

/// The same with `count` known at compile time (a full tile of a CUDA kernel: unrolled).
template <int kCount, typename T>
GRAFX_HOST_DEVICE inline void ballistics_run_fixed(BallisticsRun<T>& run, const T* x,
                                                   const BallisticsGains<T>& g) {
  T y = run.state, p = run.slope;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int n = 0; n < kCount; ++n) {
    const T next = step(y, x[n], g.gain_rise, g.gain_fall);
    p *= step_slope(x[n], y, next, g);
    y = next;
  }
  run = {y, p};
}

/// Writes y[n] for x[0 … count) from `state` (y may be x) and returns the last.
template <typename T>
GRAFX_HOST_DEVICE inline T ballistics_write(T state, const T* x, T* y, int64_t count,
                                            const BallisticsGains<T>& g) {
  for (int64_t n = 0; n < count; ++n) y[n] = state = step(state, x[n], g.gain_rise, g.gain_fall);
  return state;
}

/// The same with `count` known at compile time.
template <int kCount, typename T>
GRAFX_HOST_DEVICE inline T ballistics_write_fixed(T state, const T* x, T* y,
                                                  const BallisticsGains<T>& g) {
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int n = 0; n < kCount; ++n) y[n] = state = step(state, x[n], g.gain_rise, g.gain_fall);
  return state;
}

/// a^n by squaring: products only, the same on the host and the device.
template <typename T>
GRAFX_HOST_DEVICE inline T power(T a, int64_t n) {
  T result = T(1);
  for (; n > 0; n /= 2, a *= a)
    if (n % 2) result *= a;
  return result;
}

/// Samples per chunk of the coarse run that guesses the starts, D apart.
constexpr int kCoarseSamples = 4;
GRAFX_HOST_DEVICE inline int64_t coarse_stride(int64_t chunk) {
  return (chunk + kCoarseSamples - 1) / kCoarseSamples;
}

/// The first guesses of the chunks' starts: ballistics run sequentially over every D-th sample
/// (kCoarseSamples per chunk), each step with α^D for the D samples it stands for; s[0] = y0
/// exactly. It follows the slow transients (a slow attack from a start far from the levels),
/// where Newton's step from guesses at the levels themselves takes the fast branch's slope and
/// moves the exact starts on only a few chunks per iteration (up to ~40 iterations in the tests
/// instead of ≤ 8). `sample(t, k, n)` gives x[n], sample k of chunk t. Sequential, but only
/// T·kCoarseSamples steps: on the GPU one thread runs it in microseconds.
template <typename T, typename Sample>
GRAFX_HOST_DEVICE inline void coarse_starts(T* starts, int64_t chunks, int64_t chunk,
                                            int64_t length, T initial,
                                            const BallisticsGains<T>& gains, Sample sample) {
  const int64_t stride = coarse_stride(chunk);
  const BallisticsGains<T> coarse(power(gains.alpha_rise, stride), power(gains.alpha_fall, stride));
  T y = initial;
  for (int64_t t = 0; t < chunks; ++t) {
    starts[t]         = y;
    const Range range = chunk_range(t, chunk, length);
    for (int k = 0; k < kCoarseSamples; ++k) {
      const int64_t n = range.begin + k * stride;
      if (n < range.end) y = step(y, sample(t, k, n), coarse.gain_rise, coarse.gain_fall);
    }
  }
}

/// Iterations after which every start is exact: iteration k makes chunks 0 … k start exactly,
/// so T − 1 (at least 1) of T chunks.
GRAFX_HOST_DEVICE inline int iteration_cap(int64_t chunks) {
  return chunks > 2 ? int(chunks - 1) : 1;
}

/// Starts closer than this to where they were are settled: kToleranceEpsilons rounding units
/// of the row's scale, max(|y0|, max |x|), which bounds every state (each is a convex
/// combination of y0 and the samples).
constexpr int kToleranceEpsilons = 8;
template <typename T>
GRAFX_HOST_DEVICE inline T newton_tolerance(T scale) {
  return T(kToleranceEpsilons) * std::numeric_limits<T>::epsilon() * scale;
}

/// Chunk t's part of the Newton step: δ[t+1] = p[t]·δ[t] + (e[t] − s[t+1]), where δ = s' − s
/// and δ[0] = 0. Its scan gives δ[t] (the exclusive composition's offset); the residual is an
/// exact zero where the next start already is e[t], so exact starts stay exact.
template <typename T>
GRAFX_HOST_DEVICE inline Affine<T> newton_map(const BallisticsRun<T>& run, T next_start) {
  return {run.slope, run.state - next_start};
}

/// The next chunk's new start from this chunk's run and its own start's change δ[t]: written
/// as e + p·δ so that δ = 0 gives e bit for bit.
template <typename T>
GRAFX_HOST_DEVICE inline T newton_start(const BallisticsRun<T>& run, T delta) {
  return run.state + run.slope * delta;
}

/// Whether a start moved by no more than `tolerance` (NaN counts as settled: it never will).
template <typename T>
GRAFX_HOST_DEVICE inline bool settled(T old_start, T new_start, T tolerance) {
  return !(magnitude(new_start - old_start) > tolerance);
}

// ---- ballistics: the adjoint ---------------------------------------------------------------

/// The adjoint swept backward through a chunk: λ[n] = g[n] + α[n+1]·λ[n+1], with `alpha_next`
/// the α of the sample after the current one, `product` the α's passed (λ[begin] = product ·
/// λ[end] + λ from zero: the chunk's map of the λ carried in), and the coefficients' gradient
/// sums, accumulated in Acc (double for float and double signals).
template <typename Acc>
struct AdjointRun {
  Acc lambda, product, alpha_next, grad_rise, grad_fall;
};

/// The α of sample n (branches as the forward pass took them: rising when x[n] > y[n−1]).
template <typename T>
GRAFX_HOST_DEVICE inline T branch_alpha(T x, T y_previous, const BallisticsGains<T>& g) {
  return x > y_previous ? g.alpha_rise : g.alpha_fall;
}

/// One sample n, walking backward: updates λ to λ[n] and returns ∂loss/∂x[n] = (1 − α[n])·λ[n],
/// with the product (kProduct: the first pass) or the gradient sums (kSums: the second).
template <bool kProduct, bool kSums, typename T, typename Acc>
GRAFX_HOST_DEVICE inline T adjoint_step(AdjointRun<Acc>& run, T x, T y_previous, T grad,
                                        const BallisticsGains<T>& g) {
  run.lambda = Acc(grad) + run.alpha_next * run.lambda;
  if (kProduct) run.product *= run.alpha_next;
  const bool rising = x > y_previous;
  const T alpha     = rising ? g.alpha_rise : g.alpha_fall;
  if (kSums) {
    const Acc term = run.lambda * Acc(y_previous - x);
    run.grad_rise += rising ? term : Acc(0);
    run.grad_fall += rising ? Acc(0) : term;
  }
  run.alpha_next = Acc(alpha);
  return T(Acc(T(1) - alpha) * run.lambda);
}

// ---- linear recurrences: y[n] = a[n]·y[n−1] + x[n] -----------------------------------------

/// One step of a linear recurrence, accumulating the chunk's coefficient product when kProduct.
template <bool kProduct, typename Acc>
GRAFX_HOST_DEVICE inline void linear_step(Acc& state, Acc& product, Acc a, Acc x) {
  state = a * state + x;
  if (kProduct) product *= a;
}

// ---- two poles: y[n] = x[n] + c1[n]·y[n−1] + c2[n]·y[n−2] ---------------------------------
// The state s[n] = (y[n], y[n−1]) follows the linear recursion s[n] = M[n]·s[n−1] + (x[n], 0),
// M = [[c1, c2], [1, 0]]: each chunk's map from its start state to its end state is affine,
// s ↦ P·s + B, computed from a zero start; the maps' composition in chunk order gives every
// chunk's start, and each chunk then runs again from its start, writing y. In double.

/// A chunk's map of the two-sample state: s ↦ P·s + B.
struct TwoPoleMap {
  double p00, p01, p10, p11, b0, b1;
};

GRAFX_HOST_DEVICE inline TwoPoleMap two_pole_identity() { return {1, 0, 0, 1, 0, 0}; }

/// One sample on a map: M·(P, B) + (x, 0).
GRAFX_HOST_DEVICE inline void two_pole_map_step(TwoPoleMap& m, double c1, double c2, double x) {
  const double p00 = c1 * m.p00 + c2 * m.p10, p01 = c1 * m.p01 + c2 * m.p11;
  const double b0 = c1 * m.b0 + c2 * m.b1 + x;
  m.p10 = m.p00, m.p11 = m.p01, m.b1 = m.b0;
  m.p00 = p00, m.p01 = p01, m.b0 = b0;
}

/// The state a chunk of map `m` ends in from the start (s0, s1) = (y[n−1], y[n−2]).
GRAFX_HOST_DEVICE inline void two_pole_apply(const TwoPoleMap& m, double& s0, double& s1) {
  const double end0 = m.p00 * s0 + m.p01 * s1 + m.b0, end1 = m.p10 * s0 + m.p11 * s1 + m.b1;
  s0 = end0, s1 = end1;
}

/// One sample of the recursion from the state (y[n−1], y[n−2]); returns y[n].
GRAFX_HOST_DEVICE inline double two_pole_step(double& s0, double& s1, double c1, double c2,
                                              double x) {
  const double y = x + c1 * s0 + c2 * s1;
  s1 = s0, s0 = y;
  return y;
}

/// A row as the recursion reads it, in logical order (kReverse: logical sample i is the row's
/// L − 1 − i): its samples and coefficients, one per row or (kPerSample) one per sample.
template <bool kPerSample, bool kReverse>
struct TwoPoleRow {
  const double *x, *c1, *c2;
  double* y;
  int64_t length;
  GRAFX_HOST_DEVICE int64_t at(int64_t i) const { return kReverse ? length - 1 - i : i; }
  GRAFX_HOST_DEVICE double coefficient(const double* c, int64_t i) const {
    return kPerSample ? c[at(i)] : *c;
  }
};

/// The map of the row's chunk `r` from a zero start.
template <class Row>
GRAFX_HOST_DEVICE inline TwoPoleMap two_pole_chunk_map(const Row& row, Range r) {
  TwoPoleMap map = two_pole_identity();
  for (int64_t i = r.begin; i < r.end; ++i)
    two_pole_map_step(map, row.coefficient(row.c1, i), row.coefficient(row.c2, i),
                      row.x[row.at(i)]);
  return map;
}

/// Each chunk's start state (y[n−1], y[n−2]) into starts[2t], starts[2t + 1]: the maps of the
/// chunks before it composed in order, from a zero state.
GRAFX_HOST_DEVICE inline void two_pole_starts(const TwoPoleMap* maps, int64_t chunks,
                                              double* starts) {
  double s0 = 0, s1 = 0;
  for (int64_t t = 0; t < chunks; ++t) {
    starts[2 * t] = s0, starts[2 * t + 1] = s1;
    two_pole_apply(maps[t], s0, s1);
  }
}

/// Writes y over the row's chunk `r` from its start state.
template <class Row>
GRAFX_HOST_DEVICE inline void two_pole_chunk_write(const Row& row, Range r, const double* start) {
  double s0 = start[0], s1 = start[1];
  for (int64_t i = r.begin; i < r.end; ++i)
    row.y[row.at(i)] = two_pole_step(s0, s1, row.coefficient(row.c1, i), row.coefficient(row.c2, i),
                                     row.x[row.at(i)]);
}

}  // namespace grafx::dsp::chunked
