#pragma once
/// Type scheduling: which nodes run together.
///
/// A schedule partitions the live nodes of a graph (those on a path from an `in` to an `out`)
/// into steps V0..VN: V0 holds every live `in` node, VN every `out` node, and each step between
/// holds nodes of one type (homogeneous) whose predecessors all lie in earlier steps (causal).
/// The batched methods also take, at each step, *every* ready node of the chosen type
/// (maximal), so one processor call per step handles as many nodes as possible. Fewer steps
/// mean fewer, larger processor calls: the source of grafx's speed.
///
/// | method       | steps                                                      |
/// |--------------|------------------------------------------------------------|
/// | `one-by-one` | one node per step, in a topological order (not maximal)     |
/// | `fixed`      | walks a given type list forward, each entry used once       |
/// | `greedy`     | the type with the most ready nodes                          |
/// | `beam`       | beam search (width, look-ahead depth) guided by lower bounds |
/// | `optimal`    | A* with admissible bounds: a shortest schedule, proven       |
///
///   Schedule s = schedule_graph(to_tensor(graph), {ScheduleMethod::kOptimal});
///   s.n_calls();        // processor calls: steps other than V0 and VN
///   s.proven_optimal;   // true when the search proved no shorter schedule exists

#include <grafx/graph/graph_tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace grafx {

enum class ScheduleMethod { kOneByOne, kFixed, kGreedy, kBeam, kOptimal };

/// "one-by-one", "fixed", "greedy", "beam", "optimal".
std::string to_string(ScheduleMethod method);
/// Throws ScheduleError [grafx.schedule.unknown_method] naming the methods.
ScheduleMethod parse_schedule_method(const std::string& name);

struct ScheduleOptions {
  ScheduleOptions() = default;
  ScheduleOptions(ScheduleMethod method) : method(method) {}  // NOLINT: implicit on purpose

  ScheduleMethod method = ScheduleMethod::kBeam;
  /// kFixed: the type names to walk through (`in` and `out` entries are ignored).
  std::vector<std::string> fixed_order;
  /// kBeam (and the optimal search's starting bound): schedules kept per step.
  int64_t beam_width = 32;
  /// kBeam: steps looked ahead when scoring a candidate step (1 = the step itself).
  int64_t beam_depth = 1;
  /// kOptimal: search budget; when spent, the best schedule found is returned (never worse
  /// than beam) with `proven_optimal` false.
  double time_budget_s = 1.0;
  int64_t state_budget = 2'000'000;
};

struct Schedule {
  /// Rows (of the GraphTensor) of each step; step 0 is V0 (`in`), the last is VN (`out`).
  std::vector<std::vector<int64_t>> steps;
  /// The type of each step.
  std::vector<TypeId> step_types;
  /// Rows on no path from an `in` to an `out`, ascending; they are not scheduled.
  std::vector<int64_t> dead_rows;
  ScheduleMethod method = ScheduleMethod::kBeam;
  /// kOptimal: whether no shorter schedule exists (always true for a proven search).
  bool proven_optimal = false;
  /// kOptimal: the best lower bound on the number of calls the search established.
  int64_t lower_bound = 0;
  /// Search states expanded (beam and optimal), for diagnostics.
  int64_t states_expanded = 0;
  double seconds          = 0.0;  ///< time spent scheduling

  /// Processor calls: the steps other than V0 and VN.
  int64_t n_calls() const { return static_cast<int64_t>(steps.size()) - 2; }
  /// The step of each row, -1 for dead rows.
  std::vector<int64_t> step_of_rows(int64_t n_rows) const;
  /// Type names of the steps: "in, eq, compressor, mix, out".
  std::string type_sequence(const NodeTypes& types) const;
};

/// Schedules a graph. Throws GraphError if the graph has no `in` or `out`, an unconnected
/// inlet, or a cycle, and ScheduleError [grafx.schedule.fixed_exhausted] when a fixed type
/// list runs out before every node is placed.
Schedule schedule_graph(const GraphTensor& graph, const ScheduleOptions& options = {});

/// The fixed type order under which every (pruned) mixing console schedules: the chain, a
/// mix, the chain again and the master mix ("eq, ..., reverb, mix, eq, ..., reverb, mix").
std::vector<std::string> console_fixed_order(const std::vector<std::string>& chain);

/// Throws ScheduleError [grafx.schedule.invalid] unless `schedule` is a causal, homogeneous
/// partition of the live rows of `graph` with every `in` first and every `out` last (and, if
/// `maximal`, every step takes every ready node of its type). Used by tests and by the plan.
void check_schedule(const GraphTensor& graph, const Schedule& schedule, bool maximal);

}  // namespace grafx
