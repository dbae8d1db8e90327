// The mix-matching loss: exact zeros, analytic cases, channel weighting, warm-up skip, batch
// reduction, golden values from an independent Python computation, gradients, input checks.

#include <grafx/loss/mix_loss.h>

#include "loss/loss_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

using testing::test_signal;

// A short pair of stereo mixes at 30 kHz (float64), estimate and target different.
at::Tensor estimate_signal(int64_t n = 12000) { return test_signal(n, 30000, 1).unsqueeze(0); }
at::Tensor target_signal(int64_t n = 12000) {
  return (0.8 * test_signal(n, 30000, 1) + 0.1 * test_signal(n, 30000, 5)).unsqueeze(0);
}

double value(const at::Tensor& x) { return x.item<double>(); }

TEST(MixLoss, IdenticalSignalsGiveExactlyZeroAndZeroGradient) {
  MixLoss loss;
  for (auto dtype : {at::kDouble, at::kFloat}) {
    at::Tensor y       = target_signal().to(dtype);
    MixLossTerms terms = loss.terms(y, y.clone());
    EXPECT_EQ(value(terms.total), 0.0) << dtype;
    EXPECT_EQ(value(terms.side), 0.0) << dtype;
    EXPECT_TRUE(terms.spectral_convergence.eq(0).all().item<bool>()) << dtype;
    EXPECT_TRUE(terms.log_magnitude.eq(0).all().item<bool>()) << dtype;
    // A perfect fit must not produce NaN gradients (norm of zero, |0|).
    at::Tensor x = y.clone().requires_grad_(true);
    loss(x, y).backward();
    EXPECT_TRUE(x.grad().eq(0).all().item<bool>()) << dtype;
  }
}

TEST(MixLoss, KnownGainGivesPredictedDistances) {
  // STFT, mel and A-weighting are linear, so an estimate g·y has magnitudes g·Y: spectral
  // convergence |1 − g| and log distance |log g| in every channel and resolution (eps tiny, so
  // the floor never acts).
  MixLossOptions options;
  options.eps = 1e-30;
  MixLoss loss(options);
  at::Tensor y = target_signal();
  for (double g : {0.5, 2.0}) {
    MixLossTerms terms = loss.terms(g * y, y);
    EXPECT_TRUE(at::allclose(terms.spectral_convergence,
                             at::full({3, 4}, std::abs(1 - g), at::kDouble), 1e-9, 1e-12));
    EXPECT_TRUE(at::allclose(terms.log_magnitude,
                             at::full({3, 4}, std::abs(std::log(g)), at::kDouble), 1e-9, 1e-12));
    EXPECT_NEAR(value(terms.total), std::abs(1 - g) + std::abs(std::log(g)), 1e-9);
  }
}

TEST(MixLoss, EveryCommonSampleRateWorks) {
  // At 44.1 kHz and above the lowest mel bands of the 512-point FFT are narrower than its bin
  // spacing and hold no bin; they are left out, and the known-gain distances still hold (a
  // kept empty band would make the log distance NaN).
  for (SampleRate rate : {8000, 16000, 22050, 44100, 48000, 96000, 192000}) {
    MixLossOptions options;
    options.sample_rate = rate;
    options.eps         = 1e-30;
    MixLoss loss(options);
    at::Tensor y =
        (0.8 * test_signal(12000, rate, 1) + 0.1 * test_signal(12000, rate, 5)).unsqueeze(0);
    MixLossTerms terms = loss.terms(0.5 * y, y);
    EXPECT_TRUE(
        at::allclose(terms.spectral_convergence, at::full({3, 4}, 0.5, at::kDouble), 1e-9, 1e-12))
        << rate;
    EXPECT_TRUE(at::allclose(terms.log_magnitude,
                             at::full({3, 4}, std::abs(std::log(0.5)), at::kDouble), 1e-9, 1e-12))
        << rate;
  }
}

TEST(MixLoss, SilentEstimateHasSpectralConvergenceOne) {
  MixLossOptions options;
  options.eps = 1e-30;
  MixLossTerms terms =
      MixLoss(options).terms(at::zeros({1, 2, 12000}, at::kDouble), target_signal());
  EXPECT_TRUE(at::allclose(terms.spectral_convergence, at::ones({3, 4}, at::kDouble), 1e-9, 1e-12));
  EXPECT_GT(terms.log_magnitude.min().item<double>(), 10.0);  // log(Y) − log(√eps·Σfb) is large
}

TEST(MixLoss, SwappedChannelsMoveOnlyTheLeftRightTerm) {
  // Swapping L and R keeps M = L + R and flips the sign of S = L − R, whose magnitudes are the
  // same: L_m and L_s are exactly zero, L_lr is not.
  MixLoss loss;
  at::Tensor y       = target_signal();
  MixLossTerms terms = loss.terms(y.flip(1), y);
  EXPECT_EQ(value(terms.mid), 0.0);
  EXPECT_EQ(value(terms.side), 0.0);
  EXPECT_GT(value(terms.lr), 0.1);
  EXPECT_NEAR(value(terms.total), 0.5 * value(terms.lr), 1e-15);
}

TEST(MixLoss, SideOnlyDifferenceLeavesTheMidTermAtZero) {
  MixLoss loss;
  at::Tensor y             = target_signal();
  at::Tensor d             = 0.05 * test_signal(12000, 30000, 7).narrow(0, 0, 1);
  MixLossTerms side_change = loss.terms(y + at::cat({d, -d}).unsqueeze(0), y);
  EXPECT_LT(value(side_change.mid), 1e-9);  // zero up to rounding: (L + d) + (R − d) ≈ L + R
  EXPECT_GT(value(side_change.side), 0.01);
  EXPECT_GT(value(side_change.lr), 0.01);
  MixLossTerms mid_change = loss.terms(y + at::cat({d, d}).unsqueeze(0), y);
  EXPECT_LT(value(mid_change.side), 1e-9);
  EXPECT_GT(value(mid_change.mid), 0.01);
}

TEST(MixLoss, WeightsCombineTheTerms) {
  MixLossOptions options;
  options.lr_weight   = 1.0;
  options.mid_weight  = 2.0;
  options.side_weight = 3.0;
  MixLossTerms terms  = MixLoss(options).terms(estimate_signal(), target_signal());
  EXPECT_NEAR(value(terms.total), value(terms.lr) + 2 * value(terms.mid) + 3 * value(terms.side),
              1e-12);
  // Each term is the mean over resolutions of spectral convergence + log distance.
  at::Tensor per_channel = (terms.spectral_convergence + terms.log_magnitude).mean(0);
  EXPECT_NEAR(value(terms.lr), value(per_channel.narrow(0, 0, 2).mean()), 1e-12);
  EXPECT_NEAR(value(terms.side), value(per_channel[3]), 1e-12);
}

TEST(MixLoss, SkipLeavesOutTheWarmUp) {
  MixLossOptions options;
  options.skip_samples = 3000;
  MixLoss loss(options);
  at::Tensor x = estimate_signal(), y = target_signal();
  const double base  = value(loss(x, y));
  at::Tensor changed = x.clone();
  changed.narrow(2, 0, 3000).mul_(-3.0).add_(0.5);
  EXPECT_EQ(value(loss(changed, y)), base);
  changed = x.clone();
  changed.narrow(2, 3000, 1).add_(1.0);  // the first sample after the warm-up counts
  EXPECT_NE(value(loss(changed, y)), base);
  // Skipping equals cutting the signals.
  EXPECT_NEAR(value(MixLoss()(x.narrow(2, 3000, 9000), y.narrow(2, 3000, 9000))), base, 1e-14);
}

TEST(MixLoss, BatchLossIsTheMeanOverItems) {
  MixLoss loss;
  at::Tensor x       = at::cat({estimate_signal(), target_signal().flip(1)});
  at::Tensor y       = at::cat({target_signal(), estimate_signal()});
  MixLossTerms batch = loss.terms(x, y), first = loss.terms(x[0], y[0]),
               second = loss.terms(x[1], y[1]);
  EXPECT_NEAR(value(batch.total), (value(first.total) + value(second.total)) / 2, 1e-12);
  EXPECT_NEAR(value(batch.per_item[0]), value(first.total), 1e-12);
  EXPECT_NEAR(value(batch.per_item[1]), value(second.total), 1e-12);
  EXPECT_NEAR(value(batch.side), (value(first.side) + value(second.side)) / 2, 1e-12);
  EXPECT_TRUE(at::allclose(batch.log_magnitude, (first.log_magnitude + second.log_magnitude) / 2));
}

TEST(MixLoss, MatchesIndependentPythonComputation) {
  // make_golden.py: torch.stft, scipy firls and librosa's mel formula, batch of 2, skip 1000.
  at::Tensor x = at::stack({test_signal(12000, 30000, 1), test_signal(12000, 30000, 2)});
  at::Tensor y = at::stack({0.8 * test_signal(12000, 30000, 1) + 0.1 * test_signal(12000, 30000, 5),
                            test_signal(12000, 30000, 3)});
  MixLossOptions options;
  options.skip_samples = 1000;
  MixLossTerms terms   = MixLoss(options).terms(x, y);
  EXPECT_NEAR(value(terms.total), 2.0041104081322385, 1e-9);
  EXPECT_NEAR(value(terms.lr), 1.78695852156461, 1e-9);
  EXPECT_NEAR(value(terms.mid), 2.2262046654420948, 1e-9);
  EXPECT_NEAR(value(terms.side), 2.2163199239576401, 1e-9);
  const double sc[3][4] = {
      {0.80936794605360118, 0.83668009433744583, 0.81364602597549507, 0.8113156300613078},
      {0.81433739790477155, 0.85866373620092107, 0.82490901420135876, 0.82270873250625964},
      {0.78505871369668079, 0.82892183060781899, 0.7947290250561172, 0.7926262451805266}};
  const double lm[3][4] = {
      {1.2168130674667172, 0.84841554695275878, 1.4984980886342276, 1.4816910233724905},
      {1.0930522853373721, 0.79909497456787015, 1.5526649589095878, 1.5422919862080349},
      {1.0996453477026524, 0.73170018855904917, 1.1941668835494981, 1.1983261545443018}};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(value(terms.spectral_convergence[r][c]), sc[r][c], 1e-9) << r << " " << c;
      EXPECT_NEAR(value(terms.log_magnitude[r][c]), lm[r][c], 1e-9) << r << " " << c;
    }
}

TEST(MixLoss, Float32AgreesWithFloat64) {
  MixLoss loss;
  at::Tensor x = estimate_signal(), y = target_signal();
  const double exact  = value(loss(x, y));
  const double single = value(loss(x.to(at::kFloat), y.to(at::kFloat)));
  EXPECT_NEAR(single, exact, 1e-4 * exact);
}

TEST(MixLoss, GradientMatchesFiniteDifferences) {
  MixLossOptions options;
  options.fft_sizes    = {32, 64};
  options.n_mels       = 8;
  options.sample_rate  = 8000;
  options.skip_samples = 16;
  MixLoss loss(options);
  at::Tensor y = at::randn({2, 2, 160}, at::kDouble);
  at::Tensor x = y + 0.3 * at::randn({2, 2, 160}, at::kDouble);
  EXPECT_LT(testing::gradient_error([&](const at::Tensor& e) { return loss(e, y); }, x, 96), 1e-6);
  // With respect to the target too (fitting a source against a rendered mix, say).
  EXPECT_LT(testing::gradient_error([&](const at::Tensor& t) { return loss(x, t); }, y, 48), 1e-6);
}

TEST(MixLoss, RunsOnCuda) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  MixLoss loss;
  at::Tensor x = estimate_signal(), y = target_signal();
  MixLossTerms cpu = loss.terms(x, y), gpu = loss.terms(x.cuda(), y.cuda());
  EXPECT_NEAR(value(gpu.total.cpu()), value(cpu.total), 1e-9);
  EXPECT_TRUE(at::allclose(gpu.log_magnitude.cpu(), cpu.log_magnitude, 1e-9, 1e-12));
}

TEST(MixLoss, RejectsBadInputs) {
  MixLoss loss;
  at::Tensor y = target_signal();
  EXPECT_GRAFX_ERROR(loss(y.narrow(2, 0, 11999), y), "grafx.loss.shape",
                     "[1, 2, 11999] and [1, 2, 12000]");
  EXPECT_GRAFX_ERROR(loss(y.narrow(1, 0, 1), y.narrow(1, 0, 1)), "grafx.loss.shape",
                     "(B >= 1), but got [1, 1, 12000]");
  EXPECT_GRAFX_ERROR(loss(y.unsqueeze(0), y.unsqueeze(0)), "grafx.loss.shape", "[1, 1, 2, 12000]");
  EXPECT_GRAFX_ERROR(loss(y.to(at::kFloat), y), "grafx.loss.dtype",
                     "but got Float on cpu and Double on cpu");
  EXPECT_GRAFX_ERROR(loss(y.to(at::kInt), y.to(at::kInt)), "grafx.loss.dtype", "Int");
  EXPECT_GRAFX_ERROR(loss(at::Tensor(), y), "grafx.loss.dtype", "undefined");
  EXPECT_GRAFX_ERROR(loss(y.narrow(2, 0, 4000), y.narrow(2, 0, 4000)), "grafx.loss.too_short",
                     "expected at least 4096 samples");
  MixLossOptions options;
  options.skip_samples = 12000;
  EXPECT_GRAFX_ERROR(MixLoss{options}(y, y), "grafx.loss.skip", "12000 warm-up samples");
  options.skip_samples = 10000;
  EXPECT_GRAFX_ERROR(MixLoss{options}(y, y), "grafx.loss.too_short", "but got 2000 of 12000");
}

TEST(MixLoss, RejectsBadOptions) {
  auto make = [](auto edit) {
    MixLossOptions options;
    edit(options);
    return MixLoss(options);
  };
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.fft_sizes = {}; }), "grafx.loss.options",
                     "at least one");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.fft_sizes = {2}; }), "grafx.loss.options",
                     "hop 0");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.n_mels = 0; }), "grafx.loss.options",
                     "mel band");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.eps = 0; }), "grafx.loss.options", "eps");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.sample_rate = -1; }), "grafx.loss.options",
                     "sample rate");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.skip_samples = -1; }), "grafx.loss.options",
                     "skip_samples");
  EXPECT_GRAFX_ERROR(make([](MixLossOptions& o) { o.side_weight = -1; }), "grafx.loss.options",
                     "weights");
}

// ---- in chunks ---------------------------------------------------------------------------

/// The terms of `estimate` and `target` fed to a stream in chunks of `sizes` (cycled).
MixLossTerms streamed(const MixLoss& loss, const at::Tensor& estimate, const at::Tensor& target,
                      const std::vector<int64_t>& sizes) {
  const int64_t n      = estimate.size(-1);
  MixLossStream stream = loss.stream(n);
  for (int64_t start = 0, i = 0; start < n; ++i) {
    const int64_t size = std::min(sizes[size_t(i) % sizes.size()], n - start);
    stream.add(estimate.narrow(-1, start, size), target.narrow(-1, start, size));
    start += size;
  }
  return stream.finish();
}

void expect_terms_near(const MixLossTerms& a, const MixLossTerms& b, double tolerance) {
  auto near = [&](const at::Tensor& x, const at::Tensor& y, const char* what) {
    EXPECT_LE((x - y).abs().max().item<double>(), tolerance * y.abs().max().item<double>())
        << what << ": " << x << " vs " << y;
  };
  near(a.total, b.total, "total");
  near(a.per_item, b.per_item, "per_item");
  near(a.lr, b.lr, "lr");
  near(a.mid, b.mid, "mid");
  near(a.side, b.side, "side");
  near(a.spectral_convergence, b.spectral_convergence, "spectral_convergence");
  near(a.log_magnitude, b.log_magnitude, "log_magnitude");
}

TEST(MixLossStream, ChunksOfAnySizeGiveTheWholeSignalsTerms) {
  // 20480 samples: a multiple of every hop, so the last frames reach past the end (reflection).
  for (int64_t n : {int64_t(20480), int64_t(19999)}) {
    at::Tensor x = at::cat({estimate_signal(n), 0.5 * target_signal(n)});  // B = 2
    at::Tensor y = at::cat({target_signal(n), estimate_signal(n)});
    MixLoss loss;
    MixLossTerms whole = loss.terms(x, y);
    for (const auto& sizes :
         std::vector<std::vector<int64_t>>{{n}, {5000}, {777}, {1, 2, 3, 1000}, {30, 4096}}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", first chunk " + std::to_string(sizes[0]));
      expect_terms_near(streamed(loss, x, y, sizes), whole, 1e-10);
    }
  }
}

TEST(MixLossStream, SkipAcrossChunksWithoutAWeightingAndInFloat32) {
  const int64_t n = 15000;
  at::Tensor x = estimate_signal(n), y = target_signal(n);
  MixLossOptions options;
  options.skip_samples = 3500;  // spans several chunks
  MixLoss skipping(options);
  expect_terms_near(streamed(skipping, x, y, {1000}), skipping.terms(x, y), 1e-10);
  options.a_weighting = false;
  MixLoss plain(options);
  expect_terms_near(streamed(plain, x[0], y[0], {2345}), plain.terms(x[0], y[0]), 1e-10);  // 2×T
  MixLoss loss;
  at::Tensor xf = x.to(at::kFloat), yf = y.to(at::kFloat);
  expect_terms_near(streamed(loss, xf, yf, {3000}), loss.terms(xf, yf), 2e-5);
  EXPECT_EQ(streamed(loss, xf, yf, {3000}).total.scalar_type(), at::kFloat);
}

TEST(MixLossStream, AGivenTargetsFramesGiveTheSameTerms) {
  const int64_t n = 20000;
  for (auto dtype : {at::kDouble, at::kFloat}) {
    at::Tensor x = estimate_signal(n)[0].to(dtype), y = target_signal(n)[0].to(dtype);
    MixLossOptions options;
    options.skip_samples = 1500;
    MixLoss loss(options);
    auto frames = std::make_shared<const MixLossTargetFrames>(loss.target_frames(y));
    ASSERT_EQ(frames->mels.size(), 3u);
    EXPECT_EQ(frames->mels[0].size(0), 4);  // L, R, M, S
    MixLossStream stream(loss, frames);
    for (int64_t start = 0; start < n; start += 3000)
      stream.add(x.narrow(-1, start, std::min<int64_t>(3000, n - start)));
    expect_terms_near(stream.finish(), loss.terms(x, y), dtype == at::kDouble ? 1e-10 : 2e-5);
    EXPECT_GRAFX_ERROR(stream.add(x.narrow(-1, 0, 10), y.narrow(-1, 0, 10)), "grafx.loss.shape",
                       "target is given");
  }
}

TEST(MixLoss, CropsOfASongTakeTheirTargetFramesFromTheSong) {
  // crop_terms against terms of the crops themselves, values and gradients: crops on the frame
  // grid (the song's frames inside, the crop's own at its ends: reflection, the weighting's
  // zeros, a crop at the song's start and one at its end) and off it (every frame the crop's).
  // Doubling the song's frames changes the terms of crops on the grid only: they are used.
  const int64_t n_song = 40000, n = 12000;
  at::Tensor song = target_signal(n_song)[0];
  for (auto dtype : {at::kDouble, at::kFloat})
    for (int64_t skip : {int64_t(0), int64_t(3000)})
      for (bool weighting : {true, false}) {
        MixLossOptions options;
        options.skip_samples = skip;
        options.a_weighting  = weighting;
        MixLoss loss(options);
        const int64_t grid = loss.frame_alignment();
        ASSERT_EQ(grid, 1024);
        const at::Tensor y               = song.to(dtype);
        const MixLossTargetFrames frames = loss.song_frames(y),
                                  doubled{
                                      {frames.mels[0] * 2, frames.mels[1] * 2, frames.mels[2] * 2},
                                      frames.n_samples};
        auto on_grid = [&](int64_t k) { return k * grid - skip % grid; };
        for (const std::vector<int64_t>& starts :
             std::vector<std::vector<int64_t>>{{on_grid(skip > 0 ? 1 : 0)},
                                               {-skip},  // warm-up before the song (or none)
                                               {on_grid(0), on_grid(3)},
                                               {on_grid(7), on_grid(3), on_grid(20)},
                                               {(n_song - n) / grid * grid - skip % grid},
                                               {on_grid(5) + 64},
                                               {on_grid(2), on_grid(4) + 1}}) {
          const bool all_on_grid = std::all_of(starts.begin(), starts.end(),
                                               [&](int64_t s) { return (s + skip) % grid == 0; });
          SCOPED_TRACE(std::string(dtype == at::kDouble ? "float64" : "float32") + ", skip " +
                       std::to_string(skip) + (weighting ? ", A-weighted" : "") + ", first start " +
                       std::to_string(starts[0]));
          std::vector<at::Tensor> crops, estimates;
          for (size_t b = 0; b < starts.size(); ++b) {
            // Silent before the song: the part a warm-up reaches there is never compared.
            const int64_t before = std::max<int64_t>(0, -starts[b]);
            crops.push_back(
                at::constant_pad_nd(y.narrow(1, starts[b] + before, n - before), {before, 0}));
            estimates.push_back(0.7 * crops.back() +
                                0.05 * estimate_signal(n)[0].to(dtype) * double(b + 1));
          }
          const at::Tensor x        = at::stack(estimates).requires_grad_(true);
          const MixLossTerms ours   = loss.crop_terms(x, y, frames, starts),
                             theirs = loss.terms(x, at::stack(crops));
          const double tolerance    = dtype == at::kDouble ? 1e-10 : 2e-5;
          expect_terms_near(ours, theirs, tolerance);
          const at::Tensor g1 = torch::autograd::grad({ours.total}, {x})[0],
                           g2 = torch::autograd::grad({theirs.total}, {x})[0];
          EXPECT_LE((g1 - g2).abs().max().item<double>(),
                    10 * tolerance * g2.abs().max().item<double>());
          const double changed =
              (loss.crop_terms(x, y, doubled, starts).total - ours.total).abs().item<double>();
          if (all_on_grid)
            EXPECT_GT(changed, 1e-3);
          else
            EXPECT_EQ(changed, 0.0);
        }
      }
  MixLoss loss;
  const MixLossTargetFrames frames = loss.song_frames(song);
  const at::Tensor x               = estimate_signal(n);
  EXPECT_GRAFX_ERROR(loss.crop_terms(x, song, frames, {n_song - n + 1}), "grafx.loss.shape",
                     "does not lie within the song's 40000");
  MixLossOptions warming;
  warming.skip_samples = 3000;
  const MixLoss warm(warming);
  EXPECT_GRAFX_ERROR(warm.crop_terms(x, song, warm.song_frames(song), {-3001}), "grafx.loss.shape",
                     "(compared from sample -1) does not lie within");
  EXPECT_GRAFX_ERROR(loss.crop_terms(x, song, frames, {0, 1024}), "grafx.loss.shape",
                     "one B×2×T estimate per crop start");
  EXPECT_GRAFX_ERROR(loss.crop_terms(x, song.narrow(1, 0, 30000), frames, {0}), "grafx.loss.shape",
                     "its frames");
}

/// The index of the largest part and its share of the loss.
std::pair<int64_t, double> largest_part(const MixLossParts& parts) {
  const int64_t k = parts.loss.argmax().item<int64_t>();
  return {k, parts.loss[k].item<double>() / parts.loss.sum().item<double>()};
}

TEST(MixLossBreakdown, PartsSumToTheLossAndItsChannelTerms) {
  const SampleRate rate = 30000;
  at::Tensor x = estimate_signal(3 * rate + 777), y = target_signal(3 * rate + 777);
  MixLossOptions options;
  options.skip_samples = rate / 2;
  const MixLoss loss(options);
  const MixLossBreakdown b = loss.breakdown(x, y);
  EXPECT_EQ(value(b.terms.total), value(loss.streamed_terms(x, y).total)) << "the same stream";
  for (const MixLossParts* parts : {&b.bands, &b.seconds}) {
    ASSERT_EQ(int64_t(parts->labels.size()), parts->loss.size(0));
    ASSERT_EQ(parts->channels.sizes(), at::IntArrayRef({parts->loss.size(0), 4}));
    EXPECT_NEAR(value(parts->loss.sum()), value(b.terms.total), 1e-12);
    const at::Tensor channel = parts->channels.sum(0);  // d_L, d_R, d_M, d_S
    EXPECT_NEAR((value(channel[0]) + value(channel[1])) / 2, value(b.terms.lr), 1e-12);
    EXPECT_NEAR(value(channel[2]), value(b.terms.mid), 1e-12);
    EXPECT_NEAR(value(channel[3]), value(b.terms.side), 1e-12);
    EXPECT_GE(value(parts->loss.min()), 0.0);
  }
  // Octaves up to Nyquist (15 kHz); the seconds of the song the loss reads (0.5 s to 3.03 s).
  EXPECT_EQ(b.bands.labels,
            (std::vector<std::string>{"0 Hz–63 Hz", "63 Hz–125 Hz", "125 Hz–250 Hz",
                                      "250 Hz–500 Hz", "500 Hz–1 kHz", "1 kHz–2 kHz", "2 kHz–4 kHz",
                                      "4 kHz–8 kHz", "8 kHz–15 kHz"}));
  EXPECT_EQ(b.seconds.labels, (std::vector<std::string>{"0–1 s", "1–2 s", "2–3 s", "3–4 s"}));
  // Equal signals: every part is zero.
  const MixLossBreakdown same = loss.breakdown(y, y);
  EXPECT_EQ(value(same.bands.loss.abs().sum()) + value(same.seconds.channels.abs().sum()), 0.0);
  EXPECT_GRAFX_ERROR(loss.breakdown(x, y, {10, 100}), "grafx.loss.options", "start at 0");
  EXPECT_GRAFX_ERROR(loss.breakdown(x, y, {0, 100, 100}), "grafx.loss.options", "increase");
  MixLossStream stream = loss.stream(x.size(-1));
  stream.add(x, y);
  EXPECT_GRAFX_ERROR(stream.breakdown(default_band_edges_hz()), "grafx.loss.shape", "keep_parts()");
  EXPECT_GRAFX_ERROR(stream.keep_parts(), "grafx.loss.shape", "after the first samples");
}

TEST(MixLossBreakdown, FindsADifferenceWhereItWasPut) {
  const SampleRate rate = 30000;
  at::manual_seed(3);
  const at::Tensor y = 0.1 * at::randn({2, 4 * rate}, at::kDouble);
  // 1.2 to 1.8 kHz boosted by 6 dB (by FFT): the "1 kHz–2 kHz" band holds most of the loss.
  at::Tensor spectrum = at::fft_rfft(y);
  const at::Tensor hz = at::arange(spectrum.size(-1), at::kDouble) * (double(rate) / y.size(-1));
  const at::Tensor boost =
      at::where((hz > 1200) & (hz < 1800), at::full_like(hz, 2.0), at::ones_like(hz));
  const at::Tensor boosted = at::fft_irfft(spectrum * boost, y.size(-1));
  const MixLoss loss;
  auto [band, band_share] = largest_part(loss.breakdown(boosted, y).bands);
  EXPECT_EQ(loss.breakdown(boosted, y).bands.labels[size_t(band)], "1 kHz–2 kHz");
  EXPECT_GT(band_share, 0.7);
  // The third second three times as loud: "2–3 s" holds most of it.
  at::Tensor louder = y.clone();
  louder.narrow(1, 2 * rate, rate).mul_(3);
  const MixLossParts seconds  = loss.breakdown(louder, y).seconds;
  auto [second, second_share] = largest_part(seconds);
  EXPECT_EQ(seconds.labels[size_t(second)], "2–3 s");
  EXPECT_GT(second_share, 0.8);
}

TEST(MixLossStream, RejectsChunksThatDoNotAddUp) {
  MixLoss loss;
  at::Tensor x = estimate_signal(10000), y = target_signal(10000);
  MixLossStream stream = loss.stream(10000);
  stream.add(x.narrow(-1, 0, 6000), y.narrow(-1, 0, 6000));
  EXPECT_GRAFX_ERROR(stream.finish(), "grafx.loss.shape", "expected 10000 samples, but got 6000");
  EXPECT_GRAFX_ERROR(stream.add(x.narrow(-1, 0, 5000), y.narrow(-1, 0, 5000)), "grafx.loss.shape",
                     "expected 10000 samples in all, but got 11000");
  EXPECT_GRAFX_ERROR(
      stream.add(at::cat({x, x}).narrow(-1, 0, 10), at::cat({y, y}).narrow(-1, 0, 10)),
      "grafx.loss.shape", "1 item(s)");
  EXPECT_GRAFX_ERROR(stream.add(x.narrow(-1, 0, 10), y.narrow(-1, 0, 10).to(at::kFloat)),
                     "grafx.loss.dtype", "");
  EXPECT_GRAFX_ERROR(loss.stream(1000), "grafx.loss.too_short", "");
}

}  // namespace
}  // namespace grafx
