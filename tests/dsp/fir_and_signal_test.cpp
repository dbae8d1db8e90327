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

TEST(FrequencyScales, PublishedValuesExactInversesAndMonotonic) {
  // Values from the scales' published formulas, computed by hand.
  EXPECT_NEAR(to_scale(FrequencyScale::kMelHtk, 1000), 2595 * std::log10(1 + 1000.0 / 700), 1e-9);
  EXPECT_NEAR(to_scale(FrequencyScale::kMelSlaney, 1000), 15.0, 1e-12);
  EXPECT_NEAR(to_scale(FrequencyScale::kMelSlaney, 500), 7.5, 1e-12);
  EXPECT_NEAR(to_scale(FrequencyScale::kBarkTraunmuller, 1000), 26.81 * 1000 / 2960 - 0.53, 1e-12);
  double low = 26.81 * 100 / 2060 - 0.53;  // below 2 Bark: the low correction
  EXPECT_NEAR(to_scale(FrequencyScale::kBarkTraunmuller, 100), low + 0.15 * (2 - low), 1e-12);
  double high = 26.81 * 16000 / 17960 - 0.53;  // above 20.1 Bark: the high correction
  EXPECT_NEAR(to_scale(FrequencyScale::kBarkTraunmuller, 16000), high + 0.22 * (high - 20.1),
              1e-12);
  EXPECT_NEAR(to_scale(FrequencyScale::kBarkSchroeder, 650), 7 * std::asinh(1.0), 1e-12);
  EXPECT_NEAR(to_scale(FrequencyScale::kBarkWang, 600), 6 * std::asinh(1.0), 1e-12);
  for (auto scale : {FrequencyScale::kLinear, FrequencyScale::kLog, FrequencyScale::kMelHtk,
                     FrequencyScale::kMelSlaney, FrequencyScale::kBarkTraunmuller,
                     FrequencyScale::kBarkSchroeder, FrequencyScale::kBarkWang}) {
    double previous = -1e300;
    for (double hz = 20; hz < 24000; hz *= 1.05) {
      double value = to_scale(scale, hz);
      EXPECT_GT(value, previous) << int(scale) << " at " << hz << " Hz";
      EXPECT_NEAR(from_scale(scale, value), hz, 1e-9 * hz) << int(scale) << " at " << hz << " Hz";
      previous = value;
    }
  }
}

TEST(FrequencyScales, BandWeightsAreInterpolatingTrianglesSummingToOne) {
  at::Tensor hz = at::linspace(0, 22050, 3001, at::kDouble);
  at::Tensor w  = band_weights(hz, 12, FrequencyScale::kMelHtk, 50, 16000);
  EXPECT_LT((w.sum(0) - 1).abs().max().item<double>(), 1e-12);
  EXPECT_GE(w.min().item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(w[0][0].item<double>(), 1.0);      // the first band below its centre
  EXPECT_DOUBLE_EQ(w[11][3000].item<double>(), 1.0);  // the last band above its own
  // Each band is 1 at its centre (evenly spaced on the scale) and 0 at the neighbours' centres.
  double lo = to_scale(FrequencyScale::kMelHtk, 50), hi = to_scale(FrequencyScale::kMelHtk, 16000);
  at::Tensor centres = at::empty({12}, at::kDouble);
  for (int j = 0; j < 12; ++j)
    centres[j] = from_scale(FrequencyScale::kMelHtk, lo + (hi - lo) * j / 11.0);
  at::Tensor at_centres = band_weights(centres, 12, FrequencyScale::kMelHtk, 50, 16000);
  EXPECT_TRUE(at::allclose(at_centres, at::eye(12, at::kDouble), 0, 1e-9));
}

TEST(ZeroPhaseFir, WindowsAreSymmetricAndOneAtLagZero) {
  for (auto window : {Window::kHann, Window::kHamming, Window::kBlackman, Window::kRectangular}) {
    at::Tensor w = zero_phase_window(64, at::kDouble, window);
    ASSERT_EQ(w.size(0), 127);
    EXPECT_DOUBLE_EQ(w[63].item<double>(), 1.0);
    EXPECT_TRUE(at::equal(w, w.flip(0)));
  }
  // Hamming at lag ±F would be 0.08, Blackman 0: their endpoints one step inside.
  double phase = M_PI * 63 / 64;
  EXPECT_NEAR(zero_phase_window(64, at::kDouble, Window::kHamming)[0].item<double>(),
              0.54 + 0.46 * std::cos(phase), 1e-12);
  EXPECT_NEAR(zero_phase_window(64, at::kDouble, Window::kBlackman)[0].item<double>(),
              0.42 + 0.5 * std::cos(phase) + 0.08 * std::cos(2 * phase), 1e-12);
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
