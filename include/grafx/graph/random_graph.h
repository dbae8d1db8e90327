#pragma once
/// Seeded random graphs for tests and benchmarks: valid DAGs with single- and multi-port nodes,
/// dead nodes, parallel edges between one pair of nodes (other ports), several inputs and
/// outputs. The same seed gives the same graph on every platform.

#include <grafx/graph/graph.h>

#include <cstdint>

namespace grafx {

struct RandomGraphOptions {
  int64_t n_processors = 12;  ///< processor and mix nodes
  int64_t n_inputs     = 3;
  int64_t n_outputs    = 1;
  int64_t n_types      = 4;  ///< single-port processor types ("p0", "p1", ...)
  bool multi_port = true;    ///< also "split" (main -> low, high) and "duck" (main, side -> main)
  double extra_edge_rate = 0.3;
};

/// The node types random graphs use: utilities, p0..p{n-1}, and (if multi_port) split and duck.
NodeTypes random_graph_types(const RandomGraphOptions& options);

/// A valid random graph (every inlet connected, acyclic, at least one in and out).
Graph random_graph(uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace grafx
