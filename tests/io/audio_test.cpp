// Audio files and resampling.

#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

TEST(Audio, WavRoundTripsExactlyInFloat) {
  testing::TempDir dir;
  at::Tensor x = at::rand({2, 1000}) * 2 - 1;
  write_audio(dir.file("a.wav"), x, 30000);
  Audio a = read_audio(dir.file("a.wav"));
  EXPECT_EQ(a.sample_rate, 30000);
  EXPECT_TRUE(at::equal(a.samples, x));
  write_audio(dir.file("b.wav"), x * 2, 30000, false, AudioEncoding::kPcm16);
  Audio b = read_audio(dir.file("b.wav"));
  EXPECT_LE((b.samples - (x * 2).clamp(-1, 1)).abs().max().item<double>(), 2.0 / 32767)
      << "PCM clips and rounds";
  write_audio(dir.file("c.flac"), x, 44100);
  EXPECT_LE((read_audio(dir.file("c.flac")).samples - x).abs().max().item<double>(),
            1.0 / 8388607 * 2);
}

TEST(Audio, ReadsTheRepositoryStems) {
  Audio bass = read_audio(testing::testdata_dir() + "/bass.flac");
  EXPECT_EQ(bass.sample_rate, 44100);
  EXPECT_EQ(bass.samples.sizes(), at::IntArrayRef({1, 577320}));
  EXPECT_GT(bass.samples.abs().max().item<double>(), 0.01);
  EXPECT_EQ(read_audio(testing::testdata_dir() + "/speech.flac").samples.size(0), 2);
}

TEST(Audio, ResamplingKeepsFrequencyAndDuration) {
  const int64_t from = 44100, to = 30000;
  at::Tensor t = at::arange(44100, at::kDouble) / double(from);
  at::Tensor x = at::sin(2 * M_PI * 1000 * t).to(at::kFloat).unsqueeze(0);
  at::Tensor y = resample(x, from, to);
  EXPECT_NEAR(double(y.size(1)), 30000.0, 2.0);
  at::Tensor expected =
      at::sin(2 * M_PI * 1000 * (at::arange(y.size(1), at::kDouble) / double(to))).to(at::kFloat);
  at::Tensor middle = (y[0] - expected).narrow(0, 1000, 28000);
  EXPECT_LT(middle.abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(at::equal(resample(x, 100, 100), x));
}

TEST(Audio, Errors) {
  testing::TempDir dir;
  EXPECT_GRAFX_ERROR(read_audio(dir.file("none.wav")), "grafx.io.unreadable", "none.wav");
  testing::write_file(dir.file("text.wav"), "not audio at all");
  EXPECT_GRAFX_ERROR(read_audio(dir.file("text.wav")), "grafx.io.unreadable", "text.wav");
  EXPECT_GRAFX_ERROR(write_audio(dir.file("x.mp9"), at::zeros({1, 10}), 44100),
                     "grafx.io.audio_format", "unknown audio format \".mp9\"");
  EXPECT_GRAFX_ERROR(write_audio(dir.file("x.wav"), at::zeros({10}), 44100),
                     "grafx.io.audio_format", "C×L");
  write_audio(dir.file("x.wav"), at::zeros({1, 10}), 44100);
  EXPECT_GRAFX_ERROR(write_audio(dir.file("x.wav"), at::ones({1, 10}), 44100), "grafx.io.exists",
                     "refusing");
  EXPECT_EQ(read_audio(dir.file("x.wav")).samples.abs().sum().item<double>(), 0.0)
      << "left as it was";
  EXPECT_GRAFX_ERROR(resample(at::zeros({1, 10}), 0, 10), "grafx.io.audio_format",
                     "cannot resample");
}

}  // namespace
}  // namespace grafx
