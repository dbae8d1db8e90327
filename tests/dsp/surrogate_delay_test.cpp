// The surrogate delay: an exact integer delay forward, the surrogate's gradient (straight
// through) backward, normalised per delay.

#include <grafx/dsp/surrogate_delay.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

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

TEST(SurrogateDelay, RejectsBadArguments) {
  EXPECT_THROW(surrogate_delay(at::randn({3, 3}), 10), c10::Error);
  EXPECT_THROW(surrogate_delay(at::randn({3, 2}), 1), c10::Error);
  EXPECT_THROW(delay_to_z(at::zeros({1}), 10, 1.0), c10::Error);
}

}  // namespace
}  // namespace grafx::dsp
