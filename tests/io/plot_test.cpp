// SVG line plots and the processor response pictures (checked by their numbers).

#include <grafx/io/plot.h>
#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>
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
