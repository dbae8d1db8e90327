// Non-uniform partitioned convolution for streams: the plan (a cost model, by dynamic
// programming), real FFTs on split arrays that stay in bit-reversed order, and the sample loop.

#include <grafx/stream/convolution.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace grafx::dsp {
namespace {

constexpr int64_t kBlock            = 64;     // H (measured: 32 and 128 are no faster)
constexpr int64_t kDirectOnly       = 256;    // the longest filter direct form alone may take
constexpr int64_t kLargestPartition = 32768;  // larger: bigger bursts, few products saved
constexpr int64_t kMostPartitions   = 32;     // per level, but the last (plan search bound)
constexpr int64_t kSpreadSteps      = 2048;   // partitions from which levels spread their steps
// A spectrum of B bins is stored as B real parts, kPad floats, B imaginary parts, kPad floats:
// without the padding, the dozen spectra a product pass reads would lie 4 KiB apart, in one set
// of the L1 cache, and evict one another (a pass took 3 times as long).
constexpr int64_t kPad = 16;

int64_t power_of_two_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int64_t power_of_two_at_most(int64_t n) {
  int64_t p = 1;
  while (2 * p <= n) p *= 2;
  return p;
}

// ---- the plan ------------------------------------------------------------------------------
//
// Model costs in nanoseconds per sample, measured on one core (AMD EPYC, SSE2 build) with a
// temporary benchmark: a tap in direct form; for each input of a level of partitions of B taps,
// its window and forward transform of 2B points, as a·log2(2B) + b + c/B (c: the fixed cost of
// a run, every B samples); for each output, its inverse transform and overlap-save, likewise;
// one partition's spectral product. With AVX2, products and direct taps cost about 40% less and
// transforms about 30% less: the plans of 2,047 to 480,000-tap matrices stay the same.

constexpr double kDirectTap    = 0.047;
constexpr double kForwardLog2  = 0.2;
constexpr double kInputSample  = 0.15;
constexpr double kInputRun     = 30;
constexpr double kInverseLog2  = 0.16;
constexpr double kOutputSample = 0.2;
constexpr double kOutputRun    = 10;
constexpr double kProduct      = 0.38;

/// A path as the plan sees it: its channels, its number of taps and where they are non-zero:
/// `filled[c]` is the number of runs of kBlock taps before run c with a non-zero tap (a delay's
/// few coloured taps leave most partitions of its long response all zero, which cost nothing).
struct Reach {
  int64_t input, output, length;
  std::vector<int64_t> filled;
};

/// `filled` of Reach for `taps`.
std::vector<int64_t> filled_runs(const std::vector<float>& taps) {
  const int64_t length = int64_t(taps.size()), runs = (length + kBlock - 1) / kBlock;
  std::vector<int64_t> filled(size_t(runs + 1), 0);
  for (int64_t r = 0; r < runs; ++r) {
    const auto first = taps.begin() + r * kBlock,
               end   = taps.begin() + std::min(length, (r + 1) * kBlock);
    filled[size_t(r + 1)] =
        filled[size_t(r)] + (std::find_if(first, end, [](float t) { return t != 0.0f; }) != end);
  }
  return filled;
}

struct LevelPlan {
  int64_t size, count, offset;
};

/// The partitions of a path of `length` taps in the level of `count` partitions of `size` taps
/// from tap `offset` on.
int64_t partitions(int64_t length, int64_t offset, int64_t size, int64_t count) {
  return length <= offset ? 0 : std::min(count, (length - offset + size - 1) / size);
}

/// Those of them with a non-zero tap (offsets and sizes are multiples of kBlock).
int64_t filled_partitions(const Reach& p, int64_t offset, int64_t size, int64_t count) {
  const int64_t runs = int64_t(p.filled.size()) - 1, n = partitions(p.length, offset, size, count);
  int64_t filled = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t first = (offset + j * size) / kBlock, end = std::min(runs, first + size / kBlock);
    filled += p.filled[size_t(end)] > p.filled[size_t(first)];
  }
  return filled;
}

/// The model costs per sample of an input's forward transform and window and of an output's
/// inverse transform and overlap-save, in a level of partitions of `size` taps (run every
/// `size` samples).
std::pair<double, double> transform_costs(int64_t size) {
  const double log2 = std::log2(double(2 * size));
  return {kForwardLog2 * log2 + kInputSample + kInputRun / double(size),
          kInverseLog2 * log2 + kOutputSample + kOutputRun / double(size)};
}

/// The model cost of a level: a forward transform per input and an inverse one per output that
/// has non-zero partitions in it, and their products. `seen` is scratch (a flag per channel).
double level_cost(const std::vector<Reach>& paths, int64_t n_inputs, int64_t offset, int64_t size,
                  int64_t count, std::vector<char>& seen) {
  std::fill(seen.begin(), seen.end(), char(0));
  int64_t inputs = 0, outputs = 0, products = 0;
  for (const Reach& p : paths) {
    const int64_t c = filled_partitions(p, offset, size, count);
    if (c == 0) continue;
    products += c;
    char &in = seen[size_t(p.input)], &out = seen[size_t(n_inputs + p.output)];
    inputs += !in, outputs += !out, in = out = 1;
  }
  const auto [input, output] = transform_costs(size);
  return input * double(inputs) + output * double(outputs) + kProduct * double(products);
}

/// The cheapest levels covering taps [s, longest path) of all paths, for every s = i·kBlock,
/// i ≥ 1: each level's partitions are as large as its first tap allows (larger partitions are
/// cheaper per tap), so what remains to choose is the number of partitions of each level, and
/// the cheapest choices from tap s on depend on s alone (dynamic programming, from the end).
class LevelChoices {
 public:
  LevelChoices(const std::vector<Reach>& paths, int64_t n_inputs, int64_t n_outputs)
      : spare_(kBlock * (n_inputs + n_outputs - 1)) {
    for (const Reach& p : paths) length_ = std::max(length_, p.length);
    const int64_t n = (length_ + kBlock - 1) / kBlock;  // offsets kBlock·i, i < n, fall inside
    cost_.assign(size_t(std::max<int64_t>(n + 1, 2)), 0.0);
    count_.assign(cost_.size(), 0);
    std::vector<char> seen(size_t(n_inputs + n_outputs));
    for (int64_t i = n - 1; i >= 1; --i) {
      const int64_t offset = kBlock * i, size = size_at(offset);
      const int64_t last = (length_ - offset + size - 1) / size;  // to cover the rest
      cost_[size_t(i)]   = level_cost(paths, n_inputs, offset, size, last, seen);
      count_[size_t(i)]  = last;
      // Fewer partitions leave the rest to a level of larger ones (never two levels of one size).
      if (size < kLargestPartition)
        for (int64_t count = 1; count < last && count <= kMostPartitions; ++count) {
          const double c = level_cost(paths, n_inputs, offset, size, count, seen) +
                           cost_[size_t((offset + count * size) / kBlock)];
          if (c < cost_[size_t(i)]) cost_[size_t(i)] = c, count_[size_t(i)] = count;
        }
    }
  }

  /// The model cost of the levels from `offset` (a multiple of kBlock, ≥ kBlock) on.
  double cost_from(int64_t offset) const {
    return offset >= length_ ? 0.0 : cost_[size_t(offset / kBlock)];
  }

  std::vector<LevelPlan> levels_from(int64_t offset) const {
    std::vector<LevelPlan> levels;
    while (offset < length_) {
      const int64_t size = size_at(offset), count = count_[size_t(offset / kBlock)];
      levels.push_back({size, count, offset});
      offset += count * size;
    }
    return levels;
  }

 private:
  /// The largest partitions a level starting at `offset` may take: at most `offset` taps (its
  /// outputs are due from the end of a block on), and from kSpreadSteps on, partitions that
  /// leave `spare_` samples between a block's end and its first output, in which its steps run
  /// one after the other (a level of partitions of 8192 taps runs for over half a millisecond).
  int64_t size_at(int64_t offset) const {
    const int64_t size = std::min(kLargestPartition, power_of_two_at_most(offset));
    return size < kSpreadSteps || offset - size >= spare_ ? size
                                                          : power_of_two_at_most(offset - spare_);
  }

  int64_t spare_  = 0;  ///< samples for a level's steps: a chunk of kBlock for each but the first
  int64_t length_ = 0;
  std::vector<double> cost_;
  std::vector<int64_t> count_;
};

/// The model cost of a first level of `count` partitions of `size` taps from tap 0, for calls
/// of `call` samples: every chunk of a call between the level's block ends transforms the
/// level's inputs (the block so far, zeros after it) and outputs and does the products of the
/// newest block; those of the older blocks are done once a block. Calls of `call` samples from
/// the start of the stream make 1 + (call − gcd(call, size))/size chunks each.
double first_level_cost(const std::vector<Reach>& paths, int64_t n_inputs, int64_t size,
                        int64_t count, int64_t call, std::vector<char>& seen) {
  std::fill(seen.begin(), seen.end(), char(0));
  int64_t inputs = 0, outputs = 0, newest = 0, older = 0;
  for (const Reach& p : paths) {
    const int64_t first = filled_partitions(p, 0, size, 1);
    const int64_t rest  = filled_partitions(p, 0, size, count) - first;
    if (first + rest == 0) continue;
    newest += first, older += rest;
    char &in = seen[size_t(p.input)], &out = seen[size_t(n_inputs + p.output)];
    inputs += !in, outputs += !out, in = out = 1;
  }
  const auto [input, output] = transform_costs(size);  // per sample of a block
  const double chunk         = double(size) * (input * double(inputs) + output * double(outputs) +
                                       kProduct * double(newest));
  const double chunks_per_sample =
      double(size + call - std::gcd(call, size)) / (double(size) * double(call));
  return chunk * chunks_per_sample + kProduct * double(older);
}

/// The plan of the paths in levels: the first level (count 0: none, the first kBlock taps
/// in direct form instead) and the levels after it, the cheapest for calls of `call` samples.
struct Plan {
  LevelPlan first{0, 0, 0};
  std::vector<LevelPlan> levels;
};

Plan plan_paths(const std::vector<Reach>& paths, int64_t n_inputs, int64_t n_outputs,
                int64_t call) {
  const LevelChoices choices(paths, n_inputs, n_outputs);
  int64_t heads = 0, length = 0;  // direct form: the first kBlock taps of the paths, where filled
  for (const Reach& p : paths) {
    heads += p.filled[1] > 0;
    length = std::max(length, p.length);
  }
  double best = kDirectTap * double(kBlock * heads) + choices.cost_from(kBlock);
  Plan plan{{0, 0, 0}, {}};
  std::vector<char> seen(size_t(n_inputs + n_outputs));
  // From 2H on: a first level of H taps is no cheaper than direct form and a level of H (as
  // measured), and costs a transform a sample in calls of one sample where they cost none.
  for (int64_t size = 2 * kBlock; size <= std::min(kLargestPartition, power_of_two_at_least(call));
       size *= 2) {
    const int64_t most = std::min(kMostPartitions, (length + size - 1) / size);
    for (int64_t count = 1; count <= most; ++count) {
      const double c = first_level_cost(paths, n_inputs, size, count, call, seen) +
                       choices.cost_from(count * size);
      if (c < best) best = c, plan.first = {size, count, 0};
    }
  }
  plan.levels =
      choices.levels_from(plan.first.count > 0 ? plan.first.count * plan.first.size : kBlock);
  return plan;
}

// ---- FFTs ----------------------------------------------------------------------------------
//
// Complex transforms of m points (a power of two, ≥ 4) on split arrays: the forward one is
// decimation in frequency (natural order in, bit-reversed order out), the inverse decimation in
// time (bit-reversed in, natural out, unnormalised). A real signal of 2m samples is transformed
// as z[n] = x[2n] + i·x[2n + 1] and the spectrum of x untangled from Z:
//
//   X[k] = ½(Z[k] + Z̄[m − k]) − ½i·W^k·(Z[k] − Z̄[m − k]),  W = exp(−iπ/m),  k = 0 … m
//
// which pairs bin k with m − k. In bit-reversed order, bins k and m − k sit in the same octave
// [2^j, 2^(j+1)) of positions, mirrored (position p pairs with 3·2^j − 1 − p), and the twiddle
// W^k at position p depends on p alone (not on m): the untangling runs on the bit-reversed
// spectrum, and one table serves every size. Position 0 holds X[0] (real part) and X[m]
// (imaginary part), both real.

template <typename T>
struct Twiddles {
  const T* stage_re;  // exp(−iπj/h) at h − 1 + j, j < h, for h = 1, 2, 4 … m/2
  const T* stage_im;
  const T* cube_re;  // exp(−3iπj/h) at h − 1 + j, j < h/2 (radix 4)
  const T* cube_im;
  const T* split_re;  // W^k at the position p of bin k, p ≥ 2
  const T* split_im;
};

/// The `Twiddles` in a table that fill_twiddles filled.
template <typename T>
Twiddles<T> twiddles_of(const std::vector<T>& table) {
  const int64_t m = int64_t(table.size()) / 6;
  const T* t      = table.data();
  return {t, t + m, t + 2 * m, t + 3 * m, t + 4 * m, t + 5 * m};
}

/// `Twiddles` for transforms of up to m complex points in one table (computed in double).
template <typename T>
Twiddles<T> fill_twiddles(int64_t m, std::vector<T>& table) {
  table.assign(size_t(6 * m), T(0));
  T* t        = table.data();
  T *stage_re = t, *stage_im = t + m, *cube_re = t + 2 * m, *cube_im = t + 3 * m;
  T *split_re = t + 4 * m, *split_im = t + 5 * m;
  for (int64_t h = 1; h < m; h *= 2)
    for (int64_t j = 0; j < h; ++j) {
      const double angle  = -M_PI * double(j) / double(h);
      stage_re[h - 1 + j] = T(std::cos(angle)), stage_im[h - 1 + j] = T(std::sin(angle));
      if (2 * j < h)
        cube_re[h - 1 + j] = T(std::cos(3 * angle)), cube_im[h - 1 + j] = T(std::sin(3 * angle));
    }
  // Position p in octave [2^j, 2^(j+1)) holds bin k = reverse_{j+1}(p)·m/2^(j+1), so
  // W^k = exp(−2πi·reverse_{j+1}(p)/2^(j+2)).
  for (int64_t octave = 2, bits = 2; octave < m; octave *= 2, ++bits)
    for (int64_t p = octave; p < 2 * octave; ++p) {
      int64_t reversed = 0;
      for (int64_t b = 0; b < bits; ++b) reversed |= ((p >> b) & 1) << (bits - 1 - b);
      const double angle = -2.0 * M_PI * double(reversed) / double(4 * octave);
      split_re[p] = T(std::cos(angle)), split_im[p] = T(std::sin(angle));
    }
  return twiddles_of(table);
}

// The stages of the complex transforms, on blocks of 2h points. Radix 4 is the composition of
// the radix-2 stages h and h/2 (so the order of the bins is that of radix 2), with 3 twiddle
// products for 4 points instead of 4 and half the passes over the data. The butterflies of a
// block take the block's quarters (halves) as restrict parameters: GCC vectorises them then,
// but not loops over restrict pointers declared in the loop.

template <typename T>
struct Stage {
  const T *w1r, *w1i, *w2r, *w2i, *w3r, *w3i;  // w^j, w^2j, w^3j, w = exp(−iπ/h)

  Stage(const Twiddles<T>& w, int64_t h)
      : w1r(w.stage_re + h - 1),
        w1i(w.stage_im + h - 1),
        w2r(w.stage_re + h / 2 - 1),
        w2i(w.stage_im + h / 2 - 1),
        w3r(w.cube_re + h - 1),
        w3i(w.cube_im + h - 1) {}
};

template <typename T>
void forward_radix2(T* __restrict ar, T* __restrict ai, T* __restrict br, T* __restrict bi,
                    const T* __restrict wr, const T* __restrict wi, int64_t h) {
  for (int64_t j = 0; j < h; ++j) {
    const T ur = ar[j], ui = ai[j], vr = br[j], vi = bi[j];
    const T dr = ur - vr, di = ui - vi;
    ar[j] = ur + vr, ai[j] = ui + vi;
    br[j] = dr * wr[j] - di * wi[j], bi[j] = dr * wi[j] + di * wr[j];
  }
}

template <typename T>
void inverse_radix2(T* __restrict ar, T* __restrict ai, T* __restrict br, T* __restrict bi,
                    const T* __restrict wr, const T* __restrict wi, int64_t h) {
  for (int64_t j = 0; j < h; ++j) {
    const T ur = ar[j], ui = ai[j];
    const T vr = br[j] * wr[j] + bi[j] * wi[j], vi = bi[j] * wr[j] - br[j] * wi[j];
    ar[j] = ur + vr, ai[j] = ui + vi;
    br[j] = ur - vr, bi[j] = ui - vi;
  }
}

template <typename T>
void forward_radix4(T* __restrict r0, T* __restrict i0, T* __restrict r1, T* __restrict i1,
                    T* __restrict r2, T* __restrict i2, T* __restrict r3, T* __restrict i3,
                    const T* __restrict w1r, const T* __restrict w1i, const T* __restrict w2r,
                    const T* __restrict w2i, const T* __restrict w3r, const T* __restrict w3i,
                    int64_t q) {
  for (int64_t j = 0; j < q; ++j) {
    const T sr = r0[j] + r2[j], si = i0[j] + i2[j], dr = r0[j] - r2[j], di = i0[j] - i2[j];
    const T tr = r1[j] + r3[j], ti = i1[j] + i3[j], er = r1[j] - r3[j], ei = i1[j] - i3[j];
    const T ar = sr - tr, ai = si - ti;  // × w^2j
    const T br = dr + ei, bi = di - er;  // (a0 − a2) − i·(a1 − a3), × w^j
    const T cr = dr - ei, ci = di + er;  // (a0 − a2) + i·(a1 − a3), × w^3j
    r0[j] = sr + tr, i0[j] = si + ti;
    r1[j] = ar * w2r[j] - ai * w2i[j], i1[j] = ar * w2i[j] + ai * w2r[j];
    r2[j] = br * w1r[j] - bi * w1i[j], i2[j] = br * w1i[j] + bi * w1r[j];
    r3[j] = cr * w3r[j] - ci * w3i[j], i3[j] = cr * w3i[j] + ci * w3r[j];
  }
}

template <typename T>
void inverse_radix4(T* __restrict r0, T* __restrict i0, T* __restrict r1, T* __restrict i1,
                    T* __restrict r2, T* __restrict i2, T* __restrict r3, T* __restrict i3,
                    const T* __restrict w1r, const T* __restrict w1i, const T* __restrict w2r,
                    const T* __restrict w2i, const T* __restrict w3r, const T* __restrict w3i,
                    int64_t q) {
  for (int64_t j = 0; j < q; ++j) {
    // a1·w̄^2j, a2·w̄^j, a3·w̄^3j
    const T pr = r1[j] * w2r[j] + i1[j] * w2i[j], pi = i1[j] * w2r[j] - r1[j] * w2i[j];
    const T qr = r2[j] * w1r[j] + i2[j] * w1i[j], qi = i2[j] * w1r[j] - r2[j] * w1i[j];
    const T sr = r3[j] * w3r[j] + i3[j] * w3i[j], si = i3[j] * w3r[j] - r3[j] * w3i[j];
    const T ar = r0[j] + pr, ai = i0[j] + pi, br = r0[j] - pr, bi = i0[j] - pi;
    const T cr = qr + sr, ci = qi + si, dr = si - qi, di = qr - sr;  // d = i·(q − s)
    r0[j] = ar + cr, i0[j] = ai + ci;
    r2[j] = ar - cr, i2[j] = ai - ci;
    r1[j] = br + dr, i1[j] = bi + di;
    r3[j] = br - dr, i3[j] = bi - di;
  }
}

template <typename T>
void complex_forward(T* re, T* im, int64_t m, const Twiddles<T>& w) {
  // Stages h = m/2 … 4, radix 4 but for one radix-2 stage when their number is odd.
  int64_t h = m / 2;
  if ((m & 0x5555555555555555) == 0) {  // m = 2^odd
    for (int64_t b = 0; b < m; b += 2 * h)
      forward_radix2(re + b, im + b, re + b + h, im + b + h, w.stage_re + h - 1, w.stage_im + h - 1,
                     h);
    h /= 2;
  }
  for (; h >= 8; h /= 4) {
    const Stage<T> s(w, h);
    const int64_t q = h / 2;
    for (int64_t b = 0; b < m; b += 2 * h)
      forward_radix4(re + b, im + b, re + b + q, im + b + q, re + b + h, im + b + h, re + b + h + q,
                     im + b + h + q, s.w1r, s.w1i, s.w2r, s.w2i, s.w3r, s.w3i, q);
  }
  // The last two stages (twiddles 1 and −i) as one radix-4 pass.
  for (int64_t b = 0; b < m; b += 4) {
    const T r0 = re[b], r1 = re[b + 1], r2 = re[b + 2], r3 = re[b + 3];
    const T i0 = im[b], i1 = im[b + 1], i2 = im[b + 2], i3 = im[b + 3];
    const T ar = r0 + r2, ai = i0 + i2, br = r1 + r3, bi = i1 + i3;
    const T cr = r0 - r2, ci = i0 - i2, dr = i1 - i3, di = r3 - r1;  // d = −i·(a1 − a3)
    re[b] = ar + br, im[b] = ai + bi;
    re[b + 1] = ar - br, im[b + 1] = ai - bi;
    re[b + 2] = cr + dr, im[b + 2] = ci + di;
    re[b + 3] = cr - dr, im[b + 3] = ci - di;
  }
}

template <typename T>
void complex_inverse(T* re, T* im, int64_t m, const Twiddles<T>& w) {
  // The first two stages (twiddles 1 and +i) as one radix-4 pass.
  for (int64_t b = 0; b < m; b += 4) {
    const T r0 = re[b], r1 = re[b + 1], r2 = re[b + 2], r3 = re[b + 3];
    const T i0 = im[b], i1 = im[b + 1], i2 = im[b + 2], i3 = im[b + 3];
    const T ar = r0 + r1, ai = i0 + i1, br = r0 - r1, bi = i0 - i1;
    const T cr = r2 + r3, ci = i2 + i3, dr = i3 - i2, di = r2 - r3;  // d = i·(a2 − a3)
    re[b] = ar + cr, im[b] = ai + ci;
    re[b + 2] = ar - cr, im[b + 2] = ai - ci;
    re[b + 1] = br + dr, im[b + 1] = bi + di;
    re[b + 3] = br - dr, im[b + 3] = bi - di;
  }
  // Stages h = 4 … m/2, in the reverse order of complex_forward.
  int64_t h = 8;
  for (; h < m; h *= 4) {
    const Stage<T> s(w, h);
    const int64_t q = h / 2;
    for (int64_t b = 0; b < m; b += 2 * h)
      inverse_radix4(re + b, im + b, re + b + q, im + b + q, re + b + h, im + b + h, re + b + h + q,
                     im + b + h + q, s.w1r, s.w1i, s.w2r, s.w2i, s.w3r, s.w3i, q);
  }
  if ((h /= 2) < m)
    for (int64_t b = 0; b < m; b += 2 * h)
      inverse_radix2(re + b, im + b, re + b + h, im + b + h, w.stage_re + h - 1, w.stage_im + h - 1,
                     h);
}

/// The spectrum (bit-reversed, packed) of the 2m real samples x, given as re[n] = x[2n],
/// im[n] = x[2n + 1].
template <typename T>
void real_forward(T* __restrict re, T* __restrict im, int64_t m, const Twiddles<T>& w) {
  complex_forward(re, im, m, w);
  const T r0 = re[0], i0 = im[0];
  re[0] = r0 + i0, im[0] = r0 - i0;  // X[0], X[m]
  im[1] = -im[1];                    // X[m/2] = conj(Z[m/2])
  for (int64_t octave = 2; octave < m; octave *= 2)
    for (int64_t p = octave, q = 2 * octave - 1; p < octave + octave / 2; ++p, --q) {
      const T pr = re[p] + re[q], pi = im[p] - im[q];  // Z[k] + Z̄[m − k]
      const T qr = re[p] - re[q], qi = im[p] + im[q];  // Z[k] − Z̄[m − k]
      const T wr = w.split_re[p], wi = w.split_im[p];
      const T sr = wr * qi + wi * qr, si = wi * qi - wr * qr;  // −i·W^k·(Z[k] − Z̄[m − k])
      re[p] = T(0.5) * (pr + sr), im[p] = T(0.5) * (pi + si);
      re[q] = T(0.5) * (pr - sr), im[q] = T(0.5) * (si - pi);
    }
}

/// The inverse of real_forward times 2m: re[n] = 2m·x[2n], im[n] = 2m·x[2n + 1].
template <typename T>
void real_inverse(T* __restrict re, T* __restrict im, int64_t m, const Twiddles<T>& w) {
  const T y0 = re[0], ym = im[0];
  re[0] = y0 + ym, im[0] = y0 - ym;
  re[1] = 2 * re[1], im[1] = -2 * im[1];
  for (int64_t octave = 2; octave < m; octave *= 2)
    for (int64_t p = octave, q = 2 * octave - 1; p < octave + octave / 2; ++p, --q) {
      const T ar = re[p] + re[q], ai = im[p] - im[q];  // Y[k] + Ȳ[m − k]
      const T dr = re[p] - re[q], di = im[p] + im[q];  // Y[k] − Ȳ[m − k]
      const T wr = w.split_re[p], wi = w.split_im[p];
      const T tr = dr * wr + di * wi, ti = di * wr - dr * wi;  // (Y[k] − Ȳ[m − k])·W̄^k
      re[p] = ar - ti, im[p] = ai + tr;                        // 2·Z[k]
      re[q] = ar + ti, im[q] = tr - ai;                        // 2·Z[m − k]
    }
  complex_inverse(re, im, m, w);
}

/// a = x·g + u·v (a += …; without u·v unless kPair) on packed spectra of m bins, each m real
/// parts then, from `im_at` on, m imaginary parts. Two products a pass halve the loads and
/// stores of a (four are slower: too many streams of data).
template <bool kAccumulate, bool kPair>
void multiply(const float* __restrict x, const float* __restrict g, const float* __restrict u,
              const float* __restrict v, float* __restrict ar, float* __restrict ai, int64_t m,
              int64_t im_at) {
  // Bin 0 holds X[0]·G[0] and X[m]·G[m], both real.
  const int64_t s = im_at;
  const float r0  = x[0] * g[0] + (kPair ? u[0] * v[0] : 0.0f);
  const float i0  = x[s] * g[s] + (kPair ? u[s] * v[s] : 0.0f);
  ar[0]           = kAccumulate ? ar[0] + r0 : r0;
  ai[0]           = kAccumulate ? ai[0] + i0 : i0;
  const float *xi = x + s, *gi = g + s, *ui = u + s, *vi = v + s;
  for (int64_t p = 1; p < m; ++p) {
    float r = x[p] * g[p] - xi[p] * gi[p], i = x[p] * gi[p] + xi[p] * g[p];
    if (kPair) r += u[p] * v[p] - ui[p] * vi[p], i += u[p] * vi[p] + ui[p] * v[p];
    ar[p] = kAccumulate ? ar[p] + r : r;
    ai[p] = kAccumulate ? ai[p] + i : i;
  }
}

/// y[r] += Σ_k h[k]·x[r − k], r < n, k < taps (x[r − k] for r < k is the history before x).
void direct_form(const float* __restrict h, int64_t taps, const float* __restrict x,
                 float* __restrict y, int64_t n) {
  int64_t k = 0;
  for (; k + 4 <= taps; k += 4) {  // four taps a pass: fewer loads and stores of y
    const float h0 = h[k], h1 = h[k + 1], h2 = h[k + 2], h3 = h[k + 3];
    const float *x0 = x - k, *x1 = x - k - 1, *x2 = x - k - 2, *x3 = x - k - 3;
    for (int64_t r = 0; r < n; ++r) y[r] += (h0 * x0[r] + h1 * x1[r]) + (h2 * x2[r] + h3 * x3[r]);
  }
  for (; k < taps; ++k) {
    const float hk  = h[k];
    const float* xk = x - k;
    for (int64_t r = 0; r < n; ++r) y[r] += hk * xk[r];
  }
}

/// re[i] = x[2i], im[i] = x[2i + 1], i < n.
void deinterleave(const float* __restrict x, float* __restrict re, float* __restrict im,
                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) re[i] = x[2 * i], im[i] = x[2 * i + 1];
}

/// y[2i] += re[i], y[2i + 1] += im[i], i < n.
void add_interleaved(const float* __restrict re, const float* __restrict im, float* __restrict y,
                     int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[2 * i] += re[i], y[2 * i + 1] += im[i];
}

/// The clock's start for a phase: every level's size divides kLargestPartition, and so does
/// kBlock, so this remainder puts all their boundaries where the phase does.
int64_t start_of(int64_t phase) {
  return (phase % kLargestPartition + kLargestPartition) % kLargestPartition;
}

void check(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("StreamConvolverMatrix: " + why);
}

// On x86-64, process() has a second copy of its loops for AVX2, taken where the processor has
// it: vectors twice as wide as SSE2's, the same operations, so the same roundings (no FMA).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRAFX_STREAM_AVX2 1
/// f(), with everything it calls inlined and compiled for AVX2.
template <typename F>
__attribute__((target("avx2"), flatten)) void with_avx2(const F& f) {
  f();
}
#else
template <typename F>
void with_avx2(const F& f) {  // not called: avx2_ stays false
  f();
}
#endif

}  // namespace

StreamConvolverMatrix::StreamConvolverMatrix(int64_t n_inputs, int64_t n_outputs,
                                             const std::vector<Path>& paths, int64_t max_block,
                                             int64_t phase)
    : n_inputs_(n_inputs),
      n_outputs_(n_outputs),
      max_block_(max_block),
      phase_(phase),
      start_(start_of(phase)) {
#ifdef GRAFX_STREAM_AVX2
  __builtin_cpu_init();
  avx2_ = __builtin_cpu_supports("avx2");
#endif
  check(n_inputs >= 0 && n_outputs >= 0, "expected numbers of channels, got " +
                                             std::to_string(n_inputs) + " inputs and " +
                                             std::to_string(n_outputs) + " outputs");
  check(max_block >= 1,
        "expected a block of at least one sample, got " + std::to_string(max_block));
  for (const Path& p : paths) {
    check(p.input >= 0 && p.input < n_inputs && p.output >= 0 && p.output < n_outputs,
          "a path from input " + std::to_string(p.input) + " to output " +
              std::to_string(p.output) + " between " + std::to_string(n_inputs) + " inputs and " +
              std::to_string(n_outputs) + " outputs");
    check(!p.taps.empty(), "expected at least one tap in each path");
  }
  // A path is direct form alone where that is cheaper than levels for it alone (in a matrix
  // levels cost it less, but direct form is cheap for at most kDirectOnly taps anyway), or else
  // in the levels: the first kBlock taps in direct form and levels for the rest, or a first
  // level from tap 0 on, whichever is cheaper for calls of max_block samples.
  std::vector<Reach> reaches;  // of the paths in levels
  std::vector<char> in_levels(paths.size(), 0);
  for (size_t i = 0; i < paths.size(); ++i) {
    const int64_t length = int64_t(paths[i].taps.size());
    Reach reach{paths[i].input, paths[i].output, length, filled_runs(paths[i].taps)};
    // Costed alone, the path runs between the channels of a 1×1 matrix (0 and 0: its own would
    // index past that matrix's channel flags).
    in_levels[i] = length > kDirectOnly ||
                   (length > kBlock &&
                    kDirectTap * double(length - kBlock) >
                        LevelChoices({Reach{0, 0, length, reach.filled}}, 1, 1).cost_from(kBlock));
    if (in_levels[i]) reaches.push_back(std::move(reach));
  }
  const Plan plan = reaches.empty() ? Plan{} : plan_paths(reaches, n_inputs, n_outputs, max_block);
  std::vector<int64_t> head_taps(paths.size());
  for (size_t i = 0; i < paths.size(); ++i)
    head_taps[i] = !in_levels[i]          ? int64_t(paths[i].taps.size())
                   : plan.first.count > 0 ? 0
                                          : kBlock;
  const auto zeros = [](auto first, auto end) {
    return std::all_of(first, end, [](float t) { return t == 0.0f; });
  };
  for (int64_t o = 0; o < n_outputs; ++o)  // grouped by output, which they add to in turn
    for (size_t i = 0; i < paths.size(); ++i)
      if (paths[i].output == o && head_taps[i] > 0 &&
          !zeros(paths[i].taps.begin(), paths[i].taps.begin() + head_taps[i])) {
        heads_.push_back({paths[i].input, o, head_taps[i], int64_t(head_taps_.size())});
        head_taps_.insert(head_taps_.end(), paths[i].taps.begin(),
                          paths[i].taps.begin() + head_taps[i]);
        history_ = std::max(history_, head_taps[i] - 1);
      }
  head_inputs_.assign(size_t(n_inputs * (history_ + kBlock)), 0.0f);
  if (reaches.empty()) return;

  int64_t largest = plan.first.size, reach = 0;
  for (const LevelPlan& p : plan.levels)
    largest = std::max(largest, p.size), reach = std::max(reach, p.offset + p.size);
  work_.assign(size_t(2 * (largest + kPad)), 0.0f);
  fill_twiddles(largest, twiddles_);

  // The partitions' spectra, in double, scaled by 1/(2B) for the unnormalised inverse.
  std::vector<double> table;
  const Twiddles<double> w = fill_twiddles(largest, table);
  std::vector<double> re(static_cast<size_t>(largest)), im(static_cast<size_t>(largest));
  const auto make_level = [&](const LevelPlan& p) {
    Level level;
    level.size = p.size, level.count = p.count, level.offset = p.offset;
    // Path k's partition j in the level: taps [first, end), none if all zero.
    const auto partition = [&](size_t k, int64_t j) {
      const std::vector<float>& taps = paths[k].taps;
      const int64_t length           = int64_t(taps.size());
      const int64_t first = p.offset + j * p.size, end = std::min(length, first + p.size);
      const bool none = !in_levels[k] || j >= partitions(length, p.offset, p.size, p.count) ||
                        zeros(taps.begin() + first, taps.begin() + end);
      return none ? std::pair<int64_t, int64_t>{0, 0} : std::pair<int64_t, int64_t>{first, end};
    };
    // The inputs' rings, as deep as their paths' last non-zero partitions.
    std::vector<int64_t> slot(size_t(n_inputs), -1);  // each channel's Input in the level
    int64_t spectra = 0;
    for (int64_t i = 0; i < n_inputs; ++i) {
      int64_t depth = 0;
      for (size_t k = 0; k < paths.size(); ++k)
        for (int64_t j = depth; paths[k].input == i && j < p.count; ++j)
          if (partition(k, j).second > 0) depth = j + 1;
      if (depth == 0) continue;
      slot[size_t(i)] = int64_t(level.inputs.size());
      level.inputs.push_back({i, depth, spectra, 0});
      spectra += 2 * (p.size + kPad) * depth;
    }
    level.spectra.assign(size_t(spectra), 0.0f);
    // The terms of each output, by age (the newest block's first), path by path.
    for (int64_t o = 0; o < n_outputs; ++o) {
      Level::Output output{o, int64_t(level.terms.size()), 0, 0};
      for (int64_t j = 0; j < p.count; ++j) {
        if (j == 1) output.older = int64_t(level.terms.size());
        for (size_t k = 0; k < paths.size(); ++k) {
          const auto [from, end] = partition(k, j);
          if (paths[k].output != o || end == 0) continue;
          std::fill(re.begin(), re.end(), 0.0), std::fill(im.begin(), im.end(), 0.0);
          for (int64_t t = from; t < end; ++t)
            ((t - from) % 2 ? im : re)[size_t((t - from) / 2)] = paths[k].taps[size_t(t)];
          real_forward(re.data(), im.data(), p.size, w);
          level.terms.push_back({slot[size_t(paths[k].input)], j, int64_t(level.filters.size())});
          for (int64_t b = 0; b < p.size; ++b)
            level.filters.push_back(float(re[size_t(b)] / double(2 * p.size)));
          level.filters.insert(level.filters.end(), size_t(kPad), 0.0f);
          for (int64_t b = 0; b < p.size; ++b)
            level.filters.push_back(float(im[size_t(b)] / double(2 * p.size)));
          level.filters.insert(level.filters.end(), size_t(kPad), 0.0f);
        }
      }
      output.end = int64_t(level.terms.size());
      if (p.count == 1) output.older = output.end;
      if (output.end > output.first) level.outputs.push_back(output);
    }
    return level;
  };
  if (plan.first.count > 0) {
    first_ = make_level(plan.first);
    first_windows_.assign(first_.inputs.size() * size_t(2 * first_.size), 0.0f);
    first_older_.assign(first_.outputs.size() * size_t(2 * (first_.size + kPad)), 0.0f);
  }
  for (const LevelPlan& p : plan.levels)
    if (Level level = make_level(p); !level.terms.empty())  // else all its partitions are zero
      levels_.push_back(std::move(level));
  // The inputs' ring holds a level's 2B inputs until its last step has transformed them.
  int64_t span = 0;
  for (const Level& level : levels_) {
    largest_partition_ = std::max(largest_partition_, level.size);
    span               = std::max(span, 2 * level.size + level.step_time(level.steps() - 1));
  }
  input_ring_  = power_of_two_at_least(span);
  output_ring_ = std::max(kBlock, power_of_two_at_least(reach));
  inputs_.assign(size_t(n_inputs * input_ring_), 0.0f);
  outputs_.assign(size_t(n_outputs * output_ring_), 0.0f);
}

int64_t StreamConvolverMatrix::partition_products() const {
  int64_t products = 0;
  for (const Level& level : levels_) products += int64_t(level.terms.size());
  return products + int64_t(first_.terms.size());
}

int64_t StreamConvolverMatrix::Level::step_time(int64_t j) const {
  // Evenly from the block's end to the last moment, on the ends of the heads' chunks.
  const int64_t chunks = (offset - size) / kBlock, last = steps() - 1;
  return last == 0 ? 0 : kBlock * (j * chunks / last);
}

std::vector<StreamConvolverMatrix::LevelRun> StreamConvolverMatrix::level_runs() const {
  std::vector<LevelRun> runs;
  for (const Level& level : levels_) {
    const auto [input, output] = transform_costs(level.size);  // per sample of the level's block
    const int64_t n_inputs     = int64_t(level.inputs.size());
    for (int64_t j = 0; j < level.steps(); ++j) {
      const double nanoseconds =
          double(level.size) *
          (j < n_inputs ? input
                        : output + kProduct * double(level.outputs[size_t(j - n_inputs)].end -
                                                     level.outputs[size_t(j - n_inputs)].first));
      const int64_t offset = level.step_time(j);
      if (!runs.empty() && runs.back().period == level.size && runs.back().offset == offset)
        runs.back().nanoseconds += nanoseconds;  // steps at the same time
      else
        runs.push_back({level.size, offset, nanoseconds});
    }
  }
  return runs;
}

void StreamConvolverMatrix::set_phase(int64_t phase) noexcept {
  phase_ = phase, start_ = start_of(phase);
  reset();
}

void StreamConvolverMatrix::reset() noexcept {
  time_ = 0;
  std::fill(head_inputs_.begin(), head_inputs_.end(), 0.0f);
  std::fill(inputs_.begin(), inputs_.end(), 0.0f);
  std::fill(outputs_.begin(), outputs_.end(), 0.0f);
  std::fill(first_windows_.begin(), first_windows_.end(), 0.0f);
  std::fill(first_older_.begin(), first_older_.end(), 0.0f);
  const auto forget = [](Level& level) {
    for (Level::Input& input : level.inputs) input.newest = 0;
    std::fill(level.spectra.begin(), level.spectra.end(), 0.0f);
  };
  forget(first_);
  for (Level& level : levels_) forget(level);
}

void StreamConvolverMatrix::process(const float* const* inputs, float* const* outputs,
                                    int64_t n) noexcept {
  if (avx2_)
    with_avx2([&] { process_chunks(inputs, outputs, n); });
  else
    process_chunks(inputs, outputs, n);
}

inline void StreamConvolverMatrix::process_chunks(const float* const* inputs, float* const* outputs,
                                                  int64_t n) noexcept {
  // The heads first, in chunks that end where time_ is a multiple of H (where their history
  // moves), then the levels, in chunks that end where time_ + phase is: those of a phase that
  // is not a multiple of H cut a block aligned on the stream in two (the first level runs every
  // H samples), but the heads, most of the work of a block, still take it whole. The direct-form
  // sums come first, the levels' (larger) sum added once: fewer roundings at its magnitude.
  const int64_t stride = history_ + kBlock, begin = time_;
  for (int64_t done = 0; done < n;) {
    const int64_t at = time_ % kBlock, count = std::min(n - done, kBlock - at);
    for (int64_t i = 0; i < n_inputs_; ++i)
      std::memcpy(head_inputs_.data() + i * stride + history_ + at, inputs[i] + done,
                  size_t(count) * 4);
    for (int64_t o = 0; o < n_outputs_; ++o)
      std::fill(outputs[o] + done, outputs[o] + done + count, 0.0f);
    for (const Head& h : heads_)
      direct_form(head_taps_.data() + h.first, h.taps,
                  head_inputs_.data() + h.input * stride + history_ + at, outputs[h.output] + done,
                  count);
    time_ += count, done += count;
    if (at + count < kBlock) continue;
    for (int64_t i = 0; i < n_inputs_; ++i) {
      float* x = head_inputs_.data() + i * stride;
      std::memmove(x, x + kBlock, size_t(history_) * 4);
    }
  }
  if (first_.count > 0) run_first_level(inputs, outputs, n, begin);
  if (levels_.empty()) return;
  // A level's contributions to the outputs of a chunk were added to `outputs_` at or before its
  // start. The clock starts at the phase, every buffer silent: as if that much silence had come
  // before the stream, which the levels' first blocks read as such.
  for (int64_t done = 0; done < n;) {
    const int64_t now = begin + start_ + done;
    const int64_t at = now % kBlock, count = std::min(n - done, kBlock - at);
    for (int64_t i = 0; i < n_inputs_; ++i)
      std::memcpy(inputs_.data() + i * input_ring_ + (now & (input_ring_ - 1)), inputs[i] + done,
                  size_t(count) * 4);
    for (int64_t o = 0; o < n_outputs_; ++o) {
      float* y       = outputs[o] + done;
      float* pending = outputs_.data() + o * output_ring_ + (now & (output_ring_ - 1));
      for (int64_t i = 0; i < count; ++i) y[i] += pending[i];
      std::fill(pending, pending + count, 0.0f);
    }
    done += count;
    if (at + count < kBlock) continue;
    // A level's steps for a block that ended after the stream's start (earlier ones would
    // transform the silence before it).
    for (Level& level : levels_) {
      const int64_t into = (now + count) & (level.size - 1);
      if (into <= level.offset - level.size && now + count - into > start_)
        run_steps(level, now + count - into, into);
    }
  }
}

inline void StreamConvolverMatrix::sum_products(const Level& level, int64_t first, int64_t end,
                                                bool accumulate, float* ar, float* ai) noexcept {
  const int64_t size = level.size, im_at = size + kPad;
  const auto spectrum_of = [&](const Level::Term& term) {
    const Level::Input& input = level.inputs[size_t(term.input)];
    const int64_t slot        = (input.newest - term.age + input.depth) % input.depth;
    return level.spectra.data() + input.first + 2 * im_at * slot;
  };
  for (int64_t k = first; k < end; k += 2) {  // two a pass
    const Level::Term &a = level.terms[size_t(k)],
                      &b = level.terms[size_t(std::min(k + 1, end - 1))];
    const float *x = spectrum_of(a), *g = level.filters.data() + a.filter, *u = spectrum_of(b),
                *v = level.filters.data() + b.filter;
    const bool add = accumulate || k > first, pair = k + 1 < end;
    if (add && pair)
      multiply<true, true>(x, g, u, v, ar, ai, size, im_at);
    else if (add)
      multiply<true, false>(x, g, u, v, ar, ai, size, im_at);
    else if (pair)
      multiply<false, true>(x, g, u, v, ar, ai, size, im_at);
    else
      multiply<false, false>(x, g, u, v, ar, ai, size, im_at);
  }
}

inline void StreamConvolverMatrix::run_first_level(const float* const* inputs,
                                                   float* const* outputs, int64_t n,
                                                   int64_t begin) noexcept {
  Level& level       = first_;
  const int64_t size = level.size, im_at = size + kPad;
  const Twiddles<float> w = twiddles_of(twiddles_);
  float* ar               = work_.data();
  float* ai               = work_.data() + int64_t(work_.size()) / 2;
  for (int64_t done = 0; done < n;) {
    const int64_t at = (begin + done) % size, count = std::min(n - done, size - at);
    // Each input's last block and its current one so far (zeros after it), transformed.
    for (size_t k = 0; k < level.inputs.size(); ++k) {
      const Level::Input& input = level.inputs[k];
      float* window             = first_windows_.data() + int64_t(k) * 2 * size;
      std::memcpy(window + size + at, inputs[input.channel] + done, size_t(count) * 4);
      float* xr = level.spectra.data() + input.first + 2 * im_at * input.newest;
      deinterleave(window, xr, xr + im_at, size);
      real_forward(xr, xr + im_at, size, w);
    }
    // Each output: the older blocks' products (summed once a block) and the current one's,
    // transformed back; by overlap-save, the chunk's outputs are those of the block so far.
    for (size_t k = 0; k < level.outputs.size(); ++k) {
      const Level::Output& output = level.outputs[k];
      const float* older          = first_older_.data() + int64_t(k) * 2 * im_at;
      const bool has_older        = output.older < output.end;
      if (has_older) {
        std::memcpy(ar, older, size_t(size) * 4);
        std::memcpy(ai, older + im_at, size_t(size) * 4);
      }
      sum_products(level, output.first, output.older, has_older, ar, ai);
      real_inverse(ar, ai, size, w);
      float* y = outputs[output.channel] + done;
      for (int64_t r = 0; r < count; ++r) {  // sample t of the 2B is at t/2 of ar (even t), ai
        const int64_t t = size + at + r;
        y[r] += t % 2 == 0 ? ar[t / 2] : ai[t / 2];
      }
    }
    done += count;
    if (at + count < size) continue;
    // The block is complete: it becomes the last one, and the next block's older products are
    // summed.
    for (size_t k = 0; k < level.inputs.size(); ++k) {
      Level::Input& input = level.inputs[k];
      input.newest        = (input.newest + 1) % input.depth;
      float* window       = first_windows_.data() + int64_t(k) * 2 * size;
      std::memcpy(window, window + size, size_t(size) * 4);
      std::fill(window + size, window + 2 * size, 0.0f);
    }
    for (size_t k = 0; k < level.outputs.size(); ++k) {
      float* older = first_older_.data() + int64_t(k) * 2 * im_at;
      sum_products(level, level.outputs[k].older, level.outputs[k].end, false, older,
                   older + im_at);
    }
  }
}

inline void StreamConvolverMatrix::run_steps(Level& level, int64_t end, int64_t into) noexcept {
  const int64_t size = level.size, half = size / 2;
  const int64_t im_at     = size + kPad;  // of a spectrum's imaginary parts
  const Twiddles<float> w = twiddles_of(twiddles_);
  const int64_t n_inputs  = int64_t(level.inputs.size());
  // Each input's spectrum of its last 2B samples, into its delay line.
  for (int64_t j = 0; j < n_inputs; ++j) {
    if (level.step_time(j) != into) continue;
    Level::Input& input = level.inputs[size_t(j)];
    input.newest        = (input.newest + 1) % input.depth;
    float* xr           = level.spectra.data() + input.first + 2 * im_at * input.newest;
    const float* in     = inputs_.data() + input.channel * input_ring_;
    for (int64_t part = 0; part < 2; ++part)
      deinterleave(in + ((end - 2 * size + part * size) & (input_ring_ - 1)), xr + part * half,
                   xr + im_at + part * half, half);
    real_forward(xr, xr + im_at, size, w);
  }
  // Each output's products, transformed back.
  float* ar = work_.data();
  float* ai = work_.data() + int64_t(work_.size()) / 2;
  for (int64_t j = n_inputs; j < level.steps(); ++j) {
    if (level.step_time(j) != into) continue;
    const Level::Output& output = level.outputs[size_t(j - n_inputs)];
    sum_products(level, output.first, output.end, false, ar, ai);
    real_inverse(ar, ai, size, w);
    // Overlap-save: the last B of the 2B samples are exact. They are the outputs from
    // end − B + offset on, no earlier than the next sample since this step runs at most
    // offset − B after the end. The ring wraps at a multiple of H (offsets are), so at an even
    // sample.
    float* ring         = outputs_.data() + output.channel * output_ring_;
    const int64_t start = (end - size + level.offset) & (output_ring_ - 1);
    const int64_t pairs = std::min(size, output_ring_ - start) / 2;
    add_interleaved(ar + half, ai + half, ring + start, pairs);
    add_interleaved(ar + half + pairs, ai + half + pairs, ring, half - pairs);
  }
}

namespace {

std::vector<StreamConvolverMatrix::Path> one_path(const std::vector<float>& taps,
                                                  int64_t max_block) {
  if (taps.empty()) throw std::invalid_argument("StreamConvolver: expected at least one tap");
  if (max_block < 1)
    throw std::invalid_argument("StreamConvolver: expected a block of at least one sample, got " +
                                std::to_string(max_block));
  return {{0, 0, taps}};
}

}  // namespace

StreamConvolver::StreamConvolver(const std::vector<float>& taps, int64_t max_block, int64_t phase)
    : length_(int64_t(taps.size())), matrix_(1, 1, one_path(taps, max_block), max_block, phase) {}

}  // namespace grafx::dsp
