// Golden checks of the stereo processors and channel converters against analytic results, and
// rendering of graphs whose channel counts change.

#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/channel_converters.h>
#include <grafx/processors/gain_pan.h>
#include <grafx/processors/send.h>
#include <grafx/processors/stereo_imager.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

TEST(GainPan, IsAnExactGainPerChannel) {
  GainPan gain_pan({});
  at::Tensor x = at::randn({3, 2, 100}, at::kDouble);
  at::Tensor log_gain =
      at::tensor({0.0, 0.0, std::log(2.0), -std::log(4.0), 1.0, -1.0}, at::kDouble).view({3, 2});
  at::Tensor y = gain_pan.forward({x}, {{"log_gain", log_gain}}).outputs[0];
  EXPECT_TRUE(at::equal(y[0], x[0]));
  EXPECT_TRUE(at::allclose(y[1][0], 2.0 * x[1][0]));
  EXPECT_TRUE(at::allclose(y[1][1], 0.25 * x[1][1]));
  EXPECT_NEAR(gain_pan.to_physical({{"log_gain", log_gain}}).at("gain_db")[1][0].item<double>(),
              6.0206, 1e-4);
  // A mono input is its dual-mono stereo (GRAFX's StereoGain broadcasts it the same way).
  at::Tensor mono = x.narrow(1, 0, 1);
  EXPECT_TRUE(
      at::equal(gain_pan.forward({mono}, {{"log_gain", log_gain}}).outputs[0],
                gain_pan.forward({mono.expand({3, 2, 100})}, {{"log_gain", log_gain}}).outputs[0]));
  EXPECT_GRAFX_ERROR(
      gain_pan.forward({at::randn({3, 3, 100}, at::kDouble)}, {{"log_gain", log_gain}}),
      "grafx.processor.inputs",
      "expected a mono or stereo (N×1×L or N×2×L) input, but got 3 channels");
}

TEST(StereoImager, IsIdentityAtZeroAndScalesTheSide) {
  StereoImager imager({});
  at::Tensor x        = at::randn({2, 2, 100}, at::kDouble);
  at::Tensor log_gain = at::tensor({0.0, std::log(3.0)}, at::kDouble).view({2, 1});
  at::Tensor y        = imager.forward({x}, {{"log_gain", log_gain}}).outputs[0];
  EXPECT_TRUE(at::allclose(y[0], x[0], 1e-12, 1e-12));
  at::Tensor mid = x[1][0] + x[1][1], side = x[1][0] - x[1][1];
  EXPECT_TRUE(at::allclose(y[1][0] + y[1][1], mid));
  EXPECT_TRUE(at::allclose(y[1][0] - y[1][1], 3.0 * side));
  at::Tensor mono =
      imager.forward({x}, {{"log_gain", at::full({2, 1}, -50.0, at::kDouble)}}).outputs[0];
  EXPECT_TRUE(at::allclose(mono.select(1, 0), mono.select(1, 1), 1e-9, 1e-9))
      << "−∞ side gain is mono";
}

TEST(Send, IsOneGainOnEveryChannel) {
  Send send({});
  at::Tensor x        = at::randn({2, 3, 50}, at::kDouble);
  at::Tensor log_gain = at::tensor({0.0, std::log(0.25)}, at::kDouble).view({2, 1});
  at::Tensor y        = send.forward({x}, {{"log_gain", log_gain}}).outputs[0];
  EXPECT_TRUE(at::equal(y[0], x[0]));
  EXPECT_TRUE(at::allclose(y[1], 0.25 * x[1], 1e-15, 0));
  EXPECT_NEAR(send.parameter_specs()[0].init_mean, std::log(std::pow(10.0, -12.0 / 20)), 1e-12);
}

using Conversion = ChannelConverter::Conversion;

TEST(ChannelConverters, MidSideSplitAndMergeAreOrthonormalInverses) {
  ChannelConverter split({}, Conversion::kStereoToMidSide), merge({}, Conversion::kMidSideToStereo);
  EXPECT_EQ(split.outlets(), (std::vector<std::string>{"mid", "side"}));
  EXPECT_EQ(merge.inlets(), (std::vector<std::string>{"mid", "side"}));
  at::Tensor x               = at::randn({3, 2, 400}, at::kDouble);
  std::vector<at::Tensor> ms = split.forward({x}, {}).outputs;
  const double r             = 1 / std::sqrt(2.0);
  at::Tensor left = x.narrow(1, 0, 1), right = x.narrow(1, 1, 1);
  EXPECT_TRUE(at::allclose(ms[0], (left + right) * r, 1e-15, 1e-15));
  EXPECT_TRUE(at::allclose(ms[1], (left - right) * r, 1e-15, 1e-15));
  EXPECT_NEAR((ms[0].pow(2).sum() + ms[1].pow(2).sum()).item<double>(),
              x.pow(2).sum().item<double>(), 1e-9)
      << "energy is kept";
  EXPECT_TRUE(at::allclose(merge.forward(ms, {}).outputs[0], x, 1e-14, 1e-14)) << "merge ∘ split";
  // A mono input is dual mono: all mid, no side.
  at::Tensor mono = x.narrow(1, 0, 1);
  ms              = split.forward({mono}, {}).outputs;
  EXPECT_TRUE(at::allclose(ms[0], mono * std::sqrt(2.0), 1e-15, 1e-15));
  EXPECT_EQ(ms[1].abs().max().item<double>(), 0.0);
}

TEST(ChannelConverters, MonoToStereoCopiesMonoAndDownmixesStereo) {
  ChannelConverter upmix({}, Conversion::kMonoToStereo);
  at::Tensor x = at::randn({2, 1, 100}, at::kDouble);
  at::Tensor y = upmix.forward({x}, {}).outputs[0];
  ASSERT_EQ(y.sizes(), at::IntArrayRef({2, 2, 100}));
  EXPECT_TRUE(at::equal(y.select(1, 0), x.select(1, 0)));
  EXPECT_TRUE(at::equal(y.select(1, 1), x.select(1, 0)));
  at::Tensor stereo = at::randn({2, 2, 100}, at::kDouble);
  EXPECT_TRUE(at::allclose(upmix.forward({stereo}, {}).outputs[0].select(1, 1), stereo.mean(1),
                           1e-15, 1e-15));
}

/// in → stereo_to_mid_side → (mid: eq, side: send) → mid_side_to_stereo → out, plus the mid
/// alone to a second out.
Graph mid_side_graph() {
  Graph g(registry_node_types());
  NodeId in = g.add("in"), split = g.add("stereo_to_mid_side"), eq = g.add("eq"),
         side = g.add("send"), merge = g.add("mid_side_to_stereo"), out = g.add("out"),
         mid_out = g.add("out");
  g.connect(in, split);
  g.connect(split, eq, "mid");
  g.connect(split, side, "side");
  g.connect(eq, merge, "main", "mid");
  g.connect(side, merge, "main", "side");
  g.connect(merge, out);
  g.connect(split, mid_out, "mid");
  return g;
}

TEST(ChannelConverters, RenderedGraphsChangeChannelCountsExactly) {
  Graph g               = mid_side_graph();
  Processors processors = make_processors(g.types(), {8000});
  Parameters parameters = create_parameters(g, processors, {1, at::kDouble, false});
  parameters["send"]["log_gain"].fill_(0.0);     // side unchanged
  parameters["eq"]["log_magnitude"].fill_(0.0);  // mid unchanged
  at::Tensor x    = at::randn({1, 2, 3000}, at::kDouble);
  RenderPlan plan = make_render_plan(to_tensor(g));
  at::Tensor y    = render(plan, processors, parameters, x).outputs;
  // Two outputs, both stereo (the widest signal): the merged mix, and the mid spread.
  ASSERT_EQ(y.sizes(), at::IntArrayRef({2, 2, 3000}));
  EXPECT_TRUE(at::allclose(y[0], x[0], 1e-9, 1e-9)) << "unity mid and side give the input back";
  at::Tensor mid = (x[0][0] + x[0][1]) / std::sqrt(2.0);
  EXPECT_TRUE(at::allclose(y[1][0], mid, 1e-9, 1e-9));
  EXPECT_TRUE(at::allclose(y[1][1], mid, 1e-9, 1e-9));
  // Mono sources through mono processors stay mono.
  Graph mono_graph(registry_node_types());
  mono_graph.connect(mono_graph.add("in"), mono_graph.add("eq"));
  mono_graph.connect(1, mono_graph.add("out"));
  Parameters eq = create_parameters(mono_graph, processors, {1, at::kDouble, false});
  at::Tensor mono_out =
      render(make_render_plan(to_tensor(mono_graph)), processors, eq, x.narrow(1, 0, 1)).outputs;
  EXPECT_EQ(mono_out.sizes(), at::IntArrayRef({1, 1, 3000}));
}

TEST(ChannelConverters, SignalsThatCannotMeetAreRefused) {
  // Three-channel sources meet the stereo of mono_to_stereo at a mix.
  Graph g(registry_node_types());
  NodeId in = g.add("in"), upmix = g.add("mono_to_stereo"), mix = g.add("mix"), out = g.add("out");
  g.connect(in, upmix);
  g.connect(upmix, mix);
  g.connect(in, mix);
  g.connect(mix, out);
  Processors processors = make_processors(g.types(), {8000});
  at::Tensor x          = at::randn({1, 3, 100});
  EXPECT_GRAFX_ERROR(render(make_render_plan(to_tensor(g)), processors, {}, x),
                     "grafx.render.channels", "step 2 (mix) receives signals of 2 and 3 channels");
  EXPECT_GRAFX_ERROR(render_naive(g, processors, {}, x), "grafx.render.channels",
                     "node 2 (mix) receives signals of");
}

}  // namespace
}  // namespace grafx
