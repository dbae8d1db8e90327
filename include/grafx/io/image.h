#pragma once
/// Raster pictures: PNG encoding (zlib), colour maps and spectrogram images.
///
///   at::Tensor picture = spectrogram_image(mix, 44100);   // H×W×3 uint8
///   write_png("mix.png", picture);
///
///   at::Tensor db = spectrogram_db(mix, 44100);           // H×W levels, to compare two mixes
///   at::Tensor rgb = colourise(db, -80, 0, ColourMap::kMagma);
///
/// Spectrogram rows are log-spaced frequencies, row 0 the highest (the Nyquist frequency), row
/// H − 1 `min_hz`; columns are equal stretches of time from 0 to the signal's end (pictures with
/// axes: grafx/io/plot.h, raster_plot_svg).

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace grafx {

/// Colour maps of pictures: magma (dark to bright, for levels) and a diverging blue-white-red
/// map (for signed differences; white at the middle).
enum class ColourMap { kMagma, kDiverging };

/// The map's colours (RGB in [0, 1]) at evenly spaced points from 0 to 1; colours between two
/// points are interpolated linearly (as SVG gradients do).
const std::vector<std::array<double, 3>>& colour_map_stops(ColourMap map);

/// H×W values as an H×W×3 uint8 image: `lo` (and below) the map's first colour, `hi` (and
/// above) its last. `levels` ≥ 2 rounds the values to that many evenly spaced colours (256: a
/// picture encode_png writes with a palette, a third of the size).
at::Tensor colourise(const at::Tensor& values, double lo, double hi,
                     ColourMap map = ColourMap::kMagma, int64_t levels = 0);

/// The text of bytes in base64 (RFC 4648, padded): for data: URIs of pictures in pages.
std::string base64(const std::string& bytes);

/// PNG bytes of an H×W×3 uint8 RGB image; one of at most 256 colours is written with a palette.
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

/// The levels (dB, power averaged over channels; H×W float64, see the header comment for rows
/// and columns) of C×L audio's spectrogram. Throws IoError [grafx.io.image] for audio that is
/// not C×L with L ≥ 2.
at::Tensor spectrogram_db(const at::Tensor& audio, SampleRate sample_rate,
                          const SpectrogramOptions& options = {});

/// A spectrogram of C×L audio (channels averaged in power), magma colours over `range_db` below
/// the reference level, low frequencies at the bottom. `level_db` (optional) receives the
/// reference level used, so that two pictures can share one scale.
at::Tensor spectrogram_image(const at::Tensor& audio, SampleRate sample_rate,
                             const SpectrogramOptions& options = {}, double* level_db = nullptr);

}  // namespace grafx
