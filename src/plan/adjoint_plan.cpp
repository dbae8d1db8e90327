#include <grafx/enum_names.h>
#include <grafx/error.h>
#include <grafx/plan/adjoint_plan.h>

#include "plan/plan_text.h"

#include <sstream>

namespace grafx {

namespace {
constexpr EnumNames<MemoryPolicy, 2> kMemoryPolicies{
    {{MemoryPolicy::kSave, "save"}, {MemoryPolicy::kRecompute, "recompute"}}};
}  // namespace

std::string to_string(MemoryPolicy policy) { return name_of(kMemoryPolicies, policy); }

MemoryPolicy parse_memory_policy(const std::string& text) {
  if (auto policy = value_named(kMemoryPolicies, text)) return *policy;
  throw ScheduleError(
      "grafx.schedule.invalid_options",
      "unknown memory policy \"" + text + "\"; expected " + names_listed(kMemoryPolicies, " or "));
}

AdjointPlan make_adjoint_plan(const RenderPlan& plan, const AdjointPlanOptions& options) {
  auto check_type = [&](const std::string& type, const std::string& what) {
    if (!plan.types.contains(type) || plan.n_graph_nodes[size_t(plan.types.id(type))] == 0)
      throw ScheduleError("grafx.schedule.invalid_options",
                          what + ": type \"" + type + "\" has no node in the graph");
  };
  for (const auto& [type, policy] : options.memory) check_type(type, "memory policies");
  for (const auto& type : options.frozen_types) check_type(type, "frozen types");
  std::vector<int64_t> step_of_row(size_t(plan.n_buffer_rows), -1);
  for (size_t k = 0; k < plan.steps.size(); ++k)
    for (int64_t row : plan.steps[k].writes.rows()) step_of_row[size_t(row)] = int64_t(k);
  auto leads_to_gradient = [&](const std::vector<bool>& needed, const InletRead& read) {
    for (int64_t row : read.rows.rows())
      if (needed[size_t(step_of_row[size_t(row)])]) return true;
    return false;
  };

  // needed[k]: step k's outputs lead back to a parameter or source that wants a gradient.
  std::vector<bool> needed(plan.steps.size(), false), own(plan.steps.size(), false);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& step   = plan.steps[k];
    const std::string name = plan.types.name(step.type);
    if (step.type == NodeTypes::kIn)
      own[k] = options.source_gradients;
    else if (!is_utility_type(step.type))
      own[k] = !options.frozen_types.count(name) &&
               (!options.parameterless_types.count(name) || plan.dry_wet_types[size_t(step.type)]);
    needed[k] = own[k];
    for (const auto& read : step.reads) needed[k] = needed[k] || leads_to_gradient(needed, read);
  }

  AdjointPlan adjoint;
  adjoint.types           = plan.types;
  adjoint.node_ids        = plan.node_ids;
  adjoint.source_index    = plan.source_index;
  adjoint.n_forward_steps = int64_t(plan.steps.size());
  for (size_t k = plan.steps.size(); k-- > 0;) {
    const PlanStep& step = plan.steps[k];
    if (!needed[k]) {
      adjoint.skipped.push_back(int64_t(k));
      continue;
    }
    AdjointStep a;
    a.forward_step        = int64_t(k);
    a.type                = step.type;
    a.nodes               = step.nodes;
    a.cotangent_rows      = step.writes;
    a.vjp                 = !is_utility_type(step.type);
    a.parameter_gradients = a.vjp && own[k];
    if (a.parameter_gradients) a.parameter_rows = step.parameter_rows;
    auto policy = options.memory.find(plan.types.name(step.type));
    if (a.vjp && policy != options.memory.end()) a.memory = policy->second;
    for (size_t r = 0; r < step.reads.size(); ++r)
      if (leads_to_gradient(needed, step.reads[r]))
        a.inlets.push_back({step.reads[r].inlet, int64_t(r), step.reads[r].aggregation,
                            step.reads[r].segments, step.reads[r].rows});
    a.source_gradients = step.type == NodeTypes::kIn;
    adjoint.steps.push_back(std::move(a));
  }
  return adjoint;
}

namespace {

/// The transpose of a forward aggregation, in words.
std::string transpose_of(const InletAdjoint& inlet) {
  switch (inlet.aggregation) {
    case Aggregation::kNone:
      return "none";
    case Aggregation::kSum:
      return "broadcast (of sum)";
    case Aggregation::kSegmentSum:
      return "index read by " + detail::list(inlet.segments) + " (of segment-sum)";
  }
  return "?";
}

}  // namespace

std::string AdjointPlan::to_string() const {
  std::ostringstream s;
  s << "AdjointPlan: " << steps.size() << " of " << n_forward_steps << " steps in reverse";
  if (!skipped.empty()) s << " (" << skipped.size() << " need no gradient)";
  s << "\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const AdjointStep& a = steps[i];
    s << "Adjoint #" << i << " (of Render #" << a.forward_step << ")\n"
      << "  - Node type: " << types.name(a.type) << "\n"
      << "  - Cotangent read: "
      << (a.type == NodeTypes::kOut ? "output cotangents" : a.cotangent_rows.to_string()) << "\n";
    if (a.vjp)
      s << "  - Vector-Jacobian product: " << types.name(a.type) << " on " << a.nodes.size()
        << (a.nodes.size() == 1 ? " row" : " rows") << ", "
        << (a.memory == MemoryPolicy::kSave ? "from the saved forward pass"
                                            : "forward pass recomputed from its saved inputs")
        << "\n";
    if (a.parameter_gradients)
      s << "  - Parameter gradient write: " << a.parameter_rows.to_string() << "\n";
    const bool several = types[a.type].inlets.size() > 1;
    for (const auto& inlet : a.inlets) {
      std::string port = several ? " <" + inlet.inlet + ">" : "";
      s << "  - Aggregation transpose" << port << ": " << transpose_of(inlet) << "\n"
        << "  - Cotangent scatter-add" << port << ": " << inlet.rows.to_string() << "\n";
    }
    if (a.source_gradients)
      s << "  - Source gradient write: sources " << RowAccess::of(source_index).to_string() << "\n";
  }
  if (!skipped.empty()) {
    s << "Skipped (no gradient needed through them):";
    for (int64_t k : skipped) s << " Render #" << k;
    s << "\n";
  }
  return s.str();
}

std::string AdjointPlan::to_json() const {
  using json      = nlohmann::json;
  json steps_json = json::array();
  for (const auto& a : steps) {
    json inlets = json::array();
    for (const auto& inlet : a.inlets) {
      json i = {{"inlet", inlet.inlet},
                {"aggregation", grafx::to_string(inlet.aggregation)},
                {"scatter_add", detail::to_json(inlet.rows)}};
      if (!inlet.segments.empty()) i["segments"] = inlet.segments;
      inlets.push_back(i);
    }
    json step = {{"forward_step", a.forward_step},
                 {"type", types.name(a.type)},
                 {"nodes", detail::to_json(RowAccess::of(a.nodes))},
                 {"cotangent_rows", detail::to_json(a.cotangent_rows)},
                 {"vjp", a.vjp},
                 {"parameter_rows", detail::to_json(a.parameter_rows)},
                 {"inlets", inlets},
                 {"source_gradients", a.source_gradients}};
    if (a.vjp) step["memory"] = grafx::to_string(a.memory);
    steps_json.push_back(step);
  }
  json plan = {{"format", "grafx.adjoint_plan"},
               {"version", 1},
               {"n_forward_steps", n_forward_steps},
               {"steps", steps_json},
               {"skipped", skipped},
               {"node_ids", node_ids}};
  return plan.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace grafx
