#include <grafx/enum_names.h>
#include <grafx/error.h>
#include <grafx/schedule/schedule.h>

#include "schedule/schedulers.h"
#include "schedule/search_graph.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>

namespace grafx {
namespace detail {

Schedule replay(const SearchGraph& graph, const std::vector<int64_t>& sequence,
                ScheduleMethod method) {
  Schedule schedule;
  schedule.method    = method;
  schedule.dead_rows = graph.dead_rows();
  schedule.steps.push_back(graph.in_rows());
  schedule.step_types.push_back(NodeTypes::kIn);
  Bitset visited(graph.n_nodes());
  std::vector<int32_t> ready = graph.initial_ready(), taken;
  for (int64_t t : sequence) {
    ready = graph.step(ready, t, visited, &taken);
    if (taken.empty()) continue;
    std::vector<int64_t> rows;
    for (int32_t v : taken) rows.push_back(graph.row(v));
    std::sort(rows.begin(), rows.end());
    schedule.steps.push_back(rows);
    schedule.step_types.push_back(graph.types()[size_t(t)]);
  }
  TORCH_INTERNAL_ASSERT(ready.empty(), "a schedule's type sequence left nodes unplaced");
  schedule.steps.push_back(graph.out_rows());
  schedule.step_types.push_back(NodeTypes::kOut);
  return schedule;
}

std::vector<int64_t> greedy_sequence(const SearchGraph& graph) {
  std::vector<int64_t> sequence;
  Bitset visited(graph.n_nodes());
  std::vector<int32_t> ready = graph.initial_ready();
  while (!ready.empty()) {
    auto counts  = graph.ready_counts(ready);
    int64_t best = std::max_element(counts.begin(), counts.end()) - counts.begin();  // first max
    sequence.push_back(best);
    ready = graph.step(ready, best, visited);
  }
  return sequence;
}

namespace {

struct BeamState {
  Bitset visited;
  std::vector<int32_t> ready;
  std::vector<int64_t> sequence;
  int64_t n_visited = 0;
  int64_t score     = 0;  // steps taken + look-ahead + lower bound on the rest: lower is better
  bool greedy_line  = false;
};

/// The best (lowest) steps-plus-bound reachable within `depth` more steps.
int64_t look_ahead(const SearchGraph& graph, const Bitset& visited,
                   const std::vector<int32_t>& ready, int64_t depth, int64_t& expanded) {
  int64_t best = graph.lower_bound(ready);
  if (depth == 0 || ready.empty()) return best;
  auto counts = graph.ready_counts(ready);
  for (size_t t = 0; t < counts.size(); ++t) {
    if (counts[t] == 0) continue;
    Bitset next_visited = visited;
    auto next           = graph.step(ready, int64_t(t), next_visited);
    ++expanded;
    best = std::min(best, 1 + look_ahead(graph, next_visited, next, depth - 1, expanded));
  }
  return best;
}

}  // namespace

std::vector<int64_t> beam_sequence(const SearchGraph& graph, int64_t width, int64_t depth,
                                   int64_t& expanded) {
  // The beam always keeps the greedy line (the state greedy scheduling would reach), so beam
  // search is never worse than greedy.
  std::vector<BeamState> beam(1);
  beam[0].visited     = Bitset(graph.n_nodes());
  beam[0].ready       = graph.initial_ready();
  beam[0].greedy_line = true;
  while (true) {
    for (const auto& state : beam)
      if (state.ready.empty()) return state.sequence;  // beam is sorted: the first is best
    std::unordered_map<Bitset, size_t, BitsetHash> seen;
    std::vector<BeamState> children;
    for (const auto& state : beam) {
      auto counts    = graph.ready_counts(state.ready);
      int64_t greedy = std::max_element(counts.begin(), counts.end()) - counts.begin();
      for (size_t t = 0; t < counts.size(); ++t) {
        if (counts[t] == 0) continue;
        BeamState child;
        child.visited = state.visited;
        child.ready   = graph.step(state.ready, int64_t(t), child.visited);
        ++expanded;
        child.sequence = state.sequence;
        child.sequence.push_back(int64_t(t));
        child.n_visited   = state.n_visited + counts[t];
        child.greedy_line = state.greedy_line && int64_t(t) == greedy;
        child.score       = int64_t(child.sequence.size()) +
                      look_ahead(graph, child.visited, child.ready, depth - 1, expanded);
        auto [it, fresh] = seen.emplace(child.visited, children.size());
        if (fresh)
          children.push_back(std::move(child));  // same nodes visited: same future
        else if (child.greedy_line)
          children[it->second].greedy_line = true;
      }
    }
    std::stable_sort(children.begin(), children.end(), [](const BeamState& a, const BeamState& b) {
      if (a.score != b.score) return a.score < b.score;
      return a.n_visited > b.n_visited;
    });
    if (int64_t(children.size()) > width) {
      auto line = std::find_if(children.begin(), children.end(),
                               [](const BeamState& s) { return s.greedy_line; });
      if (line - children.begin() >= width) std::swap(children[size_t(width - 1)], *line);
      children.resize(size_t(width));
    }
    beam = std::move(children);
  }
}

}  // namespace detail

using detail::SearchGraph;

namespace {
constexpr EnumNames<ScheduleMethod, 5> kScheduleMethods{{{ScheduleMethod::kOneByOne, "one-by-one"},
                                                         {ScheduleMethod::kFixed, "fixed"},
                                                         {ScheduleMethod::kGreedy, "greedy"},
                                                         {ScheduleMethod::kBeam, "beam"},
                                                         {ScheduleMethod::kOptimal, "optimal"}}};
}  // namespace

std::string to_string(ScheduleMethod method) { return name_of(kScheduleMethods, method); }

ScheduleMethod parse_schedule_method(const std::string& name) {
  if (auto method = value_named(kScheduleMethods, name)) return *method;
  throw ScheduleError(
      "grafx.schedule.unknown_method",
      "unknown schedule method \"" + name + "\"; methods: " + names_listed(kScheduleMethods, ", "));
}

std::vector<int64_t> Schedule::step_of_rows(int64_t n_rows) const {
  if (n_rows < 0)
    throw ScheduleError(
        "grafx.schedule.invalid",
        "expected a number of rows of at least 0, but got " + std::to_string(n_rows));
  std::vector<int64_t> step_of(size_t(n_rows), -1);
  for (size_t k = 0; k < steps.size(); ++k)
    for (int64_t r : steps[k]) {
      if (r < 0 || r >= n_rows)  // checked before it is written: a row from a caller or a file
        throw ScheduleError("grafx.schedule.invalid",
                            "invalid schedule: step " + std::to_string(k) + " lists row " +
                                std::to_string(r) + ", but there are " + std::to_string(n_rows));
      step_of[size_t(r)] = int64_t(k);
    }
  return step_of;
}

std::string Schedule::type_sequence(const NodeTypes& types) const {
  std::string text;
  for (TypeId t : step_types) {
    if (t < 0 || t >= types.size())  // a schedule from a caller or a pickle
      throw ScheduleError("grafx.schedule.invalid",
                          "invalid schedule: step type " + std::to_string(t) + " does not exist");
    text += (text.empty() ? "" : ", ") + types.name(t);
  }
  return text;
}

std::vector<std::string> console_fixed_order(const std::vector<std::string>& chain) {
  std::vector<std::string> order = chain;
  order.push_back("mix");
  order.insert(order.end(), chain.begin(), chain.end());
  order.push_back("mix");
  return order;
}

namespace {

std::vector<int64_t> fixed_sequence(const SearchGraph& graph, const GraphTensor& tensor,
                                    const std::vector<std::string>& order) {
  std::vector<int64_t> list;  // type indices of the listed types (-1: absent from the graph)
  for (const auto& name : order) {
    TypeId type = tensor.types.id(name);
    if (type == NodeTypes::kIn || type == NodeTypes::kOut) continue;
    auto it = std::find(graph.types().begin(), graph.types().end(), type);
    list.push_back(it == graph.types().end() ? -1 : it - graph.types().begin());
  }
  std::vector<int64_t> sequence;
  detail::Bitset visited(graph.n_nodes());
  std::vector<int32_t> ready = graph.initial_ready();
  size_t position            = 0;
  while (!ready.empty()) {
    auto counts = graph.ready_counts(ready);
    while (position < list.size() && (list[position] < 0 || counts[size_t(list[position])] == 0))
      ++position;
    if (position == list.size()) {
      std::string waiting;
      for (size_t t = 0; t < counts.size(); ++t)
        if (counts[t] > 0)
          waiting += std::string(waiting.empty() ? "" : ", ") +
                     tensor.types.name(graph.types()[t]) + " (" + std::to_string(counts[t]) + ")";
      throw ScheduleError("grafx.schedule.fixed_exhausted",
                          "the fixed type list ran out after " + std::to_string(sequence.size()) +
                              " steps with nodes still to place; ready: " + waiting +
                              " (list a type again to use it again)");
    }
    sequence.push_back(list[position]);
    ready = graph.step(ready, list[position], visited);
    ++position;
  }
  return sequence;
}

}  // namespace

Schedule schedule_graph(const GraphTensor& tensor, const ScheduleOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (options.beam_width < 1 || options.beam_depth < 1)
    throw ScheduleError("grafx.schedule.invalid_options",
                        "beam width and depth must be at least 1, but got width " +
                            std::to_string(options.beam_width) + " and depth " +
                            std::to_string(options.beam_depth));
  if (!(options.time_budget_s >= 0) || !std::isfinite(options.time_budget_s))
    throw ScheduleError(
        "grafx.schedule.invalid_options",
        "the search's time budget must be a finite number of seconds ≥ 0, but got " +
            std::to_string(options.time_budget_s));
  SearchGraph graph(tensor);
  Schedule schedule;
  int64_t expanded = 0;
  switch (options.method) {
    case ScheduleMethod::kGreedy:
      schedule = detail::replay(graph, detail::greedy_sequence(graph), options.method);
      break;
    case ScheduleMethod::kOneByOne: {
      // Greedy, then each step split into single nodes in row order: a topological order.
      Schedule greedy     = detail::replay(graph, detail::greedy_sequence(graph), options.method);
      schedule            = greedy;
      schedule.steps      = {greedy.steps.front()};
      schedule.step_types = {NodeTypes::kIn};
      for (size_t k = 1; k + 1 < greedy.steps.size(); ++k)
        for (int64_t row : greedy.steps[k]) {
          schedule.steps.push_back({row});
          schedule.step_types.push_back(greedy.step_types[k]);
        }
      schedule.steps.push_back(greedy.steps.back());
      schedule.step_types.push_back(NodeTypes::kOut);
      break;
    }
    case ScheduleMethod::kFixed:
      schedule =
          detail::replay(graph, fixed_sequence(graph, tensor, options.fixed_order), options.method);
      break;
    case ScheduleMethod::kBeam:
      schedule = detail::replay(
          graph, detail::beam_sequence(graph, options.beam_width, options.beam_depth, expanded),
          options.method);
      break;
    case ScheduleMethod::kOptimal:
      schedule = detail::optimal_schedule(graph, options);
      expanded = schedule.states_expanded;
      break;
  }
  schedule.states_expanded = expanded;
  schedule.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return schedule;
}

void check_schedule(const GraphTensor& graph, const Schedule& schedule, bool maximal) {
  auto fail = [](const std::string& what) {
    throw ScheduleError("grafx.schedule.invalid", "invalid schedule: " + what);
  };
  const int64_t n_rows = graph.n_nodes(), n_edges = graph.n_edges();
  at::Tensor types_tensor = graph.node_types.contiguous(),
             index_tensor = graph.edge_index.contiguous();
  const int64_t* type     = types_tensor.data_ptr<int64_t>();
  const int64_t* index    = index_tensor.data_ptr<int64_t>();
  if (schedule.steps.size() != schedule.step_types.size() || schedule.steps.size() < 2)
    fail("expected at least the `in` and `out` steps, one type per step");
  for (TypeId t : schedule.step_types)
    if (t < 0 || t >= graph.types.size())
      fail("step type " + std::to_string(t) + " does not exist");
  for (size_t i = 0; i < schedule.dead_rows.size(); ++i) {
    const int64_t r = schedule.dead_rows[i];
    if (r < 0 || r >= n_rows) fail("dead row " + std::to_string(r) + " does not exist");
    if (i > 0 && r <= schedule.dead_rows[i - 1]) fail("dead rows are not in ascending order");
  }
  std::vector<int64_t> count(size_t(n_rows), 0);
  for (const auto& step : schedule.steps)
    for (int64_t r : step) {
      if (r < 0 || r >= n_rows) fail("row " + std::to_string(r) + " does not exist");
      ++count[size_t(r)];
    }
  const std::vector<int64_t> step_of = schedule.step_of_rows(n_rows);
  // Live rows: those that reach an `out` (found by a fixed point over the edges).
  std::vector<bool> live(size_t(n_rows), false);
  for (int64_t r = 0; r < n_rows; ++r) live[size_t(r)] = type[r] == NodeTypes::kOut;
  for (bool changed = true; changed;) {
    changed = false;
    for (int64_t e = 0; e < n_edges; ++e)
      if (live[size_t(index[n_edges + e])] && !live[size_t(index[e])])
        live[size_t(index[e])] = changed = true;
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    bool dead = std::binary_search(schedule.dead_rows.begin(), schedule.dead_rows.end(), r);
    if (live[size_t(r)] == dead)
      fail("row " + std::to_string(r) +
           (dead ? " is live but listed dead" : " is dead but not listed"));
    if (live[size_t(r)] && count[size_t(r)] != 1)
      fail("row " + std::to_string(r) + " appears in " + std::to_string(count[size_t(r)]) +
           " steps");
    if (!live[size_t(r)] && count[size_t(r)] != 0)
      fail("dead row " + std::to_string(r) + " is scheduled");
    if (!live[size_t(r)]) continue;
    size_t last = schedule.steps.size() - 1;
    if ((type[r] == NodeTypes::kIn) != (step_of[size_t(r)] == 0))
      fail("`in` rows, and only they, belong in the first step");
    if ((type[r] == NodeTypes::kOut) != (step_of[size_t(r)] == int64_t(last)))
      fail("`out` rows, and only they, belong in the last step");
    if (type[r] != schedule.step_types[size_t(step_of[size_t(r)])])
      fail("row " + std::to_string(r) + " is not of its step's type");
  }
  for (int64_t e = 0; e < n_edges; ++e) {
    int64_t s = index[e], d = index[n_edges + e];
    if (live[size_t(d)] && step_of[size_t(s)] >= step_of[size_t(d)])
      fail("edge " + std::to_string(s) + " -> " + std::to_string(d) + " goes from step " +
           std::to_string(step_of[size_t(s)]) + " to step " + std::to_string(step_of[size_t(d)]));
  }
  if (!maximal) return;
  for (size_t k = 1; k + 1 < schedule.steps.size(); ++k)
    for (int64_t r = 0; r < n_rows; ++r) {
      if (!live[size_t(r)] || type[r] != schedule.step_types[k] || step_of[size_t(r)] <= int64_t(k))
        continue;
      bool ready = true;
      for (int64_t e = 0; e < n_edges; ++e)
        if (index[n_edges + e] == r && step_of[size_t(index[e])] >= int64_t(k)) ready = false;
      if (ready)
        fail("step " + std::to_string(k) + " leaves ready row " + std::to_string(r) +
             " of its type for later");
    }
}

}  // namespace grafx
