#pragma once
// The scheduling methods over a SearchGraph (private to the library).

#include <grafx/schedule/schedule.h>

#include "schedule/search_graph.h"

namespace grafx::detail {

/// The schedule that takes, step by step, every ready node of each type in `sequence`.
Schedule replay(const SearchGraph& graph, const std::vector<int64_t>& sequence,
                ScheduleMethod method);

/// Each step takes the type with the most ready nodes (ties: the lowest type).
std::vector<int64_t> greedy_sequence(const SearchGraph& graph);

/// Beam search: keeps the `width` best partial schedules per step, scored by steps taken plus
/// the best lower bound reachable within `depth` steps; duplicate states are merged.
std::vector<int64_t> beam_sequence(const SearchGraph& graph, int64_t width, int64_t depth,
                                   int64_t& expanded);

/// A* search for a shortest schedule (see optimal.cpp).
Schedule optimal_schedule(const SearchGraph& graph, const ScheduleOptions& options);

}  // namespace grafx::detail
