// The recursions' CUDA kernels: one block of kChunksPerRow threads per row, thread t running
// chunk t of the row with the per-chunk steps of dsp/chunked_recursions.h, which the CPU
// emulation (ballistics_chunked in recursion.cpp) runs in the same order, and block-wide scans
// of the chunks' affine maps joining them. No thread loops over a whole row.
//
// Samples pass through shared memory in tiles of W samples of every chunk: a thread reading
// its own chunk t·C + n straight from global memory would make each warp load touch 32 cache
// lines; staged, a warp loads 32/W chunks' W consecutive samples each (whole 32-byte sectors),
// and each thread then reads its chunk's row of the tile, padded to W + 1 so that the 32 rows a
// warp reads lie in distinct banks.

#include "dsp/cuda/recursion_kernels.h"

#include "dsp/chunked_recursions.h"

#include <cuda_runtime.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace grafx::dsp::cuda {
namespace {

namespace ch = grafx::dsp::chunked;
using ch::Affine;

constexpr int kThreads       = kChunksPerRow;
constexpr int kWarps         = kThreads / 32;
constexpr unsigned kFullWarp = 0xffffffffu;
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, one block");

/// Calls f(slot, i) for the samples this thread stages or stores of the tile at offset `first`
/// of every chunk: i = c·C + first + w is sample w of the tile in chunk c, slot c·(W + 1) + w
/// its place. Thread k takes column w = k mod W of chunks k/W, k/W + T/W, …: a warp's threads
/// touch 32/W chunks' W consecutive samples. The same thread always takes the same slots, so
/// a tile may be stored and the next staged into it without a barrier between.
template <int kWidth, typename F>
__device__ __forceinline__ void for_staged(int64_t chunk, int64_t length, int64_t first, F f) {
  static_assert(kThreads % kWidth == 0 && 32 % kWidth == 0, "tiles of whole warps");
  constexpr int kChunksApart = kThreads / kWidth;
  const int column = threadIdx.x % kWidth, c = threadIdx.x / kWidth;
  if (first + column >= chunk) return;
  const int64_t apart = kChunksApart * chunk;
  int64_t i           = c * chunk + first + column;
#pragma unroll
  for (int k = 0; k < kWidth; ++k, i += apart)
    if (i < length) f((c + k * kChunksApart) * (kWidth + 1) + column, i);
}

/// Samples of this thread's chunk in the tile at offset `first`: 0 … W.
template <int kWidth>
__device__ __forceinline__ int tile_count(const ch::Range& range, int64_t first) {
  const int64_t left = range.end - range.begin - first;
  return left <= 0 ? 0 : left >= kWidth ? kWidth : int(left);
}

template <typename A>
__device__ __forceinline__ Affine<A> shuffle(const Affine<A>& m, int delta, bool down) {
  return down ? Affine<A>{__shfl_down_sync(kFullWarp, m.slope, delta),
                          __shfl_down_sync(kFullWarp, m.offset, delta)}
              : Affine<A>{__shfl_up_sync(kFullWarp, m.slope, delta),
                          __shfl_up_sync(kFullWarp, m.offset, delta)};
}

/// The composition of the maps before this thread's (threads 0 … t − 1, or with kReverse
/// T − 1 … t + 1, applied in that order): a warp scan by shuffles, then the warps' totals.
/// Every thread of the block must call it; `totals` is shared [kWarps].
template <bool kReverse, typename A>
__device__ Affine<A> exclusive_scan(const Affine<A>& map, Affine<A>* totals) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Affine<A> inclusive = map;
#pragma unroll
  for (int delta = 1; delta < 32; delta *= 2) {
    const Affine<A> earlier = shuffle(inclusive, delta, kReverse);
    if (kReverse ? lane + delta < 32 : lane >= delta) inclusive = ch::compose(earlier, inclusive);
  }
  Affine<A> exclusive = shuffle(inclusive, 1, kReverse);
  if (kReverse ? lane == 31 : lane == 0) exclusive = ch::identity<A>();
  if (kReverse ? lane == 0 : lane == 31) totals[warp] = inclusive;
  __syncthreads();
  Affine<A> before = ch::identity<A>();
  if (kReverse)
    for (int w = kWarps - 1; w > warp; --w) before = ch::compose(before, totals[w]);
  else
    for (int w = 0; w < warp; ++w) before = ch::compose(before, totals[w]);
  __syncthreads();  // totals may be written again
  return ch::compose(before, exclusive);
}

/// The block's largest value (NaN ignored) or sum, on every thread; `scratch` is shared
/// [kWarps]. The sum's order is fixed: the same on every run.
template <typename V>
__device__ V block_max(V v, V* scratch) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) {
    const V other = __shfl_xor_sync(kFullWarp, v, delta);
    v             = other > v ? other : v;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  V largest = scratch[0];
  for (int w = 1; w < kWarps; ++w) largest = scratch[w] > largest ? scratch[w] : largest;
  __syncthreads();
  return largest;
}

template <typename V>
__device__ V block_sum(V v, V* scratch) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) v += __shfl_xor_sync(kFullWarp, v, delta);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  V sum = scratch[0];
  for (int w = 1; w < kWarps; ++w) sum += scratch[w];
  __syncthreads();
  return sum;
}

// ---- ballistics -----------------------------------------------------------------------------

/// The coarse run (chunked_recursions.h) on its samples staged in `tile`, kCoarseSamples per
/// chunk; by one thread, out of line so that its registers do not add to the kernel's loops'.
template <typename T>
__device__ __noinline__ void coarse_starts_of_tile(T* starts, const T* tile, int64_t chunk,
                                                   int64_t length, T initial,
                                                   ch::BallisticsGains<T> gains) {
  ch::coarse_starts(starts, kThreads, chunk, length, initial, gains,
                    [&](int64_t c, int k, int64_t) { return tile[c * ch::kCoarseSamples + k]; });
}

/// Blocks of the forward kernel an SM should hold: 8 (32 registers, one wave for 1024 rows on
/// 132 SMs) in float, 4 (64 registers) in double, as many as fit without spilling.
template <typename T>
constexpr int kForwardBlocks = sizeof(T) == 4 ? 8 : 4;

/// Newton's method on the chunks' starts (chunked_recursions.h), then the output from the
/// settled starts. Tiles of 64 bytes per chunk (16 floats, 8 doubles): 17 KiB of tile, so that
/// 8 blocks fit an SM.
template <typename T>
__global__ void __launch_bounds__(kThreads, kForwardBlocks<T>)
    ballistics_forward_kernel(const T* __restrict__ x, const T* __restrict__ alpha_rise,
                              const T* __restrict__ alpha_fall, const T* __restrict__ initial,
                              T* __restrict__ y, int* __restrict__ iterations, int64_t length) {
  constexpr int kWidth = 64 / sizeof(T), kStride = kWidth + 1;
  __shared__ T tile[kThreads * kStride];
  __shared__ T starts[kThreads];
  __shared__ Affine<T> totals[kWarps];
  __shared__ T maxima[kWarps];
  const int64_t row = blockIdx.x;
  const int t       = threadIdx.x;
  const T* xr       = x + row * length;
  const ch::BallisticsGains<T> gains(alpha_rise[row], alpha_fall[row]);
  const T y0            = initial[row];
  const int64_t chunk   = ch::chunk_length(length, kThreads);
  const ch::Range range = ch::chunk_range(t, chunk, length);
  const int64_t tiles   = (chunk + kWidth - 1) / kWidth;
  T* mine               = tile + t * kStride;

  // The first guesses: the coarse run's samples staged in the tile, and thread 0 runs it.
  static_assert(ch::kCoarseSamples <= kStride, "the coarse samples fit the tile");
  const int64_t stride = ch::coarse_stride(chunk);
#pragma unroll 1  // unrolled, its loads spill registers in float (32 of them for 8 blocks an SM)
  for (int k = 0; k < ch::kCoarseSamples; ++k) {
    const int64_t i = range.begin + k * stride;
    if (i < range.end) tile[t * ch::kCoarseSamples + k] = xr[i];
  }
  __syncthreads();
  if (t == 0) coarse_starts_of_tile(starts, tile, chunk, length, y0, gains);
  T tolerance   = 0;
  int iteration = 1;
  const int cap = ch::iteration_cap(kThreads);
  for (;; ++iteration) {
    __syncthreads();  // the starts written
    ch::BallisticsRun<T> run{starts[t], T(1)};
    T peak = 0;  // the chunk's largest |x|, in the first iteration
    for (int64_t j = 0; j < tiles; ++j) {
      const int64_t first = j * kWidth;
      for_staged<kWidth>(chunk, length, first, [&](int slot, int64_t i) { tile[slot] = xr[i]; });
      __syncthreads();
      const int count = tile_count<kWidth>(range, first);
      if (count == kWidth)
        ch::ballistics_run_fixed<kWidth>(run, mine, gains);
      else
        ch::ballistics_run(run, mine, int64_t(count), gains);
      if (iteration == 1)
        for (int n = 0; n < count; ++n) {
          const T level = ch::magnitude(mine[n]);
          peak          = level > peak ? level : peak;
        }
      __syncthreads();
    }
    if (iteration == 1) {
      const T largest = block_max(peak, maxima), start = ch::magnitude(y0);
      tolerance = ch::newton_tolerance(largest > start ? largest : start);
    }
    // δ[t] from the scan of δ[t+1] = p[t]·δ[t] + (e[t] − s[t+1]); the last chunk's end starts
    // nothing (a zero residual).
    const bool last    = t + 1 == kThreads;
    const T next_start = last ? run.state : starts[t + 1];
    const T delta      = exclusive_scan<false>(ch::newton_map(run, next_start), totals).offset;
    const T moved_to   = ch::newton_start(run, delta);
    const bool moved   = !last && !ch::settled(next_start, moved_to, tolerance);
    if (!last) starts[t + 1] = moved_to;  // only this thread reads or writes it since the scan
    if (!__syncthreads_or(moved) || iteration >= cap) break;
  }

  // The output from the settled starts; each tile's results go back through the tile.
  T state = starts[t];
  T* yr   = y + row * length;
  for (int64_t j = 0; j < tiles; ++j) {
    const int64_t first = j * kWidth;
    if (j > 0)
      for_staged<kWidth>(chunk, length, first - kWidth,
                         [&](int slot, int64_t i) { yr[i] = tile[slot]; });
    for_staged<kWidth>(chunk, length, first, [&](int slot, int64_t i) { tile[slot] = xr[i]; });
    __syncthreads();
    const int count = tile_count<kWidth>(range, first);
    if (count == kWidth)
      state = ch::ballistics_write_fixed<kWidth>(state, mine, mine, gains);
    else
      state = ch::ballistics_write(state, mine, mine, int64_t(count), gains);
    __syncthreads();
  }
  for_staged<kWidth>(chunk, length, (tiles - 1) * kWidth,
                     [&](int slot, int64_t i) { yr[i] = tile[slot]; });
  if (t == 0) iterations[row] = iteration;
}

/// The adjoint λ[n] = g[n] + α[n+1]·λ[n+1], in double: the first pass gives each chunk's map of
/// the λ carried into it (λ[begin] = P·λ[end] + B), a reverse scan the carries, the second pass
/// λ itself, ∂x, and the coefficients' sums. Tiles of 32 bytes per chunk of x, y[n−1] and g
/// (8 floats, 4 doubles): 27 KiB.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ballistics_backward_kernel(const T* __restrict__ x, const T* __restrict__ y,
                               const T* __restrict__ alpha_rise, const T* __restrict__ alpha_fall,
                               const T* __restrict__ initial, const T* __restrict__ grad_y,
                               T* __restrict__ grad_x, T* __restrict__ grad_alpha_rise,
                               T* __restrict__ grad_alpha_fall, T* __restrict__ grad_initial,
                               int64_t length) {
  constexpr int kWidth = 32 / sizeof(T), kStride = kWidth + 1;
  __shared__ T xs[kThreads * kStride];  // x[n]
  __shared__ T ps[kThreads * kStride];  // y[n − 1] (y0 for n = 0)
  __shared__ T gs[kThreads * kStride];  // ∂loss/∂y[n], then ∂loss/∂x[n]
  __shared__ Affine<double> totals[kWarps];
  __shared__ double sums[kWarps];
  const int64_t row = blockIdx.x;
  const int t       = threadIdx.x;
  const T* xr       = x + row * length;
  const T* yr       = y + row * length;
  const T* gr       = grad_y + row * length;
  T* gxr            = grad_x + row * length;
  const ch::BallisticsGains<T> gains(alpha_rise[row], alpha_fall[row]);
  const T y0            = initial[row];
  const int64_t chunk   = ch::chunk_length(length, kThreads);
  const ch::Range range = ch::chunk_range(t, chunk, length);
  const int64_t tiles   = (chunk + kWidth - 1) / kWidth;
  const int base        = t * kStride;
  // α of the next chunk's first sample (none past the row's end).
  const double alpha_after =
      range.end < length ? double(ch::branch_alpha(xr[range.end], yr[range.end - 1], gains)) : 0.0;
  auto stage = [&](int64_t first) {
    for_staged<kWidth>(chunk, length, first, [&](int slot, int64_t i) {
      xs[slot] = xr[i];
      ps[slot] = i > 0 ? yr[i - 1] : y0;
      gs[slot] = gr[i];
    });
  };

  ch::AdjointRun<double> run{0.0, 1.0, alpha_after, 0.0, 0.0};
  for (int64_t j = tiles - 1; j >= 0; --j) {
    stage(j * kWidth);
    __syncthreads();
    const int count = tile_count<kWidth>(range, j * kWidth);
    for (int n = count - 1; n >= 0; --n)
      ch::adjoint_step<true, false>(run, xs[base + n], ps[base + n], gs[base + n], gains);
    __syncthreads();
  }
  const double carry = exclusive_scan<true>(Affine<double>{run.product, run.lambda}, totals).offset;

  run = {carry, 1.0, alpha_after, 0.0, 0.0};
  for (int64_t j = tiles - 1; j >= 0; --j) {
    if (j < tiles - 1)
      for_staged<kWidth>(chunk, length, (j + 1) * kWidth,
                         [&](int slot, int64_t i) { gxr[i] = gs[slot]; });
    stage(j * kWidth);
    __syncthreads();
    const int count = tile_count<kWidth>(range, j * kWidth);
    for (int n = count - 1; n >= 0; --n)
      gs[base + n] =
          ch::adjoint_step<false, true>(run, xs[base + n], ps[base + n], gs[base + n], gains);
    __syncthreads();
  }
  for_staged<kWidth>(chunk, length, 0, [&](int slot, int64_t i) { gxr[i] = gs[slot]; });
  const double rise = block_sum(run.grad_rise, sums), fall = block_sum(run.grad_fall, sums);
  if (t == 0) {  // chunk 0 is never empty: its sweep ended at sample 0
    grad_alpha_rise[row] = T(rise);
    grad_alpha_fall[row] = T(fall);
    grad_initial[row]    = T(run.lambda * run.alpha_next);
  }
}

// ---- linear recurrences ---------------------------------------------------------------------

/// y[n] = a[n]·y[n−1] + x[n] in logical order (kReverse: sample i is L − 1 − i), accumulated in
/// double: the first pass gives each chunk's map from zero (P, B), a scan the starts, the
/// second pass the output. Tiles of 32 bytes per chunk.
template <typename T, bool kPerSample, bool kReverse>
__global__ void __launch_bounds__(kThreads)
    linear_recurrence_kernel(const T* __restrict__ x, const T* __restrict__ a,
                             const T* __restrict__ initial, T* __restrict__ y, int64_t length) {
  constexpr int kWidth = 32 / sizeof(T), kStride = kWidth + 1;
  __shared__ T xs[kThreads * kStride];                   // x, then y
  __shared__ T as[kPerSample ? kThreads * kStride : 1];  // a per sample
  __shared__ Affine<double> totals[kWarps];
  const int64_t row     = blockIdx.x;
  const int t           = threadIdx.x;
  const T* xr           = x + row * length;
  const T* ar           = a + (kPerSample ? row * length : row);
  T* yr                 = y + row * length;
  const double a_row    = kPerSample ? 0.0 : double(*ar);
  const int64_t chunk   = ch::chunk_length(length, kThreads);
  const ch::Range range = ch::chunk_range(t, chunk, length);
  const int64_t tiles   = (chunk + kWidth - 1) / kWidth;
  const int base        = t * kStride;
  auto at               = [&](int64_t i) { return kReverse ? length - 1 - i : i; };
  auto stage            = [&](int64_t first) {
    for_staged<kWidth>(chunk, length, first, [&](int slot, int64_t i) {
      xs[slot] = xr[at(i)];
      if (kPerSample) as[slot] = ar[at(i)];
    });
  };
  auto coefficient = [&](int n) { return kPerSample ? double(as[base + n]) : a_row; };

  double state = 0.0, product = 1.0;
  for (int64_t j = 0; j < tiles; ++j) {
    stage(j * kWidth);
    __syncthreads();
    const int count = tile_count<kWidth>(range, j * kWidth);
    for (int n = 0; n < count; ++n)
      ch::linear_step<true>(state, product, coefficient(n), double(xs[base + n]));
    __syncthreads();
  }
  const Affine<double> before = exclusive_scan<false>(Affine<double>{product, state}, totals);
  state                       = before.slope * double(initial[row]) + before.offset;

  for (int64_t j = 0; j < tiles; ++j) {
    if (j > 0)
      for_staged<kWidth>(chunk, length, (j - 1) * kWidth,
                         [&](int slot, int64_t i) { yr[at(i)] = xs[slot]; });
    stage(j * kWidth);
    __syncthreads();
    const int count = tile_count<kWidth>(range, j * kWidth);
    for (int n = 0; n < count; ++n) {
      ch::linear_step<false>(state, product, coefficient(n), double(xs[base + n]));
      xs[base + n] = T(state);
    }
    __syncthreads();
  }
  for_staged<kWidth>(chunk, length, (tiles - 1) * kWidth,
                     [&](int slot, int64_t i) { yr[at(i)] = xs[slot]; });
}

// ---- two poles ------------------------------------------------------------------------------

/// y[n] = x[n] + c1·y[n−1] + c2·y[n−2] in logical order (kReverse: sample i is L − 1 − i), by
/// dsp/chunked_recursions.h's steps: each thread its chunk's map from a zero start, one thread
/// their composition into the chunks' starts (256 small steps), each thread its chunk again from
/// its start. Each thread reads its own chunk's consecutive samples (a warp's 32 chunks are 32
/// cache lines, reused for 16 samples each).
template <bool kPerSample, bool kReverse>
__global__ void __launch_bounds__(kThreads)
    two_pole_kernel(const double* __restrict__ x, const double* __restrict__ c1,
                    const double* __restrict__ c2, double* __restrict__ y, int64_t length) {
  __shared__ ch::TwoPoleMap maps[kThreads];
  __shared__ double starts[2 * kThreads];
  const int64_t row = blockIdx.x, offset = kPerSample ? row * length : row;
  const ch::TwoPoleRow<kPerSample, kReverse> r{x + row * length, c1 + offset, c2 + offset,
                                               y + row * length, length};
  const ch::Range range = ch::chunk_range(threadIdx.x, ch::chunk_length(length, kThreads), length);
  maps[threadIdx.x]     = ch::two_pole_chunk_map(r, range);
  __syncthreads();
  if (threadIdx.x == 0) ch::two_pole_starts(maps, kThreads, starts);
  __syncthreads();
  ch::two_pole_chunk_write(r, range, starts + 2 * threadIdx.x);
}

// ---- launches -------------------------------------------------------------------------------

/// Whether there is anything to launch; one block per row.
bool launchable(int64_t rows, int64_t length, const char* what) {
  if (rows > INT_MAX)
    throw std::runtime_error(std::string("grafx::dsp::cuda::") + what + ": " +
                             std::to_string(rows) + " rows, more than a grid holds");
  return rows > 0 && length > 0;
}

void check_launch(const char* what) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("grafx::dsp::cuda::") + what + ": " +
                             cudaGetErrorString(error));
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

template <typename T, bool kPerSample, bool kReverse>
void launch_recurrence(const T* x, const T* a, const T* initial, T* y, int64_t rows, int64_t length,
                       void* stream) {
  linear_recurrence_kernel<T, kPerSample, kReverse>
      <<<unsigned(rows), kThreads, 0, as_stream(stream)>>>(x, a, initial, y, length);
}

}  // namespace

template <typename T>
void ballistics_forward(const T* x, const T* alpha_rise, const T* alpha_fall, const T* initial,
                        T* y, int* iterations, int64_t rows, int64_t length, void* stream) {
  if (!launchable(rows, length, "ballistics_forward")) return;
  ballistics_forward_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(stream)>>>(
      x, alpha_rise, alpha_fall, initial, y, iterations, length);
  check_launch("ballistics_forward");
}

template <typename T>
void ballistics_backward(const T* x, const T* y, const T* alpha_rise, const T* alpha_fall,
                         const T* initial, const T* grad_y, T* grad_x, T* grad_alpha_rise,
                         T* grad_alpha_fall, T* grad_initial, int64_t rows, int64_t length,
                         void* stream) {
  if (!launchable(rows, length, "ballistics_backward")) return;
  ballistics_backward_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(stream)>>>(
      x, y, alpha_rise, alpha_fall, initial, grad_y, grad_x, grad_alpha_rise, grad_alpha_fall,
      grad_initial, length);
  check_launch("ballistics_backward");
}

template <typename T>
void linear_recurrence(const T* x, const T* a, bool a_per_sample, const T* initial, T* y,
                       int64_t rows, int64_t length, bool reverse, void* stream) {
  if (!launchable(rows, length, "linear_recurrence")) return;
  if (a_per_sample && reverse)
    launch_recurrence<T, true, true>(x, a, initial, y, rows, length, stream);
  if (a_per_sample && !reverse)
    launch_recurrence<T, true, false>(x, a, initial, y, rows, length, stream);
  if (!a_per_sample && reverse)
    launch_recurrence<T, false, true>(x, a, initial, y, rows, length, stream);
  if (!a_per_sample && !reverse)
    launch_recurrence<T, false, false>(x, a, initial, y, rows, length, stream);
  check_launch("linear_recurrence");
}

void two_pole(const double* x, const double* c1, const double* c2, bool per_sample, double* y,
              int64_t rows, int64_t length, bool reverse, void* stream) {
  if (!launchable(rows, length, "two_pole")) return;
  const unsigned blocks = unsigned(rows);
  cudaStream_t s        = as_stream(stream);
  if (per_sample && reverse)
    two_pole_kernel<true, true><<<blocks, kThreads, 0, s>>>(x, c1, c2, y, length);
  if (per_sample && !reverse)
    two_pole_kernel<true, false><<<blocks, kThreads, 0, s>>>(x, c1, c2, y, length);
  if (!per_sample && reverse)
    two_pole_kernel<false, true><<<blocks, kThreads, 0, s>>>(x, c1, c2, y, length);
  if (!per_sample && !reverse)
    two_pole_kernel<false, false><<<blocks, kThreads, 0, s>>>(x, c1, c2, y, length);
  check_launch("two_pole");
}

#define GRAFX_INSTANTIATE(T)                                                                       \
  template void ballistics_forward<T>(const T*, const T*, const T*, const T*, T*, int*, int64_t,   \
                                      int64_t, void*);                                             \
  template void ballistics_backward<T>(const T*, const T*, const T*, const T*, const T*, const T*, \
                                       T*, T*, T*, T*, int64_t, int64_t, void*);                   \
  template void linear_recurrence<T>(const T*, const T*, bool, const T*, T*, int64_t, int64_t,     \
                                     bool, void*);
GRAFX_INSTANTIATE(float)
GRAFX_INSTANTIATE(double)
#undef GRAFX_INSTANTIATE

}  // namespace grafx::dsp::cuda
