#pragma once
/// The mutable audio processing graph: a directed acyclic multigraph of typed nodes whose edges
/// are cables from an outlet of one node to an inlet of another.
///
///   Graph g(types);
///   NodeId in = g.add("in", "vocals");
///   auto [first, last] = g.add_serial_chain({"eq", "compressor", "reverb"});
///   NodeId out = g.add("out");
///   g.connect(in, first);
///   g.connect(last, out);
///   g.check();   // throws on an unconnected inlet or a missing in/out
///
/// Node ids are never reused: removing a node leaves a gap, and the next node gets a fresh id.
/// Every mutation either succeeds or throws a GraphError and leaves the graph unchanged.
/// Parallel edges between one pair of nodes are allowed when their ports differ; an edge that
/// repeats an existing one (same nodes, same ports), a self-loop, or an edge that would close a
/// cycle is rejected when added.

#include <grafx/graph/node_types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace grafx {

class GraphError;

using NodeId = int64_t;

/// What a graph says of a node beyond its type and edges: one record that travels whole through
/// the graph, its tensor form (GraphTensor::node_properties) and render plans
/// (RenderPlan::node_properties).
struct NodeProperties {
  std::string name;  ///< optional, free text (e.g. "bass.eq")
  /// Carries a learnable wet amount w: the node renders w·f(u) + (1 − w)·dry(u), where dry(u)
  /// is what a bypassed node passes on (see NodeTypes::passed_inlet). Its raw value is its row
  /// of the type's wet amounts (TypeParameters::wet, [N_t, 1], w = σ(raw)).
  bool dry_wet = false;
  /// Renders as bypassed (w = 0): its inputs pass through, its parameters are kept.
  bool bypassed = false;
  /// Raw names of the parameters it automates (sorted): their values follow curves on the
  /// graph's automation clock (Graph::automation), kept in the type's curves
  /// (TypeParameters::curves, [N_t, points, shape...]), instead of staying constant. The wet
  /// amount's raw name is "dry_wet" (dry_wet_spec()).
  std::vector<std::string> automated;

  bool operator==(const NodeProperties& o) const {
    return name == o.name && dry_wet == o.dry_wet && bypassed == o.bypassed &&
           automated == o.automated;
  }
  bool operator!=(const NodeProperties& o) const { return !(*this == o); }
};

struct Node : NodeProperties {
  NodeId id   = -1;
  TypeId type = -1;

  const NodeProperties& properties() const { return *this; }
  bool operator==(const Node& o) const {
    return id == o.id && type == o.type && properties() == o.properties();
  }
};

/// The clock of a graph's automation curves: point i of every curve lies at i / rate_hz
/// seconds of the song; values between points are interpolated linearly in the raw value, and
/// before the first point and after the last they hold.
struct Automation {
  double rate_hz = 10.0;  ///< points per second (the automation rate)
  int64_t points = 1;     ///< points per curve, 1 and up

  double seconds() const { return double(points - 1) / rate_hz; }
  bool operator==(const Automation& o) const { return rate_hz == o.rate_hz && points == o.points; }
  bool operator!=(const Automation& o) const { return !(*this == o); }
};

/// An edge from outlet `outlet` of `source` to inlet `inlet` of `dest` (port indices).
struct Edge {
  NodeId source  = -1;
  NodeId dest    = -1;
  int64_t outlet = 0;
  int64_t inlet  = 0;

  bool operator==(const Edge& o) const {
    return source == o.source && dest == o.dest && outlet == o.outlet && inlet == o.inlet;
  }
  bool operator!=(const Edge& o) const { return !(*this == o); }
  bool operator<(const Edge& o) const {
    if (source != o.source) return source < o.source;
    if (dest != o.dest) return dest < o.dest;
    if (outlet != o.outlet) return outlet < o.outlet;
    return inlet < o.inlet;
  }
};

/// A problem found by `Graph::validate()`: a stable code, the node concerned, a message.
struct ValidationIssue {
  std::string code;
  NodeId node = -1;  ///< -1 when the issue concerns the whole graph
  std::string message;
};

class Graph {
 public:
  explicit Graph(NodeTypes types = NodeTypes());

  const NodeTypes& types() const { return types_; }
  /// Declares another node type (see NodeTypes::add).
  TypeId add_type(const NodeType& type) { return types_.add(type); }

  // ---- building --------------------------------------------------------------------------

  /// Adds a node of a known type; returns its id.
  NodeId add(const std::string& type, const std::string& name = "");
  /// Adds a node with a chosen, unused id (used by the file loader to keep ids exactly).
  NodeId insert(NodeId id, const std::string& type, const std::string& name = "");
  /// Adds a chain of nodes connected main -> main; returns (first, last). Names are optional
  /// and, when given, must be one per type.
  std::pair<NodeId, NodeId> add_serial_chain(const std::vector<std::string>& types,
                                             const std::vector<std::string>& names = {});
  /// Connects `outlet` of `source` to `inlet` of `dest`.
  void connect(NodeId source, NodeId dest, const std::string& outlet = "main",
               const std::string& inlet = "main");
  /// An edge to connect by port names (see connect_all).
  struct PortEdge {
    NodeId source = -1, dest = -1;
    std::string outlet = "main", inlet = "main";
  };
  /// Connects the edges in turn, as `connect` for each would, with the same checks and the
  /// same first error (`on_error(i, error)` is called with the failing edge's index and may
  /// throw another; the error is thrown as it is otherwise), in time linear in the graph's size
  /// (`connect` searches for a cycle for each edge: a file's 40,000-edge chain listed
  /// backwards would take minutes). Nothing is connected when one fails.
  void connect_all(const std::vector<PortEdge>& edges,
                   const std::function<void(size_t, const GraphError&)>& on_error = {});
  /// Removes one edge; throws [grafx.graph.unknown_edge] if it does not exist.
  void disconnect(NodeId source, NodeId dest, const std::string& outlet = "main",
                  const std::string& inlet = "main");
  /// Removes a node and its edges; returns the removed edges (incoming first).
  std::vector<Edge> remove(NodeId id);
  /// Removes a processor node and connects each source that fed it to each destination it fed,
  /// each outlet passing on its NodeTypes::passed_inlet (so a bypassed crossover sends
  /// everything to `low`, and a bypassed sidechain compressor drops its sidechain). Throws if
  /// the new edges would duplicate existing ones. An outlet that passes nothing (a send's, a
  /// crossover's `high`) leaves its destinations without that input: a mix, or a node marked
  /// bypassed, left with an inlet fed by nothing is removed in turn (what renders is unchanged);
  /// any other node left so refuses the bypass [grafx.graph.invalid_bypass], and nothing
  /// changes. Returns the removed nodes, `id` first.
  std::vector<NodeId> bypass(NodeId id);
  void set_name(NodeId id, const std::string& name);
  /// Sets all of a node's properties, each checked as its own setter checks it (nothing is set
  /// when one is refused).
  void set_properties(NodeId id, const NodeProperties& properties);
  /// Gives a processor node a learnable wet amount, or takes it away; throws
  /// [grafx.graph.node_property] for in, out and mix nodes.
  void set_dry_wet(NodeId id, bool dry_wet = true);
  /// Marks a processor node bypassed (kept in the graph, rendered as a pass-through), or not;
  /// throws [grafx.graph.node_property] for in, out and mix nodes.
  void set_bypassed(NodeId id, bool bypassed = true);
  /// Lets a processor node's parameter `parameter` (a raw name) follow an automation curve, or
  /// stay constant; throws [grafx.graph.node_property] for in, out and mix nodes and for a name
  /// that is not a parameter name. Which parameters a processor can automate is checked where
  /// processors are known (renders refuse the others: [grafx.render.automation]).
  void set_automated(NodeId id, const std::string& parameter, bool automated = true);
  /// The clock of the graph's automation curves (used when any node automates a parameter).
  const Automation& automation() const { return automation_; }
  /// Throws [grafx.graph.automation] for a rate that is not positive and finite or fewer than
  /// one point.
  void set_automation(const Automation& automation);
  /// Whether any node automates a parameter.
  bool has_automation() const;
  /// Makes `add` hand out ids from at least `next_id` on (ids of removed nodes stay retired).
  void reserve_ids(NodeId next_id) { next_id_ = std::max(next_id_, next_id); }

  // ---- queries ---------------------------------------------------------------------------

  bool contains(NodeId id) const { return nodes_.count(id) > 0; }
  /// Throws [grafx.graph.unknown_node].
  const Node& node(NodeId id) const;
  const std::string& type_name(NodeId id) const { return types_.name(node(id).type); }
  /// Ids of all nodes, ascending.
  std::vector<NodeId> nodes() const;
  std::vector<NodeId> nodes_of_type(const std::string& type) const;
  int64_t n_nodes() const { return static_cast<int64_t>(nodes_.size()); }
  int64_t n_edges() const { return n_edges_; }
  /// The id the next `add` will return.
  NodeId next_id() const { return next_id_; }
  /// Edges into a node, sorted by (inlet, source, outlet).
  const std::vector<Edge>& in_edges(NodeId id) const;
  /// Edges out of a node, sorted by (outlet, dest, inlet).
  const std::vector<Edge>& out_edges(NodeId id) const;
  /// All edges, sorted by (source, dest, outlet, inlet).
  std::vector<Edge> edges() const;
  bool has_edge(const Edge& edge) const;
  /// Distinct neighbours, ascending.
  std::vector<NodeId> predecessors(NodeId id) const;
  std::vector<NodeId> successors(NodeId id) const;
  /// Number of nodes of each type, indexed by TypeId.
  std::vector<int64_t> count_per_type() const;
  /// A topological order; among ready nodes the smallest id comes first (deterministic).
  std::vector<NodeId> topological_order() const;

  /// Problems that make the graph unrenderable: no `in`, no `out`, a non-`in` node with an
  /// unconnected inlet. Empty when the graph is valid.
  std::vector<ValidationIssue> validate() const;
  /// Throws a GraphError for the first problem validate() finds.
  void check() const;

  /// "node 5 (eq "bass.eq")": how messages name a node.
  std::string describe(NodeId id) const;
  /// "5.main -> 7.sidechain": how messages name an edge.
  std::string describe(const Edge& edge) const;
  /// A listing in the style of GRAFX: one line per node with its outgoing edges.
  std::string to_string() const;

  bool operator==(const Graph& other) const;
  bool operator!=(const Graph& other) const { return !(*this == other); }

 private:
  struct NodeData {
    Node node;
    std::vector<Edge> in;
    std::vector<Edge> out;
  };
  NodeData& data(NodeId id);
  const NodeData& data(NodeId id) const;
  Edge resolve(NodeId source, NodeId dest, const std::string& outlet,
               const std::string& inlet) const;
  void check_new_edge(const Edge& edge) const;
  void insert_edge(const Edge& edge);
  /// Removes one node, connecting what fed it to what it fed as passed_inlet says (bypass).
  void bypass_one(NodeId id);
  /// Whether the edges, added to the graph's, would make a cycle (Kahn's algorithm, linear).
  bool closes_cycle(const std::vector<Edge>& added) const;
  void erase_edge(const Edge& edge);

  NodeTypes types_;
  std::map<NodeId, NodeData> nodes_;
  NodeId next_id_  = 0;
  int64_t n_edges_ = 0;
  Automation automation_;
};

}  // namespace grafx
