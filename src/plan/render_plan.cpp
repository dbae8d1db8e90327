#include <grafx/enum_names.h>
#include <grafx/error.h>
#include <grafx/plan/render_plan.h>
#include <grafx/schedule/reorder.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include "common/tensors.h"
#include "plan/plan_text.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <tuple>

namespace grafx {
using detail::list;

RowAccess RowAccess::of(const std::vector<int64_t>& rows) {
  RowAccess access;
  if (rows.empty()) return access;
  bool consecutive = true;
  for (size_t i = 1; i < rows.size(); ++i) consecutive = consecutive && rows[i] == rows[i - 1] + 1;
  if (consecutive) {
    access.kind  = Kind::kSlice;
    access.start = rows.front();
    access.end   = rows.back() + 1;
  } else {
    access.kind  = Kind::kIndex;
    access.index = rows;
  }
  return access;
}

int64_t RowAccess::size() const {
  switch (kind) {
    case Kind::kNone:
      return 0;
    case Kind::kSlice:
      return end - start;
    case Kind::kIndex:
      return static_cast<int64_t>(index.size());
  }
  return 0;
}

std::vector<int64_t> RowAccess::rows() const {
  if (kind == Kind::kIndex) return index;
  std::vector<int64_t> rows(static_cast<size_t>(size()));
  std::iota(rows.begin(), rows.end(), start);
  return rows;
}

std::string RowAccess::to_string() const {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kSlice:
      return "slice with (" + std::to_string(start) + ", " + std::to_string(end) + ")";
    case Kind::kIndex:
      return "index with " + list(index);
  }
  return "?";
}

std::string to_string(Aggregation aggregation) {
  static constexpr EnumNames<Aggregation, 3> kAggregations{
      {{Aggregation::kNone, "none"},
       {Aggregation::kSum, "sum"},
       {Aggregation::kSegmentSum, "segment-sum"}}};
  return name_of(kAggregations, aggregation);
}

bool RenderPlan::parameters_in_graph_order(TypeId type) const {
  const auto& rows = parameter_graph_rows[size_t(type)];
  if (int64_t(rows.size()) != n_graph_nodes[size_t(type)]) return false;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] != int64_t(i)) return false;
  return true;
}

RenderPlan make_render_plan(const GraphTensor& graph, const ScheduleOptions& options) {
  return make_render_plan(graph, schedule_graph(graph, options));
}

RenderPlan make_render_plan(const GraphTensor& graph, const Schedule& schedule) {
  check_schedule(graph, schedule, /*maximal=*/false);
  Reordering reordering  = reorder_for_render(graph, schedule);
  const GraphTensor& g   = reordering.graph;
  const NodeTypes& types = graph.types;
  RenderPlan plan;
  plan.types           = types;
  plan.method          = schedule.method;
  plan.proven_optimal  = schedule.proven_optimal;
  plan.node_ids        = g.node_ids;
  plan.node_properties = g.node_properties;
  plan.automation      = g.automation;
  plan.node_types      = detail::to_vector(g.node_types);
  for (int64_t row : schedule.dead_rows) plan.dead_nodes.push_back(graph.node_ids[size_t(row)]);
  plan.n_graph_nodes = detail::to_vector(graph.type_counts);

  // Graph order of each original row within its type, and source order of `in` rows.
  auto old_types = detail::to_vector(graph.node_types);
  std::vector<int64_t> graph_rank(old_types.size()), seen(size_t(types.size()), 0);
  plan.dry_wet_types.assign(size_t(types.size()), false);
  plan.automated_types.assign(size_t(types.size()), {});
  for (size_t r = 0; r < old_types.size(); ++r) {
    graph_rank[r]              = seen[size_t(old_types[r])]++;
    const NodeProperties& node = graph.node_properties[r];
    if (node.dry_wet) plan.dry_wet_types[size_t(old_types[r])] = true;
    for (const auto& parameter : node.automated)
      plan.automated_types[size_t(old_types[r])].insert(parameter);
  }
  plan.n_sources = seen[NodeTypes::kIn];
  plan.parameter_graph_rows.assign(size_t(types.size()), {});

  // Buffer rows: per step, outlet-major.
  const int64_t n_nodes = g.n_nodes();
  std::vector<int64_t> position(static_cast<size_t>(n_nodes)),
      first_row(static_cast<size_t>(n_nodes)), step_size(static_cast<size_t>(n_nodes));
  std::vector<int64_t> type_seen(size_t(types.size()), 0);
  int64_t next_row = 0;
  for (size_t k = 0; k < reordering.schedule.steps.size(); ++k) {
    const auto& rows = reordering.schedule.steps[k];
    PlanStep step;
    step.type       = reordering.schedule.step_types[k];
    step.nodes      = rows;
    const int64_t m = int64_t(rows.size());
    for (int64_t p = 0; p < m; ++p) {
      int64_t node            = rows[size_t(p)];
      position[size_t(node)]  = p;
      first_row[size_t(node)] = next_row;
      step_size[size_t(node)] = m;
      int64_t old_row         = reordering.old_rows[size_t(node)];
      plan.parameter_graph_rows[size_t(step.type)].push_back(graph_rank[size_t(old_row)]);
      if (step.type == NodeTypes::kIn) plan.source_index.push_back(graph_rank[size_t(old_row)]);
    }
    std::vector<int64_t> written(static_cast<size_t>(types.n_outlets(step.type) * m));
    std::iota(written.begin(), written.end(), next_row);
    step.writes = RowAccess::of(written);
    next_row += int64_t(written.size());
    if (!is_utility_type(step.type)) {
      std::vector<int64_t> parameters(static_cast<size_t>(m));
      std::iota(parameters.begin(), parameters.end(), type_seen[size_t(step.type)]);
      step.parameter_rows = RowAccess::of(parameters);
    }
    type_seen[size_t(step.type)] += m;
    plan.steps.push_back(std::move(step));
  }
  plan.n_buffer_rows = next_row;

  // Reads: edges are sorted by (dest, inlet, source, outlet); steps hold consecutive nodes.
  auto index                        = detail::to_vector(g.edge_index);
  auto ports                        = detail::to_vector(g.edge_ports);
  const int64_t n_edges             = g.n_edges();
  std::vector<int64_t> step_of_node = reordering.schedule.step_of_rows(n_nodes);
  for (auto& step : plan.steps) {
    if (step.type == NodeTypes::kIn) continue;
    const int64_t m    = int64_t(step.nodes.size());
    const auto& inlets = types[step.type].inlets;
    for (size_t inlet = 0; inlet < inlets.size(); ++inlet) {
      InletRead read;
      read.inlet = inlets[inlet];
      std::vector<int64_t> rows;
      for (int64_t e = 0; e < n_edges; ++e) {
        int64_t d = index[size_t(n_edges + e)], s = index[size_t(e)];
        if (ports[size_t(2 * e + 1)] != int64_t(inlet) ||
            step_of_node[size_t(d)] != step_of_node[size_t(step.nodes.front())])
          continue;
        rows.push_back(first_row[size_t(s)] + ports[size_t(2 * e)] * step_size[size_t(s)] +
                       position[size_t(s)]);
        read.segments.push_back(position[size_t(d)]);
      }
      std::vector<int64_t> identity(static_cast<size_t>(m));
      std::iota(identity.begin(), identity.end(), 0);
      if (read.segments == identity) {
        read.aggregation = Aggregation::kNone;
        read.segments.clear();
      } else if (m == 1) {
        read.aggregation = Aggregation::kSum;
        read.segments.clear();
      } else {
        read.aggregation = Aggregation::kSegmentSum;
      }
      TORCH_INTERNAL_ASSERT(!rows.empty(), "a scheduled node has an unconnected inlet");
      read.rows = RowAccess::of(rows);
      step.reads.push_back(std::move(read));
    }
  }
  return plan;
}

std::string RenderPlan::to_string() const {
  std::ostringstream s;
  s << "RenderPlan: " << node_ids.size() << " nodes in " << steps.size() << " steps (" << n_calls()
    << " processor calls), method " << grafx::to_string(method)
    << (method == ScheduleMethod::kOptimal ? (proven_optimal ? " (proven)" : " (not proven)") : "")
    << ", buffer of " << n_buffer_rows << " rows\n";
  for (size_t k = 0; k < steps.size(); ++k) {
    const PlanStep& step = steps[k];
    s << "Render #" << k << "\n  - Node type: " << types.name(step.type) << "\n";
    if (step.type == NodeTypes::kIn) {
      s << "  - Source read: sources " << RowAccess::of(source_index).to_string() << "\n"
        << "  - Aggregation: none\n";
    }
    bool several = step.reads.size() > 1;
    for (const auto& read : step.reads) {
      std::string port = several ? " <" + read.inlet + ">" : "";
      s << "  - Source read" << port << ": " << read.rows.to_string() << "\n"
        << "  - Aggregation" << port << ": " << grafx::to_string(read.aggregation);
      if (read.aggregation == Aggregation::kSegmentSum) s << " into " << list(read.segments);
      s << "\n";
    }
    s << "  - Parameter read: " << step.parameter_rows.to_string() << "\n"
      << "  - Dest write: " << step.writes.to_string() << "\n";
  }
  if (!dead_nodes.empty()) s << "Dead nodes (not rendered): " << list(dead_nodes) << "\n";
  return s.str();
}

std::string RenderPlan::to_json() const {
  using json  = nlohmann::json;
  auto access = [](const RowAccess& a) { return detail::to_json(a); };
  json nodes  = json::array();
  for (size_t i = 0; i < node_ids.size(); ++i) {
    const NodeProperties& properties = node_properties[i];
    json node                        = {
                               {"id", node_ids[i]}, {"type", types.name(node_types[i])}, {"name", properties.name}};
    if (properties.dry_wet) node["dry_wet"] = true;
    if (properties.bypassed) node["bypassed"] = true;
    if (!properties.automated.empty()) node["automated"] = properties.automated;
    nodes.push_back(node);
  }
  json steps_json = json::array();
  for (const auto& step : steps) {
    json reads = json::array();
    for (const auto& read : step.reads) {
      json r = {{"inlet", read.inlet},
                {"rows", access(read.rows)},
                {"aggregation", grafx::to_string(read.aggregation)}};
      if (!read.segments.empty()) r["segments"] = read.segments;
      reads.push_back(r);
    }
    steps_json.push_back({{"type", types.name(step.type)},
                          {"nodes", access(RowAccess::of(step.nodes))},
                          {"reads", reads},
                          {"parameter_rows", access(step.parameter_rows)},
                          {"writes", access(step.writes)}});
  }
  json plan = {{"format", "grafx.plan"},
               {"version", 1},
               {"method", grafx::to_string(method)},
               {"proven_optimal", proven_optimal},
               {"n_calls", n_calls()},
               {"n_buffer_rows", n_buffer_rows},
               {"n_sources", n_sources},
               {"source_index", source_index},
               {"nodes", nodes},
               {"steps", steps_json},
               {"dead_nodes", dead_nodes}};
  return plan.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace grafx
