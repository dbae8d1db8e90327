// Golden checks of the stereo processors against analytic results.

#include <grafx/processors/gain_pan.h>
#include <grafx/processors/stereo_imager.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

TEST(GainPan, IsAnExactGainPerChannel) {
  GainPan gain_pan({});
  at::Tensor x = at::randn({3, 2, 100}, at::kDouble);
  at::Tensor log_gain =
      at::tensor({0.0, 0.0, std::log(2.0), -std::log(4.0), 1.0, -1.0}, at::kDouble).view({3, 2});
  at::Tensor y = gain_pan.forward({x}, {{"log_gain", log_gain}}).outputs[0];
  EXPECT_TRUE(at::equal(y[0], x[0]));
  EXPECT_TRUE(at::allclose(y[1][0], 2.0 * x[1][0]));
  EXPECT_TRUE(at::allclose(y[1][1], 0.25 * x[1][1]));
  EXPECT_NEAR(gain_pan.to_physical({{"log_gain", log_gain}}).at("gain_db")[1][0].item<double>(),
              6.0206, 1e-4);
  EXPECT_GRAFX_ERROR(gain_pan.forward({x.narrow(1, 0, 1)}, {{"log_gain", log_gain}}),
                     "grafx.processor.inputs",
                     "expected a stereo (N×2×L) input, but got 1 channel");
}

TEST(StereoImager, IsIdentityAtZeroAndScalesTheSide) {
  StereoImager imager({});
  at::Tensor x        = at::randn({2, 2, 100}, at::kDouble);
  at::Tensor log_gain = at::tensor({0.0, std::log(3.0)}, at::kDouble).view({2, 1});
  at::Tensor y        = imager.forward({x}, {{"log_gain", log_gain}}).outputs[0];
  EXPECT_TRUE(at::allclose(y[0], x[0], 1e-12, 1e-12));
  at::Tensor mid = x[1][0] + x[1][1], side = x[1][0] - x[1][1];
  EXPECT_TRUE(at::allclose(y[1][0] + y[1][1], mid));
  EXPECT_TRUE(at::allclose(y[1][0] - y[1][1], 3.0 * side));
  at::Tensor mono =
      imager.forward({x}, {{"log_gain", at::full({2, 1}, -50.0, at::kDouble)}}).outputs[0];
  EXPECT_TRUE(at::allclose(mono.select(1, 0), mono.select(1, 1), 1e-9, 1e-9))
      << "−∞ side gain is mono";
}

}  // namespace
}  // namespace grafx
