#include <grafx/graph/graph.h>
#include <grafx/graph/graph_tensor.h>

#include "support/test_support.h"

#include <random>

namespace grafx {
namespace {

NodeTypes test_types() {
  NodeTypes types;
  types.add("eq");
  types.add("compressor");
  types.add("reverb");
  types.add({"crossover", {"main"}, {"low", "high"}});
  types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  types.add("send");
  return types;
}

TEST(Graph, AddAssignsFreshIdsAndNames) {
  Graph g(test_types());
  EXPECT_EQ(g.add("in", "vocals"), 0);
  EXPECT_EQ(g.add("eq"), 1);
  EXPECT_EQ(g.node(0).name, "vocals");
  EXPECT_EQ(g.type_name(1), "eq");
  EXPECT_EQ(g.n_nodes(), 2);
  g.remove(1);
  EXPECT_EQ(g.add("eq"), 2) << "ids are never reused";
  EXPECT_FALSE(g.contains(1));
  EXPECT_EQ(g.next_id(), 3);
  g.set_name(2, "lead.eq");
  EXPECT_EQ(g.node(2).name, "lead.eq");
  EXPECT_EQ(g.insert(10, "reverb"), 10);
  EXPECT_EQ(g.next_id(), 11);
  g.reserve_ids(20);
  EXPECT_EQ(g.add("mix"), 20);
}

TEST(Graph, SerialChainConnectsMainToMain) {
  Graph g(test_types());
  auto [first, last] = g.add_serial_chain({"eq", "compressor", "reverb"}, {"a", "b", "c"});
  EXPECT_EQ(first, 0);
  EXPECT_EQ(last, 2);
  EXPECT_EQ(g.n_edges(), 2);
  EXPECT_TRUE(g.has_edge({0, 1, 0, 0}));
  EXPECT_TRUE(g.has_edge({1, 2, 0, 0}));
  EXPECT_EQ(g.node(1).name, "b");
  auto single = g.add_serial_chain({"eq"});
  EXPECT_EQ(single.first, single.second);
}

TEST(Graph, SerialChainIsAllOrNothing) {
  Graph g(test_types());
  EXPECT_GRAFX_ERROR(g.add_serial_chain({"eq", "nope"}), "grafx.graph.unknown_type", "nope");
  EXPECT_GRAFX_ERROR(g.add_serial_chain({"eq", "in"}), "grafx.graph.unknown_port",
                     "has no inlet \"main\"");
  EXPECT_GRAFX_ERROR(g.add_serial_chain({}), "grafx.graph.empty_chain", "at least one");
  EXPECT_GRAFX_ERROR(g.add_serial_chain({"eq", "eq"}, {"x"}), "grafx.graph.empty_chain",
                     "needs as many names");
  EXPECT_EQ(g.n_nodes(), 0);
}

TEST(Graph, QueriesEdgesAndNeighbours) {
  Graph g(test_types());
  NodeId in  = g.add("in");
  NodeId x   = g.add("crossover");
  NodeId sc  = g.add("sidechain_compressor");
  NodeId out = g.add("out");
  g.connect(in, x);
  g.connect(x, sc, "low", "main");
  g.connect(x, sc, "high", "sidechain");  // parallel edge, other ports: allowed
  g.connect(sc, out);
  EXPECT_EQ(g.n_edges(), 4);
  EXPECT_EQ(g.in_edges(sc).size(), 2u);
  EXPECT_EQ(g.in_edges(sc)[0].inlet, 0);
  EXPECT_EQ(g.in_edges(sc)[1].inlet, 1);
  EXPECT_EQ(g.out_edges(x).size(), 2u);
  EXPECT_EQ(g.predecessors(sc), std::vector<NodeId>{x});
  EXPECT_EQ(g.successors(x), std::vector<NodeId>{sc});
  EXPECT_EQ(g.nodes(), (std::vector<NodeId>{0, 1, 2, 3}));
  EXPECT_EQ(g.nodes_of_type("crossover"), std::vector<NodeId>{x});
  auto counts = g.count_per_type();
  EXPECT_EQ(counts[size_t(g.types().id("crossover"))], 1);
  EXPECT_EQ(counts[NodeTypes::kMix], 0);
  auto edges = g.edges();
  ASSERT_EQ(edges.size(), 4u);
  EXPECT_EQ(edges[0], (Edge{in, x, 0, 0}));
  EXPECT_EQ(edges[1], (Edge{x, sc, 0, 0}));
  EXPECT_EQ(edges[2], (Edge{x, sc, 1, 1}));
  EXPECT_EQ(g.topological_order(), (std::vector<NodeId>{in, x, sc, out}));
  EXPECT_EQ(g.describe(x), "node 1 (crossover)");
  EXPECT_EQ(g.describe(edges[2]), "1.high -> 2.sidechain");
  g.disconnect(x, sc, "high", "sidechain");
  EXPECT_EQ(g.n_edges(), 3);
  EXPECT_GRAFX_ERROR(g.disconnect(x, sc, "high", "sidechain"), "grafx.graph.unknown_edge",
                     "there is no edge 1.high -> 2.sidechain");
}

TEST(Graph, ConnectErrorsNameTheEdgeAndLeaveTheGraphUnchanged) {
  Graph g(test_types());
  NodeId a = g.add("eq", "a");
  NodeId b = g.add("compressor", "b");
  NodeId c = g.add("reverb", "c");
  g.connect(a, b);
  g.connect(b, c);
  EXPECT_GRAFX_ERROR(g.connect(a, a), "grafx.graph.self_loop", "to itself");
  EXPECT_GRAFX_ERROR(g.connect(a, b), "grafx.graph.duplicate_edge", "0.main -> 1.main already");
  EXPECT_GRAFX_ERROR(g.connect(c, a), "grafx.graph.cycle",
                     "would close the cycle node 0 (eq \"a\") -> node 1 (compressor \"b\") -> "
                     "node 2 (reverb \"c\") -> node 0 (eq \"a\")");
  EXPECT_GRAFX_ERROR(g.connect(a, c, "low"), "grafx.graph.unknown_port",
                     "type \"eq\" has no outlet \"low\"");
  EXPECT_GRAFX_ERROR(g.connect(a, c, "main", "sidechain"), "grafx.graph.unknown_port",
                     "edge 0.main -> 2.sidechain");
  EXPECT_GRAFX_ERROR(g.connect(a, 99), "grafx.graph.unknown_node", "no node with id 99");
  EXPECT_GRAFX_ERROR(g.node(99), "grafx.graph.unknown_node", "99");
  EXPECT_GRAFX_ERROR(g.add("chorus"), "grafx.graph.unknown_type", "chorus");
  EXPECT_GRAFX_ERROR(g.insert(1, "eq"), "grafx.graph.duplicate_node", "already used");
  EXPECT_GRAFX_ERROR(g.insert(-3, "eq"), "grafx.graph.invalid_id", "non-negative");
  EXPECT_EQ(g.n_edges(), 2);
  EXPECT_EQ(g.n_nodes(), 3);
}

TEST(Graph, RemoveReturnsTheEdges) {
  Graph g(test_types());
  auto [a, c]  = g.add_serial_chain({"eq", "compressor", "reverb"});
  auto removed = g.remove(1);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0], (Edge{a, 1, 0, 0}));
  EXPECT_EQ(removed[1], (Edge{1, c, 0, 0}));
  EXPECT_EQ(g.n_edges(), 0);
  EXPECT_TRUE(g.out_edges(a).empty());
  EXPECT_GRAFX_ERROR(g.remove(1), "grafx.graph.unknown_node", "1");
}

TEST(Graph, BypassReconnectsEverySourceToEveryDestination) {
  Graph g(test_types());
  NodeId in1 = g.add("in"), in2 = g.add("in");
  NodeId m  = g.add("mix");
  NodeId e  = g.add("eq");
  NodeId r1 = g.add("reverb"), r2 = g.add("reverb");
  g.connect(in1, m);
  g.connect(in2, m);
  g.connect(m, e);
  g.connect(e, r1);
  g.connect(e, r2);
  g.bypass(e);
  EXPECT_FALSE(g.contains(e));
  EXPECT_TRUE(g.has_edge({m, r1, 0, 0}));
  EXPECT_TRUE(g.has_edge({m, r2, 0, 0}));
  g.bypass(m);
  for (NodeId s : {in1, in2})
    for (NodeId d : {r1, r2}) EXPECT_TRUE(g.has_edge({s, d, 0, 0}));
  EXPECT_EQ(g.n_edges(), 4);
}

TEST(Graph, BypassIsPortAware) {
  Graph g(test_types());
  NodeId in = g.add("in"), key = g.add("in");
  NodeId sc = g.add("sidechain_compressor");
  NodeId x  = g.add("crossover");
  NodeId lo = g.add("eq"), hi = g.add("reverb");
  g.connect(in, sc);
  g.connect(key, sc, "main", "sidechain");
  g.connect(sc, x);
  g.connect(x, lo, "low");
  g.connect(x, hi, "high");
  // low passes main on; high has no namesake and is not first: silent, leaving hi with nothing.
  EXPECT_GRAFX_ERROR(g.bypass(x), "grafx.graph.invalid_bypass",
                     "bypassing node 3 (crossover) would leave node 5 (reverb) with nothing at "
                     "its inlet \"main\"");
  g.set_bypassed(hi);  // what hi renders is silence either way: it goes with the crossover
  EXPECT_EQ(g.bypass(x), (std::vector<NodeId>{x, hi}));
  EXPECT_TRUE(g.has_edge({sc, lo, 0, 0}));
  EXPECT_FALSE(g.contains(hi));
  g.bypass(sc);  // main passes main on; the sidechain is dropped
  EXPECT_TRUE(g.has_edge({in, lo, 0, 0}));
  EXPECT_TRUE(g.out_edges(key).empty());
}

TEST(Graph, ABypassedSendPassesNothingAndTakesWithItABusLeftWithNothing) {
  // Two tracks, each to the master and through a send to a reverb bus; one keys a compressor.
  Graph g(test_types());
  EXPECT_EQ(g.types().passed_inlet(g.types().id("send"), 0), -1);
  NodeId a = g.add("in"), b = g.add("in");
  NodeId send_a = g.add("send"), send_b = g.add("send"), send_key = g.add("send");
  NodeId bus = g.add("mix"), reverb = g.add("reverb"), master = g.add("mix");
  NodeId keyed = g.add("sidechain_compressor"), out = g.add("out");
  g.connect(a, send_a), g.connect(b, send_b), g.connect(send_a, bus), g.connect(send_b, bus);
  g.connect(bus, reverb), g.connect(reverb, master);
  g.connect(a, keyed), g.connect(b, send_key), g.connect(send_key, keyed, "main", "sidechain");
  g.connect(keyed, master), g.connect(b, master), g.connect(master, out);
  ASSERT_TRUE(g.validate().empty());

  EXPECT_EQ(g.bypass(send_a), std::vector<NodeId>{send_a});
  EXPECT_TRUE(g.out_edges(a).size() == 1 && g.has_edge({a, keyed, 0, 0})) << "nothing passed";
  const Graph before = g;
  // The last send to the bus would leave the reverb with nothing to process.
  EXPECT_GRAFX_ERROR(g.bypass(send_b), "grafx.graph.invalid_bypass",
                     "bypassing node 3 (send) would leave node 6 (reverb) with nothing at its "
                     "inlet \"main\"");
  EXPECT_GRAFX_ERROR(g.bypass(send_key), "grafx.graph.invalid_bypass",
                     "node 8 (sidechain_compressor) with nothing at its inlet \"sidechain\"");
  EXPECT_EQ(g, before) << "a refused bypass changes nothing";
  // With the reverb marked bypassed, the bus goes with the send: what renders is unchanged.
  g.set_bypassed(reverb);
  EXPECT_EQ(g.bypass(send_b), (std::vector<NodeId>{send_b, bus, reverb}));
  EXPECT_EQ(g.predecessors(master), (std::vector<NodeId>{b, keyed}));
  EXPECT_TRUE(g.validate().empty());
  // A send straight into the output would leave it with nothing.
  Graph direct(test_types());
  NodeId in = direct.add("in"), send = direct.add("send"), sink = direct.add("out");
  direct.connect(in, send), direct.connect(send, sink);
  EXPECT_GRAFX_ERROR(direct.bypass(send), "grafx.graph.invalid_bypass", "node 2 (out)");
}

TEST(Graph, BypassErrors) {
  Graph g(test_types());
  NodeId in  = g.add("in");
  NodeId e   = g.add("eq");
  NodeId out = g.add("out");
  g.connect(in, e);
  g.connect(e, out);
  g.connect(in, out);
  EXPECT_GRAFX_ERROR(g.bypass(in), "grafx.graph.invalid_bypass", "cannot bypass node 0 (in)");
  EXPECT_GRAFX_ERROR(g.bypass(out), "grafx.graph.invalid_bypass", "node 2 (out)");
  EXPECT_GRAFX_ERROR(g.bypass(e), "grafx.graph.duplicate_edge", "0.main -> 2.main");
  EXPECT_TRUE(g.contains(e)) << "a failed bypass changes nothing";
  EXPECT_EQ(g.n_edges(), 3);
}

TEST(Graph, ValidateReportsEveryProblem) {
  Graph empty(test_types());
  auto issues = empty.validate();
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].code, "grafx.graph.no_input");
  EXPECT_EQ(issues[1].code, "grafx.graph.no_output");
  EXPECT_GRAFX_ERROR(empty.check(), "grafx.graph.no_input", "and 1 more problem");

  Graph g(test_types());
  NodeId in  = g.add("in");
  NodeId sc  = g.add("sidechain_compressor", "duck");
  NodeId out = g.add("out");
  g.connect(in, sc);
  g.connect(sc, out);
  issues = g.validate();
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].code, "grafx.graph.unconnected_inlet");
  EXPECT_EQ(issues[0].node, sc);
  EXPECT_GRAFX_ERROR(g.check(), "grafx.graph.unconnected_inlet",
                     "node 1 (sidechain_compressor \"duck\") has nothing connected to its inlet "
                     "\"sidechain\"");
  g.connect(in, sc, "main", "sidechain");
  EXPECT_TRUE(g.validate().empty());
  EXPECT_NO_THROW(g.check());
  Graph lonely(test_types());
  lonely.add("in");
  lonely.add("out");
  EXPECT_GRAFX_ERROR(lonely.check(), "grafx.graph.unconnected_inlet", "node 1 (out)");
}

TEST(Graph, ToStringListsNodesAndEdges) {
  Graph g(test_types());
  NodeId in  = g.add("in", "bass");
  NodeId x   = g.add("crossover");
  NodeId out = g.add("out");
  g.connect(in, x);
  g.connect(x, out, "low");
  g.connect(x, out, "high");
  EXPECT_EQ(g.to_string(),
            "Graph with 3 nodes & 3 edges\n"
            "  [0] in \"bass\" -> [1] crossover\n"
            "  [1] crossover\n"
            "      <low> -> [2] out\n"
            "      <high> -> [2] out\n"
            "  [2] out\n");
}

TEST(Graph, EqualityComparesEverything) {
  Graph a(test_types()), b(test_types());
  a.add_serial_chain({"eq", "reverb"});
  b.add_serial_chain({"eq", "reverb"});
  EXPECT_EQ(a, b);
  b.set_name(0, "x");
  EXPECT_NE(a, b);
  b.set_name(0, "");
  b.disconnect(0, 1);
  EXPECT_NE(a, b);
}

TEST(Graph, NodePropertiesTravelAsOneRecord) {
  Graph g(test_types());
  NodeId in = g.add("in"), eq = g.add("eq");
  NodeProperties properties;
  properties.name      = "bass.eq";
  properties.dry_wet   = true;
  properties.bypassed  = true;
  properties.automated = {"dry_wet", "log_magnitude"};
  g.set_properties(eq, properties);
  EXPECT_EQ(g.node(eq).properties(), properties);
  // Through the tensor form and back, whole.
  GraphTensor t = to_tensor(g);
  ASSERT_EQ(t.node_properties.size(), 2u);
  EXPECT_EQ(t.node_properties[1], properties);
  EXPECT_EQ(to_graph(t), g);
  // Each property is checked as its setter checks it, and nothing is set when one is refused.
  NodeProperties bad = properties;
  bad.automated      = {"log_gain", "not a name"};
  EXPECT_GRAFX_ERROR(g.set_properties(eq, bad), "grafx.graph.node_property",
                     "not a parameter name");
  EXPECT_EQ(g.node(eq).properties(), properties);
  NodeProperties input;
  input.name    = "kick";
  input.dry_wet = true;
  EXPECT_GRAFX_ERROR(g.set_properties(in, input), "grafx.graph.node_property",
                     "only processor nodes have one");
  EXPECT_EQ(g.node(in).properties(), NodeProperties{});
}

TEST(Graph, ConnectAllConnectsAsConnectingInTurnDoes) {
  // Random edge lists, with bad ports, self-loops, duplicates and cycles: connect_all must give
  // the graph, or the first error (same index, same message), of connect called for each.
  std::mt19937 random(7);
  const std::vector<std::string> outlets = {"main", "low", "high", "nope"};
  const std::vector<std::string> inlets  = {"main", "sidechain", "nope"};
  int64_t n_failed = 0, n_cycles = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Graph base(test_types());
    for (const char* type : {"in", "eq", "crossover", "sidechain_compressor", "reverb", "out"})
      base.add(type);
    if (trial % 2) base.connect(0, 1);  // an edge already there
    std::vector<Graph::PortEdge> edges;
    for (int i = 0; i < 1 + trial % 9; ++i) {
      Graph::PortEdge e;
      e.source = int64_t(random() % 5);      // not the out node
      e.dest   = int64_t(1 + random() % 5);  // nor the in node
      e.outlet = random() % 4 ? "main" : outlets[random() % outlets.size()];
      e.inlet  = random() % 4 ? "main" : inlets[random() % inlets.size()];
      edges.push_back(e);
    }
    Graph in_turn = base;
    std::string expected;
    size_t expected_index = edges.size();
    for (size_t i = 0; i < edges.size() && expected.empty(); ++i) {
      try {
        in_turn.connect(edges[i].source, edges[i].dest, edges[i].outlet, edges[i].inlet);
      } catch (const GraphError& e) {
        expected       = e.what();
        expected_index = i;
      }
    }
    Graph at_once = base;
    size_t index  = edges.size();
    try {
      at_once.connect_all(edges, [&](size_t i, const GraphError&) { index = i; });
      EXPECT_TRUE(expected.empty()) << "trial " << trial << ": expected " << expected;
      EXPECT_EQ(at_once, in_turn) << "trial " << trial;
      EXPECT_EQ(at_once.to_string(), in_turn.to_string());
    } catch (const GraphError& e) {
      EXPECT_EQ(e.what(), expected) << "trial " << trial;
      EXPECT_EQ(index, expected_index) << "trial " << trial;
      EXPECT_EQ(at_once, base) << "trial " << trial << ": nothing is connected on failure";
      ++n_failed;
      n_cycles += std::string(e.what()).find("grafx.graph.cycle") != std::string::npos;
    }
  }
  EXPECT_GT(n_failed, 50);
  EXPECT_GT(n_cycles, 10);
}

}  // namespace
}  // namespace grafx
