// Pruning (prune/prune.h): on a song mixed by a hidden console that uses only some of its
// processors, pruning removes most of those it did not use while the loss stays within τ of the
// unpruned fit; the τ rule, the ratio steps of the dry/wet search and the hybrid schedule; the
// pruned graph renders as the fitter with those nodes bypassed; a run cut short anywhere resumes
// as the uninterrupted one; the estimate counts the trials and steps the run makes; durations.

#include <grafx/duration.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/prune/prune.h>
#include <grafx/prune/prune_state.h>
#include <grafx/render/chunked.h>
#include <grafx/render/parameters.h>

#include "fit/fit_test_support.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

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

/// The pruned console renders, in chunks, as the fitter with the pruned nodes bypassed.
void expect_renders_as_the_fitter(const Graph& graph, const Parameters& parameters,
                                  const Fitter& fitter, const at::Tensor& tracks,
                                  double tolerance) {
  Processors processors = make_processors(graph.types(), {kRate});
  at::Tensor again =
      render_in_chunks(make_render_plan(to_tensor(graph)), processors, parameters, tracks)[0];
  at::Tensor expected = fitter.render_mix();
  EXPECT_LT((again - expected).abs().max().item<double>(),
            tolerance * expected.abs().max().item<double>());
}

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
  for (auto& [type, named] : parameters) named["dry_wet"].fill_(30.0);  // w = 1
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
  // Ten of the 16 at least, none of those the mix uses. Over seeds 0 to 5, 10 to 12 go, both
  // with crops anywhere (11.2 on average) and with crops on the loss's frame grid (10.7), as the
  // crops, the rounding of a sum or a fused multiply-add move a trial's loss across the
  // tolerance.
  EXPECT_GE(removed_unused, 10);
  EXPECT_EQ(int64_t(removed.size()), removed_unused);
  EXPECT_LE(pruned, fitted + options.tolerance);
  ASSERT_EQ(pruner.rounds().size(), 8u);
  EXPECT_EQ(pruner.rounds().back().remaining, pruner.remaining_processors());

  // The pruned console renders as the fitter with those nodes bypassed.
  auto [graph, parameters] = pruner.result();
  EXPECT_EQ(graph.n_nodes(), fitter.graph().n_nodes() - int64_t(removed.size()));
  expect_renders_as_the_fitter(graph, parameters, fitter, x, 1e-5);
}

TEST(Prune, PrunedSendsTakeTheirBusAwayWhereNothingElseNeedsIt) {
  at::Tensor x = tracks(1);
  ConsoleOptions console_options;
  console_options.n_tracks        = 4;
  console_options.chain           = {"gain_pan"};
  console_options.dry_wet         = true;
  console_options.sends           = {{"reverb", {"reverb"}, {}}};
  const Graph full                = build_console(console_options, registry_node_types()).graph;
  at::Tensor mix                  = x.sum(0);
  const std::vector<NodeId> sends = full.nodes_of_type("send");
  const NodeId reverb             = full.nodes_of_type("reverb").front();
  for (bool reverb_pruned : {true, false}) {
    SCOPED_TRACE(reverb_pruned ? "the sends and the bus reverb pruned" : "the sends pruned");
    Fitter fitter(full, x, mix, kRate, small_options(10));
    std::vector<NodeId> pruned = sends;
    if (reverb_pruned) pruned.push_back(reverb);
    fitter.set_bypassed(pruned, true);  // as pruning rounds leave them
    Pruner pruner(fitter, PruningOptions{});
    auto [graph, parameters] = pruner.result();
    EXPECT_TRUE(graph.validate().empty());
    if (reverb_pruned) {  // the sends, the bus's mix and its reverb are gone
      EXPECT_EQ(graph.n_nodes(), full.n_nodes() - 6);
      EXPECT_TRUE(graph.nodes_of_type("send").empty() && graph.nodes_of_type("reverb").empty());
      EXPECT_EQ(parameters.count("send") + parameters.count("reverb"), 0u);
    } else {  // the last send stays, bypassed: the reverb it feeds was kept
      EXPECT_EQ(graph.nodes_of_type("send"), std::vector<NodeId>{sends.back()});
      EXPECT_TRUE(graph.node(sends.back()).bypassed);
      EXPECT_EQ(parameters.at("send").at("log_gain").size(0), 1);
    }
    expect_renders_as_the_fitter(graph, parameters, fitter, x, 1e-6);
  }
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
  const at::Tensor& raw   = fitter.parameters().at("gain_pan").at("dry_wet");
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

/// Thrown by a progress callback to cut a run short.
struct Cut {};

/// One thread while it lives: LibTorch's reductions then add in one order, so that two runs
/// are equal to the bit (as `grafx --threads 1`).
struct OneThread {
  int before = at::get_num_threads();
  OneThread() { at::set_num_threads(1); }
  ~OneThread() { at::set_num_threads(before); }
};

/// Two pruning runs made the same trials, decisions, rounds and parameters, to the bit.
void expect_same_run(const Pruner& a, const Fitter& fa, const Pruner& b, const Fitter& fb,
                     const std::string& what) {
  ASSERT_EQ(a.trials().size(), b.trials().size()) << what;
  for (size_t i = 0; i < a.trials().size(); ++i) {
    EXPECT_EQ(a.trials()[i].round, b.trials()[i].round) << what << ", trial " << i;
    EXPECT_EQ(a.trials()[i].nodes, b.trials()[i].nodes) << what << ", trial " << i;
    EXPECT_EQ(a.trials()[i].kept, b.trials()[i].kept) << what << ", trial " << i;
    EXPECT_EQ(a.trials()[i].loss, b.trials()[i].loss) << what << ", trial " << i;
  }
  EXPECT_EQ(a.removed(), b.removed()) << what;
  ASSERT_EQ(a.rounds().size(), b.rounds().size()) << what;
  for (size_t i = 0; i < a.rounds().size(); ++i) {
    const PruningRound &x = a.rounds()[i], &y = b.rounds()[i];
    EXPECT_EQ(x.method, y.method) << what << ", round " << i;
    EXPECT_EQ(x.loss_before, y.loss_before) << what << ", round " << i;
    EXPECT_EQ(x.loss_pruned, y.loss_pruned) << what << ", round " << i;
    EXPECT_EQ(x.loss_tuned, y.loss_tuned) << what << ", round " << i;
    EXPECT_EQ(x.removed, y.removed) << what << ", round " << i;
    EXPECT_EQ(x.remaining, y.remaining) << what << ", round " << i;
    EXPECT_EQ(x.trials, y.trials) << what << ", round " << i;
  }
  EXPECT_EQ(a.min_loss(), b.min_loss()) << what;
  ASSERT_EQ(fa.steps_done(), fb.steps_done()) << what;
  for (int64_t i = 0; i < fa.steps_done(); ++i)
    EXPECT_EQ(fa.history()[size_t(i)].loss, fb.history()[size_t(i)].loss) << what << ", step " << i;
  for (const auto& [type, named] : fa.parameters())
    for (const auto& [name, p] : named.named())
      EXPECT_TRUE(at::equal(p, fb.parameters().at(type).at(name)))
          << what << ": " << type << "." << name;
}

TEST(Prune, ARunCutShortAnywhereResumesAsTheUninterruptedOne) {
  OneThread one;
  at::Tensor x = tracks(2);
  Graph full   = console({"eq", "compressor", "gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  Fitter start(full, x, mix, kRate, small_options(30));
  start.run();
  PruningOptions options;
  options.rounds            = 3;
  options.steps_between     = 6;
  options.brute_force_every = 2;     // dry/wet, brute force, dry/wet
  options.max_trial_batch   = 4;     // brute force in batches: a cut may fall inside one
  auto fitter_like          = [&] {  // the fit's outcome, as `grafx prune` makes it
    return Fitter(full, x, mix, kRate, small_options(3 * 6), start.detached_parameters());
  };
  Fitter whole_fitter = fitter_like();
  Pruner whole(whole_fitter, options);
  whole.run();
  ASSERT_GE(whole.rounds()[1].trials, 5) << "brute force in round 2 tries every processor left";

  struct Point {
    int64_t round, trial, step;  // cut after this trial (step 0) or fine-tuning step
  };
  for (const Point cut : {Point{1, 2, 0}, Point{2, 3, 0}, Point{2, 0, 4}, Point{3, 0, 6},
                          Point{2, whole.rounds()[1].trials, 0}}) {
    const std::string what =
        "cut in round " + std::to_string(cut.round) + " after " +
        (cut.step ? "step " + std::to_string(cut.step) : "trial " + std::to_string(cut.trial));
    testing::TempDir dir;
    const std::string checkpoint = dir.file("c.safetensors"), state = dir.file("state.json");
    auto cut_here = [&](const PruningProgress& p) {
      if (p.round == cut.round &&
          (cut.step ? p.step == cut.step : p.step == 0 && p.trial == cut.trial))
        throw Cut{};
    };
    Fitter first_fitter = fitter_like();
    Pruner first(first_fitter, options);
    first.save_state(checkpoint, state);  // the first round's start, as grafx prune saves it
    bool was_cut = false;
    try {
      while (first.rounds_done() < options.rounds) {
        first.run_round(cut_here);
        first.save_state(checkpoint, state);
      }
    } catch (const Cut&) {
      was_cut = true;
      first.save_state(checkpoint, state);
    }
    ASSERT_TRUE(was_cut) << what;
    const Pruner::Position at = first.under_way();
    EXPECT_EQ(at.round, cut.round) << what;
    EXPECT_EQ(at.fine_tuning, cut.step > 0) << what;
    EXPECT_EQ(at.trials, cut.step ? whole.rounds()[size_t(cut.round - 1)].trials : cut.trial)
        << what;
    EXPECT_EQ(at.steps, cut.step) << what;

    // From the files, in a new process as it were.
    Fitter resumed_fitter = fitter_like();
    Pruner resumed(resumed_fitter, options);
    resumed.resume(checkpoint, state);
    const Pruner::Position again = resumed.under_way();
    EXPECT_EQ(again.round, at.round) << what;
    EXPECT_EQ(again.fine_tuning, at.fine_tuning) << what;
    EXPECT_EQ(again.trials, at.trials) << what;
    EXPECT_EQ(again.steps, at.steps) << what;
    EXPECT_GT(resumed.measure_step_seconds(), 0);  // as grafx prune does: changes nothing
    int64_t replayed = 0;
    resumed.run([&](const PruningProgress& p) { replayed += p.replayed ? 1 : 0; });
    EXPECT_EQ(replayed, cut.step ? 0 : cut.trial) << what;
    expect_same_run(resumed, resumed_fitter, whole, whole_fitter, what + ", resumed");

    // The same pruner goes on after the exception as the uninterrupted run, too.
    first.run();
    expect_same_run(first, first_fitter, whole, whole_fitter, what + ", continued");
  }
}

TEST(Prune, ReadsStateFilesOfVersion1AndRefusesNewerOnes) {
  at::Tensor x = tracks(2);
  Graph full   = console({"gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  PruningOptions options;
  options.rounds        = 2;
  options.steps_between = 2;
  testing::TempDir dir;
  const std::string checkpoint = dir.file("c.safetensors"), state = dir.file("state.json");
  {
    Fitter fitter(full, x, mix, kRate, small_options(4));
    Pruner pruner(fitter, options);
    pruner.run_round();
    pruner.save_state(checkpoint, state);
  }
  // Version 1 saved between rounds only, as version 2 does there (without "under_way").
  std::string text     = read_text_file(state);
  const size_t version = text.find("\"version\": 2");
  ASSERT_NE(version, std::string::npos) << text;
  ASSERT_EQ(text.find("under_way"), std::string::npos) << text;
  text.replace(version, 12, "\"version\": 1");
  write_text_file(state, text, true);
  Fitter fitter(full, x, mix, kRate, small_options(4));
  Pruner pruner(fitter, options);
  pruner.resume(checkpoint, state);
  EXPECT_EQ(pruner.rounds_done(), 1);
  EXPECT_EQ(pruner.under_way().round, 0);
  text.replace(version, 12, "\"version\": 3");
  write_text_file(state, text, true);
  Fitter newer_fitter(full, x, mix, kRate, small_options(4));
  EXPECT_GRAFX_ERROR(Pruner(newer_fitter, options).resume(checkpoint, state),
                     "grafx.fit.checkpoint", "version 3, which this grafx does not read");
}

// The format alone (prune/prune_state.h): what write_prune_state writes reads back as written,
// a round cut short in either phase with what that phase knows; an unknown phase and a field of
// the wrong type are refused by name.
TEST(Prune, StateFormatReadsBackWhatItWrote) {
  testing::TempDir dir;
  PruneState written;
  written.course            = {{"method", "hybrid"}, {"seed", 3}};
  written.fine_tuning_steps = 12;
  written.steps_done        = 40;
  written.removed           = {4, 9};
  written.rounds            = {{1, PruneMethod::kDryWet, 0.5, 0.55, 0.52, 2, 6, 7, true, 1.5}};
  written.trials            = {{1, {4, 9}, 0.55, true}, {2, {6}, 0.9, false}};
  PruneState::UnderWay fine{
      {2, PruneMethod::kDryWet, 0.52, 0.6, 0, 1, 0, 3, true, 2.5}, true, true, 5};
  written.under_way      = fine;
  const std::string path = dir.file("state.json");
  write_prune_state(path, written);
  PruneState read = read_prune_state(path);
  EXPECT_EQ(read.course, written.course);
  EXPECT_TRUE(std::isinf(read.min_loss));  // none yet: written as null
  EXPECT_EQ(read.fine_tuning_steps, 12);
  EXPECT_EQ(read.steps_done, 40);
  EXPECT_EQ(read.removed, written.removed);
  ASSERT_EQ(read.rounds.size(), 1u);
  EXPECT_EQ(read.rounds[0].loss_tuned, 0.52);
  EXPECT_EQ(read.rounds[0].remaining, 6);
  ASSERT_EQ(read.trials.size(), 2u);
  EXPECT_EQ(read.trials[1].nodes, std::vector<NodeId>{6});
  EXPECT_FALSE(read.trials[1].kept);
  ASSERT_TRUE(read.under_way);
  EXPECT_TRUE(read.under_way->fine_tuning);
  EXPECT_EQ(read.under_way->steps_done, 5);
  EXPECT_EQ(read.under_way->round.loss_pruned, 0.6);
  EXPECT_EQ(read.under_way->round.trials, 3);
  EXPECT_EQ(read.under_way->round.seconds, 2.5);

  // In its trials, a round keeps only what its start knew (the trials are replayed).
  written.min_loss       = 0.52;
  fine.fine_tuning       = false;
  fine.loss_before_known = false;
  written.under_way      = fine;
  write_prune_state(path, written);
  read = read_prune_state(path);
  EXPECT_EQ(read.min_loss, 0.52);
  ASSERT_TRUE(read.under_way);
  EXPECT_FALSE(read.under_way->fine_tuning || read.under_way->loss_before_known);
  EXPECT_EQ(read.under_way->round.loss_pruned, 0);
  EXPECT_EQ(read.under_way->round.trials, 0);

  std::string text        = read_text_file(path);
  const std::string phase = "\"phase\": \"trials\"";
  text.replace(text.find(phase), phase.size(), "\"phase\": \"sorting\"");
  write_text_file(path, text, true);
  EXPECT_GRAFX_ERROR(read_prune_state(path), "grafx.fit.checkpoint", "unknown phase \"sorting\"");
  text                    = read_text_file(path);
  const std::string steps = "\"steps_done\": 40";
  text.replace(text.find(steps), steps.size(), "\"steps_done\": \"40\"");
  write_text_file(path, text, true);
  EXPECT_GRAFX_ERROR(read_prune_state(path), "grafx.fit.checkpoint", "missing or wrong field");
}

TEST(Prune, EstimatesTheTrialsEvaluationsAndStepsItMakes) {
  at::Tensor x = tracks(2);
  Graph full   = console({"eq", "gain_pan"});
  std::vector<NodeId> unused;
  at::Tensor mix = hidden_mix(full, x, unused);
  {
    // Brute force: every processor left, once per round.
    Fitter fitter(full, x, mix, kRate, small_options(0));
    PruningOptions options;
    options.method        = PruneMethod::kBruteForce;
    options.rounds        = 2;
    options.steps_between = 5;
    options.tolerance     = 0.002;
    Pruner pruner(fitter, options);
    const PruningEstimate e = pruner.estimate(0.5, 2.0, 0.1);
    EXPECT_EQ(e.rounds, 2);
    EXPECT_EQ(e.brute_force_rounds, 2);
    EXPECT_EQ(e.trials, 2 * 8);
    EXPECT_EQ(e.evaluations, 2 * 2);  // each round's start and end
    EXPECT_EQ(e.steps, 2 * 5);
    EXPECT_DOUBLE_EQ(e.seconds(), 16 * 0.5 + 4 * 2.0 + 10 * 0.1);
    // As it runs: this round's candidates not yet tried, and the later rounds at the console's
    // size now.
    pruner.run([&](const PruningProgress& p) {
      const PruningEstimate now = pruner.estimate(1, 1, 1);
      const int64_t later       = p.round == 1 ? 1 : 0;
      const int64_t first_round = pruner.initial_processors();
      if (!p.record) {
        const int64_t candidates = p.round == 1 ? first_round : pruner.rounds()[0].remaining;
        EXPECT_EQ(now.trials, double(candidates - p.trial + later * pruner.remaining_processors()))
            << "round " << p.round << " trial " << p.trial;
        EXPECT_EQ(now.steps, 5 + later * 5);
      } else {
        EXPECT_EQ(now.trials, double(later * pruner.remaining_processors()));
        EXPECT_EQ(now.steps, 5 - p.step + later * 5);
      }
      EXPECT_EQ(now.rounds, 1 + later);
    });
    ASSERT_EQ(pruner.rounds().size(), 2u);
    EXPECT_EQ(pruner.rounds()[0].trials, 8) << "the estimate's count, made";
    EXPECT_EQ(pruner.rounds()[1].trials, pruner.rounds()[0].remaining);
    const PruningEstimate done = pruner.estimate(1, 1, 1);
    EXPECT_EQ(done.rounds, 0);
    EXPECT_EQ(done.trials, 0);
    EXPECT_EQ(done.evaluations, 0);
    EXPECT_EQ(done.steps, 0);
  }
  {
    // Dry/wet with types of at most 1/initial_ratio nodes: one trial per type and round.
    Fitter fitter(full, x, mix, kRate, small_options(0));
    PruningOptions options;
    options.method        = PruneMethod::kDryWet;
    options.rounds        = 1;
    options.steps_between = 0;
    Pruner pruner(fitter, options);
    const PruningEstimate e = pruner.estimate(1, 1, 1);
    EXPECT_EQ(e.trials, 2);       // eq and gain_pan, 4 nodes each
    EXPECT_EQ(e.evaluations, 1);  // no fine-tuning, no loss after it
    pruner.run();
    EXPECT_EQ(pruner.rounds()[0].trials, 2);
  }
  {
    // Steps of half the nodes (4): 2 nodes, then 2 more if kept (then done: 2 trials) or else
    // 1 (3 trials); after a first failure, 1 (2 trials). Expected with p = 1/2:
    // (2 + 3) / 4 + 2 / 2 = 2.25.
    Fitter fitter(full, x, mix, kRate, small_options(0));
    PruningOptions options;
    options.method        = PruneMethod::kDryWet;
    options.rounds        = 1;
    options.steps_between = 0;
    options.initial_ratio = 0.5;
    Pruner pruner(fitter, options);
    EXPECT_DOUBLE_EQ(pruner.estimate(1, 1, 1).trials, 2 * 2.25);
    pruner.run();
    EXPECT_GE(pruner.rounds()[0].trials, 2 * 2);
    EXPECT_LE(pruner.rounds()[0].trials, 2 * 3);
  }
}

TEST(Prune, FormatsDurationsAsPeopleReadThem) {
  EXPECT_EQ(format_duration(0.4), "0.4 s");
  EXPECT_EQ(format_duration(0.45), "0.45 s");
  EXPECT_EQ(format_duration(2.5), "2.5 s");
  EXPECT_EQ(format_duration(10), "10 s");
  EXPECT_EQ(format_duration(59.6), "1 min 00 s");
  EXPECT_EQ(format_duration(61), "1 min 01 s");
  EXPECT_EQ(format_duration(190), "3 min 10 s");
  EXPECT_EQ(format_duration(3599), "59 min 59 s");
  EXPECT_EQ(format_duration(3600), "1 h 00 min");
  EXPECT_EQ(format_duration(3900), "1 h 05 min");
  EXPECT_EQ(format_duration(90000), "25 h 00 min");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(NAN), "?");
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
