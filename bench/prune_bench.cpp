// Pruning trial benchmark: whole-song losses of single-node trials on consoles of the pruning
// paper's chain, fast (TrialEvaluator: only what a trial changes, from cached cut signals)
// against the naive full re-render (the whole console again, in chunks), in one run; and the
// same trials rendered as one graph batch.
//
//   build/bin/prune_bench [seconds=30] [trials=8]

#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/program.h>
#include <grafx/prune/trials.h>
#include <grafx/render/parameters.h>

#include "bench_support.h"

#include <ATen/ATen.h>

#include <chrono>
#include <iostream>

using namespace grafx;

namespace {

int run(int argc, char** argv) {
  auto args =
      bench::parse_arguments(argc, argv, {{"seconds", 30, 1, 3600}, {"trials", 8, 1, 1000}});
  bench::setup_threads();
  const int64_t rate = 30000, length = int64_t(args[0] * rate), n_trials = int64_t(args[1]);
  std::cout << "# Pruning trials\n\n"
            << bench::machine_description() << "\n\n"
            << "Consoles of the paper's chain e-c-n-s-g-d-r with dry/wet, initial parameters; "
            << bench::fixed(args[0], 0) << " s songs of stereo noise tracks at 30 kHz; " << n_trials
            << " single-node trials spread over the console's processors (tracks and subgroups), "
               "each the whole-song mix loss; float32.\n\n";
  bench::Table table({"console", "processors", "naive (ms/trial)", "fast (ms/trial)", "speed-up",
                      "fast, one batch (ms/trial)", "speed-up", "rendered (mean processors)",
                      "cache (MiB)", "set-up (ms)", "max loss difference"});
  for (auto [tracks, groups] : {std::pair<int64_t, int64_t>{8, 3}, {28, 5}}) {
    ConsoleOptions options;
    options.n_tracks      = tracks;
    options.track_groups  = ConsoleOptions::even_groups(tracks, groups);
    options.chain         = default_console_chain();
    options.dry_wet       = true;
    Graph graph           = build_console(options, registry_node_types()).graph;
    Processors processors = make_processors(graph.types(), {rate});
    Parameters parameters = create_parameters(graph, processors, {0, at::kFloat, false});
    at::manual_seed(0);
    at::Tensor x   = at::randn({tracks, 2, length}) * 0.1;
    at::Tensor mix = x.sum(0) * 0.3;
    MixLossOptions loss;
    loss.sample_rate = rate;
    std::vector<NodeId> candidates;
    for (NodeId id : graph.nodes())
      if (!is_utility_type(graph.node(id).type)) candidates.push_back(id);
    std::vector<NodeId> chosen;
    for (int64_t i = 0; i < n_trials; ++i)
      chosen.push_back(candidates[size_t(i * int64_t(candidates.size()) / n_trials)]);

    auto seconds_since = [](auto start) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    auto start = std::chrono::steady_clock::now();
    TrialEvaluator trials(graph, processors, parameters, x, mix, loss);
    const double setup = seconds_since(start);
    std::vector<double> fast_losses, naive_losses;
    double rendered = 0;
    start           = std::chrono::steady_clock::now();
    for (NodeId id : chosen) {
      fast_losses.push_back(trials.loss({id}));
      rendered += double(trials.last_trial_nodes());
    }
    const double fast = seconds_since(start) / double(n_trials);
    // The same trials as one graph batch (what brute force does while trials keep failing).
    std::vector<std::vector<NodeId>> group;
    for (NodeId id : chosen) group.push_back({id});
    start                            = std::chrono::steady_clock::now();
    std::vector<double> batch_losses = trials.losses(group);
    const double batched             = seconds_since(start) / double(n_trials);
    start                            = std::chrono::steady_clock::now();
    for (NodeId id : chosen) {
      Graph g = graph;
      g.set_bypassed(id, true);
      MixLossStream stream = MixLoss(loss).stream(length);
      render_chunks(
          make_render_plan(to_tensor(g)), processors, parameters, x,
          [&](int64_t s, const at::Tensor& y) { stream.add(y[0], mix.narrow(-1, s, y.size(-1))); });
      naive_losses.push_back(stream.finish().total.item<double>());
    }
    const double naive = seconds_since(start) / double(n_trials);
    double difference  = 0;
    for (size_t i = 0; i < chosen.size(); ++i)
      for (double loss : {fast_losses[i], batch_losses[i]})
        difference =
            std::max(difference, std::abs(loss - naive_losses[i]) / std::abs(naive_losses[i]));
    std::ostringstream diff;
    diff << std::scientific << std::setprecision(1) << difference;
    table.add_row({std::to_string(tracks) + " tracks, " + std::to_string(groups) + " groups",
                   std::to_string(candidates.size()), bench::fixed(naive * 1000, 0),
                   bench::fixed(fast * 1000, 0), bench::fixed(naive / fast, 1) + "×",
                   bench::fixed(batched * 1000, 0), bench::fixed(naive / batched, 1) + "×",
                   bench::fixed(rendered / double(n_trials), 1),
                   bench::fixed(double(trials.cache_bytes()) / (1 << 20), 0),
                   bench::fixed(setup * 1000, 0), diff.str()});
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("prune_bench", [&] { return run(argc, argv); });
}
