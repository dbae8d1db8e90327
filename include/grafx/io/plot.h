#pragma once
/// Line plots as SVG pictures: several labelled series, axis labels with ticks (1-2-5 steps, or
/// decades on a logarithmic x axis), a title and a legend. Used for processor responses and
/// loss curves. And raster pictures (spectrograms) with the same axes and a colour bar.
///
///   PlotOptions options;
///   options.title = "eq";
///   options.log_x = true;
///   write_plot("eq.svg", {{"left", frequencies, gains_db}}, options);
///
/// Points that cannot be drawn are left out and break the line: non-finite values, and x ≤ 0 on
/// a logarithmic axis. Series longer than the picture is wide keep each pixel column's minimum
/// and maximum, so peaks survive.
///
///   RasterPlotOptions spectrogram;   // a PNG stretched over [x_min, x_max] × [y_min, y_max]
///   spectrogram.x_max = seconds, spectrogram.y_min = 30, spectrogram.y_max = 22050;
///   spectrogram.log_y = true;
///   spectrogram.colour_min = -80, spectrogram.colour_max = 0, spectrogram.colour_label = "dB";
///   std::string svg = raster_plot_svg(encode_png(rgb), rgb.size(1), rgb.size(0), spectrogram);
///
/// Pictures meant to be inlined together into one HTML page need distinct `id`s (the ids of
/// their clip paths and gradients share the page's namespace).

#include <grafx/io/image.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace grafx {

struct PlotSeries {
  std::string label;  ///< shown in the legend when not empty
  std::vector<double> x, y;
  bool dashed = false;
  std::string colour;  ///< an SVG colour ("#999999"); empty: the next of the palette's
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
  std::string id;                 ///< prefix of the ids inside the SVG; empty: none
};

/// The SVG text of a plot. Throws IoError [grafx.io.plot] for a series whose x and y differ in
/// length, or when no series has a point to draw.
std::string plot_svg(const std::vector<PlotSeries>& series, const PlotOptions& options = {});

struct RasterPlotOptions {
  std::string title, x_label, y_label;
  /// Where the picture's left and right, bottom and top edges lie on the axes.
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  bool log_y = false;  ///< a logarithmic y axis, labelled 1-2-5 in each decade (frequencies)
  /// The colour bar beside the picture: the map of its colours and the values of its ends.
  bool colour_bar   = true;
  ColourMap colours = ColourMap::kMagma;
  double colour_min = 0, colour_max = 1;
  std::string colour_label;       ///< e.g. "level (dB)"
  int width = 960, height = 300;  ///< pixels of the whole picture
  std::string id = "raster";      ///< prefix of the ids inside the SVG (its colour bar's gradient)
};

/// The picture area of a raster plot (pixels from the SVG's left and top edges), where the
/// image is stretched to: make the image this size for a sharp picture.
struct RasterArea {
  double left, top, width, height;
};
RasterArea raster_plot_area(const RasterPlotOptions& options);

/// The SVG text of a PNG picture (`png` bytes of `png_width`×`png_height` pixels, embedded as a
/// data: URI) stretched over the plot area, with axes, ticks, title and colour bar. Throws
/// IoError [grafx.io.plot] for empty or inverted axis or colour ranges, and y_min ≤ 0 on a
/// logarithmic axis.
std::string raster_plot_svg(const std::string& png, int64_t png_width, int64_t png_height,
                            const RasterPlotOptions& options);

/// Writes plot_svg atomically; refuses to replace an existing file unless `overwrite`.
void write_plot(const std::string& path, const std::vector<PlotSeries>& series,
                const PlotOptions& options = {}, bool overwrite = false);

}  // namespace grafx
