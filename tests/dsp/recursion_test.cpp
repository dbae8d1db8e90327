// The recursions against plain loops and against direct convolution with their impulse
// responses; their hand-written adjoints against finite differences in float64.

#include <grafx/dsp/convolution.h>
#include <grafx/dsp/recursion.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace grafx::dsp {
namespace {

using testing::expect_gradients_match;

double max_error(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

TEST(OnePole, EqualsDirectConvolutionWithItsImpulseResponse) {
  at::manual_seed(1);
  int64_t length   = 3000;
  at::Tensor x     = at::randn({3, 2, length}, at::kDouble);
  at::Tensor alpha = at::rand({3, 2}, at::kDouble) * 0.999;
  // h[n] = (1 − α)·α^n, as long as the signal: the truncation GRAFX makes is then exact.
  at::Tensor n        = at::arange(length, at::kDouble);
  at::Tensor h        = (1 - alpha).unsqueeze(-1) * alpha.unsqueeze(-1).pow(n);
  at::Tensor expected = fft_convolve(x, h, ConvolutionMode::kCausal);
  EXPECT_LT(max_error(one_pole(x, alpha), expected), 1e-12);
  EXPECT_LT(max_error(reference::one_pole(x, alpha), expected), 1e-12);
  EXPECT_LT(max_error(one_pole(x.to(at::kFloat), alpha.to(at::kFloat)), expected), 1e-5);
}

TEST(Ballistics, EqualsThePlainLoopInFloat32AndFloat64) {
  at::manual_seed(2);
  at::Tensor x    = at::rand({37, 2000}, at::kDouble);  // many rows: the parallel loop
  at::Tensor rise = at::rand({37}, at::kDouble), fall = at::rand({37}, at::kDouble) * 0.2 + 0.8;
  at::Tensor initial  = at::rand({37}, at::kDouble);
  at::Tensor expected = reference::ballistics(x, rise, fall, initial);
  EXPECT_LT(max_error(ballistics(x, rise, fall, initial), expected), 1e-14);
  at::Tensor y32 = ballistics(x.to(at::kFloat), rise.to(at::kFloat), fall.to(at::kFloat),
                              initial.to(at::kFloat));
  EXPECT_EQ(y32.scalar_type(), at::kFloat);
  EXPECT_LT(max_error(y32, expected), 1e-4);  // a float branch may flip where x ≈ y
  // Equal coefficients make it the one-pole smoother.
  EXPECT_LT(max_error(ballistics(x, rise, rise, at::zeros_like(rise)), one_pole(x, rise)), 1e-14);
}

TEST(Ballistics, OnARisingInputIsTheAttackOnePole) {
  at::Tensor ramp   = at::arange(1, 501, at::kDouble).view({1, 500});  // always above the state
  at::Tensor attack = at::full({1}, 0.9, at::kDouble), release = at::full({1}, 0.999, at::kDouble);
  EXPECT_LT(max_error(ballistics(ramp, attack, release, at::zeros({1}, at::kDouble)),
                      one_pole(ramp, attack)),
            1e-12);
  // Falling from a high initial value toward silence: the release one-pole, plus the decay of y0.
  at::Tensor silence = at::zeros({1, 500}, at::kDouble);
  at::Tensor y       = ballistics(silence, attack, release, at::full({1}, 2.0, at::kDouble));
  EXPECT_NEAR(y[0][499].item<double>(), 2.0 * std::pow(0.999, 500), 1e-12);
}

TEST(LinearRecurrence, PerSampleCoefficientsAndBothDirections) {
  at::manual_seed(3);
  at::Tensor x = at::randn({4, 300}, at::kDouble), a = at::rand({4, 300}, at::kDouble);
  at::Tensor initial  = at::randn({4}, at::kDouble);
  at::Tensor y        = linear_recurrence(x, a, initial);
  at::Tensor expected = at::empty_like(x);
  for (int64_t r = 0; r < 4; ++r) {
    double state = initial[r].item<double>();
    for (int64_t n = 0; n < 300; ++n) {
      state          = a[r][n].item<double>() * state + x[r][n].item<double>();
      expected[r][n] = state;
    }
  }
  EXPECT_LT(max_error(y, expected), 1e-12);
  at::Tensor backward = linear_recurrence(x.flip(-1), a.flip(-1), initial, true).flip(-1);
  EXPECT_LT(max_error(backward, linear_recurrence(x, a, initial)), 1e-12);
}

TEST(LinearRecurrenceScan, EqualsTheSequentialKernelInFloat32) {
  // The device kernel, a chunked scan of ATen operations, against the CPU loop: per-row and
  // per-sample coefficients, both directions, lengths below, at and off multiples of the chunk,
  // exact zeros. Relative to the signal's peak: 1e-6 where the poles forget within a chunk's
  // reach, and where they are slow (α up to 0.9999, states ~70× the input over 114000 samples)
  // no farther from the float64 result than the loop itself is (both then round ~1e-5).
  at::manual_seed(6);
  for (int64_t length : {1, 5, 64, 1000, 114000})
    for (int64_t chunk : {2, 7, 64})
      for (bool reverse : {false, true})
        for (bool per_sample : {false, true})
          for (bool slow : {false, true}) {
            if (length == 114000 && chunk != 64) continue;  // several levels already at 1000
            at::Tensor x = at::randn({3, 2, length});
            at::Tensor a = per_sample
                               ? at::rand({3, 2, length})
                               : at::rand({3, 2}) * (slow ? 0.01 : 0.1) + (slow ? 0.9899 : 0.89);
            if (per_sample) a.select(-1, length / 2).zero_();
            if (slow && !per_sample) a[0][0] = 0.9999;
            at::Tensor initial = at::randn({3, 2});
            at::Tensor truth   = linear_recurrence(x.to(at::kDouble), a.to(at::kDouble),
                                                   initial.to(at::kDouble), reverse);
            at::Tensor loop    = linear_recurrence(x, a, initial, reverse);
            at::Tensor y       = linear_recurrence_scan(x, a, initial, reverse, chunk);
            ASSERT_EQ(y.sizes(), x.sizes());
            ASSERT_EQ(y.scalar_type(), at::kFloat);
            const double scale      = std::max(1.0, truth.abs().max().item<double>());
            const std::string where = "length " + std::to_string(length) + ", chunk " +
                                      std::to_string(chunk) + ", reverse " +
                                      std::to_string(reverse) + ", per sample " +
                                      std::to_string(per_sample);
            if (!slow || per_sample)
              EXPECT_LT(max_error(y, loop) / scale, 1e-6) << where;
            else
              EXPECT_LT(max_error(y, truth), 2 * max_error(loop, truth) + 1e-6 * scale) << where;
          }
  // The smoother: one_pole is the scan of (1 − α)·x with α.
  at::Tensor x = at::rand({4, 30000}), alpha = at::full({4}, 0.99f);
  EXPECT_LT(max_error(linear_recurrence_scan(x * (1 - alpha).unsqueeze(1), alpha, {}),
                      one_pole(x, alpha)),
            1e-6);
  EXPECT_THROW(linear_recurrence_scan(x, alpha, {}, false, 1), c10::Error);
}

TEST(BallisticsScan, EqualsTheSequentialKernelInFloat32) {
  // The device kernel (branches from the last pass, then the scan, until they settle) against
  // the CPU loop on levels like a detector's: bursts of noise under a moving envelope, with fast
  // and slow attacks and releases, a non-zero start, a constant level (every step a tie) and a
  // level that only falls.
  at::manual_seed(9);
  const int64_t length = 60000;
  at::Tensor time      = at::arange(length, at::kFloat) / 30000;
  at::Tensor envelope  = at::sin(time * 7).abs().pow(3) + 0.05;
  at::Tensor x         = at::randn({6, length}).abs() * envelope;
  x[4].fill_(0.3);
  x[5]               = at::exp(-time * 3);
  at::Tensor rise    = at::tensor({0.3f, 0.9f, 0.99f, 0.5f, 0.9f, 0.99f});
  at::Tensor fall    = at::tensor({0.999f, 0.9999f, 0.99f, 0.9f, 0.99f, 0.999f});
  at::Tensor initial = at::tensor({0.0f, 0.5f, 1.0f, 0.0f, 0.0f, 2.0f});
  auto wide          = [](const at::Tensor& t) { return t.to(at::kDouble); };
  at::Tensor truth   = ballistics(wide(x), wide(rise), wide(fall), wide(initial));
  at::Tensor loop    = ballistics(x, rise, fall, initial);
  int passes         = -1;
  at::Tensor y       = ballistics_scan(x, rise, fall, initial, &passes);
  ASSERT_EQ(y.sizes(), x.sizes());
  EXPECT_GE(passes, 2);  // settled by the scans, not handed to the loop
  EXPECT_LE(passes, 12);
  // The scan computes in float64: it is as near the float64 result as the float32 loop is.
  const double peak = truth.abs().max().item<double>();
  EXPECT_LT(max_error(y, truth), max_error(loop, truth) + 1e-7 * peak);
  EXPECT_LT(max_error(y, loop), 3e-6 * peak);
  EXPECT_LT(max_error(ballistics_scan(wide(x), wide(rise), wide(fall), wide(initial)), truth),
            1e-12 * peak);
  // Short rows: one sample, and fewer than a chunk.
  for (int64_t n : {1, 5})
    EXPECT_LT(max_error(ballistics_scan(x.narrow(1, 0, n), rise, fall, initial),
                        ballistics(x.narrow(1, 0, n), rise, fall, initial)),
              1e-6);
}

/// Rows of levels for ballistics, one kind per row: noise bursts under a moving envelope, their
/// logarithm (a detector's levels), a constant level (every step a tie once y settles there, or a
/// stall where (1 − α)·(x − y) rounds away), a level that only falls, signed noise, steps between
/// constant levels, and silence (the detector's floor) then a tone. Attack ≠ release, drawn
/// from fast to slow coefficients; most rows start away from zero. All float64.
struct BallisticsCase {
  at::Tensor x, rise, fall, initial;
};
BallisticsCase ballistics_case(int64_t rows, int64_t length) {
  const at::Tensor time       = at::arange(length, at::kDouble) / 30000;
  const at::Tensor envelope   = at::sin(time * 7).abs().pow(3) + 0.05;
  const double coefficients[] = {0.3, 0.9, 0.99, 0.999, 0.9999, 0.99999};
  std::vector<at::Tensor> levels;
  std::vector<double> rise, fall;
  for (int64_t r = 0; r < rows; ++r) {
    switch (r % 7) {
      case 0:
        levels.push_back(at::randn({length}, at::kDouble).abs() * envelope);
        break;
      case 1:
        levels.push_back(at::log(at::randn({length}, at::kDouble).abs() * envelope + 1e-5));
        break;
      case 2:
        levels.push_back(at::full({length}, 0.3, at::kDouble));
        break;
      case 3:
        levels.push_back(at::exp(-time * 3));
        break;
      case 4:
        levels.push_back(at::randn({length}, at::kDouble));
        break;
      case 5:
        levels.push_back(at::floor(time * 6).remainder(3) * 0.25);
        break;
      default:
        levels.push_back(at::cat({at::full({length / 2}, std::log(1e-5), at::kDouble),
                                  at::full({length - length / 2}, std::log(0.3), at::kDouble)}));
    }
    const int64_t up   = at::randint(6, {1}).item<int64_t>(),
                  down = at::randint(6, {1}).item<int64_t>();
    rise.push_back(coefficients[up]);
    fall.push_back(up == down ? 0.5 * (1 + coefficients[down]) : coefficients[down]);
  }
  at::Tensor initial = at::rand({rows}, at::kDouble) * 2 - 0.5;
  initial.slice(0, 0, rows, 3).zero_();
  return {at::stack(levels), at::tensor(rise, at::kDouble), at::tensor(fall, at::kDouble), initial};
}

/// The largest difference in any row, relative to that row's peak of `expected` (NaN: NaN).
double worst_row_error(const at::Tensor& y, const at::Tensor& expected) {
  const at::Tensor wide = expected.to(at::kDouble);
  return ((y.to(at::kDouble) - wide).abs().amax(-1) / wide.abs().amax(-1).clamp_min(1e-300))
      .max()
      .item<double>();
}

/// y[n] = x[n] + c1·y[n−1] + c2·y[n−2] (reverse: from the end), a plain loop on rows R×L with
/// coefficients R×1 or R×L, in double.
at::Tensor two_pole_loop(const at::Tensor& x, const at::Tensor& c1, const at::Tensor& c2,
                         bool reverse) {
  at::Tensor y = at::empty_like(x);
  auto xa = x.accessor<double, 2>(), ya = y.accessor<double, 2>();
  auto a = c1.accessor<double, 2>(), b = c2.accessor<double, 2>();
  const int64_t length = x.size(1);
  for (int64_t r = 0; r < x.size(0); ++r) {
    double previous = 0, before = 0;
    for (int64_t i = 0; i < length; ++i) {
      const int64_t n = reverse ? length - 1 - i : i, k = c1.size(1) > 1 ? n : 0;
      ya[r][n] = xa[r][n] + a[r][k] * previous + b[r][k] * before;
      before = previous, previous = ya[r][n];
    }
  }
  return y;
}

TEST(TwoPoleChunked, EqualsTheLoopForFixedAndMovingPoles) {
  // The CUDA kernel's steps on the CPU (each chunk's map of the two-sample state from zero,
  // their composition for the starts, each chunk again from its start) against a plain loop:
  // both directions, lengths below, at and off multiples of the chunk count, one chunk, a few
  // and the GPU's 256, pole radii up to 0.999 (a ring over the whole row), and poles moving
  // at every sample.
  at::manual_seed(21);
  for (int64_t length : {1, 5, 255, 256, 257, 3000, 114000})
    for (bool moving : {false, true})
      for (bool reverse : {false, true})
        for (int64_t chunks : {1, 7, 256}) {
          const int64_t rows = 4, count = moving ? length : 1;
          const at::Tensor radius = 0.5 + 0.499 * at::rand({rows, count}, at::kDouble);
          const at::Tensor angle  = M_PI * at::rand({rows, count}, at::kDouble);
          const at::Tensor c1 = 2 * radius * angle.cos(), c2 = -radius * radius;
          const at::Tensor x      = at::randn({rows, length}, at::kDouble);
          const at::Tensor loop   = two_pole_loop(x, c1, c2, reverse);
          const std::string where = "length " + std::to_string(length) +
                                    (moving ? ", moving" : "") + (reverse ? ", reverse" : "") +
                                    ", " + std::to_string(chunks) + " chunks";
          // Per row: one value a row ([R]); moving: one a sample ([R, L]).
          auto as_given      = [&](const at::Tensor& c) { return moving ? c : c.view({rows}); };
          const at::Tensor y = two_pole_chunked(x, as_given(c1), as_given(c2), reverse, chunks);
          ASSERT_EQ(y.sizes(), x.sizes()) << where;
          EXPECT_LE(worst_row_error(y, loop), 1e-10) << where;
          if (chunks == 256 && length <= 3000) {  // the ATen scan other devices run
            EXPECT_LE(worst_row_error(two_pole_scan(x, as_given(c1), as_given(c2), reverse), loop),
                      1e-10)
                << where;
          }
        }
  // Per-row coefficients of any leading shape, float32 in and out, and refusals.
  const at::Tensor x  = at::randn({2, 3, 500});
  const at::Tensor c1 = at::full({2, 3}, 1.6), c2 = at::full({2, 3}, -0.8);
  const at::Tensor y = two_pole_chunked(x, c1, c2);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_LE(
      worst_row_error(y.view({6, 500}), two_pole_loop(x.view({6, 500}).to(at::kDouble),
                                                      c1.reshape({6, 1}).to(at::kDouble),
                                                      c2.reshape({6, 1}).to(at::kDouble), false)),
      1e-6);
  EXPECT_THROW(two_pole_chunked(x, c1, c2, false, 0), c10::Error);
  EXPECT_THROW(two_pole_chunked(x, c1, at::full({2, 3, 500}, -0.8)), c10::Error);
}

TEST(BallisticsChunked, EqualsTheSequentialKernelInFloat32AndFloat64) {
  // The CUDA kernel's algorithm (Newton's method on the chunks' starts) on the CPU against the
  // CPU loop: lengths below and off multiples of the chunk count (empty chunks at the end), one
  // chunk (the loop itself), a few, and the GPU's 256. (Chunks of up to 4 samples, where the
  // coarse run that guesses the starts is the loop itself, settle in one iteration.)
  at::manual_seed(11);
  for (int64_t length : {1, 5, 300, 3000, 60000})
    for (int64_t chunks : {1, 7, 256}) {
      const BallisticsCase in = ballistics_case(14, length);
      for (at::ScalarType type : {at::kFloat, at::kDouble}) {
        auto as            = [&](const at::Tensor& t) { return t.to(type); };
        const at::Tensor x = as(in.x), rise = as(in.rise), fall = as(in.fall),
                         initial = as(in.initial);
        const at::Tensor loop    = ballistics(x, rise, fall, initial);
        int iterations           = -1;
        const at::Tensor y       = ballistics_chunked(x, rise, fall, initial, chunks, &iterations);
        const std::string where  = std::string(type == at::kFloat ? "float" : "double") +
                                  ", length " + std::to_string(length) + ", " +
                                  std::to_string(chunks) + " chunks";
        ASSERT_EQ(y.sizes(), x.sizes()) << where;
        ASSERT_EQ(y.scalar_type(), type) << where;
        EXPECT_LE(worst_row_error(y, loop), type == at::kFloat ? 1e-5 : 1e-10) << where;
        EXPECT_GE(iterations, 1) << where;
        EXPECT_LE(iterations, std::max<int64_t>(1, chunks - 1)) << where;  // the bound
        if (chunks == 1) {
          EXPECT_TRUE(at::equal(y, loop)) << where;  // one chunk: the loop itself
        }
      }
    }
  // Any leading shape, on rows of [..., L].
  const BallisticsCase in = ballistics_case(6, 1000);
  const at::Tensor x = in.x.view({2, 3, 1000}), rise = in.rise.view({2, 3}),
                   fall = in.fall.view({2, 3}), initial = in.initial.view({2, 3});
  EXPECT_LE(worst_row_error(ballistics_chunked(x, rise, fall, initial),
                            ballistics(x, rise, fall, initial)),
            1e-10);
  EXPECT_THROW(ballistics_chunked(x, rise, fall, initial, 0), c10::Error);
}

TEST(BallisticsChunked, SettlesInAFewIterationsOnDetectorLevels) {
  // Levels like the compressor's detector's (energy and its logarithm, bursts under an envelope,
  // 2^17 samples) with attack and release times from 0.3 to 300 ms at 30 kHz.
  at::manual_seed(12);
  const int64_t length      = int64_t(1) << 17;
  const at::Tensor time     = at::arange(length, at::kDouble) / 30000;
  const at::Tensor envelope = at::sin(time * 5).abs().pow(3) + 0.02;
  const at::Tensor energy   = at::randn({8, length}, at::kDouble).pow(2) * envelope;
  const at::Tensor x = at::cat({energy.narrow(0, 0, 4), at::log(energy.narrow(0, 4, 4) + 1e-5)});
  const at::Tensor attack = at::tensor({0.3, 1.0, 5.0, 30.0, 0.3, 1.0, 5.0, 30.0}, at::kDouble);
  const at::Tensor release =
      at::tensor({30.0, 100.0, 300.0, 50.0, 30.0, 100.0, 300.0, 50.0}, at::kDouble);
  auto alpha = [](const at::Tensor& ms) { return at::exp(-1 / (ms * 1e-3 * 30000)); };
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    int iterations = -1;
    const at::Tensor y =
        ballistics_chunked(x.to(type), alpha(attack).to(type), alpha(release).to(type),
                           at::zeros({8}, type), 256, &iterations);
    std::printf("[ chunked ] %s detector levels, 256 chunks of 512 samples: %d iterations\n",
                type == at::kFloat ? "float" : "double", iterations);
    EXPECT_GE(iterations, 2);  // the first guesses are not the answer
    EXPECT_LE(iterations, 8);
    EXPECT_LE(worst_row_error(y, ballistics(x.to(type), alpha(attack).to(type),
                                            alpha(release).to(type), at::zeros({8}, type))),
              type == at::kFloat ? 1e-5 : 1e-10);
  }
}

TEST(Recursions, GradientsMatchFiniteDifferencesInFloat64) {
  at::manual_seed(4);
  at::Tensor x     = at::randn({2, 3, 200}, at::kDouble);
  at::Tensor alpha = at::rand({2, 3}, at::kDouble) * 0.98;
  expect_gradients_match([](const auto& in) { return one_pole(in[0], in[1]); }, {x, alpha});
  expect_gradients_match([](const auto& in) { return linear_recurrence(in[0], in[1], in[2]); },
                         {x, alpha, at::randn({2, 3}, at::kDouble)});
  expect_gradients_match(
      [](const auto& in) { return linear_recurrence(in[0], in[1], in[2], true); },
      {x, at::rand({2, 3, 200}, at::kDouble), at::randn({2, 3}, at::kDouble)});
  expect_gradients_match([](const auto& in) { return linear_recurrence(in[0], in[1], in[2]); },
                         {x, at::rand({2, 3, 200}, at::kDouble), at::randn({2, 3}, at::kDouble)});
  // Ballistics on an energy-like signal: the branches are fixed under small perturbations.
  at::Tensor energy = x.pow(2);
  expect_gradients_match([](const auto& in) { return ballistics(in[0], in[1], in[2], in[3]); },
                         {energy, alpha, alpha.flip(-1), at::rand({2, 3}, at::kDouble)});
}

TEST(Recursions, BackwardIsDifferentiableAgain) {
  // d/dα of the gradient (a Hessian-vector product) against finite differences of the gradient.
  at::manual_seed(5);
  at::Tensor x = at::rand({2, 300}, at::kDouble), weights = at::randn({2, 300}, at::kDouble);
  auto gradient = [&](const at::Tensor& alpha, bool create_graph) {
    at::Tensor a = alpha.detach().requires_grad_(true);
    at::Tensor loss =
        (ballistics(x, a, a * 0.5 + 0.45, at::zeros({2}, at::kDouble)) * weights).sum();
    return std::make_pair(a, torch::autograd::grad({loss}, {a}, {}, true, create_graph)[0]);
  };
  at::Tensor alpha  = at::full({2}, 0.7, at::kDouble);
  auto [a, g]       = gradient(alpha, true);
  at::Tensor second = torch::autograd::grad({g.sum()}, {a})[0];
  const double step = 1e-6;
  at::Tensor numeric =
      (gradient(alpha + step, false).second - gradient(alpha - step, false).second) / (2 * step);
  EXPECT_TRUE(at::allclose(second, numeric, 1e-5, 1e-6)) << second << numeric;
}

TEST(Recursions, RejectMisshapenCoefficients) {
  at::Tensor x = at::randn({2, 3, 50});
  EXPECT_THROW(one_pole(x, at::rand({2})), c10::Error);
  EXPECT_THROW(one_pole(x, at::rand({2, 3}, at::kDouble)), c10::Error);
  EXPECT_THROW(ballistics(x, at::rand({2, 3}), at::rand({2, 3}), at::rand({3})), c10::Error);
  EXPECT_THROW(linear_recurrence(x.to(at::kLong), at::rand({2, 3}), {}), c10::Error);
}

}  // namespace
}  // namespace grafx::dsp
