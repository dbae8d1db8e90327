#pragma once
/// Node reordering for rendering: live nodes renumbered so that each step of a schedule
/// occupies a contiguous range of rows (and so each step's parameter rows are contiguous too),
/// with the nodes of a step ordered like their sources so that reads become slices.

#include <grafx/schedule/schedule.h>

#include <vector>

namespace grafx {

struct Reordering {
  GraphTensor graph;              ///< the live nodes only, step by step
  Schedule schedule;              ///< the schedule in the new rows (no dead rows)
  std::vector<int64_t> old_rows;  ///< new row -> old row
  std::vector<int64_t> new_rows;  ///< old row -> new row, -1 for dead rows
};

/// Reorders a graph for a schedule of it (from schedule_graph). `in` and `out` nodes keep their
/// relative order (source and output order); nodes of other steps are sorted by where their
/// sources are, then by old row.
Reordering reorder_for_render(const GraphTensor& graph, const Schedule& schedule);

}  // namespace grafx
