// The building blocks of the spectral losses against independent computations: a direct DFT,
// the mel scale's defining points, triangle geometry, the IEC A-weighting table and scipy's
// firls taps.

#include "loss/spectral.h"

#include "loss/loss_test_support.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <tuple>
#include <vector>

namespace grafx::detail {
namespace {

const double kPi = std::acos(-1.0);

/// The 64 mel triangles of an `fft`-point frame at 30 kHz that hold a bin.
at::Tensor mel_bands_with_bins(int64_t fft) {
  const at::Tensor mel = mel_filterbank(30000, fft, 64);
  return mel.index_select(0, (mel.amax(1) > 0).nonzero().squeeze(1));
}

/// Whether `fused` gives the same values and gradients (against `weights`) on one thread as
/// `values` and `gradient`, found on every thread: its groups of frames are fixed by index.
template <typename Fused>
bool same_on_one_thread(const Fused& fused, const at::Tensor& x, const at::Tensor& weights,
                        const at::Tensor& values, const at::Tensor& gradient) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor one      = fused(x);
  const at::Tensor one_grad = torch::autograd::grad({(one * weights).sum()}, {x})[0];
  at::set_num_threads(threads);
  return at::equal(one, values) && at::equal(one_grad, gradient);
}

TEST(Stft, MagnitudeMatchesDirectDftWithReflectPaddingAndPaddedWindow) {
  const StftResolution resolution{16, 5, 11};  // odd hop and window, window shorter than FFT
  at::Tensor x           = at::randn({3, 50}, at::kDouble);
  const double eps       = 1e-6;
  at::Tensor window      = padded_hann_window(resolution);
  at::Tensor magnitude   = stft_magnitude(x, window, resolution.hop_size, eps);
  const int64_t n_frames = 1 + 50 / 5, n_bins = 9, pad = 8;
  ASSERT_EQ(magnitude.sizes(), (std::vector<int64_t>{3, n_frames, n_bins}));
  auto reflect = [](int64_t i) { return i < 0 ? -i : (i >= 50 ? 2 * 49 - i : i); };
  auto hann    = [](int64_t n) {  // periodic Hann of 11 samples starting at sample (16 − 11) / 2
    return n < 2 || n >= 13 ? 0.0 : 0.5 - 0.5 * std::cos(2 * kPi * (n - 2) / 11);
  };
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t frame = 0; frame < n_frames; ++frame)
      for (int64_t k = 0; k < n_bins; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < 16; ++n) {
          const double v = x[row][reflect(frame * 5 + n - pad)].item<double>() * hann(n);
          re += v * std::cos(2 * kPi * k * n / 16);
          im -= v * std::sin(2 * kPi * k * n / 16);
        }
        EXPECT_NEAR(magnitude[row][frame][k].item<double>(),
                    std::sqrt(std::max(re * re + im * im, eps)), 1e-12);
      }
}

TEST(Stft, GradientMatchesFiniteDifferencesForEvenAndOddSizes) {
  // Exercises the hand-written rfft backward (DC and Nyquist bins count once, others twice).
  for (const StftResolution& resolution : {StftResolution{16, 4, 16}, StftResolution{15, 4, 9}}) {
    at::Tensor window  = padded_hann_window(resolution);
    at::Tensor x       = at::randn({2, 40}, at::kDouble);
    at::Tensor weights = at::rand(stft_magnitude(x, window, 4, 1e-12).sizes(), at::kDouble);
    auto f             = [&](const at::Tensor& signal) {
      return (stft_magnitude(signal, window, resolution.hop_size, 1e-12) * weights).sum();
    };
    EXPECT_LT(testing::gradient_error(f, x, 80), 1e-7) << resolution.fft_size;
  }
}

TEST(Stft, FloorsTheSquaredMagnitudeAtEps) {
  at::Tensor magnitude =
      stft_magnitude(at::zeros({1, 64}, at::kDouble), padded_hann_window({32, 8, 32}), 8, 1e-4);
  EXPECT_TRUE(magnitude.eq(0.01).all().item<bool>());
}

TEST(Mel, SlaneyScaleDefiningPoints) {
  // Linear 3 mel per 200 Hz below 1 kHz (15 mel); 27 mel per factor 6.4 above.
  EXPECT_DOUBLE_EQ(hz_to_mel(0), 0);
  EXPECT_DOUBLE_EQ(hz_to_mel(200), 3);
  EXPECT_DOUBLE_EQ(hz_to_mel(1000), 15);
  EXPECT_NEAR(hz_to_mel(6400), 42, 1e-12);
  EXPECT_NEAR(hz_to_mel(6400 * 6.4), 69, 1e-12);
  for (double f : {50.0, 999.0, 1000.0, 1234.5, 15000.0})
    EXPECT_NEAR(mel_to_hz(hz_to_mel(f)), f, 1e-9);
}

TEST(Mel, TrianglesPeakAtTheirCentreAndHaveUnitArea) {
  const double sample_rate = 30000;
  const int64_t fft_size = 4096, n_mels = 96;
  at::Tensor weights = mel_filterbank(sample_rate, fft_size, n_mels);
  ASSERT_EQ(weights.sizes(), (std::vector<int64_t>{n_mels, fft_size / 2 + 1}));
  EXPECT_GE(weights.min().item<double>(), 0);
  const double bin_hz = sample_rate / fft_size, top = hz_to_mel(sample_rate / 2);
  for (int64_t m = 0; m < n_mels; ++m) {
    // Band m spans mel points m and m + 2 of n_mels + 2 evenly spaced ones, peaks at m + 1.
    const double lower  = mel_to_hz(top * m / (n_mels + 1)),
                 centre = mel_to_hz(top * (m + 1) / (n_mels + 1)),
                 upper  = mel_to_hz(top * (m + 2) / (n_mels + 1));
    at::Tensor row      = weights[m];
    for (int64_t k = 0; k <= fft_size / 2; ++k) {
      const double f = k * bin_hz, w = row[k].item<double>();
      if (f <= lower || f >= upper) {
        EXPECT_EQ(w, 0) << m << " " << k;
      } else {
        EXPECT_GT(w, 0) << m << " " << k;
      }
    }
    // The peak is 2 / (upper − lower) at the centre (sampled at the nearest bins).
    const double peak = 2 / (upper - lower);
    EXPECT_LE(row.max().item<double>(), peak * (1 + 1e-12));
    if (upper - lower > 20 * bin_hz) {
      EXPECT_NEAR(row.max().item<double>(), peak, peak * 2 * bin_hz / (centre - lower));
      EXPECT_NEAR(row.sum().item<double>() * bin_hz, 1.0, 0.01) << m;  // unit area in Hz
    }
  }
}

TEST(Mel, MatchesLibrosaFormulaValues) {
  // From the NumPy transcription of librosa.filters.mel in make_golden.py.
  at::Tensor weights                                               = mel_filterbank(30000, 512, 96);
  const std::vector<std::tuple<int64_t, int64_t, double>> expected = {
      {0, 1, 0.011570433066777764},
      {10, 7, 0.02601428811502892},
      {40, 30, 0.00929061271168619},
      {95, 246, 0.0017353413708084814},
      {95, 255, 0.00018561106220161796}};
  for (const auto& [m, k, value] : expected)
    EXPECT_NEAR(weights[m][k].item<double>(), value, 1e-15);
  EXPECT_EQ((weights.amax(1) > 0).sum().item<int64_t>(), 96);  // no empty band at FFT 512
}

TEST(Mel, BandPairsEqualTheSparseProductAndItsGradients) {
  // The two-weights-per-bin projection against the sparse filterbank product, at rates where
  // small FFTs leave bands without a bin (dropped, as MixLoss does) and where they do not.
  at::manual_seed(11);
  for (double rate : {16000.0, 30000.0, 48000.0})
    for (int64_t fft : {512, 4096}) {
      at::Tensor bank = mel_filterbank(rate, fft, 96);
      bank            = bank.index_select(0, (bank.amax(1) > 0).nonzero().squeeze(1));
      BandPairs pairs = band_pairs(bank);
      ASSERT_TRUE(pairs.bands.defined()) << rate << " Hz, FFT " << fft;
      at::Tensor magnitude = at::rand({3, 7, fft / 2 + 1}, at::kDouble).requires_grad_(true);
      at::Tensor weights   = at::randn({3, 7, bank.size(0)}, at::kDouble);
      at::Tensor ours      = apply_band_pairs(magnitude, pairs.bands, pairs.weights, pairs.n_bands);
      at::Tensor theirs    = apply_filterbank(magnitude, bank.to_sparse());
      EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-12)) << rate << " Hz, FFT " << fft;
      at::Tensor g1 = torch::autograd::grad({(ours * weights).sum()}, {magnitude})[0];
      at::Tensor g2 = torch::autograd::grad({(theirs * weights).sum()}, {magnitude})[0];
      EXPECT_TRUE(at::allclose(g1, g2, 1e-12, 1e-12)) << rate << " Hz, FFT " << fft;
      // A recorded backward pass (create_graph) gives the same gradient, differentiable again.
      at::Tensor again = apply_band_pairs(magnitude, pairs.bands, pairs.weights, pairs.n_bands);
      at::Tensor g3 =
          torch::autograd::grad({(again * weights).sum()}, {magnitude}, {}, true, true)[0];
      EXPECT_TRUE(at::allclose(g3, g2, 1e-12, 1e-12));
    }
  // A bin in three bands has no such form.
  at::Tensor three = at::ones({3, 5}, at::kDouble);
  EXPECT_FALSE(band_pairs(three).bands.defined());
}

TEST(Mel, FramesToBandsInOneFunctionEqualTheComposition) {
  // mel_frame_magnitudes (one Function: reflection, frames, FFT, floor, band pairs) against
  // apply_band_pairs of frame_magnitudes of ATen's reflection_pad1d, recorded by autograd, in
  // float64: values, gradients, recorded gradients and second derivatives, for even and odd FFT
  // sizes, without reflection and with half a frame's, with silent rows (every magnitude at the
  // floor) and rows partly below it; float32 near float64. Long enough for several groups of
  // frames and a partial one, whose results do not depend on the threads.
  at::manual_seed(17);
  constexpr int64_t kLength = 40000;
  for (int64_t fft : {512, 1023}) {
    const StftResolution resolution{fft, fft / 4, fft};
    const at::Tensor window = padded_hann_window(resolution);
    // Mel triangles leave out DC and Nyquist; two overlapping halves take them in.
    const at::Tensor mel = mel_bands_with_bins(fft);
    const int64_t bins   = fft / 2 + 1;
    at::Tensor halves    = at::zeros({2, bins}, at::kDouble);
    halves[0].narrow(0, 0, bins / 2).fill_(1.0);
    halves[1].narrow(0, bins / 3, bins - bins / 3).fill_(0.5);
    for (const at::Tensor& bank : {mel, halves})
      for (int64_t pad : {int64_t(0), fft / 2}) {
        const BandPairs pairs = band_pairs(bank);
        const double eps      = 1e-4;
        at::Tensor signal     = at::randn({2, 3, kLength}, at::kDouble) *
                            at::linspace(0, 2, kLength, at::kDouble);  // from silence up
        signal[1][2].zero_();
        const at::Tensor padded  = signal.clone().requires_grad_(true);
        const at::Tensor weights = at::randn(
            {2, 3, (kLength + 2 * pad - fft) / (fft / 4) + 1, pairs.n_bands}, at::kDouble);
        auto fused = [&](const at::Tensor& x) {
          return mel_frame_magnitudes(x, pad, window, fft / 4, eps, pairs.bands, pairs.weights,
                                      pairs.n_bands);
        };
        auto composed = [&](const at::Tensor& x) {
          const at::Tensor padded =
              at::reflection_pad1d(x.view({6, 1, kLength}), {pad, pad}).view({2, 3, -1});
          return apply_band_pairs(frame_magnitudes(padded, window, fft / 4, eps), pairs.bands,
                                  pairs.weights, pairs.n_bands);
        };
        const at::Tensor ours = fused(padded), theirs = composed(padded);
        ASSERT_EQ(ours.sizes(), weights.sizes());
        EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-12)) << "FFT " << fft;
        const at::Tensor g1 = torch::autograd::grad({(ours * weights).sum()}, {padded})[0];
        const at::Tensor g2 =
            torch::autograd::grad({(theirs * weights).sum()}, {padded}, {}, true, true)[0];
        EXPECT_TRUE(at::allclose(g1, g2, 1e-10, 1e-12)) << "FFT " << fft;
        const at::Tensor g3 =
            torch::autograd::grad({(fused(padded) * weights).sum()}, {padded}, {}, true, true)[0];
        EXPECT_TRUE(at::allclose(g3, g2, 1e-12, 1e-12)) << "FFT " << fft;
        const at::Tensor v  = at::randn_like(signal);
        const at::Tensor h1 = torch::autograd::grad({(g3 * v).sum()}, {padded})[0];
        const at::Tensor h2 = torch::autograd::grad({(g2 * v).sum()}, {padded})[0];
        EXPECT_TRUE(at::allclose(h1, h2, 1e-10, 1e-12)) << "FFT " << fft;
        const at::Tensor single = signal.detach().to(at::kFloat).requires_grad_(true);
        const at::Tensor y32 =
            mel_frame_magnitudes(single, pad, window.to(at::kFloat), fft / 4, eps, pairs.bands,
                                 pairs.weights.to(at::kFloat), pairs.n_bands);
        const at::Tensor g32 =
            torch::autograd::grad({(y32 * weights.to(at::kFloat)).sum()}, {single})[0];
        EXPECT_LT((y32.to(at::kDouble) - ours).abs().max().item<double>(),
                  1e-5 * ours.abs().max().item<double>());
        EXPECT_LT((g32.to(at::kDouble) - g1).abs().max().item<double>(),
                  1e-4 * g1.abs().max().item<double>());
        EXPECT_TRUE(same_on_one_thread(fused, padded, weights, ours, g1)) << "FFT " << fft;
      }
  }
}

TEST(Mel, MidAndSideFromTheChannelsSpectraEqualTheirOwnTransforms) {
  // With mid_side, (left, right) pairs give the mel frames of left, right, left + right and
  // left − right from the pair's two transforms (the sum's and difference's spectra summed and
  // subtracted). Against the four channels formed in time and transformed one by one (the
  // composition, recorded by autograd), in float64: values and gradients of the fused Function
  // and of frame_magnitudes alone, recorded gradients and second derivatives, results
  // independent of the threads; a pair with a silent side (left = right) and one with a silent
  // mid (left = −right) at the floor, for even and odd FFT sizes, with and without reflection.
  at::manual_seed(23);
  constexpr int64_t kLength = 30000;
  for (int64_t fft : {512, 1023}) {
    const StftResolution resolution{fft, fft / 4, fft};
    const at::Tensor window = padded_hann_window(resolution);
    const BandPairs pairs   = band_pairs(mel_bands_with_bins(fft));
    const double eps        = 1e-4;
    for (int64_t pad : {int64_t(0), fft / 2}) {
      at::Tensor signal = at::randn({3, 2, kLength}, at::kDouble) *
                          at::linspace(0, 2, kLength, at::kDouble);  // from silence up
      signal[1][1].copy_(signal[1][0]);                              // no side
      signal[2][1].copy_(-signal[2][0]);                             // no mid
      const at::Tensor x       = signal.clone().requires_grad_(true);
      const int64_t n_frames   = (kLength + 2 * pad - fft) / (fft / 4) + 1;
      const at::Tensor weights = at::randn({3, 4, n_frames, pairs.n_bands}, at::kDouble);
      auto four                = [](const at::Tensor& pair) {  // [3, 2, T] → [3, 4, T]
        const at::Tensor left = pair.select(1, 0), right = pair.select(1, 1);
        return at::stack({left, right, left + right, left - right}, 1);
      };
      auto padded = [&](const at::Tensor& rows) {
        return at::reflection_pad1d(rows.reshape({-1, 1, kLength}), {pad, pad})
            .view({3, rows.size(1), -1});
      };
      auto fused = [&](const at::Tensor& in) {
        return mel_frame_magnitudes(in, pad, window, fft / 4, eps, pairs.bands, pairs.weights,
                                    pairs.n_bands, /*mid_side=*/true);
      };
      auto in_time = [&](const at::Tensor& in) {
        return apply_band_pairs(frame_magnitudes(padded(four(in)), window, fft / 4, eps),
                                pairs.bands, pairs.weights, pairs.n_bands);
      };
      auto in_frequency = [&](const at::Tensor& in) {
        return apply_band_pairs(frame_magnitudes(padded(in), window, fft / 4, eps, true),
                                pairs.bands, pairs.weights, pairs.n_bands);
      };
      const at::Tensor ours = fused(x), theirs = in_time(x), composed = in_frequency(x);
      ASSERT_EQ(ours.sizes(), weights.sizes());
      EXPECT_TRUE(at::allclose(ours, theirs, 1e-12, 1e-12)) << "FFT " << fft << ", pad " << pad;
      EXPECT_TRUE(at::allclose(composed, theirs, 1e-12, 1e-12)) << "FFT " << fft;
      // The silent side and mid sit at the floor: max(|X|, √eps) times each band's weights.
      const at::Tensor floor =
          apply_band_pairs(at::full({1, pairs.bands.size(1)}, std::sqrt(eps), at::kDouble),
                           pairs.bands, pairs.weights, pairs.n_bands);
      EXPECT_TRUE(at::allclose(ours[1][3], floor.expand_as(ours[1][3]), 0, 1e-12));
      EXPECT_TRUE(at::allclose(ours[2][2], floor.expand_as(ours[2][2]), 0, 1e-12));
      const at::Tensor g1 = torch::autograd::grad({(ours * weights).sum()}, {x})[0];
      const at::Tensor g2 =
          torch::autograd::grad({(theirs * weights).sum()}, {x}, {}, true, true)[0];
      const at::Tensor g3 = torch::autograd::grad({(composed * weights).sum()}, {x})[0];
      EXPECT_TRUE(at::allclose(g1, g2, 1e-10, 1e-12)) << "FFT " << fft << ", pad " << pad;
      EXPECT_TRUE(at::allclose(g3, g2, 1e-10, 1e-12)) << "FFT " << fft;
      const at::Tensor g4 =
          torch::autograd::grad({(fused(x) * weights).sum()}, {x}, {}, true, true)[0];
      EXPECT_TRUE(at::allclose(g4, g2, 1e-10, 1e-12)) << "FFT " << fft;
      const at::Tensor v  = at::randn_like(signal);
      const at::Tensor h1 = torch::autograd::grad({(g4 * v).sum()}, {x})[0];
      const at::Tensor h2 = torch::autograd::grad({(g2 * v).sum()}, {x})[0];
      EXPECT_TRUE(at::allclose(h1, h2, 1e-10, 1e-12)) << "FFT " << fft;
      EXPECT_TRUE(same_on_one_thread(fused, x, weights, ours, g1)) << "FFT " << fft;
    }
  }
  EXPECT_THROW(mel_frame_magnitudes(at::zeros({3, 100}), 0, at::ones({32}), 8, 1e-4,
                                    at::zeros({2, 17}, at::kLong), at::zeros({2, 17}), 1, true),
               c10::Error);
}

TEST(AWeighting, AnalogCurveMatchesIecTable) {
  // IEC 61672-1 nominal A-weightings (dB, 0.1 dB rounding) at exact base-10 third-octave
  // frequencies 1000·10^(k/10).
  const std::vector<std::pair<int, double>> table = {
      {-15, -39.4}, {-12, -26.2}, {-10, -19.1}, {-9, -16.1}, {-6, -8.6}, {-3, -3.2},
      {0, 0.0},     {3, 1.2},     {6, 1.0},     {9, -1.1},   {12, -6.6}};
  for (const auto& [k, db] : table) {
    const double f = 1000 * std::pow(10.0, k / 10.0);
    EXPECT_NEAR(20 * std::log10(a_weighting_gain(f)), db, 0.06) << f << " Hz";
  }
}

TEST(AWeighting, FirTapsMatchScipyFirls) {
  // scipy.signal.firls taps of auraloss's design (make_golden.py).
  at::Tensor taps = a_weighting_fir(30000);
  ASSERT_EQ(taps.size(0), 101);
  EXPECT_TRUE(taps.equal(taps.flip(0)));  // linear phase
  const double expected_start[]  = {-0.0011577732603501078, -0.0012104108972697764,
                                    -0.0012717024963101969};
  const double expected_centre[] = {-0.088526935148329253, 0.2535237892589603, 0.64681099963277366};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(taps[i].item<double>(), expected_start[i], 1e-9);
    EXPECT_NEAR(taps[48 + i].item<double>(), expected_centre[i], 1e-9);
  }
  EXPECT_NEAR(a_weighting_fir(44100)[0].item<double>(), -0.0019269367958928481, 1e-9);
}

TEST(AWeighting, FirResponseFollowsTheCurveAbove500Hz) {
  // The FIR fits the bilinear-transformed curve, whose frequency axis is warped:
  // f_analog = fs/π·tan(πf/fs). 101 taps resolve ~fs/101 ≈ 300 Hz, so below ~500 Hz the fit
  // departs from the curve (documented in docs/loss.md); above it stays within 0.3 dB.
  const double fs = 30000;
  at::Tensor taps = a_weighting_fir(fs);
  auto fir_db     = [&](double f) {
    double re = 0, im = 0;
    for (int64_t n = 0; n < 101; ++n) {
      re += taps[n].item<double>() * std::cos(2 * kPi * f / fs * n);
      im -= taps[n].item<double>() * std::sin(2 * kPi * f / fs * n);
    }
    return 10 * std::log10(re * re + im * im);
  };
  auto curve_db = [](double f) { return 20 * std::log10(a_weighting_gain(f)); };
  for (double f : {500.0, 1000.0, 2000.0, 4000.0, 8000.0, 10000.0, 12000.0})
    EXPECT_NEAR(fir_db(f), curve_db(fs / kPi * std::tan(kPi * f / fs)), 0.3) << f << " Hz";
  for (double f : {500.0, 1000.0, 2000.0, 4000.0})  // where the warping is small
    EXPECT_NEAR(fir_db(f), curve_db(f), 0.3) << f << " Hz";
}

TEST(SpectralDistances, ConvergenceAndLogDistanceOfKnownMagnitudes) {
  at::Tensor y  = at::rand({2, 5, 7}, at::kDouble) + 0.5;
  at::Tensor sc = spectral_convergence(0.75 * y, y, {1, 2});
  EXPECT_TRUE(at::allclose(sc, at::full({2}, 0.25, at::kDouble)));
  at::Tensor lm = log_magnitude_distance(0.75 * y, y, {1, 2});
  EXPECT_TRUE(at::allclose(lm, at::full({2}, -std::log(0.75), at::kDouble)));
}

}  // namespace
}  // namespace grafx::detail
