// Golden checks of the equalizers: flat is the identity, constant gains are exact, and the
// filtering equals direct convolution with the designed zero-phase FIR.

#include <grafx/dsp/fir.h>
#include <grafx/processors/eq.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

at::Tensor run(const Equalizer& eq, const at::Tensor& x, const at::Tensor& log_magnitude) {
  return eq.forward({x}, {{"log_magnitude", log_magnitude}}).outputs[0];
}

TEST(Equalizer, FlatIsTheIdentityAndConstantGainsAreExact) {
  at::manual_seed(1);
  at::Tensor x = at::randn({2, 2, 3000}, at::kDouble);
  Equalizer mono({8000}), stereo({8000}, EqChannels::kStereo),
      mid_side({8000}, EqChannels::kMidSide);
  EXPECT_TRUE(at::allclose(run(mono, x, at::zeros({2, 1024}, at::kDouble)), x, 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(run(stereo, x, at::zeros({2, 2, 1024}, at::kDouble)), x, 1e-12, 1e-12));
  EXPECT_TRUE(
      at::allclose(run(mid_side, x, at::zeros({2, 2, 1024}, at::kDouble)), x, 1e-12, 1e-12));
  // A constant log-magnitude g is the gain e^g.
  at::Tensor y = run(mono, x, at::full({2, 1024}, std::log(2.0), at::kDouble));
  EXPECT_TRUE(at::allclose(y, 2 * x, 1e-12, 1e-12));
  at::Tensor per_channel =
      at::stack({at::full({1024}, std::log(0.5), at::kDouble), at::zeros({1024}, at::kDouble)});
  y = run(stereo, x, per_channel.unsqueeze(0).expand({2, 2, 1024}));
  EXPECT_TRUE(at::allclose(y.select(1, 0), 0.5 * x.select(1, 0), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(y.select(1, 1), x.select(1, 1), 1e-12, 1e-12));
  // Mid/side with the side removed leaves the mid on both channels.
  at::Tensor no_side = at::stack(
      {at::full({1024}, std::log(0.5), at::kDouble), at::full({1024}, -40.0, at::kDouble)});
  y = run(mid_side, x, no_side.unsqueeze(0).expand({2, 2, 1024}));
  at::Tensor mid =
      0.5 * 0.5 * (x.select(1, 0) + x.select(1, 1));  // M = (L + R)/2, halved by its filter
  EXPECT_TRUE(at::allclose(y.select(1, 0), mid, 1e-9, 1e-9));
  EXPECT_TRUE(at::allclose(y.select(1, 1), mid, 1e-9, 1e-9));
}

TEST(Equalizer, FiltersByDirectConvolutionWithItsZeroPhaseFir) {
  at::manual_seed(2);
  at::Tensor x             = at::randn({1, 2, 2500}, at::kDouble),
             log_magnitude = at::randn({1, 1024}, at::kDouble) * 0.3;
  at::Tensor fir = dsp::zero_phase_fir(log_magnitude, dsp::zero_phase_window(1024, at::kDouble))[0];
  at::Tensor y   = run(Equalizer({8000}), x, log_magnitude);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t n : {0, 1, 700, 2499}) {
      double expected = 0;  // y[n] = Σ_k h[k]·x[n + 1023 − k]
      for (int64_t k = 0; k < 2047; ++k) {
        int64_t i = n + 1023 - k;
        if (i >= 0 && i < 2500) expected += fir[k].item<double>() * x[0][c][i].item<double>();
      }
      EXPECT_NEAR(y[0][c][n].item<double>(), expected, 1e-10)
          << "channel " << c << ", sample " << n;
    }
}

TEST(Equalizer, StereoVariantsTakeMonoAsDualMono) {
  at::Tensor mono_signal = at::randn({1, 1, 100});
  EXPECT_NO_THROW(run(Equalizer({8000}), mono_signal, at::zeros({1, 1024})));
  at::Tensor gains = at::randn({1, 2, 1024}) * 0.1;
  EXPECT_TRUE(at::allclose(
      run(Equalizer({8000}, EqChannels::kMidSide), mono_signal, gains),
      run(Equalizer({8000}, EqChannels::kMidSide), mono_signal.expand({1, 2, 100}), gains)));
  EXPECT_GRAFX_ERROR(run(Equalizer({8000}, EqChannels::kMidSide), at::randn({1, 3, 100}), gains),
                     "grafx.processor.inputs", "eq_midside: expected a mono or stereo");
}

}  // namespace
}  // namespace grafx
