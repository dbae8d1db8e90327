#pragma once
/// Audio files through libsndfile (WAV, FLAC, OGG, AIFF, ...), and resampling through
/// libsamplerate.
///
///   Audio a = read_audio("bass.wav");           // samples: C×L float32 in [-1, 1]
///   write_audio("mix.wav", y, a.sample_rate);    // float WAV, written atomically

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace grafx {

struct Audio {
  at::Tensor samples;       ///< C×L, float32
  int64_t sample_rate = 0;  ///< Hz
};

/// Throws IoError [grafx.io.unreadable] (missing file, not audio) naming the file and reason.
Audio read_audio(const std::string& path);

enum class AudioEncoding { kFloat32, kPcm16, kPcm24 };

/// Writes C×L samples; the container follows the extension (.wav, .flac, .ogg, .aiff). FLAC and
/// OGG cannot hold float samples: they are written as 24-bit PCM (FLAC) or Vorbis (OGG).
/// Refuses to replace an existing file unless `overwrite`. PCM encodings clip to [-1, 1].
void write_audio(const std::string& path, const at::Tensor& samples, int64_t sample_rate,
                 bool overwrite = false, AudioEncoding encoding = AudioEncoding::kFloat32);

/// Resamples C×L audio with libsamplerate's best sinc converter.
at::Tensor resample(const at::Tensor& samples, int64_t from_rate, int64_t to_rate);

}  // namespace grafx
