// Automated parameters: each automatable processor with a constant curve equals the static
// processor; a linear fade equals its formula per sample; batched (every schedule), one-by-one,
// naive, chunked and adjoint renders agree; gradients of curve points equal finite differences
// in float64; graphs refuse what cannot be automated; graph files keep automation.

#include <grafx/graph/graph_json.h>
#include <grafx/plan/render_plan.h>
#include <grafx/render/adjoint.h>
#include <grafx/render/chunked.h>
#include <grafx/render/derivatives.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/gradient_check.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>
#include <set>
#include <string>

namespace grafx {
namespace {

using testing::relative_error;

constexpr SampleRate kRate = 8000;

/// in -> one node of `type` -> out (a second `in` for two-inlet types).
Graph single_node(const std::string& type, NodeId* node = nullptr) {
  Graph g(registry_node_types());
  NodeId in = g.add("in"), p = g.add(type), out = g.add("out");
  const NodeType& t = g.types()[g.types().id(type)];
  g.connect(in, p, "main", t.inlets[0]);
  for (size_t i = 1; i < t.inlets.size(); ++i) g.connect(g.add("in"), p, "main", t.inlets[i]);
  g.connect(p, out, t.outlets[0]);
  if (node) *node = p;
  return g;
}

at::Tensor sources_for(const Graph& g, int64_t length, at::ScalarType dtype = at::kFloat) {
  at::manual_seed(3);
  return at::randn({g.count_per_type()[NodeTypes::kIn], 2, length}, at::TensorOptions(dtype));
}

TEST(Automation, ConstantCurvesEqualStaticParametersForEveryAutomatableParameter) {
  std::set<std::string> checked;  // automatable parameters other than the wet amount
  for (const auto& descriptor : processor_registry()) {
    auto processor                   = descriptor.make({kRate});
    std::vector<ParameterSpec> specs = processor->parameter_specs();
    specs.push_back(dry_wet_spec());
    for (const auto& spec : specs) {
      if (spec.automation.empty()) continue;
      NodeId node     = -1;
      Graph fixed     = single_node(descriptor.name, &node);
      Graph automated = fixed;
      if (is_wet_amount(spec.name)) fixed.set_dry_wet(node);
      automated = fixed;
      automated.set_automation({10.0, 7});
      automated.set_automated(node, spec.name);
      Processors processors = make_processors(automated.types(), {kRate});
      Parameters p_fixed    = create_parameters(fixed, processors, {5, at::kDouble, false});
      for (auto& [name, t] : p_fixed[descriptor.name].named()) t.add_(at::randn_like(t) * 0.3);
      Parameters p_automated = p_fixed;
      at::Tensor value       = p_fixed[descriptor.name].at(spec.name);
      p_automated[descriptor.name][curve_name(spec.name)] =
          value.unsqueeze(1).expand(curve_spec(spec, 7).shape_for(1)).clone();
      // The static value of an automated node is not read: changing it changes nothing.
      p_automated[descriptor.name][spec.name] = value + 1;
      at::Tensor x                            = sources_for(fixed, 900, at::kDouble);
      RenderOptions options;
      options.time = {kRate, 4000};
      at::Tensor expected =
          render(make_render_plan(to_tensor(fixed)), processors, p_fixed, x).outputs;
      at::Tensor got =
          render(make_render_plan(to_tensor(automated)), processors, p_automated, x, options)
              .outputs;
      // In float64: in float32 the EQs' paths round differently (the fixed cascade keeps double
      // precision between sections), by up to 1.4e-5 for poles within 0.3 % of z = 1.
      EXPECT_LT(relative_error(got, expected), 1e-9) << descriptor.name << "." << spec.name;
      if (!is_wet_amount(spec.name)) checked.insert(descriptor.name + "." + spec.name);
    }
  }
  for (const char* expected :
       {"gain_pan.log_gain", "stereo_imager.log_gain", "send.log_gain", "compressor.log_threshold",
        "parametric_eq.log_gain", "parametric_eq_midside.log_gain", "graphic_eq.log_gains"})
    EXPECT_EQ(checked.count(expected), 1u) << expected;
}

TEST(Automation, ALinearFadeInDecibelsEqualsItsFormulaPerSample) {
  NodeId node = -1;
  Graph g     = single_node("gain_pan", &node);
  g.set_automation({10.0, 11});  // one second of points, every 100 ms
  g.set_automated(node, "log_gain");
  Processors processors = make_processors(g.types(), {kRate});
  Parameters p          = create_parameters(g, processors, {0, at::kDouble, false});
  // Left: 0 dB to −40 dB over the second; right: −6 dB, then +6 dB from 0.5 s (a step between
  // two points, linear over their 100 ms).
  std::vector<double> left_db, right_db;
  for (int i = 0; i < 11; ++i) {
    left_db.push_back(-4.0 * i);
    right_db.push_back(i <= 5 ? -6.0 : 6.0);
  }
  at::Tensor db =
      at::stack({at::tensor(left_db, at::kDouble), at::tensor(right_db, at::kDouble)}, 1);
  p["gain_pan"][curve_name("log_gain")] = (db * (std::log(10.0) / 20.0)).unsqueeze(0);
  const int64_t length                  = 12000;  // 1.5 s: the last point holds after 1 s
  at::Tensor x                          = at::ones({1, 2, length}, at::kDouble);
  RenderOptions options;
  options.time = {kRate, 0};
  at::Tensor y = render(make_render_plan(to_tensor(g)), processors, p, x, options).outputs;
  double worst = 0;
  for (int64_t n = 0; n < length; n += 7) {
    const double t  = double(n) / kRate;
    const double at = std::min(t * 10.0, 10.0);
    const int i     = std::min(int(at), 9);
    const double f  = at - i;
    const double l  = left_db[size_t(i)] + f * (left_db[size_t(i) + 1] - left_db[size_t(i)]);
    const double r  = right_db[size_t(i)] + f * (right_db[size_t(i) + 1] - right_db[size_t(i)]);
    worst           = std::max(worst, std::abs(y[0][0][n].item<double>() - std::pow(10.0, l / 20)));
    worst           = std::max(worst, std::abs(y[0][1][n].item<double>() - std::pow(10.0, r / 20)));
  }
  EXPECT_LT(worst, 1e-12);
  // The step's 100 ms ramp: no sample-to-sample jump above its steepest slope (at +6 dB).
  at::Tensor right = y[0][1];
  EXPECT_LT(
      (right.narrow(0, 1, length - 1) - right.narrow(0, 0, length - 1)).abs().max().item<double>(),
      std::log(10.0) / 20 * std::pow(10.0, 0.3) * 12.0 / 800 * 1.01);
}

/// A console whose tracks ride their gain and pan, one EQ's band gains, one compressor's
/// threshold, the send levels
/// and the echo's wet amount move, and whose stereo imagers widen over time; other nodes stay
/// static.
struct AutomatedConsole {
  Graph graph;
  Processors processors;
  Parameters parameters;
};

AutomatedConsole automated_console(at::ScalarType dtype) {
  ConsoleOptions options;
  options.n_tracks     = 3;
  options.track_groups = {0, 1, 0};
  options.chain        = {"eq", "parametric_eq", "compressor", "stereo_imager", "gain_pan"};
  options.dry_wet      = true;
  options.sends        = {{"echo", {"delay"}, {}}};
  AutomatedConsole c;
  c.graph = build_console(options).graph;
  c.graph.set_automation({20.0, 9});
  int64_t seen = 0;
  for (NodeId id : c.graph.nodes()) {
    const std::string& type = c.graph.type_name(id);
    if (type == "gain_pan" && seen++ % 2 == 0) c.graph.set_automated(id, "log_gain");
    if (type == "compressor" && c.graph.node(id).name.rfind("track1", 0) == 0)
      c.graph.set_automated(id, "log_threshold");
    if (type == "parametric_eq" && c.graph.node(id).name.rfind("track0", 0) == 0)
      c.graph.set_automated(id, "log_gain");
    if (type == "send" || type == "stereo_imager") c.graph.set_automated(id, "log_gain");
    if (type == "delay") {
      c.graph.set_dry_wet(id);
      c.graph.set_automated(id, "dry_wet");
    }
  }
  c.processors = make_processors(c.graph.types(), {kRate});
  c.parameters = create_parameters(c.graph, c.processors, {7, dtype, false});
  for (auto& [type, named] : c.parameters)
    for (auto& [name, t] : named.named())
      if (!automated_parameter(name).empty()) t.add_(at::randn_like(t) * 0.5);
  return c;
}

struct Rendered {
  at::Tensor outputs;
  Parameters gradients;
};

Rendered with_gradients(const std::function<RenderResult(const Parameters&)>& render_function,
                        const Parameters& initial) {
  Parameters parameters = cloned_parameters(initial, true);
  RenderResult result   = render_function(parameters);
  at::manual_seed(11);
  (result.outputs * at::randn_like(result.outputs)).sum().backward();
  Rendered r{result.outputs.detach(), {}};
  for (const auto& [type, named] : parameters)
    for (const auto& [name, t] : named.named())
      r.gradients[type][name] = t.grad().defined() ? t.grad() : at::zeros_like(t);
  return r;
}

void expect_equal(const Rendered& got, const Rendered& expected, const std::string& what) {
  EXPECT_LT(relative_error(got.outputs, expected.outputs), 1e-10) << what;
  for (const auto& [type, named] : expected.gradients)
    for (const auto& [name, g] : named.named()) {
      const at::Tensor& mine = got.gradients.at(type).at(name);
      if (g.abs().max().item<double>() > 1e-12)
        EXPECT_LT(relative_error(mine, g), 1e-10) << what << ": " << type << "." << name;
      else  // rounding noise (a knee no signal reaches)
        EXPECT_LT(mine.abs().max().item<double>(), 1e-12) << what << ": " << type << "." << name;
    }
}

TEST(Automation, BatchedOneByOneNaiveAndAdjointRendersAgree) {
  AutomatedConsole c = automated_console(at::kDouble);
  at::Tensor x       = sources_for(c.graph, 4000, at::kDouble);
  const SongTime time{kRate, 1234};
  RenderOptions options;
  options.time   = time;
  Rendered naive = with_gradients(
      [&](const Parameters& p) { return render_naive(c.graph, c.processors, p, x, time); },
      c.parameters);
  // The curves move the output: a render of the static values differs.
  EXPECT_GT(relative_error(render_naive(c.graph, c.processors, c.parameters, x, {kRate, 0}).outputs,
                           naive.outputs),
            1e-3);
  for (ScheduleMethod method : {ScheduleMethod::kOneByOne, ScheduleMethod::kBeam}) {
    RenderPlan plan  = make_render_plan(to_tensor(c.graph), ScheduleOptions{method});
    Rendered batched = with_gradients(
        [&](const Parameters& p) { return render(plan, c.processors, p, x, options); },
        c.parameters);
    expect_equal(batched, naive, method == ScheduleMethod::kOneByOne ? "one-by-one" : "batched");
  }
  RenderPlan plan = make_render_plan(to_tensor(c.graph));
  at::manual_seed(11);
  AdjointOptions adjoint;
  adjoint.render = options;
  AdjointRender run(plan, c.processors, c.parameters, x, adjoint);
  Gradients g = run.backward(at::randn_like(run.result().outputs));
  Rendered explicit_backward{run.result().outputs, g.parameters};
  expect_equal(explicit_backward, naive, "adjoint");
}

TEST(Automation, CurvesReadTheirPlaceFromATensorAsFromTheHost) {
  // A fit's crops on a GPU give their first samples as a tensor on the device (so that a
  // captured step replays anywhere in the song): the same outputs and gradients as the host's
  // numbers, for two crops at their own places and for one.
  AutomatedConsole c = automated_console(at::kDouble);
  at::Tensor one     = sources_for(c.graph, 3000, at::kDouble);
  at::Tensor two     = at::stack({one, one.flip(-1)});
  RenderPlan plan    = make_render_plan(to_tensor(c.graph));
  auto rendered      = [&](const at::Tensor& x, const SongTime& time) {
    RenderOptions options;
    options.time = time;
    return with_gradients(
        [&](const Parameters& p) { return render(plan, c.processors, p, x, options); },
        c.parameters);
  };
  SongTime on_host{kRate, 0, {1234, 9000}}, on_device{kRate};
  on_device.first_samples = at::tensor(std::vector<int64_t>{1234, 9000});
  expect_equal(rendered(two, on_device), rendered(two, on_host), "two crops");
  EXPECT_GT(relative_error(rendered(two, on_device).outputs,
                           rendered(two, {kRate, 0, {1234, 1234}}).outputs),
            1e-3);  // each crop reads its own place
  on_device.first_samples = at::tensor(std::vector<int64_t>{1234});
  expect_equal(rendered(one, on_device), rendered(one, {kRate, 1234}), "one crop");
  on_device.first_samples = at::tensor(std::vector<int64_t>{1, 2, 3});
  RenderOptions wrong;
  wrong.time = on_device;
  EXPECT_GRAFX_ERROR(render(plan, c.processors, c.parameters, two, wrong),
                     "grafx.render.automation", "or one for all");
}

TEST(Automation, ChunkedRendersReadTheCurvesOverTheirSpans) {
  AutomatedConsole c = automated_console(at::kFloat);
  at::Tensor x       = sources_for(c.graph, 5000);
  RenderPlan plan    = make_render_plan(to_tensor(c.graph));
  ChunkOptions options;
  options.render.time = {kRate, 800};
  at::Tensor whole    = render(plan, c.processors, c.parameters, x, options.render).outputs;
  for (int64_t chunk : {1000, 1777}) {
    options.chunk_samples = chunk;
    at::Tensor pieces     = render_in_chunks(plan, c.processors, c.parameters, x, options);
    EXPECT_LT(relative_error(pieces, whole), 1e-5) << chunk << "-sample chunks";
  }
}

TEST(Automation, ChunksReachAsFarBackAsTheCurvesLongestFilterRings) {
  // A narrow low bell held at 0 dB, whose automated gain rises to +24 dB: its poles then ring
  // far longer, and chunks must read that far back.
  NodeId node = -1;
  Graph g     = single_node("parametric_eq", &node);
  g.set_automation({10.0, 5});
  g.set_automated(node, "log_gain");
  Processors processors = make_processors(g.types(), {kRate});
  Parameters p          = create_parameters(g, processors, {0, at::kFloat, false});
  p["parametric_eq"]["log_q"].select(1, 1).fill_(std::log(5.0));
  at::Tensor& curve  = p["parametric_eq"][curve_name("log_gain")];
  RenderPlan plan    = make_render_plan(to_tensor(g));
  const int64_t held = temporal_support(plan, processors, p).past_samples;
  for (int64_t point : {3, 4}) curve.select(1, point).select(1, 1).fill_(24 * std::log(10.0) / 20);
  const int64_t moving = temporal_support(plan, processors, p).past_samples;
  EXPECT_GT(moving, 2 * held) << held << " samples held, " << moving << " moving";
  ChunkOptions options;
  options.render.time   = {kRate, 0};
  options.chunk_samples = 1000;
  at::Tensor x          = sources_for(g, 12000);
  at::Tensor whole      = render(plan, processors, p, x, options.render).outputs;
  EXPECT_LT(relative_error(render_in_chunks(plan, processors, p, x, options), whole), 1e-5);
}

TEST(Automation, GradientsOfCurvePointsEqualFiniteDifferences) {
  AutomatedConsole c = automated_console(at::kDouble);
  at::Tensor x       = sources_for(c.graph, 1200, at::kDouble);
  RenderPlan plan    = make_render_plan(to_tensor(c.graph));
  RenderOptions options;
  options.time = {kRate, 300};
  std::vector<std::pair<std::string, std::string>> curves;
  std::vector<at::Tensor> inputs;
  for (const auto& [type, named] : c.parameters)
    for (const auto& [name, t] : named.named())
      if (!automated_parameter(name).empty()) {
        curves.emplace_back(type, name);
        inputs.push_back(t);
      }
  ASSERT_EQ(curves.size(), 6u);  // EQ, compressor, gain_pan, send, stereo_imager, delay's wet
  testing::expect_gradients_match(
      [&](const std::vector<at::Tensor>& values) {
        Parameters p = c.parameters;
        for (size_t i = 0; i < curves.size(); ++i) p[curves[i].first][curves[i].second] = values[i];
        return render(plan, c.processors, p, x, options).outputs;
      },
      inputs, 1e-6, 12);
}

TEST(Automation, ForwardModeAlongTheCurvesEqualsCentralDifferences) {
  AutomatedConsole c = automated_console(at::kDouble);
  at::Tensor x       = sources_for(c.graph, 1200, at::kDouble);
  RenderPlan plan    = make_render_plan(to_tensor(c.graph));
  RenderOptions options;
  options.time = {kRate, 300};
  Parameters direction, plus = c.parameters, minus = c.parameters;
  const double step = 1e-6;
  for (const auto& [type, named] : c.parameters)
    for (const auto& [name, t] : named.named())
      if (!automated_parameter(name).empty()) {
        direction[type][name] = at::randn_like(t);
        plus[type][name]      = t + step * direction[type][name];
        minus[type][name]     = t - step * direction[type][name];
      }
  TangentResult forward = jvp(plan, c.processors, c.parameters, x, direction, {}, options);
  at::Tensor central    = (render(plan, c.processors, plus, x, options).outputs -
                        render(plan, c.processors, minus, x, options).outputs) /
                       (2 * step);
  EXPECT_LT(relative_error(forward.tangent, central), 1e-6);
}

TEST(Automation, WhatCannotBeAutomatedIsRefusedByName) {
  NodeId node = -1;
  Graph g     = single_node("compressor", &node);
  g.set_automated(node, "log_ratio");
  Processors processors = make_processors(g.types(), {kRate});
  EXPECT_GRAFX_ERROR(create_parameters(g, processors), "grafx.render.automation",
                     "compressor cannot automate");
  g.set_automated(node, "log_ratio", false);
  g.set_automated(node, "no_such_parameter");
  EXPECT_GRAFX_ERROR(create_parameters(g, processors), "grafx.render.automation",
                     "is not one of its parameters");
  EXPECT_GRAFX_ERROR(g.set_automated(g.nodes_of_type("in")[0], "log_gain"),
                     "grafx.graph.node_property", "only processor nodes");
  EXPECT_GRAFX_ERROR(g.set_automated(node, "log_gain@curve"), "grafx.graph.node_property",
                     "not a parameter name");
  EXPECT_GRAFX_ERROR(g.set_automation({0.0, 3}), "grafx.graph.automation", "above 0 Hz");
  EXPECT_GRAFX_ERROR(g.set_automation({NAN, 3}), "grafx.graph.automation", "above 0 Hz");
  EXPECT_GRAFX_ERROR(g.set_automation({10.0, 0}), "grafx.graph.automation", "at least one point");

  Graph fade = single_node("gain_pan", &node);
  fade.set_automated(node, "log_gain");
  Processors gain       = make_processors(fade.types(), {kRate});
  Parameters parameters = create_parameters(fade, gain);
  EXPECT_GRAFX_ERROR(
      render(make_render_plan(to_tensor(fade)), gain, parameters, sources_for(fade, 100)),
      "grafx.render.automation", "needs the sample rate");
}

TEST(Automation, GraphFilesKeepAutomationAndStayVersion2Without) {
  NodeId node = -1;
  Graph g     = single_node("gain_pan", &node);
  EXPECT_TRUE(testing::contains(graph_to_json(g), "\"version\": 2"));
  g.set_automation({12.5, 40});
  g.set_automated(node, "log_gain");
  g.set_dry_wet(node);
  g.set_automated(node, "dry_wet");
  const std::string text = graph_to_json(g);
  EXPECT_TRUE(testing::contains(text, "\"version\": 3")) << text;
  EXPECT_TRUE(testing::contains(text, "\"automated\":[\"dry_wet\",\"log_gain\"]")) << text;
  Graph back = graph_from_json(text, "memory", registry_node_types());
  EXPECT_EQ(back, g);
  EXPECT_EQ(back.automation(), (Automation{12.5, 40}));
  std::string v2 = text;
  v2.replace(v2.find("\"version\": 3"), 12, "\"version\": 2");
  EXPECT_GRAFX_ERROR(graph_from_json(v2, "old.json", registry_node_types()), "grafx.io.format",
                     "automation needs version 3");
  std::string bad = text;
  bad.replace(bad.find("\"points\":40"), 11, "\"points\":0");
  EXPECT_GRAFX_ERROR(graph_from_json(bad, "bad.json", registry_node_types()),
                     "grafx.graph.automation", "bad.json: automation");
}

}  // namespace
}  // namespace grafx
