#pragma once
/// A fit's record, fit.json in its folder: where its audio came from (absolute paths, content
/// hashes, sample rate) and every setting it ran with (fit_settings.h), so that `grafx prune`
/// and other tools find the same data again. Also the audio as a fit reads it.
///
///   FitInputs inputs{{"kick.wav", "bass.wav"}, "mix.wav", {"kick", "bass"}, 30000};
///   auto [tracks, mix, notes] = load_fit_audio(inputs);   // K×2×L, 2×L at 30 kHz
///   inputs.hashes = content_hashes(inputs);
///   write_fit_record("my-fit", inputs, options, /*overwrite=*/false);
///   FitFolderRecord record = read_fit_record("my-fit");

#include <grafx/fit/fit.h>

#include <ATen/Tensor.h>

#include <string>
#include <vector>

namespace grafx {

/// The record's file name in a fit folder.
inline constexpr char kFitRecordFile[] = "fit.json";

/// Where a fit's data came from.
struct FitInputs {
  std::vector<std::string> tracks;  ///< audio files, one per `in` node
  std::string mix;
  std::vector<std::string> track_names;
  SampleRate sample_rate = 30000;
  bool strict_rate       = false;  ///< refuse other rates instead of resampling
  /// Content hashes of the tracks then the mix, as the fit read them (content_hashes): a
  /// reader refuses files changed since (empty in records from before they were kept).
  std::vector<std::string> hashes;
};

/// A hash of each track file's bytes, then the mix's (64-bit FNV-1a, as hex). Throws IoError
/// [grafx.io.unreadable] for a file that cannot be read.
std::vector<std::string> content_hashes(const FitInputs& inputs);

/// Throws IoError [grafx.io.fit_folder] (`where` first) when a track or the mix changed since the
/// hashes were taken, naming the file, and the file it now equals where files were swapped.
void check_fit_audio_unchanged(const FitInputs& inputs, const std::string& where);

/// An audio file as a fit reads it: 2×L float32 at `sample_rate` (mono spread to both
/// channels; another rate resampled, or refused when `strict`: IoError [grafx.io.sample_rate]).
at::Tensor read_stereo(const std::string& path, SampleRate sample_rate, bool strict);

/// Cuts every signal (C×L) to the shortest's length; returns a note for each one cut ("PATH is
/// 0.50 s longer than SHORTEST; its end is left out").
std::vector<std::string> trim_to_shortest(
    const std::vector<std::pair<std::string, at::Tensor*>>& audio, SampleRate sample_rate);

struct FitAudio {
  at::Tensor tracks;               ///< K×2×L
  at::Tensor mix;                  ///< 2×L
  std::vector<std::string> notes;  ///< trim_to_shortest's
};
/// The tracks and the mix at the fit's rate, as the fit read them: read_stereo of each, every
/// file cut to the shortest.
FitAudio load_fit_audio(const FitInputs& inputs);

/// What fit.json holds.
struct FitFolderRecord {
  FitInputs inputs;
  FitOptions options;  ///< the settings as the fit ran (fit_settings.h); the rest defaults
};

/// Writes `folder`/fit.json (version 2: the inputs with absolute paths, every setting by name).
void write_fit_record(const std::string& folder, const FitInputs& inputs, const FitOptions& options,
                      bool overwrite);

/// Reads `folder`/fit.json, version 2 or 1 (whose crop, warm-up, learning rate, final ratio and
/// seed are at the top level). Throws IoError [grafx.io.fit_folder] naming the file when it is
/// missing, not JSON, lacks a field or holds a setting out of range.
FitFolderRecord read_fit_record(const std::string& folder);

}  // namespace grafx
