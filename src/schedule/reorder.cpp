#include <grafx/schedule/reorder.h>

#include <ATen/ATen.h>

#include "common/tensors.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace grafx {
Reordering reorder_for_render(const GraphTensor& graph, const Schedule& schedule) {
  const int64_t n_rows = graph.n_nodes(), n_edges = graph.n_edges();
  auto index = detail::to_vector(graph.edge_index);
  auto ports = detail::to_vector(graph.edge_ports);
  auto types = detail::to_vector(graph.node_types);
  std::vector<std::vector<int64_t>> sources(
      static_cast<size_t>(n_rows));  // source rows of each row, by inlet
  for (int64_t e = 0; e < n_edges; ++e)
    sources[size_t(index[size_t(n_edges + e)])].push_back(index[size_t(e)]);

  Reordering r;
  r.new_rows.assign(size_t(n_rows), -1);
  r.schedule = schedule;
  r.schedule.dead_rows.clear();
  for (size_t k = 0; k < schedule.steps.size(); ++k) {
    std::vector<int64_t> step = schedule.steps[k];
    bool keep_order           = k == 0 || k + 1 == schedule.steps.size();
    if (!keep_order) {
      // Sort by the (already placed) new rows of the sources: chains stay aligned, reads slice.
      auto key = [&](int64_t row) {
        std::vector<int64_t> placed;
        for (int64_t s : sources[size_t(row)]) placed.push_back(r.new_rows[size_t(s)]);
        std::sort(placed.begin(), placed.end());
        return placed;
      };
      std::vector<std::pair<std::vector<int64_t>, int64_t>> keyed;
      for (int64_t row : step) keyed.emplace_back(key(row), row);
      std::sort(keyed.begin(), keyed.end());
      for (size_t i = 0; i < step.size(); ++i) step[i] = keyed[i].second;
    }
    for (int64_t& row : step) {
      r.new_rows[size_t(row)] = int64_t(r.old_rows.size());
      r.old_rows.push_back(row);
      row = r.new_rows[size_t(row)];
    }
    r.schedule.steps[k] = step;
  }

  GraphTensor& g = r.graph;
  g.types        = graph.types;
  g.automation   = graph.automation;
  std::vector<int64_t> node_types, counts(size_t(graph.types.size()), 0);
  for (int64_t old : r.old_rows) {
    node_types.push_back(types[size_t(old)]);
    ++counts[size_t(types[size_t(old)])];
    g.node_ids.push_back(graph.node_ids[size_t(old)]);
    g.node_properties.push_back(graph.node_properties[size_t(old)]);
  }
  std::vector<std::array<int64_t, 4>> edges;  // dest, inlet, source, outlet in new rows
  for (int64_t e = 0; e < n_edges; ++e) {
    int64_t s = r.new_rows[size_t(index[size_t(e)])],
            d = r.new_rows[size_t(index[size_t(n_edges + e)])];
    if (s >= 0 && d >= 0) edges.push_back({d, ports[size_t(2 * e + 1)], s, ports[size_t(2 * e)]});
  }
  std::sort(edges.begin(), edges.end());
  std::vector<int64_t> flat_index(2 * edges.size()), flat_ports(2 * edges.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    flat_index[e]                = edges[e][2];
    flat_index[edges.size() + e] = edges[e][0];
    flat_ports[2 * e]            = edges[e][3];
    flat_ports[2 * e + 1]        = edges[e][1];
  }
  int64_t n_kept = int64_t(edges.size());
  g.node_types   = at::tensor(node_types, at::kLong);
  g.edge_index   = at::tensor(flat_index, at::kLong).view({2, n_kept});
  g.edge_ports   = at::tensor(flat_ports, at::kLong).view({n_kept, 2});
  g.type_counts  = at::tensor(counts, at::kLong);
  return r;
}

}  // namespace grafx
