#include <grafx/graph/random_graph.h>

#include <random>

namespace grafx {

NodeTypes random_graph_types(const RandomGraphOptions& options) {
  NodeTypes types;
  for (int64_t t = 0; t < options.n_types; ++t) types.add("p" + std::to_string(t));
  if (options.multi_port) {
    types.add({"split", {"main"}, {"low", "high"}});
    types.add({"duck", {"main", "side"}, {"main"}});
  }
  return types;
}

Graph random_graph(uint64_t seed, const RandomGraphOptions& options) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  NodeTypes types = random_graph_types(options);
  Graph g(types);
  std::vector<NodeId> producers;  // nodes with outlets, in creation order
  for (int64_t i = 0; i < options.n_inputs; ++i) producers.push_back(g.add("in"));
  // Processor types, plus mix; each new node's inlets take random earlier outlets (acyclic).
  std::vector<std::string> choices;
  for (TypeId t = NodeTypes::kMix; t < types.size(); ++t) choices.push_back(types.name(t));
  auto random_outlet = [&](NodeId source) {
    const auto& outlets = types[g.node(source).type].outlets;
    return outlets[size_t(pick(int64_t(outlets.size())))];
  };
  auto try_connect = [&](NodeId s, NodeId d, const std::string& outlet, const std::string& inlet) {
    if (!g.has_edge({s, d, types.outlet_index(g.node(s).type, outlet),
                     types.inlet_index(g.node(d).type, inlet)}))
      g.connect(s, d, outlet, inlet);
  };
  for (int64_t i = 0; i < options.n_processors; ++i) {
    NodeId node = g.add(choices[size_t(pick(int64_t(choices.size())))]);
    // Prefer recent producers, so graphs have depth, not just width.
    for (const auto& inlet : types[g.node(node).type].inlets) {
      int64_t back  = std::min<int64_t>(int64_t(producers.size()), 1 + pick(4));
      NodeId source = producers[producers.size() - size_t(back)];
      try_connect(source, node, random_outlet(source), inlet);
      if (rng() % 1000 < uint64_t(options.extra_edge_rate * 1000)) {
        NodeId other = producers[size_t(pick(int64_t(producers.size())))];
        try_connect(other, node, random_outlet(other), inlet);
      }
    }
    producers.push_back(node);
  }
  // Outputs take the last nodes and some random ones; nodes left without a path are dead.
  for (int64_t o = 0; o < options.n_outputs; ++o) {
    NodeId out = g.add("out");
    try_connect(producers.back(), out, random_outlet(producers.back()), "main");
    for (int k = 0; k < 2; ++k) {
      NodeId other = producers[size_t(pick(int64_t(producers.size())))];
      try_connect(other, out, random_outlet(other), "main");
    }
  }
  return g;
}

}  // namespace grafx
