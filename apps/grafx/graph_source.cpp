#include "graph_source.h"

#include "console_options.h"

#include <grafx/fit/fit_record.h>
#include <grafx/graph/graph_json.h>
#include <grafx/render/parameters.h>

#include <filesystem>

namespace grafx::cli {

GraphSource::GraphSource(const std::string& source, const std::string& parameters)
    : folder(std::filesystem::is_directory(source)),
      graph_path(folder ? (std::filesystem::path(source) / "console.json").string() : source),
      parameter_path(parameters.empty() && folder
                         ? (std::filesystem::path(source) / "parameters.safetensors").string()
                         : parameters),
      graph(load_graph_file(graph_path)) {
  graph.check();
  if (folder) {
    const FitInputs record = read_fit_record(source).inputs;
    tracks = record.tracks, track_names = record.track_names;
  }
  if (!parameter_path.empty()) file = read_parameter_file(parameter_path, graph);
}

Processors GraphSource::processors(SampleRate sample_rate) const {
  return renderable_processors(graph, {sample_rate});
}

Parameters GraphSource::parameters(const Processors& processors, int64_t seed) const {
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
