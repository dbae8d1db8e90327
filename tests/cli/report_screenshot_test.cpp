// The demo's report page as a browser shows it: the page holds what a mixing engineer looks for
// (spectrograms with axes and colour bars, players, a table per track beside the hidden
// console's settings), and headless Chromium (scripts/report-screenshot.sh) draws it: a PNG of
// the size asked for, with the colours of the spectrograms in it, not a blank page.

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace grafx {
namespace {

using testing::contains;

int64_t occurrences(const std::string& text, const std::string& part) {
  int64_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

/// An 8-bit RGB or RGBA PNG (what Chromium writes), decoded: width, height and RGB pixels.
struct Picture {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

uint32_t big_endian(const std::string& bytes, size_t at) {
  return uint32_t(uint8_t(bytes[at])) << 24 | uint32_t(uint8_t(bytes[at + 1])) << 16 |
         uint32_t(uint8_t(bytes[at + 2])) << 8 | uint32_t(uint8_t(bytes[at + 3]));
}

Picture decode_png(const std::string& bytes) {
  Picture picture;
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
    throw std::runtime_error("not a PNG");
  std::string data;
  int channels = 0;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length  = big_endian(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (type == "IHDR") {
      picture.width   = big_endian(bytes, at + 8);
      picture.height  = big_endian(bytes, at + 12);
      const int depth = uint8_t(bytes[at + 16]), colour = uint8_t(bytes[at + 17]);
      const int interlace = uint8_t(bytes[at + 20]);
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0)
        throw std::runtime_error("expected an 8-bit RGB or RGBA PNG without interlacing");
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      data += bytes.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const size_t stride = size_t(picture.width) * size_t(channels);
  std::vector<uint8_t> raw(size_t(picture.height) * (stride + 1));
  uLongf size = uLongf(raw.size());
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(data.data()),
                 uLong(data.size())) != Z_OK ||
      size != raw.size())
    throw std::runtime_error("PNG data does not inflate to its size");
  // Undo the row filters (none, sub, up, average, Paeth).
  std::vector<uint8_t> pixels(size_t(picture.height) * stride), zero(stride, 0);
  for (int64_t y = 0; y < picture.height; ++y) {
    const uint8_t filter = raw[size_t(y) * (stride + 1)];
    const uint8_t* in    = &raw[size_t(y) * (stride + 1) + 1];
    uint8_t* row         = &pixels[size_t(y) * stride];
    const uint8_t* up    = y ? &pixels[size_t(y - 1) * stride] : zero.data();
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(channels) ? row[i - size_t(channels)] : 0, b = up[i],
                c   = i >= size_t(channels) ? up[i - size_t(channels)] : 0;
      int predicted = 0;
      if (filter == 1) predicted = a;
      if (filter == 2) predicted = b;
      if (filter == 3) predicted = (a + b) / 2;
      if (filter == 4) {
        const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      row[i] = uint8_t(in[i] + predicted);
    }
  }
  for (size_t i = 0; i < pixels.size(); i += size_t(channels))
    picture.rgb.insert(picture.rgb.end(), pixels.begin() + long(i), pixels.begin() + long(i) + 3);
  return picture;
}

std::string source_dir() {
  const char* dir = std::getenv("GRAFX_SOURCE_DIR");
  return dir ? dir : ".";
}

TEST(ReportScreenshot, DemoReportShowsWhatAMixingEngineerLooksFor) {
  testing::TempDir dir;
  const std::string out = dir.file("demo");
  auto r                = testing::run_grafx({"demo", "-o", out, "--steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = testing::read_file(out + "/report.html");
  // Spectrograms of the target, the fit and their difference, each with axes and a colour bar.
  EXPECT_EQ(occurrences(html, "class=\"colour-bar\""), 3);
  EXPECT_EQ(occurrences(html, ">time (s)<"), 3);
  EXPECT_EQ(occurrences(html, "rotate(-90)\" text-anchor=\"middle\">frequency (Hz)<"), 3)
      << "the spectrograms' y axes";
  for (const char* part : {">1k<", ">10k<", ">level (dB re the target's peak)<",
                           ">fitted − target (dB)<", "data:image/png;base64,"})
    EXPECT_TRUE(contains(html, part)) << part;
  // Where the loss lives: its parts by octave band and by second, with their channel terms.
  EXPECT_TRUE(contains(html, "<h2 id=\"where\">Where the loss lives</h2>"));
  for (const char* part :
       {">Loss by octave band<", ">Loss by second<", ">band (Hz)<", ">second of the song (s)<"})
    EXPECT_EQ(occurrences(html, part), 1) << part;
  EXPECT_EQ(occurrences(html, ">left/right<"), 2) << "each picture's legend";
  // By track: a row for each of the four tracks, whose strips all have processors of their own,
  // as summary.json lists them.
  const size_t table = html.find("id=\"by_track\"");
  ASSERT_NE(table, std::string::npos);
  const std::string by_track = html.substr(table, html.find("</table>", table) - table);
  EXPECT_TRUE(contains(by_track, "<th>loss with that gain</th>"));
  EXPECT_EQ(occurrences(by_track, "<tr><td>"), 4);
  for (const char* track :
       {"<tr><td>drums</td>", "<tr><td>bass</td>", "<tr><td>chords</td>", "<tr><td>lead</td>"})
    EXPECT_EQ(occurrences(by_track, track), 1) << track;
  const auto summary = nlohmann::json::parse(testing::read_file(out + "/summary.json"));
  ASSERT_EQ(summary.at("by_track").size(), 4u);
  for (const auto& t : summary.at("by_track")) {
    EXPECT_GT(t.at("loss").get<double>(), 0);
    EXPECT_EQ(t.at("gain").size(), 2u);
  }
  // Players of the hidden console's mix, the fitted mix and the four tracks, linked relative to
  // the folder, where the files are.
  EXPECT_EQ(occurrences(html, "<audio "), 6);
  for (const std::string file : {"mix.wav", "tracks/target_mix.wav", "tracks/drums.wav",
                                 "tracks/bass.wav", "tracks/chords.wav", "tracks/lead.wav"}) {
    EXPECT_TRUE(contains(html, "src=\"" + file + "\"")) << file;
    EXPECT_TRUE(testing::file_exists(out + "/" + file)) << file;
  }
  EXPECT_FALSE(contains(html, "data:audio")) << "songs are linked, not embedded";
  // A table per strip (four tracks, two subgroups), each setting beside the hidden console's.
  EXPECT_EQ(occurrences(html, "<table class=\"settings\">"), 6);
  EXPECT_EQ(occurrences(html, "<th>hidden console</th><th>error</th>"), 6);
  for (const char* setting : {">threshold_db<", ">ratio<", ">gain_db<", ">wet<", ">delay_ms<"})
    EXPECT_GE(occurrences(html, setting), 6) << setting;
  EXPECT_FALSE(contains(html, "[1024 values")) << "no vector dumped as text";
  EXPECT_GE(occurrences(html, "hidden console</text>"), 6)
      << "each EQ curve with the hidden console's in its legend";
  // The letters' legend and the files as links.
  EXPECT_TRUE(contains(html, "<ul class=\"legend\">"));
  for (const char* file : {"console.json", "parameters.json", "loss.csv", "mix.wav"})
    EXPECT_TRUE(contains(html, "<a href=\"" + std::string(file) + "\">")) << file;

  // The page in a browser.
  if (std::system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no chromium (scripts/setup.sh --tests installs it): the page is not drawn";
  const std::string png     = dir.file("report.png");
  const std::string command = "'" + source_dir() + "/scripts/report-screenshot.sh' '" + out +
                              "/report.html' '" + png + "' 1200 1600 2>'" +
                              dir.file("screenshot.log") + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << testing::read_file(dir.file("screenshot.log"));
  ASSERT_TRUE(testing::file_exists(png));
  Picture picture = decode_png(testing::read_file(png));
  EXPECT_EQ(picture.width, 1200);
  EXPECT_EQ(picture.height, 1600);
  // Not blank: most pixels are white page, but the spectrograms fill a good part of the top
  // 1600 pixels with many colours, dark ones among them (magma's low end).
  int64_t coloured = 0, dark = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < picture.rgb.size(); i += 3) {
    const uint8_t r = picture.rgb[i], g = picture.rgb[i + 1], b = picture.rgb[i + 2];
    coloured += std::abs(int(r) - int(g)) + std::abs(int(g) - int(b)) > 40;
    dark += r < 60 && g < 60 && b < 90;
    colours.insert(uint32_t(r) << 16 | uint32_t(g) << 8 | b);
  }
  const double n = double(picture.width * picture.height);
  EXPECT_GT(double(coloured) / n, 0.05) << "spectrograms in colour";
  EXPECT_GT(double(dark) / n, 0.005) << "the quiet parts of the spectrograms";
  EXPECT_GT(colours.size(), 1000u);
}

}  // namespace
}  // namespace grafx
