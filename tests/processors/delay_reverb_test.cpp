// Golden checks of the multitap delay (exact integer delays, coloured taps, radii loss) and the
// noise reverb (energy normalisation, decay, mid/side structure), and the filtered-noise reverb
// (its crossovers, bands that sum back to the noise, decay times and real gains per band, mid/side
// convolution), and of their options (channel layouts, taps per segment, pre-delay, gain
// envelope, fade-in).

#include <grafx/dsp/fir.h>
#include <grafx/dsp/signal.h>
#include <grafx/dsp/surrogate_delay.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/filtered_noise_reverb.h>
#include <grafx/processors/linear_processor.h>
#include <grafx/processors/registry.h>
#include <grafx/processors/reverb.h>

#include "support/gradient_check.h"
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

TEST(MultitapDelay, ResponseSupportHoldsItsTapsAndOnlyRoundingsLieOutside) {
  // Where the response may be non-zero: the coloured taps' spans, a few percent of the lags.
  // The response measured as the stream measures it (forward on impulses, float32, through
  // FFTs) is only roundings elsewhere.
  MultitapDelay delay({kRate});
  const int64_t segment = delay.segment_length(), length = 20 * segment;
  at::manual_seed(3);
  TensorDict raw{
      {"delay_z", dsp::delay_to_z(delays_for_test(segment), segment).unsqueeze(0).to(at::kFloat)},
      {"log_fir_magnitude", at::randn({1, 40, 20}, at::kFloat) * 0.5}};
  const at::Tensor support = delay.response_support(raw);
  ASSERT_EQ(support.sizes(), at::IntArrayRef({length}));
  EXPECT_LE(support.sum().item<int64_t>(), 40 * 39);
  at::Tensor impulses = at::zeros({2, 2, length}, at::kFloat);
  impulses[0][0][0] = 1, impulses[1][1][0] = 1;
  TensorDict both;
  for (const auto& [name, value] : raw)
    both[name] = value.expand({2, value.size(1), value.size(2)});
  const at::Tensor response = delay.forward({impulses}, both).outputs[0];
  const double peak         = response.abs().max().item<double>();
  const double outside = response.masked_select(support.logical_not()).abs().max().item<double>();
  EXPECT_LE(outside, 1e-6 * peak);
  EXPECT_GT(outside, 0.0);  // the roundings the mask removes (else this test checks nothing)
  // Every non-zero tap of the exact response lies inside.
  const at::Tensor exact = delay.impulse_responses(raw).first[0];
  EXPECT_TRUE(at::equal(exact.ne(0).any(0).logical_and(support.logical_not()).any(),
                        at::zeros({}, at::kBool)));
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

TEST(LinearProcessor, ResponseSupportsAreNonZeroLagsOrUntilDecayed) {
  // Decays of 0.9^t and 0.5·0.95^t (alternating signs): above 1e-9 of the peak (1) until
  // t = 196 and t = 390, so the responses matter until 390.
  const at::Tensor t = at::arange(1000, at::kDouble);
  at::Tensor responses =
      at::stack({at::pow(0.9, t), 0.5 * at::pow(-0.95, t)}).unsqueeze(0).to(at::kFloat);
  at::Tensor support = LinearProcessor::until_decayed(responses);
  EXPECT_EQ(support.sum().item<int64_t>(), 391);
  EXPECT_TRUE(support.narrow(0, 0, 391).all().item<bool>());
  // The lags where any response is non-zero.
  responses.zero_();
  responses[0][0][3] = 1, responses[0][1][7] = -1e-30f;
  support = LinearProcessor::nonzero_lags(responses);
  EXPECT_EQ(support.sum().item<int64_t>(), 2);
  EXPECT_TRUE(support[3].item<bool>() && support[7].item<bool>());
}

TEST(NoiseReverb, ResponseSupportEndsWhereTheResponseHasDecayed) {
  NoiseReverb reverb({kRate});
  const int64_t n_bins = 193;
  auto last_lag        = [&](double decay_raw) {
    TensorDict raw{{"init_log_magnitude", at::zeros({1, 2, n_bins}, at::kFloat)},
                   {"delta_log_magnitude", at::full({1, 2, n_bins}, decay_raw, at::kFloat)}};
    const at::Tensor support = reverb.response_support(raw);
    EXPECT_EQ(support.size(0), 8000);
    const int64_t kept = support.sum().item<int64_t>();
    EXPECT_TRUE(support.narrow(0, 0, kept).all().item<bool>());  // a prefix
    // In float64, the response after the cut is below the tolerance (with float32's slack).
    TensorDict p;
    for (const auto& [name, value] : raw) p[name] = value.to(at::kDouble);
    const at::Tensor ir = reverb.impulse_responses(p, at::kDouble).abs();
    const double peak   = ir.max().item<double>();
    if (kept < 8000) {
      EXPECT_LE(ir.narrow(-1, kept, 8000 - kept).max().item<double>(), 2e-9 * peak);
    }
    return kept - 1;
  };
  // A fast decay (softplus(6)/8 nepers a hop of 192) falls below 1e-9 (20.7 nepers) after
  // about 28 hops; a slow one keeps all 2 s.
  const int64_t fast = last_lag(6.0);
  EXPECT_GT(fast, 20 * 192);
  EXPECT_LT(fast, 34 * 192);
  EXPECT_EQ(last_lag(-2.0), 7999);
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

TEST(FilteredNoiseReverb, BandsAreLogSpacedAndSumBackToTheNoise) {
  FilteredNoiseReverb reverb({44100});
  std::vector<double> hz = reverb.crossovers_hz();
  ASSERT_EQ(hz.size(), 11u);
  // Odd points of 23 points evenly spaced in log frequency from 31.5 Hz to 15 kHz.
  const double step = std::log(15000.0 / 31.5) / 22;
  for (size_t i = 0; i < hz.size(); ++i)
    EXPECT_NEAR(hz[i], 31.5 * std::exp(step * double(2 * i + 1)), 1e-9 * hz[i]) << i;
  at::Tensor bands = reverb.band_noise();  // [2, 12, L]
  ASSERT_EQ(bands.sizes(), at::IntArrayRef({2, 12, 88200}));
  at::Tensor noise = dsp::uniform_noise(2, 88200, FilteredNoiseReverb::kNoiseSeed);
  // Zero-phase Butterworth low- and high-pass are power complementary: the bands add up to the
  // noise (away from the ends, where forward-backward filtering starts from rest).
  at::Tensor middle = (bands.sum(1) - noise).narrow(1, 22050, 44100);
  EXPECT_LT(middle.abs().max().item<double>(), 1e-6);
  // Each band holds its frequencies: most of the 6th band's energy lies between its crossovers
  // (bands 0.56 octave wide, LR-4 slopes of 24 dB per octave), nearly all of it within the next
  // crossovers out.
  at::Tensor spectrum = at::fft_rfft(bands[0][6]).abs().pow(2);
  at::Tensor f        = at::arange(spectrum.size(0), at::kDouble) * (44100.0 / 88200);
  const double total  = spectrum.sum().item<double>();
  auto share          = [&](double lo, double hi) {
    return spectrum.masked_select((f > lo) & (f < hi)).sum().item<double>() / total;
  };
  EXPECT_GT(share(hz[5], hz[6]), 0.55);
  EXPECT_GT(share(hz[4], hz[7]), 0.95);
}

TEST(FilteredNoiseReverb, ImpulseResponsesFollowThePhysicalDecayTimesAndGains) {
  FilteredNoiseReverb reverb({kRate});
  auto specs = reverb.parameter_specs();
  // Decay times and gains per band and channel, in physical units.
  at::Tensor decay_ms =
      at::stack({at::linspace(1800, 60, 12, at::kDouble), at::linspace(300, 900, 12, at::kDouble)})
          .unsqueeze(0);
  at::Tensor gain_db =
      at::stack({at::linspace(0, -12, 12, at::kDouble), at::linspace(-6, 6, 12, at::kDouble)})
          .unsqueeze(0);
  TensorDict raw{{"z_decay", specs[0].to_raw(decay_ms)}, {"log_gain", specs[1].to_raw(gain_db)}};
  at::Tensor ir = reverb.impulse_responses(raw, at::TensorOptions(at::kDouble));  // 1×2×8000
  // The same written out: e^{n·d} with d = −3·ln10 / (T60·fs), gains 10^(dB/20).
  at::Tensor n = at::arange(8000, at::kDouble), bands = reverb.band_noise();
  at::Tensor expected = at::zeros({2, 8000}, at::kDouble);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t b = 0; b < 12; ++b) {
      double d    = -3 * std::log(10.0) / (decay_ms[0][c][b].item<double>() * 1e-3 * kRate);
      double gain = std::pow(10.0, gain_db[0][c][b].item<double>() / 20);
      expected[c] += gain * (d * n).exp() * bands[c][b];
    }
  expected = expected / (expected.pow(2).sum(-1).mean() + 1e-12).sqrt();
  EXPECT_LT((ir[0] - expected).abs().max().item<double>(), 1e-9);
  EXPECT_NEAR(ir.pow(2).sum(-1).mean().item<double>(), 1.0, 1e-9);  // energy-normalised
  // A band alone decays by 60 dB in its decay time: mid band 3 at 1000 ms, energy 0.3 s apart.
  decay_ms.fill_(1000);
  gain_db.fill_(-120);
  gain_db[0][0][3] = 0;
  raw            = {{"z_decay", specs[0].to_raw(decay_ms)}, {"log_gain", specs[1].to_raw(gain_db)}};
  at::Tensor mid = reverb.impulse_responses(raw, at::TensorOptions(at::kDouble))[0][0];
  auto energy    = [&](double from_s) {
    return mid.narrow(0, int64_t(from_s * kRate), kRate / 5).pow(2).sum().item<double>();
  };
  EXPECT_NEAR(10 * std::log10(energy(0.5) / energy(0.2)), -18.0, 1.5);
}

TEST(FilteredNoiseReverb, ConvolvesMidAndSideWithTheirImpulseResponses) {
  FilteredNoiseReverb reverb({kRate});
  at::manual_seed(2);
  TensorDict raw{{"z_decay", at::randn({1, 2, 12}, at::kDouble)},
                 {"log_gain", at::randn({1, 2, 12}, at::kDouble) * 0.5}};
  at::Tensor x  = at::randn({1, 2, 3000}, at::kDouble);
  at::Tensor y  = reverb.forward({x}, raw).outputs[0];
  at::Tensor ir = reverb.impulse_responses(raw, at::TensorOptions(at::kDouble))[0];
  // Direct sums of the first samples: M = (L + R)/2, S = (L − R)/2, L' = M' + S', R' = M' − S'.
  at::Tensor m = (x[0][0] + x[0][1]) / 2, side = (x[0][0] - x[0][1]) / 2;
  for (int64_t t : {0, 17, 999, 2999}) {
    double m_out = 0, s_out = 0;
    for (int64_t k = 0; k <= t; ++k) {
      m_out += ir[0][k].item<double>() * m[t - k].item<double>();
      s_out += ir[1][k].item<double>() * side[t - k].item<double>();
    }
    EXPECT_NEAR(y[0][0][t].item<double>(), m_out + s_out, 1e-9) << t;
    EXPECT_NEAR(y[0][1][t].item<double>(), m_out - s_out, 1e-9) << t;
  }
}

ProcessorConfig with_options(ProcessorOptions options) {
  ProcessorConfig config{kRate};
  config.options = std::move(options);
  return config;
}

TEST(MultitapDelay, OptionsTapsPerSegmentMonoBareTapsAndPreDelayAreExactShifts) {
  // Mono layout, 3 segments of 50 ms with 2 bare taps each, 30 ms of pre-delay: the output is
  // the input shifted by each tap's delay, summed, over the response's energy.
  MultitapDelay delay(with_options({{"channels", std::string("mono")},
                                    {"segments", 3.0},
                                    {"segment_ms", 50.0},
                                    {"taps_per_segment", 2.0},
                                    {"colour_taps", false},
                                    {"pre_delay_ms", 30.0}}));
  const int64_t segment = delay.segment_length(), pre = 120;  // 200 and 120 samples
  ASSERT_EQ(segment, 200);
  ASSERT_EQ(delay.n_taps(), 6);
  ASSERT_EQ(delay.parameter_specs().size(), 1u);  // no colour filters
  at::Tensor within = at::tensor({3.0, 150.0, 0.0, 0.0, 77.0, 199.0}, at::kDouble);
  TensorDict p{{"delay_z", dsp::delay_to_z(within, segment).unsqueeze(0)}};
  at::manual_seed(5);
  at::Tensor x = at::randn({1, 1, 2000}, at::kDouble);  // mono in, mono out
  at::Tensor y = delay.forward({x}, p).outputs[0];
  ASSERT_EQ(y.sizes(), x.sizes());
  at::Tensor expected = at::zeros_like(x), ir = at::zeros({pre + 3 * segment}, at::kDouble);
  for (int64_t t = 0; t < 6; ++t) {
    int64_t shift = pre + (t / 2) * segment + within[t].item<int64_t>();
    expected[0][0].narrow(0, shift, 2000 - shift) += x[0][0].narrow(0, 0, 2000 - shift);
    ir[shift] += 1;
  }
  expected /= ir.pow(2).sum().sqrt();  // two taps share sample 400: energy 1+1+4+1+1
  EXPECT_TRUE(at::allclose(y, expected, 1e-9, 1e-12));
  EXPECT_NEAR(delay.to_physical(p).at("delay_ms")[0][4].item<double>(), (120 + 400 + 77) / 4.0,
              1e-9);
}

TEST(MultitapDelay, MidSideLayoutDelaysTheMidAndTheSide) {
  MultitapDelay stereo({kRate}), midside(with_options({{"channels", std::string("midside")}}));
  at::manual_seed(6);
  TensorDict p{{"delay_z", dsp::delay_to_z(delays_for_test(400), 400).unsqueeze(0)},
               {"log_fir_magnitude", at::randn({1, 40, 20}, at::kDouble) * 0.3}};
  at::Tensor x        = at::randn({1, 2, 3000}, at::kDouble);
  at::Tensor expected = dsp::from_mid_side(stereo.forward({dsp::to_mid_side(x)}, p).outputs[0]);
  EXPECT_TRUE(at::allclose(midside.forward({x}, p).outputs[0], expected, 1e-10, 1e-12));
}

TEST(NoiseReverb, ChannelLayoutsUseTheTwoNoisesAsGrafxDoes) {
  NoiseReverb pseudo({kRate}), stereo(with_options({{"channels", std::string("stereo")}})),
      midside(with_options({{"channels", std::string("midside")}})),
      mono(with_options({{"channels", std::string("mono")}}));
  at::manual_seed(7);
  TensorDict p{{"init_log_magnitude", at::randn({1, 2, 193}, at::kDouble)},
               {"delta_log_magnitude", at::randn({1, 2, 193}, at::kDouble)}};
  const at::TensorOptions f64(at::kDouble);
  at::Tensor h = stereo.impulse_responses(p, f64);  // the two shaped noises, normalised
  // Pseudo mid/side: the pair taken as mid and side, turned into left/right, normalised.
  EXPECT_TRUE(at::allclose(pseudo.impulse_responses(p, f64),
                           dsp::normalize_energy(dsp::from_mid_side(h)), 1e-10, 1e-12));
  // Mono: the first noise alone, with the first rows of the parameters.
  TensorDict first{{"init_log_magnitude", p.at("init_log_magnitude").narrow(1, 0, 1)},
                   {"delta_log_magnitude", p.at("delta_log_magnitude").narrow(1, 0, 1)}};
  EXPECT_TRUE(at::allclose(mono.impulse_responses(first, f64),
                           dsp::normalize_energy(h.narrow(1, 0, 1)), 1e-10, 1e-12));
  // Mid/side: the input's mid and side through the pair.
  at::Tensor x = at::randn({1, 2, 2500}, at::kDouble);
  EXPECT_TRUE(at::allclose(midside.forward({x}, p).outputs[0],
                           dsp::from_mid_side(stereo.forward({dsp::to_mid_side(x)}, p).outputs[0]),
                           1e-10, 1e-12));
}

TEST(NoiseReverb, TheMaskedNoisesGradientsMatchFiniteDifferences) {
  // The masked noise spectrum is one Function on the CPU (its backward one pass over the
  // spectrum): the impulse responses' gradients in every parameter, the gain envelope's included,
  // against central differences in float64, in stereo and mono (the first noise alone).
  for (const char* layout : {"pseudo_midside", "mono"}) {
    SCOPED_TRACE(layout);
    NoiseReverb reverb(with_options({{"gain_envelope", true}, {"channels", layout}}));
    const std::vector<ParameterSpec> specs = reverb.parameter_specs();
    at::manual_seed(9);
    std::vector<at::Tensor> inputs;
    for (const ParameterSpec& spec : specs) {
      std::vector<int64_t> shape = {2};
      shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
      inputs.push_back(at::randn(shape, at::kDouble) * 0.5);
    }
    testing::expect_gradients_match(
        [&](const std::vector<at::Tensor>& p) {
          TensorDict parameters;
          for (size_t i = 0; i < specs.size(); ++i) parameters[specs[i].name] = p[i];
          return reverb.impulse_responses(parameters, at::TensorOptions(at::kDouble));
        },
        inputs);
  }
}

TEST(NoiseReverb, AGainEnvelopeFallingLinearlyIsAFasterDecay) {
  // log M = H0 − softplus(HΔ)·m + G[m]: G[m] = −a·m is the decay softplus(HΔ) + a, and a constant
  // G changes nothing after the energy normalisation.
  NoiseReverb plain({kRate}), enveloped(with_options({{"gain_envelope", true}}));
  const int64_t frames = enveloped.parameter_specs()[2].shape[1];
  at::manual_seed(8);
  at::Tensor initial = at::randn({1, 2, 193}, at::kDouble),
             delta   = at::randn({1, 2, 193}, at::kDouble);
  const double a     = 0.7;
  at::Tensor faster  = at::softplus(delta) + a;
  faster             = faster + (-(-faster).exp()).log1p();  // softplus⁻¹
  at::Tensor ramp    = (-a * at::arange(frames, at::kDouble)).expand({1, 2, frames});
  const at::TensorOptions f64(at::kDouble);
  EXPECT_TRUE(
      at::allclose(enveloped.impulse_responses({{"init_log_magnitude", initial},
                                                {"delta_log_magnitude", delta},
                                                {"gain_env_log_magnitude", ramp}},
                                               f64),
                   plain.impulse_responses(
                       {{"init_log_magnitude", initial}, {"delta_log_magnitude", faster}}, f64),
                   1e-9, 1e-12));
  EXPECT_TRUE(
      at::allclose(enveloped.impulse_responses(
                       {{"init_log_magnitude", initial},
                        {"delta_log_magnitude", delta},
                        {"gain_env_log_magnitude", at::full({1, 2, frames}, 3.0, at::kDouble)}},
                       f64),
                   plain.impulse_responses(
                       {{"init_log_magnitude", initial}, {"delta_log_magnitude", delta}}, f64),
                   1e-9, 1e-12));
}

TEST(FilteredNoiseReverb, FadeInSubtractsAFasterDecayAndMonoUsesTheFirstNoise) {
  FilteredNoiseReverb reverb(
      with_options({{"use_fade_in", true}, {"channels", std::string("mono")}}));
  FilteredNoiseReverb plain(with_options({{"channels", std::string("mono")}}));
  at::manual_seed(9);
  TensorDict raw{{"z_decay", at::randn({1, 1, 12}, at::kDouble)},
                 {"log_gain", at::randn({1, 1, 12}, at::kDouble) * 0.5},
                 {"log_fade_in", at::randn({1, 1, 12}, at::kDouble)},
                 {"z_fade_in_gain", at::full({1, 1, 12}, 2.0, at::kDouble)}};
  at::Tensor ir = reverb.impulse_responses(raw, at::TensorOptions(at::kDouble))[0][0];
  // Written out (GRAFX's formula, with the real gain): per band
  // (e^{n·d} − σ(z_f)·e^{n·d_f})·e^g, d_f = σ(y_f)·(d − d_min) + d_min.
  const double d_min = -3 * std::log(10.0) / (0.050 * kRate),
               d_max = -3 * std::log(10.0) / (2.0 * kRate);
  at::Tensor n = at::arange(8000, at::kDouble), bands = reverb.band_noise()[0];
  at::Tensor expected = at::zeros({8000}, at::kDouble);
  for (int64_t b = 0; b < 12; ++b) {
    auto v       = [&](const char* name) { return raw.at(name)[0][0][b].item<double>(); };
    double d     = 1 / (1 + std::exp(-v("z_decay"))) * (d_max - d_min) + d_min;
    double d_f   = 1 / (1 + std::exp(-v("log_fade_in"))) * (d - d_min) + d_min;
    double depth = 1 / (1 + std::exp(-v("z_fade_in_gain")));
    expected += ((d * n).exp() - depth * (d_f * n).exp()) * std::exp(v("log_gain")) * bands[b];
  }
  expected /= expected.pow(2).sum().sqrt();
  EXPECT_LT((ir - expected).abs().max().item<double>(), 1e-9);
  // It swells in: less of its energy in the first 10 ms than without the fade-in.
  TensorDict without{{"z_decay", raw.at("z_decay")}, {"log_gain", raw.at("log_gain")}};
  at::Tensor dry = plain.impulse_responses(without, at::TensorOptions(at::kDouble))[0][0];
  EXPECT_LT(ir.narrow(0, 0, 40).pow(2).sum().item<double>(),
            0.5 * dry.narrow(0, 0, 40).pow(2).sum().item<double>());
}

TEST(ImpulseLayouts, TheChannelsOptionDescribesOnlyTheChoicesATypeTakes) {
  // Issue 29: delay and filtered_noise_reverb refuse pseudo_midside, but their listings (grafx
  // processors) described it.
  for (const char* type : {"delay", "filtered_noise_reverb", "reverb"}) {
    const ProcessorDescriptor& d = processor_descriptor(type);
    auto spec                    = std::find_if(d.options.begin(), d.options.end(),
                                                [](const OptionSpec& o) { return o.name == "channels"; });
    ASSERT_NE(spec, d.options.end()) << type;
    for (const char* choice : {"mono", "stereo", "midside", "pseudo_midside"}) {
      const bool taken =
          std::find(spec->choices.begin(), spec->choices.end(), choice) != spec->choices.end();
      EXPECT_EQ(testing::contains(spec->description, std::string("(") + choice + ")"), taken)
          << type << ": " << choice << " in \"" << spec->description << "\"";
    }
  }
}

}  // namespace
}  // namespace grafx
