#pragma once
/// Parameter files: a graph's raw parameters in the safetensors format, readable from Python
/// (`safetensors.torch.load_file`). Format version 2 names each tensor by its place in its
/// type's values (TypeParameters): "<type>.parameters.<name>" (the processor's own),
/// "<type>.wet" (the nodes' wet amounts) and "<type>.curves.<parameter>" (automation curves),
/// rows in graph order. Version 1 files ("<type>.<name>", "<type>.dry_wet",
/// "<type>.<parameter>@curve") still read; a later version is refused [grafx.io.format].
/// The metadata records the format and version, per type the node ids of the rows
/// ("node_ids.<type>": "[2, 9, 16]"), so a file is checked against the graph it is loaded for,
/// and the sample rate the parameters were made for ("sample_rate": "30000"; time constants
/// and filter frequencies depend on it), where known.
///
///   save_parameters("fit.safetensors", graph, parameters, /*overwrite=*/false, 30000);
///   Parameters p = load_parameters("fit.safetensors", graph);
///   ParameterFile file = read_parameter_file("fit.safetensors", graph);   // and its rate, 30000

#include <grafx/graph/graph.h>
#include <grafx/render/render.h>

#include <string>

namespace grafx {

/// `sample_rate` 0: not recorded.
void save_parameters(const std::string& path, const Graph& graph, const Parameters& parameters,
                     bool overwrite = false, SampleRate sample_rate = 0);

struct ParameterFile {
  Parameters parameters;
  SampleRate sample_rate = 0;  ///< 0: not recorded
};

/// Reads a parameter file once: its parameters and the sample rate it records. Throws IoError
/// [grafx.io.format] for a malformed file or rate, and [grafx.io.mismatch] when its types or
/// node ids differ from the graph's (naming the type and both id lists).
ParameterFile read_parameter_file(const std::string& path, const Graph& graph);

/// The parameters of read_parameter_file.
Parameters load_parameters(const std::string& path, const Graph& graph);

/// Every node's parameters in physical units, as JSON:
/// {"format": "grafx.physical_parameters", "nodes": [{"id": 3, "name": "bass.eq", "type": "eq",
///  "parameters": {"gain_db": [..], ...}}, ...]} (per-batch-item parameters: the first item).
std::string physical_parameters_json(const Graph& graph, const Processors& processors,
                                     const Parameters& parameters);

}  // namespace grafx
