#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

std::vector<int64_t> values(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

Graph example() {
  NodeTypes types;
  types.add("eq");
  types.add({"crossover", {"main"}, {"low", "high"}});
  Graph g(types);
  g.add("out");              // 0 -> row 0
  NodeId in  = g.add("in");  // 1 -> row 1
  NodeId gap = g.add("eq");
  NodeId x   = g.add("crossover");  // 3 -> row 2
  NodeId e   = g.add("eq");         // 4 -> row 3
  g.remove(gap);
  g.connect(in, x);
  g.connect(x, e, "high");
  g.connect(x, 0, "low");
  g.connect(e, 0);
  return g;
}

TEST(GraphTensor, DescribesTheGraph) {
  Graph g       = example();
  GraphTensor t = to_tensor(g);
  EXPECT_EQ(t.n_nodes(), 4);
  EXPECT_EQ(t.n_edges(), 4);
  EXPECT_EQ(t.node_ids, (std::vector<NodeId>{0, 1, 3, 4}));
  EXPECT_EQ(values(t.node_types), (std::vector<int64_t>{1, 0, 4, 3}));
  // Sorted by (dest, inlet, source, outlet): x.low->out, e->out, in->x, x.high->e.
  EXPECT_EQ(values(t.edge_index), (std::vector<int64_t>{2, 3, 1, 2, /*dests*/ 0, 0, 2, 3}));
  EXPECT_EQ(values(t.edge_ports), (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(values(t.type_counts), (std::vector<int64_t>{1, 1, 0, 1, 1}));
  EXPECT_EQ(t.edge_index.scalar_type(), at::kLong);
  EXPECT_EQ(t.to_string(),
            "GraphTensor(node_types=[4], edge_index=[2, 4], edge_ports=[4, 2], n_types=5)");
  EXPECT_EQ(to_graph(t), g);
}

TEST(GraphTensor, EmptyGraph) {
  GraphTensor t = to_tensor(Graph());
  EXPECT_EQ(t.n_nodes(), 0);
  EXPECT_EQ(t.n_edges(), 0);
  EXPECT_EQ(t.edge_index.sizes(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(t.edge_ports.sizes(), (std::vector<int64_t>{0, 2}));
}

TEST(GraphTensor, BatchingJoinsGraphsAndSplitsBack) {
  ConsoleOptions small;
  small.n_tracks = 2;
  ConsoleOptions big;
  big.n_tracks         = 5;
  big.track_groups     = ConsoleOptions::even_groups(5, 2);
  GraphTensor a        = to_tensor(build_console(small).graph);
  GraphTensor b        = to_tensor(build_console(big).graph);
  GraphBatch batch     = batch_graphs({a, b, a});
  const GraphTensor& u = batch.graph;
  ASSERT_EQ(batch.n_graphs(), 3);
  EXPECT_EQ(u.n_nodes(), 2 * a.n_nodes() + b.n_nodes());
  EXPECT_EQ(u.n_edges(), 2 * a.n_edges() + b.n_edges());
  EXPECT_EQ(batch.node_offsets,
            (std::vector<int64_t>{0, a.n_nodes(), a.n_nodes() + b.n_nodes(), u.n_nodes()}));
  EXPECT_EQ(batch.source_offsets, (std::vector<int64_t>{0, 2, 7, 9}));
  EXPECT_EQ(batch.output_offsets, (std::vector<int64_t>{0, 1, 2, 3}));
  TypeId eq = u.types.id("eq");
  EXPECT_EQ(batch.type_offsets[size_t(eq)], (std::vector<int64_t>{0, 2, 9, 11}));
  // Graph b's part of the union is b, shifted by its offset.
  auto index   = values(u.edge_index);
  auto b_index = values(b.edge_index);
  int64_t e0 = a.n_edges(), offset = a.n_nodes();
  for (int64_t e = 0; e < b.n_edges(); ++e) {
    EXPECT_EQ(index[size_t(e0 + e)], b_index[size_t(e)] + offset);
    EXPECT_EQ(index[size_t(u.n_edges() + e0 + e)], b_index[size_t(b.n_edges() + e)] + offset);
  }
  // No edge crosses graphs.
  for (int64_t e = 0; e < u.n_edges(); ++e) {
    auto graph_of = [&](int64_t row) {
      return std::upper_bound(batch.node_offsets.begin(), batch.node_offsets.end(), row) -
             batch.node_offsets.begin();
    };
    EXPECT_EQ(graph_of(index[size_t(e)]), graph_of(index[size_t(u.n_edges() + e)]));
  }
  // Splitting outputs and parameters back per graph.
  at::Tensor outputs = at::arange(3).view({1, 3, 1});
  auto parts         = batch.split_outputs(outputs, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].item<int64_t>(), 1);
  auto eq_parts = batch.split_parameters(eq, at::arange(11), 0);
  EXPECT_EQ(eq_parts[1].size(0), 7);
  EXPECT_EQ(eq_parts[1][0].item<int64_t>(), 2);
  EXPECT_GRAFX_ERROR(batch.split_outputs(at::zeros({4}), 0), "grafx.graph.batch",
                     "expected 3 outputs along dimension 0, but got 4");
}

TEST(GraphTensor, BatchingErrors) {
  EXPECT_GRAFX_ERROR(batch_graphs({}), "grafx.graph.batch", "empty list");
  GraphTensor a     = to_tensor(build_console({}).graph);
  GraphTensor other = to_tensor(Graph());
  EXPECT_GRAFX_ERROR(batch_graphs({a, other}), "grafx.graph.batch",
                     "graph 1 has other node types than graph 0");
}

}  // namespace
}  // namespace grafx
