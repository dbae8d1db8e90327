// The surrogate delay: an exact integer delay forward, the surrogate's gradient (straight
// through) backward, normalised per delay.

#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/surrogate_delay.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace grafx::dsp {
namespace {

TEST(SurrogateDelay, ForwardIsAnExactIntegerDelay) {
  for (int64_t n : {64, 65, 3000}) {
    at::Tensor delays = at::tensor({0.0, 1.0, double(n / 3), double(n - 1)}, at::kDouble);
    at::Tensor h      = surrogate_delay(delay_to_z(delays, n), n).impulse_responses;
    ASSERT_EQ(h.sizes(), at::IntArrayRef({4, n}));
    at::Tensor expected = at::one_hot(delays.to(at::kLong), n).to(at::kDouble);
    EXPECT_TRUE(at::equal(h, expected)) << "n = " << n;
  }
}

TEST(SurrogateDelay, TheHardDelayIsThePeakOfTheSoftSurrogate) {
  at::manual_seed(1);
  at::Tensor z = at::randn({50, 2}, at::kDouble);
  SurrogateDelayOptions soft_options{false, false};
  at::Tensor soft = surrogate_delay(z, 200, soft_options).impulse_responses;
  at::Tensor hard = surrogate_delay(z, 200).impulse_responses;
  EXPECT_TRUE(at::equal(hard.argmax(-1), soft.argmax(-1)));
  EXPECT_TRUE(at::equal(hard.sum(-1), at::ones({50}, at::kDouble)));
  // A sharp pole: the surrogate approaches the hard delay.
  at::Tensor sharp =
      surrogate_delay(delay_to_z(at::full({1}, 17.0, at::kDouble), 200, 0.99999), 200, soft_options)
          .impulse_responses;
  EXPECT_GT(sharp[0][17].item<double>(), 0.99);
}

TEST(SurrogateDelay, TheSoftSurrogateIsTheInverseTransformOfThePolesPowers) {
  // GRAFX's formula, irfft(exp(k·log p)) with p the pole in the unit disk, computed here in
  // float64 against the surrogate's blocks of powers, in float64 and float32, for lengths whose
  // powers fill their last block and lengths whose powers do not.
  at::manual_seed(3);
  for (int64_t n : {2, 3, 64, 101, 3000}) {
    const at::Tensor z        = at::randn({2, 5, 2}, at::kDouble);
    at::Tensor pole           = at::view_as_complex(z);
    at::Tensor radius         = pole.abs();
    pole                      = pole * (radius.tanh() / (radius + 1e-7)) + 1e-7;
    const at::Tensor k        = at::arange(n / 2 + 1, at::kDouble);
    const at::Tensor expected = at::fft_irfft(at::exp(pole.log().unsqueeze(-1) * k), n);
    const SurrogateDelayOptions soft{false, false};
    EXPECT_TRUE(at::allclose(surrogate_delay(z, n, soft).impulse_responses, expected, 1e-12, 1e-12))
        << "n = " << n;
    const at::Tensor single = surrogate_delay(z.to(at::kFloat), n, soft).impulse_responses;
    EXPECT_LT((single.to(at::kDouble) - expected).abs().max().item<double>(),
              2e-5 * expected.abs().max().item<double>())
        << "n = " << n;
  }
}

TEST(SurrogateDelay, SoftGradientsMatchFiniteDifferences) {
  at::manual_seed(2);
  SurrogateDelayOptions soft_options{false, false};
  testing::expect_gradients_match(
      [&](const std::vector<at::Tensor>& in) {
        return surrogate_delay(in[0], 101, soft_options).impulse_responses;
      },
      {at::randn({6, 2}, at::kDouble)});
  testing::expect_gradients_match(
      [](const std::vector<at::Tensor>& in) { return surrogate_delay(in[0], 64).radii_loss; },
      {at::randn({6, 2}, at::kDouble)});
}

TEST(SurrogateDelay, StraightThroughGradientIsTheSoftOneNormalisedPerDelay) {
  at::manual_seed(3);
  at::Tensor z = at::randn({5, 2}, at::kDouble), weights = at::randn({5, 80}, at::kDouble);
  auto gradient = [&](SurrogateDelayOptions options) {
    at::Tensor leaf = z.clone().requires_grad_(true);
    (surrogate_delay(leaf, 80, options).impulse_responses * weights).sum().backward();
    return leaf.grad();
  };
  at::Tensor soft = gradient({false, false});
  EXPECT_TRUE(
      at::allclose(gradient({true, false}), soft, 1e-12, 1e-14));  // the loss is linear in h
  at::Tensor normalised = gradient({true, true});
  EXPECT_TRUE(at::allclose(normalised, soft / (soft.norm(2, {-1}, true) + 1e-7), 1e-12, 1e-14));
  EXPECT_TRUE(at::allclose(normalised.norm(2, {-1}), at::ones({5}, at::kDouble), 1e-6));
}

/// segmented_taps by loops over its definition, float64: responses, and for a loss Σ w·out the
/// gradients of the soft responses (straight through: the one-hots') and of the FIRs.
struct NaiveTaps {
  at::Tensor out, grad_soft, grad_colour;
};
NaiveTaps naive_segmented_taps(const at::Tensor& soft, const at::Tensor& colour,
                               const at::Tensor& weights, int64_t segments, int64_t per_segment,
                               int64_t centre) {
  const int64_t items = soft.size(0), taps = soft.size(1), n = soft.size(2), fir = colour.size(2),
                length = segments * n, per_response = segments * per_segment;
  NaiveTaps r{at::zeros({items, taps / per_response, length}, at::kDouble), at::zeros_like(soft),
              at::zeros_like(colour)};
  const at::Tensor delays = soft.argmax(-1);
  for (int64_t i = 0; i < items; ++i)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t response = t / per_response, start = t / per_segment % segments * n - centre;
      for (int64_t k = 0; k < fir; ++k) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = start + j + k;
          if (at < 0 || at >= length) continue;
          const double w = weights[i][response][at].item<double>();
          r.grad_soft[i][t][j] += w * colour[i][t][k].item<double>();
          if (j != delays[i][t].item<int64_t>()) continue;
          r.out[i][response][at] += colour[i][t][k];
          r.grad_colour[i][t][k] += w;
        }
      }
    }
  return r;
}

TEST(SurrogateDelay, SegmentedTapsPlaceEachFirAtItsDelay) {
  // 2 items, 2 responses × 3 segments × 2 taps of 9 samples, 5-tap FIRs centred at tap 2; peaks
  // at the segments' edges too, where FIR taps fall outside the response.
  at::manual_seed(4);
  const int64_t segments = 3, per_segment = 2, n = 9, fir = 5, centre = 2, taps = 12;
  at::Tensor soft                  = at::rand({2, taps, n}, at::kDouble);
  const std::vector<int64_t> peaks = {0, 8, 1, 4, 0, 0, 7, 8, 3, 8, 0, 2};
  for (int64_t t = 0; t < taps; ++t) soft[0][t][peaks[size_t(t)]] = 2.0;
  const at::Tensor colour  = at::randn({2, taps, fir}, at::kDouble);
  const at::Tensor weights = at::randn({2, 2, segments * n}, at::kDouble);
  const NaiveTaps expected =
      naive_segmented_taps(soft, colour, weights, segments, per_segment, centre);

  at::Tensor soft_leaf   = soft.clone().requires_grad_(true),
             colour_leaf = colour.clone().requires_grad_(true);
  const at::Tensor out   = segmented_taps(soft_leaf, colour_leaf, segments, per_segment, centre);
  EXPECT_TRUE(at::allclose(out, expected.out, 1e-14, 1e-14));
  (out * weights).sum().backward();
  EXPECT_TRUE(at::allclose(soft_leaf.grad(), expected.grad_soft, 1e-12, 1e-14));
  EXPECT_TRUE(at::allclose(colour_leaf.grad(), expected.grad_colour, 1e-12, 1e-14));

  // Bare taps: a FIR of one tap, 1.
  const at::Tensor bare = segmented_taps(soft, at::Tensor(), segments, per_segment, 0);
  const at::Tensor ones = at::ones({2, taps, 1}, at::kDouble);
  EXPECT_TRUE(at::allclose(
      bare, naive_segmented_taps(soft, ones, weights, segments, per_segment, 0).out, 0, 0));

  // The composed form (forward mode takes it): the same responses, and the tangent of FIRs'
  // tangents placed at the delays plus, straight through, the soft responses' tangents
  // convolved with the FIRs: the one-hots' tangents are the soft ones'.
  const at::Tensor soft_tangent = at::randn_like(soft), colour_tangent = at::randn_like(colour);
  at::Tensor expected_tangent =
      naive_segmented_taps(soft, colour_tangent, weights, segments, per_segment, centre).out;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < fir; ++k) {
          const int64_t at = t / per_segment % segments * n - centre + j + k;
          if (at >= 0 && at < segments * n)
            expected_tangent[i][t / (segments * per_segment)][at] +=
                soft_tangent[i][t][j] * colour[i][t][k];
        }
  ForwardMode mode;
  auto [primal, tangent] =
      unpack_dual(segmented_taps(make_dual(soft, soft_tangent), make_dual(colour, colour_tangent),
                                 segments, per_segment, centre));
  EXPECT_TRUE(at::allclose(primal, expected.out, 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(tangent, expected_tangent, 1e-12, 1e-12));
}

TEST(SurrogateDelay, SegmentedTapsRecordedBackwardIsTheComposedForms) {
  // create_graph: the gradients are differentiable again; their second derivative in the FIRs
  // is zero (out is linear in them), and the gradient of Σ ∂soft·v in the FIRs is the
  // correlation of w with v, computed here by finite differences of the first derivative.
  at::manual_seed(5);
  const int64_t segments = 2, per_segment = 1, n = 16, fir = 3, centre = 1;
  const at::Tensor soft    = at::rand({1, 4, n}, at::kDouble);
  const at::Tensor colour  = at::randn({1, 4, fir}, at::kDouble);
  const at::Tensor weights = at::randn({1, 2, segments * n}, at::kDouble);
  const at::Tensor v       = at::randn({1, 4, n}, at::kDouble);
  auto first               = [&](const at::Tensor& c, bool create) {
    at::Tensor s = soft.clone().requires_grad_(true), leaf = c.clone().requires_grad_(true);
    const at::Tensor loss =
        (segmented_taps(s, leaf, segments, per_segment, centre) * weights).sum();
    const at::Tensor g = torch::autograd::grad({loss}, {s}, {}, create, create)[0];
    return std::make_pair((g * v).sum(), leaf);
  };
  auto [gv, leaf]         = first(colour, true);
  const at::Tensor second = torch::autograd::grad({gv}, {leaf})[0];
  const double step       = 1e-6;
  at::Tensor numeric      = at::zeros_like(colour);
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t k = 0; k < fir; ++k) {
      at::Tensor up = colour.clone(), down = colour.clone();
      up[0][t][k] += step;
      down[0][t][k] -= step;
      numeric[0][t][k] = (first(up, false).first - first(down, false).first) / (2 * step);
    }
  EXPECT_TRUE(at::allclose(second, numeric, 1e-6, 1e-8));
}

TEST(SurrogateDelay, RejectsBadArguments) {
  EXPECT_THROW(surrogate_delay(at::randn({3, 3}), 10), c10::Error);
  EXPECT_THROW(surrogate_delay(at::randn({3, 2}), 1), c10::Error);
  EXPECT_THROW(delay_to_z(at::zeros({1}), 10, 1.0), c10::Error);
  EXPECT_THROW(segmented_taps(at::rand({1, 5, 8}), at::Tensor(), 2, 1, 0), c10::Error);
  EXPECT_THROW(segmented_taps(at::rand({1, 4, 8}), at::rand({1, 4, 3}), 2, 1, 3), c10::Error);
  EXPECT_THROW(segmented_taps(at::rand({1, 4, 8}), at::rand({1, 3, 3}), 2, 1, 1), c10::Error);
}

}  // namespace
}  // namespace grafx::dsp
