#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/plot.h>
#include <grafx/text.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace grafx {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
constexpr double kLeft = 72, kRight = 24, kTop = 44, kBottom = 52;  // margins, pixels

std::string number(double value, int decimals) { return fixed_decimals(value, decimals); }

/// A tick label on a logarithmic axis: 20, 100, 1k, 10k.
std::string log_label(double value) {
  if (value >= 1000)
    return number(value / 1000, value < 10000 && std::fmod(value, 1000) != 0 ? 1 : 0) + "k";
  return number(value, value < 1 ? int(std::ceil(-std::log10(value))) : 0);
}

/// A 1-2-5 step giving about `n` intervals over `span`.
double nice_step(double span, int n) {
  double raw = span / n, decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * decade) return m * decade;
  return 10 * decade;
}

struct Axis {
  double min, max;
  bool log;
  double pixels_from, pixels_to;  ///< where min and max are drawn

  double to_pixels(double v) const {
    double t = log ? (std::log10(v) - std::log10(min)) / (std::log10(max) - std::log10(min))
                   : (v - min) / (max - min);
    return pixels_from + t * (pixels_to - pixels_from);
  }
  bool drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }

  /// Major ticks with labels, and minor ticks (log axes: 2…9 × 10^k).
  void ticks(std::vector<std::pair<double, std::string>>& major, std::vector<double>& minor) const {
    if (log) {
      for (double decade = std::pow(10.0, std::floor(std::log10(min))); decade <= max; decade *= 10)
        for (int m = 1; m < 10; ++m) {
          double v = decade * m;
          if (v < min * (1 - 1e-9) || v > max * (1 + 1e-9)) continue;
          if (m == 1)
            major.push_back({v, log_label(v)});
          else
            minor.push_back(v);
        }
      return;
    }
    double step  = nice_step(max - min, 6);
    int decimals = std::max(0, int(-std::floor(std::log10(step) + 1e-9)));
    for (double v = std::ceil(min / step - 1e-9) * step; v <= max + step * 1e-9; v += step)
      major.push_back({v, number(v, decimals)});
  }
};

/// The range of x (or of y, over the points whose x lies in [x_axis.min, x_axis.max]) among the
/// drawable points; NaNs when there is none.
std::pair<double, double> data_range(const std::vector<PlotSeries>& series, const Axis& x_axis,
                                     bool of_y) {
  double lo = NAN, hi = NAN;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!x_axis.drawable(s.x[i]) || !std::isfinite(s.y[i])) continue;
      if (of_y && (s.x[i] < x_axis.min || s.x[i] > x_axis.max)) continue;
      double v = of_y ? s.y[i] : s.x[i];
      lo       = std::isnan(lo) ? v : std::min(lo, v);
      hi       = std::isnan(hi) ? v : std::max(hi, v);
    }
  return {lo, hi};
}

/// Indices of the points to draw: all, or each pixel column's first, minimum, maximum and last.
std::vector<size_t> decimate(const PlotSeries& s, const Axis& x_axis, int width) {
  std::vector<size_t> keep;
  if (s.x.size() <= size_t(4 * width)) {
    for (size_t i = 0; i < s.x.size(); ++i) keep.push_back(i);
    return keep;
  }
  long column = -1;
  size_t lo = 0, hi = 0, last = 0;
  auto flush = [&] {
    if (column < 0) return;
    for (size_t i : {std::min(lo, hi), std::max(lo, hi), last})
      if (keep.empty() || keep.back() != i) keep.push_back(i);
  };
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!x_axis.drawable(s.x[i])) continue;
    long c = long(std::floor(x_axis.to_pixels(s.x[i])));
    if (c != column) {
      flush();
      column = c, lo = hi = i;
      keep.push_back(i);
    }
    if (s.y[i] < s.y[lo]) lo = i;
    if (s.y[i] > s.y[hi]) hi = i;
    last = i;
  }
  flush();
  return keep;
}

}  // namespace

std::string plot_svg(const std::vector<PlotSeries>& series, const PlotOptions& options) {
  for (const auto& s : series)
    if (s.x.size() != s.y.size())
      throw IoError("grafx.io.plot",
                    "series \"" + s.label + "\": expected as many y as x values, but got " +
                        std::to_string(s.y.size()) + " and " + std::to_string(s.x.size()));
  double width = options.width, height = options.height;
  Axis x_axis{0, 1, options.log_x, kLeft, width - kRight};
  Axis y_axis{0, 1, false, height - kBottom, kTop};
  auto [x_lo, x_hi] = data_range(series, x_axis, false);
  if (std::isnan(x_lo)) throw IoError("grafx.io.plot", "no point to draw");
  x_axis.min = std::isnan(options.x_min) ? x_lo : options.x_min;
  x_axis.max = std::isnan(options.x_max) ? x_hi : options.x_max;
  if (!(x_axis.max > x_axis.min)) x_axis.max = x_axis.log ? x_axis.min * 10 : x_axis.min + 1;
  auto [y_lo, y_hi] = data_range(series, x_axis, true);
  if (std::isnan(y_lo)) y_lo = y_hi = 0;
  y_axis.min = std::isnan(options.y_min) ? y_lo : options.y_min;
  y_axis.max = std::isnan(options.y_max) ? y_hi : options.y_max;
  // A flat line (up to rounding) gets a unit range around it, not a zoom into the rounding.
  if (!(y_axis.max - y_axis.min > 1e-9 * std::max(1.0, std::abs(y_axis.max))))
    y_axis.min -= 1, y_axis.max += 1;
  if (std::isnan(options.y_min) ||
      std::isnan(options.y_max)) {  // round the data's range out to ticks
    double step = nice_step(y_axis.max - y_axis.min, 6);
    if (std::isnan(options.y_min)) y_axis.min = std::floor(y_axis.min / step + 1e-9) * step;
    if (std::isnan(options.y_max)) y_axis.max = std::ceil(y_axis.max / step - 1e-9) * step;
  }

  const std::string clip = options.id.empty() ? "area" : options.id + "-area";
  auto colour_of         = [&](size_t k) {
    return series[k].colour.empty() ? std::string(kColors[k % 8]) : escape_markup(series[k].colour);
  };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<clipPath id=\"" << clip << "\"><rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\""
      << width - kLeft - kRight << "\" height=\"" << height - kTop - kBottom << "\"/></clipPath>\n";
  // Grid and tick labels.
  std::vector<std::pair<double, std::string>> x_major, y_major;
  std::vector<double> x_minor, y_minor;
  x_axis.ticks(x_major, x_minor);
  y_axis.ticks(y_major, y_minor);
  auto grid_x = [&](double v, const char* colour) {
    double px = x_axis.to_pixels(v);
    svg << "<line x1=\"" << px << "\" y1=\"" << kTop << "\" x2=\"" << px << "\" y2=\""
        << height - kBottom << "\" stroke=\"" << colour << "\"/>\n";
  };
  for (double v : x_minor) grid_x(v, "#f0f0f0");
  for (const auto& [v, label] : x_major) {
    grid_x(v, "#dddddd");
    svg << "<text x=\"" << x_axis.to_pixels(v) << "\" y=\"" << height - kBottom + 16
        << "\" text-anchor=\"middle\">" << escape_markup(label) << "</text>\n";
  }
  for (const auto& [v, label] : y_major) {
    double py = y_axis.to_pixels(v);
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << py << "\" x2=\"" << width - kRight << "\" y2=\""
        << py << "\" stroke=\"#dddddd\"/>\n<text x=\"" << kLeft - 6 << "\" y=\"" << py + 4
        << "\" text-anchor=\"end\">" << escape_markup(label) << "</text>\n";
  }
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << width - kLeft - kRight
      << "\" height=\"" << height - kTop - kBottom << "\" fill=\"none\" stroke=\"#444444\"/>\n";
  // Series: polylines broken at points that cannot be drawn.
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    svg << "<g clip-path=\"url(#" << clip << ")\" fill=\"none\" stroke=\"" << colour_of(k)
        << "\" stroke-width=\"1.5\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << ">\n";
    std::string points;
    auto flush = [&] {
      if (!points.empty()) svg << "<polyline points=\"" << points << "\"/>\n";
      points.clear();
    };
    for (size_t i : decimate(s, x_axis, options.width)) {
      if (!x_axis.drawable(s.x[i]) || !std::isfinite(s.y[i])) {
        flush();
        continue;
      }
      double py = std::clamp(y_axis.to_pixels(s.y[i]), -1e5, 1e5);
      points += number(x_axis.to_pixels(s.x[i]), 2) + "," + number(py, 2) + " ";
    }
    flush();
    svg << "</g>\n";
  }
  // Title, axis labels, legend.
  svg << "<text x=\"" << width / 2 << "\" y=\"" << kTop - 16
      << "\" text-anchor=\"middle\" font-size=\"15\">" << escape_markup(options.title)
      << "</text>\n"
      << "<text x=\"" << (kLeft + width - kRight) / 2 << "\" y=\"" << height - 12
      << "\" text-anchor=\"middle\">" << escape_markup(options.x_label) << "</text>\n"
      << "<text transform=\"translate(16," << (kTop + height - kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape_markup(options.y_label) << "</text>\n";
  // Legend: in the corner of the plot area that covers the fewest points.
  int64_t n_labels =
      std::count_if(series.begin(), series.end(), [](const auto& s) { return !s.label.empty(); });
  // Wide enough for the longest label (about 0.6 em a character at 12 px).
  size_t longest = 0;
  for (const auto& s : series) longest = std::max(longest, s.label.size());
  double box_width  = std::max(150.0, 44 + 7.2 * double(longest)),
         box_height = 18.0 * double(n_labels) + 6;
  double best_x = 0, best_y = 0;
  int64_t fewest = -1;
  for (double bx : {width - kRight - box_width - 6, kLeft + 6})
    for (double by : {kTop + 6, height - kBottom - box_height - 6}) {
      int64_t covered = 0;
      for (const auto& s : series)
        for (size_t i = 0; i < s.x.size(); ++i) {
          if (!x_axis.drawable(s.x[i]) || !std::isfinite(s.y[i])) continue;
          double px = x_axis.to_pixels(s.x[i]), py = y_axis.to_pixels(s.y[i]);
          covered += px >= bx && px <= bx + box_width && py >= by && py <= by + box_height;
        }
      if (fewest < 0 || covered < fewest) fewest = covered, best_x = bx, best_y = by;
    }
  if (n_labels > 0)
    svg << "<rect x=\"" << best_x << "\" y=\"" << best_y << "\" width=\"" << box_width
        << "\" height=\"" << box_height
        << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n";
  double legend_y = best_y + 16;
  for (size_t k = 0; k < series.size(); ++k) {
    if (series[k].label.empty()) continue;
    double lx = best_x + 8;
    svg << "<line x1=\"" << lx << "\" y1=\"" << legend_y - 4 << "\" x2=\"" << lx + 24 << "\" y2=\""
        << legend_y - 4 << "\" stroke=\"" << colour_of(k) << "\" stroke-width=\"2\""
        << (series[k].dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n<text x=\"" << lx + 30
        << "\" y=\"" << legend_y << "\">" << escape_markup(series[k].label) << "</text>\n";
    legend_y += 18;
  }
  svg << "</svg>\n";
  return svg.str();
}

namespace {

/// Ticks of a logarithmic axis at 1, 2 and 5 in each decade (every decade's 1 when they would
/// be too many), labelled as frequencies are: 50, 100, 1k, 2k.
std::vector<std::pair<double, std::string>> log_ticks_125(double min, double max) {
  std::vector<std::pair<double, std::string>> ticks;
  const bool only_decades = std::log10(max / min) > 4;
  for (double decade = std::pow(10.0, std::floor(std::log10(min))); decade <= max; decade *= 10)
    for (double m : {1.0, 2.0, 5.0}) {
      double v = decade * m;
      if ((only_decades && m != 1) || v < min * (1 - 1e-9) || v > max * (1 + 1e-9)) continue;
      ticks.push_back({v, log_label(v)});
    }
  return ticks;
}

constexpr double kRasterLeft = 64, kRasterBottom = 44, kColourBar = 16;

double raster_right(const RasterPlotOptions& options) { return options.colour_bar ? 104 : 16; }
double raster_top(const RasterPlotOptions& options) { return options.title.empty() ? 10 : 30; }

}  // namespace

RasterArea raster_plot_area(const RasterPlotOptions& options) {
  const double top = raster_top(options);
  return {kRasterLeft, top, std::max(1.0, options.width - kRasterLeft - raster_right(options)),
          std::max(1.0, options.height - top - kRasterBottom)};
}

std::string raster_plot_svg(const std::string& png, int64_t png_width, int64_t png_height,
                            const RasterPlotOptions& options) {
  auto fail = [](const std::string& what) { throw IoError("grafx.io.plot", what); };
  if (png.empty() || png_width < 1 || png_height < 1) fail("expected a picture, but got none");
  if (!(options.x_max > options.x_min) || !(options.y_max > options.y_min))
    fail("expected axis ranges min < max, but got x " + number(options.x_min, 3) + " to " +
         number(options.x_max, 3) + " and y " + number(options.y_min, 3) + " to " +
         number(options.y_max, 3));
  if (options.log_y && !(options.y_min > 0))
    fail("expected y_min > 0 on a logarithmic axis, but got " + number(options.y_min, 3));
  if (options.colour_bar && !(options.colour_max > options.colour_min))
    fail("expected a colour range min < max, but got " + number(options.colour_min, 3) + " to " +
         number(options.colour_max, 3));
  const RasterArea area = raster_plot_area(options);
  const double width = options.width, height = options.height;
  const double bottom = area.top + area.height, right = area.left + area.width;
  Axis x_axis{options.x_min, options.x_max, false, area.left, right};
  Axis y_axis{options.y_min, options.y_max, options.log_y, bottom, area.top};

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<image x=\"" << area.left << "\" y=\"" << area.top << "\" width=\"" << area.width
      << "\" height=\"" << area.height
      << "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"data:image/"
         "png;base64,"
      << base64(png) << "\"/>\n"
      << "<rect x=\"" << area.left << "\" y=\"" << area.top << "\" width=\"" << area.width
      << "\" height=\"" << area.height << "\" fill=\"none\" stroke=\"#444444\"/>\n";
  // Ticks outside the picture, with faint lines across it at the y ticks (frequencies).
  std::vector<std::pair<double, std::string>> x_major, y_major;
  std::vector<double> minor;
  x_axis.ticks(x_major, minor);
  if (options.log_y)
    y_major = log_ticks_125(options.y_min, options.y_max);
  else
    y_axis.ticks(y_major, minor);
  for (const auto& [v, label] : x_major) {
    double px = x_axis.to_pixels(v);
    svg << "<line x1=\"" << px << "\" y1=\"" << bottom << "\" x2=\"" << px << "\" y2=\""
        << bottom + 5 << "\" stroke=\"#444444\"/>\n<text x=\"" << px << "\" y=\"" << bottom + 18
        << "\" text-anchor=\"middle\">" << escape_markup(label) << "</text>\n";
  }
  for (const auto& [v, label] : y_major) {
    double py = y_axis.to_pixels(v);
    svg << "<line x1=\"" << area.left - 5 << "\" y1=\"" << py << "\" x2=\"" << area.left
        << "\" y2=\"" << py << "\" stroke=\"#444444\"/>\n<line x1=\"" << area.left << "\" y1=\""
        << py << "\" x2=\"" << right << "\" y2=\"" << py
        << "\" stroke=\"white\" stroke-opacity=\"0.22\"/>\n<text x=\"" << area.left - 8 << "\" y=\""
        << py + 4 << "\" text-anchor=\"end\">" << escape_markup(label) << "</text>\n";
  }
  svg << "<text x=\"" << (area.left + right) / 2 << "\" y=\"" << height - 8
      << "\" text-anchor=\"middle\">" << escape_markup(options.x_label) << "</text>\n"
      << "<text transform=\"translate(14," << (area.top + bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape_markup(options.y_label) << "</text>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << (area.left + right) / 2 << "\" y=\"" << area.top - 10
        << "\" text-anchor=\"middle\" font-size=\"14\">" << escape_markup(options.title)
        << "</text>\n";
  if (options.colour_bar) {
    // A gradient through the map's stops, bottom (colour_min) to top (colour_max).
    const std::string gradient = options.id + "-colours";
    const auto& stops          = colour_map_stops(options.colours);
    svg << "<linearGradient id=\"" << escape_markup(gradient)
        << "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
    for (size_t i = 0; i < stops.size(); ++i) {
      char colour[8];
      std::snprintf(colour, sizeof colour, "#%02x%02x%02x", int(std::lround(stops[i][0] * 255)),
                    int(std::lround(stops[i][1] * 255)), int(std::lround(stops[i][2] * 255)));
      svg << "<stop offset=\"" << number(double(i) / double(stops.size() - 1), 4)
          << "\" stop-color=\"" << colour << "\"/>\n";
    }
    const double bar_left = right + 14;
    svg << "</linearGradient>\n<rect class=\"colour-bar\" x=\"" << bar_left << "\" y=\"" << area.top
        << "\" width=\"" << kColourBar << "\" height=\"" << area.height << "\" fill=\"url(#"
        << escape_markup(gradient) << ")\" stroke=\"#444444\"/>\n";
    Axis bar{options.colour_min, options.colour_max, false, bottom, area.top};
    std::vector<std::pair<double, std::string>> bar_ticks;
    bar.ticks(bar_ticks, minor);
    for (const auto& [v, label] : bar_ticks) {
      double py = bar.to_pixels(v);
      svg << "<line x1=\"" << bar_left + kColourBar << "\" y1=\"" << py << "\" x2=\""
          << bar_left + kColourBar + 4 << "\" y2=\"" << py << "\" stroke=\"#444444\"/>\n<text x=\""
          << bar_left + kColourBar + 7 << "\" y=\"" << py + 4 << "\">"
          << escape_markup((v > 0 && options.colour_min < 0 ? "+" : "") + label) << "</text>\n";
    }
    svg << "<text transform=\"translate(" << width - 8 << "," << (area.top + bottom) / 2
        << ") rotate(-90)\" text-anchor=\"middle\">" << escape_markup(options.colour_label)
        << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

void write_plot(const std::string& path, const std::vector<PlotSeries>& series,
                const PlotOptions& options, bool overwrite) {
  write_text_file(path, plot_svg(series, options), overwrite);
}

}  // namespace grafx
