#pragma once
/// Raster pictures: PNG encoding (zlib) and spectrogram images.
///
///   at::Tensor picture = spectrogram_image(mix, 44100);   // H×W×3 uint8
///   write_png("mix.png", picture);

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace grafx {

/// PNG bytes of an H×W×3 uint8 RGB image.
std::string encode_png(const at::Tensor& rgb);
/// Writes a PNG atomically; refuses to replace a file unless `overwrite`.
void write_png(const std::string& path, const at::Tensor& rgb, bool overwrite = false);

struct SpectrogramOptions {
  int64_t n_fft       = 2048;
  int64_t height      = 256;  ///< image rows, log-spaced from min_hz to the Nyquist frequency
  int64_t width       = 900;  ///< image columns (frames are averaged into columns)
  double min_hz       = 30.0;
  double range_db     = 80.0;  ///< dB below the reference shown (darker is quieter)
  double reference_db = 0.0;   ///< 0: the loudest point of this signal; else this level
};

/// A spectrogram of C×L audio (channels averaged in power), magma colours, low frequencies at
/// the bottom. `level_db` (optional) receives the reference level used, so that two pictures
/// can share one scale.
at::Tensor spectrogram_image(const at::Tensor& audio, SampleRate sample_rate,
                             const SpectrogramOptions& options = {}, double* level_db = nullptr);

}  // namespace grafx
