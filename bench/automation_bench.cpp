// Fitting automation on real stems (testdata/): the five stems mixed by a hidden console whose
// tracks fade in, fade out and ride their level and whose vocal reverb send opens, and by the same
// console held static. Each mix is fitted twice for the same wall-clock time: with a static
// console, and with --automate gain_pan,send (static for the first half, then curves). Prints the
// whole-song losses, the error of the fitted levels against the hidden ones over time (dB), and
// writes a picture of the hidden and fitted curves. Then what automation costs a render.
//
//   build/bin/automation_bench [seconds_per_fit=60] [seed=7] [curve_lr_factor=1] > table.md
//
// The picture goes to automation_bench.svg in the working folder (refused if it exists).

#include <grafx/error.h>
#include <grafx/fit/demo.h>
#include <grafx/fit/fit.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/audio.h>
#include <grafx/io/plot.h>
#include <grafx/program.h>
#include <grafx/render/parameters.h>

#include "bench_support.h"

#include <ATen/ATen.h>

#include <cmath>
#include <fstream>
#include <iostream>

using namespace grafx;

namespace {

constexpr int64_t kRate       = 16000;
constexpr double kCurveRateHz = 10;
const double kDbPerRaw        = 20 / std::log(10.0);  // natural-log gain to dB

/// The node of `type` on the path out of `from` (a track's strip), following first outlets.
NodeId downstream(const Graph& g, NodeId from, const std::string& type) {
  for (NodeId id = from;;) {
    if (g.type_name(id) == type) return id;
    const auto& out = g.out_edges(id);
    if (out.empty()) throw std::runtime_error("no " + type + " after node " + std::to_string(from));
    id = out.front().dest;
  }
}

double ramp(double t, double from, double to) {
  return std::min(1.0, std::max(0.0, (t - from) / (to - from)));
}

/// A hidden move: a node's level in dB over time, added to its static setting (gain_pan: both
/// channels; send: its level), or for `absolute` moves the level itself.
struct Move {
  std::string what;
  NodeId node;
  std::function<double(double)> db;
  bool absolute = false;
};

/// The level of node `id` (raw log gains of its type's parameter, mean over channels) in dB at
/// each curve point, from the curve if it automates its gain, else its static value.
std::vector<double> level_db(const Graph& g, const Parameters& p, NodeId id, int64_t points) {
  const std::string& type       = g.type_name(id);
  const std::vector<NodeId> ids = g.nodes_of_type(type);
  const int64_t row             = std::find(ids.begin(), ids.end(), id) - ids.begin();
  const bool automated          = !g.node(id).automated.empty();
  at::Tensor raw                = automated ? p.at(type).at(curve_name("log_gain"))[row].mean(-1)
                                            : p.at(type).at("log_gain")[row].mean().expand({points});
  std::vector<double> db;
  for (int64_t i = 0; i < points; ++i) db.push_back(raw[i].item<double>() * kDbPerRaw);
  return db;
}

double rms(const std::vector<double>& a, const std::vector<double>& b, bool offset_removed) {
  double mean = 0, sum = 0;
  for (size_t i = 0; i < a.size(); ++i) mean += (a[i] - b[i]) / double(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - b[i] - (offset_removed ? mean : 0);
    sum += d * d;
  }
  return std::sqrt(sum / double(a.size()));
}

int run(int argc, char** argv) {
  const auto args = bench::parse_arguments(
      argc, argv,
      {{"seconds_per_fit", 60, 1, 36000}, {"seed", 7, 0, 1e9}, {"curve_lr_factor", 1, 0.01, 100}});
  bench::setup_threads();
  const std::string picture = "automation_bench.svg";
  if (std::ifstream(picture))
    throw IoError("grafx.io.exists", picture + " exists; move it away to run the benchmark");
  std::vector<at::Tensor> stems;
  const std::vector<std::string> names = {"bass", "drums", "guitar", "guitar2", "singing"};
  for (const auto& name : names) {
    Audio audio  = read_audio(std::string(GRAFX_TESTDATA_DIR) + "/" + name + ".flac");
    at::Tensor x = resample(audio.samples, audio.sample_rate, kRate);
    stems.push_back(x.expand({2, x.size(1)}));
  }
  const at::Tensor tracks = at::stack(stems).contiguous();
  const double seconds    = double(tracks.size(2)) / kRate;

  ConsoleOptions options;
  options.n_tracks      = 5;
  options.track_names   = names;
  options.track_groups  = {0, 0, 1, 1, 2};  // rhythm, guitars, vocals
  options.chain         = default_console_chain();
  options.dry_wet       = true;
  options.sends         = {{"reverb", {"reverb"}, {4}}};  // the vocals' reverb
  const Console console = build_console(options, registry_node_types());
  const Graph& graph    = console.graph;
  Processors processors = make_processors(graph.types(), {kRate});
  Parameters hidden     = musical_parameters(graph, processors, kRate, uint64_t(args[1]));

  // The hidden moves: the bass fades in, a guitar fades out, the vocals ride up and down, and
  // their reverb send opens from −40 dB to −6 dB.
  const std::vector<Move> moves = {
      {"bass fade-in", downstream(graph, console.inputs[0], "gain_pan"),
       [](double t) { return -30 * (1 - ramp(t, 0, 1.5)); }},
      {"guitar fade-out", downstream(graph, console.inputs[2], "gain_pan"),
       [seconds](double t) { return -30 * ramp(t, seconds - 3, seconds); }},
      {"vocal ride", downstream(graph, console.inputs[4], "gain_pan"),
       [](double t) { return 6 * (ramp(t, 5, 5.5) - ramp(t, 8, 8.5)); }},
      {"reverb send opens", graph.nodes_of_type("send").at(0),  // the vocals' only
       [](double t) { return -40 + 34 * ramp(t, 6, 7); }, true},
  };
  Graph automated      = graph;
  const int64_t points = int64_t(std::ceil(seconds * kCurveRateHz - 1e-9)) + 1;
  automated.set_automation({kCurveRateHz, points});
  for (const Move& m : moves) automated.set_automated(m.node, "log_gain");
  Parameters hidden_automated = with_curves(automated, processors, hidden);
  for (const Move& m : moves) {
    const std::string& type       = graph.type_name(m.node);
    const std::vector<NodeId> ids = graph.nodes_of_type(type);
    const int64_t row             = std::find(ids.begin(), ids.end(), m.node) - ids.begin();
    at::Tensor curve = hidden_automated[type][curve_name("log_gain")][row];  // [P, channels]
    for (int64_t i = 0; i < points; ++i) {
      const double db = m.db(double(i) / kCurveRateHz);
      if (m.absolute)
        curve[i].fill_(db / kDbPerRaw);
      else
        curve[i].add_(db / kDbPerRaw);
    }
  }
  RenderOptions song_time;
  song_time.time              = {kRate, 0};
  const at::Tensor mix_moving = render(make_render_plan(to_tensor(automated)), processors,
                                       hidden_automated, tracks, song_time)
                                    .outputs[0];
  const at::Tensor mix_static =
      render(make_render_plan(to_tensor(graph)), processors, hidden, tracks).outputs[0];

  FitOptions fit;
  fit.n_steps                           = 1 << 30;
  fit.time_budget_seconds               = args[0];
  fit.crop_seconds                      = 3.0;
  fit.skip_seconds                      = 0.3;
  FitOptions with_curves_fit            = fit;
  with_curves_fit.automation.parameters = {{"gain_pan", {}}, {"send", {}}};
  with_curves_fit.automation.rate_hz    = kCurveRateHz;
  if (args[2] != 1)  // the curves' learning rate, relative to the others'
    with_curves_fit.learning_rates[curve_name("log_gain")] = args[2] * fit.optimizer.lr;

  std::cout << "# Fitting automation on real stems\n\n"
            << bench::machine_description() << "; five stems of testdata/ ("
            << bench::fixed(seconds, 1) << " s at " << kRate << " Hz), a console of "
            << graph.n_nodes() << " nodes with a vocal reverb send, hidden settings seed "
            << args[1] << "; each fit " << args[0]
            << " s of wall-clock time (3 s crops; automation: static for the first half, "
            << "then gain_pan and send curves at 10 points per second, smoothness "
            << with_curves_fit.automation.smoothness << ", curve learning rate ×" << args[2]
            << ").\n\n";
  bench::Table table({"hidden console", "fit", "steps", "whole-song loss", "vs static fit"});
  std::vector<std::pair<std::string, Parameters>> fitted;
  std::vector<PlotSeries> series;
  for (const bool moving : {true, false}) {
    const at::Tensor& mix = moving ? mix_moving : mix_static;
    double static_loss    = 0;
    for (const bool curves : {false, true}) {
      Fitter fitter(graph, tracks, mix, kRate, curves ? with_curves_fit : fit);
      fitter.run();
      const double loss = fitter.evaluate().total.item<double>();
      if (!curves) static_loss = loss;
      table.add_row({moving ? "with fades, rides and a send that opens" : "static",
                     curves ? "with automation" : "static", std::to_string(fitter.steps_done()),
                     bench::fixed(loss, 4),
                     curves ? bench::fixed(loss / static_loss, 3) + "×" : ""});
      if (moving)
        fitted.emplace_back(curves ? "automated" : "static", fitter.rendered_parameters());
      if (moving && curves) {
        const Graph& g = fitter.rendered_graph();
        bench::Table errors({"move", "hidden range (dB)", "static fit: error (dB rms)",
                             "automated fit: error (dB rms)",
                             "static / automated: error without offset (dB rms)"});
        std::vector<double> times;
        for (int64_t i = 0; i < points; ++i) times.push_back(double(i) / kCurveRateHz);
        for (const Move& m : moves) {
          std::vector<double> truth = level_db(automated, hidden_automated, m.node, points);
          std::vector<double> mine  = level_db(g, fitted.back().second, m.node, points);
          std::vector<double> fixed = level_db(graph, fitted.front().second, m.node, points);
          const auto [lo, hi]       = std::minmax_element(truth.begin(), truth.end());
          errors.add_row({m.what, bench::fixed(*lo, 1) + " to " + bench::fixed(*hi, 1),
                          bench::fixed(rms(fixed, truth, false), 1),
                          bench::fixed(rms(mine, truth, false), 1),
                          bench::fixed(rms(fixed, truth, true), 1) + " / " +
                              bench::fixed(rms(mine, truth, true), 1)});
          series.push_back({m.what + " (hidden)", times, truth, true});
          series.push_back({m.what + " (fitted)", times, mine});
        }
        std::cout << "Fitted levels against the hidden ones, at the curves' points (0 to "
                  << bench::fixed(seconds, 1) << " s):\n\n";
        errors.print(std::cout);
        std::cout << "\n";
      }
    }
  }
  table.print(std::cout);

  // What automation costs a render: one 3 s crop forward and backward through the console, with
  // every gain_pan and send node automated (the fit's graph after its static half) and without.
  Graph every = graph;
  every.set_automation({kCurveRateHz, points});
  for (const char* type : {"gain_pan", "send"})
    for (NodeId id : every.nodes_of_type(type)) every.set_automated(id, "log_gain");
  bench::Table cost({"console", "forward+backward of a 3 s crop (ms, median)"});
  const at::Tensor crop = tracks.narrow(2, 5 * kRate, 3 * kRate);
  for (const Graph* g : std::vector<const Graph*>{&graph, &every}) {
    RenderPlan plan       = make_render_plan(to_tensor(*g));
    Parameters parameters = cloned_parameters(with_curves(*g, processors, hidden), true);
    RenderOptions options;
    options.time    = {kRate, 5 * kRate};
    bench::Timing t = bench::time_it([&] {
      render(plan, processors, parameters, crop, options).outputs.pow(2).mean().backward();
    });
    cost.add_row(
        {g == &graph ? "static" : "gain_pan and send automated", bench::fixed(t.median_ms, 0)});
  }
  std::cout << "\n";
  cost.print(std::cout);
  PlotOptions plot;
  plot.title   = "hidden (dashed) and fitted automation";
  plot.x_label = "time (s)";
  plot.y_label = "level (dB)";
  for (size_t i = 0; i < series.size(); i += 2)  // one colour per move
    series[i].colour = series[i + 1].colour =
        std::vector<std::string>{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}[(i / 2) % 4];
  write_plot(picture, series, plot);
  std::cout << "\npicture: " << picture << "\n";
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("automation_bench", [&] { return run(argc, argv); });
}
