#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/draw.h>
#include <grafx/io/image.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/plot.h>
#include <grafx/render/parameters.h>
#include <grafx/report/fit_report.h>

#include "report/html.h"

#include <ATen/ATen.h>

#include <cmath>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace grafx {

using detail::base64;
using detail::escape;
using detail::fixed;
using detail::write_console_picture;

namespace {

/// The mix-matching loss of every step and its moving average (skipped steps leave gaps); the
/// regularisers are left out, as the delay's radii term dwarfs the rest at first.
std::vector<PlotSeries> loss_series(const std::vector<FitRecord>& history) {
  PlotSeries raw{"per step", {}, {}, false}, smooth{"25-step mean", {}, {}, false};
  std::vector<double> window;
  double sum = 0;
  for (const auto& r : history) {
    double value = r.skipped ? NAN : r.match_loss;
    raw.x.push_back(double(r.step));
    raw.y.push_back(value);
    if (std::isfinite(value)) {
      window.push_back(value);
      sum += value;
      if (window.size() > 25) sum -= window[window.size() - 26];
    }
    size_t n = std::min<size_t>(window.size(), 25);
    smooth.x.push_back(double(r.step));
    smooth.y.push_back(n ? sum / double(n) : NAN);
  }
  return {raw, smooth};
}

/// The initial console: what the initialisation from the data set (track gains, the EQ curves
/// as a picture) and every node's starting parameters; empty for a fit that started from given
/// parameters.
std::string initialisation_html(const Fitter& fitter, const std::vector<std::string>& names) {
  const DataInitialisation& done = fitter.initialisation();
  const bool gains = done.gains.gains.defined(), eq = done.eq.gains_db.defined();
  if (!gains && !eq && done.started.empty()) return "";
  auto name = [&](size_t k) {  // as given, not escaped
    return k < names.size() ? names[k] : "track " + std::to_string(k + 1);
  };
  std::ostringstream html;
  html << "<h2>Initial console</h2>\n<p>Starting values from the data, before the first step "
          "(docs/fitting.md, \"Initialisation from the data\")";
  if (!done.started.empty())
    html << "; " << done.started.size() << " dynamics nodes at typical settings";
  html << ".</p>\n";
  if (gains) {
    const ChannelGainFit& g = done.gains;
    html << "<p>Track gains by least squares (relative waveform error on the excerpt "
         << fixed(g.error_before, 3) << " → " << fixed(g.error_after, 3) << "):</p>\n"
         << "<table><tr><th>track</th><th>left dB</th><th>right dB</th></tr>";
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      html << "<tr><td>" << escape(name(k)) << "</td>";
      for (int64_t c = 0; c < 2; ++c)
        html << "<td>"
             << (g.nodes[k] < 0 ? std::string("(no gain node)")
                                : fixed(20 * std::log10(g.gains[int64_t(k)][c].item<double>()), 1))
             << "</td>";
      html << "</tr>";
    }
    html << "</table>\n";
  }
  if (eq) {
    const SpectralEqFit& e = done.eq;
    std::vector<PlotSeries> curves;
    std::vector<double> hz(e.band_hz.data_ptr<double>(),
                           e.band_hz.data_ptr<double>() + e.band_hz.numel());
    for (size_t k = 0; k < e.nodes.size(); ++k) {
      if (e.nodes[k] < 0) continue;
      at::Tensor db = e.gains_db[int64_t(k)].contiguous();
      curves.push_back(
          {name(k), hz,
           std::vector<double>(db.data_ptr<double>(), db.data_ptr<double>() + db.numel())});
    }
    PlotOptions plot;
    plot.title   = "Track EQs from spectral ratios (third-octave bands)";
    plot.x_label = "frequency (Hz)";
    plot.y_label = "gain (dB)";
    plot.log_x   = true;
    html << "<p>Track EQs from smoothed spectral ratios (relative band-power error "
         << fixed(e.error_before, 3) << " → " << fixed(e.error_after, 3) << "):</p>\n"
         << (curves.empty() ? "" : plot_svg(curves, plot)) << "\n";
  }
  html << "<details><summary>every node of the initial console in physical units</summary><pre>"
       << escape(
              describe_parameters(fitter.graph(), fitter.processors(), fitter.initial_parameters()))
       << "</pre></details>\n";
  return html.str();
}

}  // namespace

const std::vector<std::string>& fit_output_files() {
  static const std::vector<std::string> files = {
      "mix.wav",         "console.json", "console.svg", "parameters.safetensors",
      "parameters.json", "loss.csv",     "loss.svg",    "report.html"};
  return files;
}

void write_fit_outputs(const Fitter& fitter, const FitSummary& summary, const std::string& folder,
                       bool overwrite) {
  auto path = [&](const std::string& name) { return folder + "/" + name; };
  for (const auto& name : fit_output_files()) check_writable(path(name), overwrite);
  const Graph& graph           = fitter.graph();
  const SampleRate sample_rate = fitter.sample_rate();

  at::Tensor fitted = summary.fitted.defined() ? summary.fitted : fitter.render_mix();
  if (!all_finite(fitted))  // never written silently (the checkpoint is kept)
    throw FitError("grafx.fit.diverged",
                   "the fitted console renders non-finite samples over the whole song; no "
                   "outputs were written (try a lower learning rate or gradient clipping)");
  write_audio(path("mix.wav"), fitted, sample_rate, overwrite);
  save_graph(graph, path("console.json"), overwrite);
  write_console_picture(graph, path("console.svg"), overwrite);
  save_parameters(path("parameters.safetensors"), graph, fitter.parameters(), overwrite,
                  sample_rate);
  write_text_file(path("parameters.json"),
                  physical_parameters_json(graph, fitter.processors(), fitter.parameters()),
                  overwrite);

  std::ostringstream csv;
  csv << "step,loss,match_loss,regularization,gradient_norm,skipped\n" << std::setprecision(8);
  for (const auto& r : fitter.history())
    csv << r.step << "," << r.loss << "," << r.match_loss << "," << r.regularization << ","
        << r.gradient_norm << "," << (r.skipped ? 1 : 0) << "\n";
  write_text_file(path("loss.csv"), csv.str(), overwrite);
  PlotOptions plot;
  plot.title   = "Mix-matching loss of the training crops";
  plot.x_label = "step";
  plot.y_label = "loss";
  std::string loss_svg =
      fitter.history().empty() ? "" : plot_svg(loss_series(fitter.history()), plot);
  if (!loss_svg.empty()) write_text_file(path("loss.svg"), loss_svg, overwrite);

  // Spectrograms of the target and the fit on one level scale.
  double level = 0;
  SpectrogramOptions spectrogram;
  std::string target_png =
      encode_png(spectrogram_image(fitter.target(), sample_rate, spectrogram, &level));
  spectrogram.reference_db = level;
  std::string fitted_png   = encode_png(spectrogram_image(fitted, sample_rate, spectrogram));

  auto counts        = graph.count_per_type();
  int64_t processors = 0;
  for (TypeId t = NodeTypes::kMix + 1; t < graph.types().size(); ++t)
    processors += counts[size_t(t)];
  int64_t skipped = 0;
  for (const auto& r : fitter.history()) skipped += r.skipped;
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::string tracks;
  for (const auto& name : summary.track_names)
    tracks += (tracks.empty() ? "" : ", ") + escape(name);

  const std::string graph_svg = read_text_file(path("console.svg"));
  const std::string initial   = initialisation_html(fitter, summary.track_names);
  std::ostringstream html;
  html << detail::page_start(summary.title) << "<p>" << date << " · " << fitter.steps_done()
       << " steps in " << fixed(summary.seconds, 1) << " s ("
       << fixed(summary.seconds > 0 ? double(fitter.steps_done()) / summary.seconds : 0, 2)
       << " steps/s" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "") << ")</p>\n"
       << "<h2>Summary</h2>\n<table class=\"facts\">"
       << "<tr><td>tracks</td><td>" << summary.track_names.size() << " (" << tracks << ")</td></tr>"
       << "<tr><td>audio</td><td>" << fixed(double(fitted.size(1)) / double(sample_rate), 2)
       << " s at " << sample_rate << " Hz</td></tr>"
       << "<tr><td>console</td><td>" << graph.n_nodes() << " nodes, " << processors
       << " processors</td></tr>"
       << "<tr><td>optimiser</td><td>AdamW, learning rate " << fitter.options().optimizer.lr
       << ", crops of " << fixed(fitter.options().crop_seconds, 2) << " s (first "
       << fixed(fitter.options().skip_seconds, 2) << " s not in the loss)</td></tr></table>\n"
       << "<h2>Whole-song loss</h2>\n"
       << detail::loss_table({{"initial console", summary.before}, {"fitted", summary.after}})
       << "<p>The mix-matching loss of the pruning paper: multi-resolution log-mel and "
          "spectral-convergence "
          "distances of the left, right, mid and side signals (0 is a perfect match).</p>\n"
       << initial << "<h2>Loss curve</h2>\n"
       << loss_svg << "\n"
       << "<h2>Spectrograms</h2>\n<div class=\"pictures\"><figure><img alt=\"target\" "
          "src=\"data:image/png;base64,"
       << base64(target_png) << "\"><figcaption>Target mix (log frequency, "
       << fixed(spectrogram.range_db, 0)
       << " dB range)</figcaption></figure><figure><img alt=\"fitted\" src=\"data:image/png;base64,"
       << base64(fitted_png)
       << "\"><figcaption>Fitted mix, on the same scale</figcaption></figure></div>\n"
       << "<h2>Console</h2>\n<div class=\"graph\">" << detail::inline_svg(graph_svg)
       << "</div>\n<h2>Parameters</h2>\n<details><summary>every node in physical "
          "units</summary><pre>"
       << escape(describe_parameters(graph, fitter.processors(), fitter.parameters()))
       << "</pre></details>\n"
       << "<p>Files: mix.wav, console.json, parameters.safetensors, parameters.json, "
          "loss.csv.</p>\n</body></html>\n";
  write_text_file(path("report.html"), html.str(), overwrite);
}

}  // namespace grafx
