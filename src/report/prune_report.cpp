#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/plot.h>
#include <grafx/render/chunked.h>
#include <grafx/render/parameters.h>
#include <grafx/report/prune_report.h>

#include "report/html.h"

#include <ATen/ATen.h>

#include <map>
#include <sstream>

namespace grafx {

const std::vector<std::string>& prune_output_files() {
  static const std::vector<std::string> files = {"mix.wav",
                                                 "console.json",
                                                 "console.svg",
                                                 "console_before.svg",
                                                 "parameters.safetensors",
                                                 "parameters.json",
                                                 "rounds.csv",
                                                 "trials.csv",
                                                 "pruning.svg",
                                                 "summary.json",
                                                 "report.html"};
  return files;
}

void write_prune_outputs(const Pruner& pruner, const Fitter& fitter, const PruneSummary& summary,
                         const std::string& folder, bool overwrite) {
  auto path = [&](const std::string& name) { return folder + "/" + name; };
  for (const auto& name : prune_output_files()) check_writable(path(name), overwrite);
  const SampleRate sample_rate = fitter.sample_rate();
  auto [graph, parameters]     = pruner.result();
  Processors processors        = make_processors(graph.types(), {sample_rate});
  RenderPlan plan              = make_render_plan(to_tensor(graph), fitter.options().schedule);
  // The mix from the pruned graph itself: what `grafx render` will reproduce.
  ChunkOptions song;
  song.render.time = {sample_rate, 0};  // automation curves start with the song
  at::Tensor mix   = render_in_chunks(plan, processors, parameters, fitter.tracks(), song)[0];
  if (!all_finite(mix))
    throw FitError("grafx.fit.diverged",
                   "the pruned console renders non-finite samples; no outputs were written");
  write_audio(path("mix.wav"), mix, sample_rate, overwrite);
  save_graph(graph, path("console.json"), overwrite);
  detail::write_console_picture(graph, path("console.svg"), overwrite);
  detail::write_console_picture(fitter.graph(), path("console_before.svg"), overwrite);
  save_parameters(path("parameters.safetensors"), graph, parameters, overwrite, sample_rate);
  write_text_file(path("parameters.json"), physical_parameters_json(graph, processors, parameters),
                  overwrite);

  std::ostringstream rounds, trials;
  rounds << "round,method,loss_before,loss_pruned,loss_tuned,removed,remaining,trials,fast_trials,"
            "seconds\n"
         << std::setprecision(8);
  for (const auto& r : pruner.rounds())
    rounds << r.round << "," << to_string(r.method) << "," << r.loss_before << "," << r.loss_pruned
           << "," << r.loss_tuned << "," << r.removed << "," << r.remaining << "," << r.trials
           << "," << (r.fast_trials ? 1 : 0) << "," << r.seconds << "\n";
  trials << "round,nodes,loss,kept\n" << std::setprecision(8);
  for (const auto& t : pruner.trials()) {
    std::string nodes;
    for (NodeId id : t.nodes) nodes += (nodes.empty() ? "" : " ") + std::to_string(id);
    trials << t.round << "," << nodes << "," << t.loss << "," << (t.kept ? 1 : 0) << "\n";
  }
  write_text_file(path("rounds.csv"), rounds.str(), overwrite);
  write_text_file(path("trials.csv"), trials.str(), overwrite);

  // The loss against processors removed: each kept trial, and each round after fine-tuning.
  PlotSeries kept{"kept trials", {}, {}, false}, tuned{"after fine-tuning", {}, {}, true};
  int64_t removed = 0;
  for (const auto& t : pruner.trials())
    if (t.kept) {
      removed += int64_t(t.nodes.size());
      kept.x.push_back(double(removed));
      kept.y.push_back(t.loss);
    }
  for (const auto& r : pruner.rounds()) {
    tuned.x.push_back(double(pruner.initial_processors() - r.remaining));
    tuned.y.push_back(r.loss_tuned);
  }
  std::vector<PlotSeries> series;
  for (auto* s : {&kept, &tuned})
    if (!s->x.empty()) series.push_back(*s);
  PlotOptions plot;
  plot.title        = "Whole-song loss against processors removed";
  plot.x_label      = "processors removed";
  plot.y_label      = "loss";
  std::string curve = series.empty() ? "" : plot_svg(series, plot);
  write_text_file(path("pruning.svg"),
                  curve.empty() ? "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n" : curve,
                  overwrite);

  // Per type: processors before and after, the fraction removed (the paper's Table 2).
  std::map<std::string, std::pair<int64_t, int64_t>> per_type;  // before, after
  const Graph& full = fitter.graph();
  for (NodeId id : full.nodes())
    if (!is_utility_type(full.node(id).type)) {
      auto& counts = per_type[full.type_name(id)];
      ++counts.first;
      counts.second += full.node(id).bypassed ? 0 : 1;
    }
  std::ostringstream table;
  table << "<table><tr><th>type</th><th>before</th><th>after</th><th>removed (ρ)</th></tr>\n";
  for (const auto& [type, counts] : per_type)
    table << "<tr><td>" << escape_markup(type) << "</td><td>" << counts.first << "</td><td>"
          << counts.second << "</td><td>"
          << fixed_decimals(1.0 - double(counts.second) / double(counts.first), 2)
          << "</td></tr>\n";
  const int64_t before = pruner.initial_processors(), after = pruner.remaining_processors();
  table << "<tr><th>all</th><th>" << before << "</th><th>" << after << "</th><th>"
        << fixed_decimals(before > 0 ? 1.0 - double(after) / double(before) : 0, 2)
        << "</th></tr></table>\n";

  std::ostringstream facts;
  facts << std::setprecision(10) << "{\"format\": \"grafx.prune_summary\", \"version\": 1"
        << ", \"method\": \"" << to_string(pruner.options().method) << "\""
        << ", \"tolerance\": " << pruner.options().tolerance
        << ", \"rounds\": " << pruner.rounds_done() << ", \"trials\": " << pruner.trials().size()
        << ", \"prune_seconds\": " << summary.seconds
        << ", \"loss_unpruned\": " << detail::loss_json(summary.unpruned)
        << ", \"loss_pruned\": " << detail::loss_json(summary.pruned)
        << ", \"processors_before\": " << before << ", \"processors_after\": " << after
        << ", \"per_type\": {";
  for (auto type = per_type.begin(); type != per_type.end(); ++type)
    facts << (type == per_type.begin() ? "" : ", ") << "\"" << type->first << "\": ["
          << type->second.first << ", " << type->second.second << "]";
  facts << "}}\n";
  write_text_file(path("summary.json"), facts.str(), overwrite);

  const PruningOptions& o = pruner.options();
  std::ostringstream html;
  html << detail::page_start(summary.title) << "<p>" << to_string(o.method)
       << " pruning, τ = " << o.tolerance << ", " << pruner.rounds_done() << " rounds of "
       << o.steps_between << " fine-tuning steps, " << pruner.trials().size() << " trials, in "
       << fixed_decimals(summary.seconds, 1) << " s</p>\n"
       << "<h2>Processors</h2>\n"
       << table.str() << "<h2>Whole-song loss</h2>\n"
       << detail::loss_table({{"full console", summary.unpruned}, {"pruned", summary.pruned}})
       << "<h2>Loss against processors removed</h2>\n"
       << detail::inline_svg(curve) << "\n<h2>Pruned console</h2>\n<div class=\"graph\">"
       << detail::inline_svg(read_text_file(path("console.svg")))
       << "</div>\n<h2>Full console (pruned nodes dashed)</h2>\n<div class=\"graph\">"
       << detail::inline_svg(read_text_file(path("console_before.svg")))
       << "</div>\n<p>Files: mix.wav, console.json, parameters.safetensors, parameters.json, "
          "rounds.csv, trials.csv.</p>\n</body></html>\n";
  write_text_file(path("report.html"), html.str(), overwrite);
}

}  // namespace grafx
