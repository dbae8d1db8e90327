#pragma once
// What `grafx stream` and `grafx export-lv2` run: the folder of a fit or a pruned console (its
// console.json, parameters.safetensors and, a fit's, its record) or a graph file with a
// parameter file (or initial parameters).

#include <CLI/CLI.hpp>

#include <grafx/graph/graph.h>
#include <grafx/io/parameter_file.h>
#include <grafx/processors/registry.h>

#include <string>
#include <vector>

namespace grafx::cli {

/// The options that name what a command runs.
struct GraphSourceOptions {
  std::string source;      ///< a fit folder or a graph file
  std::string parameters;  ///< a parameter file (default: the fit folder's)
  int64_t seed = 0;        ///< of initial parameters, without a parameter file
};
/// Adds them to `command`: the positional source, --params and --seed.
void add_graph_source_options(CLI::App& command, GraphSourceOptions& options);

struct GraphSource {
  bool folder = false;                     ///< a fit folder
  std::string graph_path, parameter_path;  ///< parameter_path empty: initial parameters
  Graph graph;
  ParameterFile file;  ///< read from parameter_path
  /// The graph's sources in `in` node id order: the fit's tracks and their names (the folder of
  /// a fit; that of a pruned console records none).
  std::vector<std::string> tracks, track_names;

  int64_t seed = 0;

  /// Reads the source and the parameter file. Throws what reading them throws.
  explicit GraphSource(const GraphSourceOptions& options);
  /// The processors at `sample_rate`, and the parameters: the file's, or initial ones.
  Processors processors(SampleRate sample_rate) const;
  Parameters parameters(const Processors& processors) const;
  /// The files this reads, which no output may replace.
  std::vector<std::string> inputs() const;
};

}  // namespace grafx::cli
