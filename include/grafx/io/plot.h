#pragma once
/// Line plots as SVG pictures: several labelled series, axis labels with ticks (1-2-5 steps, or
/// decades on a logarithmic x axis), a title and a legend. Used for processor responses and
/// loss curves.
///
///   PlotOptions options;
///   options.title = "eq";
///   options.log_x = true;
///   write_plot("eq.svg", {{"left", frequencies, gains_db}}, options);
///
/// Points that cannot be drawn are left out and break the line: non-finite values, and x ≤ 0 on
/// a logarithmic axis. Series longer than the picture is wide keep each pixel column's minimum
/// and maximum, so peaks survive.

#include <limits>
#include <string>
#include <vector>

namespace grafx {

struct PlotSeries {
  std::string label;  ///< shown in the legend when not empty
  std::vector<double> x, y;
  bool dashed = false;
};

struct PlotOptions {
  std::string title, x_label, y_label;
  bool log_x = false;
  /// Axis ranges; NaN takes them from the data (y rounded out to ticks).
  double x_min = std::numeric_limits<double>::quiet_NaN(),
         x_max = std::numeric_limits<double>::quiet_NaN();
  double y_min = std::numeric_limits<double>::quiet_NaN(),
         y_max = std::numeric_limits<double>::quiet_NaN();
  int width = 720, height = 440;  ///< pixels
};

/// The SVG text of a plot. Throws IoError [grafx.io.plot] for a series whose x and y differ in
/// length, or when no series has a point to draw.
std::string plot_svg(const std::vector<PlotSeries>& series, const PlotOptions& options = {});

/// Writes plot_svg atomically; refuses to replace an existing file unless `overwrite`.
void write_plot(const std::string& path, const std::vector<PlotSeries>& series,
                const PlotOptions& options = {}, bool overwrite = false);

}  // namespace grafx
