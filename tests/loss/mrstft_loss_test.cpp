// The multi-resolution STFT loss with auraloss's defaults.

#include <grafx/loss/mrstft_loss.h>

#include "loss/loss_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

using testing::test_signal;

TEST(MultiResolutionStftLoss, UsesAuralossDefaults) {
  MultiResolutionStftLossOptions o;
  EXPECT_EQ(o.fft_sizes, (std::vector<int64_t>{1024, 2048, 512}));
  EXPECT_EQ(o.hop_sizes, (std::vector<int64_t>{120, 240, 50}));
  EXPECT_EQ(o.window_sizes, (std::vector<int64_t>{600, 1200, 240}));
  EXPECT_EQ(o.eps, 1e-8);
}

TEST(MultiResolutionStftLoss, IdenticalSignalsGiveExactlyZero) {
  at::Tensor y = test_signal(6000, 44100, 2);
  EXPECT_EQ(MultiResolutionStftLoss()(y, y.clone()).item<double>(), 0.0);
}

TEST(MultiResolutionStftLoss, KnownGainGivesPredictedDistances) {
  MultiResolutionStftLossOptions options;
  options.eps                        = 1e-300;  // no floor
  at::Tensor y                       = test_signal(6000, 44100, 2);
  MultiResolutionStftLossTerms terms = MultiResolutionStftLoss(options).terms(0.25 * y, y);
  EXPECT_TRUE(
      at::allclose(terms.spectral_convergence, at::full({3}, 0.75, at::kDouble), 1e-9, 1e-12));
  EXPECT_TRUE(
      at::allclose(terms.log_magnitude, at::full({3}, std::log(4.0), at::kDouble), 1e-9, 1e-12));
  EXPECT_NEAR(terms.total.item<double>(), 0.75 + std::log(4.0), 1e-9);
}

TEST(MultiResolutionStftLoss, PoolsTheBatchLikeAuraloss) {
  // Spectral convergence of a batch is ‖Y − X‖ / ‖Y‖ over all items at once: an estimate that
  // halves a loud item and gets a quiet one exactly right scores ≈ 1/2 (the quiet item barely
  // counts), where the mean of per-item values would be 1/4.
  MultiResolutionStftLossOptions options;
  options.eps = 1e-300;
  MultiResolutionStftLoss loss(options);
  at::Tensor loud = test_signal(6000, 44100, 2)[0], quiet = 1e-3 * test_signal(6000, 44100, 3)[0];
  at::Tensor y = at::stack({loud, quiet});
  at::Tensor x = at::stack({0.5 * loud, quiet});
  // Item 1 contributes nothing to the numerator and almost nothing to the denominator.
  at::Tensor sc      = loss.terms(x, y).spectral_convergence;
  at::Tensor sc_loud = loss.terms(x[0], y[0]).spectral_convergence;
  EXPECT_TRUE(at::allclose(sc, sc_loud, 1e-5));
  EXPECT_LT(sc_loud.max().item<double>(), 0.5 + 1e-9);
  // The log distance is a plain mean over all elements: the mean of the items'.
  EXPECT_TRUE(at::allclose(
      loss.terms(x, y).log_magnitude,
      (loss.terms(x[0], y[0]).log_magnitude + loss.terms(x[1], y[1]).log_magnitude) / 2));
}

TEST(MultiResolutionStftLoss, MatchesIndependentPythonComputation) {
  // make_golden.py: auraloss's computation with torch.stft on a 2×2×12000 batch.
  at::Tensor x = at::stack({test_signal(12000, 30000, 1), test_signal(12000, 30000, 2)});
  at::Tensor y = at::stack({0.8 * test_signal(12000, 30000, 1) + 0.1 * test_signal(12000, 30000, 5),
                            test_signal(12000, 30000, 3)});
  EXPECT_NEAR(MultiResolutionStftLoss()(x, y).item<double>(), 2.2203990326247163, 1e-9);
}

TEST(MultiResolutionStftLoss, GradientMatchesFiniteDifferences) {
  MultiResolutionStftLossOptions options;
  options.fft_sizes    = {32, 64};
  options.hop_sizes    = {5, 16};
  options.window_sizes = {20, 64};
  MultiResolutionStftLoss loss(options);
  at::Tensor y = at::randn({3, 128}, at::kDouble), x = y + 0.3 * at::randn({3, 128}, at::kDouble);
  EXPECT_LT(testing::gradient_error([&](const at::Tensor& e) { return loss(e, y); }, x, 96), 1e-6);
}

TEST(MultiResolutionStftLoss, RejectsBadInputsAndOptions) {
  MultiResolutionStftLoss loss;
  at::Tensor y = at::randn({2, 3000});
  EXPECT_GRAFX_ERROR(loss(y, y.narrow(0, 0, 1)), "grafx.loss.shape", "[2, 3000] and [1, 3000]");
  EXPECT_GRAFX_ERROR(loss(y.narrow(1, 0, 2000), y.narrow(1, 0, 2000)), "grafx.loss.too_short",
                     "at least 2048 samples");
  EXPECT_GRAFX_ERROR(loss(at::ones({}), at::ones({})), "grafx.loss.shape", "scalar");
  EXPECT_GRAFX_ERROR(loss(y.to(at::kHalf), y.to(at::kHalf)), "grafx.loss.dtype", "Half");
  MultiResolutionStftLossOptions options;
  options.hop_sizes = {120};
  EXPECT_GRAFX_ERROR(MultiResolutionStftLoss{options}, "grafx.loss.options",
                     "as many hop and window sizes");
  options              = {};
  options.window_sizes = {600, 4096, 240};
  EXPECT_GRAFX_ERROR(MultiResolutionStftLoss{options}, "grafx.loss.options", "window 4096");
  options     = {};
  options.eps = -1;
  EXPECT_GRAFX_ERROR(MultiResolutionStftLoss{options}, "grafx.loss.options", "eps");
}

}  // namespace
}  // namespace grafx
