// Pruning (fit/prune.h): on a song mixed by a hidden console that uses only some of its
// processors, pruning removes most of those it did not use while the loss stays within τ of the
// unpruned fit; the τ rule, the ratio steps of the dry/wet search and the hybrid schedule; the
// pruned graph renders as the fitter with those nodes bypassed.

#include <grafx/fit/prune.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/chunked.h>
#include <grafx/render/parameters.h>

#include "fit/fit_test_support.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr int64_t kRate = 8000;

/// Four tracks of noise bursts in different rhythms, stereo.
at::Tensor tracks(int64_t seconds) {
  at::manual_seed(11);
  const int64_t n      = seconds * kRate;
  at::Tensor noise     = at::randn({4, 1, n});
  at::Tensor t         = at::arange(n, at::kFloat) / kRate;
  at::Tensor envelopes = at::stack({(at::sin(t * 6.0) + 1) / 2, (at::sin(t * 9.5 + 1) + 1) / 2,
                                    (at::cos(t * 3.3) + 1) / 2, (at::cos(t * 13.0 + 2) + 1) / 2});
  return (noise * envelopes.unsqueeze(1) * 0.3).expand({4, 2, n}).contiguous();
}

Graph console(const std::vector<std::string>& chain) {
  ConsoleOptions options;
  options.n_tracks = 4;
  options.chain    = chain;
  options.dry_wet  = true;
  return build_console(options, registry_node_types()).graph;
}

using testing::small_options;

/// The mix of a console whose gain/pan nodes set distinct gains and whose other processors are
/// all bypassed: the processors the song does not use.
at::Tensor hidden_mix(const Graph& full, const at::Tensor& x, std::vector<NodeId>& unused) {
  Graph hidden = full;
  for (NodeId id : hidden.nodes())
    if (!is_utility_type(hidden.node(id).type) && hidden.type_name(id) != "gain_pan") {
      hidden.set_bypassed(id, true);
      unused.push_back(id);
    }
  Processors processors = make_processors(hidden.types(), {kRate});
  Parameters parameters = create_parameters(hidden, processors, {1, at::kFloat, false});
  parameters["gain_pan"]["log_gain"] =
      at::tensor({0.4f, -0.2f, -0.6f, 0.1f, 0.0f, 0.5f, -0.9f, -0.3f}).view({4, 2});
  for (auto& [type, named] : parameters) named[kDryWetParameter].fill_(30.0);  // w = 1
  RenderPlan plan = make_render_plan(to_tensor(hidden));
  return render(plan, processors, parameters, x).outputs[0];
}

TEST(Prune, RemovesMostOfWhatTheHiddenConsoleDidNotUse) {
  at::Tensor x = tracks(3);
  Graph full   = console({"eq", "compressor", "stereo_imager", "gain_pan", "reverb"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter fitter(full, x, mix, kRate, small_options(200));
  fitter.run();
  const double fitted = fitter.evaluate().total.item<double>();

  PruningOptions options;
  options.rounds              = 8;
  options.steps_between       = 25;
  options.sparsity_ramp_steps = 40;
  Pruner pruner(fitter, options);
  pruner.run();
  std::vector<NodeId> removed = pruner.removed();
  int64_t removed_unused      = 0;
  for (NodeId id : unused)
    removed_unused += std::count(removed.begin(), removed.end(), id) > 0 ? 1 : 0;
  const double pruned = fitter.evaluate().total.item<double>();
  std::cout << "removed " << removed.size() << " of " << pruner.initial_processors()
            << " processors, " << removed_unused << " of the " << unused.size() << " unused; loss "
            << fitted << " fitted, " << pruned << " pruned\n";
  EXPECT_GE(double(removed_unused), 0.7 * double(unused.size()));
  EXPECT_LE(pruned, fitted + options.tolerance);
  ASSERT_EQ(pruner.rounds().size(), 8u);
  EXPECT_EQ(pruner.rounds().back().remaining, pruner.remaining_processors());

  // The pruned console renders as the fitter with those nodes bypassed.
  auto [graph, parameters] = pruner.result();
  EXPECT_EQ(graph.n_nodes(), fitter.graph().n_nodes() - int64_t(removed.size()));
  Processors processors = make_processors(graph.types(), {kRate});
  at::Tensor again =
      render_in_chunks(make_render_plan(to_tensor(graph)), processors, parameters, x)[0];
  at::Tensor expected = fitter.render_mix();
  EXPECT_LT((again - expected).abs().max().item<double>(),
            1e-5 * expected.abs().max().item<double>());
}

TEST(Prune, KeepsATrialExactlyWhenItsLossIsWithinTheToleranceOfTheBest) {
  at::Tensor x = tracks(2);
  Graph full   = console({"eq", "gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter fitter(full, x, mix, kRate, small_options(60));
  fitter.run();
  PruningOptions options;
  options.method        = PruneMethod::kBruteForce;
  options.rounds        = 1;
  options.steps_between = 0;
  options.tolerance     = 0.002;
  Pruner pruner(fitter, options);
  pruner.run();
  // Replay the rule from the recorded losses: L_min starts at the round's initial loss.
  double best = pruner.rounds()[0].loss_before;
  ASSERT_EQ(pruner.trials().size(), 8u);  // every processor once
  int64_t kept = 0, rejected = 0;
  for (const auto& trial : pruner.trials()) {
    EXPECT_EQ(trial.kept, trial.loss <= best + options.tolerance) << trial.loss << " vs " << best;
    if (trial.kept) best = std::min(best, trial.loss);
    (trial.kept ? kept : rejected) += 1;
  }
  EXPECT_GT(kept, 0);      // the unused EQs go
  EXPECT_GT(rejected, 0);  // the gains stay
  EXPECT_EQ(pruner.min_loss(), best);
}

TEST(Prune, DryWetStepsGrowByTheRatioAndHalveOnFailure) {
  at::Tensor x = tracks(2);
  Graph full   = console({"gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter fitter(full, x, mix, kRate, small_options(0));
  PruningOptions options;
  options.method        = PruneMethod::kDryWet;
  options.rounds        = 1;
  options.steps_between = 0;
  options.initial_ratio = 0.5;  // 2 of the 4 gain/pans, then 1
  options.tolerance     = 0;
  {
    // Every gain matters (distinct hidden gains): the first trial (2 nodes) fails, the step
    // halves to 0.25 = 1/n, the last try (1 node) fails too.
    Fitter strict(full, x, mix, kRate, small_options(0));
    Pruner pruner(strict, options);
    pruner.run();
    ASSERT_EQ(pruner.trials().size(), 2u);
    EXPECT_EQ(pruner.trials()[0].nodes.size(), 2u);
    EXPECT_EQ(pruner.trials()[1].nodes.size(), 1u);
    EXPECT_FALSE(pruner.trials()[0].kept);
    EXPECT_FALSE(pruner.trials()[1].kept);
    EXPECT_EQ(pruner.remaining_processors(), 4);
  }
  // Anything goes: two trials of two nodes each remove the type.
  options.tolerance = 1e9;
  Pruner pruner(fitter, options);
  pruner.run();
  ASSERT_EQ(pruner.trials().size(), 2u);
  EXPECT_EQ(pruner.trials()[0].nodes.size(), 2u);
  EXPECT_EQ(pruner.trials()[1].nodes.size(), 2u);
  EXPECT_EQ(pruner.remaining_processors(), 0);
  // The lowest wet amounts go first.
  const at::Tensor& raw   = fitter.parameters().at("gain_pan").at(kDryWetParameter);
  std::vector<NodeId> ids = fitter.graph().nodes_of_type("gain_pan");
  double worst_first = -1e9, best_second = 1e9;
  for (size_t row = 0; row < ids.size(); ++row) {
    double w = raw[int64_t(row)].item<double>();
    bool in_first =
        std::count(pruner.trials()[0].nodes.begin(), pruner.trials()[0].nodes.end(), ids[row]) > 0;
    if (in_first)
      worst_first = std::max(worst_first, w);
    else
      best_second = std::min(best_second, w);
  }
  EXPECT_LE(worst_first, best_second);
}

TEST(Prune, HybridRunsBruteForceEveryFourthRound) {
  at::Tensor x = tracks(2);
  Graph full   = console({"gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter fitter(full, x, mix, kRate, small_options(0));
  PruningOptions options;
  options.rounds        = 5;
  options.steps_between = 2;
  Pruner pruner(fitter, options);
  pruner.run();
  std::vector<PruneMethod> methods;
  for (const auto& round : pruner.rounds()) methods.push_back(round.method);
  using M = PruneMethod;
  EXPECT_EQ(methods,
            (std::vector<M>{M::kDryWet, M::kDryWet, M::kDryWet, M::kBruteForce, M::kDryWet}));
  EXPECT_EQ(fitter.steps_done(), 10);  // fine-tuning steps between rounds
  for (const auto& round : pruner.rounds()) EXPECT_TRUE(round.fast_trials);
  // A cache over the limit: the trials render in full.
  Fitter small(full, x, mix, kRate, small_options(0));
  options.rounds        = 1;
  options.max_cache_mib = 0.01;
  Pruner limited(small, options);
  limited.run();
  EXPECT_FALSE(limited.rounds()[0].fast_trials);
}

TEST(Prune, FastTrialsDecideAsFullReRenders) {
  at::Tensor x = tracks(2);
  Graph full   = console({"eq", "compressor", "gain_pan", "reverb"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  std::vector<std::vector<PruningTrial>> runs;
  for (bool fast : {true, false}) {
    Fitter fitter(full, x, mix, kRate, small_options(40));
    fitter.run();
    PruningOptions options;
    options.rounds            = 2;
    options.brute_force_every = 2;  // a dry/wet round, then a brute-force round
    options.steps_between     = 5;
    options.fast_trials       = fast;
    options.max_trial_batch   = 8;  // brute force in batches: the decisions must not change
    Pruner pruner(fitter, options);
    pruner.run();
    runs.push_back(pruner.trials());
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[0][i].nodes, runs[1][i].nodes) << "trial " << i;
    EXPECT_EQ(runs[0][i].kept, runs[1][i].kept) << "trial " << i;
    EXPECT_LT(std::abs(runs[0][i].loss - runs[1][i].loss), 1e-6 * std::abs(runs[1][i].loss))
        << "trial " << i;
  }
}

TEST(Prune, AResumedRunContinuesAsTheUninterruptedOne) {
  at::Tensor x = tracks(2);
  Graph full   = console({"eq", "compressor", "gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter start(full, x, mix, kRate, small_options(30));
  start.run();
  auto pruning = [&](int64_t rounds) {
    PruningOptions options;
    options.rounds            = rounds;
    options.steps_between     = 4;
    options.brute_force_every = 2;
    return options;
  };
  auto fitter_like = [&] {  // the fit's outcome, as `grafx prune` makes it from its files
    FitOptions options = small_options(3 * 4);
    return Fitter(full, x, mix, kRate, options, start.detached_parameters());
  };
  Fitter whole_fitter = fitter_like();
  Pruner whole(whole_fitter, pruning(3));
  whole.run();

  testing::TempDir dir;
  {
    Fitter first_fitter = fitter_like();
    Pruner first(first_fitter, pruning(2));
    first.run();
    first.save_state(dir.file("c.safetensors"), dir.file("state.json"));
  }
  Fitter resumed_fitter = fitter_like();
  Pruner resumed(resumed_fitter, pruning(3));
  resumed.resume(dir.file("c.safetensors"), dir.file("state.json"));
  EXPECT_EQ(resumed.rounds_done(), 2);
  resumed.run();
  ASSERT_EQ(resumed.trials().size(), whole.trials().size());
  for (size_t i = 0; i < whole.trials().size(); ++i) {
    EXPECT_EQ(resumed.trials()[i].nodes, whole.trials()[i].nodes) << i;
    EXPECT_EQ(resumed.trials()[i].kept, whole.trials()[i].kept) << i;
    EXPECT_DOUBLE_EQ(resumed.trials()[i].loss, whole.trials()[i].loss) << i;
  }
  EXPECT_EQ(resumed.removed(), whole.removed());
  EXPECT_DOUBLE_EQ(resumed.rounds().back().loss_tuned, whole.rounds().back().loss_tuned);

  // Files of another pruning are refused.
  Fitter other_fitter  = fitter_like();
  PruningOptions other = pruning(3);
  other.tolerance      = 0.5;
  EXPECT_GRAFX_ERROR(
      Pruner(other_fitter, other).resume(dir.file("c.safetensors"), dir.file("state.json")),
      "grafx.fit.checkpoint", "other pruning options");
  Fitter fewer_fitter = fitter_like();
  EXPECT_GRAFX_ERROR(
      Pruner(fewer_fitter, pruning(1)).resume(dir.file("c.safetensors"), dir.file("state.json")),
      "grafx.fit.checkpoint", "more than the 1 asked for");
}

TEST(Prune, RefusesBadOptions) {
  at::Tensor x = tracks(2);
  Fitter fitter(console({"gain_pan"}), x, x.sum(0), kRate, small_options(0));
  auto refused = [&](const std::function<void(PruningOptions&)>& change, const char* text) {
    PruningOptions options;
    change(options);
    EXPECT_GRAFX_ERROR(Pruner(fitter, options), "grafx.fit.options", text);
  };
  refused([](PruningOptions& o) { o.tolerance = -1; }, "tolerance");
  refused([](PruningOptions& o) { o.tolerance = NAN; }, "tolerance");
  refused([](PruningOptions& o) { o.initial_ratio = 0; }, "initial ratio");
  refused([](PruningOptions& o) { o.rounds = -1; }, "rounds");
  refused([](PruningOptions& o) { o.max_cache_mib = NAN; }, "cache limit");
  ConsoleOptions plain;
  plain.n_tracks = 4;
  plain.chain    = {"gain_pan"};
  Fitter without(build_console(plain, registry_node_types()).graph, x, x.sum(0), kRate,
                 small_options(0));
  EXPECT_GRAFX_ERROR(Pruner(without, {}), "grafx.fit.options", "no node of the graph has one");
  EXPECT_GRAFX_ERROR(parse_prune_method("greedy"), "grafx.fit.options", "unknown pruning method");
  EXPECT_EQ(parse_prune_method("dry-wet"), PruneMethod::kDryWet);
}

}  // namespace
}  // namespace grafx
