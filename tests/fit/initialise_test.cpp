// The least-squares start of the channel gains: on a mix made by the graph itself with hidden
// gains and pans (hard pans included), it finds them exactly and moves each track's gain/pan
// by them; tracks without their own gain/pan keep theirs.

#include <grafx/fit/initialise.h>
#include <grafx/graph/graph_tensor.h>
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
  options.initialise_gains = true;
  Fitter started(graph, tracks, mix, kRate, options);
  EXPECT_FALSE(plain.gain_initialisation().gains.defined());
  ASSERT_TRUE(started.gain_initialisation().gains.defined());
  EXPECT_LT(started.evaluate().total.item<double>(), 0.5 * plain.evaluate().total.item<double>());
}

}  // namespace
}  // namespace grafx
