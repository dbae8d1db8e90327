#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/draw.h>
#include <grafx/io/image.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/plot.h>
#include <grafx/io/processor_response.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/processors/registry.h>
#include <grafx/render/as_heard.h>
#include <grafx/render/parameters.h>
#include <grafx/report/fit_report.h>

#include "report/html.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <map>
#include <sstream>

namespace grafx {

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

/// The initial console: every part of the initialisation from the data as `grafx fit` prints
/// it (kept, undone or not run), what the kept parts set (track gains, the EQ curves as a
/// picture) and every node's starting parameters; empty for a fit that started from given
/// parameters.
std::string initialisation_html(const Fitter& fitter, const std::vector<std::string>& names,
                                const std::string& settings) {
  const DataInitialisation& done = fitter.initialisation();
  if (done.steps.empty()) return "";
  const bool gains = done.gains.gains.defined(), eq = done.eq.gains_db.defined();
  auto name = [&](size_t k) {  // as given, not escaped
    return k < names.size() ? names[k] : "track " + std::to_string(k + 1);
  };
  std::ostringstream html;
  html << "<h2>Initial console</h2>\n<p>Starting values from the data, before the first step "
          "(docs/fitting.md, \"Initialisation from the data\"):</p>\n<ul>";
  for (const InitialisationStep& step : done.steps) {
    std::string detail = step.detail;  // as printed, with the page's arrows
    for (size_t at = detail.find(" -> "); at != std::string::npos; at = detail.find(" -> ", at))
      detail.replace(at, 4, " → ");
    html << "<li>" << escape_markup(step.name) << ": " << escape_markup(detail);
    if (!std::isnan(step.loss_after))
      html << "; whole-song loss " << fixed_decimals(step.loss_before, 3) << " → "
           << fixed_decimals(step.loss_after, 3) << (step.kept ? "" : ", higher: <b>undone</b>");
    html << "</li>";
  }
  html << "</ul>\n";
  if (gains) {
    const ChannelGainFit& g = done.gains;
    html << "<p>What the least-squares gains moved each track's level heard by:</p>\n"
         << "<table><tr><th>track</th><th>left dB</th><th>right dB</th></tr>";
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      html << "<tr><td>" << escape_markup(name(k)) << "</td>";
      for (int64_t c = 0; c < 2; ++c)
        html << "<td>"
             << (g.nodes[k] < 0
                     ? std::string("(no gain node)")
                     : fixed_decimals(20 * std::log10(g.heard[int64_t(k)][c].item<double>()), 1))
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
    plot.id      = "initial-eq";
    html << (curves.empty() ? "" : plot_svg(curves, plot)) << "\n";
  }
  html << "<details><summary>every node of the initial console in physical units</summary>"
       << settings << "</details>\n";
  return html.str();
}

/// A setting's value for a table: whole numbers from 100 on, one decimal from 1, two below, two
/// significant digits below 0.01; `sign` writes "+" before positive values (errors).
std::string value_text(double v, bool sign = false) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
  const double a = std::abs(v);
  char text[64];
  if (a >= 100)
    std::snprintf(text, sizeof text, "%.0f", v);
  else if (a >= 1)
    std::snprintf(text, sizeof text, "%.1f", v);
  else if (a >= 0.01 || a == 0)
    std::snprintf(text, sizeof text, "%.2f", v);
  else
    std::snprintf(text, sizeof text, "%.2g", v);
  std::string out = text;
  if (out.find_first_not_of("-0.") == std::string::npos) out = "0";  // no "-0.0"
  return (sign && v > 0 && out != "0" ? "+" : "") + out;
}

/// Vectors up to this many values are shown in full, longer ones summarised.
constexpr int64_t kShownInFull = 4;

/// A node's physical value of a spec: all of it ("-3.1 / -2.9"), or for long vectors its median
/// and range.
std::string physical_text(const at::Tensor& value) {
  at::Tensor v = value.flatten();
  if (v.numel() <= kShownInFull) {
    std::string text;
    for (int64_t i = 0; i < v.numel(); ++i)
      text += (i ? " / " : "") + value_text(v[i].item<double>());
    return text;
  }
  return "<span title=\"" + std::to_string(v.numel()) + " values\">median " +
         value_text(v.median().item<double>()) + " (" + value_text(v.min().item<double>()) +
         " to " + value_text(v.max().item<double>()) + ")</span>";
}

/// fitted − reference: per value for short vectors, the root mean square for long ones.
std::string error_text(const at::Tensor& fitted, const at::Tensor& reference) {
  at::Tensor d = (fitted - reference).flatten();
  if (d.numel() <= kShownInFull) {
    std::string text;
    for (int64_t i = 0; i < d.numel(); ++i)
      text += (i ? " / " : "") + value_text(d[i].item<double>(), true);
    return text;
  }
  return "RMS " + value_text(d.pow(2).mean().sqrt().item<double>());
}

/// Physical values of parameter sets, per node, each type's computed once.
class PhysicalValues {
 public:
  explicit PhysicalValues(const Parameters& parameters) : parameters_(parameters) {}

  /// Row `row` of the type's values of `spec` (float64, the spec's per-node shape); undefined
  /// when the set has no such parameter. Per-batch-item parameters: the first item's.
  at::Tensor of(const std::string& type, const ParameterSpec& spec, int64_t row) {
    auto key = std::make_pair(type, spec.name);
    auto it  = cache_.find(key);
    if (it == cache_.end()) {
      at::Tensor all;
      auto named = parameters_.find(type);
      const at::Tensor* given =
          named != parameters_.end() ? named->second.find(spec.name) : nullptr;
      if (given) {
        at::Tensor raw = given->detach();
        all            = spec.to_physical(raw).to(at::kDouble);
        if (raw.dim() == int64_t(spec.shape.size()) + 2) all = all[0];
      }
      it = cache_.emplace(key, all).first;
    }
    return it->second.defined() ? it->second[row] : at::Tensor();
  }

  /// The raw values of one node (first dimension 1, float64): its own parameters, and its wet
  /// amount where it carries one and it is known.
  TypeParameters node(const std::string& type, const Processor& processor, int64_t row,
                      bool dry_wet) const {
    TypeParameters raw;
    const TypeParameters& given = parameters_.at(type);
    auto row_of                 = [&](at::Tensor p, size_t rank) {
      if (p.dim() == int64_t(rank) + 2) p = p[0];  // per batch item: the first
      return p.detach().narrow(0, row, 1).to(at::kDouble);
    };
    for (const auto& spec : processor.parameter_specs())
      raw.own[spec.name] = row_of(given.own.at(spec.name), spec.shape.size());
    if (dry_wet && given.wet.defined()) raw.wet = row_of(given.wet, 1);
    return raw;
  }

  bool has(const std::string& type) const { return parameters_.count(type) > 0; }

 private:
  const Parameters& parameters_;
  std::map<std::pair<std::string, std::string>, at::Tensor> cache_;
};

/// Whether a type's response picture is shown per track: filters' curves. Other settings read
/// as well as numbers (a compressor's static curve is its threshold, ratio and knee), and their
/// pictures take long to measure (2 s of 81 levels through each dynamics node).
bool is_pictured(ResponsePicture picture) {
  return picture == ResponsePicture::kMagnitude ||
         picture == ResponsePicture::kMagnitudeLeftRight ||
         picture == ResponsePicture::kMagnitudeMidSide || picture == ResponsePicture::kBands;
}

/// The strips of a console: its processor nodes grouped by the part of their names before the
/// first "." (a console's tracks, subgroups and buses), the tracks first in track order, then
/// the others in the order of their first node; unnamed nodes last.
struct Strip {
  std::string name;
  std::vector<NodeId> nodes;
};

std::vector<Strip> strips_of(const Graph& graph, const std::vector<std::string>& track_names) {
  std::vector<Strip> strips;
  for (const auto& name : track_names) strips.push_back({name, {}});
  Strip unnamed{"", {}};
  for (NodeId id : graph.nodes()) {
    if (is_utility_type(graph.node(id).type)) continue;
    const std::string& name = graph.node(id).name;
    if (name.empty()) {
      unnamed.nodes.push_back(id);
      continue;
    }
    std::string strip = name.substr(0, name.find('.'));
    auto it =
        std::find_if(strips.begin(), strips.end(), [&](const Strip& s) { return s.name == strip; });
    if (it == strips.end()) it = strips.insert(strips.end(), {strip, {}});
    it->nodes.push_back(id);
  }
  if (!unnamed.nodes.empty()) strips.push_back(unnamed);
  strips.erase(
      std::remove_if(strips.begin(), strips.end(), [](const Strip& s) { return s.nodes.empty(); }),
      strips.end());
  return strips;
}

/// Pages stay readable (and quick to write) for large graphs: the tables and curves of at most
/// these many nodes are shown; parameters.json holds all.
constexpr int64_t kMaxNodesShown = 400, kMaxCurvesShown = 64;

/// Tables of nodes' settings in physical units (the specs' physical names and units): a column
/// per parameter set (fitted, reference) and, with two, the error of the first against the
/// second.
class SettingsTables {
 public:
  SettingsTables(const Graph& graph, const Processors& processors)
      : graph_(graph), processors_(processors) {}

  /// The node's row among its type's nodes (in its type's parameters).
  int64_t row_of(NodeId id) {
    const std::string& type = graph_.type_name(id);
    auto it                 = ids_of_type_.find(type);
    if (it == ids_of_type_.end()) it = ids_of_type_.emplace(type, graph_.nodes_of_type(type)).first;
    return int64_t(std::lower_bound(it->second.begin(), it->second.end(), id) - it->second.begin());
  }

  std::string table(const std::vector<NodeId>& nodes,
                    const std::vector<std::pair<std::string, PhysicalValues*>>& columns,
                    const std::string& css_class = "settings") {
    const bool error = columns.size() == 2;
    std::ostringstream table;
    table << "<table class=\"" << css_class << "\"><tr><th>node</th><th>setting</th><th>unit</th>";
    for (const auto& column : columns) table << "<th>" << escape_markup(column.first) << "</th>";
    table << (error ? "<th>error</th>" : "") << "</tr>\n";
    for (NodeId id : nodes) {
      const Node& node     = graph_.node(id);
      const NodeType& type = graph_.types()[node.type];
      const int64_t row    = row_of(id);
      std::vector<ParameterSpec> specs =
          graph_parameter_specs(graph_, type.name, *processors_.at(type.name));
      specs.erase(
          std::remove_if(specs.begin(), specs.end(),
                         [&](const ParameterSpec& spec) { return !node_has(node, spec.name); }),
          specs.end());
      const std::string node_cell =
          "<td class=\"node\" rowspan=\"" + std::to_string(std::max<size_t>(1, specs.size())) +
          "\" title=\"" + escape_markup(node.name.empty() ? graph_.describe(id) : node.name) +
          "\">" + detail::letter_box(type) + escape_markup(type.name) +
          (node.bypassed ? " <em>(bypassed)</em>" : "") + "</td>";
      if (specs.empty())
        table << "<tr>" << node_cell << "<td class=\"setting\" colspan=\""
              << 2 + columns.size() + (error ? 1 : 0) << "\">(no settings)</td></tr>\n";
      for (size_t i = 0; i < specs.size(); ++i) {
        const ParameterSpec& spec = specs[i];
        table << "<tr>" << (i == 0 ? node_cell : "") << "<td class=\"setting\" title=\""
              << escape_markup(spec.description) << "\">" << escape_markup(spec.physical_name)
              << "</td><td>" << escape_markup(spec.unit) << "</td>";
        std::vector<at::Tensor> values;
        for (const auto& column : columns) {
          values.push_back(column.second->of(type.name, spec, row));
          table << "<td>" << (values.back().defined() ? physical_text(values.back()) : "—")
                << "</td>";
        }
        if (error)
          table << "<td class=\"error\">"
                << (values[0].defined() && values[1].defined() ? error_text(values[0], values[1])
                                                               : "—")
                << "</td>";
        table << "</tr>\n";
      }
    }
    table << "</table>";
    return table.str();
  }

 private:
  const Graph& graph_;
  const Processors& processors_;
  std::map<std::string, std::vector<NodeId>> ids_of_type_;
};

/// Per track: the filters' curves as heard and a table of every node's settings, beside the
/// reference's when there is one.
std::string tracks_html(const Fitter& fitter, const FitSummary& summary,
                        const std::string& folder) {
  const Graph& graph           = fitter.graph();
  const SampleRate sample_rate = fitter.sample_rate();
  const bool reference         = !summary.reference.empty();
  PhysicalValues fitted(fitter.parameters()), known(summary.reference);
  SettingsTables tables(graph, fitter.processors());
  std::vector<std::pair<std::string, PhysicalValues*>> columns = {{"fitted", &fitted}};
  if (reference) columns.push_back({summary.reference_label, &known});
  const std::string ref_label = escape_markup(summary.reference_label);
  std::ostringstream html;
  html << "<p class=\"note\">Each strip of the console: its filters' curves as heard (each "
          "filter's response at the node's wet amount";
  if (reference) html << "; " << ref_label << " dashed";
  html << ") and every setting in physical units; vectors of more than " << kShownInFull
       << " values are summarised by their median and range"
       << (reference ? ", and their error by its root mean square (RMS)" : "")
       << ". Hover over a setting for what it does.</p>\n";
  int64_t nodes_shown = 0, curves_shown = 0, n_nodes = 0;
  for (const Strip& strip : strips_of(graph, summary.track_names)) {
    n_nodes += int64_t(strip.nodes.size());
    if (nodes_shown >= kMaxNodesShown) continue;
    html << "<h3>" << (strip.name.empty() ? "other nodes" : escape_markup(strip.name)) << "</h3>\n";
    auto track = std::find(summary.track_names.begin(), summary.track_names.end(), strip.name);
    size_t k   = size_t(track - summary.track_names.begin());
    if (track != summary.track_names.end() && k < summary.track_files.size())
      html << "<div class=\"players\">"
           << detail::audio_player("the track as recorded",
                                   detail::relative_link(folder, summary.track_files[k]))
           << "</div>\n";
    std::ostringstream curves;
    std::vector<NodeId> shown;
    for (NodeId id : strip.nodes) {
      if (nodes_shown++ >= kMaxNodesShown) break;
      shown.push_back(id);
      const Node& node                      = graph.node(id);
      const NodeType& type                  = graph.types()[node.type];
      const Processor& processor            = *fitter.processors().at(type.name);
      const ProcessorDescriptor* descriptor = find_processor(type.processor_name());
      const int64_t row                     = tables.row_of(id);
      // The curves as heard, beside the reference's.
      if (node.bypassed || !descriptor || !is_pictured(descriptor->response) ||
          curves_shown >= kMaxCurvesShown)
        continue;
      ++curves_shown;
      const TypeParameters raw = fitted.node(type.name, processor, row, node.dry_wet);
      const double wet =
          raw.wet.defined() ? dry_wet_spec().to_physical(raw.wet).flatten()[0].item<double>() : 1.0;
      Plot plot = processor_response(*as_heard(processor, node, raw.wet), raw.own, sample_rate);
      if (reference && known.has(type.name)) {
        const TypeParameters truth_raw = known.node(type.name, processor, row, node.dry_wet);
        Plot truth = processor_response(*as_heard(processor, node, truth_raw.wet), truth_raw.own,
                                        sample_rate);
        // Series alike in both (a unity line) are drawn once; the others are told apart.
        auto same = [](const PlotSeries& a, const PlotSeries& b) {
          return a.label == b.label && a.x == b.x && a.y == b.y;
        };
        auto label = [](const std::string& what, const std::string& whose) {
          return what.empty() ? whose : what + ", " + whose;
        };
        // Fitted and reference series in the palette's first colours, shared ones in grey.
        std::vector<PlotSeries> series, shared;
        for (PlotSeries s : plot.series) {
          if (std::any_of(truth.series.begin(), truth.series.end(),
                          [&](const PlotSeries& t) { return same(s, t); })) {
            s.colour = "#999999";
            shared.push_back(std::move(s));
            continue;
          }
          s.label = label(s.label, "fitted");
          series.push_back(std::move(s));
        }
        for (PlotSeries t : truth.series) {
          if (std::any_of(plot.series.begin(), plot.series.end(),
                          [&](const PlotSeries& s) { return same(s, t); }))
            continue;
          t.label  = label(t.label, summary.reference_label);
          t.dashed = true;
          series.push_back(std::move(t));
        }
        series.insert(series.end(), shared.begin(), shared.end());
        plot.series        = std::move(series);
        plot.options.y_min = std::min(plot.options.y_min, truth.options.y_min);
        plot.options.y_max = std::max(plot.options.y_max, truth.options.y_max);
      }
      plot.options.title =
          (node.name.empty() ? type.name : node.name) +
          (node.dry_wet ? " as heard (wet " + value_text(wet) + ")" : std::string());
      plot.options.width  = 400;
      plot.options.height = 250;
      plot.options.id     = "node" + std::to_string(id);
      curves << plot_svg(plot.series, plot.options) << "\n";
    }
    const std::string pictures = curves.str();
    html << "<div class=\"strip\">"
         << (pictures.empty() ? "" : "<div class=\"curves\">" + pictures + "</div>")
         << tables.table(shown, columns) << "</div>\n";
  }
  if (n_nodes > kMaxNodesShown)
    html << "<p class=\"note\">The first " << kMaxNodesShown << " of " << n_nodes
         << " processor nodes are shown; parameters.json holds every node's settings.</p>\n";
  return html.str();
}

/// The initial console's settings, a table per strip.
std::string initial_settings_html(const Fitter& fitter, const std::vector<std::string>& names) {
  SettingsTables tables(fitter.graph(), fitter.processors());
  PhysicalValues initial(fitter.initial_parameters());
  std::ostringstream html;
  int64_t nodes_shown = 0;
  for (const Strip& strip : strips_of(fitter.graph(), names)) {
    if (nodes_shown >= kMaxNodesShown) break;
    std::vector<NodeId> shown;
    for (NodeId id : strip.nodes)
      if (nodes_shown++ < kMaxNodesShown) shown.push_back(id);
    html << "<h3>" << (strip.name.empty() ? "other nodes" : escape_markup(strip.name)) << "</h3>\n"
         << tables.table(shown, {{"initial", &initial}}, "settings initial") << "\n";
  }
  return html.str();
}

/// The letters of the console's picture: its types' letters and colours, with the summaries of
/// their registry descriptors.
/// One picture per automated parameter of each node: its fitted curve in physical units (one
/// line per element, e.g. left and right) over the target mix's level, in dBFS per 100 ms (on
/// the same axis for curves in dB, else scaled to the curve's range). Empty without automation.
std::string automation_html(const Graph& graph, const Processors& processors,
                            const Parameters& parameters, const at::Tensor& mix,
                            SampleRate sample_rate) {
  if (!graph.has_automation()) return "";
  const int64_t hop = std::max<int64_t>(1, sample_rate / 10);
  PlotSeries level{"mix level (dBFS)", {}, {}, false, "#bbbbbb"};
  for (int64_t start = 0; start + hop <= mix.size(-1); start += hop) {
    const double rms =
        mix.narrow(-1, start, hop).to(at::kDouble).pow(2).mean().sqrt().item<double>();
    level.x.push_back(double(start + hop / 2) / double(sample_rate));
    level.y.push_back(20 * std::log10(std::max(rms, 1e-6)));
  }
  const Automation& clock = graph.automation();
  std::vector<double> times;
  for (int64_t i = 0; i < clock.points; ++i) times.push_back(double(i) / clock.rate_hz);
  std::ostringstream html;
  html << "<h2 id=\"automation\">Automation</h2>\n<p>Fitted curves, " << clock.points
       << " points at " << clock.rate_hz << " per second, linear between them.</p>\n";
  int64_t picture = 0;
  for (NodeId id : graph.nodes()) {
    const Node& node = graph.node(id);
    if (node.automated.empty()) continue;
    const std::string& type = graph.type_name(id);
    const int64_t row       = row_in_type(graph, id);
    for (const auto& spec : graph_parameter_specs(graph, type, *processors.at(type))) {
      if (automated_parameter(spec.name).empty() || !node_has(node, spec.name)) continue;
      at::Tensor curve  = parameters.at(type).at(spec.name).narrow(0, row, 1).detach();
      at::Tensor values = spec.to_physical(curve).to(at::kDouble).reshape({clock.points, -1});
      std::vector<PlotSeries> series;
      const bool decibels = spec.unit == "dB";
      const double lo = values.min().item<double>(), hi = values.max().item<double>();
      PlotSeries background = level;
      if (!decibels) {  // the level's 60 dB scaled onto the curve's range
        background.label = "mix level (scaled)";
        for (double& y : background.y)
          y = lo + (hi > lo ? hi - lo : 1) * (std::max(y, -60.0) + 60) / 60;
      }
      series.push_back(background);
      const std::string name = automated_parameter(spec.physical_name);
      for (int64_t e = 0; e < values.size(1); ++e) {
        PlotSeries s{
            values.size(1) == 1 ? name : name + " [" + std::to_string(e) + "]", times, {}, false};
        for (int64_t i = 0; i < clock.points; ++i) s.y.push_back(values[i][e].item<double>());
        series.push_back(s);
      }
      PlotOptions plot;
      plot.title   = graph.describe(id) + ": " + name;
      plot.x_label = "time (s)";
      plot.y_label = name + (spec.unit.empty() ? "" : " (" + spec.unit + ")");
      plot.height  = 300;
      plot.id      = "automation" + std::to_string(picture++);
      html << "<figure>" << plot_svg(series, plot) << "</figure>\n";
    }
  }
  return html.str();
}

std::string letter_legend(const Graph& graph) {
  const std::vector<int64_t> counts = graph.count_per_type();
  std::ostringstream html;
  html << "<ul class=\"legend\">";
  for (TypeId t = 0; t < graph.types().size(); ++t) {
    if (counts[size_t(t)] == 0) continue;
    const NodeType& type = graph.types()[t];
    std::string what;
    if (t == NodeTypes::kIn)
      what = "a track's input";
    else if (t == NodeTypes::kOut)
      what = "the console's output";
    else if (t == NodeTypes::kMix)
      what = "a sum of signals (subgroups, buses, the master)";
    else if (const ProcessorDescriptor* d = find_processor(type.processor_name()))
      what = d->summary + (type.processor_name() != type.name
                               ? " (" + type.processor_name() + " with options)"
                               : std::string());
    html << "<li>" << detail::letter_box(type) << "<b>" << escape_markup(type.name) << "</b> ("
         << counts[size_t(t)] << "): " << escape_markup(what) << "</li>";
  }
  html << "</ul>\n";
  return html.str();
}

/// A spectrogram-like picture of H×W values with time and frequency axes and a colour bar.
std::string spectrogram_svg(const at::Tensor& values, double lo, double hi, ColourMap colours,
                            const RasterPlotOptions& options) {
  RasterPlotOptions o = options;
  o.colours           = colours;
  o.colour_min        = lo;
  o.colour_max        = hi;
  at::Tensor rgb      = colourise(values, lo, hi, colours, 256);  // a palette PNG
  return raster_plot_svg(encode_png(rgb), rgb.size(1), rgb.size(0), o);
}

/// Where the fitted mix's whole-song loss lives: its exact parts by octave band and by second
/// (Fitter::evaluate_parts), each split into the left/right, mid and side terms' shares,
/// weighted as the loss weighs them (`loss`).
std::string loss_breakdown_html(const MixLossBreakdown& breakdown, const MixLossOptions& loss) {
  auto picture = [&](const MixLossParts& parts, bool frequency, const std::string& id) {
    std::vector<double> x;  // each part's middle (geometric for bands)
    for (size_t k = 0; k < parts.labels.size(); ++k)
      x.push_back(frequency ? std::sqrt(std::max(parts.from[k], 20.0) * parts.to[k])
                            : (parts.from[k] + parts.to[k]) / 2);
    auto series = [&](const std::string& label, const at::Tensor& values) {
      const at::Tensor v = values.to(at::kDouble).contiguous();
      return PlotSeries{
          label, x, std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel())};
    };
    const at::Tensor& c = parts.channels;  // d_L, d_R, d_M, d_S parts, weighted as the loss
    PlotOptions options;
    options.title   = frequency ? "Loss by octave band" : "Loss by second";
    options.x_label = frequency ? "band (Hz)" : "second of the song (s)";
    options.y_label = "part of the loss";
    options.log_x   = frequency;
    options.y_min   = 0;
    options.y_max   = 1.4 * std::max(parts.loss.max().item<double>(), 1e-6);  // room for the legend
    options.width   = 480;
    options.height  = 300;
    options.id      = id;
    return plot_svg({series("all", parts.loss),
                     series("left/right", loss.lr_weight * (c.select(1, 0) + c.select(1, 1)) / 2),
                     series("mid", loss.mid_weight * c.select(1, 2)),
                     series("side", loss.side_weight * c.select(1, 3))},
                    options);
  };
  return "<div class=\"pictures\">" + picture(breakdown.bands, true, "loss_bands") +
         picture(breakdown.seconds, false, "loss_seconds") +
         "</div>\n<p>The whole-song loss of the fitted mix cut into exact parts (they sum to it): "
         "by octave band, by the centre of each mel band; by second, by the centre of each "
         "frame. Each part splits into its left/right, mid and side terms. Where the parts "
         "stand high, the console matched the target least. <code>grafx loss mix.wav TARGET "
         "--breakdown</code> prints them.</p>\n";
}

/// The loss with each track's own processing replaced by its best static gain, beside the
/// fitted mix's, the tracks that lose most first.
std::string track_losses_html(const std::vector<TrackLoss>& by_track, double fitted,
                              const std::vector<std::string>& names) {
  if (by_track.empty()) return "";
  std::vector<const TrackLoss*> order;
  for (const TrackLoss& t : by_track) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const TrackLoss* a, const TrackLoss* b) { return a->loss > b->loss; });
  std::ostringstream html;
  html << "<table class=\"settings\" id=\"by_track\"><tr><th>track</th><th>its own "
          "nodes</th><th>best static "
          "gain (dB)</th><th>loss with that gain</th><th>change</th></tr>\n";
  for (const TrackLoss* t : order) {
    const size_t k = size_t(t->track);
    std::string gains;
    for (size_t c = 0; c < t->gain.size(); ++c)
      gains += (c ? " / " : "") + (t->gain[c] == 0
                                       ? std::string("silent")
                                       : fixed_decimals(20 * std::log10(std::abs(t->gain[c])), 1) +
                                             (t->gain[c] < 0 ? " (inverted)" : ""));
    const double change = fitted > 0 ? 100 * (t->loss - fitted) / fitted : 0;
    html << "<tr><td>"
         << escape_markup(k < names.size() ? names[k] : "track " + std::to_string(k + 1))
         << "</td><td>" << t->nodes.size() << "</td><td>" << gains << "</td><td>"
         << fixed_decimals(t->loss, 4) << "</td><td>" << (change >= 0 ? "+" : "")
         << fixed_decimals(change, 1) << " %</td></tr>\n";
  }
  html << "</table>\n<p>By track: each track's own processing (the nodes only it feeds, its "
          "strip but not the buses it joins) replaced by the static gain per channel that best "
          "matches what it sends on, and the whole-song loss of that mix against the fitted "
          "mix's "
       << fixed_decimals(fitted, 4)
       << ". Where the loss rises most, the track's processing does most; where it barely moves, "
          "the console treats the track as little more than a fader; where it falls, a plain "
          "gain would match the target better than the fitted processing.</p>\n";
  return html.str();
}

/// The target's and the fitted mix's spectrograms on one level scale, and their difference.
std::string spectrograms_html(const at::Tensor& target, const at::Tensor& fitted,
                              SampleRate sample_rate) {
  RasterPlotOptions plot;
  plot.x_label          = "time (s)";
  plot.y_label          = "frequency (Hz)";
  plot.log_y            = true;
  plot.width            = 1000;
  plot.height           = 280;
  plot.title            = "x";  // the area as with a title
  const RasterArea area = raster_plot_area(plot);
  SpectrogramOptions spectrogram;
  spectrogram.width  = int64_t(std::lround(area.width));
  spectrogram.height = int64_t(std::lround(area.height));
  plot.x_min         = 0;
  plot.x_max         = double(std::max(target.size(-1), fitted.size(-1))) / double(sample_rate);
  plot.y_min         = spectrogram.min_hz;
  plot.y_max         = double(sample_rate) / 2;
  // Levels relative to the target's loudest point, `range_db` below it the floor.
  at::Tensor target_db = spectrogram_db(target, sample_rate, spectrogram);
  at::Tensor fitted_db = spectrogram_db(fitted, sample_rate, spectrogram);
  const double peak = target_db.max().item<double>(), range = spectrogram.range_db;
  target_db = target_db - peak;
  fitted_db = fitted_db - peak;
  // Fitted − target where either is above the floor; a symmetric scale that holds 99% of it,
  // rounded up to a step an engineer reads at a glance.
  at::Tensor difference = fitted_db.clamp_min(-range) - target_db.clamp_min(-range);
  double scale          = 40;
  if (difference.size(1) == target_db.size(1)) {
    double q = at::quantile(difference.abs().flatten(), 0.99).item<double>();
    for (double step : {3.0, 6.0, 10.0, 12.0, 20.0, 30.0, 40.0})
      if (q <= step) {
        scale = step;
        break;
      }
  }
  std::ostringstream html;
  plot.colour_label = "level (dB re the target's peak)";
  plot.title        = "Target mix";
  plot.id           = "spectrogram-target";
  html << "<figure>" << spectrogram_svg(target_db, -range, 0, ColourMap::kMagma, plot)
       << "</figure>\n";
  plot.title = "Fitted mix (mix.wav), on the same scale";
  plot.id    = "spectrogram-fitted";
  html << "<figure>" << spectrogram_svg(fitted_db, -range, 0, ColourMap::kMagma, plot)
       << "</figure>\n";
  if (difference.size(1) == target_db.size(1)) {
    plot.title        = "Difference: fitted − target";
    plot.colour_label = "fitted − target (dB)";
    plot.id           = "spectrogram-difference";
    html << "<figure>" << spectrogram_svg(difference, -scale, scale, ColourMap::kDiverging, plot)
         << "<figcaption>Red: the fitted mix is louder than the target there; blue: quieter; "
            "white: the same (levels below "
         << fixed_decimals(-range, 0) << " dB count as " << fixed_decimals(-range, 0)
         << " dB). Log-frequency rows, " << spectrogram.n_fft
         << "-point windows averaged into columns.</figcaption></figure>\n";
  }
  return html.str();
}

/// What each output file holds, in fit_output_files' order.
const std::vector<std::pair<std::string, std::string>>& described_outputs() {
  static const std::vector<std::pair<std::string, std::string>> files = {
      {"mix.wav", "the fitted mix of the whole song (float WAV)"},
      {"console.json", "the console (grafx render, grafx draw)"},
      {"console.svg", "the console's picture"},
      {"parameters.safetensors", "the fitted raw parameters"},
      {"parameters.json", "every node's settings in physical units"},
      {"loss.csv", "the loss of every step"},
      {"loss.svg", "the loss curve"},
      {"summary.json", "the whole-song losses, steps and time, for programs"},
      {"report.html", "this page"}};
  return files;
}

}  // namespace

const std::vector<std::string>& fit_output_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> names;
    for (const auto& [name, what] : described_outputs()) names.push_back(name);
    return names;
  }();
  return files;
}

void write_fit_outputs(const Fitter& fitter, const FitSummary& summary, const std::string& folder,
                       bool overwrite) {
  auto path = [&](const std::string& name) { return folder + "/" + name; };
  for (const auto& name : fit_output_files()) check_writable(path(name), overwrite);
  const Graph graph            = fitter.rendered_graph();
  const Parameters parameters  = fitter.rendered_parameters();
  const SampleRate sample_rate = fitter.sample_rate();
  if (!summary.reference.empty()) {  // before anything is written
    at::ScalarType dtype = at::kFloat;
    for (const auto& [type, values] : summary.reference)
      for (const auto& [name, tensor] : values.named()) dtype = tensor.scalar_type();
    check_parameters(graph, fitter.processors(),
                     with_curves(graph, fitter.processors(), summary.reference), 0, dtype);
  }

  at::Tensor fitted = summary.fitted.defined() ? summary.fitted : fitter.render_mix();
  if (!all_finite(fitted))  // never written silently (the checkpoint is kept)
    throw FitError("grafx.fit.diverged",
                   "the fitted console renders non-finite samples over the whole song; no "
                   "outputs were written (try a lower learning rate or gradient clipping)");
  write_audio(path("mix.wav"), fitted, sample_rate, overwrite);
  save_graph(graph, path("console.json"), overwrite);
  write_console_picture(graph, path("console.svg"), overwrite);
  save_parameters(path("parameters.safetensors"), graph, parameters, overwrite, sample_rate);
  write_text_file(path("parameters.json"),
                  physical_parameters_json(graph, fitter.processors(), parameters), overwrite);

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
  plot.id      = "loss";
  std::string loss_svg =
      fitter.history().empty() ? "" : plot_svg(loss_series(fitter.history()), plot);
  if (!loss_svg.empty()) write_text_file(path("loss.svg"), loss_svg, overwrite);

  const std::string spectrograms = spectrograms_html(fitter.target(), fitted, sample_rate);

  auto counts        = graph.count_per_type();
  int64_t processors = 0;
  for (TypeId t = NodeTypes::kMix + 1; t < graph.types().size(); ++t)
    processors += counts[size_t(t)];
  int64_t skipped = 0;
  for (const auto& r : fitter.history()) skipped += r.skipped;
  std::ostringstream facts;
  facts << std::setprecision(10) << "{\"format\": \"grafx.fit_summary\", \"version\": 1"
        << ", \"sample_rate\": " << sample_rate
        << ", \"audio_seconds\": " << double(fitted.size(1)) / double(sample_rate)
        << ", \"tracks\": " << fitter.tracks().size(0) << ", \"steps\": " << fitter.steps_done()
        << ", \"skipped_steps\": " << skipped << ", \"fit_seconds\": " << summary.seconds
        << ", \"processors\": " << processors
        << ", \"loss_before\": " << detail::loss_json(summary.before)
        << ", \"loss_after\": " << detail::loss_json(summary.after.terms);
  if (!summary.by_track.empty()) {  // what each track's own processing does
    nlohmann::json by_track = nlohmann::json::array();
    for (const TrackLoss& t : summary.by_track)
      by_track.push_back({{"track", t.track},
                          {"name", size_t(t.track) < summary.track_names.size()
                                       ? summary.track_names[size_t(t.track)]
                                       : std::string()},
                          {"nodes", t.nodes},
                          {"gain", t.gain},
                          {"loss", t.loss}});
    facts << ", \"by_track\": "
          << by_track.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  facts << "}\n";
  write_text_file(path("summary.json"), facts.str(), overwrite);
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::string tracks;
  for (const auto& name : summary.track_names)
    tracks += (tracks.empty() ? "" : ", ") + escape_markup(name);

  std::string players;
  if (!summary.target_file.empty())
    players += detail::audio_player(summary.target_label,
                                    detail::relative_link(folder, summary.target_file));
  players += detail::audio_player("fitted mix", "mix.wav");
  std::ostringstream files;
  files << "<ul>";
  for (const auto& [name, what] : described_outputs())
    files << "<li><a href=\"" << name << "\">" << name << "</a>: " << escape_markup(what)
          << "</li>";
  files << "</ul>\n";

  const std::string graph_svg = read_text_file(path("console.svg"));
  const std::string initial   = initialisation_html(
        fitter, summary.track_names, initial_settings_html(fitter, summary.track_names));
  std::ostringstream html;
  html << detail::page_start(summary.title) << "<p>" << date << " · " << fitter.steps_done()
       << " steps in " << fixed_decimals(summary.seconds, 1) << " s ("
       << fixed_decimals(summary.seconds > 0 ? double(fitter.steps_done()) / summary.seconds : 0, 2)
       << " steps/s" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "") << ")</p>\n"
       << "<p class=\"note\"><a href=\"#listen\">Listen</a> · <a href=\"#where\">Where the "
          "loss lives</a> · <a href=\"#spectrograms\">"
          "Spectrograms</a> · <a href=\"#console\">Console</a> · <a href=\"#tracks\">Tracks</a> · "
          "<a href=\"#loss\">Loss curve</a> · <a href=\"#files\">Files</a></p>\n"
       << "<h2 id=\"listen\">Listen</h2>\n<div class=\"players\">" << players << "</div>\n"
       << "<h2>Summary</h2>\n<table class=\"facts\">"
       << "<tr><td>tracks</td><td>" << summary.track_names.size() << " (" << tracks << ")</td></tr>"
       << "<tr><td>audio</td><td>"
       << fixed_decimals(double(fitted.size(1)) / double(sample_rate), 2) << " s at " << sample_rate
       << " Hz</td></tr>"
       << "<tr><td>console</td><td>" << graph.n_nodes() << " nodes, " << processors
       << " processors</td></tr>"
       << "<tr><td>optimiser</td><td>AdamW, learning rate " << fitter.options().optimizer.lr
       << ", crops of " << fixed_decimals(fitter.options().crop_seconds, 2) << " s (first "
       << fixed_decimals(fitter.options().skip_seconds, 2)
       << " s not in the loss)</td></tr></table>\n"
       << "<h2>Whole-song loss</h2>\n"
       << detail::loss_table({{"initial console", summary.before}, {"fitted", summary.after.terms}})
       << "<p>The mix-matching loss of the pruning paper: multi-resolution log-mel and "
          "spectral-convergence "
          "distances of the left, right, mid and side signals (0 is a perfect match).</p>\n"
       << "<h2 id=\"where\">Where the loss lives</h2>\n"
       << loss_breakdown_html(summary.after, fitter.options().loss)
       << track_losses_html(summary.by_track, summary.after.terms.total.item<double>(),
                            summary.track_names)
       << "<h2 id=\"spectrograms\">Spectrograms</h2>\n"
       << spectrograms << "<h2 id=\"console\">Console</h2>\n"
       << "<div class=\"graph\">" << detail::inline_svg(graph_svg) << "</div>\n"
       << letter_legend(graph) << "<h2 id=\"tracks\">Parameters by track</h2>\n"
       << tracks_html(fitter, summary, folder)
       << automation_html(graph, fitter.processors(), parameters, fitter.target(), sample_rate)
       << "<h2 id=\"loss\">Loss curve</h2>\n"
       << loss_svg << "\n"
       << initial << "<h2 id=\"files\">Files</h2>\n"
       << files.str() << "</body></html>\n";
  write_text_file(path("report.html"), html.str(), overwrite);
}

}  // namespace grafx
