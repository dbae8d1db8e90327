#pragma once
/// Render plans: a schedule compiled into the reads, sums and writes of each processor call.
///
/// The plan numbers the live nodes step by step (see reorder_for_render) and gives each node one
/// row per **outlet** in a signal buffer, so multi-outlet nodes are exact (GRAFX's buffer has one
/// row per node). Within a step the rows are outlet-major: outlet k of the step's p-th node is
/// row `writes.start + k·n + p` (n nodes), so each outlet's output is one contiguous block.
/// For each step and each inlet the plan lists the buffer rows to read (one per edge, grouped by
/// destination), how to sum them (none: one edge per node; sum: all into the single node;
/// segment-sum: by destination), which parameter rows to use and which rows to write.
///
///   RenderPlan plan = make_render_plan(to_tensor(graph), {ScheduleMethod::kOptimal});
///   std::cout << plan.to_string();   // "Render #1 / - Node type: eq / - Source read: slice ..."

#include <grafx/schedule/schedule.h>

#include <set>
#include <string>
#include <vector>

namespace grafx {

/// A set of rows read or written: nothing, a slice [start, end) or an index list.
struct RowAccess {
  enum class Kind { kNone, kSlice, kIndex };
  Kind kind     = Kind::kNone;
  int64_t start = 0;
  int64_t end   = 0;
  std::vector<int64_t> index;

  /// A slice if the rows are consecutive and ascending, an index otherwise, none if empty.
  static RowAccess of(const std::vector<int64_t>& rows);
  int64_t size() const;
  std::vector<int64_t> rows() const;
  /// "none", "slice with (3, 6)" or "index with [0, 4, 2]" (GRAFX's wording).
  std::string to_string() const;
};

enum class Aggregation { kNone, kSum, kSegmentSum };
/// "none", "sum", "segment-sum".
std::string to_string(Aggregation aggregation);

struct InletRead {
  std::string inlet;
  RowAccess rows;  ///< buffer rows, one per edge, ordered by destination
  Aggregation aggregation = Aggregation::kNone;
  std::vector<int64_t> segments;  ///< kSegmentSum: the destination position of each row
};

struct PlanStep {
  TypeId type = -1;
  std::vector<int64_t> nodes;    ///< plan nodes of this step (contiguous)
  std::vector<InletRead> reads;  ///< one per inlet; none for the `in` step (it reads sources)
  RowAccess parameter_rows;      ///< rows of this type's parameters, in plan order
  RowAccess writes;              ///< buffer rows written; none for the `out` step
};

struct RenderPlan {
  NodeTypes types;
  std::vector<PlanStep> steps;  ///< steps[0] reads the sources, steps.back() are the outputs
  int64_t n_buffer_rows = 0;

  std::vector<NodeId> node_ids;                 ///< graph id of each plan node
  std::vector<TypeId> node_types;               ///< type of each plan node
  std::vector<NodeProperties> node_properties;  ///< name, dry/wet, bypass, automation of each
  /// For each type, whether any of its graph nodes (dead ones included) carries a wet amount:
  /// then its values include wet amounts (TypeParameters::wet), one row per graph node.
  std::vector<bool> dry_wet_types;
  /// The clock of the automation curves, and for each type the parameters any of its graph
  /// nodes automates: then its values include their curves (TypeParameters::curves), one row
  /// per graph node.
  Automation automation;
  std::vector<std::set<std::string>> automated_types;
  /// Number of sources the graph takes: one per `in` node, live or dead.
  int64_t n_sources = 0;
  /// For each node of the `in` step, the source it reads (sources feed `in` nodes in id order).
  std::vector<int64_t> source_index;
  /// Graph ids of the nodes left out: on no path from an `in` to an `out`.
  std::vector<NodeId> dead_nodes;
  /// Number of nodes of each type in the graph (dead ones included): the parameter rows a
  /// caller provides in graph order.
  std::vector<int64_t> n_graph_nodes;
  /// For each type, the graph-order parameter row of each plan-order parameter row.
  std::vector<std::vector<int64_t>> parameter_graph_rows;

  ScheduleMethod method = ScheduleMethod::kBeam;
  bool proven_optimal   = false;

  /// Processor calls (steps other than `in` and `out`).
  int64_t n_calls() const { return static_cast<int64_t>(steps.size()) - 2; }
  /// Number of `out` nodes: the graph's outputs, in id order.
  int64_t n_outputs() const { return static_cast<int64_t>(steps.back().nodes.size()); }
  /// True when a type's parameter rows are already in plan order (no gather needed).
  bool parameters_in_graph_order(TypeId type) const;

  /// The plan in the form of GRAFX's documentation ("Render #i", "- Node type", ...).
  std::string to_string() const;
  /// The plan as JSON (format "grafx.plan", version 1).
  std::string to_json() const;
};

/// Compiles a schedule of `graph` into a plan (reordering the graph first).
RenderPlan make_render_plan(const GraphTensor& graph, const Schedule& schedule);
/// Schedules and compiles.
RenderPlan make_render_plan(const GraphTensor& graph, const ScheduleOptions& options = {});

}  // namespace grafx
