// A fit folder's record (fit.json) and the audio as a fit reads it: written and read back
// equal, version 1 records still read, files changed or swapped since the fit refused, mono
// spread and other rates resampled or refused, every file cut to the shortest with a note.

#include <grafx/files.h>
#include <grafx/fit/fit_record.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace grafx {
namespace {

TEST(FitRecord, WrittenAndReadBackWithEverySetting) {
  testing::TempDir dir;
  at::manual_seed(1);
  write_audio(dir.file("a.wav"), at::randn({1, 8000}) * 0.1, 8000);
  write_audio(dir.file("mix.wav"), at::randn({2, 8000}) * 0.1, 8000);
  FitInputs inputs{{dir.file("a.wav")}, dir.file("mix.wav"), {"a"}, 8000, true, {}};
  inputs.hashes = content_hashes(inputs);
  ASSERT_EQ(inputs.hashes.size(), 2u);
  FitOptions options;
  set_fit_setting(options, "crop_seconds", 0.75);
  set_fit_setting(options, "optimizer", "adahessian");
  write_fit_record(dir.path(), inputs, options, false);
  FitFolderRecord back = read_fit_record(dir.path());
  EXPECT_EQ(back.inputs.tracks, inputs.tracks);
  EXPECT_EQ(back.inputs.mix, inputs.mix);
  EXPECT_EQ(back.inputs.track_names, inputs.track_names);
  EXPECT_EQ(back.inputs.sample_rate, 8000);
  EXPECT_TRUE(back.inputs.strict_rate);
  EXPECT_EQ(back.inputs.hashes, inputs.hashes);
  EXPECT_EQ(fit_settings_json(back.options), fit_settings_json(options));
  EXPECT_GRAFX_ERROR(write_fit_record(dir.path(), inputs, options, false), "grafx.io.exists", "");

  // Version 1: a few settings at the top level, the rest the defaults.
  auto j = nlohmann::json::parse(read_text_file(dir.file("fit.json")));
  j.erase("settings");
  j["version"] = 1, j["crop_seconds"] = 2.0, j["skip_seconds"] = 0.25, j["lr"] = 0.02;
  j["seed"] = 9, j["final_lr_ratio"] = 0.5;
  write_text_file(dir.file("fit.json"), j.dump(), true);
  FitOptions v1 = read_fit_record(dir.path()).options;
  EXPECT_EQ(v1.crop_seconds, 2.0);
  EXPECT_EQ(v1.skip_seconds, 0.25);
  EXPECT_EQ(v1.optimizer.lr, 0.02);
  EXPECT_EQ(v1.seed, 9u);
  EXPECT_EQ(v1.lr_schedule.final_ratio, 0.5);
  EXPECT_EQ(v1.n_steps, FitOptions{}.n_steps);
  j.erase("lr");
  write_text_file(dir.file("fit.json"), j.dump(), true);
  EXPECT_GRAFX_ERROR(read_fit_record(dir.path()), "grafx.io.fit_folder", "missing or wrong field");
  write_text_file(dir.file("fit.json"), "{", true);
  EXPECT_GRAFX_ERROR(read_fit_record(dir.path()), "grafx.io.fit_folder", "not valid JSON");
  EXPECT_GRAFX_ERROR(read_fit_record(dir.file("nowhere")), "grafx.io.fit_folder",
                     "is not the folder of a fit");

  // Files changed or swapped since the hashes were taken.
  EXPECT_NO_THROW(check_fit_audio_unchanged(inputs, "fit"));
  std::swap(inputs.hashes[0], inputs.hashes[1]);
  EXPECT_GRAFX_ERROR(check_fit_audio_unchanged(inputs, "fit"), "grafx.io.fit_folder",
                     "now holds what");
  inputs.hashes[1] = "0000000000000000";
  EXPECT_GRAFX_ERROR(check_fit_audio_unchanged(inputs, "fit"), "grafx.io.fit_folder",
                     "changed since the fit");
}

TEST(FitRecord, AudioIsReadAsTheFitReadsIt) {
  testing::TempDir dir;
  at::manual_seed(2);
  at::Tensor mono = at::randn({1, 16000}) * 0.1;
  write_audio(dir.file("mono.wav"), mono, 16000);
  write_audio(dir.file("long.wav"), at::randn({2, 16800}) * 0.1, 16000);
  at::Tensor stereo = read_stereo(dir.file("mono.wav"), 16000, true);
  ASSERT_EQ(stereo.sizes(), (std::vector<int64_t>{2, 16000}));
  EXPECT_LT((stereo[0] - mono[0]).abs().max().item<double>(), 1e-4);  // 16-bit file
  EXPECT_TRUE(at::equal(stereo[0], stereo[1]));
  EXPECT_EQ(read_stereo(dir.file("mono.wav"), 8000, false).size(1), 8000);  // resampled
  EXPECT_GRAFX_ERROR(read_stereo(dir.file("mono.wav"), 8000, true), "grafx.io.sample_rate",
                     "16000 Hz, but the fit runs at 8000 Hz");
  FitInputs inputs{{dir.file("mono.wav")}, dir.file("long.wav"), {"mono"}, 16000, false, {}};
  FitAudio audio = load_fit_audio(inputs);
  EXPECT_EQ(audio.tracks.sizes(), (std::vector<int64_t>{1, 2, 16000}));
  EXPECT_EQ(audio.mix.sizes(), (std::vector<int64_t>{2, 16000}));
  ASSERT_EQ(audio.notes.size(), 1u);
  EXPECT_EQ(audio.notes[0], dir.file("long.wav") + " is 0.05 s longer than " +
                                dir.file("mono.wav") + "; its end is left out");
}

}  // namespace
}  // namespace grafx
