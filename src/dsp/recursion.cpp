#include <grafx/dsp/recursion.h>

#include "dsp/rows.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/chunked_recursions.h"
#include "dsp/tangents.h"

#ifdef GRAFX_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "dsp/cuda/recursion_kernels.h"

#include <mutex>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kScanChunk = 64;  // samples per chunk of the device scan

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename T>
void ballistics_rows(const T* x, const T* rise, const T* fall, const T* initial, T* y,
                     int64_t n_rows, int64_t length) {
  for_row_groups(n_rows, [&](int64_t first, int64_t count) {
    T state[kInterleavedRows], gain_rise[kInterleavedRows], gain_fall[kInterleavedRows];
    for (int64_t j = 0; j < count; ++j) {
      state[j]     = initial[first + j];
      gain_rise[j] = 1 - rise[first + j];
      gain_fall[j] = 1 - fall[first + j];
    }
    const T* xg = x + first * length;
    T* yg       = y + first * length;
    for (int64_t n = 0; n < length; ++n)
      for (int64_t j = 0; j < count; ++j) {
        state[j] = ballistics_step(state[j], xg[j * length + n], gain_rise[j], gain_fall[j]);
        yg[j * length + n] = state[j];
      }
  });
}

// ---- ballistics by Newton's method on chunk starts: the CUDA kernel's steps on the CPU -------
//
// dsp/chunked_recursions.h gives the algorithm; the CUDA kernel (dsp/cuda/recursion_kernels.cu)
// runs chunk t on thread t and the scan across the block, here they run in order.

/// One row of ballistics_chunked: y[0 … L) and the iterations it took. `starts` and `runs` hold
/// `chunks` values.
template <typename T>
int chunked_row(const T* x, int64_t length, const chunked::BallisticsGains<T>& gains, T initial,
                int64_t chunks, T* starts, chunked::BallisticsRun<T>* runs, T* y) {
  const int64_t chunk = chunked::chunk_length(length, chunks);
  auto range          = [&](int64_t t) { return chunked::chunk_range(t, chunk, length); };
  chunked::coarse_starts(starts, chunks, chunk, length, initial, gains,
                         [&](int64_t, int, int64_t n) { return x[n]; });
  T tolerance   = 0;
  int iteration = 1;
  for (;; ++iteration) {
    T peak = 0;
    for (int64_t t = 0; t < chunks; ++t) {
      const chunked::Range r = range(t);
      runs[t]                = {starts[t], T(1)};
      chunked::ballistics_run(runs[t], x + r.begin, r.end - r.begin, gains);
      if (iteration == 1)
        for (int64_t n = r.begin; n < r.end; ++n) peak = std::max(peak, chunked::magnitude(x[n]));
    }
    if (iteration == 1)
      tolerance = chunked::newton_tolerance(std::max(peak, chunked::magnitude(initial)));
    // δ[t] is the composition of the maps before chunk t applied to δ[0] = 0: its offset.
    chunked::Affine<T> before = chunked::identity<T>();
    bool moved                = false;
    for (int64_t t = 0; t + 1 < chunks; ++t) {
      const T next  = chunked::newton_start(runs[t], before.offset);
      before        = chunked::compose(before, chunked::newton_map(runs[t], starts[t + 1]));
      moved         = moved || !chunked::settled(starts[t + 1], next, tolerance);
      starts[t + 1] = next;
    }
    if (!moved || iteration >= chunked::iteration_cap(chunks)) break;
  }
  for (int64_t t = 0; t < chunks; ++t) {
    const chunked::Range r = range(t);
    chunked::ballistics_write(starts[t], x + r.begin, y + r.begin, r.end - r.begin, gains);
  }
  return iteration;
}

/// ballistics_chunked on rows x R×L: rows in parallel; the most iterations any row took.
template <typename T>
int chunked_rows(const T* x, const T* rise, const T* fall, const T* initial, T* y, int64_t n_rows,
                 int64_t length, int64_t chunks) {
  std::vector<int> iterations(n_rows, 0);
  at::parallel_for(0, n_rows, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> starts(chunks);
    std::vector<chunked::BallisticsRun<T>> runs(chunks);
    for (int64_t r = begin; r < end; ++r)
      iterations[r] =
          chunked_row(x + r * length, length, chunked::BallisticsGains<T>(rise[r], fall[r]),
                      initial[r], chunks, starts.data(), runs.data(), y + r * length);
  });
  return n_rows ? *std::max_element(iterations.begin(), iterations.end()) : 0;
}

/// two_pole_chunked on rows x R×L with coefficients R×1 or R×L (kPerSample), in double: the
/// CUDA kernel's steps (dsp/chunked_recursions.h), chunk t in turn where the kernel runs it on
/// thread t.
template <bool kPerSample, bool kReverse>
void two_pole_chunked_rows(const double* x, const double* c1, const double* c2, double* y,
                           int64_t n_rows, int64_t length, int64_t chunks) {
  const int64_t chunk = chunked::chunk_length(length, chunks);
  at::parallel_for(0, n_rows, 1, [&](int64_t begin, int64_t end) {
    std::vector<chunked::TwoPoleMap> maps(chunks);
    std::vector<double> starts(2 * chunks);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t offset = kPerSample ? r * length : r;
      const chunked::TwoPoleRow<kPerSample, kReverse> row{x + r * length, c1 + offset, c2 + offset,
                                                          y + r * length, length};
      for (int64_t t = 0; t < chunks; ++t)
        maps[t] = chunked::two_pole_chunk_map(row, chunked::chunk_range(t, chunk, length));
      chunked::two_pole_starts(maps.data(), chunks, starts.data());
      for (int64_t t = 0; t < chunks; ++t)
        chunked::two_pole_chunk_write(row, chunked::chunk_range(t, chunk, length),
                                      starts.data() + 2 * t);
    }
  });
}

// ---- scans for other devices: s[n] = A[n]·s[n−1] + v[n] with S×S matrices (S = 1 or 2) -----
//
// In chunks of T samples, all rows and chunks at once: each chunk runs from a zero state, the
// chunks' end states are the same recurrence one level up (L/T samples), and each sample then
// adds its chunk's carried-in state times the matrices' product since the chunk's start. Products
// only, never a division, so a zero or tiny coefficient is exact. Signals v R×L×S, matrices
// R×L×S×S (per sample) or R×S×S (per row), initial state R×S.

/// M·s for batches of matrices [..., S, S] and states [..., S].
at::Tensor times(const at::Tensor& matrix, const at::Tensor& state) {
  return (matrix * state.unsqueeze(-2)).sum(-1);
}

/// A⁰ … Aⁿ⁻¹ of per-row matrices A [R, S, S]: [R, n, S, S], by doubling (log₂ n products).
at::Tensor matrix_powers(const at::Tensor& a, int64_t n) {
  const int64_t rows = a.size(0), size = a.size(1);
  at::Tensor powers = at::eye(size, a.options()).expand({rows, 1, size, size});
  for (at::Tensor step = a; powers.size(1) < n; step = at::matmul(step, step))
    powers = at::cat({powers, at::matmul(step.unsqueeze(1), powers)}, 1);  // A^count · Aᵏ
  return powers.narrow(1, 0, n);
}

/// One matrix per row: a chunk from a zero state is one product with the block-Toeplitz matrix
/// of A⁰ … A^(T−1), and the level above runs with A to the power T. About ten operations per
/// level.
at::Tensor fixed_scan(const at::Tensor& v, const at::Tensor& a, const at::Tensor& initial,
                      int64_t chunk) {
  const int64_t rows = v.size(0), length = v.size(1), size = v.size(2);
  const int64_t n_chunks = ceil_div(length, chunk), padded = n_chunks * chunk;
  const at::Tensor powers = matrix_powers(a, chunk + 1);  // [R, T + 1, S, S]
  const at::Tensor lag    = at::arange(chunk, v.options().dtype(at::kLong));
  const at::Tensor apart  = lag.unsqueeze(1) - lag.unsqueeze(0);  // t − k
  const at::Tensor toeplitz =
      (powers.index_select(1, apart.clamp_min(0).flatten()).view({rows, chunk, chunk, size, size}) *
       (apart >= 0).to(v.scalar_type()).view({1, chunk, chunk, 1, 1}))
          .permute({0, 1, 3, 2, 4})
          .reshape({rows, chunk * size, chunk * size});  // rows (t, i), columns (k, j)
  const at::Tensor chunks =
      at::constant_pad_nd(v, {0, 0, 0, padded - length}).view({rows, n_chunks, chunk * size});
  const at::Tensor local =
      at::matmul(chunks, toeplitz.transpose(1, 2)).view({rows, n_chunks, chunk, size});
  at::Tensor carried_in = initial.unsqueeze(1);  // R×chunks×S
  if (n_chunks > 1) {
    at::Tensor ends = fixed_scan(local.select(2, chunk - 1).contiguous(), powers.select(1, chunk),
                                 initial, chunk);
    carried_in      = at::cat({carried_in, ends.narrow(1, 0, n_chunks - 1)}, 1);
  }
  const at::Tensor y =
      local + at::einsum("rtij,rcj->rcti", {powers.narrow(1, 1, chunk), carried_in});
  return y.reshape({rows, padded, size}).narrow(1, 0, length);
}

/// A matrix per sample: each chunk steps through its T samples (a few operations each, on all
/// rows and chunks at once) while it multiplies up its matrices, whose products are the level
/// above's matrices. About T·log_T(L) steps.
at::Tensor varying_scan(const at::Tensor& v, const at::Tensor& m, const at::Tensor& initial,
                        int64_t chunk) {
  const int64_t rows = v.size(0), length = v.size(1), size = v.size(2);
  if (length <= chunk) {  // one chunk: the steps themselves
    std::vector<at::Tensor> s;
    at::Tensor state = initial;
    for (int64_t n = 0; n < length; ++n)
      s.push_back(state = times(m.select(1, n), state) + v.select(1, n));
    return at::stack(s, 1);
  }
  const int64_t n_chunks = ceil_div(length, chunk), padded = n_chunks * chunk;
  // Time-major [T, R, chunks, ...]: each step reads and writes contiguous rows. The padding
  // after the end is never read back.
  const at::Tensor vs = at::constant_pad_nd(v, {0, 0, 0, padded - length})
                            .view({rows, n_chunks, chunk, size})
                            .permute({2, 0, 1, 3})
                            .contiguous();
  const at::Tensor ms = at::constant_pad_nd(m, {0, 0, 0, 0, 0, padded - length})
                            .view({rows, n_chunks, chunk, size, size})
                            .permute({2, 0, 1, 3, 4})
                            .contiguous();
  at::Tensor local = at::empty_like(vs), product = at::empty_like(ms);
  local[0].copy_(vs[0]);
  product[0].copy_(ms[0]);
  for (int64_t t = 1; t < chunk; ++t) {
    local[t].copy_(times(ms[t], local[t - 1]) + vs[t]);
    product[t].copy_((ms[t].unsqueeze(-1) * product[t - 1].unsqueeze(-3)).sum(-2));  // M_t·P
  }
  at::Tensor ends = varying_scan(local[chunk - 1], product[chunk - 1], initial, chunk);
  at::Tensor carried_in =
      at::cat({initial.unsqueeze(1), ends.narrow(1, 0, n_chunks - 1)}, 1);  // R×chunks×S
  at::Tensor s = local + times(product, carried_in.unsqueeze(0));           // [T, R, chunks, S]
  return s.permute({1, 2, 0, 3}).reshape({rows, padded, size}).narrow(1, 0, length);
}

/// The scan of matrices m R×L×S×S (per sample) or R×1×S×S (per row), in float64 whatever the
/// signal's type: a chunk's product enters the carries, whose errors a slow pole amplifies by
/// 1/(1 − product) (~150× for α = 0.9999 and 64-sample chunks); in float32 that left the scan
/// 3× farther from the exact result than the sequential loop, in float64 it is nearer.
/// `reverse` runs from the last sample to the first.
at::Tensor matrix_scan(const at::Tensor& v, const at::Tensor& m, const at::Tensor& initial,
                       bool reverse, int64_t chunk) {
  auto in_order = [&](const at::Tensor& t) {
    at::Tensor wide = t.to(at::kDouble);
    return reverse && t.size(1) > 1 ? wide.flip(1) : wide;
  };
  const at::Tensor y =
      m.size(1) > 1
          ? varying_scan(in_order(v), in_order(m), initial.to(at::kDouble), chunk)
          : fixed_scan(in_order(v), m.select(1, 0).to(at::kDouble), initial.to(at::kDouble), chunk);
  return (reverse ? y.flip(1) : y).to(v.scalar_type());
}

/// linear_recurrence's scan: x R×L, a R×1 or R×L, initial R, as 1×1 matrices.
at::Tensor scan_rows(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                     bool reverse, int64_t chunk) {
  return matrix_scan(x.unsqueeze(2), a.view({a.size(0), a.size(1), 1, 1}), initial.unsqueeze(1),
                     reverse, chunk)
      .squeeze(2);
}

/// Passes of Ballistics::scan before it hands rows whose branches have not settled to the loop.
constexpr int kBranchPasses = 32;

#ifdef GRAFX_CUDA
// ---- the CUDA kernels (dsp/cuda/recursion_kernels.h): exact, parallel along time -------------

/// Whether the CUDA kernels take these tensors: all on the first one's CUDA device, float or
/// double like it.
bool cuda_kernels_take(std::initializer_list<at::Tensor> tensors) {
  const at::Tensor& first = *tensors.begin();
  if (first.scalar_type() != at::kFloat && first.scalar_type() != at::kDouble) return false;
  for (const at::Tensor& t : tensors)
    if (!t.is_cuda() || t.device() != first.device() || t.scalar_type() != first.scalar_type())
      return false;
  return true;
}

void* current_stream(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

/// The per-row iterations of the latest ballistics forward pass on a CUDA device, for
/// last_ballistics_iterations (never destroyed: no device memory freed after CUDA's exit).
struct LastIterations {
  std::mutex mutex;
  at::Tensor counts;
};
LastIterations& last_iterations() {
  static auto* last = new LastIterations;
  return *last;
}

at::Tensor cuda_linear_recurrence(const at::Tensor& x, const at::Tensor& a,
                                  const at::Tensor& initial, bool reverse) {
  c10::cuda::CUDAGuard device(x.device());
  const at::Tensor xc = x.contiguous(), ac = a.contiguous(), ic = initial.contiguous();
  at::Tensor y = at::empty(xc.sizes(), xc.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "linear_recurrence", [&] {
    grafx::dsp::cuda::linear_recurrence<scalar_t>(
        xc.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), ac.size(1) > 1, ic.data_ptr<scalar_t>(),
        y.data_ptr<scalar_t>(), xc.size(0), xc.size(1), reverse, current_stream(x));
  });
  return y;
}

at::Tensor cuda_ballistics(const at::Tensor& x, const at::Tensor& rise, const at::Tensor& fall,
                           const at::Tensor& initial) {
  c10::cuda::CUDAGuard device(x.device());
  const at::Tensor xc = x.contiguous(), rc = rise.contiguous(), fc = fall.contiguous(),
                   ic   = initial.contiguous();
  at::Tensor y          = at::empty(xc.sizes(), xc.options());
  at::Tensor iterations = at::empty({xc.size(0)}, xc.options().dtype(at::kInt));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "ballistics", [&] {
    grafx::dsp::cuda::ballistics_forward<scalar_t>(
        xc.data_ptr<scalar_t>(), rc.data_ptr<scalar_t>(), fc.data_ptr<scalar_t>(),
        ic.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), iterations.data_ptr<int>(), xc.size(0),
        xc.size(1), current_stream(x));
  });
  LastIterations& last = last_iterations();
  std::lock_guard<std::mutex> lock(last.mutex);
  last.counts = iterations;
  return y;
}

/// Ballistics' adjoint by the CUDA kernel: {∂x, ∂α↑, ∂α↓, ∂initial}.
std::vector<at::Tensor> cuda_ballistics_backward(const at::Tensor& x, const at::Tensor& rise,
                                                 const at::Tensor& fall, const at::Tensor& initial,
                                                 const at::Tensor& y, const at::Tensor& grad) {
  c10::cuda::CUDAGuard device(x.device());
  const at::Tensor xc = x.contiguous(), rc = rise.contiguous(), fc = fall.contiguous(),
                   ic = initial.contiguous(), yc = y.contiguous(), gc = grad.contiguous();
  at::Tensor grad_x    = at::empty(xc.sizes(), xc.options());
  at::Tensor grad_rise = at::empty({xc.size(0)}, xc.options()),
             grad_fall = at::empty_like(grad_rise), grad_initial = at::empty_like(grad_rise);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "ballistics_backward", [&] {
    grafx::dsp::cuda::ballistics_backward<scalar_t>(
        xc.data_ptr<scalar_t>(), yc.data_ptr<scalar_t>(), rc.data_ptr<scalar_t>(),
        fc.data_ptr<scalar_t>(), ic.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(),
        grad_x.data_ptr<scalar_t>(), grad_rise.data_ptr<scalar_t>(), grad_fall.data_ptr<scalar_t>(),
        grad_initial.data_ptr<scalar_t>(), xc.size(0), xc.size(1), current_stream(x));
  });
  return {grad_x, grad_rise, grad_fall, grad_initial};
}

/// two_pole_scan by the CUDA kernel, on rows x R×L and coefficients R×1 or R×L, in float64.
at::Tensor cuda_two_pole(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                         bool reverse) {
  c10::cuda::CUDAGuard device(x.device());
  const auto wide     = [](const at::Tensor& t) { return t.to(at::kDouble).contiguous(); };
  const at::Tensor xd = wide(x), ad = wide(c1), bd = wide(c2);
  at::Tensor y = at::empty(xd.sizes(), xd.options());
  grafx::dsp::cuda::two_pole(xd.data_ptr<double>(), ad.data_ptr<double>(), bd.data_ptr<double>(),
                             ad.size(1) > 1, y.data_ptr<double>(), xd.size(0), xd.size(1), reverse,
                             current_stream(x));
  return y;
}
#endif

// ---- autograd Functions on rows: x R×L, a R×1 or R×L, initial R ----------------------------

/// The previous sample of y in the recursion's direction, with the initial value at the start.
at::Tensor previous(const at::Tensor& y, const at::Tensor& initial, bool reverse) {
  int64_t length = y.size(1);
  return reverse ? at::cat({y.narrow(1, 1, length - 1), initial.unsqueeze(1)}, 1)
                 : at::cat({initial.unsqueeze(1), y.narrow(1, 0, length - 1)}, 1);
}

/// Coefficients of the adjoint recursion: it runs the other way, so a per-sample coefficient
/// a[n] multiplies the adjoint of sample n ± 1 (the one it multiplied in the forward pass).
at::Tensor adjoint_coefficients(const at::Tensor& a, bool reverse) {
  int64_t length = a.size(1);
  if (length == 1) return a;
  at::Tensor zero = at::zeros({a.size(0), 1}, a.options());
  return reverse ? at::cat({zero, a.narrow(1, 0, length - 1)}, 1)
                 : at::cat({a.narrow(1, 1, length - 1), zero}, 1);
}

struct LinearRecurrence : public torch::autograd::Function<LinearRecurrence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& a,
                            const at::Tensor& initial, bool reverse, const SavedDuals& duals) {
    at::Tensor y =
        x.device().is_cpu() ? loop(x, a, initial, reverse) : on_device(x, a, initial, reverse);
    ctx->saved_data["reverse"] = reverse;
    ctx->save_for_backward({a, initial, y});
    duals.save(ctx);
    return y;
  }

  /// The kernel of other devices: CUDA's (a CUDA build), else the chunked scan of ATen operations.
  static at::Tensor on_device(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                              bool reverse) {
#ifdef GRAFX_CUDA
    if (cuda_kernels_take({x, a, initial})) return cuda_linear_recurrence(x, a, initial, reverse);
#endif
    return scan_rows(x, a, initial, reverse, kScanChunk).contiguous();
  }

  /// The CPU kernel: recurrence_rows on contiguous rows.
  static at::Tensor loop(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                         bool reverse) {
    at::Tensor xc = cpu(x), ac = cpu(a), ic = cpu(initial);
    return on_cpu(x, [&](at::Tensor& out) {
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "linear_recurrence", [&] {
        const scalar_t* xp = xc.data_ptr<scalar_t>();
        const scalar_t* ap = ac.data_ptr<scalar_t>();
        const scalar_t* ip = ic.data_ptr<scalar_t>();
        scalar_t* yp       = out.data_ptr<scalar_t>();
        bool varying       = a.size(1) > 1;
        int64_t rows = x.size(0), length = x.size(1);
        if (varying && reverse) recurrence_rows<scalar_t, true, true>(xp, ap, ip, yp, rows, length);
        if (varying && !reverse)
          recurrence_rows<scalar_t, true, false>(xp, ap, ip, yp, rows, length);
        if (!varying && reverse)
          recurrence_rows<scalar_t, false, true>(xp, ap, ip, yp, rows, length);
        if (!varying && !reverse)
          recurrence_rows<scalar_t, false, false>(xp, ap, ip, yp, rows, length);
      });
    });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved   = ctx->get_saved_variables();
    bool reverse = ctx->saved_data["reverse"].toBool();
    auto duals   = SavedDuals::of(ctx);  // forward over reverse: y recomputed with its tangent
    const at::Tensor a       = duals.empty() ? saved[0] : duals[1],
                     initial = duals.empty() ? saved[1] : duals[2],
                     y       = duals.empty() ? saved[2] : recurrence(duals[0], a, initial, reverse);
    // λ[n] = ∂loss/∂y[n] through all later samples: the same recursion, run the other way.
    at::Tensor lambda =
        recurrence(grads[0], adjoint_coefficients(a, reverse), at::zeros_like(initial), !reverse);
    at::Tensor grad_a, grad_initial;
    if (ctx->needs_input_grad(1)) {
      grad_a = lambda * previous(y, initial, reverse);
      if (a.size(1) == 1) grad_a = grad_a.sum(1, true);
    }
    if (ctx->needs_input_grad(2)) {
      int64_t first = reverse ? y.size(1) - 1 : 0;  // the sample that reads the initial value
      grad_initial  = lambda.select(1, first) * a.select(1, a.size(1) == 1 ? 0 : first);
    }
    return {lambda, grad_a, grad_initial, at::Tensor(), at::Tensor()};
  }

  /// The recursion on rows (x R×L, a R×1 or R×L, initial R), with its tangent rule: for
  /// y[n] = a[n]·y[n∓1] + x[n], the tangent is the same recursion driven by x'[n] + a'[n]·y[n∓1].
  static at::Tensor recurrence(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                               bool reverse) {
    auto [x_primal, x_tangent]       = unpack_dual(x);
    auto [a_primal, a_tangent]       = unpack_dual(a);
    auto [initial_primal, i_tangent] = unpack_dual(initial);
    if (!x_tangent.defined() && !a_tangent.defined() && !i_tangent.defined())
      return apply(x, a, initial, reverse, SavedDuals{});
    at::Tensor y = apply(x_primal, a_primal, initial_primal, reverse, SavedDuals{{x, a, initial}});
    at::Tensor drive = or_zeros(x_tangent, x_primal);
    if (a_tangent.defined()) drive = drive + a_tangent * previous(y, initial_primal, reverse);
    return make_dual(y, recurrence(drive, a_primal, or_zeros(i_tangent, initial_primal), reverse));
  }
};

struct Ballistics : public torch::autograd::Function<Ballistics> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& rise,
                            const at::Tensor& fall, const at::Tensor& initial,
                            const SavedDuals& duals) {
    at::Tensor y =
        x.device().is_cpu() ? loop(x, rise, fall, initial) : on_device(x, rise, fall, initial);
    ctx->save_for_backward({x, rise, fall, initial, y});
    duals.save(ctx);
    return y;
  }

  /// The kernel of other devices: CUDA's (a CUDA build: Newton's method on chunk starts, one
  /// block per row), else the branch-settling scan below.
  static at::Tensor on_device(const at::Tensor& x, const at::Tensor& rise, const at::Tensor& fall,
                              const at::Tensor& initial) {
#ifdef GRAFX_CUDA
    if (cuda_kernels_take({x, rise, fall, initial})) return cuda_ballistics(x, rise, fall, initial);
#endif
    return scan(x, rise, fall, initial);
  }

  /// The CPU kernel: ballistics_rows on contiguous rows.
  static at::Tensor loop(const at::Tensor& x, const at::Tensor& rise, const at::Tensor& fall,
                         const at::Tensor& initial) {
    at::Tensor xc = cpu(x), rc = cpu(rise), fc = cpu(fall), ic = cpu(initial);
    return on_cpu(x, [&](at::Tensor& out) {
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "ballistics", [&] {
        ballistics_rows<scalar_t>(xc.data_ptr<scalar_t>(), rc.data_ptr<scalar_t>(),
                                  fc.data_ptr<scalar_t>(), ic.data_ptr<scalar_t>(),
                                  out.data_ptr<scalar_t>(), x.size(0), x.size(1));
      });
    });
  }

  /// The kernel of other devices: given which samples rise, ballistics is a linear recurrence,
  /// which the chunked scan computes. Starting from "all falling", each pass takes the branches
  /// the last pass's output implies and scans again, until they no longer change: the output then
  /// satisfies the recursion with its own branches, which only the exact solution does. A pass
  /// fixes at least the first wrong branch, and on real levels 5–8 passes settle (docs/dsp.md);
  /// rows that have not settled after kBranchPasses run the loop on the host.
  static at::Tensor scan(const at::Tensor& x, const at::Tensor& rise, const at::Tensor& fall,
                         const at::Tensor& initial, int* passes = nullptr) {
    at::Tensor alpha = fall.unsqueeze(1), rising;
    at::Tensor y     = scan_rows((1 - alpha) * x, alpha, initial, false, kScanChunk);
    for (int pass = 1; pass <= kBranchPasses; ++pass) {
      at::Tensor now = x > previous(y, initial, false);
      if (rising.defined() && at::equal(now, rising)) {
        if (passes) *passes = pass;
        return y;
      }
      rising = now;
      alpha  = at::where(rising, rise.unsqueeze(1), fall.unsqueeze(1));
      y      = scan_rows((1 - alpha) * x, alpha, initial, false, kScanChunk);
    }
    if (passes) *passes = 0;
    return loop(x, rise, fall, initial);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto duals = SavedDuals::of(ctx);  // forward over reverse: y recomputed with its tangent
    if (!duals.empty()) saved = {duals[0], duals[1], duals[2], duals[3], run(duals)};
    const at::Tensor &x = saved[0], &rise = saved[1], &fall = saved[2], &initial = saved[3],
                     &y = saved[4];
#ifdef GRAFX_CUDA
    // The CUDA kernel where the gradients need no graph of their own (no double backward, no
    // forward over reverse): the same adjoint, in one pass per row.
    if (duals.empty() && !c10::GradMode::is_enabled() &&
        cuda_kernels_take({x, rise, fall, initial, y, grads[0]})) {
      std::vector<at::Tensor> g = cuda_ballistics_backward(x, rise, fall, initial, y, grads[0]);
      return {g[0], g[1], g[2], g[3], at::Tensor()};
    }
#endif
    // Given the branch taken at each sample, ballistics is the linear recurrence
    // y[n] = α[n]·y[n−1] + (1 − α[n])·x[n]; its adjoint runs backward in time.
    at::Tensor y_previous = previous(y, initial, false);
    at::Tensor rising     = (x > y_previous).detach();
    at::Tensor alpha      = at::where(rising, rise.unsqueeze(1), fall.unsqueeze(1));
    at::Tensor lambda = LinearRecurrence::recurrence(grads[0], adjoint_coefficients(alpha, false),
                                                     at::zeros_like(initial), true);
    at::Tensor grad_alpha = lambda * (y_previous - x);
    at::Tensor zero       = at::zeros({}, grad_alpha.options());
    return {(1 - alpha) * lambda, at::where(rising, grad_alpha, zero).sum(1),
            at::where(rising, zero, grad_alpha).sum(1), lambda.select(1, 0) * alpha.select(1, 0),
            at::Tensor()};
  }

  /// Ballistics on rows {x R×L, α↑ R, α↓ R, initial R}, with its tangent rule: given the
  /// branches, y[n] = α[n]·y[n−1] + (1 − α[n])·x[n] is linear in y, and its tangent is the same
  /// recursion driven by (1 − α[n])·x'[n] + α'[n]·(y[n−1] − x[n]).
  static at::Tensor run(const std::vector<at::Tensor>& in) {
    std::vector<at::Tensor> primals, tangents;
    bool any = false;
    for (const auto& t : in) {
      auto [p, d] = unpack_dual(t);
      primals.push_back(p);
      tangents.push_back(d);
      any = any || d.defined();
    }
    if (!any) return apply(in[0], in[1], in[2], in[3], SavedDuals{});
    const at::Tensor &x = primals[0], &initial = primals[3];
    at::Tensor y          = apply(x, primals[1], primals[2], initial, SavedDuals{in});
    at::Tensor y_previous = previous(y, initial, false);
    at::Tensor rising     = x > y_previous;
    at::Tensor alpha      = at::where(rising, primals[1].unsqueeze(1), primals[2].unsqueeze(1));
    at::Tensor drive      = tangents[0].defined() ? (1 - alpha) * tangents[0] : at::Tensor();
    if (tangents[1].defined() || tangents[2].defined()) {
      at::Tensor d_alpha = at::where(rising, or_zeros(tangents[1], primals[1]).unsqueeze(1),
                                     or_zeros(tangents[2], primals[2]).unsqueeze(1));
      drive              = add_lazy(drive, d_alpha * (y_previous - x));
    }
    return make_dual(y, LinearRecurrence::recurrence(or_zeros(drive, x), alpha,
                                                     or_zeros(tangents[3], initial), false));
  }
};

// ---- shapes: [..., L] signals, [...] per-row values ----------------------------------------

at::Tensor rows_of(const at::Tensor& signal) { return signal.reshape({-1, signal.size(-1)}); }

/// A per-row value as an R-vector, checking its shape against the signal's leading shape.
at::Tensor per_row(const at::Tensor& value, const at::Tensor& signal, const char* what) {
  at::IntArrayRef leading = signal.sizes().slice(0, signal.dim() - 1);
  TORCH_CHECK(value.defined() && value.sizes() == leading, what, ": expected shape ", leading,
              " (one value per row of the signal), but got ",
              value.defined() ? value.sizes() : at::IntArrayRef{});
  TORCH_CHECK(value.scalar_type() == signal.scalar_type(), what, ": expected dtype ",
              signal.scalar_type(), ", but got ", value.scalar_type());
  return value.reshape({-1});
}

void check_signal(const at::Tensor& x, const char* what) {
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0 && at::isFloatingType(x.scalar_type()), what,
              ": expected a non-empty float or double signal [..., L], but got ", x.sizes(), " ",
              x.scalar_type());
}

/// linear_recurrence's arguments checked and as rows: coefficients R×1 or R×L, initial R.
std::pair<at::Tensor, at::Tensor> recurrence_rows_of(const at::Tensor& x, const at::Tensor& a,
                                                     const at::Tensor& initial,
                                                     const std::string& what) {
  check_signal(x, what.c_str());
  at::Tensor coefficients = a.defined() && a.sizes() == x.sizes()
                                ? rows_of(a)
                                : per_row(a, x, (what + ": a").c_str()).unsqueeze(1);
  TORCH_CHECK(coefficients.scalar_type() == x.scalar_type(), what, ": expected a of dtype ",
              x.scalar_type(), ", but got ", coefficients.scalar_type());
  at::Tensor start = initial.defined() ? per_row(initial, x, (what + ": initial").c_str())
                                       : at::zeros({rows_of(x).size(0)}, x.options());
  return {coefficients, start};
}

/// The checked coefficient rows of a two-pole recursion on x: both R×1 or both R×L.
std::pair<at::Tensor, at::Tensor> two_pole_coefficients(const at::Tensor& x, const at::Tensor& c1,
                                                        const at::Tensor& c2,
                                                        const std::string& what) {
  check_signal(x, what.c_str());
  at::Tensor first  = recurrence_rows_of(x, c1, {}, what + ": c1").first;
  at::Tensor second = recurrence_rows_of(x, c2, {}, what + ": c2").first;
  TORCH_CHECK(first.size(1) == second.size(1), what,
              ": expected c1 and c2 both per row or both per sample");
  return {first, second};
}

}  // namespace

at::Tensor linear_recurrence(const at::Tensor& x, const at::Tensor& a, const at::Tensor& initial,
                             bool reverse) {
  auto [coefficients, start] = recurrence_rows_of(x, a, initial, "linear_recurrence");
  return LinearRecurrence::recurrence(rows_of(x), coefficients, start, reverse).view(x.sizes());
}

at::Tensor linear_recurrence_scan(const at::Tensor& x, const at::Tensor& a,
                                  const at::Tensor& initial, bool reverse, int64_t chunk) {
  TORCH_CHECK(chunk >= 2, "linear_recurrence_scan: expected chunks of at least 2 samples, but got ",
              chunk);
  auto [coefficients, start] = recurrence_rows_of(x, a, initial, "linear_recurrence_scan");
  c10::NoGradGuard values_only;
  return scan_rows(rows_of(x), coefficients, start, reverse, chunk).reshape(x.sizes());
}

at::Tensor ballistics_scan(const at::Tensor& x, const at::Tensor& alpha_rise,
                           const at::Tensor& alpha_fall, const at::Tensor& initial, int* passes) {
  check_signal(x, "ballistics_scan");
  c10::NoGradGuard values_only;
  return Ballistics::scan(rows_of(x), per_row(alpha_rise, x, "ballistics_scan: alpha_rise"),
                          per_row(alpha_fall, x, "ballistics_scan: alpha_fall"),
                          per_row(initial, x, "ballistics_scan: initial"), passes)
      .view(x.sizes());
}

at::Tensor ballistics_chunked(const at::Tensor& x, const at::Tensor& alpha_rise,
                              const at::Tensor& alpha_fall, const at::Tensor& initial,
                              int64_t chunks_per_row, int* iterations) {
  check_signal(x, "ballistics_chunked");
  TORCH_CHECK(chunks_per_row >= 1,
              "ballistics_chunked: expected at least one chunk per row, but got ", chunks_per_row);
  c10::NoGradGuard values_only;
  const at::Tensor rows  = cpu(rows_of(x.detach()));
  const at::Tensor rise  = cpu(per_row(alpha_rise.detach(), x, "ballistics_chunked: alpha_rise"));
  const at::Tensor fall  = cpu(per_row(alpha_fall.detach(), x, "ballistics_chunked: alpha_fall"));
  const at::Tensor start = cpu(per_row(initial.detach(), x, "ballistics_chunked: initial"));
  int most               = 0;
  at::Tensor y           = on_cpu(x, [&](at::Tensor& out) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "ballistics_chunked", [&] {
      most = chunked_rows<scalar_t>(rows.data_ptr<scalar_t>(), rise.data_ptr<scalar_t>(),
                                    fall.data_ptr<scalar_t>(), start.data_ptr<scalar_t>(),
                                    out.data_ptr<scalar_t>(), rows.size(0), rows.size(1),
                                    chunks_per_row);
    });
  });
  if (iterations) *iterations = most;
  return y;
}

int last_ballistics_iterations() {
#ifdef GRAFX_CUDA
  at::Tensor counts;
  {
    LastIterations& last = last_iterations();
    std::lock_guard<std::mutex> lock(last.mutex);
    counts = last.counts;
  }
  if (counts.defined() && counts.numel() > 0) return counts.max().item<int>();
#endif
  return 0;
}

at::Tensor two_pole_scan(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                         bool reverse, int64_t chunk) {
  TORCH_CHECK(chunk >= 2, "two_pole_scan: expected chunks of at least 2 samples, but got ", chunk);
  const auto [first, second] = two_pole_coefficients(x, c1, c2, "two_pole_scan");
  c10::NoGradGuard values_only;
#ifdef GRAFX_CUDA
  if (x.is_cuda() && first.device() == x.device() && second.device() == x.device())
    return cuda_two_pole(rows_of(x), first, second, reverse).to(x.scalar_type()).reshape(x.sizes());
#endif
  // s[n] = (y[n], y[n−1]) = [[c1, c2], [1, 0]]·s[n−1] + (x[n], 0).
  const at::Tensor rows = rows_of(x);
  const at::Tensor m    = at::stack({at::stack({first, second}, -1),
                                     at::stack({at::ones_like(first), at::zeros_like(second)}, -1)},
                                    -2);  // R×L×2×2 (or R×1×2×2)
  const at::Tensor v    = at::stack({rows, at::zeros_like(rows)}, -1);
  return matrix_scan(v, m, at::zeros({rows.size(0), 2}, v.options()), reverse, chunk)
      .select(2, 0)
      .reshape(x.sizes());
}

at::Tensor two_pole_chunked(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                            bool reverse, int64_t chunks_per_row) {
  TORCH_CHECK(chunks_per_row >= 1,
              "two_pole_chunked: expected at least one chunk per row, but got ", chunks_per_row);
  const auto [first, second] = two_pole_coefficients(x, c1, c2, "two_pole_chunked");
  c10::NoGradGuard values_only;
  const auto wide = [](const at::Tensor& t) {
    return t.detach().to(at::kCPU, at::kDouble).contiguous();
  };
  const at::Tensor rows = wide(rows_of(x)), a = wide(first), b = wide(second);
  at::Tensor y          = at::empty_like(rows);
  const bool per_sample = a.size(1) > 1;
  auto run              = [&](auto rows_kernel) {
    rows_kernel(rows.data_ptr<double>(), a.data_ptr<double>(), b.data_ptr<double>(),
                             y.data_ptr<double>(), rows.size(0), rows.size(1), chunks_per_row);
  };
  if (per_sample && reverse) run(two_pole_chunked_rows<true, true>);
  if (per_sample && !reverse) run(two_pole_chunked_rows<true, false>);
  if (!per_sample && reverse) run(two_pole_chunked_rows<false, true>);
  if (!per_sample && !reverse) run(two_pole_chunked_rows<false, false>);
  return y.to(x.device(), x.scalar_type()).reshape(x.sizes());
}

at::Tensor one_pole(const at::Tensor& x, const at::Tensor& alpha) {
  check_signal(x, "one_pole");
  at::Tensor a    = per_row(alpha, x, "one_pole: alpha");
  at::Tensor rows = rows_of(x) * (1 - a).unsqueeze(1);
  return LinearRecurrence::recurrence(rows, a.unsqueeze(1), at::zeros_like(a), false)
      .view(x.sizes());
}

at::Tensor ballistics(const at::Tensor& x, const at::Tensor& alpha_rise,
                      const at::Tensor& alpha_fall, const at::Tensor& initial) {
  check_signal(x, "ballistics");
  return Ballistics::run({rows_of(x), per_row(alpha_rise, x, "ballistics: alpha_rise"),
                          per_row(alpha_fall, x, "ballistics: alpha_fall"),
                          per_row(initial, x, "ballistics: initial")})
      .view(x.sizes());
}

at::Tensor decay_samples_of(const at::Tensor& pole_radius, double tolerance) {
  at::Tensor r = pole_radius.detach().to(at::kDouble).abs();
  at::Tensor n = (std::log(tolerance) / r.log()).ceil().clamp_min(0);  // r = 0: 0
  return at::where(r < 1, n, at::full_like(n, std::numeric_limits<double>::infinity()));
}

int64_t to_samples(const at::Tensor& n) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  if (n.numel() == 0) return 0;
  const double longest = n.max().item<double>();
  return longest < double(kNever) ? int64_t(longest) : kNever;  // NaN and ∞: never
}

int64_t decay_samples(const at::Tensor& pole_radius, double tolerance) {
  return to_samples(decay_samples_of(pole_radius, tolerance));
}

namespace reference {

at::Tensor one_pole(const at::Tensor& x, const at::Tensor& alpha) {
  at::Tensor zero = at::zeros_like(alpha);
  return ballistics(x, alpha, alpha, zero);
}

at::Tensor ballistics(const at::Tensor& x, const at::Tensor& alpha_rise,
                      const at::Tensor& alpha_fall, const at::Tensor& initial) {
  at::Tensor xs    = rows_of(x.detach()).to(at::kDouble).contiguous();
  at::Tensor rise  = alpha_rise.detach().reshape({-1}).to(at::kDouble);
  at::Tensor fall  = alpha_fall.detach().reshape({-1}).to(at::kDouble);
  at::Tensor start = initial.detach().reshape({-1}).to(at::kDouble);
  at::Tensor y     = at::empty_like(xs);
  auto xa          = xs.accessor<double, 2>();
  auto ya          = y.accessor<double, 2>();
  for (int64_t r = 0; r < xs.size(0); ++r) {
    double state = start[r].item<double>(), up = rise[r].item<double>(),
           down = fall[r].item<double>();
    for (int64_t n = 0; n < xs.size(1); ++n) {
      double alpha = xa[r][n] > state ? up : down;
      state        = alpha * state + (1 - alpha) * xa[r][n];
      ya[r][n]     = state;
    }
  }
  return y.view(x.sizes());
}

}  // namespace reference
}  // namespace grafx::dsp
