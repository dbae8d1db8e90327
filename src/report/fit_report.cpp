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
       << detail::loss_table({{"before", summary.before}, {"after", summary.after}})
       << "<p>The mix-matching loss of the pruning paper: multi-resolution log-mel and "
          "spectral-convergence "
          "distances of the left, right, mid and side signals (0 is a perfect match).</p>\n"
       << "<h2>Loss curve</h2>\n"
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
