#include <grafx/error.h>
#include <grafx/graph/graph_tensor.h>

#include <ATen/ATen.h>

#include "common/tensors.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace grafx {
namespace {

using detail::shape_text;
using detail::to_vector;

at::Tensor long_tensor(const std::vector<int64_t>& values) { return at::tensor(values, at::kLong); }

std::vector<at::Tensor> split(const at::Tensor& tensor, const std::vector<int64_t>& offsets,
                              int64_t dim, const char* what) {
  if (tensor.size(dim) != offsets.back())
    throw GraphError("grafx.graph.batch", std::string("expected ") +
                                              std::to_string(offsets.back()) + " " + what +
                                              " along dimension " + std::to_string(dim) +
                                              ", but got " + std::to_string(tensor.size(dim)));
  std::vector<at::Tensor> parts;
  for (size_t g = 0; g + 1 < offsets.size(); ++g)
    parts.push_back(tensor.narrow(dim, offsets[g], offsets[g + 1] - offsets[g]));
  return parts;
}

}  // namespace

int64_t GraphTensor::n_edges() const { return edge_index.defined() ? edge_index.size(1) : 0; }

std::string GraphTensor::to_string() const {
  return "GraphTensor(node_types=" + shape_text(node_types.sizes()) +
         ", edge_index=" + shape_text(edge_index.sizes()) +
         ", edge_ports=" + shape_text(edge_ports.sizes()) +
         ", n_types=" + std::to_string(types.size()) + ")";
}

GraphTensor to_tensor(const Graph& graph) {
  GraphTensor t;
  t.types    = graph.types();
  t.node_ids = graph.nodes();
  std::unordered_map<NodeId, int64_t> row;
  std::vector<int64_t> node_types;
  for (size_t i = 0; i < t.node_ids.size(); ++i) {
    row[t.node_ids[i]] = static_cast<int64_t>(i);
    const Node& node   = graph.node(t.node_ids[i]);
    node_types.push_back(node.type);
    t.node_properties.push_back(node.properties());
  }
  t.automation = graph.automation();
  std::vector<std::array<int64_t, 4>> edges;  // dest, inlet, source, outlet
  for (const Edge& e : graph.edges())
    edges.push_back({row[e.dest], e.inlet, row[e.source], e.outlet});
  std::sort(edges.begin(), edges.end());
  std::vector<int64_t> sources, dests, ports;
  for (const auto& e : edges) {
    dests.push_back(e[0]);
    sources.push_back(e[2]);
    ports.push_back(e[3]);
    ports.push_back(e[1]);
  }
  int64_t n_edges = static_cast<int64_t>(edges.size());
  t.node_types    = long_tensor(node_types);
  t.edge_index    = at::stack({long_tensor(sources), long_tensor(dests)}).view({2, n_edges});
  t.edge_ports    = long_tensor(ports).view({n_edges, 2});
  t.type_counts   = long_tensor(graph.count_per_type());
  return t;
}

Graph to_graph(const GraphTensor& t) {
  Graph graph(t.types);
  auto types = to_vector(t.node_types);
  for (int64_t r = 0; r < t.n_nodes(); ++r) {
    NodeId id = t.node_ids[size_t(r)];
    graph.insert(id, t.types.name(types[size_t(r)]));
    graph.set_properties(id, t.node_properties[size_t(r)]);
  }
  graph.set_automation(t.automation);
  auto index      = to_vector(t.edge_index);
  auto ports      = to_vector(t.edge_ports);
  int64_t n_edges = t.n_edges();
  for (int64_t e = 0; e < n_edges; ++e) {
    NodeId source      = t.node_ids[size_t(index[size_t(e)])];
    NodeId dest        = t.node_ids[size_t(index[size_t(n_edges + e)])];
    TypeId source_type = types[size_t(index[size_t(e)])];
    TypeId dest_type   = types[size_t(index[size_t(n_edges + e)])];
    graph.connect(source, dest, t.types[source_type].outlets[size_t(ports[size_t(2 * e)])],
                  t.types[dest_type].inlets[size_t(ports[size_t(2 * e + 1)])]);
  }
  return graph;
}

std::vector<at::Tensor> GraphBatch::split_outputs(const at::Tensor& outputs, int64_t dim) const {
  return split(outputs, output_offsets, dim, "outputs");
}

std::vector<at::Tensor> GraphBatch::split_parameters(TypeId type, const at::Tensor& parameter,
                                                     int64_t dim) const {
  return split(parameter, type_offsets.at(size_t(type)), dim, "parameter rows");
}

GraphBatch batch_graphs(const std::vector<GraphTensor>& graphs) {
  if (graphs.empty()) throw GraphError("grafx.graph.batch", "cannot batch an empty list of graphs");
  const NodeTypes& types = graphs.front().types;
  for (size_t g = 1; g < graphs.size(); ++g)
    if (graphs[g].types != types)
      throw GraphError("grafx.graph.batch", "graph " + std::to_string(g) +
                                                " has other node types than graph 0; batched "
                                                "graphs must share their node types");
  GraphBatch batch;
  batch.node_offsets   = {0};
  batch.source_offsets = {0};
  batch.output_offsets = {0};
  batch.type_offsets.assign(size_t(types.size()), {0});
  std::vector<at::Tensor> node_types, edge_index, edge_ports;
  GraphTensor& u     = batch.graph;
  u.types            = types;
  bool any_automated = false;
  for (const GraphTensor& t : graphs) {
    int64_t offset = batch.node_offsets.back();
    node_types.push_back(t.node_types);
    edge_index.push_back(t.edge_index + offset);
    edge_ports.push_back(t.edge_ports);
    for (int64_t r = 0; r < t.n_nodes(); ++r) {
      // Ids stay unique across graphs: graph g's ids are shifted past graph g-1's rows.
      u.node_ids.push_back(offset + r);
      u.node_properties.push_back(t.node_properties[size_t(r)]);
    }
    const bool automated =
        std::any_of(t.node_properties.begin(), t.node_properties.end(),
                    [](const NodeProperties& node) { return !node.automated.empty(); });
    if (automated && any_automated && u.automation != t.automation)
      throw GraphError("grafx.graph.batch",
                       "graph " + std::to_string(batch.n_graphs()) +
                           " has another automation clock than the graphs before it; batched "
                           "graphs with automation must share their rate and points");
    if (automated) u.automation = t.automation;
    any_automated = any_automated || automated;
    auto counts   = to_vector(t.type_counts);
    batch.node_offsets.push_back(offset + t.n_nodes());
    batch.source_offsets.push_back(batch.source_offsets.back() + counts[NodeTypes::kIn]);
    batch.output_offsets.push_back(batch.output_offsets.back() + counts[NodeTypes::kOut]);
    for (size_t type = 0; type < counts.size(); ++type)
      batch.type_offsets[type].push_back(batch.type_offsets[type].back() + counts[type]);
  }
  u.node_types  = at::cat(node_types);
  u.edge_index  = at::cat(edge_index, 1);
  u.edge_ports  = at::cat(edge_ports, 0);
  u.type_counts = at::zeros({types.size()}, at::kLong);
  for (const GraphTensor& t : graphs) u.type_counts += t.type_counts;
  return batch;
}

}  // namespace grafx
