#pragma once
// The scheduling problem in compact form, shared by the schedulers (private to the library).
//
// Only live processor and mix nodes take part in the search: `in` nodes are visited from the
// start (V0) and `out` nodes are placed last (VN), so edges from `in` and to `out` are dropped.
// A search state is the set of visited nodes, kept closed under predecessors; the nodes ready in
// a state are the unvisited ones whose predecessors are all visited.

#include <grafx/graph/graph_tensor.h>

#include <cstdint>
#include <vector>

namespace grafx::detail {

/// A fixed-size set of node indices.
class Bitset {
 public:
  Bitset() = default;
  explicit Bitset(int64_t n) : words_(static_cast<size_t>((n + 63) / 64), 0) {}
  void set(int64_t i) { words_[size_t(i >> 6)] |= uint64_t{1} << (i & 63); }
  bool test(int64_t i) const { return (words_[size_t(i >> 6)] >> (i & 63)) & 1; }
  bool operator==(const Bitset& o) const { return words_ == o.words_; }
  uint64_t hash() const;

 private:
  std::vector<uint64_t> words_;
};

struct BitsetHash {
  size_t operator()(const Bitset& b) const { return static_cast<size_t>(b.hash()); }
};

class SearchGraph {
 public:
  /// Validates the graph (GraphError: no in/out, unconnected inlet, cycle) and finds the live
  /// nodes.
  explicit SearchGraph(const GraphTensor& graph);

  int64_t n_nodes() const { return static_cast<int64_t>(row_.size()); }
  /// Candidate types: those of the search nodes, ascending; nodes refer to them by index.
  const std::vector<TypeId>& types() const { return types_; }
  int64_t type_index(int64_t node) const { return type_index_[size_t(node)]; }
  int64_t row(int64_t node) const { return row_[size_t(node)]; }
  const std::vector<int32_t>& successors(int64_t node) const { return successors_[size_t(node)]; }
  const std::vector<int32_t>& predecessors(int64_t node) const {
    return predecessors_[size_t(node)];
  }
  /// Nodes ready at the start (all predecessors are `in` nodes), ascending.
  const std::vector<int32_t>& initial_ready() const { return initial_ready_; }
  /// The most nodes of type index t on any path starting at `node` (the node included).
  int32_t path_count(int64_t node, int64_t t) const {
    return path_count_[size_t(node) * types_.size() + size_t(t)];
  }

  /// Live `in` rows, live other rows by search node, `out` rows, dead rows (all ascending).
  const std::vector<int64_t>& in_rows() const { return in_rows_; }
  const std::vector<int64_t>& out_rows() const { return out_rows_; }
  const std::vector<int64_t>& dead_rows() const { return dead_rows_; }

  /// An admissible, consistent lower bound on the steps still needed from a state whose ready
  /// nodes are `ready`: for each type, the most nodes of that type on one remaining path
  /// (each needs its own step of that type), summed over types.
  int32_t lower_bound(const std::vector<int32_t>& ready) const;

  /// Takes every node of type index `t` in `ready` (the step), marks them in `visited` and
  /// returns the new ready list (sorted). `taken` receives the nodes taken.
  std::vector<int32_t> step(const std::vector<int32_t>& ready, int64_t t, Bitset& visited,
                            std::vector<int32_t>* taken = nullptr) const;

  /// Number of ready nodes of each type index.
  std::vector<int32_t> ready_counts(const std::vector<int32_t>& ready) const;

 private:
  std::vector<TypeId> types_;
  std::vector<int64_t> type_index_;
  std::vector<int64_t> row_;
  std::vector<std::vector<int32_t>> successors_, predecessors_;
  std::vector<int32_t> initial_ready_;
  std::vector<int32_t> path_count_;
  std::vector<int64_t> in_rows_, out_rows_, dead_rows_;
};

}  // namespace grafx::detail
