#pragma once
/// The adjoint plan: a render plan's reverse program, generated as data one can print, read and
/// run (the Tangent paper's idea: derivatives as a program, not an opaque tape).
///
/// The forward plan reads rows of a signal buffer, aggregates them per inlet and runs one
/// processor call per step. Its adjoint runs the steps in reverse order; for each it
///   - reads the cotangents of the rows the step wrote (for `out`: the output cotangents),
///   - runs the processor's vector-Jacobian product on the step's rows, from its saved forward
///     pass or by recomputing it from its saved inputs (the type's memory policy),
///   - writes its parameter rows' gradients,
///   - transposes each inlet's read: the aggregation first (a sum becomes a broadcast, a segment
///     sum an index read by segment, none stays none), then the gather, which becomes a
///     scatter-add into the cotangents of the rows it read,
///   - and at `in`, adds the sources' gradients.
/// Dead work is left out: a step whose parameters are frozen (or has none) and from which no
/// path leads back to a parameter or source that wants a gradient is skipped, and so is an inlet
/// whose rows lead to none. Cotangents stay lazy: a row nobody added to is a zero never made,
/// and a step whose cotangents are all such zeros is skipped when run (render/adjoint.h).
///
///   AdjointPlan adjoint = make_adjoint_plan(plan, {.frozen_types = {"reverb"}});
///   std::cout << adjoint.to_string();   // "Adjoint #0 (of Render #9) / - Node type: out ..."
#include <grafx/plan/render_plan.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace grafx {

/// What a processor step keeps for its vector-Jacobian product.
enum class MemoryPolicy {
  kSave,       ///< the forward pass's intermediate values (autograd's saved tensors)
  kRecompute,  ///< only its inputs; the forward pass runs again in the backward pass
};
/// "save", "recompute".
std::string to_string(MemoryPolicy policy);
/// Parses "save" or "recompute"; throws ScheduleError [grafx.schedule.invalid_options].
MemoryPolicy parse_memory_policy(const std::string& text);

struct AdjointPlanOptions {
  /// Types whose parameters get no gradient.
  std::set<std::string> frozen_types;
  /// Processor types that have no parameters (besides a node's wet amount, which the plan knows).
  std::set<std::string> parameterless_types;
  /// Whether the sources want gradients.
  bool source_gradients = true;
  /// Memory policy per type; kSave for types not named.
  std::map<std::string, MemoryPolicy> memory;
};

/// The transpose of one inlet's read.
struct InletAdjoint {
  std::string inlet;
  int64_t read = 0;  ///< the position of the read it transposes in the forward step's reads
  Aggregation aggregation = Aggregation::kNone;  ///< the forward aggregation it transposes
  std::vector<int64_t> segments;                 ///< kSegmentSum: each row's destination
  RowAccess rows;  ///< buffer rows whose cotangents it adds into, one per edge
};

struct AdjointStep {
  int64_t forward_step = 0;  ///< the render plan step it reverses
  TypeId type          = -1;
  std::vector<int64_t> nodes;        ///< plan nodes
  RowAccess cotangent_rows;          ///< buffer rows whose cotangents it reads (none for `out`)
  bool vjp                 = false;  ///< runs a processor's vector-Jacobian product
  bool parameter_gradients = false;  ///< writes gradients of parameter_rows
  RowAccess parameter_rows;
  MemoryPolicy memory = MemoryPolicy::kSave;
  std::vector<InletAdjoint> inlets;  ///< the inlets whose cotangents something needs
  bool source_gradients = false;     ///< `in`: adds the sources' gradients
};

struct AdjointPlan {
  NodeTypes types;
  std::vector<AdjointStep> steps;  ///< in reverse order of the forward steps, dead ones left out
  std::vector<int64_t> skipped;    ///< forward steps left out (no gradient needed through them)
  std::vector<NodeId> node_ids;    ///< graph id of each plan node
  std::vector<int64_t> source_index;
  int64_t n_forward_steps = 0;

  /// Readable text, in the style of RenderPlan::to_string.
  std::string to_string() const;
  /// JSON (format "grafx.adjoint_plan", version 1).
  std::string to_json() const;
};

/// Generates the adjoint of a render plan.
AdjointPlan make_adjoint_plan(const RenderPlan& plan, const AdjointPlanOptions& options = {});

}  // namespace grafx
