#pragma once
/// Audio files through libsndfile (WAV, FLAC, OGG, AIFF, ...), and resampling through
/// libsamplerate.
///
///   Audio a = read_audio("bass.wav");           // samples: C×L float32 in [-1, 1]
///   write_audio("mix.wav", y, a.sample_rate);    // float WAV, written atomically

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace grafx {

struct Audio {
  at::Tensor samples;  ///< C×L, float32
  SampleRate sample_rate = 0;
};

/// Throws IoError [grafx.io.unreadable] (missing file, not audio) naming the file and reason,
/// [grafx.io.length] for a file without samples, and [grafx.io.non_finite] for NaN or infinite
/// samples (float files can hold them), naming the first.
Audio read_audio(const std::string& path);

enum class AudioEncoding { kFloat32, kPcm16, kPcm24 };

/// Writes C×L samples; the container follows the extension (.wav, .flac, .ogg, .aiff). FLAC and
/// OGG cannot hold float samples: they are written as 24-bit PCM (FLAC) or Vorbis (OGG).
/// Refuses to replace an existing file unless `overwrite`. PCM encodings clip to [-1, 1].
void write_audio(const std::string& path, const at::Tensor& samples, SampleRate sample_rate,
                 bool overwrite = false, AudioEncoding encoding = AudioEncoding::kFloat32);

/// Resamples C×L audio with libsamplerate's best sinc converter to exactly round(L × to / from)
/// samples, whatever the channel count; errors name `what` (the file).
at::Tensor resample(const at::Tensor& samples, SampleRate from_rate, SampleRate to_rate,
                    const std::string& what = "audio");

}  // namespace grafx
