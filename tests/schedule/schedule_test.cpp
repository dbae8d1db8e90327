// Type scheduling on seeded random DAGs (with multi-port nodes and dead nodes) and random pruned
// consoles: partition, causality, homogeneity, maximality, the order of the methods, and the
// optimal method against an exhaustive search over every homogeneous causal partition.

#include <grafx/graph/console.h>
#include <grafx/graph/random_graph.h>
#include <grafx/plan/render_plan.h>
#include <grafx/schedule/schedule.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <bitset>
#include <cmath>
#include <queue>
#include <unordered_map>

namespace grafx {
namespace {

std::vector<int64_t> values(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/// Shortest schedule by breadth-first search over visited sets, where a step takes ANY
/// non-empty set of ready nodes of one type (not only all of them). Independent of the library's
/// search: it also checks that maximal steps lose nothing. Processor nodes ≤ 20.
int64_t exhaustive_calls(const GraphTensor& g) {
  const int64_t n_rows = g.n_nodes(), n_edges = g.n_edges();
  auto type = values(g.node_types), index = values(g.edge_index);
  std::vector<bool> live(static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) live[size_t(r)] = type[size_t(r)] == NodeTypes::kOut;
  for (bool changed = true; changed;) {
    changed = false;
    for (int64_t e = 0; e < n_edges; ++e)
      if (live[size_t(index[size_t(n_edges + e)])] && !live[size_t(index[size_t(e)])])
        live[size_t(index[size_t(e)])] = changed = true;
  }
  std::vector<int64_t> nodes;  // live processor and mix rows
  std::vector<int64_t> bit(size_t(n_rows), -1);
  for (int64_t r = 0; r < n_rows; ++r)
    if (live[size_t(r)] && type[size_t(r)] != NodeTypes::kIn &&
        type[size_t(r)] != NodeTypes::kOut) {
      bit[size_t(r)] = int64_t(nodes.size());
      nodes.push_back(r);
    }
  const int64_t n = int64_t(nodes.size());
  EXPECT_LE(n, 20);
  std::vector<uint32_t> preds(size_t(n), 0);
  for (int64_t e = 0; e < n_edges; ++e) {
    int64_t s = bit[size_t(index[size_t(e)])], d = bit[size_t(index[size_t(n_edges + e)])];
    if (s >= 0 && d >= 0) preds[size_t(d)] |= 1u << s;
  }
  const uint32_t all = n == 32 ? ~0u : (1u << n) - 1;
  std::unordered_map<uint32_t, int64_t> distance{{0u, 0}};
  std::queue<uint32_t> queue;
  queue.push(0u);
  while (!queue.empty()) {
    uint32_t visited = queue.front();
    queue.pop();
    if (visited == all) return distance[visited];
    std::map<int64_t, uint32_t> ready;  // by type
    for (int64_t v = 0; v < n; ++v)
      if (!(visited >> v & 1) && (preds[size_t(v)] & ~visited) == 0)
        ready[type[size_t(nodes[size_t(v)])]] |= 1u << v;
    for (const auto& [t, mask] : ready)
      for (uint32_t subset = mask; subset; subset = (subset - 1) & mask)
        if (distance.emplace(visited | subset, distance[visited] + 1).second)
          queue.push(visited | subset);
  }
  return distance[all];
}

Schedule run(const GraphTensor& g, ScheduleMethod method, std::vector<std::string> fixed = {}) {
  ScheduleOptions options;
  options.method      = method;
  options.fixed_order = std::move(fixed);
  return schedule_graph(g, options);
}

TEST(Schedule, MethodNames) {
  for (auto m : {ScheduleMethod::kOneByOne, ScheduleMethod::kFixed, ScheduleMethod::kGreedy,
                 ScheduleMethod::kBeam, ScheduleMethod::kOptimal})
    EXPECT_EQ(parse_schedule_method(to_string(m)), m);
  EXPECT_GRAFX_ERROR(parse_schedule_method("fast"), "grafx.schedule.unknown_method",
                     "methods: one-by-one, fixed, greedy, beam, optimal");
}

TEST(Schedule, ConsoleSchedulesAsChainMixChainMix) {
  ConsoleOptions options;
  options.n_tracks     = 8;
  options.track_groups = ConsoleOptions::even_groups(8, 3);
  GraphTensor g        = to_tensor(build_console(options).graph);
  for (auto method : {ScheduleMethod::kFixed, ScheduleMethod::kGreedy, ScheduleMethod::kBeam,
                      ScheduleMethod::kOptimal}) {
    Schedule s = run(g, method, console_fixed_order(console_chain()));
    EXPECT_EQ(s.n_calls(), 16) << to_string(method);
    check_schedule(g, s, /*maximal=*/true);
  }
  Schedule optimal = run(g, ScheduleMethod::kOptimal);
  EXPECT_TRUE(optimal.proven_optimal);
  EXPECT_EQ(optimal.lower_bound, 16);
  EXPECT_EQ(optimal.type_sequence(g.types),
            "in, eq, compressor, noise_gate, stereo_imager, gain_pan, delay, reverb, mix, eq, "
            "compressor, noise_gate, stereo_imager, gain_pan, delay, reverb, mix, out");
  Schedule one = run(g, ScheduleMethod::kOneByOne);
  EXPECT_EQ(one.n_calls(), 77 + 4);
  check_schedule(g, one, /*maximal=*/false);
  for (size_t k = 1; k + 1 < one.steps.size(); ++k) EXPECT_EQ(one.steps[k].size(), 1u);
}

TEST(Schedule, FixedConsoleOrderIsValidOnEveryPrunedConsole) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    ConsoleOptions options;
    options.n_tracks = 1 + int64_t(seed % 23);
    if (seed % 3)
      options.track_groups =
          ConsoleOptions::even_groups(options.n_tracks, 1 + int64_t(seed % 5) % options.n_tracks);
    Graph console = build_console(options).graph;
    PruneOptions prune;
    prune.probability = random_pruning_rates();
    prune.seed        = seed;
    prune_randomly(console, prune);
    GraphTensor g  = to_tensor(console);
    Schedule fixed = run(g, ScheduleMethod::kFixed, console_fixed_order(console_chain()));
    check_schedule(g, fixed, /*maximal=*/true);
    Schedule optimal = run(g, ScheduleMethod::kOptimal);
    EXPECT_TRUE(optimal.proven_optimal) << seed;
    EXPECT_LE(optimal.n_calls(), fixed.n_calls()) << seed;
  }
}

TEST(Schedule, FixedListThatRunsOutIsAClearError) {
  GraphTensor g = to_tensor(build_console({}).graph);
  EXPECT_GRAFX_ERROR(run(g, ScheduleMethod::kFixed, console_chain()),
                     "grafx.schedule.fixed_exhausted",
                     "ran out after 7 steps with nodes still to place; ready: mix (1)");
  EXPECT_GRAFX_ERROR(run(g, ScheduleMethod::kFixed, {"eq", "flanger"}), "grafx.graph.unknown_type",
                     "flanger");
}

TEST(Schedule, InvalidGraphsAndOptions) {
  Graph g(console_node_types());
  NodeId in = g.add("in");
  NodeId eq = g.add("eq", "lonely");
  g.connect(in, eq);
  EXPECT_GRAFX_ERROR(schedule_graph(to_tensor(g)), "grafx.graph.no_output", "no \"out\"");
  NodeId out = g.add("out");
  g.connect(eq, out);
  g.add("compressor", "unfed");
  EXPECT_GRAFX_ERROR(schedule_graph(to_tensor(g)), "grafx.graph.unconnected_inlet",
                     "node 3 (compressor \"unfed\") has nothing connected to its inlet \"main\"");
  // A cycle can only come from a hand-made tensor.
  GraphTensor cyclic = to_tensor(build_console({}).graph);
  cyclic.edge_index  = at::cat({cyclic.edge_index, at::tensor({9, 8}, at::kLong).view({2, 1})}, 1);
  cyclic.edge_ports  = at::cat({cyclic.edge_ports, at::zeros({1, 2}, at::kLong)});
  EXPECT_GRAFX_ERROR(schedule_graph(cyclic), "grafx.graph.cycle", "lies on a cycle");
  ScheduleOptions bad;
  bad.beam_width = 0;
  EXPECT_GRAFX_ERROR(schedule_graph(to_tensor(build_console({}).graph), bad),
                     "grafx.schedule.invalid_options", "width 0");
  ScheduleOptions endless(ScheduleMethod::kOptimal);
  endless.time_budget_s = std::nan("");
  EXPECT_GRAFX_ERROR(schedule_graph(to_tensor(build_console({}).graph), endless),
                     "grafx.schedule.invalid_options", "time budget");
}

TEST(Schedule, DeadNodesAreListedAndLeftOut) {
  Graph g(console_node_types());
  NodeId in = g.add("in"), spare = g.add("in");
  NodeId eq = g.add("eq"), dead = g.add("reverb"), deader = g.add("delay");
  NodeId out = g.add("out");
  g.connect(in, eq);
  g.connect(eq, out);
  g.connect(eq, dead);
  g.connect(dead, deader);
  g.connect(spare, dead);
  Schedule s = schedule_graph(to_tensor(g), ScheduleOptions(ScheduleMethod::kOptimal));
  EXPECT_EQ(s.dead_rows, (std::vector<int64_t>{spare, dead, deader}));
  EXPECT_EQ(s.n_calls(), 1);
  EXPECT_EQ(s.steps.front(), std::vector<int64_t>{in});
  check_schedule(to_tensor(g), s, true);
}

TEST(Schedule, CheckScheduleCatchesBrokenSchedules) {
  GraphTensor g    = to_tensor(build_console({}).graph);
  Schedule good    = run(g, ScheduleMethod::kGreedy);
  Schedule swapped = good;
  std::swap(swapped.steps[1], swapped.steps[2]);
  std::swap(swapped.step_types[1], swapped.step_types[2]);
  EXPECT_GRAFX_ERROR(check_schedule(g, swapped, false), "grafx.schedule.invalid", "goes from step");
  Schedule mixed      = good;
  mixed.step_types[1] = g.types.id("reverb");
  EXPECT_GRAFX_ERROR(check_schedule(g, mixed, false), "grafx.schedule.invalid",
                     "not of its step's type");
  Schedule split = good;
  split.steps.insert(split.steps.begin() + 2, {split.steps[1].back()});
  split.steps[1].pop_back();
  split.step_types.insert(split.step_types.begin() + 2, split.step_types[1]);
  EXPECT_NO_THROW(check_schedule(g, split, false));
  EXPECT_GRAFX_ERROR(check_schedule(g, split, true), "grafx.schedule.invalid", "leaves ready row");
  Schedule missing = good;
  missing.steps[3].pop_back();
  EXPECT_GRAFX_ERROR(check_schedule(g, missing, false), "grafx.schedule.invalid",
                     "appears in 0 steps");
}

TEST(Schedule, RowsAndTypesFromCallersAndFilesAreCheckedBeforeUse) {
  // Issue 59: step_of_rows wrote row r before any check (a row past the end corrupted the heap),
  // and a plan read the ids of dead rows unchecked (a pickled plan could name any).
  GraphTensor g = to_tensor(build_console({}).graph);
  Schedule good = run(g, ScheduleMethod::kGreedy);
  EXPECT_GRAFX_ERROR(good.step_of_rows(0), "grafx.schedule.invalid", "but there are 0");
  EXPECT_GRAFX_ERROR(good.step_of_rows(1), "grafx.schedule.invalid", "but there are 1");
  EXPECT_GRAFX_ERROR(good.step_of_rows(-1), "grafx.schedule.invalid", "at least 0");
  EXPECT_EQ(good.step_of_rows(g.n_nodes()).size(), size_t(g.n_nodes()));
  Schedule far = good;
  far.steps[1].push_back(1000000000);
  EXPECT_GRAFX_ERROR(check_schedule(g, far, false), "grafx.schedule.invalid",
                     "row 1000000000 does not exist");
  EXPECT_GRAFX_ERROR(make_render_plan(g, far), "grafx.schedule.invalid", "does not exist");
  for (int64_t dead : {int64_t(-1), g.n_nodes(), int64_t(5000)}) {
    Schedule wrong = good;
    wrong.dead_rows.push_back(dead);
    EXPECT_GRAFX_ERROR(make_render_plan(g, wrong), "grafx.schedule.invalid",
                       "dead row " + std::to_string(dead) + " does not exist");
  }
  Schedule typed      = good;
  typed.step_types[1] = g.types.size();
  EXPECT_GRAFX_ERROR(check_schedule(g, typed, false), "grafx.schedule.invalid",
                     "step type " + std::to_string(g.types.size()) + " does not exist");
  typed.step_types[1] = -3;
  EXPECT_GRAFX_ERROR(check_schedule(g, typed, false), "grafx.schedule.invalid", "step type -3");
}

// Thousands of random graphs: every method valid, the methods ordered, optimal exact.
TEST(Schedule, RandomGraphsInvariantsAndOptimality) {
  int64_t proven = 0, compared = 0, strictly_better_than_greedy = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    RandomGraphOptions options;
    options.n_processors = 4 + int64_t(seed % 12);
    options.n_inputs     = 1 + int64_t(seed % 4);
    options.n_outputs    = 1 + int64_t(seed % 3 == 0);
    options.n_types      = 2 + int64_t(seed % 4);
    options.multi_port   = seed % 2 == 0;
    GraphTensor g        = to_tensor(random_graph(seed, options));
    Schedule one         = run(g, ScheduleMethod::kOneByOne);
    Schedule greedy      = run(g, ScheduleMethod::kGreedy);
    Schedule beam        = run(g, ScheduleMethod::kBeam);
    Schedule optimal     = run(g, ScheduleMethod::kOptimal);
    check_schedule(g, one, false);
    for (const Schedule* s : {&greedy, &beam, &optimal}) check_schedule(g, *s, true);
    ASSERT_LE(optimal.n_calls(), beam.n_calls()) << seed;
    ASSERT_LE(beam.n_calls(), greedy.n_calls()) << seed;
    ASSERT_LE(greedy.n_calls(), one.n_calls()) << seed;
    EXPECT_TRUE(optimal.proven_optimal) << seed;
    proven += optimal.proven_optimal;
    strictly_better_than_greedy += optimal.n_calls() < greedy.n_calls();
    if (options.n_processors <= 12) {  // up to 12 processor nodes: exhaustive search
      ASSERT_EQ(optimal.n_calls(), exhaustive_calls(g)) << seed;
      ++compared;
    }
  }
  EXPECT_EQ(proven, 2000);
  EXPECT_EQ(compared, 1502) << "every graph of up to 12 processor nodes";
  EXPECT_GT(strictly_better_than_greedy, 20) << "random graphs where greedy is not optimal exist";
}

TEST(Schedule, BeamOptionsAndLookAhead) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    RandomGraphOptions options;
    options.n_processors   = 30;
    options.n_types        = 5;
    GraphTensor g          = to_tensor(random_graph(seed, options));
    ScheduleOptions narrow = ScheduleOptions(ScheduleMethod::kBeam);
    narrow.beam_width      = 1;
    ScheduleOptions deep   = ScheduleOptions(ScheduleMethod::kBeam);
    deep.beam_depth        = 3;
    Schedule a = schedule_graph(g, narrow), b = schedule_graph(g, deep);
    check_schedule(g, a, true);
    check_schedule(g, b, true);
    EXPECT_LE(a.n_calls(), run(g, ScheduleMethod::kGreedy).n_calls())
        << "width 1 keeps the greedy line";
    EXPECT_GE(b.n_calls(), run(g, ScheduleMethod::kOptimal).n_calls());
  }
}

TEST(Schedule, OptimalUnderATinyBudgetReturnsTheBeamScheduleUnproven) {
  RandomGraphOptions options;
  options.n_processors = 400;
  options.n_types      = 6;
  options.n_inputs     = 20;
  GraphTensor g        = to_tensor(random_graph(11, options));
  ScheduleOptions tiny = ScheduleOptions(ScheduleMethod::kOptimal);
  tiny.state_budget    = 1;
  Schedule s           = schedule_graph(g, tiny);
  check_schedule(g, s, true);
  Schedule beam = run(g, ScheduleMethod::kBeam);
  EXPECT_LE(s.n_calls(), beam.n_calls());
  EXPECT_LE(s.lower_bound, s.n_calls());
}

}  // namespace
}  // namespace grafx
