// Scheduling benchmark: processor calls and scheduling time of every method on a seeded corpus
// of pruned mixing consoles whose sizes spread like the pruning paper's songs (1 to 133 tracks,
// most between 10 and 40; 1 to 26 subgroups), and beam and optimal search on graphs of over
// 1,000 nodes (133-track consoles and random multi-port DAGs); and loading graph files of chains
// up to 40,000 nodes whose edges are listed last first, against connecting edge by edge.
//
//   build/bin/schedule_bench [n_consoles=240]

#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/random_graph.h>
#include <grafx/processors/registry.h>
#include <grafx/program.h>
#include <grafx/schedule/schedule.h>

#include "bench_support.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

using namespace grafx;

namespace {

Graph corpus_console(uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Log-normal track counts, median 22 (three quarters between 10 and 40), plus the extremes.
  std::lognormal_distribution<double> tracks(std::log(22.0), 0.6);
  int64_t n_tracks = seed == 0   ? 1
                     : seed == 1 ? 133
                                 : std::clamp<int64_t>(std::lround(tracks(rng)), 1, 133);
  std::uniform_real_distribution<double> per_group(3.0, 8.0);
  int64_t n_groups = std::clamp<int64_t>(std::lround(double(n_tracks) / per_group(rng)), 1,
                                         std::min<int64_t>(26, n_tracks));
  ConsoleOptions options;
  options.chain        = default_console_chain();
  options.n_tracks     = n_tracks;
  options.track_groups = ConsoleOptions::even_groups(n_tracks, n_groups);
  Graph graph          = build_console(options, registry_node_types()).graph;
  PruneOptions prune;
  prune.probability = random_pruning_rates();
  prune.seed        = seed;
  prune_randomly(graph, prune);
  return graph;
}

struct Stats {
  double calls = 0, seconds = 0, max_seconds = 0;
  int64_t proven = 0;
};

int run(int argc, char** argv) {
  const int64_t n_consoles =
      int64_t(bench::parse_arguments(argc, argv, {{"consoles", 240, 1, 1e6}})[0]);
  bench::setup_threads();
  std::cout << "# Scheduling\n\n" << bench::machine_description() << "\n\n";

  std::vector<GraphTensor> corpus;
  double mean_tracks = 0, mean_nodes = 0, mean_processors = 0, in_range = 0;
  int64_t max_tracks = 0;
  for (int64_t i = 0; i < n_consoles; ++i) {
    Graph g        = corpus_console(uint64_t(i));
    auto counts    = g.count_per_type();
    int64_t tracks = counts[NodeTypes::kIn];
    mean_tracks += double(tracks) / double(n_consoles);
    in_range += (tracks >= 10 && tracks <= 40) ? 1.0 / double(n_consoles) : 0;
    max_tracks = std::max(max_tracks, tracks);
    mean_nodes += double(g.n_nodes()) / double(n_consoles);
    mean_processors += double(g.n_nodes() - counts[NodeTypes::kIn] - counts[NodeTypes::kOut] -
                              counts[NodeTypes::kMix]) /
                       double(n_consoles);
    corpus.push_back(to_tensor(g));
  }
  std::cout << "Corpus: " << n_consoles << " randomly pruned consoles (paper's per-type ratios), "
            << bench::fixed(mean_tracks, 1) << " tracks on average ("
            << bench::fixed(100 * in_range, 0) << " % between 10 and 40, up to " << max_tracks
            << "), " << bench::fixed(mean_processors, 1) << " processors and "
            << bench::fixed(mean_nodes, 1) << " nodes on average.\n\n";

  struct Method {
    std::string label;
    ScheduleOptions options;
    const char* paper;
  };
  std::vector<Method> methods;
  auto method = [](ScheduleMethod m) { return ScheduleOptions(m); };
  methods.push_back({"optimal (A*)", method(ScheduleMethod::kOptimal), "11.8"});
  methods.push_back({"beam (width 32)", method(ScheduleMethod::kBeam), "12.6"});
  ScheduleOptions fixed = method(ScheduleMethod::kFixed);
  fixed.fixed_order     = console_fixed_order(default_console_chain());
  methods.push_back({"fixed (console order)", fixed, "–"});
  methods.push_back({"greedy", method(ScheduleMethod::kGreedy), "16.4"});
  methods.push_back({"one-by-one", method(ScheduleMethod::kOneByOne), "77.6"});

  std::vector<Stats> stats(methods.size());
  std::vector<double> optimal_calls(corpus.size());
  double beam_gap = 0;
  for (size_t m = 0; m < methods.size(); ++m)
    for (size_t i = 0; i < corpus.size(); ++i) {
      Schedule s = schedule_graph(corpus[i], methods[m].options);
      check_schedule(corpus[i], s, methods[m].options.method != ScheduleMethod::kOneByOne);
      stats[m].calls += double(s.n_calls()) / double(corpus.size());
      stats[m].seconds += s.seconds / double(corpus.size());
      stats[m].max_seconds = std::max(stats[m].max_seconds, s.seconds);
      stats[m].proven += s.proven_optimal;
      if (m == 0) optimal_calls[i] = double(s.n_calls());
      if (m == 1)
        beam_gap += (double(s.n_calls()) - optimal_calls[i]) / std::max(1.0, optimal_calls[i]) /
                    double(corpus.size());
    }

  bench::Table table({"method", "mean calls", "paper's mean calls", "mean time (ms)",
                      "max time (ms)", "proven optimal"});
  for (size_t m = 0; m < methods.size(); ++m)
    table.add_row(
        {methods[m].label, bench::fixed(stats[m].calls, 2), methods[m].paper,
         bench::fixed(stats[m].seconds * 1e3, 3), bench::fixed(stats[m].max_seconds * 1e3, 3),
         m == 0 ? std::to_string(stats[m].proven) + " / " + std::to_string(corpus.size()) : ""});
  table.print(std::cout);
  std::cout << "\nBeam is " << bench::fixed(100 * beam_gap, 2)
            << " % above optimal on average.\n\n";

  // Graphs of over 1,000 nodes: 133-track consoles and random multi-port DAGs.
  bench::Table big({"graph", "nodes", "method", "calls", "time (ms)"});
  std::vector<std::pair<std::string, GraphTensor>> graphs;
  for (bool pruned : {false, true}) {
    ConsoleOptions options;
    options.chain        = default_console_chain();
    options.n_tracks     = 133;
    options.track_groups = ConsoleOptions::even_groups(133, 26);
    Graph g              = build_console(options, registry_node_types()).graph;
    if (pruned) prune_randomly(g, PruneOptions{0, random_pruning_rates()});
    graphs.emplace_back(pruned ? "133-track console, pruned" : "133-track console, full",
                        to_tensor(g));
  }
  for (uint64_t seed : {1, 2}) {
    RandomGraphOptions options;
    options.n_processors = 1000;
    options.n_inputs     = 40;
    options.n_outputs    = 4;
    options.n_types      = 8;
    graphs.emplace_back(
        "random DAG, 8 types + mix, split, duck (seed " + std::to_string(seed) + ")",
        to_tensor(random_graph(seed, options)));
  }
  for (const auto& [name, t] : graphs)
    for (auto m : {ScheduleMethod::kGreedy, ScheduleMethod::kBeam, ScheduleMethod::kOptimal}) {
      Schedule s  = schedule_graph(t, method(m));
      auto timing = bench::time_it([&, &t = t] { schedule_graph(t, method(m)); }, 3, 0.2);
      big.add_row(
          {name, std::to_string(t.n_nodes()),
           to_string(m) + (m == ScheduleMethod::kOptimal
                               ? (s.proven_optimal
                                      ? " (proven)"
                                      : " (unproven, bound " + std::to_string(s.lower_bound) + ")")
                               : ""),
           std::to_string(s.n_calls()), bench::fixed(timing.median_ms, 2)});
    }
  big.print(std::cout);

  // Issue 29: a file's edges were each checked for a cycle by a search of the graph, so a
  // 40,000-node chain listed backwards took 141 s to load. "edge by edge" is that path
  // (Graph::connect for each edge, in the file's order), timed once where it takes seconds.
  std::cout << "\nLoading a graph file: a chain in -> eq x n -> out, its edges listed last "
               "first.\n\n";
  bench::Table load({"nodes", "file (MB)", "graph_from_json (ms)", "edge by edge (ms)"});
  const NodeTypes known = registry_node_types();
  for (int64_t n : {2500, 10000, 40000}) {
    std::string nodes = "{\"id\":0,\"type\":\"in\"}", edges;
    for (int64_t i = 1; i <= n + 1; ++i)
      nodes += ",\n{\"id\":" + std::to_string(i) + ",\"type\":\"" + (i <= n ? "eq" : "out") + "\"}";
    for (int64_t i = n; i >= 0; --i)
      edges += std::string(i == n ? "" : ",\n") + "{\"dest\":" + std::to_string(i + 1) +
               ",\"source\":" + std::to_string(i) + "}";
    const std::string text = "{\"format\":\"grafx.graph\",\"version\":2,\"nodes\":[" + nodes +
                             "],\"edges\":[" + edges + "]}";
    auto timing       = bench::time_it([&] { graph_from_json(text, "chain.json", known); }, 3, 0.2);
    std::string naive = "–";
    if (n <= 10000) {
      auto start = std::chrono::steady_clock::now();
      Graph g(known);
      for (int64_t i = 0; i <= n + 1; ++i) g.insert(i, i == 0 ? "in" : i <= n ? "eq" : "out");
      for (int64_t i = n; i >= 0; --i) g.connect(i, i + 1);
      naive = bench::fixed(
          1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0);
    }
    load.add_row({std::to_string(n), bench::fixed(double(text.size()) / 1e6, 2),
                  bench::fixed(timing.median_ms, 1), naive});
  }
  load.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("schedule_bench", [&] { return run(argc, argv); });
}
