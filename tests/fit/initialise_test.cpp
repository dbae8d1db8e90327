// The initialisation from the data. The least-squares start of the channel gains: on a mix made
// by the graph itself with hidden gains and pans (hard pans included), it finds them exactly and
// moves each track's gain/pan by them, saying what is heard through a wet amount; tracks without
// their own gain/pan keep theirs. The EQ from spectral ratios finds hidden smooth EQ curves
// within 1.5 dB. Typical starts set what the descriptors say. A fit to the data is kept only
// where it lowers the loss.

#include <grafx/fit/demo.h>
#include <grafx/fit/initialise.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>

#include "fit_test_support.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr SampleRate kRate = 8000;

/// in -> eq -> gain_pan -> mix bus -> out for each track, plus one track straight into a
/// reverb that also takes another track (its chain branches: no gain/pan of its own).
Graph test_graph(int64_t n_tracks) {
  NodeTypes types;
  for (const char* type : {"eq", "gain_pan", "reverb"}) types.add(type);
  Graph g(types);
  NodeId bus = g.add("mix"), out = g.add("out");
  g.connect(bus, out);
  for (int64_t k = 0; k < n_tracks; ++k) {
    NodeId in = g.add("in"), eq = g.add("eq"), pan = g.add("gain_pan");
    g.connect(in, eq);
    g.connect(eq, pan);
    g.connect(pan, bus);
  }
  return g;
}

TEST(GainInitialisation, FindsHiddenGainsAndPansExactly) {
  Graph graph           = test_graph(3);
  Processors processors = make_processors(graph.types(), {kRate});
  RenderPlan plan       = make_render_plan(to_tensor(graph));
  Parameters initial    = create_parameters(graph, processors, {0, at::kDouble, false});
  at::manual_seed(3);
  initial["eq"]["log_magnitude"] = at::randn({3, 1024}, at::kDouble) * 0.3;
  // Hidden gains: one track loud on the left, one hard right (nothing on the left), one centred.
  at::Tensor hidden = at::tensor({1.6, 0.4, 0.0, 0.9, 0.7, 0.7}, at::kDouble).view({3, 2});
  Parameters mixing = initial;
  mixing["gain_pan"]["log_gain"] = initial["gain_pan"]["log_gain"] + hidden.clamp_min(1e-12).log();
  at::Tensor tracks              = at::randn({3, 1, 3 * kRate}, at::kDouble) * 0.2;
  at::Tensor mix                 = render(plan, processors, mixing, tracks).outputs[0];

  Parameters fitted  = initial;
  ChannelGainFit fit = fit_channel_gains(graph, processors, plan, fitted, tracks, mix, kRate, 2.0);
  ASSERT_EQ(fit.nodes.size(), 3u);
  for (NodeId node : fit.nodes) EXPECT_EQ(graph.type_name(node), "gain_pan");
  EXPECT_TRUE(at::allclose(fit.gains.select(1, 0).narrow(0, 0, 1), hidden[0][0].view({1}), 1e-8));
  EXPECT_NEAR(fit.gains[1][0].item<double>(), 1e-3, 1e-12) << "hard right: clamped at -60 dB";
  EXPECT_TRUE(at::allclose(fit.gains[1][1], hidden[1][1], 1e-8));
  EXPECT_TRUE(at::allclose(fit.gains[2], hidden[2], 1e-8));
  EXPECT_GT(fit.error_before, 0.1);
  EXPECT_LT(fit.error_after, 1e-5);
  // The gains went into the gain/pan nodes: the graph now renders the mix.
  at::Tensor again = render(plan, processors, fitted, tracks).outputs[0];
  EXPECT_LT((again - mix).abs().max().item<double>(), 1e-3 * mix.abs().max().item<double>());
}

TEST(GainInitialisation, ReportsTheLevelsHeardThroughAWetAmount) {
  // Each gain/pan at 50 % wet passes (1 − w + w·g) of its input: the gains found move what is
  // heard by less, and the report says what the graph renders, measured here on renders.
  Graph graph = test_graph(3);
  for (NodeId id : graph.nodes_of_type("gain_pan")) graph.set_dry_wet(id);
  Processors processors   = make_processors(graph.types(), {kRate});
  RenderPlan plan         = make_render_plan(to_tensor(graph));
  Parameters initial      = create_parameters(graph, processors, {0, at::kDouble, false});
  initial["gain_pan"].wet = at::zeros({3, 1}, at::kDouble);  // w = 0.5
  initial["gain_pan"]["log_gain"] =
      at::tensor({0.2, -0.4, 0.0, 0.1, -0.3, 0.3}, at::kDouble).view({3, 2});
  at::manual_seed(4);
  const int64_t length = 4 * kRate;
  at::Tensor tracks    = at::randn({3, 1, length}, at::kDouble) * 0.2;
  auto alone           = [&](const Parameters& p, int64_t k) {
    at::Tensor only = at::zeros_like(tracks);
    only[k]         = tracks[k];
    return render(plan, processors, p, only).outputs[0];  // [2, L]
  };
  // The mix: each track's contribution through the console, scaled by hidden levels.
  at::Tensor hidden = at::tensor({1.6, 0.4, 0.0, 0.9, 0.7, 0.7}, at::kDouble).view({3, 2});
  at::Tensor mix    = at::zeros({2, length}, at::kDouble);
  for (int64_t k = 0; k < 3; ++k) mix += alone(initial, k) * hidden[k].unsqueeze(-1);

  Parameters fitted  = cloned_parameters(initial);
  ChannelGainFit fit = fit_channel_gains(graph, processors, plan, fitted, tracks, mix, kRate, 2.0);
  EXPECT_TRUE(at::allclose(fit.gains, hidden.clamp_min(1e-3), 1e-6, 1e-9)) << fit.gains;
  EXPECT_LT(fit.error_found, 1e-5);  // all but the floor of the silent channel
  for (int64_t k = 0; k < 3; ++k) {  // each level heard: the ratio of the renders' channels
    at::Tensor ratio =
        alone(fitted, k).pow(2).sum(-1).sqrt() / alone(initial, k).pow(2).sum(-1).sqrt();
    EXPECT_TRUE(at::allclose(fit.heard[k], ratio, 1e-9)) << k << ": " << fit.heard[k] << ratio;
    EXPECT_TRUE(
        (fit.heard[k] - 1).abs().le((hidden[k].clamp_min(1e-3) - 1).abs()).all().item<bool>());
  }
  // The error reported is the fitted graph's on the excerpt (the middle 2 s).
  at::Tensor excerpt = at::arange(length / 2 - kRate, length / 2 + kRate);
  at::Tensor wrong   = render(plan, processors, fitted, tracks).outputs[0] - mix;
  const double error =
      (wrong.index_select(1, excerpt).pow(2).sum() / mix.index_select(1, excerpt).pow(2).sum())
          .item<double>();
  EXPECT_NEAR(fit.error_after, error, 1e-9 + 1e-6 * error);
  EXPECT_GT(fit.error_after, 0.01) << "at 50 % wet the levels heard are not the gains found";
}

TEST(GainInitialisation, TracksWithoutTheirOwnGainPanKeepTheirs) {
  // Track 0 feeds a reverb shared with track 1's eq: its chain branches before any gain/pan.
  NodeTypes types;
  for (const char* type : {"eq", "gain_pan", "reverb"}) types.add(type);
  Graph g(types);
  NodeId a = g.add("in"), b = g.add("in"), verb = g.add("reverb"), eq = g.add("eq"),
         pan = g.add("gain_pan"), out = g.add("out");
  g.connect(a, verb);
  g.connect(b, eq);
  g.connect(eq, verb);
  g.connect(eq, pan);
  g.connect(verb, out);
  g.connect(pan, out);
  Processors processors          = make_processors(g.types(), {kRate});
  RenderPlan plan                = make_render_plan(to_tensor(g));
  Parameters p                   = create_parameters(g, processors, {0, at::kDouble, false});
  at::Tensor tracks              = at::randn({2, 2, 2 * kRate}, at::kDouble) * 0.2;
  at::Tensor mix                 = render(plan, processors, p, tracks).outputs[0] * 0.5;
  Parameters before              = p;
  before["gain_pan"]["log_gain"] = p["gain_pan"]["log_gain"].clone();
  ChannelGainFit fit             = fit_channel_gains(g, processors, plan, p, tracks, mix, kRate);
  EXPECT_EQ(fit.nodes, (std::vector<NodeId>{-1, -1}))
      << "track 1's eq feeds both the reverb and the gain/pan: not its own";
  EXPECT_TRUE(at::equal(p["gain_pan"]["log_gain"], before["gain_pan"]["log_gain"]));
}

TEST(GainInitialisation, TheFitterStartsFromItWhenAsked) {
  Graph graph                    = test_graph(2);
  Processors processors          = make_processors(graph.types(), {kRate});
  Parameters mixing              = create_parameters(graph, processors, {5, at::kFloat, false});
  mixing["gain_pan"]["log_gain"] = at::tensor({0.5f, -2.0f, -1.0f, 0.3f}).view({2, 2});
  at::Tensor tracks              = at::randn({2, 2, 4 * kRate}) * 0.2;
  at::Tensor mix =
      render(make_render_plan(to_tensor(graph)), processors, mixing, tracks).outputs[0];
  FitOptions options = testing::small_options(0);
  Fitter plain(graph, tracks, mix, kRate, options);
  options.initialisation = {false, true, false};
  Fitter started(graph, tracks, mix, kRate, options);
  EXPECT_FALSE(plain.initialisation().gains.gains.defined());
  ASSERT_TRUE(started.initialisation().gains.gains.defined());
  EXPECT_FALSE(started.initialisation().eq.gains_db.defined());
  EXPECT_LT(started.evaluate().total.item<double>(), 0.5 * plain.evaluate().total.item<double>());
  // The report's initial console is where the first step started.
  EXPECT_TRUE(at::equal(started.initial_parameters().at("gain_pan").at("log_gain"),
                        started.parameters().at("gain_pan").at("log_gain")));
}

TEST(DataInitialisation, AFitToTheDataIsKeptOnlyWhereItLowersTheLoss) {
  Graph graph                    = test_graph(2);
  Processors processors          = make_processors(graph.types(), {kRate});
  const RenderPlan plan          = make_render_plan(to_tensor(graph));
  Parameters mixing              = create_parameters(graph, processors, {5, at::kFloat, false});
  mixing["gain_pan"]["log_gain"] = at::tensor({0.5f, -2.0f, -1.0f, 0.3f}).view({2, 2});
  at::Tensor tracks              = at::randn({2, 2, 4 * kRate}) * 0.2;
  at::Tensor mix                 = render(plan, processors, mixing, tracks).outputs[0];
  const InitialisationOptions both{false, true, true};
  // A loss that rises with every call calls both fits worse: both are undone, exactly.
  Parameters start     = create_parameters(graph, processors, {1, at::kFloat, false});
  Parameters undone    = cloned_parameters(start);
  double calls         = 0;
  DataInitialisation d = initialise_from_data(graph, processors, plan, undone, tracks, mix, kRate,
                                              both, [&] { return ++calls; });
  ASSERT_EQ(d.steps.size(), 2u);
  for (const auto& step : d.steps) {
    EXPECT_FALSE(step.kept) << step.name;
    EXPECT_GT(step.loss_after, step.loss_before) << step.name;
  }
  EXPECT_FALSE(d.gains.gains.defined());
  EXPECT_FALSE(d.eq.gains_db.defined());
  for (const auto& [type, named] : start)
    for (const auto& [name, tensor] : named.named())
      EXPECT_TRUE(at::equal(undone.at(type).at(name), tensor)) << type << "." << name;
  // One that falls keeps both, as without a loss.
  Parameters kept = cloned_parameters(start), unchecked = cloned_parameters(start);
  d = initialise_from_data(graph, processors, plan, kept, tracks, mix, kRate, both,
                           [&] { return -++calls; });
  initialise_from_data(graph, processors, plan, unchecked, tracks, mix, kRate, both);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_TRUE(d.steps[0].kept && d.steps[1].kept);
  EXPECT_TRUE(d.gains.gains.defined() && d.eq.gains_db.defined());
  for (const auto& [type, named] : unchecked)
    for (const auto& [name, tensor] : named.named())
      EXPECT_TRUE(at::equal(kept.at(type).at(name), tensor)) << type << "." << name;
  // The fitter checks with its whole-song loss: the start is never above the one without them.
  FitOptions options     = testing::small_options(0);
  options.initialisation = InitialisationOptions::none();
  const double plain = Fitter(graph, tracks, mix, kRate, options).evaluate().total.item<double>();
  options.initialisation = both;
  Fitter fitter(graph, tracks, mix, kRate, options);
  const double started = fitter.evaluate().total.item<double>();
  EXPECT_LE(started, plain);
  for (const auto& step : fitter.initialisation().steps) {
    if (step.kept) {
      EXPECT_LT(step.loss_after, step.loss_before) << step.name;
    }
  }
  EXPECT_NEAR(fitter.initialisation().steps.back().kept
                  ? fitter.initialisation().steps.back().loss_after
                  : fitter.initialisation().steps.back().loss_before,
              started, 1e-9);
}

/// A smooth step of `db` decibels in log frequency, centred at `hz`, an octave wide.
at::Tensor smooth_step_db(const at::Tensor& frequencies, double hz, double db) {
  return db * 0.5 * (1 + at::tanh(2 * at::log2(frequencies.clamp_min(1) / hz)));
}

TEST(SpectralEqInitialisation, FindsHiddenSmoothEqCurves) {
  // Three noise tracks whose levels move differently over time (so that each band's power over
  // the frames tells the tracks apart), EQed by hidden smooth curves: +6 dB above 1.5 kHz,
  // −6 dB above 400 Hz, flat.
  Graph graph           = test_graph(3);
  Processors processors = make_processors(graph.types(), {kRate});
  RenderPlan plan       = make_render_plan(to_tensor(graph));
  Parameters flat       = create_parameters(graph, processors, {0, at::kDouble, false});
  flat["eq"]["log_magnitude"].zero_();
  flat["gain_pan"]["log_gain"].zero_();
  at::Tensor bins   = at::arange(1024, at::kDouble) * (double(kRate) / 2047);
  at::Tensor hidden = at::stack(
      {smooth_step_db(bins, 1500, 6), smooth_step_db(bins, 400, -6), at::zeros_like(bins)});  // dB
  Parameters mixing             = flat;
  mixing["eq"]["log_magnitude"] = hidden * (std::log(10.0) / 20);
  at::manual_seed(4);
  const int64_t length = 12 * kRate;
  at::Tensor t         = at::arange(length, at::kDouble) / kRate;
  at::Tensor envelopes =
      at::stack({1 + 0.9 * at::sin(2 * M_PI * 0.7 * t), 1 + 0.9 * at::sin(2 * M_PI * 1.3 * t + 1),
                 1 + 0.9 * at::cos(2 * M_PI * 2.1 * t)});
  at::Tensor tracks = (at::randn({3, length}, at::kDouble) * envelopes * 0.1).unsqueeze(1);
  at::Tensor mix    = render(plan, processors, mixing, tracks).outputs[0];

  Parameters fitted = flat;
  SpectralEqFit fit =
      fit_spectral_eq(graph, processors, plan, fitted, tracks, mix, kRate, 12.0, 12.0);
  ASSERT_EQ(fit.nodes.size(), 3u);
  for (NodeId node : fit.nodes) EXPECT_EQ(graph.type_name(node), "eq");
  EXPECT_LT(fit.error_after, 0.1 * fit.error_before);
  at::Tensor found  = fitted["eq"]["log_magnitude"] * (20 / std::log(10.0));
  at::Tensor inside = (bins > 80) & (bins < 3500);  // bands of several bins, below the top one
  at::Tensor errors = (found - hidden).abs().masked_select(inside.expand_as(found));
  EXPECT_LT(errors.max().item<double>(), 1.5) << "dB (the band powers' estimation noise)";
  EXPECT_LT(errors.mean().item<double>(), 0.4) << "dB";
  EXPECT_GT(fit.gains_db[0][-3].item<double>(), 5.0) << "the first track's highs are louder";
}

TEST(SpectralEqInitialisation, SaysSoWhereNoTrackHasAnEqOfSpectralGains) {
  // grafx fit's console: its tracks' EQs are parametric (bands, not gains per frequency).
  DemoSong song = make_demo_song({8000, 3.0, 1});
  ConsoleOptions console;
  console.n_tracks      = song.tracks.size(0);
  console.chain         = default_fit_chain();
  Graph graph           = build_console(console, registry_node_types()).graph;
  Processors processors = make_processors(graph.types(), {song.sample_rate});
  const RenderPlan plan = make_render_plan(to_tensor(graph));
  Parameters start      = create_parameters(graph, processors, {1, at::kFloat, false});
  Parameters asked      = cloned_parameters(start);
  int calls             = 0;
  DataInitialisation d =
      initialise_from_data(graph, processors, plan, asked, song.tracks, song.mix, song.sample_rate,
                           {false, false, true}, [&] { return double(++calls); });
  ASSERT_EQ(d.steps.size(), 1u);
  EXPECT_EQ(d.steps[0].name, "track EQs from spectral ratios");
  EXPECT_NE(
      d.steps[0].detail.find("not run: no track's own chain has an EQ of gains per frequency"),
      std::string::npos)
      << d.steps[0].detail;
  EXPECT_FALSE(d.steps[0].kept);
  EXPECT_TRUE(std::isnan(d.steps[0].loss_after));
  EXPECT_EQ(calls, 0) << "no whole-song loss spent on a part that cannot run";
  EXPECT_FALSE(d.eq.gains_db.defined());
  for (const auto& [type, named] : start)
    for (const auto& [name, tensor] : named.named())
      EXPECT_TRUE(at::equal(asked.at(type).at(name), tensor)) << type << "." << name;
}

TEST(TypicalStarts, SetWhatTheDescriptorsSay) {
  // The demo's console: dynamics start with 10 ms smoothing, the gates at −50 dB; nodes of
  // types without a fit start keep the specs' initial values.
  DemoSong song          = make_demo_song({8000, 3.0, 1});
  FitOptions options     = testing::small_options(0);
  options.initialisation = {true, false, false};
  Fitter fitter(song.console, song.tracks, song.mix, song.sample_rate, options);
  Parameters defaults   = create_parameters(song.console, fitter.processors());
  TensorDict compressor = fitter.processors()
                              .at("compressor")
                              ->to_physical(fitter.detached_parameters().at("compressor").own);
  TensorDict gate = fitter.processors()
                        .at("noise_gate")
                        ->to_physical(fitter.detached_parameters().at("noise_gate").own);
  EXPECT_TRUE(at::allclose(compressor.at("smoothing_ms"),
                           at::full_like(compressor.at("smoothing_ms"), 10.0), 1e-4));
  EXPECT_TRUE(
      at::allclose(gate.at("threshold_db"), at::full_like(gate.at("threshold_db"), -50.0), 1e-4));
  EXPECT_TRUE(at::equal(fitter.detached_parameters().at("eq").at("log_magnitude"),
                        defaults.at("eq").at("log_magnitude")));
  EXPECT_EQ(fitter.initialisation().started.size(),
            song.console.nodes_of_type("compressor").size() +
                song.console.nodes_of_type("noise_gate").size());
}

TEST(TypicalStarts, HighPassesStartWhereTheyHearNothing) {
  // grafx fit's console: each track's high-pass at 20 Hz and 99 % wet, not at its spec's 1 kHz
  // and half wet, which would cut and shelve the track before the first step.
  DemoSong song = make_demo_song({8000, 3.0, 1});
  ConsoleOptions console;
  console.n_tracks       = song.tracks.size(0);
  console.chain          = default_fit_chain();
  console.dry_wet        = true;
  Graph graph            = build_console(console, registry_node_types()).graph;
  FitOptions options     = testing::small_options(0);
  options.initialisation = {true, false, false};
  Fitter fitter(graph, song.tracks, song.mix, song.sample_rate, options);
  const Parameters started       = fitter.detached_parameters();
  const TypeParameters& highpass = started.at("highpass");
  ASSERT_EQ(highpass.own.at("frequency").size(0), console.n_tracks);
  TensorDict physical = fitter.processors().at("highpass")->to_physical(highpass.own);
  EXPECT_TRUE(
      at::allclose(physical.at("cutoff_hz"), at::full_like(physical.at("cutoff_hz"), 20.0), 1e-4));
  EXPECT_TRUE(at::allclose(highpass.wet.sigmoid(), at::full_like(highpass.wet, 0.99), 1e-5));
}

TEST(LearningRateGroups, FreezeAndNameCheck) {
  Graph graph            = test_graph(2);
  at::Tensor tracks      = at::randn({2, 2, 2 * kRate}) * 0.2;
  at::Tensor mix         = tracks.sum(0) * 0.3;
  FitOptions options     = testing::small_options(3);
  options.learning_rates = {{"eq", 0.0}, {"log_gain", 0.2}};
  Fitter fitter(graph, tracks, mix, kRate, options);
  at::Tensor eq_start   = fitter.parameters().at("eq").at("log_magnitude").detach().clone();
  at::Tensor gain_start = fitter.parameters().at("gain_pan").at("log_gain").detach().clone();
  fitter.run();
  EXPECT_TRUE(at::equal(fitter.parameters().at("eq").at("log_magnitude"), eq_start));
  EXPECT_FALSE(at::equal(fitter.parameters().at("gain_pan").at("log_gain"), gain_start));
  options.learning_rates = {{"reverb.decay", 0.1}};
  EXPECT_GRAFX_ERROR(Fitter(graph, tracks, mix, kRate, options), "grafx.fit.options",
                     "reverb.decay");
}

TEST(Stages, OnlyTheStagesGroupsTrainUntilItEnds) {
  // First half: only the gains train; then the EQs too.
  Graph graph        = test_graph(2);
  at::Tensor tracks  = at::randn({2, 2, 2 * kRate}) * 0.2;
  at::Tensor mix     = tracks.sum(0) * 0.3;
  FitOptions options = testing::small_options(4);
  options.stages     = {{0.5, {"gain_pan"}}};
  Fitter fitter(graph, tracks, mix, kRate, options);
  at::Tensor eq_start   = fitter.parameters().at("eq").at("log_magnitude").detach().clone();
  at::Tensor gain_start = fitter.parameters().at("gain_pan").at("log_gain").detach().clone();
  fitter.step();
  fitter.step();
  EXPECT_TRUE(at::equal(fitter.parameters().at("eq").at("log_magnitude"), eq_start));
  EXPECT_FALSE(at::equal(fitter.parameters().at("gain_pan").at("log_gain"), gain_start));
  fitter.step();
  EXPECT_FALSE(at::equal(fitter.parameters().at("eq").at("log_magnitude"), eq_start));
  options.stages = {{0.5, {"gain_pan"}}, {0.4, {"eq"}}};
  EXPECT_GRAFX_ERROR(Fitter(graph, tracks, mix, kRate, options), "grafx.fit.options",
                     "stages ending in order");
  options.stages = {{0.5, {"reverb.decay"}}};
  EXPECT_GRAFX_ERROR(Fitter(graph, tracks, mix, kRate, options), "grafx.fit.options",
                     "reverb.decay");
}

}  // namespace
}  // namespace grafx
