#include <grafx/error.h>
#include <grafx/graph/graph.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace grafx {
namespace {

/// The inlets of a node of `type` that none of its in-edges `in` feeds, in order.
std::vector<int64_t> unconnected_inlets(const NodeType& type, const std::vector<Edge>& in) {
  std::vector<bool> connected(type.inlets.size(), false);
  for (const Edge& e : in) connected[size_t(e.inlet)] = true;
  std::vector<int64_t> inlets;
  for (size_t i = 0; i < connected.size(); ++i)
    if (!connected[i]) inlets.push_back(int64_t(i));
  return inlets;
}

bool in_order(const Edge& a, const Edge& b) {  // order of a node's in-edges
  return std::tie(a.inlet, a.source, a.outlet) < std::tie(b.inlet, b.source, b.outlet);
}
bool out_order(const Edge& a, const Edge& b) {  // order of a node's out-edges
  return std::tie(a.outlet, a.dest, a.inlet) < std::tie(b.outlet, b.dest, b.inlet);
}

template <class Less>
void insert_sorted(std::vector<Edge>& edges, const Edge& edge, Less less) {
  edges.insert(std::upper_bound(edges.begin(), edges.end(), edge, less), edge);
}

void erase_one(std::vector<Edge>& edges, const Edge& edge) {
  edges.erase(std::find(edges.begin(), edges.end(), edge));
}

struct EdgeHash {
  size_t operator()(const Edge& e) const {
    size_t h = std::hash<int64_t>()(e.source);
    for (int64_t v : {e.dest, e.outlet, e.inlet}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

}  // namespace

Graph::Graph(NodeTypes types) : types_(std::move(types)) {}

Graph::NodeData& Graph::data(NodeId id) {
  return const_cast<NodeData&>(static_cast<const Graph*>(this)->data(id));
}

const Graph::NodeData& Graph::data(NodeId id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end())
    throw GraphError("grafx.graph.unknown_node", "no node with id " + std::to_string(id));
  return it->second;
}

const Node& Graph::node(NodeId id) const { return data(id).node; }
const std::vector<Edge>& Graph::in_edges(NodeId id) const { return data(id).in; }
const std::vector<Edge>& Graph::out_edges(NodeId id) const { return data(id).out; }

std::string Graph::describe(NodeId id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return "node " + std::to_string(id);
  const Node& n    = it->second.node;
  std::string text = "node " + std::to_string(id) + " (" + types_.name(n.type);
  if (!n.name.empty()) text += " \"" + n.name + "\"";
  return text + ")";
}

std::string Graph::describe(const Edge& edge) const {
  auto port = [&](NodeId id, int64_t index, bool outlet) {
    auto it = nodes_.find(id);
    if (it == nodes_.end()) return std::to_string(id);
    const NodeType& type = types_[it->second.node.type];
    const auto& ports    = outlet ? type.outlets : type.inlets;
    std::string name     = index >= 0 && index < static_cast<int64_t>(ports.size())
                               ? ports[static_cast<size_t>(index)]
                               : std::to_string(index);
    return std::to_string(id) + "." + name;
  };
  return port(edge.source, edge.outlet, true) + " -> " + port(edge.dest, edge.inlet, false);
}

NodeId Graph::add(const std::string& type, const std::string& name) {
  return insert(next_id_, type, name);
}

NodeId Graph::insert(NodeId id, const std::string& type, const std::string& name) {
  if (id < 0)
    throw GraphError("grafx.graph.invalid_id",
                     "node ids must be non-negative, but got " + std::to_string(id));
  if (contains(id))
    throw GraphError("grafx.graph.duplicate_node",
                     "node id " + std::to_string(id) + " is already used by " + describe(id));
  TypeId type_id = types_.id(type);
  nodes_[id]     = NodeData{Node{{name}, id, type_id}, {}, {}};
  next_id_       = std::max(next_id_, id + 1);
  return id;
}

std::pair<NodeId, NodeId> Graph::add_serial_chain(const std::vector<std::string>& types,
                                                  const std::vector<std::string>& names) {
  if (types.empty())
    throw GraphError("grafx.graph.empty_chain", "a serial chain needs at least one node type");
  if (!names.empty() && names.size() != types.size())
    throw GraphError("grafx.graph.empty_chain",
                     "a serial chain of " + std::to_string(types.size()) +
                         " nodes needs as many names, but got " + std::to_string(names.size()));
  for (const auto& type : types) {  // validate everything first: all or nothing
    TypeId id = types_.id(type);
    types_.inlet_index(id, "main");
    types_.outlet_index(id, "main");
  }
  NodeId first = -1, previous = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    NodeId id = add(types[i], names.empty() ? "" : names[i]);
    if (previous >= 0) connect(previous, id);
    if (first < 0) first = id;
    previous = id;
  }
  return {first, previous};
}

Edge Graph::resolve(NodeId source, NodeId dest, const std::string& outlet,
                    const std::string& inlet) const {
  const Node& s = node(source);
  const Node& d = node(dest);
  Edge edge;
  edge.source = source;
  edge.dest   = dest;
  try {
    edge.outlet = types_.outlet_index(s.type, outlet);
    edge.inlet  = types_.inlet_index(d.type, inlet);
  } catch (const GraphError& e) {
    throw GraphError(e.code(), "edge " + std::to_string(source) + "." + outlet + " -> " +
                                   std::to_string(dest) + "." + inlet + ": " + e.message());
  }
  return edge;
}

void Graph::check_new_edge(const Edge& edge) const {
  if (edge.source == edge.dest)
    throw GraphError("grafx.graph.self_loop", "edge " + describe(edge) + " connects " +
                                                  describe(edge.source) + " to itself");
  if (has_edge(edge))
    throw GraphError("grafx.graph.duplicate_edge", "edge " + describe(edge) + " already exists");
  // The edge closes a cycle exactly when its source is reachable from its destination.
  std::unordered_map<NodeId, NodeId> parent{{edge.dest, edge.dest}};
  std::vector<NodeId> stack{edge.dest};
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (id == edge.source) {
      std::vector<NodeId> path{edge.source};
      while (path.back() != edge.dest) path.push_back(parent[path.back()]);
      std::reverse(path.begin(), path.end());
      std::string text;
      for (NodeId n : path) text += describe(n) + " -> ";
      text += describe(edge.dest);
      throw GraphError("grafx.graph.cycle",
                       "edge " + describe(edge) + " would close the cycle " + text);
    }
    for (const Edge& e : data(id).out)
      if (parent.emplace(e.dest, id).second) stack.push_back(e.dest);
  }
}

void Graph::insert_edge(const Edge& edge) {
  insert_sorted(data(edge.source).out, edge, out_order);
  insert_sorted(data(edge.dest).in, edge, in_order);
  ++n_edges_;
}

void Graph::erase_edge(const Edge& edge) {
  erase_one(data(edge.source).out, edge);
  erase_one(data(edge.dest).in, edge);
  --n_edges_;
}

void Graph::connect(NodeId source, NodeId dest, const std::string& outlet,
                    const std::string& inlet) {
  Edge edge = resolve(source, dest, outlet, inlet);
  check_new_edge(edge);
  insert_edge(edge);
}

bool Graph::closes_cycle(const std::vector<Edge>& added) const {
  std::unordered_map<NodeId, std::vector<NodeId>> extra;  // the added edges' destinations
  std::unordered_map<NodeId, int64_t> waiting;
  waiting.reserve(nodes_.size());
  for (const auto& [id, d] : nodes_) waiting[id] = static_cast<int64_t>(d.in.size());
  for (const Edge& e : added) {
    extra[e.source].push_back(e.dest);
    ++waiting[e.dest];
  }
  std::vector<NodeId> ready;
  for (const auto& [id, n] : waiting)
    if (n == 0) ready.push_back(id);
  size_t done = 0;
  while (!ready.empty()) {
    NodeId id = ready.back();
    ready.pop_back();
    ++done;
    for (const Edge& e : data(id).out)
      if (--waiting[e.dest] == 0) ready.push_back(e.dest);
    auto it = extra.find(id);
    if (it != extra.end())
      for (NodeId dest : it->second)
        if (--waiting[dest] == 0) ready.push_back(dest);
  }
  return done < nodes_.size();
}

void Graph::connect_all(const std::vector<PortEdge>& requests,
                        const std::function<void(size_t, const GraphError&)>& on_error) {
  // Resolve and check each edge on its own (ports, self-loops, duplicates) up to the first that
  // fails; cycles are looked for once, over all of them.
  std::vector<Edge> edges;
  edges.reserve(requests.size());
  std::unordered_set<Edge, EdgeHash> seen;
  size_t failed = requests.size();
  std::optional<GraphError> resolve_error;
  for (size_t i = 0; i < requests.size(); ++i) {
    const PortEdge& r = requests[i];
    Edge edge;
    try {
      edge = resolve(r.source, r.dest, r.outlet, r.inlet);
    } catch (const GraphError& e) {
      resolve_error = e;
      failed        = i;
      break;
    }
    if (edge.source == edge.dest || has_edge(edge) || !seen.insert(edge).second) {
      failed = i;
      break;
    }
    edges.push_back(edge);
  }
  auto report = [&](size_t i, const GraphError& e) {
    if (on_error) on_error(i, e);
    throw e;
  };
  // The error connect would give for edge i after edges 0..i-1: from a copy holding those.
  auto reproduce = [&](size_t i, const Edge& edge) {
    Graph scratch = *this;
    for (size_t k = 0; k < i; ++k) scratch.insert_edge(edges[k]);
    try {
      scratch.check_new_edge(edge);
    } catch (const GraphError& e) {
      report(i, e);
    }
  };
  if (closes_cycle(edges)) {  // the first edge to close one: the shortest cyclic prefix
    size_t lo = 0, hi = edges.size() - 1;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (closes_cycle({edges.begin(), edges.begin() + std::ptrdiff_t(mid) + 1}))
        hi = mid;
      else
        lo = mid + 1;
    }
    reproduce(lo, edges[lo]);
  }
  if (failed < requests.size()) {
    if (resolve_error) report(failed, *resolve_error);
    const PortEdge& r = requests[failed];
    reproduce(failed, resolve(r.source, r.dest, r.outlet, r.inlet));
  }
  std::unordered_set<NodeId> touched;
  for (const Edge& edge : edges) {
    data(edge.source).out.push_back(edge);
    data(edge.dest).in.push_back(edge);
    touched.insert(edge.source);
    touched.insert(edge.dest);
  }
  for (NodeId id : touched) {
    NodeData& d = data(id);
    std::sort(d.out.begin(), d.out.end(), out_order);
    std::sort(d.in.begin(), d.in.end(), in_order);
  }
  n_edges_ += static_cast<int64_t>(edges.size());
}

void Graph::disconnect(NodeId source, NodeId dest, const std::string& outlet,
                       const std::string& inlet) {
  Edge edge = resolve(source, dest, outlet, inlet);
  if (!has_edge(edge))
    throw GraphError("grafx.graph.unknown_edge", "there is no edge " + describe(edge));
  erase_edge(edge);
}

std::vector<Edge> Graph::remove(NodeId id) {
  NodeData& d               = data(id);
  std::vector<Edge> removed = d.in;
  removed.insert(removed.end(), d.out.begin(), d.out.end());
  for (const Edge& e : removed) erase_edge(e);
  nodes_.erase(id);
  return removed;
}

std::vector<NodeId> Graph::bypass(NodeId id) {
  const NodeData& d    = data(id);
  const NodeType& type = types_[d.node.type];
  if (type.inlets.empty() || type.outlets.empty())
    throw GraphError("grafx.graph.invalid_bypass", "cannot bypass " + describe(id) +
                                                       ": only nodes with inlets and outlets " +
                                                       "pass a signal through");
  const bool silences = std::any_of(d.out.begin(), d.out.end(), [&](const Edge& e) {
    return types_.passed_inlet(d.node.type, e.outlet) < 0;
  });
  if (!silences) {
    bypass_one(id);
    return {id};
  }
  // An outlet that passes nothing when bypassed (a send's, a crossover's `high`) leaves its
  // destinations without that input. A mix, or a node already marked bypassed, whose inlet is
  // then fed by nothing renders silence, or passes what it still has, either way as if removed:
  // it goes too, in turn. Any other node left so is refused, on a copy, so nothing changes.
  Graph result = *this;
  std::vector<NodeId> removed;
  std::queue<NodeId> queue;
  queue.push(id);
  while (!queue.empty()) {
    const NodeId next = queue.front();
    queue.pop();
    if (!result.contains(next)) continue;
    std::set<NodeId> destinations;
    for (const Edge& e : result.data(next).out) destinations.insert(e.dest);
    if (result.node(next).type == NodeTypes::kMix)
      result.remove(next);
    else
      result.bypass_one(next);
    removed.push_back(next);
    for (NodeId dest : destinations) {
      if (!result.contains(dest)) continue;
      const NodeType& dest_type        = result.types_[result.node(dest).type];
      const std::vector<int64_t> unfed = unconnected_inlets(dest_type, result.data(dest).in);
      if (unfed.empty()) continue;
      if (result.node(dest).type == NodeTypes::kMix || result.node(dest).bypassed) {
        queue.push(dest);
        continue;
      }
      throw GraphError("grafx.graph.invalid_bypass", "bypassing " + describe(id) + " would leave " +
                                                         describe(dest) +
                                                         " with nothing at its inlet \"" +
                                                         dest_type.inlets[size_t(unfed.front())] +
                                                         "\"; bypass or remove that node too");
    }
  }
  *this = std::move(result);
  return removed;
}

void Graph::bypass_one(NodeId id) {
  const NodeData& d = data(id);
  std::vector<Edge> created;
  for (const Edge& out : d.out) {
    int64_t inlet = types_.passed_inlet(d.node.type, out.outlet);
    for (const Edge& in : d.in) {
      if (in.inlet != inlet) continue;
      Edge edge{in.source, out.dest, in.outlet, out.inlet};
      if (has_edge(edge) || std::find(created.begin(), created.end(), edge) != created.end())
        throw GraphError("grafx.graph.duplicate_edge",
                         "bypassing " + describe(id) + " would add the edge " + describe(edge) +
                             " twice; remove the node or one of the parallel paths instead");
      created.push_back(edge);
    }
  }
  remove(id);
  for (const Edge& edge : created) insert_edge(edge);  // no cycle: each path existed via id
}

void Graph::set_name(NodeId id, const std::string& name) { data(id).node.name = name; }

void Graph::set_properties(NodeId id, const NodeProperties& properties) {
  Node& node                 = data(id).node;
  const NodeProperties saved = node.properties();
  try {
    set_name(id, properties.name);
    set_dry_wet(id, properties.dry_wet);
    set_bypassed(id, properties.bypassed);
    for (const std::string& parameter : saved.automated) set_automated(id, parameter, false);
    for (const std::string& parameter : properties.automated) set_automated(id, parameter);
  } catch (...) {
    static_cast<NodeProperties&>(node) = saved;
    throw;
  }
}

void Graph::set_dry_wet(NodeId id, bool dry_wet) {
  Node& node = data(id).node;
  if (dry_wet && is_utility_type(node.type))
    throw GraphError(
        "grafx.graph.node_property",
        "cannot give " + describe(id) + " a dry/wet amount: only processor nodes have one");
  node.dry_wet = dry_wet;
}

void Graph::set_automated(NodeId id, const std::string& parameter, bool automated) {
  Node& node = data(id).node;
  if (automated && is_utility_type(node.type))
    throw GraphError("grafx.graph.node_property", "cannot automate a parameter of " + describe(id) +
                                                      ": only processor nodes have parameters");
  const bool plain = !parameter.empty() && parameter.find_first_of(".@ \"") == std::string::npos;
  if (automated && !plain)
    throw GraphError("grafx.graph.node_property",
                     "cannot automate \"" + parameter + "\" of " + describe(id) +
                         ": not a parameter name (a raw name such as log_gain)");
  auto& names        = node.automated;
  auto at            = std::lower_bound(names.begin(), names.end(), parameter);
  const bool present = at != names.end() && *at == parameter;
  if (automated && !present) names.insert(at, parameter);
  if (!automated && present) names.erase(at);
}

void Graph::set_automation(const Automation& automation) {
  if (!(automation.rate_hz > 0) || !std::isfinite(automation.rate_hz) || automation.points < 1)
    throw GraphError("grafx.graph.automation",
                     "expected an automation rate above 0 Hz and at least one point per curve, "
                     "but got " +
                         std::to_string(automation.rate_hz) + " Hz and " +
                         std::to_string(automation.points) + " points");
  automation_ = automation;
}

bool Graph::has_automation() const {
  for (const auto& [id, d] : nodes_)
    if (!d.node.automated.empty()) return true;
  return false;
}

void Graph::set_bypassed(NodeId id, bool bypassed) {
  Node& node = data(id).node;
  if (bypassed && is_utility_type(node.type))
    throw GraphError("grafx.graph.node_property",
                     "cannot bypass " + describe(id) + ": only processor nodes can be bypassed");
  node.bypassed = bypassed;
}

std::vector<NodeId> Graph::nodes() const {
  std::vector<NodeId> ids;
  ids.reserve(nodes_.size());
  for (const auto& [id, d] : nodes_) ids.push_back(id);
  return ids;
}

std::vector<NodeId> Graph::nodes_of_type(const std::string& type) const {
  TypeId type_id = types_.id(type);
  std::vector<NodeId> ids;
  for (const auto& [id, d] : nodes_)
    if (d.node.type == type_id) ids.push_back(id);
  return ids;
}

std::vector<Edge> Graph::edges() const {
  std::vector<Edge> all;
  all.reserve(static_cast<size_t>(n_edges_));
  for (const auto& [id, d] : nodes_) all.insert(all.end(), d.out.begin(), d.out.end());
  std::sort(all.begin(), all.end());
  return all;
}

bool Graph::has_edge(const Edge& edge) const {
  auto it = nodes_.find(edge.source);
  if (it == nodes_.end()) return false;
  const auto& out = it->second.out;
  return std::find(out.begin(), out.end(), edge) != out.end();
}

std::vector<NodeId> Graph::predecessors(NodeId id) const {
  std::set<NodeId> ids;
  for (const Edge& e : data(id).in) ids.insert(e.source);
  return {ids.begin(), ids.end()};
}

std::vector<NodeId> Graph::successors(NodeId id) const {
  std::set<NodeId> ids;
  for (const Edge& e : data(id).out) ids.insert(e.dest);
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> Graph::count_per_type() const {
  std::vector<int64_t> counts(static_cast<size_t>(types_.size()), 0);
  for (const auto& [id, d] : nodes_) ++counts[static_cast<size_t>(d.node.type)];
  return counts;
}

std::vector<NodeId> Graph::topological_order() const {
  std::unordered_map<NodeId, int64_t> waiting;
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> ready;
  for (const auto& [id, d] : nodes_) {
    waiting[id] = static_cast<int64_t>(d.in.size());
    if (d.in.empty()) ready.push(id);
  }
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (const Edge& e : data(id).out)
      if (--waiting[e.dest] == 0) ready.push(e.dest);
  }
  return order;  // complete: edges that would close a cycle are rejected when added
}

std::vector<ValidationIssue> Graph::validate() const {
  std::vector<ValidationIssue> issues;
  auto counts = count_per_type();
  if (counts[NodeTypes::kIn] == 0)
    issues.push_back({"grafx.graph.no_input", -1, "the graph has no \"in\" node"});
  if (counts[NodeTypes::kOut] == 0)
    issues.push_back({"grafx.graph.no_output", -1, "the graph has no \"out\" node"});
  for (const auto& [id, d] : nodes_) {
    const NodeType& type = types_[d.node.type];
    for (int64_t i : unconnected_inlets(type, d.in))
      issues.push_back({"grafx.graph.unconnected_inlet", id,
                        describe(id) + " has nothing connected to its inlet \"" +
                            type.inlets[size_t(i)] + "\""});
  }
  return issues;
}

void Graph::check() const {
  auto issues = validate();
  if (!issues.empty()) {
    std::string message = issues.front().message;
    if (issues.size() > 1)
      message += " (and " + std::to_string(issues.size() - 1) + " more problem" +
                 (issues.size() > 2 ? "s" : "") + ")";
    throw GraphError(issues.front().code, message);
  }
}

std::string Graph::to_string() const {
  std::ostringstream s;
  s << "Graph with " << n_nodes() << " nodes & " << n_edges() << " edges\n";
  auto label = [&](NodeId id) {
    std::string text = "[" + std::to_string(id) + "] " + types_.name(node(id).type);
    if (!node(id).name.empty()) text += " \"" + node(id).name + "\"";
    if (node(id).dry_wet) text += " (dry/wet)";
    if (node(id).bypassed) text += " (bypassed)";
    for (const auto& parameter : node(id).automated) text += " (automated " + parameter + ")";
    return text;
  };
  auto port = [](const std::vector<std::string>& ports, int64_t index) {
    const std::string& name = ports[static_cast<size_t>(index)];
    return name == "main" ? std::string() : "<" + name + ">";
  };
  for (const auto& [id, d] : nodes_) {
    s << "  " << label(id);
    const NodeType& type = types_[d.node.type];
    auto edge_text       = [&](const Edge& e) {
      return port(type.outlets, e.outlet) + " -> " +
             port(types_[node(e.dest).type].inlets, e.inlet) + label(e.dest);
    };
    if (d.out.size() == 1) s << edge_text(d.out[0]);
    s << "\n";
    if (d.out.size() > 1)
      for (const Edge& e : d.out) s << "      " << edge_text(e) << "\n";
  }
  return s.str();
}

bool Graph::operator==(const Graph& other) const {
  if (types_ != other.types_ || next_id_ != other.next_id_ || n_edges_ != other.n_edges_ ||
      nodes_.size() != other.nodes_.size() ||
      (has_automation() && automation_ != other.automation_))
    return false;
  for (const auto& [id, d] : nodes_) {
    auto it = other.nodes_.find(id);
    if (it == other.nodes_.end() || !(d.node == it->second.node) || d.out != it->second.out)
      return false;
  }
  return true;
}

}  // namespace grafx
