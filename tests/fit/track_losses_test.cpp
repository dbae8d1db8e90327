// The loss with a track's own processing replaced by its best static gain.

#include <grafx/fit/track_losses.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "fit/fit_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace grafx {
namespace {

constexpr SampleRate kRate = 30000;

// Two tracks into a bus and a master gain: track a's strip is a gain and pan, which a static
// gain per channel matches exactly; track b's is an EQ of ±12 dB bands, which none does. The
// target is the console's own mix, so the fitted loss is 0 and each part's loss is its cost.
TEST(TrackLosses, AGainIsMatchedExactlyAndAnEqIsNot) {
  Graph g(registry_node_types());
  const NodeId in_a = g.add("in", "a"), in_b = g.add("in", "b");
  const NodeId pan_a = g.add("gain_pan", "a.pan"), eq_b = g.add("parametric_eq", "b.eq"),
               pan_b = g.add("gain_pan", "b.pan"), bus = g.add("mix", "bus"),
               master = g.add("gain_pan", "master"), out = g.add("out");
  g.connect(in_a, pan_a);
  g.connect(in_b, eq_b);
  g.connect(eq_b, pan_b);
  g.connect(pan_a, bus);
  g.connect(pan_b, bus);
  g.connect(bus, master);
  g.connect(master, out);
  const Processors processors = make_processors(g.types(), {kRate});
  Parameters p                = create_parameters(g, processors, {0, at::kFloat, false});
  // gain_pan rows in id order: a's, b's, the master's.
  p["gain_pan"]["log_gain"] =
      at::tensor({std::log(0.5f), std::log(0.8f), 0.f, 0.f, 0.1f, -0.2f}).view({3, 2});
  const double band = 12 * std::log(10.0) / 20;
  p["parametric_eq"]["log_gain"] =
      at::tensor({band, -band, band, -band, band, -band, band, -band, band, -band}, at::kFloat)
          .view({1, 10});
  at::manual_seed(0);
  const int64_t length    = int64_t(1.5 * kRate);
  const at::Tensor tracks = (at::randn({2, 1, length}) * 0.1f).expand({2, 2, length}).contiguous();
  const at::Tensor mix = render(make_render_plan(to_tensor(g)), processors, p, tracks).outputs[0];
  Fitter fitter(g, tracks, mix, kRate, testing::small_options(1), p);
  const double fitted = fitter.evaluate().total.item<double>();
  EXPECT_LT(fitted, 1e-4);

  std::vector<std::pair<int64_t, int64_t>> steps;
  const std::vector<TrackLoss> losses = track_losses(fitter, [&](int64_t done, int64_t total) {
    steps.push_back({done, total});
  });
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(steps, (std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {2, 3}, {3, 3}}));
  EXPECT_EQ(losses[0].track, 0);
  EXPECT_EQ(losses[0].nodes, std::vector<NodeId>{pan_a});  // the master is shared
  EXPECT_EQ(losses[1].track, 1);
  EXPECT_EQ(losses[1].nodes, (std::vector<NodeId>{eq_b, pan_b}));
  // Track a's gains are those of its gain and pan, measured on its own on a constant.
  const at::Tensor ones = at::ones({1, 1, 16});
  const at::Tensor y =
      processors.at("gain_pan")
          ->forward({ones}, {{"log_gain", p.at("gain_pan").at("log_gain")[0].unsqueeze(0)}})
          .outputs[0];
  ASSERT_EQ(losses[0].gain.size(), 2u);
  for (int64_t c = 0; c < 2; ++c)
    EXPECT_NEAR(losses[0].gain[size_t(c)], y[0][c][8].item<double>(), 1e-5) << c;
  EXPECT_LT(losses[0].loss, fitted + 1e-4);
  EXPECT_GT(losses[1].loss, fitted + 0.05) << "an EQ of ±12 dB bands is no gain";

  // A strip bypassed already has nothing of its own to replace.
  g.set_bypassed(pan_a);
  Fitter bypassed(g, tracks, mix, kRate, testing::small_options(1), p);
  const std::vector<TrackLoss> without_a = track_losses(bypassed);
  ASSERT_EQ(without_a.size(), 1u);
  EXPECT_EQ(without_a[0].track, 1);
}

}  // namespace
}  // namespace grafx
