// Zero-phase FIR design and the small signal helpers.

#include <grafx/dsp/channel_mix.h>
#include <grafx/dsp/fir.h>
#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>

namespace grafx::dsp {
namespace {

TEST(RealFfts, ValuesAndGradientsEqualATensAutograd) {
  // dsp::rfft and dsp::irfft (split rows, hand-written backward passes) against at::fft_rfft and
  // at::fft_irfft differentiated by autograd: even and odd sizes, inputs cut and zero-padded.
  at::manual_seed(7);
  for (int64_t n : {16, 17, 30, 31})
    for (int64_t have : {n - 3, n, n + 4}) {
      at::Tensor x    = at::randn({3, 5, have}, at::kDouble).requires_grad_(true);
      at::Tensor w    = at::randn({3, 5, n / 2 + 1}, at::kComplexDouble);
      at::Tensor ours = rfft(x, n), theirs = at::fft_rfft(x, n, -1);
      EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-12)) << n << " " << have;
      at::Tensor g1 = torch::autograd::grad({at::real(ours * w).sum()}, {x})[0];
      at::Tensor g2 = torch::autograd::grad({at::real(theirs * w).sum()}, {x})[0];
      EXPECT_TRUE(at::allclose(g1, g2, 1e-12, 1e-12)) << "rfft " << n << " " << have;

      at::Tensor spectrum =
          at::randn({3, 5, have / 2 + 1}, at::kComplexDouble).requires_grad_(true);
      at::Tensor v  = at::randn({3, 5, n}, at::kDouble);
      at::Tensor y1 = irfft(spectrum, n), y2 = at::fft_irfft(spectrum, n, -1);
      EXPECT_TRUE(at::allclose(y1, y2, 1e-12, 1e-12)) << n << " " << have;
      at::Tensor h1 = torch::autograd::grad({(y1 * v).sum()}, {spectrum})[0];
      at::Tensor h2 = torch::autograd::grad({(y2 * v).sum()}, {spectrum})[0];
      EXPECT_TRUE(at::allclose(h1, h2, 1e-12, 1e-12)) << "irfft " << n << " " << have;
    }
  // A real spectrum (a zero-phase response) gets a real gradient.
  at::Tensor magnitude = at::rand({4, 9}, at::kDouble).requires_grad_(true);
  at::Tensor v         = at::randn({4, 16}, at::kDouble);
  at::Tensor m1        = torch::autograd::grad({(irfft(magnitude, 16) * v).sum()}, {magnitude})[0];
  at::Tensor m2 =
      torch::autograd::grad({(at::fft_irfft(magnitude, 16, -1) * v).sum()}, {magnitude})[0];
  EXPECT_FALSE(m1.is_complex());
  EXPECT_TRUE(at::allclose(m1, m2, 1e-12, 1e-12));
  // And against finite differences, through the real and imaginary parts.
  testing::expect_gradients_match(
      [](const auto& in) { return irfft(at::complex(in[0], in[1]), 12); },
      {at::randn({2, 7}, at::kDouble), at::randn({2, 7}, at::kDouble)});
}

TEST(InverseStft, EqualsATensIstftAndItsGradientsFiniteDifferences) {
  at::manual_seed(8);
  for (int64_t hop : {96, 192}) {
    at::Tensor window  = at::hann_window(384, true, at::kDouble);
    at::Tensor spectra = at::randn({2, 3, 40, 193}, at::kComplexDouble);
    for (int64_t length : {5000, 7000, 20000}) {
      at::Tensor expected = at::istft(spectra.reshape({6, 40, 193}).transpose(1, 2), 384, hop, 384,
                                      window, true, false, true, length, false);
      at::Tensor y        = inverse_stft(spectra, window, hop, length);
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, length}));
      EXPECT_LT((y.reshape({6, length}) - expected).abs().max().item<double>(), 1e-12)
          << "hop " << hop << ", length " << length;
    }
  }
  at::Tensor window = at::hann_window(16, true, at::kDouble);
  testing::expect_gradients_match(
      [&](const auto& in) { return inverse_stft(at::complex(in[0], in[1]), window, 4, 40); },
      {at::randn({2, 12, 9}, at::kDouble), at::randn({2, 12, 9}, at::kDouble)});
}

TEST(InverseStft, FusedFunctionEqualsTheComposedForm) {
  // The CPU Function (one overlap-add pass forward, one framing pass back) against the composed
  // ATen form: outputs, gradients and recorded (create_graph) gradients in float32, the output
  // cut and zero-padded, and cut where whole frames lie past the length. A window that wants a
  // gradient takes the composed form, and gets one.
  at::manual_seed(11);
  for (auto [hop, length] :
       std::vector<std::pair<int64_t, int64_t>>{{96, 2000}, {96, 4000}, {192, 900}}) {
    const at::Tensor window  = at::hann_window(384, true, at::kFloat);
    const at::Tensor spectra = at::randn({2, 2, 30, 193}, at::kComplexFloat).requires_grad_(true);
    // The gradient of a linear map depends on the output gradient alone: it wants one.
    const at::Tensor grad  = at::randn({2, 2, length}).requires_grad_(true);
    const at::Tensor fused = inverse_stft(spectra, window, hop, length);
    const at::Tensor composed =
        composed_inverse_stft(spectra, window, hop, length).view({2, 2, length});
    // Relative to the largest value: the envelope's tail, past the last full overlap, is small
    // and divides.
    auto relative = [](const at::Tensor& a, const at::Tensor& b) {
      return ((a - b).abs().max() / b.abs().max()).item<double>();
    };
    EXPECT_LT(relative(fused, composed), 1e-6) << hop << " " << length;
    for (bool recorded : {false, true}) {
      const at::Tensor ours = torch::autograd::grad({fused}, {spectra}, {grad}, true, recorded)[0];
      const at::Tensor theirs = torch::autograd::grad({composed}, {spectra}, {grad}, true)[0];
      EXPECT_EQ(ours.requires_grad(), recorded);
      EXPECT_LT(relative(ours, theirs), 1e-6) << hop << " " << length;
    }
    const at::Tensor learnt = window.clone().requires_grad_(true);
    const at::Tensor y      = inverse_stft(spectra, learnt, hop, length);
    EXPECT_LT(relative(y, composed), 1e-6);
    EXPECT_TRUE(torch::autograd::grad({y}, {learnt}, {grad})[0].abs().sum().item<double>() > 0);
  }
}

TEST(DryWet, IsATensLerpToTheBitAndItsGradientsAutogradsThroughIt) {
  // Forward: at::lerp itself. Backward (one pass, per-item sums): against autograd through
  // at::lerp in float64, every input or some wanting gradients; recorded (create_graph)
  // gradients differentiate again as lerp's; a wet amount per sample takes at::lerp whole.
  at::manual_seed(12);
  const at::Tensor dry = at::randn({3, 2, 1000}, at::kDouble), processed = at::randn_like(dry),
                   wet = at::rand({3, 1, 1}, at::kDouble), grad = at::randn_like(dry);
  for (int wanted = 1; wanted < 8; ++wanted) {
    std::vector<at::Tensor> ours, theirs;
    for (const at::Tensor& t : {dry, processed, wet})
      ours.push_back(t.clone().requires_grad_(bool(wanted & (1 << ours.size()))));
    for (const at::Tensor& t : ours) theirs.push_back(t.detach().requires_grad_(t.requires_grad()));
    const at::Tensor y        = dry_wet(ours[0], ours[1], ours[2]),
                     expected = at::lerp(theirs[0], theirs[1], theirs[2]);
    EXPECT_TRUE(at::equal(y, expected));
    std::vector<at::Tensor> a, b;
    for (size_t i = 0; i < 3; ++i)
      if (ours[i].requires_grad()) a.push_back(ours[i]), b.push_back(theirs[i]);
    const auto ga = torch::autograd::grad({y}, a, {grad}),
               gb = torch::autograd::grad({expected}, b, {grad});
    for (size_t i = 0; i < ga.size(); ++i)
      EXPECT_TRUE(at::allclose(ga[i], gb[i], 1e-12, 1e-12)) << wanted << " " << i;
  }
  // Recorded: the wet amount's gradient differentiated by the processed signal is g.
  const at::Tensor p = processed.clone().requires_grad_(true), w = wet.clone().requires_grad_(true);
  const at::Tensor grad_wet =
      torch::autograd::grad({dry_wet(dry, p, w)}, {w}, {grad}, true, true)[0];
  const at::Tensor second = torch::autograd::grad({grad_wet.sum()}, {p})[0];
  EXPECT_TRUE(at::allclose(second, grad, 1e-12, 1e-12));
  // One signal as dry and processed (a pass-through), recorded: ∂ = g·(1 − w) + g·w, once.
  for (bool recorded : {false, true}) {
    const at::Tensor t = dry.clone().requires_grad_(true);
    EXPECT_TRUE(
        at::allclose(torch::autograd::grad({dry_wet(t, t, wet)}, {t}, {grad}, true, recorded)[0],
                     grad, 1e-12, 1e-12))
        << recorded;
  }
  // A wet amount per sample: at::lerp's own gradients.
  const at::Tensor per_sample = at::rand({3, 1, 1000}, at::kDouble).requires_grad_(true);
  const at::Tensor y          = dry_wet(dry, processed, per_sample);
  EXPECT_TRUE(at::equal(y, at::lerp(dry, processed, per_sample)));
  EXPECT_TRUE(at::allclose(torch::autograd::grad({y}, {per_sample}, {grad})[0],
                           (grad * (processed - dry)).sum(1, true), 1e-12, 1e-12));
}

TEST(ZeroPadded, EqualsConstantPadAndItsGradientIsTheCut) {
  // Against ATen's constant_pad_nd, pads on either side, both or none; the gradient is the
  // output gradient cut back, recorded where x has a gradient; a tangent is padded alike;
  // negative pads are refused.
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, 3, 17}, at::kDouble).requires_grad_(true);
  for (auto [left, right] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {5, 0}, {0, 9}, {4, 11}}) {
    const at::Tensor y = zero_padded(x, left, right);
    EXPECT_TRUE(at::equal(y, at::constant_pad_nd(x, {left, right}))) << left << ", " << right;
    const at::Tensor g = at::randn_like(y);
    EXPECT_TRUE(at::equal(torch::autograd::grad({y}, {x}, {g})[0], g.narrow(-1, left, 17)));
    const at::Tensor dx = at::randn_like(x);
    at::Tensor tangent;
    {
      ForwardMode mode;
      tangent = unpack_dual(zero_padded(make_dual(x.detach(), dx), left, right)).second;
    }
    EXPECT_TRUE(at::equal(tangent, at::constant_pad_nd(dx, {left, right})));
  }
  EXPECT_THROW(zero_padded(x, -1, 2), c10::Error);
}

TEST(OverlapAdd, EqualsPlainLoopsAndItsAdjointIsUnfold) {
  // Against loops in double (frames longer and shorter than the hop, a length beyond the last
  // frame); the gradient against <overlap_add(f), g> = <f, unfold(g)>; second derivatives and
  // tangents (linear: the tangent's overlap-add); float32 against ATen's unfold_backward.
  at::manual_seed(11);
  for (auto [n, hop] : {std::pair<int64_t, int64_t>{8, 3}, {5, 5}, {3, 7}}) {
    const int64_t frames = 6, length = (frames - 1) * hop + n + 4;
    at::Tensor x        = at::randn({3, frames, n}, at::kDouble).requires_grad_(true);
    at::Tensor expected = at::zeros({3, length}, at::kDouble);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t t = 0; t < frames; ++t)
        for (int64_t i = 0; i < n; ++i) expected[r][t * hop + i] += x[r][t][i].item<double>();
    const at::Tensor y = overlap_add(x, length, hop);
    EXPECT_TRUE(at::allclose(y, expected, 1e-14, 1e-14)) << n << " " << hop;
    const at::Tensor g    = at::randn({3, length}, at::kDouble).requires_grad_(true);
    const at::Tensor grad = torch::autograd::grad({(y * g).sum()}, {x}, {}, true, true)[0];
    EXPECT_TRUE(at::allclose(grad, g.narrow(1, 0, length - 4).unfold(1, n, hop), 1e-14, 1e-14));
    // The recorded gradient differentiates again: d<grad, v>/dg = overlap_add(v).
    const at::Tensor v = at::randn_like(x);
    EXPECT_TRUE(at::allclose(torch::autograd::grad({(grad * v).sum()}, {g})[0],
                             overlap_add(v, length, hop), 1e-14, 1e-14));
    const at::Tensor dx = at::randn_like(x);
    at::Tensor tangent;
    {
      ForwardMode mode;
      tangent = unpack_dual(overlap_add(make_dual(x.detach(), dx), length, hop)).second;
    }
    EXPECT_TRUE(at::allclose(tangent, overlap_add(dx, length, hop), 1e-14, 1e-14));
    const at::Tensor single = x.detach().to(at::kFloat);
    EXPECT_TRUE(at::allclose(overlap_add(single, length, hop),
                             at::unfold_backward(single, {3, length}, 1, n, hop), 1e-6, 1e-6));
  }
  EXPECT_EQ(overlap_add(at::randn({2, 4, 8}), 20, 4).size(1), 20);     // (4 − 1)·4 + 8 samples
  EXPECT_THROW(overlap_add(at::randn({2, 4, 8}), 19, 4), c10::Error);  // one short
  EXPECT_THROW(overlap_add(at::randn({2, 4, 8}), 40, 0), c10::Error);  // no hop
  EXPECT_THROW(overlap_add(at::randn({4, 8}), 40, 4), c10::Error);     // no rows
}

TEST(ChannelMix, EqualsTheProductWrittenOutAndItsGradients) {
  // The one-pass kernel against y_i = Σ_j M_ij·x_j written with ATen: mono and stereo inputs,
  // lengths of one block and of several (with a partial last one), float64 and float32.
  at::manual_seed(9);
  for (int64_t channels : {1, 2})
    for (int64_t length : {100, 40000})
      for (auto dtype : {at::kDouble, at::kFloat}) {
        at::Tensor x      = at::randn({3, channels, length}, dtype).requires_grad_(true);
        at::Tensor m      = at::randn({3, 2, 2}, dtype).requires_grad_(true);
        at::Tensor g      = at::randn({3, 2, length}, dtype);
        at::Tensor stereo = x.expand({3, 2, length});
        at::Tensor expected =
            at::stack({m.select(1, 0).select(1, 0).view({3, 1}) * stereo.select(1, 0) +
                           m.select(1, 0).select(1, 1).view({3, 1}) * stereo.select(1, 1),
                       m.select(1, 1).select(1, 0).view({3, 1}) * stereo.select(1, 0) +
                           m.select(1, 1).select(1, 1).view({3, 1}) * stereo.select(1, 1)},
                      1);
        at::Tensor y           = mix_channels(x, m);
        const double tolerance = dtype == at::kDouble ? 1e-12 : 1e-4;
        EXPECT_TRUE(at::allclose(y, expected, tolerance, tolerance));
        auto ours   = torch::autograd::grad({(y * g).sum()}, {x, m});
        auto theirs = torch::autograd::grad({(expected * g).sum()}, {x, m});
        for (size_t i = 0; i < 2; ++i)
          EXPECT_TRUE(at::allclose(ours[i], theirs[i], tolerance, tolerance))
              << "gradient " << i << ", " << channels << " channels, " << length << " samples";
      }
  // Differentiable again: the gradient's own gradient against finite differences.
  testing::expect_gradients_match(
      [](const auto& in) {
        // The finite differences call this without gradients: x then becomes a leaf here.
        at::Tensor x = in[0].requires_grad() ? in[0] : in[0].detach().requires_grad_(true);
        at::Tensor y = mix_channels(x, in[1]);
        return torch::autograd::grad({(y * y).sum()}, {x}, {}, true, true)[0];
      },
      {at::randn({2, 2, 50}, at::kDouble), at::randn({2, 2, 2}, at::kDouble)});
  EXPECT_THROW(mix_channels(at::randn({2, 3, 10}), at::randn({2, 2, 2})), c10::Error);
  EXPECT_THROW(mix_channels(at::randn({2, 2, 10}), at::randn({3, 2, 2})), c10::Error);
}

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

/// piecewise_linear by hand, one sample at a time, in float64 through autograd: the point at or
/// before each sample and the one after, held outside the points.
at::Tensor naive_piecewise_linear(const at::Tensor& values, const std::vector<double>& positions,
                                  int64_t length) {
  std::vector<at::Tensor> samples;
  const auto last = int64_t(positions.size()) - 1;
  for (int64_t i = 0; i < length; ++i) {
    int64_t after = 0;
    while (after <= last && positions[size_t(after)] <= double(i)) ++after;
    if (after == 0 || after > last) {
      samples.push_back(values.select(1, std::min(after, last)));
      continue;
    }
    const double t = (double(i) - positions[size_t(after - 1)]) /
                     (positions[size_t(after)] - positions[size_t(after - 1)]);
    samples.push_back(values.select(1, after - 1) * (1 - t) + values.select(1, after) * t);
  }
  return at::stack(samples, -1);
}

TEST(Signal, PiecewiseLinearEqualsANaiveCurveInValuesAndGradients) {
  // The CPU Function (runs of samples between two points, its own backward) against the naive
  // curve differentiated by autograd: points before, inside and after the samples, fractional
  // and integer positions, one point, a sample on a point, scalar and vector values per point.
  at::manual_seed(3);
  const std::vector<std::vector<double>> cases = {
      {-10.5, 3, 7.25, 20, 20.5, 40}, {0, 10, 20, 30}, {12.0}, {-5, -1}, {33, 50}};
  for (const auto& positions : cases)
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, std::vector<int64_t>{2}}) {
      std::vector<int64_t> dims = {3, int64_t(positions.size())};
      dims.insert(dims.end(), shape.begin(), shape.end());
      at::Tensor values = at::randn(dims, at::kDouble).requires_grad_(true);
      at::Tensor ours   = piecewise_linear(values, positions, 30);
      at::Tensor theirs = naive_piecewise_linear(values, positions, 30);
      ASSERT_EQ(ours.sizes(), theirs.sizes());
      EXPECT_TRUE(at::allclose(ours, theirs, 1e-14, 1e-14)) << positions.size();
      at::Tensor weights = at::randn_like(theirs);
      at::Tensor g_ours  = torch::autograd::grad({(ours * weights).sum()}, {values})[0];
      at::Tensor g_naive = torch::autograd::grad({(theirs * weights).sum()}, {values})[0];
      EXPECT_TRUE(at::allclose(g_ours, g_naive, 1e-13, 1e-13)) << positions.size();
      // In float32 the same curve within rounding; and a recorded backward pass (the composed
      // form) gives the same gradient, itself differentiable in the weights.
      at::Tensor single = values.detach().to(at::kFloat).requires_grad_(true);
      at::Tensor y32    = piecewise_linear(single, positions, 30);
      EXPECT_TRUE(at::allclose(y32.to(at::kDouble), theirs, 1e-6, 1e-6));
      at::Tensor w     = weights.detach().requires_grad_(true);
      at::Tensor g_rec = torch::autograd::grad({(ours * w).sum()}, {values}, {}, true, true)[0];
      EXPECT_TRUE(at::allclose(g_rec, g_naive, 1e-13, 1e-13));
      at::Tensor d_w = torch::autograd::grad({g_rec.sum()}, {w})[0];  // the curve of ones
      EXPECT_TRUE(at::allclose(d_w, at::ones_like(w), 1e-13, 1e-13));
    }
}

TEST(Signal, PiecewiseLinearCarriesTangents) {
  // Linear in the values: the tangent of a curve is the curve of the tangents.
  at::manual_seed(4);
  const std::vector<double> positions = {-2.5, 4, 9.75, 17};
  at::Tensor values = at::randn({2, 4, 2}, at::kDouble), direction = at::randn_like(values);
  ForwardMode mode;
  auto [y, dy] = unpack_dual(piecewise_linear(make_dual(values, direction), positions, 20));
  EXPECT_TRUE(at::allclose(y, naive_piecewise_linear(values, positions, 20), 1e-14, 1e-14));
  EXPECT_TRUE(at::allclose(dy, naive_piecewise_linear(direction, positions, 20), 1e-14, 1e-14));
}

TEST(Signal, PiecewiseLinearAtEvenPointsEqualsTheNaiveCurvePerRow) {
  // Each row's place from a tensor (as a captured GPU step reads it): the naive curve at that
  // row's positions, points 6.5 samples apart, the first sample before, among and after them.
  at::manual_seed(5);
  const double samples_per_point          = 6.5;
  const std::vector<double> first_samples = {-20, 0, 9.25, 60};  // sample 0's place, in samples
  at::Tensor values                       = at::randn({4, 5, 2}, at::kDouble).requires_grad_(true);
  at::Tensor first_points = at::tensor(first_samples, at::kDouble) / samples_per_point;
  at::Tensor ours         = piecewise_linear_at(values, first_points, 1 / samples_per_point, 30);
  std::vector<at::Tensor> rows;
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<double> positions;  // of the points, in samples from the row's first
    for (int64_t k = 0; k < 5; ++k)
      positions.push_back(double(k) * samples_per_point - first_samples[size_t(r)]);
    rows.push_back(naive_piecewise_linear(values.narrow(0, r, 1), positions, 30));
  }
  at::Tensor theirs = at::cat(rows);
  ASSERT_EQ(ours.sizes(), theirs.sizes());
  EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-12));
  at::Tensor weights = at::randn_like(theirs);
  at::Tensor g_ours  = torch::autograd::grad({(ours * weights).sum()}, {values})[0];
  at::Tensor g_naive = torch::autograd::grad({(theirs * weights).sum()}, {values})[0];
  EXPECT_TRUE(at::allclose(g_ours, g_naive, 1e-12, 1e-12));
  // The host form with the same positions agrees (the render takes one or the other), in float32
  // too, and the tangent of the curve is the curve of the tangents.
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<double> positions;
    for (int64_t k = 0; k < 5; ++k)
      positions.push_back(double(k) * samples_per_point - first_samples[size_t(r)]);
    at::Tensor row = values.detach().narrow(0, r, 1).to(at::kFloat);
    EXPECT_TRUE(at::allclose(
        piecewise_linear_at(row, first_points.narrow(0, r, 1), 1 / samples_per_point, 30),
        piecewise_linear(row, positions, 30), 1e-6, 1e-6));
  }
  at::Tensor direction = at::randn_like(values);
  ForwardMode mode;
  auto [y, dy] = unpack_dual(piecewise_linear_at(make_dual(values.detach(), direction),
                                                 first_points, 1 / samples_per_point, 30));
  EXPECT_TRUE(at::allclose(y, theirs, 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(
      dy, piecewise_linear_at(direction, first_points, 1 / samples_per_point, 30), 1e-14, 1e-14));
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
