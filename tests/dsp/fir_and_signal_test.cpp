// Zero-phase FIR design and the small signal helpers.

#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace grafx::dsp {
namespace {

TEST(ZeroPhaseFir, FlatResponseIsAUnitImpulseAtLagZero) {
  at::Tensor window = zero_phase_window(1024, at::kDouble);
  ASSERT_EQ(window.size(0), 2047);
  EXPECT_DOUBLE_EQ(window[1023].item<double>(), 1.0);
  at::Tensor fir     = zero_phase_fir(at::zeros({2, 1024}, at::kDouble), window);
  at::Tensor impulse = at::zeros({2, 2047}, at::kDouble);
  impulse.select(1, 1023).fill_(1.0);
  EXPECT_LT((fir - impulse).abs().max().item<double>(), 1e-14);
}

TEST(ZeroPhaseFir, IsSymmetricAndFollowsASmoothResponse) {
  at::manual_seed(1);
  at::Tensor window = zero_phase_window(20, at::kDouble);
  at::Tensor fir    = zero_phase_fir(at::randn({3, 20}, at::kDouble), window);
  EXPECT_TRUE(at::allclose(fir, fir.flip(-1), 1e-12, 1e-14)) << "symmetric about the centre tap";
  // A gentle tilt of ±6 dB over 1024 bins: the windowed FIR's response, sampled on the design
  // grid, stays within 0.1 dB of it.
  at::Tensor bins          = at::arange(1024, at::kDouble);
  at::Tensor log_magnitude = (bins / 1023 - 0.5) * 2 * std::log(2.0);
  at::Tensor h             = zero_phase_fir(log_magnitude, zero_phase_window(1024, at::kDouble));
  at::Tensor response      = at::fft_rfft(at::roll(h, -1023, -1), 2047, -1).abs().log();
  double error_db = (response - log_magnitude).abs().max().item<double>() * 20 / std::log(10.0);
  EXPECT_LT(error_db, 0.1);
}

TEST(Signal, MidSideRoundTripAndEnergyNormalisation) {
  at::manual_seed(2);
  at::Tensor x  = at::randn({3, 2, 100}, at::kDouble);
  at::Tensor ms = to_mid_side(x);
  EXPECT_TRUE(at::allclose(ms.select(1, 0), (x.select(1, 0) + x.select(1, 1)) / 2));
  EXPECT_TRUE(at::allclose(from_mid_side(ms), x));
  at::Tensor h = normalize_energy(at::randn({3, 2, 50}, at::kDouble) * 7);
  EXPECT_TRUE(at::allclose(h.pow(2).sum(-1).mean(-1), at::ones({3}, at::kDouble)));
}

TEST(Signal, SeededNoiseIsFixedAndUniform) {
  at::Tensor noise = uniform_noise(2, 100000, 0);
  EXPECT_TRUE(at::equal(noise, uniform_noise(2, 100000, 0)));
  EXPECT_FALSE(at::equal(noise, uniform_noise(2, 100000, 1)));
  EXPECT_GE(noise.min().item<double>(), -1.0);
  EXPECT_LT(noise.max().item<double>(), 1.0);
  EXPECT_NEAR(noise.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(noise.var().item<double>(), 1.0 / 3, 0.01);
  // The C++ standard fixes std::mt19937_64's sequence, so these values hold on every platform.
  EXPECT_DOUBLE_EQ(noise[0][0].item<double>(), -0.68041327325907841);
}

}  // namespace
}  // namespace grafx::dsp
