// Golden checks of the multitap delay (exact integer delays, coloured taps, radii loss) and the
// noise reverb (energy normalisation, decay, mid/side structure).

#include <grafx/dsp/fir.h>
#include <grafx/dsp/surrogate_delay.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/reverb.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr SampleRate kRate = 4000;  // segments of 400 samples, impulse responses of 8000

/// One delay per tap, in samples within its segment: taps 0–19 left, 20–39 right.
at::Tensor delays_for_test(int64_t segment) {
  at::Tensor taps = at::arange(MultitapDelay::kTaps, at::kDouble);
  return (taps * 37 + 5).remainder(double(segment));
}

TEST(MultitapDelay, ForwardIsAnExactSumOfIntegerDelays) {
  MultitapDelay delay({kRate});
  int64_t segment = delay.segment_length();
  ASSERT_EQ(segment, 400);
  at::Tensor delays = delays_for_test(segment);
  TensorDict p{{"delay_z", dsp::delay_to_z(delays, segment).unsqueeze(0)},
               {"log_fir_magnitude", at::zeros({1, 40, 20}, at::kDouble)}};
  at::manual_seed(1);
  at::Tensor x        = at::randn({1, 2, 9000}, at::kDouble);
  ProcessorOutput out = delay.forward({x}, p);
  at::Tensor expected = at::zeros_like(x);
  for (int64_t t = 0; t < 40; ++t) {
    int64_t c = t / 20, shift = (t % 20) * segment + delays[t].item<int64_t>();
    expected[0][c].narrow(0, shift, 9000 - shift) += x[0][c].narrow(0, 0, 9000 - shift);
  }
  expected /= std::sqrt(20.0);  // 20 unit taps per channel, energy-normalised
  EXPECT_TRUE(at::allclose(out.outputs[0], expected, 1e-9, 1e-12));
  at::Tensor physical = delay.to_physical(p).at("delay_ms")[0];
  EXPECT_NEAR(physical[21].item<double>(), (400 + delays[21].item<double>()) / kRate * 1000, 1e-9);
  // The radii loss of |z̃| = atanh(0.999) per tap.
  EXPECT_NEAR(out.aux_losses.at("radii")[0].item<double>(), 40 * std::pow(1 - 0.999, 2), 1e-9);
}

TEST(MultitapDelay, ColouredTapsSpillAcrossSegmentBorders) {
  MultitapDelay delay({kRate});
  int64_t segment   = delay.segment_length();
  at::Tensor delays = at::zeros({40}, at::kDouble);  // every tap at its segment's start
  at::manual_seed(2);
  at::Tensor log_magnitude = at::randn({1, 40, 20}, at::kDouble) * 0.5;
  TensorDict p{{"delay_z", dsp::delay_to_z(delays, segment).unsqueeze(0)},
               {"log_fir_magnitude", log_magnitude}};
  at::Tensor ir = delay.impulse_responses(p).first[0];
  at::Tensor fir =
      dsp::zero_phase_fir(log_magnitude[0], dsp::zero_phase_window(20, at::kDouble));  // 40×39
  at::Tensor expected = at::zeros({2, 20 * segment}, at::kDouble);
  for (int64_t t = 0; t < 40; ++t)
    for (int64_t k = 0; k < 39; ++k) {
      int64_t n = (t % 20) * segment + k - 19;  // centred on the tap, cut only outside [0, 2 s)
      if (n >= 0) expected[t / 20][n] += fir[t][k];
    }
  expected /= (expected.pow(2).sum(-1).mean() + 1e-12).sqrt();
  EXPECT_TRUE(at::allclose(ir, expected, 1e-9, 1e-12));
}

TEST(NoiseReverb, ImpulseResponsesAreNormalisedAndDecayAsTheMask) {
  NoiseReverb reverb({kRate});
  int64_t n_bins = 193;
  // Mid decays slowly, side fast; flat spectra.
  at::Tensor decay_raw =
      at::stack({at::full({n_bins}, -2.0, at::kDouble), at::full({n_bins}, 1.0, at::kDouble)});
  TensorDict p{{"init_log_magnitude", at::zeros({1, 2, n_bins}, at::kDouble)},
               {"delta_log_magnitude", decay_raw.unsqueeze(0)}};
  at::Tensor ir = reverb.impulse_responses(p, at::kDouble)[0];
  ASSERT_EQ(ir.sizes(), at::IntArrayRef({2, 8000}));
  EXPECT_NEAR(ir.pow(2).sum(-1).mean().item<double>(), 1.0, 1e-9);
  // The mid (L + R)/2 decays by softplus(raw)/8 nepers per hop of 192 samples: compare the
  // energy of frames 10 hops apart.
  at::Tensor mid    = (ir[0] + ir[1]) / 2;
  auto frame_energy = [&](int64_t frame) {
    return mid.narrow(0, frame * 192, 192).pow(2).sum().item<double>();
  };
  double measured =
      std::log(frame_energy(5) / frame_energy(25)) / 2 / 20;  // nepers of amplitude per hop
  double expected = std::log1p(std::exp(-2.0)) / 8;
  EXPECT_NEAR(measured, expected, 0.2 * expected);
  // No side: both channels are the same impulse response.
  p["init_log_magnitude"] =
      at::stack({at::zeros({n_bins}, at::kDouble), at::full({n_bins}, -400.0, at::kDouble)})
          .unsqueeze(0);
  ir = reverb.impulse_responses(p, at::kDouble)[0];
  EXPECT_TRUE(at::allclose(ir[0], ir[1], 1e-12, 1e-12));
}

TEST(NoiseReverb, ConvolvesCausallyWithItsImpulseResponse) {
  NoiseReverb reverb({kRate});
  at::manual_seed(3);
  TensorDict p{{"init_log_magnitude", at::randn({1, 2, 193}, at::kDouble)},
               {"delta_log_magnitude", at::randn({1, 2, 193}, at::kDouble)}};
  at::Tensor x = at::zeros({1, 2, 600}, at::kDouble);
  x[0][0][100] = 1.0, x[0][1][0] = -2.0;
  at::Tensor y  = reverb.forward({x}, p).outputs[0];
  at::Tensor ir = reverb.impulse_responses(p, at::kDouble)[0];
  EXPECT_TRUE(at::allclose(y[0][0].narrow(0, 100, 500), ir[0].narrow(0, 0, 500), 1e-10, 1e-12));
  EXPECT_LT(y[0][0].narrow(0, 0, 100).abs().max().item<double>(), 1e-12) << "causal";
  EXPECT_TRUE(at::allclose(y[0][1], -2 * ir[1].narrow(0, 0, 600), 1e-10, 1e-12));
  EXPECT_GRAFX_ERROR(NoiseReverb({50}), "grafx.processor.config",
                     "impulse response of at least 384 samples");
}

}  // namespace
}  // namespace grafx
