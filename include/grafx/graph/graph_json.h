#pragma once
/// Graph files: JSON, format "grafx.graph" version 2 (docs/graph-format.md).
///
///   {
///     "format": "grafx.graph", "version": 2,
///     "node_types": [{"name": "crossover", "inlets": ["main"], "outlets": ["low", "high"]}],
///     "nodes": [{"id": 0, "type": "in", "name": "bass"}, {"id": 1, "type": "crossover"},
///               {"id": 2, "type": "eq", "dry_wet": true}, {"id": 3, "type": "reverb",
///               "bypassed": true}, ...],
///     "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 5, "outlet": "high"}, ...],
///     "next_id": 7
///   }
///
/// Saving and loading round-trip exactly (types, ids, names, flags, ports, edges, next id). A
/// malformed file throws one IoError [grafx.io.format] (or the GraphError of the offending node or
/// edge) naming the file, the field and what was expected; it never crashes.

#include <grafx/graph/graph.h>

#include <string>

namespace grafx {

/// Current version of the graph file format. Version 2 added the node flags "dry_wet" and
/// "bypassed", version 3 automation (the nodes' "automated" parameter names and the graph's
/// "automation": {"rate_hz", "points"}); versions 1 and 2 still load, and a graph without
/// automation is written as version 2, which earlier grafx reads.
constexpr int kGraphFormatVersion = 3;

/// Canonical text of a graph file (2-space indentation, nodes by id, edges sorted).
std::string graph_to_json(const Graph& graph);

/// Parses a graph file. `origin` names the text in messages (usually its path). Types used by
/// nodes but not declared in "node_types" are taken from `known_types` (the utility types
/// always are).
Graph graph_from_json(const std::string& text, const std::string& origin = "graph",
                      const NodeTypes& known_types = NodeTypes());

Graph load_graph(const std::string& path, const NodeTypes& known_types = NodeTypes());
/// Writes atomically; refuses to replace an existing file unless `overwrite`.
void save_graph(const Graph& graph, const std::string& path, bool overwrite = false);

}  // namespace grafx
