#include "graph_source.h"

#include "arguments.h"
#include "console_options.h"

#include <grafx/fit/fit_record.h>
#include <grafx/graph/graph_json.h>
#include <grafx/render/parameters.h>

#include <filesystem>

namespace grafx::cli {

void add_graph_source_options(CLI::App& command, GraphSourceOptions& options) {
  command
      .add_option("source", options.source,
                  "A fit folder (its console.json and parameters.safetensors) or a graph file")
      ->required();
  command.add_option("--params", options.parameters,
                     "Parameter file (.safetensors); default: the fit folder's, or initial "
                     "parameters for a graph file");
  command.add_option("--seed", options.seed, "Seed of the initial parameters")
      ->capture_default_str()
      ->check(whole_number(0));
}

GraphSource::GraphSource(const GraphSourceOptions& options)
    : folder(std::filesystem::is_directory(options.source)),
      graph_path(folder ? (std::filesystem::path(options.source) / "console.json").string()
                        : options.source),
      parameter_path(
          options.parameters.empty() && folder
              ? (std::filesystem::path(options.source) / "parameters.safetensors").string()
              : options.parameters),
      graph(load_graph_file(graph_path)),
      seed(options.seed) {
  graph.check();
  // A fit's folder records its tracks (a pruned console's folder does not: --tracks then).
  if (folder && std::filesystem::exists(std::filesystem::path(options.source) / "fit.json")) {
    const FitInputs record = read_fit_record(options.source).inputs;
    tracks = record.tracks, track_names = record.track_names;
  }
  if (!parameter_path.empty()) file = read_parameter_file(parameter_path, graph);
}

Processors GraphSource::processors(SampleRate sample_rate) const {
  return renderable_processors(graph, {sample_rate});
}

Parameters GraphSource::parameters(const Processors& processors) const {
  return parameter_path.empty()
             ? create_parameters(graph, processors, {uint64_t(seed), at::kFloat, false})
             : file.parameters;
}

std::vector<std::string> GraphSource::inputs() const {
  std::vector<std::string> files = {graph_path};
  if (!parameter_path.empty()) files.push_back(parameter_path);
  return files;
}

}  // namespace grafx::cli
