#include "schedule/search_graph.h"

#include <grafx/error.h>

#include <ATen/ATen.h>

#include "common/tensors.h"

#include <algorithm>
#include <queue>

namespace grafx::detail {

uint64_t Bitset::hash() const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t w : words_) {
    w ^= w >> 33;
    w *= 0xff51afd7ed558ccdull;
    w ^= w >> 33;
    h = (h ^ w) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  return h;
}

namespace {

std::string describe_row(const GraphTensor& g, int64_t row, TypeId type) {
  std::string text = "node " + std::to_string(g.node_ids[size_t(row)]) + " (" + g.types.name(type);
  const std::string& name = g.node_properties[size_t(row)].name;
  if (!name.empty()) text += " \"" + name + "\"";
  return text + ")";
}

}  // namespace

SearchGraph::SearchGraph(const GraphTensor& graph) {
  const int64_t n_rows  = graph.n_nodes();
  const int64_t n_edges = graph.n_edges();
  auto row_types        = detail::to_vector(graph.node_types);
  auto index            = detail::to_vector(graph.edge_index);
  auto ports            = detail::to_vector(graph.edge_ports);
  std::vector<std::vector<int64_t>> row_successors(static_cast<size_t>(n_rows)),
      row_predecessors(static_cast<size_t>(n_rows));
  std::vector<std::vector<bool>> connected(static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r)
    connected[size_t(r)].assign(size_t(graph.types.n_inlets(row_types[size_t(r)])), false);
  for (int64_t e = 0; e < n_edges; ++e) {
    int64_t s = index[size_t(e)], d = index[size_t(n_edges + e)];
    row_successors[size_t(s)].push_back(d);
    row_predecessors[size_t(d)].push_back(s);
    connected[size_t(d)][size_t(ports[size_t(2 * e + 1)])] = true;
  }

  // Validation, as Graph::validate() does for the mutable graph.
  bool has_in = false, has_out = false;
  for (int64_t r = 0; r < n_rows; ++r) {
    has_in  = has_in || row_types[size_t(r)] == NodeTypes::kIn;
    has_out = has_out || row_types[size_t(r)] == NodeTypes::kOut;
    for (size_t i = 0; i < connected[size_t(r)].size(); ++i)
      if (!connected[size_t(r)][i])
        throw GraphError("grafx.graph.unconnected_inlet",
                         describe_row(graph, r, row_types[size_t(r)]) +
                             " has nothing connected to its inlet \"" +
                             graph.types[row_types[size_t(r)]].inlets[i] + "\"");
  }
  if (!has_in) throw GraphError("grafx.graph.no_input", "the graph has no \"in\" node");
  if (!has_out) throw GraphError("grafx.graph.no_output", "the graph has no \"out\" node");

  // Topological order (Kahn); a leftover node lies on a cycle.
  std::vector<int64_t> waiting(static_cast<size_t>(n_rows)), order;
  for (int64_t r = 0; r < n_rows; ++r)
    waiting[size_t(r)] = int64_t(row_predecessors[size_t(r)].size());
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ready;
  for (int64_t r = 0; r < n_rows; ++r)
    if (waiting[size_t(r)] == 0) ready.push(r);
  while (!ready.empty()) {
    int64_t r = ready.top();
    ready.pop();
    order.push_back(r);
    for (int64_t s : row_successors[size_t(r)])
      if (--waiting[size_t(s)] == 0) ready.push(s);
  }
  if (int64_t(order.size()) != n_rows)
    for (int64_t r = 0; r < n_rows; ++r)
      if (waiting[size_t(r)] > 0)
        throw GraphError("grafx.graph.cycle",
                         describe_row(graph, r, row_types[size_t(r)]) + " lies on a cycle");

  // Live rows reach an `out` (every row is reached from an `in`: inlets are all connected).
  std::vector<bool> live(size_t(n_rows), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int64_t r = *it;
    if (row_types[size_t(r)] == NodeTypes::kOut) live[size_t(r)] = true;
    for (int64_t s : row_successors[size_t(r)])
      live[size_t(r)] = live[size_t(r)] || live[size_t(s)];
  }

  std::vector<int64_t> node_of_row(size_t(n_rows), -1);
  for (int64_t r = 0; r < n_rows; ++r) {
    TypeId type = row_types[size_t(r)];
    if (!live[size_t(r)])
      dead_rows_.push_back(r);
    else if (type == NodeTypes::kIn)
      in_rows_.push_back(r);
    else if (type == NodeTypes::kOut)
      out_rows_.push_back(r);
    else {
      node_of_row[size_t(r)] = int64_t(row_.size());
      row_.push_back(r);
      if (std::find(types_.begin(), types_.end(), type) == types_.end()) types_.push_back(type);
    }
  }
  std::sort(types_.begin(), types_.end());
  const int64_t n = n_nodes(), n_types = int64_t(types_.size());
  successors_.resize(size_t(n));
  predecessors_.resize(size_t(n));
  for (int64_t v = 0; v < n; ++v) {
    type_index_.push_back(
        std::lower_bound(types_.begin(), types_.end(), row_types[size_t(row_[size_t(v)])]) -
        types_.begin());
    for (int64_t s : row_successors[size_t(row_[size_t(v)])])
      if (node_of_row[size_t(s)] >= 0)
        successors_[size_t(v)].push_back(int32_t(node_of_row[size_t(s)]));
    for (int64_t p : row_predecessors[size_t(row_[size_t(v)])])
      if (node_of_row[size_t(p)] >= 0)
        predecessors_[size_t(v)].push_back(int32_t(node_of_row[size_t(p)]));
    // Parallel edges (other ports) repeat a neighbour; the search needs each once.
    for (auto* list : {&successors_[size_t(v)], &predecessors_[size_t(v)]}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    if (predecessors_[size_t(v)].empty()) initial_ready_.push_back(int32_t(v));
  }

  // path_count(v, t) = [type(v) = t] + max over successors; search nodes follow row order,
  // which is a topological order only by accident, so go by the row order computed above.
  path_count_.assign(size_t(n * n_types), 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int64_t v = node_of_row[size_t(*it)];
    if (v < 0) continue;
    int32_t* counts = &path_count_[size_t(v * n_types)];
    for (int32_t s : successors_[size_t(v)])
      for (int64_t t = 0; t < n_types; ++t)
        counts[t] = std::max(counts[t], path_count_[size_t(s * n_types + t)]);
    counts[type_index_[size_t(v)]] += 1;
  }
}

int32_t SearchGraph::lower_bound(const std::vector<int32_t>& ready) const {
  // Every unvisited node descends from a ready one, so maxima over ready nodes cover all paths.
  const size_t n_types = types_.size();
  int32_t best[64]     = {0};
  std::vector<int32_t> large;
  int32_t* most = best;
  if (n_types > 64) {
    large.assign(n_types, 0);
    most = large.data();
  }
  for (int32_t v : ready) {
    const int32_t* counts = &path_count_[size_t(v) * n_types];
    for (size_t t = 0; t < n_types; ++t) most[t] = std::max(most[t], counts[t]);
  }
  int32_t sum = 0;
  for (size_t t = 0; t < n_types; ++t) sum += most[t];
  return sum;
}

std::vector<int32_t> SearchGraph::step(const std::vector<int32_t>& ready, int64_t t,
                                       Bitset& visited, std::vector<int32_t>* taken) const {
  std::vector<int32_t> next;
  next.reserve(ready.size() + 8);
  std::vector<int32_t> took;
  for (int32_t v : ready) {
    if (type_index_[size_t(v)] == t) {
      visited.set(v);
      took.push_back(v);
    } else {
      next.push_back(v);
    }
  }
  // A successor of a taken node was not ready before (that node was unvisited), so the new
  // ready nodes are the successors whose predecessors are now all visited.
  std::vector<int32_t> candidates;
  for (int32_t v : took)
    candidates.insert(candidates.end(), successors_[size_t(v)].begin(),
                      successors_[size_t(v)].end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (int32_t s : candidates) {
    const auto& preds = predecessors_[size_t(s)];
    if (std::all_of(preds.begin(), preds.end(), [&](int32_t p) { return visited.test(p); }))
      next.push_back(s);
  }
  std::sort(next.begin(), next.end());
  if (taken) *taken = std::move(took);
  return next;
}

std::vector<int32_t> SearchGraph::ready_counts(const std::vector<int32_t>& ready) const {
  std::vector<int32_t> counts(types_.size(), 0);
  for (int32_t v : ready) ++counts[size_t(type_index_[size_t(v)])];
  return counts;
}

}  // namespace grafx::detail
