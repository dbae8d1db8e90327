#pragma once
/// The tensor form of a graph, and graph-level batching.
///
/// `to_tensor` numbers the nodes 0..V-1 in ascending id order ("rows") and describes the graph
/// with int64 CPU tensors:
///
///   node_types  [V]     type of each row
///   edge_index  [2, E]  row 0 the source row, row 1 the destination row of each edge
///   edge_ports  [E, 2]  outlet index (in the source's type) and inlet index (in the dest's type)
///   type_counts [T]     number of nodes of each type
///
/// Edges are sorted by (dest, inlet, source, outlet). Sources feed the `in` rows in ascending
/// order, outputs come from the `out` rows in ascending order, and a type's parameter rows
/// follow its nodes in ascending order ("graph order").
///
/// `batch_graphs` joins several graphs of the same node types into one disconnected graph, so
/// that one render handles them all; its offsets split sources, outputs and parameters back.

#include <grafx/graph/graph.h>

#include <ATen/Tensor.h>

#include <string>
#include <vector>

namespace grafx {

struct GraphTensor {
  NodeTypes types;
  at::Tensor node_types;
  at::Tensor edge_index;
  at::Tensor edge_ports;
  at::Tensor type_counts;
  std::vector<NodeId> node_ids;                 ///< the Graph id of each row
  std::vector<NodeProperties> node_properties;  ///< each row's name, dry/wet, bypass, automation
  Automation automation;                        ///< the clock of the automation curves

  int64_t n_nodes() const { return static_cast<int64_t>(node_ids.size()); }
  int64_t n_edges() const;
  /// "GraphTensor(node_types=[13], edge_index=[2, 12], edge_ports=[12, 2], n_types=10)"
  std::string to_string() const;
};

GraphTensor to_tensor(const Graph& graph);
/// The graph of a tensor form; rows keep their original ids.
Graph to_graph(const GraphTensor& tensor);

struct GraphBatch {
  GraphTensor graph;                    ///< the disjoint union
  std::vector<int64_t> node_offsets;    ///< graph g owns rows [node_offsets[g], node_offsets[g+1])
  std::vector<int64_t> source_offsets;  ///< its sources, among all `in` rows
  std::vector<int64_t> output_offsets;  ///< its outputs, among all `out` rows
  /// type_offsets[t][g]: graph g's nodes of type t start here among all nodes of type t.
  std::vector<std::vector<int64_t>> type_offsets;

  int64_t n_graphs() const { return static_cast<int64_t>(node_offsets.size()) - 1; }
  /// Splits `outputs` (dimension `dim` runs over all `out` rows) into one tensor per graph.
  std::vector<at::Tensor> split_outputs(const at::Tensor& outputs, int64_t dim) const;
  /// Splits a type's parameter tensor (dimension `dim` runs over all its nodes) per graph.
  std::vector<at::Tensor> split_parameters(TypeId type, const at::Tensor& parameter,
                                           int64_t dim) const;
};

/// Throws GraphError [grafx.graph.batch] if the graphs' node types differ or the list is empty.
GraphBatch batch_graphs(const std::vector<GraphTensor>& graphs);

}  // namespace grafx
