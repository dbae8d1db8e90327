// SVG line plots, raster plots with colour bars, colour maps, spectrogram levels and the
// processor response pictures (checked by their numbers).

#include <grafx/io/image.h>
#include <grafx/io/plot.h>
#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <zlib.h>

#include <cmath>
#include <map>
#include <regex>

namespace grafx {
namespace {

int64_t count(const std::string& text, const std::string& part) {
  int64_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(Plot, SeriesAxesTicksAndEscapedText) {
  PlotOptions options;
  options.title         = "gain <dB> & more";
  options.x_label       = "frequency (Hz)";
  options.log_x         = true;
  std::vector<double> x = {0, 20, 100, 1000, 15000}, y = {1, 2, NAN, 4, 5};
  std::string svg = plot_svg({{"left", x, y}, {"", x, {0, 0, 0, 0, 0}, true}}, options);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("gain &lt;dB&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find(">frequency (Hz)<"), std::string::npos);
  for (const char* label : {">100<", ">1k<", ">10k<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  // x = 0 cannot be drawn on a log axis and NaN breaks the line: "left" is two polylines.
  EXPECT_EQ(count(svg, "<polyline"), 3);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 1)
      << "the unlabelled dashed series has no legend entry";
  EXPECT_NE(svg.find(">left<"), std::string::npos);
}

TEST(Plot, LongSeriesKeepTheirPeaks) {
  std::vector<double> x(100000), y(100000, 0.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i);
  y[54321] = 1.0;  // one spike among 100000 points
  PlotOptions options;
  options.y_min = 0, options.y_max = 1;
  std::string svg = plot_svg({{"", x, y}}, options);
  EXPECT_LT(svg.size(), 60000u) << "decimated to a few points per pixel column";
  double top = 44;  // the plot area's top edge, where y = 1 is drawn
  EXPECT_NE(svg.find("," + std::to_string(int(top)) + ".00 "), std::string::npos)
      << "the spike survives";
}

TEST(Plot, RejectsBadSeriesAndKeepsFiles) {
  EXPECT_GRAFX_ERROR(plot_svg({{"a", {1, 2}, {1}}}), "grafx.io.plot",
                     "series \"a\": expected as many y as x");
  EXPECT_GRAFX_ERROR(plot_svg({{"a", {NAN}, {1}}}), "grafx.io.plot", "no point to draw");
  testing::TempDir dir;
  write_plot(dir.file("p.svg"), {{"a", {1, 2}, {1, 2}}});
  EXPECT_GRAFX_ERROR(write_plot(dir.file("p.svg"), {{"b", {1, 2}, {1, 2}}}), "grafx.io.exists",
                     "p.svg");
  EXPECT_NE(testing::read_file(dir.file("p.svg")).find(">a<"), std::string::npos);
}

TEST(Image, Base64OfRfc4648TestVectors) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\x00\xfe", 3)), "/wD+");
}

TEST(Image, ColourMapsTakeTheirEndsAndMiddle) {
  // lo, below lo and NaN: the first stop; hi and above: the last; the middle of the diverging
  // map: its middle stop (ColorBrewer's #f7f7f7); between two stops: linear.
  at::Tensor values =
      at::tensor({-10.0, -1.0, NAN, 1.0, 5.0, 0.0, 0.125}, at::kDouble).view({1, 7});
  for (ColourMap map : {ColourMap::kMagma, ColourMap::kDiverging}) {
    const auto& stops = colour_map_stops(map);
    ASSERT_EQ(stops.size(), 9u);
    at::Tensor rgb = colourise(values, -1, 1, map);
    ASSERT_EQ(rgb.sizes(), (std::vector<int64_t>{1, 7, 3}));
    for (int c = 0; c < 3; ++c) {
      auto byte = [&](double v) { return int(std::lround(v * 255)); };
      EXPECT_EQ(rgb[0][0][c].item<int>(), byte(stops[0][size_t(c)]));
      EXPECT_EQ(rgb[0][1][c].item<int>(), byte(stops[0][size_t(c)]));
      EXPECT_EQ(rgb[0][2][c].item<int>(), byte(stops[0][size_t(c)]));
      EXPECT_EQ(rgb[0][3][c].item<int>(), byte(stops[8][size_t(c)]));
      EXPECT_EQ(rgb[0][4][c].item<int>(), byte(stops[8][size_t(c)]));
      EXPECT_EQ(rgb[0][5][c].item<int>(), byte(stops[4][size_t(c)]));
      // 0.125 on [-1, 1] is 4.5 stops up: halfway between stops 4 and 5.
      EXPECT_NEAR(rgb[0][6][c].item<int>(), (stops[4][size_t(c)] + stops[5][size_t(c)]) / 2 * 255,
                  0.51);
    }
  }
  EXPECT_EQ(colourise(values, -1, 1, ColourMap::kDiverging)[0][5][0].item<int>(), 0xf7);
  EXPECT_GRAFX_ERROR(colourise(values, 1, 1), "grafx.io.image", "expected a colour range");
}

/// The chunks of a PNG, by type (IDAT's concatenated).
std::map<std::string, std::string> png_chunks(const std::string& png) {
  std::map<std::string, std::string> chunks;
  auto u32 = [&](size_t at) {
    return uint32_t(uint8_t(png[at])) << 24 | uint32_t(uint8_t(png[at + 1])) << 16 |
           uint32_t(uint8_t(png[at + 2])) << 8 | uint32_t(uint8_t(png[at + 3]));
  };
  for (size_t at = 8; at + 12 <= png.size(); at += 12 + u32(at))
    chunks[png.substr(at + 4, 4)] += png.substr(at + 8, u32(at));
  return chunks;
}

TEST(Image, PicturesOfFewColoursGetAPalette) {
  // 2×3 pixels of three colours: indices into a sorted palette, rows filtered with "none".
  at::Tensor rgb =
      at::tensor({255, 0, 0, 0, 0, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 255}, at::kByte)
          .view({2, 3, 3});
  auto chunks = png_chunks(encode_png(rgb));
  EXPECT_EQ(chunks.at("IHDR").substr(8, 2), std::string("\x08\x03", 2)) << "8-bit palette";
  EXPECT_EQ(chunks.at("PLTE"), std::string("\x00\x00\xff\x00\xff\x00\xff\x00\x00", 9));
  std::string raw(8, '\0');
  uLongf size = 8;
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(&raw[0]), &size,
                       reinterpret_cast<const Bytef*>(chunks.at("IDAT").data()),
                       uLong(chunks.at("IDAT").size())),
            Z_OK);
  EXPECT_EQ(raw, std::string("\x00\x02\x00\x02\x00\x01\x00\x00", 8));
  // Colour maps rounded to 256 levels stay within a palette; continuous ones need RGB.
  at::Tensor ramp = at::linspace(0, 1, 5000, at::kDouble).view({50, 100});
  EXPECT_TRUE(png_chunks(encode_png(colourise(ramp, 0, 1, ColourMap::kMagma, 256))).count("PLTE"));
  auto rgb_chunks = png_chunks(encode_png(colourise(ramp, 0, 1)));
  EXPECT_FALSE(rgb_chunks.count("PLTE"));
  EXPECT_EQ(rgb_chunks.at("IHDR").substr(8, 2), std::string("\x08\x02", 2)) << "8-bit RGB";
}

TEST(Image, SpectrogramLevelsPutToneAndSilenceWhereTheAxesSay) {
  // 2 s at 8 kHz: silence, then a 1 kHz sine from 1 s on. Rows are log-spaced from min_hz
  // (bottom) to 4 kHz (top); columns are equal stretches of time.
  const SampleRate rate = 8000;
  at::Tensor t          = at::arange(2 * rate, at::kDouble) / double(rate);
  at::Tensor x          = at::where(t >= 1.0, at::sin(t * (2 * M_PI * 1000)), at::zeros_like(t));
  // Windows of 2048 samples; hop (16000 − 2048) / (2·12) + 1 = 582: 24 frames, two per column.
  // Frames 0-10 end before 1 s (columns 0-4), frames 14-23 start after it (columns 7-11).
  SpectrogramOptions options;
  options.width     = 12;
  options.height    = 101;
  options.min_hz    = 40;
  at::Tensor levels = spectrogram_db(x.unsqueeze(0).repeat({2, 1}), rate, options);
  ASSERT_EQ(levels.sizes(), (std::vector<int64_t>{101, 12}));
  // Row of 1 kHz: (H − 1)·(1 − log(1000/40) / log(4000/40)) = 100·(1 − 0.699) = 30.1.
  EXPECT_EQ(levels.narrow(1, 7, 5).mean(1).argmax().item<int64_t>(), 30);
  EXPECT_LT(levels[30].narrow(0, 0, 5).max().item<double>(), -150);
  EXPECT_GT(levels[30].narrow(0, 7, 5).min().item<double>(), levels.max().item<double>() - 3);
  EXPECT_GRAFX_ERROR(spectrogram_db(at::zeros({2, 2, 100}), rate), "grafx.io.image",
                     "expected C×L audio");
}

TEST(Plot, RasterPlotHasAxesTicksAndAColourBar) {
  at::Tensor rgb  = colourise(at::rand({20, 30}, at::kDouble), 0, 1);
  std::string png = encode_png(rgb);
  RasterPlotOptions options;
  options.title        = "mix <A>";
  options.x_label      = "time (s)";
  options.y_label      = "frequency (Hz)";
  options.x_max        = 8;
  options.y_min        = 30;
  options.y_max        = 22050;
  options.log_y        = true;
  options.colour_min   = -80;
  options.colour_max   = 0;
  options.colour_label = "level (dB)";
  options.id           = "s1";
  std::string svg      = raster_plot_svg(png, 30, 20, options);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_TRUE(testing::contains(svg, "href=\"data:image/png;base64," + base64(png) + "\""));
  for (const char* part : {">time (s)<",
                           ">frequency (Hz)<",
                           ">level (dB)<",
                           ">mix &lt;A&gt;<",
                           ">50<",
                           ">100<",
                           ">200<",
                           ">500<",
                           ">1k<",
                           ">2k<",
                           ">5k<",
                           ">10k<",
                           ">20k<",
                           ">0<",
                           ">2<",
                           ">8<",
                           ">-80<",
                           ">-40<",
                           "id=\"s1-colours\"",
                           "fill=\"url(#s1-colours)\"",
                           "class=\"colour-bar\""})
    EXPECT_TRUE(testing::contains(svg, part)) << part;
  EXPECT_FALSE(testing::contains(svg, ">20<")) << "below the axis' 30 Hz";
  EXPECT_EQ(count(svg, "<stop "), 9) << "one per stop of the map";
  // 1 kHz is drawn where a log axis puts it: between the picture's bottom and top edges.
  RasterArea area   = raster_plot_area(options);
  double bottom     = area.top + area.height,
         expected_y = bottom - area.height * std::log(1000.0 / 30) / std::log(22050.0 / 30);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("y=\"([0-9.]+)\" text-anchor=\"end\">1k<")));
  EXPECT_NEAR(std::stod(m[1]) - 4, expected_y, 0.01);
  // The line plots take ids too (several are inlined in one page).
  PlotOptions line;
  line.id          = "p7";
  std::string plot = plot_svg({{"a", {1, 2}, {1, 2}}}, line);
  EXPECT_TRUE(testing::contains(plot, "id=\"p7-area\"") &&
              testing::contains(plot, "url(#p7-area)"));
  options.colour_bar = false;
  EXPECT_FALSE(testing::contains(raster_plot_svg(png, 30, 20, options), "colour-bar"));
  options.y_min = 0;
  EXPECT_GRAFX_ERROR(raster_plot_svg(png, 30, 20, options), "grafx.io.plot",
                     "y_min > 0 on a logarithmic axis");
  options.y_min = 30, options.x_max = -1;
  EXPECT_GRAFX_ERROR(raster_plot_svg(png, 30, 20, options), "grafx.io.plot",
                     "expected axis ranges min < max");
}

/// The series called `label`.
const PlotSeries& series(const Plot& plot, const std::string& label) {
  for (const auto& s : plot.series)
    if (s.label == label) return s;
  throw std::runtime_error("no series " + label);
}

double value_at(const PlotSeries& s, double x) {
  size_t i = 0;
  while (i + 1 < s.x.size() && s.x[i + 1] <= x) ++i;
  return s.y[i];
}

TEST(ProcessorResponse, MeasuresEqCompressorReverbDelayAndStereoField) {
  const SampleRate rate = 8000;
  auto response         = [&](const std::string& name, TensorDict changes) {
    auto processor = make_processor(name, {rate});
    TensorDict p   = default_parameters(*processor);
    for (auto& [key, value] : changes) p[key] = value;
    return processor_response(*processor, p, rate);
  };
  // eq_midside with the mid at +6.02 dB and the side at −6.02 dB.
  Plot eq = response("eq_midside", {{"log_magnitude", at::stack({at::full({1024}, std::log(2.0)),
                                                                 at::full({1024}, -std::log(2.0))})
                                                          .unsqueeze(0)}});
  EXPECT_NEAR(value_at(series(eq, "mid"), 1000), 6.0206, 1e-3);
  EXPECT_NEAR(value_at(series(eq, "side"), 3000), -6.0206, 1e-3);
  EXPECT_TRUE(eq.options.log_x);
  // Compressor at its initial values: threshold −26.06 dB, ratio 2, far above the knee the
  // output rises half as fast as the input.
  Plot curve            = response("compressor", {});
  const PlotSeries& out = series(curve, "output");
  EXPECT_NEAR(value_at(out, -60), -60, 1e-3);
  EXPECT_NEAR(value_at(out, 0) - value_at(out, -10), 5.0, 1e-2);
  // Reverb: the energy decay curve starts at 0 dB and falls as the mask, softplus(0)/8 nepers
  // of amplitude per hop of 192 samples.
  Plot decay             = response("reverb", {});
  const PlotSeries& left = series(decay, "left");
  EXPECT_NEAR(left.y[0], 0.0, 1e-9);
  double hops = 0.5 * rate / 192, expected_db = -hops * std::log(2.0) / 8 * 20 / std::log(10.0);
  EXPECT_NEAR(value_at(left, 0.5), expected_db, 1.5);
  // Delay: taps at the start of each segment (raw z̃ = 0), 20 per channel of equal height.
  Plot taps                  = response("delay", {});
  const PlotSeries& tap_left = series(taps, "left");
  EXPECT_NEAR(value_at(tap_left, 100.0), 1 / std::sqrt(20.0), 1e-6);
  EXPECT_NEAR(value_at(tap_left, 150.0), 0.0, 1e-6);
  // gain_pan: +6 dB on the left only.
  Plot field = response("gain_pan",
                        {{"log_gain", at::tensor({std::log(2.0), 0.0}, at::kDouble).view({1, 2})}});
  EXPECT_NEAR(value_at(series(field, "left out"), 0.0) - value_at(series(field, "left in"), 0.0),
              6.0206, 1e-3);
  EXPECT_NEAR(value_at(series(field, "right out"), 0.0), value_at(series(field, "right in"), 0.0),
              1e-9);
}

}  // namespace
}  // namespace grafx
