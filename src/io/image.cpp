#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/image.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <fstream>
#include <initializer_list>

namespace grafx {
namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, uint32_t(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
}

std::vector<std::array<double, 3>> hex_colours(std::initializer_list<uint32_t> colours) {
  std::vector<std::array<double, 3>> stops;
  for (uint32_t c : colours)
    stops.push_back(
        {double((c >> 16) & 0xff) / 255, double((c >> 8) & 0xff) / 255, double(c & 0xff) / 255});
  return stops;
}

}  // namespace

std::string encode_png(const at::Tensor& rgb) {
  if (!rgb.defined() || rgb.dim() != 3 || rgb.size(2) != 3 || rgb.scalar_type() != at::kByte)
    throw IoError("grafx.io.image", "expected an H×W×3 uint8 image");
  at::Tensor image     = rgb.contiguous();
  const int64_t height = image.size(0), width = image.size(1);
  // Pictures of at most 256 colours (colour maps in levels) get a palette: a byte per pixel.
  at::Tensor packed = image.to(at::kInt);
  packed =
      (packed.select(2, 0) * 65536 + packed.select(2, 1) * 256 + packed.select(2, 2)).flatten();
  auto [colours, index, counts] = at::_unique2(packed, /*sorted=*/true, /*return_inverse=*/true);
  const bool palette            = colours.numel() <= 256;
  const int64_t row_bytes       = palette ? width : width * 3;
  at::Tensor bytes = palette ? index.to(at::kByte).contiguous() : image.flatten().contiguous();
  std::string raw;
  raw.reserve(size_t(height * (row_bytes + 1)));
  const char* pixels = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back('\0');  // filter: none
    raw.append(pixels + y * row_bytes, size_t(row_bytes));
  }
  uLongf size = compressBound(uLong(raw.size()));
  std::string compressed(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(&compressed[0]), &size,
                reinterpret_cast<const Bytef*>(raw.data()), uLong(raw.size()), 6) != Z_OK)
    throw IoError("grafx.io.image", "PNG compression failed");
  compressed.resize(size);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string header;
  put_u32(header, uint32_t(width));
  put_u32(header, uint32_t(height));
  // 8 bits per sample or index; colour type 3 (palette) or 2 (RGB); no interlace.
  header +=
      palette ? std::string("\x08\x03\x00\x00\x00", 5) : std::string("\x08\x02\x00\x00\x00", 5);
  put_chunk(png, "IHDR", header);
  if (palette) {
    std::string entries;
    at::Tensor c = colours.contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) {
      const int32_t v = c.data_ptr<int32_t>()[i];
      entries += char((v >> 16) & 0xff);
      entries += char((v >> 8) & 0xff);
      entries += char(v & 0xff);
    }
    put_chunk(png, "PLTE", entries);
  }
  put_chunk(png, "IDAT", compressed);
  put_chunk(png, "IEND", "");
  return png;
}

void write_png(const std::string& path, const at::Tensor& rgb, bool overwrite) {
  write_text_file(path, encode_png(rgb), overwrite);
}

const std::vector<std::array<double, 3>>& colour_map_stops(ColourMap map) {
  // Magma, sampled at nine points (matplotlib's colormap).
  static const std::vector<std::array<double, 3>> magma = {
      {0.001, 0.000, 0.014}, {0.078, 0.054, 0.211}, {0.232, 0.060, 0.438},
      {0.390, 0.100, 0.502}, {0.550, 0.161, 0.506}, {0.716, 0.215, 0.475},
      {0.868, 0.288, 0.409}, {0.967, 0.439, 0.360}, {0.987, 0.991, 0.750}};
  // ColorBrewer's RdBu reversed (matplotlib's RdBu_r): blue below the middle, red above.
  static const std::vector<std::array<double, 3>> diverging = hex_colours(
      {0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xf7f7f7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f});
  return map == ColourMap::kMagma ? magma : diverging;
}

at::Tensor colourise(const at::Tensor& values, double lo, double hi, ColourMap map,
                     int64_t levels) {
  if (!values.defined() || values.dim() != 2)
    throw IoError("grafx.io.image", "expected H×W values to colour");
  if (!(hi > lo))
    throw IoError("grafx.io.image", "expected a colour range lo < hi, but got " +
                                        std::to_string(lo) + " and " + std::to_string(hi));
  const auto& stops = colour_map_stops(map);
  const double n    = double(stops.size() - 1);
  at::Tensor level =
      ((values.detach().to(at::kCPU, at::kDouble) - lo) / (hi - lo)).nan_to_num(0.0).clamp(0, 1);
  if (levels >= 2) level = (level * double(levels - 1)).round() / double(levels - 1);
  level            = level * n;
  at::Tensor lower = level.floor().clamp_max(n - 1);
  at::Tensor frac  = (level - lower).unsqueeze(-1);
  at::Tensor table = at::empty({int64_t(stops.size()), 3}, at::kDouble);
  for (size_t i = 0; i < stops.size(); ++i)
    for (int c = 0; c < 3; ++c) table[int64_t(i)][c] = stops[i][size_t(c)];
  at::Tensor index = lower.to(at::kLong);
  at::Tensor rgb   = table.index({index}) * (1 - frac) + table.index({index + 1}) * frac;
  return (rgb * 255).round().clamp(0, 255).to(at::kByte);
}

std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += table[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 |
                 (i + 1 < bytes.size() ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0);
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

at::Tensor spectrogram_db(const at::Tensor& audio, SampleRate sample_rate,
                          const SpectrogramOptions& options) {
  c10::NoGradGuard no_grad;
  at::Tensor x = audio.detach().to(at::kCPU, at::kDouble);
  if (x.dim() == 1) x = x.unsqueeze(0);
  if (x.dim() != 2 || x.size(1) < 2)
    throw IoError("grafx.io.image", "expected C×L audio for a spectrogram");
  const int64_t n_fft = options.n_fft;
  if (x.size(1) < n_fft) x = at::constant_pad_nd(x, {0, n_fft - x.size(1)});
  // About two frames per column, at least a quarter-window hop.
  const int64_t hop = std::max<int64_t>(n_fft / 4, (x.size(1) - n_fft) / (2 * options.width) + 1);
  at::Tensor window =
      at::hann_window(n_fft, /*periodic=*/true, at::TensorOptions().dtype(at::kDouble));
  at::Tensor frames = x.unfold(1, n_fft, hop) * window;                      // C×F×N
  at::Tensor power  = at::fft_rfft(frames, n_fft, -1).abs().pow(2).mean(0);  // F×bins
  // Columns: average frames; rows: log-spaced frequencies, linearly interpolated between bins.
  const int64_t width = std::min<int64_t>(options.width, power.size(0));
  power = at::adaptive_avg_pool1d(power.t().unsqueeze(0), width).squeeze(0);  // bins×W
  const double nyquist = double(sample_rate) / 2, bin_hz = double(sample_rate) / double(n_fft);
  at::Tensor image_db = at::empty({options.height, width}, at::kDouble);
  for (int64_t r = 0; r < options.height; ++r) {
    double hz = options.min_hz * std::pow(nyquist / options.min_hz, double(options.height - 1 - r) /
                                                                        double(options.height - 1));
    double bin  = std::min(hz / bin_hz, double(power.size(0) - 1));
    int64_t lo  = int64_t(std::floor(bin));
    int64_t hi  = std::min(lo + 1, power.size(0) - 1);
    double frac = bin - double(lo);
    image_db[r] = ((1 - frac) * power[lo] + frac * power[hi] + 1e-20).log10() * 10;
  }
  return image_db;
}

at::Tensor spectrogram_image(const at::Tensor& audio, SampleRate sample_rate,
                             const SpectrogramOptions& options, double* level_db) {
  at::Tensor image_db = spectrogram_db(audio, sample_rate, options);
  double reference =
      options.reference_db != 0.0 ? options.reference_db : image_db.max().item<double>();
  if (level_db) *level_db = reference;
  return colourise(image_db, reference - options.range_db, reference, ColourMap::kMagma);
}

}  // namespace grafx
