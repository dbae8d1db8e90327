// Vector values passed between inlined helpers: the ABI note about AVX arguments does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

#include <grafx/dsp/biquad.h>
#include <grafx/dsp/convolution.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/recursion.h>

#include "dsp/rows.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/tangents.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- kernels on rows: signals R×L, normalised coefficients b R×K×3 and a R×K×2 (a1, a2) ----
//
// The cascade runs block by block in time, all sections on a block while it is in cache, the
// block transposed so that four rows sit side by side in the lanes of one vector. The
// forward pass keeps, instead of every section's output (K·L values per row, hundreds of MB for
// a batch, whose fresh pages cost more than the recursion), the sections' states at each block
// start (4·K values per block); the backward pass recomputes a block's section outputs from
// them, then sweeps the block backward in time. Recomputing the same operations in the same
// order gives the same values, so the adjoint is exact.

constexpr int64_t kBlock = 1024;  // samples: K sections × 4 rows of a block stay in L2

/// Calls kernel.template run<R>(first) for groups of R = kInterleavedRows rows (the last group
/// may have fewer): with R known at compile time, the rows' states stay in registers.
template <typename Kernel>
void for_fixed_row_groups(int64_t n_rows, const Kernel& kernel) {
  static_assert(kInterleavedRows == 4, "dispatch below covers groups of 1 to 4 rows");
  for_row_groups(n_rows, [&](int64_t first, int64_t count) {
    switch (count) {
      case 4:
        return kernel.template run<4>(first);
      case 3:
        return kernel.template run<3>(first);
      case 2:
        return kernel.template run<2>(first);
      default:
        return kernel.template run<1>(first);
    }
  });
}

using Acc = double;  // states and sums in double precision for float and double signals

/// The 4 rows of a group side by side (GCC/Clang vector extension): one AVX register, or two
/// SSE2 registers on CPUs without AVX2. Aligned as a double (unaligned vector loads cost the
/// same on current CPUs), so that blocks of lanes live in plain vectors of doubles (LaneBuffer).
typedef Acc Lanes __attribute__((vector_size(4 * sizeof(Acc)), aligned(alignof(Acc)), may_alias));

/// Lane indices for GCC's __builtin_shuffle of two Lanes (0-3 the first, 4-7 the second).
typedef int64_t LaneIndices __attribute__((vector_size(4 * sizeof(int64_t))));

/// Lanes 0-1 of a vector: the rows of a group of two. Aligned to 16 bytes, as the lanes of a
/// LaneBuffer are (operator new's alignment, strides of 32 bytes).
typedef Acc HalfLanes __attribute__((vector_size(2 * sizeof(Acc)), aligned(16), may_alias));
static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 16 && sizeof(Lanes) % 16 == 0);

/// `size` lanes in a vector of doubles (a container of Lanes would drop its alignment attribute).
class LaneBuffer {
 public:
  explicit LaneBuffer(int64_t size) : values_(size_t(4 * size)) {}
  Lanes* at(int64_t index) { return reinterpret_cast<Lanes*>(values_.data()) + index; }

 private:
  std::vector<Acc> values_;
};
static_assert(kInterleavedRows == 4, "a group of rows fills the lanes");

/// Rows first … first + R − 1 of samples [begin, begin + count) of a signal (rows of `length`)
/// into lanes, other lanes 0: the block's transpose, so that the recursions load and store
/// whole vectors.
template <int R, typename T>
void load_block(const T* signal, int64_t first, int64_t length, int64_t begin, int64_t count,
                Lanes* block) {
  for (int64_t n = 0; n < count; ++n) block[n] = Lanes{};
  for (int j = 0; j < R; ++j) {
    const T* row = signal + (first + j) * length + begin;
    for (int64_t n = 0; n < count; ++n) block[n][j] = Acc(row[n]);
  }
}

template <int R, typename T>
void store_block(const Lanes* block, T* signal, int64_t first, int64_t length, int64_t begin,
                 int64_t count) {
  for (int j = 0; j < R; ++j) {
    T* row = signal + (first + j) * length + begin;
    for (int64_t n = 0; n < count; ++n) row[n] = T(block[n][j]);
  }
}

/// Coefficients, state and adjoint sums of one section for a group of rows.
struct SectionState {
  Lanes b0{}, b1{}, b2{}, a1{}, a2{};
  Lanes u1{}, u2{}, v1{}, v2{};  // the section's last inputs and outputs
  Lanes w1{}, w2{};              // the adjoint one and two samples later
  Lanes gb0{}, gb1{}, gb2{}, ga1{}, ga2{};
  static constexpr Lanes SectionState::*kLanes[] = {
      &SectionState::b0,  &SectionState::b1,  &SectionState::b2,  &SectionState::a1,
      &SectionState::a2,  &SectionState::u1,  &SectionState::u2,  &SectionState::v1,
      &SectionState::v2,  &SectionState::w1,  &SectionState::w2,  &SectionState::gb0,
      &SectionState::gb1, &SectionState::gb2, &SectionState::ga1, &SectionState::ga2};

  template <typename T>
  SectionState(const T* b, const T* a, int64_t first, int64_t count, int64_t section,
               int64_t n_sections) {
    for (int64_t j = 0; j < count; ++j) {
      const T* bj = b + ((first + j) * n_sections + section) * 3;
      const T* aj = a + ((first + j) * n_sections + section) * 2;
      b0[j] = bj[0], b1[j] = bj[1], b2[j] = bj[2], a1[j] = aj[0], a2[j] = aj[1];
    }
  }
  /// Checkpoints [rows][blocks][sections][4]: the forward state at a block's start.
  void save(Acc* checkpoints, int64_t first, int64_t count, int64_t block, int64_t section,
            int64_t n_blocks, int64_t n_sections) const {
    for (int64_t j = 0; j < count; ++j) {
      Acc* c = checkpoints + (((first + j) * n_blocks + block) * n_sections + section) * 4;
      c[0] = u1[j], c[1] = u2[j], c[2] = v1[j], c[3] = v2[j];
    }
  }
  void load(const Acc* checkpoints, int64_t first, int64_t count, int64_t block, int64_t section,
            int64_t n_blocks, int64_t n_sections) {
    for (int64_t j = 0; j < count; ++j) {
      const Acc* c = checkpoints + (((first + j) * n_blocks + block) * n_sections + section) * 4;
      u1[j] = c[0], u2[j] = c[1], v1[j] = c[2], v2[j] = c[3];
    }
  }
};

/// The steps of a sweep over `count` samples, in time order or from the end.
template <bool kBackward>
struct Sweep {
  int64_t count;
  int64_t at(int64_t step) const { return kBackward ? count - 1 - step : step; }
  /// The first sample of steps [first, first + n), which cover consecutive samples.
  int64_t start(int64_t first, int64_t n) const { return kBackward ? count - first - n : first; }
};

/// The recursions over one block of `count` samples in lanes. Written once, compiled twice (for
/// AVX2 with FMA and for the x86-64 baseline) and chosen at run time. Every kernel goes through
/// `sample` and `adjoint_sample`, so the forward pass and the backward pass's recomputation give
/// the same values.
struct Block {
  /// One sample of a section: its output for input x; the state moves on.
  static inline __attribute__((always_inline)) Lanes sample(SectionState& s, Lanes x) {
    // Only the last multiply-add waits for the previous output (the latency chain).
    Lanes y = s.b0 * x + s.b1 * s.u1 + s.b2 * s.u2 - s.a2 * s.v2;
    y -= s.a1 * s.v1;
    s.u2 = s.u1, s.u1 = x, s.v2 = s.v1, s.v1 = y;
    return y;
  }

  /// One sample of the section's adjoint (below): ∂/∂u from g = ∂/∂v, u and v.
  static inline __attribute__((always_inline)) Lanes adjoint_sample(SectionState& s, Lanes g,
                                                                    Lanes u, Lanes v) {
    Lanes w = g - s.a2 * s.w2;
    w -= s.a1 * s.w1;
    Lanes input_gradient = s.b0 * w + s.b1 * s.w1 + s.b2 * s.w2;
    s.gb0 += w * u, s.gb1 += s.w1 * u, s.gb2 += s.w2 * u;
    s.ga1 -= s.w1 * v, s.ga2 -= s.w2 * v;
    s.w2 = s.w1, s.w1 = w;
    return input_gradient;
  }

  /// One section in the recursion's direction; `out` may equal `in`.
  template <bool kReverse>
  static inline __attribute__((always_inline)) void forward(SectionState& state, const Lanes* in,
                                                            Lanes* out, int64_t count) {
    SectionState s = state;  // a local copy: its values live in registers
    Sweep<kReverse> sweep{count};
    for (int64_t step = 0; step < count; ++step) {
      int64_t n = sweep.at(step);
      out[n]    = sample(s, in[n]);
    }
    state = s;
  }

  /// The section's adjoint, the other way in time, in place in `g`: from g = ∂/∂v (u the
  /// section's input, v its output) to ∂/∂u, with
  ///   w[n] = g[n] − a1·w[n+1] − a2·w[n+2],   ∂/∂u[n] = b0·w[n] + b1·w[n+1] + b2·w[n+2],
  ///   ∂/∂b_i = Σ_n w[n]·u[n−i] = Σ_n u[n]·w[n+i],   ∂/∂a_i = −Σ_n v[n]·w[n+i]
  /// (indices in the recursion's direction) added to the state's sums.
  template <bool kReverse>
  static inline __attribute__((always_inline)) void adjoint(SectionState& state, Lanes* g,
                                                            const Lanes* u, const Lanes* v,
                                                            int64_t count) {
    SectionState s = state;
    Sweep<!kReverse> sweep{count};
    for (int64_t step = 0; step < count; ++step) {
      int64_t n = sweep.at(step);
      g[n]      = adjoint_sample(s, g[n], u[n], v[n]);
    }
    state = s;
  }

  // Two consecutive sections at once, the second kLag samples behind the first: one section
  // alone waits every sample on its last multiply-add, two overlap their waits. With rows ≤ 2
  // the pair is packed into one vector (the first section's rows in lanes 0-1, the second's in
  // lanes 2-3), which also fills the lanes a group of two rows leaves empty. Each section does
  // the same operations in the same order as alone, so the values are those of `forward` and
  // `adjoint`; the first and last kLag steps run one section alone.

  /// The first section maps `in` to `mid`, the second `mid` to `out` (any may be the same).
  template <bool kReverse, bool kPacked>
  static inline __attribute__((always_inline)) void forward_pair(SectionState& first,
                                                                 SectionState& second,
                                                                 const Lanes* in, Lanes* mid,
                                                                 Lanes* out, int64_t count) {
    Sweep<kReverse> sweep{count};
    if (count <= kLag) {
      forward<kReverse>(first, in, mid, count);
      forward<kReverse>(second, mid, out, count);
      return;
    }
    const int64_t head = sweep.start(0, kLag), tail = sweep.start(count - kLag, kLag);
    forward<kReverse>(first, in + head, mid + head, kLag);
    if constexpr (kPacked) {
      SectionState s = packed(first, second);
      for (int64_t step = kLag; step < count; ++step) {
        int64_t n = sweep.at(step), m = sweep.at(step - kLag);
        split(sample(s, join(in[n], mid[m])), mid[n], out[m]);
      }
      unpack(s, first, second);
    } else {
      SectionState s = first, t = second;
      for (int64_t step = kLag; step < count; ++step) {
        int64_t n = sweep.at(step), m = sweep.at(step - kLag);
        mid[n] = sample(s, in[n]);
        out[m] = sample(t, mid[m]);
      }
      first = s, second = t;
    }
    forward<kReverse>(second, mid + tail, out + tail, kLag);
  }

  /// The adjoints of sections k (`first`) and k − 1 (`second`), packed, in place in `g`: u0
  /// is section k − 1's input, u1 section k's, v1 section k's output.
  template <bool kReverse>
  static inline __attribute__((always_inline)) void adjoint_pair(SectionState& first,
                                                                 SectionState& second, Lanes* g,
                                                                 const Lanes* u0, const Lanes* u1,
                                                                 const Lanes* v1, int64_t count) {
    Sweep<!kReverse> sweep{count};
    if (count <= kLag) {
      adjoint<kReverse>(first, g, u1, v1, count);
      adjoint<kReverse>(second, g, u0, u1, count);
      return;
    }
    const int64_t head = sweep.start(0, kLag), tail = sweep.start(count - kLag, kLag);
    adjoint<kReverse>(first, g + head, u1 + head, v1 + head, kLag);
    SectionState s = packed(first, second);
    for (int64_t step = kLag; step < count; ++step) {
      int64_t n = sweep.at(step), m = sweep.at(step - kLag);
      split(adjoint_sample(s, join(g[n], g[m]), join(u1[n], u0[m]), join(v1[n], u1[m])), g[n],
            g[m]);
    }
    unpack(s, first, second);
    adjoint<kReverse>(second, g + tail, u0 + tail, u1 + tail, kLag);
  }

  /// Samples between the sections of a pair. A packed vector's second half reads what its first
  /// half stored kLag samples before, so that wait is spread over kLag samples; 8 hide it.
  static constexpr int64_t kLag = 8;

  /// Lanes 0-1 of `low` and of `high` as one vector (one shuffle, not one per lane).
  static inline __attribute__((always_inline)) Lanes join(const Lanes& low, const Lanes& high) {
#if defined(__clang__)
    return __builtin_shufflevector(low, high, 0, 1, 4, 5);
#else
    return __builtin_shuffle(low, high, LaneIndices{0, 1, 4, 5});
#endif
  }
  /// Lanes 0-1 of y into lanes 0-1 of `low`, lanes 2-3 into lanes 0-1 of `high`.
  static inline __attribute__((always_inline)) void split(Lanes y, Lanes& low, Lanes& high) {
    *reinterpret_cast<HalfLanes*>(&low)  = HalfLanes{y[0], y[1]};
    *reinterpret_cast<HalfLanes*>(&high) = HalfLanes{y[2], y[3]};
  }

  /// Lanes 0-1 of every value of `first`, then lanes 0-1 of `second`'s.
  static inline __attribute__((always_inline)) SectionState packed(const SectionState& first,
                                                                   const SectionState& second) {
    SectionState s = first;
    for (auto field : SectionState::kLanes)
      s.*field =
          Lanes{(first.*field)[0], (first.*field)[1], (second.*field)[0], (second.*field)[1]};
    return s;
  }
  static inline __attribute__((always_inline)) void unpack(const SectionState& s,
                                                           SectionState& first,
                                                           SectionState& second) {
    for (auto field : SectionState::kLanes) {
      (first.*field)[0] = (s.*field)[0], (first.*field)[1] = (s.*field)[1];
      (second.*field)[0] = (s.*field)[2], (second.*field)[1] = (s.*field)[3];
    }
  }
};

// The block kernels compiled for one target: `avx2` (AVX2 with FMA) or `baseline` (x86-64).
#define GRAFX_BLOCK_KERNELS(target, attributes)                                                   \
  template <bool kReverse>                                                                        \
  attributes void forward_##target(SectionState& s, const Lanes* in, Lanes* out, int64_t count) { \
    Block::forward<kReverse>(s, in, out, count);                                                  \
  }                                                                                               \
  template <bool kReverse, bool kPacked>                                                          \
  attributes void forward_pair_##target(SectionState& s, SectionState& t, const Lanes* in,        \
                                        Lanes* mid, Lanes* out, int64_t count) {                  \
    Block::forward_pair<kReverse, kPacked>(s, t, in, mid, out, count);                            \
  }                                                                                               \
  template <bool kReverse>                                                                        \
  attributes void adjoint_##target(SectionState& s, Lanes* g, const Lanes* u, const Lanes* v,     \
                                   int64_t count) {                                               \
    Block::adjoint<kReverse>(s, g, u, v, count);                                                  \
  }                                                                                               \
  template <bool kReverse>                                                                        \
  attributes void adjoint_pair_##target(SectionState& s, SectionState& t, Lanes* g,               \
                                        const Lanes* u0, const Lanes* u1, const Lanes* v1,        \
                                        int64_t count) {                                          \
    Block::adjoint_pair<kReverse>(s, t, g, u0, u1, v1, count);                                    \
  }
GRAFX_BLOCK_KERNELS(avx2, __attribute__((target("avx2,fma"))))
GRAFX_BLOCK_KERNELS(baseline, )
#undef GRAFX_BLOCK_KERNELS

/// Whether this CPU runs the AVX2 + FMA compilation of the recursions (GRAFX_BASELINE_KERNELS=1
/// chooses the baseline compilation, which the tests also run).
bool has_avx2() {
  static const bool avx2 = [] {
    const char* baseline = std::getenv("GRAFX_BASELINE_KERNELS");
    if (baseline && std::string(baseline) == "1") return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return avx2;
}

/// Block i of a sweep in time, in sweep order (`backward`: from the end).
struct Blocks {
  int64_t length;
  int64_t count() const { return (length + kBlock - 1) / kBlock; }
  int64_t index(int64_t i, bool backward) const { return backward ? count() - 1 - i : i; }
  int64_t begin(int64_t block) const { return block * kBlock; }
  int64_t size(int64_t block) const {
    return std::min(length, (block + 1) * kBlock) - block * kBlock;
  }
};

/// The block kernels of the compilation this CPU runs, for groups of R rows (packed when R ≤ 2).
template <bool kReverse, int R>
struct Kernels {
  static constexpr bool kPacked = R <= 2;
  decltype(&forward_baseline<kReverse>) forward =
      has_avx2() ? forward_avx2<kReverse> : forward_baseline<kReverse>;
  decltype(&forward_pair_baseline<kReverse, kPacked>) forward_pair =
      has_avx2() ? forward_pair_avx2<kReverse, kPacked> : forward_pair_baseline<kReverse, kPacked>;
  decltype(&adjoint_baseline<kReverse>) adjoint =
      has_avx2() ? adjoint_avx2<kReverse> : adjoint_baseline<kReverse>;
  decltype(&adjoint_pair_baseline<kReverse>) adjoint_pair =
      has_avx2() ? adjoint_pair_avx2<kReverse> : adjoint_pair_baseline<kReverse>;

  /// Sections 0 … K − 1 over a block, two at a time: section k maps signal(k) to signal(k + 1)
  /// (the same buffer when in place); before(k) runs before section k starts.
  template <typename Signal, typename Before>
  void cascade(std::vector<SectionState>& states, const Signal& signal, int64_t count,
               const Before& before) const {
    const auto n_sections = int64_t(states.size());
    for (int64_t k = 0; k < n_sections; k += 2) {
      before(k);
      if (k + 1 == n_sections) {
        forward(states[k], signal(k), signal(k + 1), count);
      } else {
        before(k + 1);
        forward_pair(states[k], states[k + 1], signal(k), signal(k + 1), signal(k + 2), count);
      }
    }
  }

  /// The sections' adjoints K − 1 … 0 over a block, in place in `g`, packed two at a time.
  template <typename Signal>
  void adjoints(std::vector<SectionState>& states, Lanes* g, const Signal& signal,
                int64_t count) const {
    for (auto k = int64_t(states.size()) - 1; k >= 0; --k) {
      if (kPacked && k > 0) {
        adjoint_pair(states[k], states[k - 1], g, signal(k - 1), signal(k), signal(k + 1), count);
        --k;
      } else {
        adjoint(states[k], g, signal(k), signal(k + 1), count);
      }
    }
  }
};

/// y = the cascade of x, block by block; saves the states at block starts when `checkpoints`.
template <typename T, bool kReverse>
struct CascadeForward {
  const T *x, *b, *a;
  T* y;
  Acc* checkpoints;  ///< [rows][blocks][sections][4], or null
  int64_t n_sections, length;

  template <int R>
  void run(int64_t first) const {
    Kernels<kReverse, R> kernels;
    std::vector<SectionState> states;
    for (int64_t k = 0; k < n_sections; ++k) states.emplace_back(b, a, first, R, k, n_sections);
    LaneBuffer lanes(kBlock);  // the block, in place through the sections
    auto in_place = [&](int64_t) { return lanes.at(0); };
    Blocks blocks{length};
    for (int64_t i = 0; i < blocks.count(); ++i) {
      int64_t block = blocks.index(i, kReverse), begin = blocks.begin(block);
      int64_t count = blocks.size(block);
      load_block<R>(x, first, length, begin, count, lanes.at(0));
      kernels.cascade(states, in_place, count, [&](int64_t k) {
        if (checkpoints)
          states[k].save(checkpoints, first, R, block, k, blocks.count(), n_sections);
      });
      store_block<R>(lanes.at(0), y, first, length, begin, count);
    }
  }
};

/// The adjoint of CascadeForward: block by block the other way in time, the block's section
/// outputs recomputed from the checkpoints, then the sections' adjoints in reverse order, in
/// place on the block of the output's gradient. ∂/∂x goes to `grad`, the coefficients'
/// gradients to grad_b and grad_a.
template <typename T, bool kReverse>
struct CascadeBackward {
  const T *grad_in, *x, *b, *a;
  const Acc* checkpoints;
  T *grad, *grad_b, *grad_a;
  int64_t n_sections, length;

  template <int R>
  void run(int64_t first) const {
    Kernels<kReverse, R> kernels;
    std::vector<SectionState> states;
    for (int64_t k = 0; k < n_sections; ++k) states.emplace_back(b, a, first, R, k, n_sections);
    // The block's input, each section's output and the gradient, in lanes.
    LaneBuffer signals((n_sections + 1) * kBlock), gradient(kBlock);
    auto signal = [&](int64_t k) { return signals.at(k * kBlock); };  // 0: x; k: section k
    Blocks blocks{length};
    for (int64_t i = 0; i < blocks.count(); ++i) {
      int64_t block = blocks.index(i, !kReverse), begin = blocks.begin(block);
      int64_t count = blocks.size(block);
      load_block<R>(x, first, length, begin, count, signal(0));
      kernels.cascade(states, signal, count, [&](int64_t k) {
        states[k].load(checkpoints, first, R, block, k, blocks.count(), n_sections);
      });
      load_block<R>(grad_in, first, length, begin, count, gradient.at(0));
      kernels.adjoints(states, gradient.at(0), signal, count);
      store_block<R>(gradient.at(0), grad, first, length, begin, count);
    }
    for (int64_t k = 0; k < n_sections; ++k)
      for (int j = 0; j < R; ++j) {
        const SectionState& s = states[k];
        T* gb                 = grad_b + ((first + j) * n_sections + k) * 3;
        T* ga                 = grad_a + ((first + j) * n_sections + k) * 2;
        gb[0] = T(s.gb0[j]), gb[1] = T(s.gb1[j]), gb[2] = T(s.gb2[j]);
        ga[0] = T(s.ga1[j]), ga[1] = T(s.ga2[j]);
      }
  }
};

// ---- the autograd Function ------------------------------------------------------------------

/// t delayed by `lag` samples in the direction of the recursion (negative: advanced), zeros
/// shifted in.
at::Tensor shifted(const at::Tensor& t, int64_t lag, bool reverse) {
  if (reverse) lag = -lag;
  int64_t length = t.size(-1), n = std::abs(lag);
  if (n >= length) return at::zeros_like(t);
  at::Tensor zeros = at::zeros({t.size(0), n}, t.options());
  return lag > 0 ? at::cat({zeros, t.narrow(-1, 0, length - n)}, -1)
                 : at::cat({t.narrow(-1, n, length - n), zeros}, -1);
}

struct BiquadCascade : public torch::autograd::Function<BiquadCascade> {
  /// x R×L, b R×K×3, a R×K×2 (normalised: a0 = 1).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b,
                            const at::Tensor& a, bool reverse, const SavedDuals& duals) {
    if (!x.device().is_cpu()) {  // the scan; its backward is recorded_backward's ATen pieces
      ctx->saved_data["reverse"] = reverse;
      ctx->save_for_backward({x, b, a});
      duals.save(ctx);
      return scan(x, b, a, reverse);
    }
    const int64_t rows = x.size(0), length = x.size(1), n_sections = b.size(1);
    at::Tensor xc = cpu(x), bc = cpu(b), ac = cpu(a);
    bool keep        = x.requires_grad() || b.requires_grad() || a.requires_grad();
    at::Tensor y     = at::empty_like(xc);
    int64_t n_blocks = Blocks{length}.count();
    at::Tensor states =
        keep ? at::empty({rows, n_blocks, n_sections, 4}, xc.options().dtype(at::kDouble))
             : at::Tensor();
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "biquad_cascade", [&] {
      const scalar_t *xp = xc.data_ptr<scalar_t>(), *bp = bc.data_ptr<scalar_t>(),
                     *ap = ac.data_ptr<scalar_t>();
      scalar_t* yp       = y.data_ptr<scalar_t>();
      Acc* checkpoints   = keep ? states.data_ptr<Acc>() : nullptr;
      if (reverse)
        for_fixed_row_groups(
            rows, CascadeForward<scalar_t, true>{xp, bp, ap, yp, checkpoints, n_sections, length});
      else
        for_fixed_row_groups(
            rows, CascadeForward<scalar_t, false>{xp, bp, ap, yp, checkpoints, n_sections, length});
    });
    ctx->saved_data["reverse"] = reverse;
    ctx->save_for_backward({x, b, a});
    if (keep) ctx->saved_data["states"] = states;
    duals.save(ctx);
    return y.to(x.device());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved          = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &b = saved[1], &a = saved[2];
    bool reverse = ctx->saved_data["reverse"].toBool();
    auto duals   = SavedDuals::of(ctx);  // forward over reverse: recomputed with the tangents
    if (!duals.empty()) return recorded_backward(duals[0], duals[1], duals[2], grads[0], reverse);
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined() || !x.device().is_cpu())
      return recorded_backward(x, b, a, grads[0], reverse);

    at::Tensor states  = ctx->saved_data["states"].toTensor();
    const int64_t rows = x.size(0), length = x.size(1), n_sections = b.size(1);
    at::Tensor xc = cpu(x), bc = cpu(b), ac = cpu(a);
    at::Tensor grad_in = cpu(grads[0]), grad = at::empty_like(grad_in);
    at::Tensor grad_b = at::empty_like(bc), grad_a = at::empty_like(ac);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "biquad_cascade_backward", [&] {
      const scalar_t *gp = grad_in.data_ptr<scalar_t>(), *xp = xc.data_ptr<scalar_t>(),
                     *bp = bc.data_ptr<scalar_t>(), *ap = ac.data_ptr<scalar_t>();
      scalar_t *gu = grad.data_ptr<scalar_t>(), *gb = grad_b.data_ptr<scalar_t>(),
               *ga     = grad_a.data_ptr<scalar_t>();
      Acc* checkpoints = states.data_ptr<Acc>();
      if (reverse)
        for_fixed_row_groups(rows, CascadeBackward<scalar_t, true>{gp, xp, bp, ap, checkpoints, gu,
                                                                   gb, ga, n_sections, length});
      else
        for_fixed_row_groups(rows, CascadeBackward<scalar_t, false>{gp, xp, bp, ap, checkpoints, gu,
                                                                    gb, ga, n_sections, length});
    });
    at::Device device = x.device();
    return {grad.to(device), grad_b.to(device), grad_a.to(device), at::Tensor(), at::Tensor()};
  }

  /// The same adjoint from differentiable pieces, for create_graph: each section's signals are
  /// recomputed by this function, w = A⁻ᵀ g is an all-pole section run the other way, and the
  /// sums over time are ATen operations.
  static variable_list recorded_backward(const at::Tensor& x, const at::Tensor& b,
                                         const at::Tensor& a, at::Tensor grad, bool reverse) {
    const int64_t n_sections = b.size(1);
    std::vector<at::Tensor> inputs{x};
    for (int64_t k = 0; k + 1 < n_sections; ++k)
      inputs.push_back(cascade(inputs.back(), b.narrow(1, k, 1), a.narrow(1, k, 1), reverse));
    at::Tensor all_pole = all_pole_numerator(x);
    std::vector<at::Tensor> grad_b(n_sections), grad_a(n_sections);
    for (int64_t k = n_sections - 1; k >= 0; --k) {
      at::Tensor bk       = b.select(1, k);
      const at::Tensor& u = inputs[k];
      at::Tensor v        = k + 1 < n_sections ? inputs[k + 1]
                                               : cascade(u, b.narrow(1, k, 1), a.narrow(1, k, 1), reverse);
      at::Tensor w        = cascade(grad, all_pole, a.narrow(1, k, 1), !reverse);
      grad_b[k]           = at::stack({(w * u).sum(1), (w * shifted(u, 1, reverse)).sum(1),
                                       (w * shifted(u, 2, reverse)).sum(1)},
                                      1);
      grad_a[k] =
          -at::stack({(w * shifted(v, 1, reverse)).sum(1), (w * shifted(v, 2, reverse)).sum(1)}, 1);
      grad = bk.select(1, 0).unsqueeze(1) * w +
             bk.select(1, 1).unsqueeze(1) * shifted(w, -1, reverse) +
             bk.select(1, 2).unsqueeze(1) * shifted(w, -2, reverse);
    }
    return {grad, at::stack(grad_b, 1), at::stack(grad_a, 1), at::Tensor(), at::Tensor()};
  }

  /// The cascade on devices other than the CPU, values only: per section its numerator by
  /// shifts and its poles by two_pole_scan, in float64 as the CPU kernel's states.
  static at::Tensor scan(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                         bool reverse) {
    at::Tensor y = x.to(at::kDouble), bd = b.to(at::kDouble), ad = a.to(at::kDouble);
    for (int64_t k = 0; k < b.size(1); ++k) {
      at::Tensor bk = bd.select(1, k), ak = ad.select(1, k);
      at::Tensor u = bk.narrow(1, 0, 1) * y + bk.narrow(1, 1, 1) * shifted(y, 1, reverse) +
                     bk.narrow(1, 2, 1) * shifted(y, 2, reverse);
      y = two_pole_scan(u, -ak.select(1, 0), -ak.select(1, 1), reverse);
    }
    return y.to(x.scalar_type());
  }

  /// b = [1, 0, 0] per row (R×1×3): a section's all-pole part.
  static at::Tensor all_pole_numerator(const at::Tensor& x) {
    at::Tensor numerator = at::zeros({x.size(0), 1, 3}, x.options());
    numerator.select(2, 0).fill_(1.0);
    return numerator;
  }

  /// The cascade on rows (x R×L, b R×K×3, a R×K×2), with its tangent rule. Section k maps u to
  /// v with A·v = B·u; its tangent solves A·v' = B·u' + B'·u − A'·v: the all-pole part of the
  /// section run on the three FIR terms, section by section.
  static at::Tensor cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                            bool reverse) {
    auto [x_primal, x_tangent] = unpack_dual(x);
    auto [b_primal, b_tangent] = unpack_dual(b);
    auto [a_primal, a_tangent] = unpack_dual(a);
    if (!x_tangent.defined() && !b_tangent.defined() && !a_tangent.defined())
      return apply(x, b, a, reverse, SavedDuals{});
    at::Tensor y = apply(x_primal, b_primal, a_primal, reverse, SavedDuals{{x, b, a}});
    auto fir     = [&](const at::Tensor& c, const at::Tensor& s, int64_t first_lag) {
      at::Tensor sum;  // Σ_i c_i·s[n − first_lag − i]
      for (int64_t i = 0; i < c.size(1); ++i)
        sum = add_lazy(sum, c.select(1, i).unsqueeze(1) * shifted(s, first_lag + i, reverse));
      return sum;
    };
    const int64_t n_sections = b.size(1);
    at::Tensor all_pole      = all_pole_numerator(x_primal);
    at::Tensor u = x_primal, tangent = x_tangent;
    for (int64_t k = 0; k < n_sections; ++k) {
      at::Tensor b_k = b_primal.narrow(1, k, 1), a_k = a_primal.narrow(1, k, 1);
      at::Tensor v =
          k + 1 < n_sections ? apply(u, b_k, a_k, reverse, SavedDuals{}) : y;  // section output
      at::Tensor drive;
      if (tangent.defined()) drive = fir(b_k.select(1, 0), tangent, 0);
      if (b_tangent.defined()) drive = add_lazy(drive, fir(b_tangent.select(1, k), u, 0));
      if (a_tangent.defined()) {
        at::Tensor a_term = fir(a_tangent.select(1, k), v, 1);
        drive             = drive.defined() ? drive - a_term : -a_term;
      }
      tangent = drive.defined() ? apply(drive, all_pole, a_k, reverse, SavedDuals{}) : drive;
      u       = v;
    }
    return make_dual(y, tangent);
  }
};

// ---- time-varying sections: coefficients per sample -------------------------------------------
//
// One section at a time, one row at a time: x [R, L] and coefficients b, a [C, L, 3] (not
// normalised), C rows of coefficients each shared by R / C consecutive signal rows (the channels
// of one node). States and sums in double precision, as in the fixed kernel: a numerator such
// as u − 2u[n−1] + u[n−2] cancels, and its rounding would be amplified by the poles near z = 1
// that undo it.

/// v = the section of u, with each sample's own coefficients:
///   a0[n]·v[n] + a1[n]·v[n−1] + a2[n]·v[n−2] = b0[n]·u[n] + b1[n]·u[n−1] + b2[n]·u[n−2].
template <typename T>
void varying_section_row(const T* u, const T* b, const T* a, T* v, int64_t length) {
  Acc u1 = 0, u2 = 0, v1 = 0, v2 = 0;
  for (int64_t n = 0; n < length; ++n, b += 3, a += 3) {
    const Acc un = Acc(u[n]);
    const Acc vn =
        (Acc(b[0]) * un + Acc(b[1]) * u1 + Acc(b[2]) * u2 - Acc(a[1]) * v1 - Acc(a[2]) * v2) /
        Acc(a[0]);
    u2 = u1, u1 = un, v2 = v1, v1 = vn;
    v[n] = T(vn);
  }
}

/// The section's adjoint for one row, backward in time: from g = ∂/∂v to ∂/∂u (into `grad`).
/// λ = ∂/∂(the numerator's sum at n) solves the transposed system,
///   a0[n]·λ[n] = g[n] − a1[n+1]·λ[n+1] − a2[n+2]·λ[n+2],
///   ∂/∂u[n] = b0[n]·λ[n] + b1[n+1]·λ[n+1] + b2[n+2]·λ[n+2],
///   ∂/∂b_i[n] = λ[n]·u[n−i],   ∂/∂a_i[n] = −λ[n]·v[n−i]   (i = 0, 1, 2),
/// the coefficients' gradients added to grad_b and grad_a.
template <typename T>
void varying_adjoint_row(const T* g, const T* u, const T* v, const T* b, const T* a, T* grad,
                         T* grad_b, T* grad_a, int64_t length) {
  Acc l1 = 0, l2 = 0;  // λ one and two samples later
  // Coefficients one ("next") and two ("after") samples later.
  Acc b1_next = 0, b2_next = 0, b2_after = 0, a1_next = 0, a2_next = 0, a2_after = 0;
  for (int64_t n = length - 1; n >= 0; --n) {
    const T *bn = b + 3 * n, *an = a + 3 * n;
    const Acc l  = (Acc(g[n]) - a1_next * l1 - a2_after * l2) / Acc(an[0]);
    grad[n]      = T(Acc(bn[0]) * l + b1_next * l1 + b2_after * l2);
    const Acc u1 = n >= 1 ? Acc(u[n - 1]) : 0, u2 = n >= 2 ? Acc(u[n - 2]) : 0;
    const Acc v1 = n >= 1 ? Acc(v[n - 1]) : 0, v2 = n >= 2 ? Acc(v[n - 2]) : 0;
    T *gb = grad_b + 3 * n, *ga = grad_a + 3 * n;
    gb[0] += T(l * Acc(u[n])), gb[1] += T(l * u1), gb[2] += T(l * u2);
    ga[0] -= T(l * Acc(v[n])), ga[1] -= T(l * v1), ga[2] -= T(l * v2);
    b2_after = b2_next, a2_after = a2_next;
    b1_next = Acc(bn[1]), b2_next = Acc(bn[2]), a1_next = Acc(an[1]), a2_next = Acc(an[2]);
    l2 = l1, l1 = l;
  }
}

/// t [R, L] summed over the signal rows that share each of `coefficient_rows` rows: [C, L].
at::Tensor per_coefficient_row(const at::Tensor& t, int64_t coefficient_rows) {
  if (t.size(0) == coefficient_rows) return t;
  return t.view({coefficient_rows, -1, t.size(-1)}).sum(1);
}

/// c [C, L, ...] repeated for the signal rows that share each row: [R, L, ...].
at::Tensor per_signal_row(const at::Tensor& c, int64_t signal_rows) {
  if (c.size(0) == signal_rows) return c;
  return c.repeat_interleave(signal_rows / c.size(0), 0);
}

struct VaryingSection : public torch::autograd::Function<VaryingSection> {
  /// u R×L, b and a C×L×3, R a multiple of C.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& u, const at::Tensor& b,
                            const at::Tensor& a, const SavedDuals& duals) {
    at::Tensor v = u.device().is_cpu() ? loop(u, b, a) : scan(u, b, a);
    ctx->save_for_backward({u, b, a, v});
    duals.save(ctx);
    return v;
  }

  /// The CPU kernel: varying_section_row, rows in parallel.
  static at::Tensor loop(const at::Tensor& u, const at::Tensor& b, const at::Tensor& a) {
    at::Tensor uc = cpu(u), bc = cpu(b), ac = cpu(a);
    const int64_t rows = u.size(0), length = u.size(1), share = rows / b.size(0);
    return on_cpu(u, [&](at::Tensor& out) {
      AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "biquad_cascade_time_varying", [&] {
        const scalar_t *up = uc.data_ptr<scalar_t>(), *bp = bc.data_ptr<scalar_t>(),
                       *ap = ac.data_ptr<scalar_t>();
        scalar_t* vp       = out.data_ptr<scalar_t>();
        at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r)
            varying_section_row(up + r * length, bp + (r / share) * length * 3,
                                ap + (r / share) * length * 3, vp + r * length, length);
        });
      });
    });
  }

  /// The kernel of other devices, values only: the numerator by shifts and the poles by
  /// two_pole_scan, per sample, in float64 as the CPU kernel's states.
  static at::Tensor scan(const at::Tensor& u, const at::Tensor& b, const at::Tensor& a) {
    const int64_t rows   = u.size(0);
    at::Tensor ud        = u.to(at::kDouble);
    at::Tensor bd        = per_signal_row(b.to(at::kDouble), rows),
               ad        = per_signal_row(a.to(at::kDouble), rows);  // R×L×3
    at::Tensor a0        = ad.select(2, 0);
    at::Tensor numerator = bd.select(2, 0) * ud + bd.select(2, 1) * shifted(ud, 1, false) +
                           bd.select(2, 2) * shifted(ud, 2, false);
    return two_pole_scan(numerator / a0, -ad.select(2, 1) / a0, -ad.select(2, 2) / a0)
        .to(u.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto duals = SavedDuals::of(ctx);  // forward over reverse: recomputed with the tangents
    if (!duals.empty())
      return recorded_backward(duals[0], duals[1], duals[2], section(duals[0], duals[1], duals[2]),
                               grads[0]);
    const at::Tensor &u = saved[0], &b = saved[1], &a = saved[2], &v = saved[3];
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined() || !u.device().is_cpu())
      return recorded_backward(u, b, a, v, grads[0]);
    const int64_t rows = u.size(0), length = u.size(1), n_coefficients = b.size(0);
    const int64_t share = rows / n_coefficients;
    at::Tensor gc = cpu(grads[0]), uc = cpu(u), vc = cpu(v), bc = cpu(b), ac = cpu(a);
    at::Tensor grad = at::empty_like(uc), grad_b = at::zeros_like(bc), grad_a = at::zeros_like(ac);
    AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "biquad_cascade_time_varying_backward", [&] {
      const scalar_t *gp = gc.data_ptr<scalar_t>(), *up = uc.data_ptr<scalar_t>(),
                     *vp = vc.data_ptr<scalar_t>(), *bp = bc.data_ptr<scalar_t>(),
                     *ap = ac.data_ptr<scalar_t>();
      scalar_t *gu = grad.data_ptr<scalar_t>(), *gb = grad_b.data_ptr<scalar_t>(),
               *ga = grad_a.data_ptr<scalar_t>();
      // One task per coefficient row: the rows that share it add to its gradients in turn.
      at::parallel_for(0, n_coefficients, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c)
          for (int64_t r = c * share; r < (c + 1) * share; ++r)
            varying_adjoint_row(gp + r * length, up + r * length, vp + r * length,
                                bp + c * length * 3, ap + c * length * 3, gu + r * length,
                                gb + c * length * 3, ga + c * length * 3, length);
      });
    });
    at::Device device = u.device();
    return {grad.to(device), grad_b.to(device), grad_a.to(device), at::Tensor()};
  }

  /// The same adjoint from differentiable pieces (create_graph, forward over reverse): λ is the
  /// transposed all-pole part, this function run on the time-reversed gradient with the
  /// coefficients advanced to where the adjoint reads them; the rest are ATen operations.
  static variable_list recorded_backward(const at::Tensor& u, const at::Tensor& b,
                                         const at::Tensor& a, const at::Tensor& v,
                                         const at::Tensor& grad) {
    const int64_t rows = u.size(0), n_coefficients = b.size(0);
    auto advanced = [](const at::Tensor& c, int64_t lag) {  // c[n + lag], zeros at the end
      return shifted(c, -lag, false);
    };
    at::Tensor transposed =
        at::stack({a.select(2, 0), advanced(a.select(2, 1), 1), advanced(a.select(2, 2), 2)}, 2)
            .flip(1);
    at::Tensor lambda = section(grad.flip(1), all_pole(transposed), transposed).flip(1);
    at::Tensor bs     = per_signal_row(b, rows);
    at::Tensor grad_u = bs.select(2, 0) * lambda + advanced(bs.select(2, 1) * lambda, 1) +
                        advanced(bs.select(2, 2) * lambda, 2);
    auto sums = [&](const at::Tensor& s) {  // Σ over shared rows of λ[n]·s[n − i], i = 0, 1, 2
      std::vector<at::Tensor> lags;
      for (int64_t i = 0; i < 3; ++i)
        lags.push_back(per_coefficient_row(lambda * shifted(s, i, false), n_coefficients));
      return at::stack(lags, 2);
    };
    return {grad_u, sums(u), -sums(v), at::Tensor()};
  }

  /// b = [1, 0, 0] at every sample of `a`'s rows: a section's all-pole part.
  static at::Tensor all_pole(const at::Tensor& a) {
    at::Tensor b = at::zeros({a.size(0), a.size(1), 3}, a.options());
    b.select(2, 0).fill_(1.0);
    return b;
  }

  /// The section on rows, with its tangent rule: A·v = B·u gives A·v' = B·u' + B'·u − A'·v, the
  /// section run on u' plus its all-pole part run on the last two terms.
  static at::Tensor section(const at::Tensor& u, const at::Tensor& b, const at::Tensor& a) {
    auto [u_primal, u_tangent] = unpack_dual(u);
    auto [b_primal, b_tangent] = unpack_dual(b);
    auto [a_primal, a_tangent] = unpack_dual(a);
    if (!u_tangent.defined() && !b_tangent.defined() && !a_tangent.defined())
      return apply(u, b, a, SavedDuals{});
    at::Tensor v       = apply(u_primal, b_primal, a_primal, SavedDuals{{u, b, a}});
    const int64_t rows = u_primal.size(0);
    auto fir           = [&](const at::Tensor& c, const at::Tensor& s) {  // Σ_i c_i[n]·s[n − i]
      at::Tensor cs = per_signal_row(c, rows), sum;
      for (int64_t i = 0; i < 3; ++i) sum = add_lazy(sum, cs.select(2, i) * shifted(s, i, false));
      return sum;
    };
    at::Tensor tangent, drive;
    if (u_tangent.defined()) tangent = section(u_tangent, b_primal, a_primal);
    if (b_tangent.defined()) drive = fir(b_tangent, u_primal);
    if (a_tangent.defined())
      drive = drive.defined() ? drive - fir(a_tangent, v) : -fir(a_tangent, v);
    if (drive.defined()) tangent = add_lazy(tangent, section(drive, all_pole(a_primal), a_primal));
    return make_dual(v, tangent);
  }
};

// ---- shapes ----------------------------------------------------------------------------------

/// Checks x [..., L] and coefficients [..., K, 3], and broadcasts the coefficients to x's
/// leading shape as R×K×3.
at::Tensor coefficient_rows(const at::Tensor& coefficients, const at::Tensor& x, const char* what) {
  TORCH_CHECK(coefficients.dim() >= 2 && coefficients.size(-1) == 3 && coefficients.size(-2) > 0,
              "biquad_cascade: expected ", what, " of shape [..., K, 3], but got ",
              coefficients.sizes());
  TORCH_CHECK(coefficients.scalar_type() == x.scalar_type(), "biquad_cascade: expected ", what,
              " of dtype ", x.scalar_type(), ", but got ", coefficients.scalar_type());
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(coefficients.size(-2));
  shape.push_back(3);
  at::Tensor expanded;
  try {
    expanded = coefficients.expand(shape);
  } catch (const c10::Error&) {
    TORCH_CHECK(false, "biquad_cascade: ", what, " of shape ", coefficients.sizes(),
                " does not broadcast to the signal's leading shape ", x.sizes());
  }
  return expanded.reshape({-1, shape[shape.size() - 2], 3});
}

/// biquad_cascade, or with `scan_only` its device kernel's values.
at::Tensor fixed_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                         bool reverse, bool scan_only) {
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0 && at::isFloatingType(x.scalar_type()),
              "biquad_cascade: expected a non-empty float or double signal [..., L], but got ",
              x.sizes(), " ", x.scalar_type());
  at::Tensor bs = coefficient_rows(b, x, "b"), as = coefficient_rows(a, x, "a");
  TORCH_CHECK(bs.size(1) == as.size(1), "biquad_cascade: expected as many sections in a as in b (",
              bs.size(1), "), but got ", as.size(1));
  at::Tensor a0 = as.narrow(2, 0, 1), rows = x.reshape({-1, x.size(-1)});
  if (scan_only) {
    c10::NoGradGuard values_only;
    return BiquadCascade::scan(rows, bs / a0, as.narrow(2, 1, 2) / a0, reverse).view(x.sizes());
  }
  return BiquadCascade::cascade(rows, bs / a0, as.narrow(2, 1, 2) / a0, reverse).view(x.sizes());
}

/// biquad_cascade_time_varying, or with `scan_only` its device kernel's values.
at::Tensor varying_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                           bool scan_only) {
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0 && at::isFloatingType(x.scalar_type()),
              "biquad_cascade_time_varying: expected a non-empty float or double signal [..., L], "
              "but got ",
              x.sizes(), " ", x.scalar_type());
  const int64_t length = x.size(-1);
  for (const at::Tensor* c : {&b, &a})
    TORCH_CHECK(c->dim() >= 3 && c->size(-1) == 3 && c->size(-2) == length && c->size(-3) > 0 &&
                    c->scalar_type() == x.scalar_type(),
                "biquad_cascade_time_varying: expected coefficients of shape [..., K, ", length,
                ", 3] and dtype ", x.scalar_type(), ", but got ", c->sizes(), " ",
                c->scalar_type());
  TORCH_CHECK(b.size(-3) == a.size(-3),
              "biquad_cascade_time_varying: expected as many sections in a as in b (", b.size(-3),
              "), but got ", a.size(-3));
  // Rows of coefficients: the signal's leading dimensions up to the last where the coefficients
  // have more than one entry; each is shared by the rows after it (a node's channels), which
  // then run one filter without copies of it.
  const std::vector<at::Tensor> both = at::broadcast_tensors({b, a});
  const std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 1);
  const size_t own = size_t(both[0].dim() - 3);
  TORCH_CHECK(own <= lead.size(), "biquad_cascade_time_varying: coefficients of shape ", b.sizes(),
              " have more leading dimensions than the signal ", x.sizes());
  std::vector<int64_t> aligned(lead.size() - own, 1);  // the coefficients' shape, padded left
  aligned.insert(aligned.end(), both[0].sizes().begin(), both[0].sizes().end() - 3);
  size_t split = aligned.size();
  while (split > 0 && aligned[split - 1] == 1) --split;
  std::vector<int64_t> expanded(lead.begin(), lead.begin() + int64_t(split));
  expanded.resize(lead.size(), 1);
  const int64_t n_sections = b.size(-3);
  for (auto* shape : {&aligned, &expanded}) shape->insert(shape->end(), {n_sections, length, 3});
  auto rows = [&](const at::Tensor& c) {  // C×K×L×3
    at::Tensor view;
    try {
      view = c.view(aligned).expand(expanded);
    } catch (const c10::Error&) {
      TORCH_CHECK(false, "biquad_cascade_time_varying: coefficients of shape ", c.sizes(),
                  " do not broadcast to the signal's leading shape ", x.sizes());
    }
    return view.reshape({-1, n_sections, length, 3});
  };
  // Sections by unbind (whose gradient is one stack, where select's would be K full-size
  // tensors of zeros).
  std::vector<at::Tensor> b_sections = rows(both[0]).unbind(1),
                          a_sections = rows(both[1]).unbind(1);
  at::Tensor y                       = x.reshape({-1, length});
  std::optional<c10::NoGradGuard> values_only;
  if (scan_only) values_only.emplace();
  for (size_t k = 0; k < b_sections.size(); ++k)
    y = scan_only ? VaryingSection::scan(y, b_sections[k], a_sections[k])
                  : VaryingSection::section(y, b_sections[k], a_sections[k]);
  return y.view(x.sizes());
}

}  // namespace

at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                          bool reverse) {
  return fixed_cascade(x, b, a, reverse, false);
}

at::Tensor biquad_cascade_scan(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a,
                               bool reverse) {
  return fixed_cascade(x, b, a, reverse, true);
}

at::Tensor biquad_cascade_time_varying(const at::Tensor& x, const at::Tensor& b,
                                       const at::Tensor& a) {
  return varying_cascade(x, b, a, false);
}

at::Tensor biquad_cascade_time_varying_scan(const at::Tensor& x, const at::Tensor& b,
                                            const at::Tensor& a) {
  return varying_cascade(x, b, a, true);
}

namespace {

/// Σ_i c_i·e^{−jωi} for each section of `c` ([..., K, 3]), as real and imaginary parts [..., K, F].
std::pair<at::Tensor, at::Tensor> section_polynomials(const at::Tensor& c,
                                                      const at::Tensor& omega) {
  at::Tensor lags = at::arange(3, omega.options()).unsqueeze(1) * omega;  // 3×F
  return {at::matmul(c, at::cos(lags)), -at::matmul(c, at::sin(lags))};
}

}  // namespace

at::Tensor biquad_response(const at::Tensor& b, const at::Tensor& a, const at::Tensor& omega) {
  auto polynomial = [&](const at::Tensor& c) {
    auto [re, im] = section_polynomials(c, omega);
    return at::complex(re, im);
  };
  return (polynomial(b) / polynomial(a)).prod(-2);
}

at::Tensor biquad_magnitude_db(const at::Tensor& b, const at::Tensor& a, const at::Tensor& omega) {
  auto log_power = [&](const at::Tensor& c) {
    auto [re, im] = section_polynomials(c, omega);
    return (re.square() + im.square()).clamp_min(1e-12).log10();
  };
  return 10 * (log_power(b) - log_power(a)).sum(-2);
}

at::Tensor biquad_cascade_frequency_sampling(const at::Tensor& x, const at::Tensor& b,
                                             const at::Tensor& a, int64_t n_taps) {
  TORCH_CHECK(n_taps >= 2 && n_taps % 2 == 0,
              "biquad_cascade_frequency_sampling: expected an even number of taps, but got ",
              n_taps);
  at::Tensor omega = at::arange(n_taps / 2 + 1, b.options()) * (2 * M_PI / double(n_taps));
  at::Tensor bs = coefficient_rows(b, x, "b"), as = coefficient_rows(a, x, "a");
  at::Tensor fir  = irfft(biquad_response(bs, as, omega), n_taps);  // R×N
  at::Tensor rows = x.reshape({-1, 1, x.size(-1)});
  return convolve(rows, fir.unsqueeze(1), ConvolutionMode::kCausal).view(x.sizes());
}

at::Tensor section_coefficients(const at::Tensor& c0, const at::Tensor& c1, const at::Tensor& c2) {
  return at::stack(at::broadcast_tensors({c0, c1, c2}), -1);
}

std::pair<at::Tensor, at::Tensor> cookbook_biquad(CookbookShape shape, const at::Tensor& omega,
                                                  const at::Tensor& q, const at::Tensor& log_gain) {
  at::Tensor c = at::cos(omega), alpha = at::sin(omega) / (2 * q);
  at::Tensor one = at::ones_like(c);
  at::Tensor a   = section_coefficients(1 + alpha, -2 * c, 1 - alpha);
  switch (shape) {
    case CookbookShape::kLowpass:
      return {section_coefficients((1 - c) / 2, 1 - c, (1 - c) / 2), a};
    case CookbookShape::kHighpass:
      return {section_coefficients((1 + c) / 2, -(1 + c), (1 + c) / 2), a};
    case CookbookShape::kBandpass:
      return {section_coefficients(alpha, at::zeros_like(alpha), -alpha), a};
    case CookbookShape::kBandreject:
      return {section_coefficients(one, -2 * c, one), a};
    case CookbookShape::kAllpass:
      return {section_coefficients(1 - alpha, -2 * c, 1 + alpha), a};
    default:
      break;
  }
  at::Tensor amplitude = at::exp(log_gain / 2);  // the cookbook's A
  if (shape == CookbookShape::kPeaking)
    return {section_coefficients(1 + alpha * amplitude, -2 * c, 1 - alpha * amplitude),
            section_coefficients(1 + alpha / amplitude, -2 * c, 1 - alpha / amplitude)};
  // Shelves: the high shelf is the low shelf with c → −c and odd coefficients negated.
  at::Tensor sign = at::full({}, shape == CookbookShape::kLowShelf ? 1.0 : -1.0, c.options());
  at::Tensor cs   = c * sign;
  at::Tensor plus = amplitude + 1, minus = amplitude - 1;
  at::Tensor slope = 2 * at::sqrt(amplitude) * alpha;
  return {section_coefficients(amplitude * (plus - minus * cs + slope),
                               2 * sign * amplitude * (minus - plus * cs),
                               amplitude * (plus - minus * cs - slope)),
          section_coefficients(plus + minus * cs + slope, -2 * sign * (minus + plus * cs),
                               plus + minus * cs - slope)};
}

at::Tensor pole_radii(const at::Tensor& a) {
  // z² + p·z + q with p = a1/a0, q = a2/a0: complex poles have radius √q, real ones
  // (|p| ± √(p² − 4q))/2 in magnitude, the larger taken.
  at::Tensor a0 = a.select(-1, 0), p = a.select(-1, 1) / a0, q = a.select(-1, 2) / a0;
  at::Tensor discriminant = p * p - 4 * q;
  return at::where(discriminant < 0, q.abs().sqrt(),
                   (p.abs() + discriminant.clamp_min(0).sqrt()) / 2);
}

int64_t cascade_decay_samples(const at::Tensor& a, double tolerance) {
  if (a.numel() == 0) return 0;
  return to_samples(decay_samples_of(pole_radii(a.detach().to(at::kDouble)), tolerance).sum(-1));
}

namespace reference {

at::Tensor biquad_cascade(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a) {
  at::Tensor xs = x.detach().to(at::kDouble).reshape({-1, x.size(-1)}).contiguous();
  at::Tensor bs = coefficient_rows(b.detach().to(at::kDouble), x.to(at::kDouble), "b").contiguous();
  at::Tensor as = coefficient_rows(a.detach().to(at::kDouble), x.to(at::kDouble), "a").contiguous();
  at::Tensor y  = xs.clone();
  auto ya       = y.accessor<double, 2>();
  auto ba = bs.accessor<double, 3>(), aa = as.accessor<double, 3>();
  for (int64_t r = 0; r < y.size(0); ++r)
    for (int64_t k = 0; k < bs.size(1); ++k) {
      double a0 = aa[r][k][0], b0 = ba[r][k][0] / a0, b1 = ba[r][k][1] / a0, b2 = ba[r][k][2] / a0,
             a1 = aa[r][k][1] / a0, a2 = aa[r][k][2] / a0;
      double s1 = 0, s2 = 0;  // transposed direct form II
      for (int64_t n = 0; n < y.size(1); ++n) {
        double in = ya[r][n], out = b0 * in + s1;
        s1       = b1 * in - a1 * out + s2;
        s2       = b2 * in - a2 * out;
        ya[r][n] = out;
      }
    }
  return y.view(x.sizes());
}

}  // namespace reference
}  // namespace grafx::dsp
