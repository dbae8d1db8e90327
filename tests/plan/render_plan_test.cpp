// Render plans: the printed form, reordering, and the plan executed step by step in plain C++
// (gather, sum, process, write) against a direct evaluation of the graph, on random multi-port
// graphs under every schedule method.

#include <grafx/graph/console.h>
#include <grafx/graph/random_graph.h>
#include <grafx/plan/render_plan.h>
#include <grafx/schedule/reorder.h>

#include "support/test_support.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <random>

namespace grafx {
namespace {

/// GRAFX's documentation example: three in -> eq -> compressor -> reverb chains into one out.
Graph three_chains() {
  Graph g(console_node_types());
  NodeId out = g.add("out");
  for (int i = 0; i < 3; ++i) {
    NodeId in          = g.add("in");
    auto [first, last] = g.add_serial_chain({"eq", "compressor", "reverb"});
    g.connect(in, first);
    g.connect(last, out);
  }
  return g;
}

TEST(RenderPlan, PrintsLikeGrafxDocumentation) {
  RenderPlan plan = make_render_plan(to_tensor(three_chains()), {ScheduleMethod::kBeam});
  EXPECT_EQ(
      plan.to_string(),
      "RenderPlan: 13 nodes in 5 steps (3 processor calls), method beam, buffer of 12 rows\n"
      "Render #0\n  - Node type: in\n  - Source read: sources slice with (0, 3)\n"
      "  - Aggregation: none\n  - Parameter read: none\n  - Dest write: slice with (0, 3)\n"
      "Render #1\n  - Node type: eq\n  - Source read: slice with (0, 3)\n  - Aggregation: none\n"
      "  - Parameter read: slice with (0, 3)\n  - Dest write: slice with (3, 6)\n"
      "Render #2\n  - Node type: compressor\n  - Source read: slice with (3, 6)\n"
      "  - Aggregation: none\n  - Parameter read: slice with (0, 3)\n  - Dest write: slice with "
      "(6, 9)\n"
      "Render #3\n  - Node type: reverb\n  - Source read: slice with (6, 9)\n"
      "  - Aggregation: none\n  - Parameter read: slice with (0, 3)\n  - Dest write: slice with "
      "(9, 12)\n"
      "Render #4\n  - Node type: out\n  - Source read: slice with (9, 12)\n  - Aggregation: sum\n"
      "  - Parameter read: none\n  - Dest write: none\n");
  EXPECT_EQ(plan.n_calls(), 3);
  EXPECT_EQ(plan.n_outputs(), 1);
  EXPECT_EQ(plan.source_index, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(plan.node_ids[3], 2) << "the first eq (id 2) comes right after the inputs";
  for (TypeId t = 0; t < plan.types.size(); ++t) EXPECT_TRUE(plan.parameters_in_graph_order(t));
}

TEST(RenderPlan, RowAccess) {
  EXPECT_EQ(RowAccess::of({}).to_string(), "none");
  EXPECT_EQ(RowAccess::of({4, 5, 6}).to_string(), "slice with (4, 7)");
  EXPECT_EQ(RowAccess::of({4, 6}).to_string(), "index with [4, 6]");
  EXPECT_EQ(RowAccess::of({5, 4}).kind, RowAccess::Kind::kIndex);
  EXPECT_EQ(RowAccess::of({4, 5, 6}).rows(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(RowAccess::of({4, 6}).size(), 2);
}

TEST(RenderPlan, MultiPortRowsAreOutletMajorAndSegmentSummed) {
  NodeTypes types = console_node_types();
  types.add({"crossover", {"main"}, {"low", "high"}});
  types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  Graph g(types);
  NodeId a = g.add("in"), b = g.add("in");
  NodeId xa = g.add("crossover"), xb = g.add("crossover");
  NodeId sa = g.add("sidechain_compressor"), sb = g.add("sidechain_compressor");
  NodeId out = g.add("out");
  g.connect(a, xa);
  g.connect(b, xb);
  g.connect(xa, sa, "low");
  g.connect(xb, sa, "high", "sidechain");
  g.connect(xa, sa, "high", "sidechain");  // parallel edge, other ports
  g.connect(xb, sb, "low");
  g.connect(xa, sb, "low", "sidechain");
  g.connect(sa, out);
  g.connect(sb, out);
  RenderPlan plan = make_render_plan(to_tensor(g), {ScheduleMethod::kOptimal});
  ASSERT_EQ(plan.steps.size(), 4u);
  // Crossovers write rows 2..5: low of both nodes, then high of both.
  EXPECT_EQ(plan.steps[1].writes.to_string(), "slice with (2, 6)");
  const PlanStep& duck = plan.steps[2];
  ASSERT_EQ(duck.reads.size(), 2u);
  EXPECT_EQ(duck.reads[0].inlet, "main");
  EXPECT_EQ(duck.reads[0].rows.to_string(), "slice with (2, 4)");  // xa.low, xb.low
  EXPECT_EQ(duck.reads[0].aggregation, Aggregation::kNone);
  EXPECT_EQ(duck.reads[1].inlet, "sidechain");
  EXPECT_EQ(duck.reads[1].rows.to_string(), "index with [4, 5, 2]");  // xa.high, xb.high | xa.low
  EXPECT_EQ(duck.reads[1].aggregation, Aggregation::kSegmentSum);
  EXPECT_EQ(duck.reads[1].segments, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(plan.n_buffer_rows, 2 + 4 + 2);
  EXPECT_NE(plan.to_string().find("Source read <sidechain>: index with [4, 5, 2]"),
            std::string::npos);
  EXPECT_NE(plan.to_string().find("Aggregation <sidechain>: segment-sum into [0, 0, 1]"),
            std::string::npos);
}

TEST(RenderPlan, JsonCarriesEverything) {
  RenderPlan plan = make_render_plan(to_tensor(three_chains()), {ScheduleMethod::kOptimal});
  auto json       = nlohmann::json::parse(plan.to_json());
  EXPECT_EQ(json["format"], "grafx.plan");
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["method"], "optimal");
  EXPECT_EQ(json["proven_optimal"], true);
  EXPECT_EQ(json["n_calls"], 3);
  EXPECT_EQ(json["steps"].size(), 5u);
  EXPECT_EQ(json["steps"][1]["reads"][0]["rows"]["slice"], nlohmann::json({0, 3}));
  EXPECT_EQ(json["steps"][4]["reads"][0]["aggregation"], "sum");
  EXPECT_TRUE(json["steps"][4]["writes"].is_null());
  EXPECT_EQ(json["nodes"].size(), 13u);
}

TEST(RenderPlan, ReorderingMakesStepsContiguous) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    RandomGraphOptions options;
    options.n_processors = 25;
    GraphTensor g        = to_tensor(random_graph(seed, options));
    Schedule s           = schedule_graph(g, {ScheduleMethod::kGreedy});
    Reordering r         = reorder_for_render(g, s);
    EXPECT_EQ(r.graph.n_nodes(), g.n_nodes() - int64_t(s.dead_rows.size()));
    int64_t next = 0;
    for (const auto& step : r.schedule.steps)
      for (int64_t row : step) EXPECT_EQ(row, next++) << "steps are consecutive rows";
    for (int64_t row = 0; row < r.graph.n_nodes(); ++row)
      EXPECT_EQ(r.new_rows[size_t(r.old_rows[size_t(row)])], row);
    check_schedule(r.graph, r.schedule, true);
    EXPECT_EQ(to_graph(r.graph).n_edges(), r.graph.n_edges());
  }
}

// ---- executing a plan without tensors ----------------------------------------------------

using Signal = std::array<double, 3>;

/// A node's processing: outlet o = tanh(Σ_i w[i][o] · inlet_i) + bias[o], with weights given by
/// the node's parameters (looked up by type and graph-order rank).
struct Toy {
  std::map<std::pair<TypeId, int64_t>, std::vector<double>> parameters;
  std::mt19937_64 rng{7};
  const std::vector<double>& of(TypeId type, int64_t rank, size_t size) {
    auto& p = parameters[{type, rank}];
    while (p.size() < size) p.push_back(std::uniform_real_distribution<double>(-1, 1)(rng));
    return p;
  }
  std::vector<Signal> process(TypeId type, int64_t rank, const NodeTypes& types,
                              const std::vector<Signal>& inputs) {
    if (type == NodeTypes::kMix) return inputs;
    size_t n_in = size_t(types.n_inlets(type)), n_out = size_t(types.n_outlets(type));
    const auto& w = of(type, rank, n_in * n_out + n_out);
    std::vector<Signal> outputs(n_out);
    for (size_t o = 0; o < n_out; ++o)
      for (size_t c = 0; c < 3; ++c) {
        double sum = 0;
        for (size_t i = 0; i < n_in; ++i) sum += w[i * n_out + o] * inputs[i][c];
        outputs[o][c] = std::tanh(sum) + w[n_in * n_out + o];
      }
    return outputs;
  }
};

/// Direct evaluation in topological order: the naive reference.
std::vector<Signal> evaluate(const Graph& g, const std::vector<Signal>& sources, Toy& toy) {
  std::map<NodeId, std::vector<Signal>> outputs;
  std::map<NodeId, int64_t> rank;
  std::vector<int64_t> seen(size_t(g.types().size()), 0);
  for (NodeId id : g.nodes()) rank[id] = seen[size_t(g.node(id).type)]++;
  std::vector<Signal> results;
  for (NodeId id : g.topological_order()) {
    TypeId type = g.node(id).type;
    if (type == NodeTypes::kIn) {
      outputs[id] = {sources[size_t(rank[id])]};
      continue;
    }
    std::vector<Signal> inputs(size_t(g.types().n_inlets(type)), Signal{0, 0, 0});
    for (const Edge& e : g.in_edges(id))
      for (size_t c = 0; c < 3; ++c)
        inputs[size_t(e.inlet)][c] += outputs[e.source][size_t(e.outlet)][c];
    if (type == NodeTypes::kOut)
      results.resize(std::max<size_t>(results.size(), size_t(rank[id]) + 1));
    if (type == NodeTypes::kOut)
      results[size_t(rank[id])] = inputs[0];
    else
      outputs[id] = toy.process(type, rank[id], g.types(), inputs);
  }
  return results;
}

/// The plan executed row by row.
std::vector<Signal> execute(const RenderPlan& plan, const std::vector<Signal>& sources, Toy& toy) {
  std::vector<Signal> buffer(size_t(plan.n_buffer_rows));
  std::vector<Signal> results;
  for (const PlanStep& step : plan.steps) {
    const int64_t m = int64_t(step.nodes.size());
    if (step.type == NodeTypes::kIn) {
      auto rows = step.writes.rows();
      for (int64_t p = 0; p < m; ++p)
        buffer[size_t(rows[size_t(p)])] = sources[size_t(plan.source_index[size_t(p)])];
      continue;
    }
    std::vector<std::vector<Signal>> inputs(
        size_t(m), std::vector<Signal>(step.reads.size(), Signal{0, 0, 0}));
    for (size_t i = 0; i < step.reads.size(); ++i) {
      const InletRead& read = step.reads[i];
      auto rows             = read.rows.rows();
      for (size_t k = 0; k < rows.size(); ++k) {
        int64_t p = read.aggregation == Aggregation::kNone  ? int64_t(k)
                    : read.aggregation == Aggregation::kSum ? 0
                                                            : read.segments[k];
        for (size_t c = 0; c < 3; ++c) inputs[size_t(p)][i][c] += buffer[size_t(rows[k])][c];
      }
    }
    if (step.type == NodeTypes::kOut) {
      for (int64_t p = 0; p < m; ++p) results.push_back(inputs[size_t(p)][0]);
      continue;
    }
    auto parameter_rows = step.parameter_rows.rows();
    auto written        = step.writes.rows();
    for (int64_t p = 0; p < m; ++p) {
      int64_t rank =
          step.type == NodeTypes::kMix
              ? 0
              : plan.parameter_graph_rows[size_t(step.type)][size_t(parameter_rows[size_t(p)])];
      auto outputs = toy.process(step.type, rank, plan.types, inputs[size_t(p)]);
      for (size_t o = 0; o < outputs.size(); ++o)
        buffer[size_t(written[o * size_t(m) + size_t(p)])] = outputs[o];
    }
  }
  return results;
}

TEST(RenderPlan, ExecutingThePlanEqualsDirectEvaluation) {
  for (uint64_t seed = 0; seed < 500; ++seed) {
    RandomGraphOptions options;
    options.n_processors = 5 + int64_t(seed % 30);
    options.n_inputs     = 1 + int64_t(seed % 3);
    options.n_outputs    = 1 + int64_t(seed % 2);
    Graph g              = random_graph(seed, options);
    std::vector<Signal> sources;
    std::mt19937_64 rng(seed);
    for (int64_t k = 0; k < options.n_inputs; ++k)
      sources.push_back({double(rng() % 100) / 50 - 1, double(rng() % 100) / 50 - 1, 0.5});
    Toy toy;
    auto expected = evaluate(g, sources, toy);
    for (auto method : {ScheduleMethod::kOneByOne, ScheduleMethod::kGreedy, ScheduleMethod::kBeam,
                        ScheduleMethod::kOptimal}) {
      RenderPlan plan = make_render_plan(to_tensor(g), {method});
      auto got        = execute(plan, sources, toy);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t o = 0; o < got.size(); ++o)
        for (size_t c = 0; c < 3; ++c)
          ASSERT_NEAR(got[o][c], expected[o][c], 1e-12)
              << "seed " << seed << ", " << to_string(method);
    }
  }
}

}  // namespace
}  // namespace grafx
