#pragma once
// What `grafx stream` and `grafx export-lv2` run: a fit folder (its console.json,
// parameters.safetensors and record) or a graph file with a parameter file (or initial
// parameters).

#include <grafx/graph/graph.h>
#include <grafx/io/parameter_file.h>
#include <grafx/processors/registry.h>

#include <string>
#include <vector>

namespace grafx::cli {

struct GraphSource {
  bool folder = false;                     ///< a fit folder
  std::string graph_path, parameter_path;  ///< parameter_path empty: initial parameters
  Graph graph;
  ParameterFile file;  ///< read from parameter_path
  /// The graph's sources in `in` node id order: the fit's tracks and their names (a fit folder).
  std::vector<std::string> tracks, track_names;

  /// Reads `source` (a fit folder or a graph file) and `parameters` (a parameter file; default:
  /// the fit folder's). Throws what reading them throws.
  GraphSource(const std::string& source, const std::string& parameters);
  /// The processors at `sample_rate`, and the parameters: the file's, or initial ones of `seed`.
  Processors processors(SampleRate sample_rate) const;
  Parameters parameters(const Processors& processors, int64_t seed) const;
  /// The files this reads, which no output may replace.
  std::vector<std::string> inputs() const;
};

}  // namespace grafx::cli
