// Optimal type scheduling by A* search.
//
// States are the sets of visited nodes (closed under predecessors); a move takes every ready
// node of one type. Taking all ready nodes of a type is never worse than taking some of them
// (a state that has visited more needs no more steps), so searching over maximal moves finds a
// shortest schedule among all causal, homogeneous partitions.
//
// - Heuristic: SearchGraph::lower_bound, the sum over types of the most nodes of that type on one
//   remaining path. It is admissible and consistent (one step lowers it by at most one), so the
//   first complete state popped is optimal.
// - Upper bound: the better of greedy and beam search; states that cannot beat it are dropped,
//   and it is returned (unproven) if the budget runs out.
// - Dominance: a move is forced when it takes every remaining node of its type (then no other
//   move can be better first), and states reached again with no fewer steps are dropped.

#include <grafx/error.h>

#include "schedule/schedulers.h"

#include <chrono>
#include <queue>
#include <unordered_map>

namespace grafx::detail {
namespace {

struct SearchState {
  Bitset visited;
  std::vector<int32_t> ready;
  std::vector<int32_t> remaining;  // unvisited nodes per type index
  int32_t steps     = 0;
  int32_t bound     = 0;  // lower bound on the steps still needed
  int32_t parent    = -1;
  int32_t type      = -1;  // the move that led here
  int32_t n_visited = 0;
};

struct Entry {
  int32_t f, n_visited, id;
  bool operator<(const Entry& o) const {  // priority_queue pops the largest: smallest f first
    if (f != o.f) return f > o.f;
    return n_visited < o.n_visited;  // deeper first among equals: reaches goals sooner
  }
};

}  // namespace

Schedule optimal_schedule(const SearchGraph& graph, const ScheduleOptions& options) {
  auto start                = std::chrono::steady_clock::now();
  int64_t expanded          = 0;
  std::vector<int64_t> best = greedy_sequence(graph);
  auto beam                 = beam_sequence(graph, options.beam_width, 1, expanded);
  if (beam.size() < best.size()) best = beam;

  std::vector<SearchState> states(1);
  states[0].visited = Bitset(graph.n_nodes());
  states[0].ready   = graph.initial_ready();
  states[0].remaining.assign(graph.types().size(), 0);
  for (int64_t v = 0; v < graph.n_nodes(); ++v) ++states[0].remaining[size_t(graph.type_index(v))];
  states[0].bound = graph.lower_bound(states[0].ready);

  std::priority_queue<Entry> open;
  std::unordered_map<Bitset, int32_t, BitsetHash> fewest_steps;
  open.push({states[0].bound, 0, 0});
  fewest_steps[states[0].visited] = 0;
  int32_t lower_bound             = states[0].bound;
  bool proven                     = false;
  int32_t goal                    = -1;

  while (!open.empty()) {
    Entry entry = open.top();
    open.pop();
    const int32_t id = entry.id;
    if (fewest_steps[states[size_t(id)].visited] < states[size_t(id)].steps) continue;  // stale
    lower_bound = std::max(lower_bound, entry.f);
    if (entry.f >= int32_t(best.size())) {  // nothing left can beat the incumbent
      proven = true;
      break;
    }
    if (states[size_t(id)].ready.empty()) {
      goal   = id;
      proven = true;
      break;
    }
    if (++expanded % 256 == 0 &&
        (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
             options.time_budget_s ||
         int64_t(states.size()) > options.state_budget))
      break;

    auto counts = graph.ready_counts(states[size_t(id)].ready);
    std::vector<int64_t> moves;
    for (size_t t = 0; t < counts.size(); ++t)
      if (counts[t] > 0 && counts[t] == states[size_t(id)].remaining[t]) {
        moves = {int64_t(t)};  // forced: takes every remaining node of this type
        break;
      }
    if (moves.empty())
      for (size_t t = 0; t < counts.size(); ++t)
        if (counts[t] > 0) moves.push_back(int64_t(t));

    for (int64_t t : moves) {
      SearchState child;
      const SearchState& parent = states[size_t(id)];
      child.visited             = parent.visited;
      child.ready               = graph.step(parent.ready, t, child.visited);
      child.remaining           = parent.remaining;
      child.remaining[size_t(t)] -= counts[size_t(t)];
      child.steps     = parent.steps + 1;
      child.bound     = graph.lower_bound(child.ready);
      child.parent    = id;
      child.type      = int32_t(t);
      child.n_visited = parent.n_visited + counts[size_t(t)];
      if (child.steps + child.bound >= int32_t(best.size())) continue;  // cannot improve
      auto [it, fresh] = fewest_steps.emplace(child.visited, child.steps);
      if (!fresh) {
        if (it->second <= child.steps) continue;
        it->second = child.steps;
      }
      if (child.ready.empty()) {  // a complete schedule, better than the incumbent
        best.clear();
        for (const SearchState* s = &child; s->parent >= 0; s = &states[size_t(s->parent)])
          best.insert(best.begin(), s->type);
      }
      open.push({child.steps + child.bound, child.n_visited, int32_t(states.size())});
      states.push_back(std::move(child));
    }
  }
  if (open.empty() && goal < 0) proven = true;  // every state that could beat the incumbent failed

  if (goal >= 0) {
    best.clear();
    for (const SearchState* s = &states[size_t(goal)]; s->parent >= 0;
         s                    = &states[size_t(s->parent)])
      best.insert(best.begin(), s->type);
  }
  Schedule schedule        = replay(graph, best, ScheduleMethod::kOptimal);
  schedule.proven_optimal  = proven;
  schedule.lower_bound     = proven ? int64_t(best.size()) : int64_t(lower_bound);
  schedule.states_expanded = expanded;
  return schedule;
}

}  // namespace grafx::detail
