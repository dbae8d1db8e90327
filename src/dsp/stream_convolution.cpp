// Non-uniform partitioned convolution for streams: the plan (a cost model, by dynamic
// programming), real FFTs on split arrays that stay in bit-reversed order, and the sample loop.

#include <grafx/dsp/stream_convolution.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace grafx::dsp {
namespace {

constexpr int64_t kBlock            = 64;    // H (measured: 32 and 128 are no faster)
constexpr int64_t kDirectOnly       = 256;   // the longest filter direct form alone may take
constexpr int64_t kLargestPartition = 8192;  // larger: bigger bursts, few products saved
constexpr int64_t kMostPartitions   = 32;    // per level, but the last (plan search bound)

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
// temporary benchmark: a tap in direct form; a level's two transforms of 2B points, per log2(2B);
// what else a level does per sample (windows, output ring); one partition's spectral product.

constexpr double kDirectTap     = 0.07;
constexpr double kTransformLog2 = 0.4;
constexpr double kLevelSample   = 0.6;
constexpr double kProduct       = 0.36;

struct LevelPlan {
  int64_t size, count, offset;
};

double level_cost(int64_t size, int64_t count) {
  return kTransformLog2 * std::log2(double(2 * size)) + kLevelSample + kProduct * double(count);
}

/// The cheapest levels covering taps [block, length): each level's partitions are as large as
/// its first tap allows (larger partitions are cheaper per tap), so what remains to choose is
/// the number of partitions of each level, and the cheapest choices from tap s on depend on s
/// alone. `cost` receives the model cost.
std::vector<LevelPlan> plan_levels(int64_t length, int64_t block, double& cost) {
  const int64_t n = (length + block - 1) / block;  // offsets block·i, i < n, fall inside
  std::vector<double> best(size_t(n + 1), 0.0);
  std::vector<int64_t> choice(size_t(n + 1), 0);
  for (int64_t i = n - 1; i >= 1; --i) {
    const int64_t offset = block * i;
    const int64_t size   = std::min(kLargestPartition, power_of_two_at_most(offset));
    const int64_t last   = (length - offset + size - 1) / size;  // partitions to cover the rest
    best[size_t(i)]      = level_cost(size, last);
    choice[size_t(i)]    = last;
    // Fewer partitions leave the rest to a level of larger ones (never two levels of one size).
    if (size < kLargestPartition)
      for (int64_t count = 1; count < last && count <= kMostPartitions; ++count) {
        const double c = level_cost(size, count) + best[size_t((offset + count * size) / block)];
        if (c < best[size_t(i)]) best[size_t(i)] = c, choice[size_t(i)] = count;
      }
  }
  cost = best[1];
  std::vector<LevelPlan> levels;
  for (int64_t offset = block; offset < length;) {
    const int64_t size  = std::min(kLargestPartition, power_of_two_at_most(offset));
    const int64_t count = choice[size_t(offset / block)];
    levels.push_back({size, count, offset});
    offset += count * size;
  }
  return levels;
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

/// `Twiddles` for transforms of up to m complex points in one table (computed in double).
template <typename T>
Twiddles<T> fill_twiddles(int64_t m, std::vector<T>& table) {
  table.assign(size_t(6 * m), T(0));
  T* t = table.data();
  const Twiddles<T> w{t, t + m, t + 2 * m, t + 3 * m, t + 4 * m, t + 5 * m};
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
  return w;
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
/// parts then m imaginary parts. Two products a pass halve the loads and stores of a.
template <bool kAccumulate, bool kPair>
void multiply(const float* __restrict x, const float* __restrict g, const float* __restrict u,
              const float* __restrict v, float* __restrict ar, float* __restrict ai, int64_t m) {
  // Bin 0 holds X[0]·G[0] and X[m]·G[m], both real.
  const float r0  = x[0] * g[0] + (kPair ? u[0] * v[0] : 0.0f);
  const float i0  = x[m] * g[m] + (kPair ? u[m] * v[m] : 0.0f);
  ar[0]           = kAccumulate ? ar[0] + r0 : r0;
  ai[0]           = kAccumulate ? ai[0] + i0 : i0;
  const float *xi = x + m, *gi = g + m, *ui = u + m, *vi = v + m;
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

}  // namespace

StreamConvolver::StreamConvolver(const std::vector<float>& taps, int64_t max_block)
    : length_(int64_t(taps.size())), max_block_(max_block) {
  if (taps.empty()) throw std::invalid_argument("StreamConvolver: expected at least one tap");
  if (max_block < 1)
    throw std::invalid_argument("StreamConvolver: expected a block of at least one sample, got " +
                                std::to_string(max_block));
  // Direct form alone, or the first kBlock taps in direct form and levels, whichever is cheaper.
  double levels_cost = 0;
  std::vector<LevelPlan> levels =
      length_ > kBlock ? plan_levels(length_, kBlock, levels_cost) : std::vector<LevelPlan>();
  if (length_ <= kDirectOnly &&
      kDirectTap * double(length_) <= kDirectTap * double(kBlock) + levels_cost)
    levels.clear();
  head_ = levels.empty() ? length_ : kBlock;
  head_taps_.assign(taps.begin(), taps.begin() + head_);
  head_input_.assign(size_t(head_ - 1 + kBlock), 0.0f);
  if (levels.empty()) return;

  int64_t largest = 0, reach = 0;
  for (const LevelPlan& p : levels)
    largest = std::max(largest, p.size), reach = std::max(reach, p.offset + p.size);
  inputs_.assign(size_t(2 * largest), 0.0f);
  outputs_.assign(size_t(std::max(kBlock, power_of_two_at_least(reach))), 0.0f);
  work_re_.assign(size_t(largest), 0.0f);
  work_im_.assign(size_t(largest), 0.0f);
  work_time_.assign(size_t(largest), 0.0f);
  fill_twiddles(largest, twiddles_);

  // The partitions' spectra, in double, scaled by 1/(2B) for the unnormalised inverse.
  std::vector<double> table;
  const Twiddles<double> w = fill_twiddles(largest, table);
  std::vector<double> re(static_cast<size_t>(largest)), im(static_cast<size_t>(largest));
  for (const LevelPlan& p : levels) {
    Level& level = levels_.emplace_back();
    level.size = p.size, level.count = p.count, level.offset = p.offset;
    level.filters.assign(size_t(2 * p.size * p.count), 0.0f);
    level.inputs.assign(size_t(2 * p.size * p.count), 0.0f);
    for (int64_t i = 0; i < p.count; ++i) {
      std::fill(re.begin(), re.end(), 0.0), std::fill(im.begin(), im.end(), 0.0);
      const int64_t first = p.offset + i * p.size, end = std::min(length_, first + p.size);
      for (int64_t k = first; k < end; ++k)
        ((k - first) % 2 ? im : re)[size_t((k - first) / 2)] = taps[size_t(k)];
      real_forward(re.data(), im.data(), p.size, w);
      float* spectrum = level.filters.data() + 2 * p.size * i;
      for (int64_t b = 0; b < p.size; ++b) {
        spectrum[b]          = float(re[size_t(b)] / double(2 * p.size));
        spectrum[p.size + b] = float(im[size_t(b)] / double(2 * p.size));
      }
    }
  }
}

void StreamConvolver::reset() noexcept {
  time_ = 0;
  std::fill(head_input_.begin(), head_input_.end(), 0.0f);
  std::fill(inputs_.begin(), inputs_.end(), 0.0f);
  std::fill(outputs_.begin(), outputs_.end(), 0.0f);
  for (Level& level : levels_) {
    level.newest = 0;
    std::fill(level.inputs.begin(), level.inputs.end(), 0.0f);
  }
}

void StreamConvolver::process(const float* input, float* output, int64_t n) noexcept {
  // Chunks end at multiples of H, where the levels whose blocks are complete run. A level's
  // contributions to the outputs of a chunk were added to `outputs_` at or before its start.
  const int64_t in_mask = int64_t(inputs_.size()) - 1, out_mask = int64_t(outputs_.size()) - 1;
  while (n > 0) {
    const int64_t at = time_ % kBlock, count = std::min(n, kBlock - at);
    float* x = head_input_.data() + (head_ - 1) + at;
    std::memcpy(x, input, size_t(count) * sizeof(float));
    // The direct-form sum first, the levels' (larger) sum added once: fewer roundings at its
    // magnitude.
    std::fill(output, output + count, 0.0f);
    direct_form(head_taps_.data(), head_, x, output, count);
    if (!levels_.empty()) {
      std::memcpy(inputs_.data() + (time_ & in_mask), input, size_t(count) * sizeof(float));
      float* pending = outputs_.data() + (time_ & out_mask);
      for (int64_t i = 0; i < count; ++i) output[i] += pending[i];
      std::fill(pending, pending + count, 0.0f);
    }
    time_ += count, input += count, output += count, n -= count;
    if (at + count < kBlock) continue;
    std::memmove(head_input_.data(), head_input_.data() + kBlock,
                 size_t(head_ - 1) * sizeof(float));
    for (Level& level : levels_)
      if (time_ % level.size == 0) run_level(level);
  }
}

void StreamConvolver::run_level(Level& level) noexcept {
  const int64_t size = level.size, half = size / 2, in_mask = int64_t(inputs_.size()) - 1;
  const int64_t m = int64_t(twiddles_.size()) / 6;
  const float* t  = twiddles_.data();
  const Twiddles<float> w{t, t + m, t + 2 * m, t + 3 * m, t + 4 * m, t + 5 * m};
  // The spectrum of the last 2B inputs, into the delay line.
  level.newest = (level.newest + 1) % level.count;
  float* xr    = level.inputs.data() + 2 * size * level.newest;
  float* xi    = xr + size;
  for (int64_t part = 0; part < 2; ++part) {
    const float* from = inputs_.data() + ((time_ - 2 * size + part * size) & in_mask);
    for (int64_t i = 0; i < half; ++i) xr[part * half + i] = from[2 * i];
    for (int64_t i = 0; i < half; ++i) xi[part * half + i] = from[2 * i + 1];
  }
  real_forward(xr, xi, size, w);
  // Partition i meets the spectrum of i blocks ago.
  float* ar           = work_re_.data();
  float* ai           = work_im_.data();
  const auto spectrum = [&](int64_t i) {
    return level.inputs.data() + 2 * size * ((level.newest - i + level.count) % level.count);
  };
  const auto filter = [&](int64_t i) { return level.filters.data() + 2 * size * i; };
  for (int64_t i = 0; i < level.count; i += 2) {
    const float *x = spectrum(i), *g = filter(i);
    if (i + 1 == level.count)
      (i == 0 ? multiply<false, false> : multiply<true, false>)(x, g, x, g, ar, ai, size);
    else
      (i == 0 ? multiply<false, true> : multiply<true, true>)(x, g, spectrum(i + 1), filter(i + 1),
                                                              ar, ai, size);
  }
  real_inverse(ar, ai, size, w);
  // Overlap-save: the last B of the 2B samples are exact. They are the outputs from
  // time − B + offset on, no earlier than the next sample since offset ≥ B.
  float* y = work_time_.data();
  for (int64_t i = 0; i < half; ++i) y[2 * i] = ar[half + i], y[2 * i + 1] = ai[half + i];
  const int64_t mask = int64_t(outputs_.size()) - 1, start = (time_ - size + level.offset) & mask;
  const int64_t first = std::min(size, mask + 1 - start);
  float* out          = outputs_.data();
  for (int64_t i = 0; i < first; ++i) out[start + i] += y[i];
  for (int64_t i = first; i < size; ++i) out[i - first] += y[i];
}

}  // namespace grafx::dsp
