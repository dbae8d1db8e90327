// The streaming convolver against a direct convolution in double: filters of 1 to 96,000 taps,
// fed in blocks of fixed and random sizes, pure delays, and reset; then the matrix of paths
// between channels (full, diagonal, mono to stereo, paths of 1 to 30,001 taps together); then
// phases, which shift the partitions' blocks and leave the output as it was, and the steps of
// levels with time to spare, spread over it.

#include <grafx/stream/convolution.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace grafx::dsp {
namespace {

std::vector<float> noise(int64_t n, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = uniform(generator);
  return x;
}

/// Σ_k h[k]·x[n − k] in double (four partial sums: the loop is the test's bottleneck).
double direct(const std::vector<float>& h, const std::vector<float>& x, int64_t n) {
  const int64_t last = std::min<int64_t>(int64_t(h.size()) - 1, n);
  double s[4]        = {0, 0, 0, 0};
  int64_t k          = 0;
  for (; k + 3 <= last; k += 4)
    for (int64_t j = 0; j < 4; ++j) s[j] += double(h[size_t(k + j)]) * double(x[size_t(n - k - j)]);
  for (; k <= last; ++k) s[0] += double(h[size_t(k)]) * double(x[size_t(n - k)]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/// Output samples to check: all of them where that is cheap; otherwise the first 2,048, those
/// next to the partition boundaries (multiples of 64) and every 37th.
std::vector<int64_t> checked_samples(int64_t taps, int64_t samples) {
  std::vector<int64_t> at;
  for (int64_t n = 0; n < samples; ++n) {
    const int64_t r = n % 64;
    if (taps * samples <= 200'000'000 || n < 2048 || r == 0 || r == 1 || r == 63 || n % 37 == 0)
      at.push_back(n);
  }
  return at;
}

/// Block sizes covering `samples`: all `block`, or random in [1, block] (block < 0).
std::vector<int64_t> block_sizes(int64_t samples, int64_t block, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int64_t> size(1, std::abs(block));
  std::vector<int64_t> sizes;
  for (int64_t done = 0; done < samples;) {
    sizes.push_back(std::min(samples - done, block > 0 ? block : size(generator)));
    done += sizes.back();
  }
  return sizes;
}

std::vector<float> run(StreamConvolver& convolver, const std::vector<float>& x,
                       const std::vector<int64_t>& sizes) {
  std::vector<float> y(x.size(), std::nanf(""));
  int64_t done = 0;
  for (int64_t n : sizes) {
    convolver.process(x.data() + done, y.data() + done, n);
    done += n;
  }
  return y;
}

TEST(StreamConvolver, EqualsDirectConvolutionForEveryBlockSequence) {
  // Long filters get signals long enough to reach every tap and to pass several blocks of the
  // largest partitions (8192 samples).
  for (int64_t taps : {1, 2, 63, 64, 65, 128, 129, 257, 1000, 2047, 5000, 30001, 96000}) {
    const int64_t samples         = taps <= 5000 ? 20000 : taps + 3 * 8192;
    const std::vector<float> h    = noise(taps, uint32_t(taps));
    const std::vector<float> x    = noise(samples, uint32_t(taps) + 1);
    const std::vector<int64_t> at = checked_samples(taps, samples);
    std::vector<double> expected(at.size());
    double peak = 0;
    for (size_t i = 0; i < at.size(); ++i)
      expected[i] = direct(h, x, at[i]), peak = std::max(peak, std::abs(expected[i]));
    for (int64_t block : {1, 7, 64, 512, 4096, -777}) {
      StreamConvolver convolver(h, std::abs(block));
      EXPECT_EQ(convolver.length(), taps);
      const std::vector<float> y = run(convolver, x, block_sizes(samples, block, uint32_t(taps)));
      double error               = 0;
      for (size_t i = 0; i < at.size(); ++i)
        error = std::max(error, std::abs(double(y[size_t(at[i])]) - expected[i]));
      EXPECT_LE(error, 1e-6 * peak) << taps << " taps, blocks " << block << ": " << error / peak;
      // The samples not compared with the direct sum are finite (all were written).
      EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }));
    }
  }
}

TEST(StreamConvolver, DelaysWithoutLatency) {
  // A unit impulse at tap d anywhere in the filter, in the direct part or in a partition of any
  // level, at either end: y[n] = x[n − d].
  const int64_t taps = 96000, samples = taps + 8192;
  const std::vector<float> x        = noise(samples, 5);
  const std::vector<int64_t> delays = {0, 63, 64, 65, 511, 512, 4095, 8192, 50000, taps - 1};
  for (int64_t d : delays) {
    std::vector<float> h(size_t(taps), 0.0f);
    h[size_t(d)] = 1.0f;
    StreamConvolver convolver(h, 512);
    const std::vector<float> y = run(convolver, x, block_sizes(samples, -512, uint32_t(d)));
    double error               = 0;
    for (int64_t n = 0; n < samples; ++n)
      error = std::max(error, std::abs(double(y[size_t(n)]) - (n >= d ? x[size_t(n - d)] : 0.0)));
    EXPECT_LE(error, 1e-6) << "delay " << d;
  }
}

/// A multitap delay's response: in each of 20 segments of 4,800 taps, a coloured tap (39
/// non-zero taps) at a random place; zeros elsewhere, or `floor` (a dense response as costly
/// as any other).
std::vector<float> coloured_taps(uint32_t seed, float floor = 0.0f) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int64_t> place(0, 4800 - 39);
  std::vector<float> h(96000, floor);
  const std::vector<float> colour = noise(20 * 39, seed + 1);
  for (int64_t s = 0; s < 20; ++s) {
    const int64_t at = s * 4800 + place(generator);
    std::copy(colour.begin() + s * 39, colour.begin() + (s + 1) * 39, h.begin() + at);
  }
  return h;
}

TEST(StreamConvolver, SparseResponsesSkipTheirZeroPartitions) {
  // Partitions of zeros cost nothing, so the plan takes small ones; the output is still the
  // direct convolution's, and as close as a dense response's.
  const int64_t samples         = 96000 + 3 * 8192;
  const std::vector<float> x    = noise(samples, 31);
  const std::vector<int64_t> at = checked_samples(96000, samples);
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<float> h = coloured_taps(seed);
    std::vector<double> expected(at.size());
    double peak = 0;
    for (size_t i = 0; i < at.size(); ++i)
      expected[i] = direct(h, x, at[i]), peak = std::max(peak, std::abs(expected[i]));
    for (int64_t block : {1, 64, 512, -777}) {
      StreamConvolver convolver(h, std::abs(block));
      const std::vector<float> y = run(convolver, x, block_sizes(samples, block, seed));
      double error               = 0;
      for (size_t i = 0; i < at.size(); ++i)
        error = std::max(error, std::abs(double(y[size_t(at[i])]) - expected[i]));
      EXPECT_LE(error, 1e-6 * peak) << "seed " << seed << ", blocks " << block;
    }
    // 20 taps of 39 lie in 20 to 40 runs of 64 taps; the same response without its zeros
    // (a floor far below float32's resolution of it) has the dense plan.
    const int64_t sparse = StreamConvolver(h, 512).partition_products(),
                  dense  = StreamConvolver(coloured_taps(seed, 1e-12f), 512).partition_products();
    EXPECT_LE(sparse, 40) << "seed " << seed;
    EXPECT_GT(dense, 25) << "seed " << seed;
    std::cout << "seed " << seed << ": " << sparse << " products a sample, " << dense << " dense\n";
  }
  // All zeros: no products, zeros out.
  StreamConvolver silent(std::vector<float>(5000, 0.0f), 64);
  EXPECT_EQ(silent.partition_products(), 0);
  std::vector<float> y = run(silent, x, block_sizes(20000, 64, 3));
  EXPECT_TRUE(std::all_of(y.begin(), y.begin() + 20000, [](float v) { return v == 0.0f; }));
}

TEST(StreamConvolver, LevelsWithTimeToSpareSpreadTheirSteps) {
  // A multitap delay's levels start later than their partitions' size (the first taps are
  // zeros): the steps of such a level (each input's transform, each output's products and
  // inverse transform) run spread over the samples in between, not all at a block's end. The
  // output is still the direct convolution's at any phase, and set_phase on a used convolver
  // is the constructor's phase, to the bit.
  const int64_t samples      = 96000 + 3 * 8192;
  const std::vector<float> h = coloured_taps(3), x = noise(samples, 41);
  const std::vector<int64_t> at = checked_samples(96000, samples);
  std::vector<double> expected(at.size());
  double peak = 0;
  for (size_t i = 0; i < at.size(); ++i)
    expected[i] = direct(h, x, at[i]), peak = std::max(peak, std::abs(expected[i]));
  std::map<int64_t, std::set<int64_t>> offsets;  // of the steps, per level
  for (const auto& run : StreamConvolver(h, 64).level_runs()) {
    EXPECT_GE(run.offset, 0);
    EXPECT_LT(run.offset, run.period);
    EXPECT_EQ(run.offset % 64, 0);
    EXPECT_GT(run.nanoseconds, 0);
    offsets[run.period].insert(run.offset);
  }
  EXPECT_TRUE(std::any_of(offsets.begin(), offsets.end(),
                          [](const auto& level) { return level.second.size() > 1; }));
  for (int64_t phase : {0, 1000, 20032})
    for (int64_t block : {1, 64, -777}) {
      const std::vector<int64_t> sizes = block_sizes(samples, block, uint32_t(phase));
      StreamConvolver fresh(h, std::abs(block), phase), reused(h, std::abs(block));
      run(reused, x, block_sizes(5000, block, 5));
      reused.set_phase(phase);
      EXPECT_EQ(reused.phase(), phase);
      const std::vector<float> y = run(fresh, x, sizes);
      EXPECT_EQ(run(reused, x, sizes), y) << "phase " << phase << ", blocks " << block;
      double error = 0;
      for (size_t i = 0; i < at.size(); ++i)
        error = std::max(error, std::abs(double(y[size_t(at[i])]) - expected[i]));
      EXPECT_LE(error, 1e-6 * peak) << "phase " << phase << ", blocks " << block;
    }
}

TEST(StreamConvolver, ResetEqualsAFreshConvolver) {
  for (int64_t taps : {65, 2047, 30001}) {
    const std::vector<float> h = noise(taps, 11), before = noise(12345, 12),
                             x       = noise(taps + 10000, 13);
    const std::vector<int64_t> sizes = block_sizes(int64_t(x.size()), -300, 14);
    StreamConvolver fresh(h, 300), reused(h, 300);
    run(reused, before, block_sizes(int64_t(before.size()), -300, 15));
    reused.reset();
    EXPECT_EQ(run(reused, x, sizes), run(fresh, x, sizes)) << taps << " taps";
  }
}

TEST(StreamConvolver, AnyPhaseEqualsDirectConvolution) {
  const int64_t taps = 30001, samples = taps + 3 * 8192;
  const std::vector<float> h = noise(taps, 21), x = noise(samples, 22);
  const std::vector<int64_t> at = checked_samples(taps, samples);
  std::vector<double> expected(at.size());
  double peak = 0;
  for (size_t i = 0; i < at.size(); ++i)
    expected[i] = direct(h, x, at[i]), peak = std::max(peak, std::abs(expected[i]));
  for (int64_t phase : {1, 1000, 32767, -5})
    for (int64_t block : {64, -777}) {
      StreamConvolver convolver(h, std::abs(block), phase);
      EXPECT_EQ(convolver.phase(), phase);
      EXPECT_EQ(convolver.largest_partition(), 4096);
      const std::vector<float> y = run(convolver, x, block_sizes(samples, block, uint32_t(phase)));
      double error               = 0;
      for (size_t i = 0; i < at.size(); ++i)
        error = std::max(error, std::abs(double(y[size_t(at[i])]) - expected[i]));
      EXPECT_LE(error, 1e-6 * peak) << "phase " << phase << ", blocks " << block;
    }
}

TEST(StreamConvolver, ProcessesEmptyBlocksAndRejectsBadArguments) {
  StreamConvolver convolver({0.5f, 0.25f}, 4);
  const float x[3] = {1, 2, 3};
  float y[3]       = {0, 0, 0};
  convolver.process(x, y, 0);
  convolver.process(x, y, 1);
  convolver.process(x + 1, y + 1, 0);
  convolver.process(x + 1, y + 1, 2);
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{0.5f, 1.25f, 2.0f}));
  EXPECT_EQ(convolver.max_block(), 4);
  EXPECT_THROW(StreamConvolver({}, 64), std::invalid_argument);
  EXPECT_THROW(StreamConvolver({1.0f}, 0), std::invalid_argument);
}

// ---- the matrix ----------------------------------------------------------------------------

using Path     = StreamConvolverMatrix::Path;
using Channels = std::vector<std::vector<float>>;

/// The outputs of `matrix` for the inputs `x`, fed in blocks of `sizes`.
Channels run(StreamConvolverMatrix& matrix, const Channels& x, const std::vector<int64_t>& sizes) {
  Channels y(size_t(matrix.n_outputs()), std::vector<float>(x.front().size(), std::nanf("")));
  std::vector<const float*> in(x.size());
  std::vector<float*> out(y.size());
  int64_t done = 0;
  for (int64_t n : sizes) {
    for (size_t i = 0; i < x.size(); ++i) in[i] = x[i].data() + done;
    for (size_t o = 0; o < y.size(); ++o) out[o] = y[o].data() + done;
    matrix.process(in.data(), out.data(), n);
    done += n;
  }
  return y;
}

/// Paths of the given lengths between the given channels, each a different noise.
std::vector<Path> noise_paths(const std::vector<std::array<int64_t, 3>>& input_output_taps) {
  std::vector<Path> paths;
  for (const auto& [input, output, taps] : input_output_taps)
    paths.push_back({input, output, noise(taps, uint32_t(taps + 100 * paths.size()))});
  return paths;
}

/// Each output against the sum of its paths' direct convolutions, for each phase and each block
/// sequence (blocks of a size, or random ones up to −size); an output without paths is exactly
/// zero. After random blocks, the matrix is reset and gives the same outputs again.
void expect_direct_sums(int64_t n_inputs, int64_t n_outputs, const std::vector<Path>& paths,
                        int64_t samples,
                        const std::vector<int64_t>& blocks = {1, 7, 64, 512, 4096, -777},
                        const std::vector<int64_t>& phases = {0}) {
  int64_t longest = 0;
  for (const Path& p : paths) longest = std::max(longest, int64_t(p.taps.size()));
  Channels x;
  for (int64_t i = 0; i < n_inputs; ++i) x.push_back(noise(samples, uint32_t(1000 + i)));
  const std::vector<int64_t> at = checked_samples(longest * int64_t(paths.size()), samples);
  std::vector<std::vector<double>> expected(size_t(n_outputs), std::vector<double>(at.size()));
  std::vector<double> peak(size_t(n_outputs), 0.0);
  for (const Path& p : paths)
    for (size_t i = 0; i < at.size(); ++i)
      expected[size_t(p.output)][i] += direct(p.taps, x[size_t(p.input)], at[i]);
  for (int64_t o = 0; o < n_outputs; ++o)
    for (double v : expected[size_t(o)]) peak[size_t(o)] = std::max(peak[size_t(o)], std::abs(v));
  for (int64_t phase : phases)
    for (int64_t block : blocks) {
      StreamConvolverMatrix matrix(n_inputs, n_outputs, paths, std::abs(block), phase);
      EXPECT_EQ(matrix.n_inputs(), n_inputs);
      EXPECT_EQ(matrix.n_outputs(), n_outputs);
      EXPECT_EQ(matrix.phase(), phase);
      const std::vector<int64_t> sizes = block_sizes(samples, block, uint32_t(longest));
      const Channels y                 = run(matrix, x, sizes);
      for (int64_t o = 0; o < n_outputs; ++o) {
        const std::vector<float>& yo = y[size_t(o)];
        if (peak[size_t(o)] == 0) {
          EXPECT_TRUE(std::all_of(yo.begin(), yo.end(), [](float v) { return v == 0.0f; }))
              << "output " << o << ", blocks " << block << ", phase " << phase;
          continue;
        }
        double error = 0;
        for (size_t i = 0; i < at.size(); ++i)
          error = std::max(error, std::abs(double(yo[size_t(at[i])]) - expected[size_t(o)][i]));
        EXPECT_LE(error, 1e-6 * peak[size_t(o)])
            << longest << " taps, output " << o << ", blocks " << block << ", phase " << phase
            << ": " << error / peak[size_t(o)];
        EXPECT_TRUE(std::all_of(yo.begin(), yo.end(), [](float v) { return std::isfinite(v); }));
      }
      if (block > 0) continue;
      // Another signal, stopped inside blocks of every level, then forgotten.
      Channels other;
      for (int64_t i = 0; i < n_inputs; ++i) other.push_back(noise(12345, uint32_t(2000 + i)));
      run(matrix, other, block_sizes(12345, block, 17));
      matrix.reset();
      EXPECT_EQ(run(matrix, x, sizes), y) << "reset, phase " << phase;
    }
}

TEST(StreamConvolverMatrix, FullTwoByTwoEqualsDirectSums) {
  // A pseudo mid/side reverb: four different filters. The signals pass several blocks of the
  // largest partitions (16384 samples for 96,000 taps).
  for (int64_t taps : {30001, 96000})
    expect_direct_sums(2, 2, noise_paths({{0, 0, taps}, {0, 1, taps}, {1, 0, taps}, {1, 1, taps}}),
                       taps + 3 * 8192);
}

TEST(StreamConvolverMatrix, DiagonalAndMonoToStereoEqualDirectSums) {
  expect_direct_sums(2, 2, noise_paths({{0, 0, 30001}, {1, 1, 30001}}), 30001 + 3 * 8192);
  expect_direct_sums(1, 2, noise_paths({{0, 0, 30001}, {0, 1, 30001}}), 30001 + 3 * 8192);
}

TEST(StreamConvolverMatrix, PathsOfDifferentLengthsShareTheLevels) {
  // 1 tap, a head and one tap in the levels, direct form alone beyond the head (150),
  // shorter and longer than the second level; two paths between the same channels add up;
  // input 2 and output 1 have no paths.
  expect_direct_sums(
      3, 3,
      noise_paths({{0, 0, 30001}, {1, 0, 1}, {0, 2, 65}, {1, 2, 2047}, {1, 2, 150}, {0, 0, 300}}),
      30001 + 3 * 8192);
}

TEST(StreamConvolverMatrix, CallsOfManySamplesTakeAFirstLevel) {
  // Planned for calls of 512 samples, a stereo EQ's 2,047 taps are 4 partitions of 512 from tap
  // 0 on, recomputed in each call (8 products a sample); planned for calls of 64, a head of 64
  // taps in direct form and levels of 64 and 256 (20 products). Calls of other sizes than
  // planned, smaller or not aligned on its blocks, give the same convolution.
  const std::vector<Path> paths = noise_paths({{0, 0, 2047}, {1, 1, 2047}});
  EXPECT_EQ(StreamConvolverMatrix(2, 2, paths, 512).partition_products(), 8);
  EXPECT_EQ(StreamConvolverMatrix(2, 2, paths, 64).partition_products(), 20);
  const int64_t samples         = 20000;
  const Channels x              = {noise(samples, 21), noise(samples, 22)};
  const std::vector<int64_t> at = checked_samples(2047, samples);
  for (const std::vector<int64_t>& sizes :
       {block_sizes(samples, 7, 1), block_sizes(samples, 500, 2), block_sizes(samples, -4096, 3)}) {
    StreamConvolverMatrix matrix(2, 2, paths, 4096);
    const Channels y = run(matrix, x, sizes);
    for (size_t o = 0; o < 2; ++o) {
      double peak = 0, error = 0;
      for (int64_t t : at) {
        const double expected = direct(paths[o].taps, x[o], t);
        peak                  = std::max(peak, std::abs(expected));
        error                 = std::max(error, std::abs(double(y[o][size_t(t)]) - expected));
      }
      EXPECT_LE(error, 1e-6 * peak) << "calls of " << sizes[0] << ", output " << o;
    }
  }
}

TEST(StreamConvolverMatrix, ResetEqualsAFreshMatrix) {
  const std::vector<Path> paths =
      noise_paths({{0, 0, 65}, {0, 1, 2047}, {1, 0, 30001}, {1, 1, 150}});
  const Channels before            = {noise(12345, 12), noise(12345, 13)};
  const Channels x                 = {noise(40000, 14), noise(40000, 15)};
  const std::vector<int64_t> sizes = block_sizes(40000, -300, 16);
  StreamConvolverMatrix fresh(2, 2, paths, 300), reused(2, 2, paths, 300);
  run(reused, before, block_sizes(12345, -300, 17));
  reused.reset();
  EXPECT_EQ(run(reused, x, sizes), run(fresh, x, sizes));
}

TEST(StreamConvolverMatrix, AnyPhaseEqualsDirectSums) {
  // The phases move the levels' blocks anywhere within the largest (16384 samples for 96,000
  // taps, on a signal that passes three of their ends whatever the phase; 4096 for 30,001).
  std::mt19937_64 generator(2024);
  const int64_t random =
      std::uniform_int_distribution<int64_t>(-(int64_t(1) << 40), int64_t(1) << 40)(generator);
  const std::vector<int64_t> phases = {0, 1, 63, 1000, 32767, random};
  for (int64_t taps : {30001, 96000})
    expect_direct_sums(2, 2, noise_paths({{0, 0, taps}, {0, 1, taps}, {1, 0, taps}, {1, 1, taps}}),
                       taps == 30001 ? taps + 3 * 8192 : 50000, {1, 64, 512, -777}, phases);
  // The period over which to spread phases (the plans in the header's comment).
  EXPECT_EQ(StreamConvolverMatrix(
                2, 2, noise_paths({{0, 0, 96000}, {0, 1, 96000}, {1, 0, 96000}, {1, 1, 96000}}), 64)
                .largest_partition(),
            16384);
  EXPECT_EQ(StreamConvolverMatrix(2, 2, noise_paths({{0, 0, 96000}, {1, 1, 96000}}), 64)
                .largest_partition(),
            8192);
  EXPECT_EQ(StreamConvolverMatrix(1, 1, noise_paths({{0, 0, 150}}), 64).largest_partition(), 0);
}

TEST(StreamConvolverMatrix, APhaseIsSilenceBeforeTheStream) {
  // Phase 0 is the matrix without a phase, so are multiples of 32768 (the largest partition),
  // to the bit, and phase φ is a matrix of phase 0 that was fed φ zeros first: to the bit where
  // the plan has no first level (calls of one sample), within roundings where it has one
  // (calls of 300 samples: its blocks, aligned on the stream, fall elsewhere in the signal).
  const std::vector<Path> paths =
      noise_paths({{0, 0, 65}, {0, 1, 2047}, {1, 0, 30001}, {1, 1, 150}});
  const Channels x = {noise(40000, 14), noise(40000, 15)};
  for (int64_t max_block : {1, 300}) {
    const std::vector<int64_t> sizes = block_sizes(40000, -max_block, 16);
    StreamConvolverMatrix plain(2, 2, paths, max_block);
    const Channels y = run(plain, x, sizes);
    for (int64_t phase : {int64_t(0), int64_t(32768), int64_t(-32768), int64_t(32768) << 20}) {
      StreamConvolverMatrix shifted(2, 2, paths, max_block, phase);
      EXPECT_EQ(run(shifted, x, sizes), y) << "phase " << phase << ", calls of " << max_block;
    }
    for (int64_t phase : {1, 63, 1000, 32767}) {
      StreamConvolverMatrix shifted(2, 2, paths, max_block, phase), delayed(2, 2, paths, max_block);
      const Channels silence(2, std::vector<float>(size_t(phase), 0.0f));
      run(delayed, silence, block_sizes(phase, -max_block, 18));
      const Channels a = run(shifted, x, sizes), b = run(delayed, x, sizes);
      if (max_block == 1) {
        EXPECT_EQ(a, b) << "phase " << phase;
        continue;
      }
      for (size_t o = 0; o < 2; ++o) {
        double peak = 0, error = 0;
        for (size_t t = 0; t < a[o].size(); ++t)
          peak  = std::max(peak, std::abs(double(b[o][t]))),
          error = std::max(error, std::abs(double(a[o][t]) - double(b[o][t])));
        EXPECT_LE(error, 1e-6 * peak) << "phase " << phase << ", output " << o;
      }
    }
  }
}

TEST(StreamConvolverMatrix, ProcessesEmptyBlocksAndRejectsBadArguments) {
  StreamConvolverMatrix matrix(1, 2, {{0, 1, {0.5f, 0.25f}}}, 4);
  const float x[3] = {1, 2, 3};
  float y0[3] = {9, 9, 9}, y1[3] = {9, 9, 9};
  const float* in[1] = {x};
  float* out[2]      = {y0, y1};
  matrix.process(in, out, 0);
  matrix.process(in, out, 3);
  EXPECT_EQ(std::vector<float>(y0, y0 + 3), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(std::vector<float>(y1, y1 + 3), (std::vector<float>{0.5f, 1.25f, 2.0f}));
  EXPECT_EQ(matrix.max_block(), 4);
  EXPECT_THROW(StreamConvolverMatrix(1, 1, {{0, 1, {1.0f}}}, 4), std::invalid_argument);
  EXPECT_THROW(StreamConvolverMatrix(1, 1, {{1, 0, {1.0f}}}, 4), std::invalid_argument);
  EXPECT_THROW(StreamConvolverMatrix(1, 1, {{-1, 0, {1.0f}}}, 4), std::invalid_argument);
  EXPECT_THROW(StreamConvolverMatrix(1, 1, {{0, 0, {}}}, 4), std::invalid_argument);
  EXPECT_THROW(StreamConvolverMatrix(1, 1, {{0, 0, {1.0f}}}, 0), std::invalid_argument);
  EXPECT_THROW(StreamConvolverMatrix(-1, 1, {}, 4), std::invalid_argument);
}

}  // namespace
}  // namespace grafx::dsp
