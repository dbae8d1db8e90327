#pragma once
/// Pictures of graphs, laid out by Graphviz's `dot` left to right as in GRAFX's figures: a small
/// box per node labelled with its type's letter (`type_letter`: e eq, c compressor, n noise
/// gate, s stereo imager, g gain/pan, d delay, r reverb, m mix, b send, ...), a colour per
/// letter (a variant's capital shares its family's), `in` and `out` marked (by their node names
/// when they have one), bypassed nodes dashed, the ports of multi-port nodes drawn as labelled
/// cells with edges attached to them, and edges into a sidechain inlet dashed (a key is
/// listened to, not heard). SVG pictures carry each node's id, name and flags (dry/wet,
/// bypassed) as a tooltip.
///
///   draw_graph(graph, "console.svg");

#include <grafx/graph/graph.h>

#include <string>

namespace grafx {

struct DrawOptions {
  bool vertical = false;  ///< top to bottom instead of left to right
  bool show_ids = false;  ///< label nodes "letter id" instead of the letter alone
  std::string title;      ///< drawn above the graph when not empty
  /// Boxes the nodes of each strip: nodes named "<strip>" or "<strip>.<anything>" (a
  /// console's tracks, subgroups and buses), labelled with the strip's name.
  bool strips = false;
  /// Graphviz's layout time grows faster than the node count (a console of 12,000 nodes takes
  /// about 20 s, 24,000 nodes 2 minutes on a 2-core machine): pictures of more nodes are
  /// refused (IoError [grafx.io.draw]) unless this is raised. .dot text has no limit.
  int64_t max_nodes = 10000;
};

/// The Graphviz DOT text of a picture of the graph.
std::string graph_to_dot(const Graph& graph, const DrawOptions& options = {});

/// Throws IoError [grafx.io.draw] unless `path` has a picture extension (.svg, .png, .pdf, .dot)
/// and, for a laid-out picture, the graph has at most `options.max_nodes` nodes: what
/// draw_graph would refuse, checked before other outputs are written.
void check_drawable(const Graph& graph, const std::string& path, const DrawOptions& options = {});

/// Renders the graph to `path`; the format follows the extension: .svg, .png, .pdf or .dot.
/// Writes atomically and refuses to replace an existing file unless `overwrite`.
/// Throws IoError [grafx.io.draw] for an unknown extension or a Graphviz failure.
void draw_graph(const Graph& graph, const std::string& path, const DrawOptions& options = {},
                bool overwrite = false);

/// Writes an SVG picture (e.g. plot_svg's) to `path` as .svg, or rendered by Graphviz as .png
/// (at twice its pixels) or .pdf. Writes atomically and refuses to replace an existing file
/// unless `overwrite`. Throws IoError [grafx.io.draw] for another extension, an SVG without
/// width and height, or a Graphviz failure.
void write_svg_picture(const std::string& path, const std::string& svg, bool overwrite = false);

/// The fill colour used for a type's letter ("#rrggbb"), shared by every picture of grafx.
std::string type_color(const std::string& type_name);
/// The colour of a graph's type (configured types take their processor's).
std::string type_color(const NodeType& type);

}  // namespace grafx
