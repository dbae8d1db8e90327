// Render options (gradients to sources, frozen types, gradient hooks, the observer, rendering
// without autograd), multi-port graphs, parameters, and errors naming what is wrong.

#include <grafx/graph/console.h>
#include <grafx/graph/random_graph.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>
#include <grafx/tensors.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace grafx {
namespace {

using testing::make_test_processor;
using testing::TestKind;

/// in -> split; low -> duck.main, high -> p1 -> duck.side; duck -> p0 -> out; plus a dead p0.
struct Fixture {
  Graph graph;
  Processors processors;
  Fixture() : graph(random_graph_types({})) {
    NodeId in = graph.add("in"), split = graph.add("split"), nl = graph.add("p1"),
           duck = graph.add("duck");
    NodeId lin = graph.add("p0"), out = graph.add("out"), dead = graph.add("p0", "dead");
    graph.connect(in, split);
    graph.connect(split, duck, "low", "main");
    graph.connect(split, nl, "high");
    graph.connect(nl, duck, "main", "side");
    graph.connect(duck, lin);
    graph.connect(lin, out);
    graph.connect(split, dead, "high");
    processors = testing::random_graph_processors(graph.types());
  }
};

TEST(Render, MultiPortGraphMatchesHandComputation) {
  Fixture f;
  Parameters p    = create_parameters(f.graph, f.processors, {1, at::kDouble, false});
  at::Tensor x    = at::randn({1, 2, 64}, at::kDouble);
  RenderPlan plan = make_render_plan(to_tensor(f.graph), ScheduleMethod::kOptimal);
  EXPECT_EQ(plan.dead_nodes, std::vector<NodeId>{6});
  at::Tensor y = render(plan, f.processors, p, x).outputs;
  // By hand, with the processors called one at a time.
  auto call = [&](const std::string& type, std::vector<at::Tensor> in, int64_t row) {
    TensorDict params;
    for (const auto& [name, t] : p.at(type).own) params[name] = t.narrow(0, row, 1);
    return f.processors.at(type)->forward(in, params).outputs;
  };
  auto split    = call("split", {x}, 0);
  auto high     = call("p1", {split[1]}, 0)[0];
  auto duck     = call("duck", {split[0], high}, 0)[0];
  auto expected = call("p0", {duck}, 0)[0];  // p0's first node (id 4); the dead one is id 6
  EXPECT_TRUE(at::allclose(y, expected, 1e-12, 1e-12));
  auto aux = render(plan, f.processors, p, x).aux_losses;
  ASSERT_EQ(aux.at("p0").at("l2").sizes(), at::IntArrayRef({1})) << "the dead node is not rendered";
}

TEST(Render, GradientsReachParametersByDefaultAndSourcesOnRequest) {
  Fixture f;
  Parameters p    = create_parameters(f.graph, f.processors);
  at::Tensor x    = at::randn({1, 2, 64});
  RenderPlan plan = make_render_plan(to_tensor(f.graph));
  render(plan, f.processors, p, x).outputs.pow(2).sum().backward();
  for (const auto& [type, tensors] : p)
    for (const auto& [name, t] : tensors.named()) {
      ASSERT_TRUE(t.grad().defined()) << type << "." << name;
      if (type == "p0") {
        EXPECT_EQ(t.grad()[1].abs().sum().item<double>(), 0.0) << "the dead node gets nothing";
      }
    }
  EXPECT_FALSE(x.grad().defined());
  at::Tensor xs = x.clone().requires_grad_(true);
  render(plan, f.processors, p, xs).outputs.sum().backward();
  EXPECT_TRUE(xs.grad().defined());
  EXPECT_GT(xs.grad().abs().sum().item<double>(), 0.0);
}

TEST(Render, FrozenTypesGetNoGradient) {
  Fixture f;
  Parameters p = create_parameters(f.graph, f.processors);
  RenderOptions options;
  options.frozen_types = {"split", "duck"};
  RenderPlan plan      = make_render_plan(to_tensor(f.graph));
  render(plan, f.processors, p, at::randn({1, 2, 64}), options).outputs.sum().backward();
  EXPECT_FALSE(p.at("split").at("p").grad().defined());
  EXPECT_FALSE(p.at("duck").at("k").grad().defined());
  EXPECT_TRUE(p.at("p1").at("g").grad().defined()) << "gradients still flow through frozen nodes";
}

TEST(Render, GradientHooksClipNormaliseAndCustomise) {
  Graph chain(random_graph_types({}));
  NodeId in = chain.add("in"), a = chain.add("p0"), b = chain.add("p0"), out = chain.add("out");
  chain.connect(in, a);
  chain.connect(a, b);
  chain.connect(b, out);
  Processors processors = testing::random_graph_processors(chain.types());
  RenderPlan plan       = make_render_plan(to_tensor(chain));
  at::Tensor x          = at::randn({1, 2, 512}) * 10;
  auto gradient         = [&](const RenderOptions& options) {
    Parameters p   = create_parameters(chain, processors, {3});
    RenderResult r = render(plan, processors, p, x, options);
    (r.outputs.pow(2).sum() * 100).backward();
    return p.at("p0").at("a").grad();
  };
  at::Tensor plain = gradient({});
  RenderOptions clip;
  clip.gradient_hooks["p0"] = GradientHook::clip_norm(0.5);
  at::Tensor clipped        = gradient(clip);
  for (int64_t node = 0; node < 2; ++node) {
    EXPECT_GT(plain[node].norm().item<double>(), 0.5);
    EXPECT_NEAR(clipped[node].norm().item<double>(), 0.5, 1e-5);
    EXPECT_TRUE(at::allclose(clipped[node] / clipped[node].norm(), plain[node] / plain[node].norm(),
                             1e-5, 1e-6));
  }
  RenderOptions normalise;
  normalise.gradient_hooks["p0"] = GradientHook::normalize();
  at::Tensor unit                = gradient(normalise);
  for (int64_t node = 0; node < 2; ++node) EXPECT_NEAR(unit[node].norm().item<double>(), 1.0, 1e-5);
  RenderOptions custom;
  std::vector<std::string> seen;
  custom.gradient_hooks["p0"] =
      GradientHook::custom([&](const std::string& name, const at::Tensor& g) {
        seen.push_back(name);
        return g * 0 + 7;
      });
  at::Tensor sevens = gradient(custom);
  EXPECT_TRUE(at::equal(sevens, at::full_like(sevens, 7)));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));
}

TEST(Render, WithoutGradientsNoAutogradBookkeeping) {
  Fixture f;
  Parameters p = create_parameters(f.graph, f.processors, {0, at::kFloat, /*requires_grad=*/false});
  RenderPlan plan = make_render_plan(to_tensor(f.graph));
  std::vector<bool> grad_mode;
  RenderOptions options;
  options.observer = [&](const StepView&) { grad_mode.push_back(c10::GradMode::is_enabled()); };
  RenderResult r   = render(plan, f.processors, p, at::randn({1, 2, 64}), options);
  EXPECT_FALSE(r.outputs.requires_grad());
  EXPECT_EQ(grad_mode, std::vector<bool>(plan.steps.size(), false));
  Parameters trained = create_parameters(f.graph, f.processors);
  RenderOptions all_frozen;
  all_frozen.frozen_types = {"p0", "p1", "split", "duck"};
  EXPECT_FALSE(render(plan, f.processors, trained, at::randn({1, 2, 64}), all_frozen)
                   .outputs.requires_grad());
  EXPECT_TRUE(render(plan, f.processors, trained, at::randn({1, 2, 64})).outputs.requires_grad());
}

TEST(Render, ObserverSeesEveryStep) {
  Fixture f;
  Parameters p    = create_parameters(f.graph, f.processors, {0, at::kFloat, false});
  RenderPlan plan = make_render_plan(to_tensor(f.graph), ScheduleMethod::kOneByOne);
  std::vector<StepView> views;
  RenderOptions options;
  options.observer = [&](const StepView& v) { views.push_back(v); };
  at::Tensor x     = at::randn({1, 2, 64});
  RenderResult r   = render(plan, f.processors, p, x, options);
  ASSERT_EQ(views.size(), plan.steps.size());
  EXPECT_TRUE(at::equal(views.front().outputs[0], x));
  EXPECT_TRUE(at::equal(views.back().outputs[0], r.outputs));
  for (const auto& v : views) {
    EXPECT_EQ(v.nodes.size(), v.step->nodes.size());
    EXPECT_EQ(v.outputs.size(),
              size_t(std::max<int64_t>(1, f.graph.types().n_outlets(v.step->type))));
    if (v.step->type == f.graph.types().id("split")) {
      EXPECT_EQ(v.nodes, std::vector<NodeId>{1});
      EXPECT_TRUE(at::allclose(v.outputs[0] + v.outputs[1], v.inputs[0])) << "low + high = input";
    }
  }
}

// non_finite_rows sums each row first: NaN and ±∞ make the sum non-finite, and so do finite
// values whose sum overflows; such rows are looked at closely. Checked against isfinite.
TEST(Render, NonFiniteRowsAreFoundWhereverTheSumsOverflow) {
  at::Tensor x         = at::full({3, 2, 70000}, 3e38);  // finite, and every row's sum overflows
  x[2][1][69999]       = NAN;
  x[1][0][3]           = INFINITY;
  x[1][0][4]           = -INFINITY;  // with the one before, a NaN sum
  const at::Tensor bad = ~x.isfinite();
  EXPECT_TRUE(at::equal(non_finite_rows(x, 1), bad.flatten(1).any(1)));
  EXPECT_TRUE(at::equal(non_finite_rows(x, 2), bad.any(2)));
  EXPECT_FALSE(all_finite(x));
  EXPECT_TRUE(all_finite(at::full({5}, 3e38)));
  EXPECT_TRUE(all_finite(at::randn({2, 3, 100}, at::kDouble)));
  EXPECT_TRUE(at::equal(non_finite_rows(at::randn({2, 3}), 1), at::zeros({2}, at::kBool)));
  EXPECT_TRUE(non_finite_rows(at::full({}, NAN), 0).item<bool>());
}

TEST(Render, Errors) {
  Fixture f;
  RenderPlan plan = make_render_plan(to_tensor(f.graph));
  Parameters p    = create_parameters(f.graph, f.processors, {0, at::kFloat, false});
  at::Tensor x    = at::randn({1, 2, 64});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, p, at::randn({2, 2, 64})), "grafx.render.sources",
                     "expected 1 source (one per `in` node), but got 2");
  EXPECT_GRAFX_ERROR(render(plan, f.processors, p, at::randn({2, 64})), "grafx.render.sources",
                     "K×C×L or B×K×C×L, but got [2, 64]");
  EXPECT_GRAFX_ERROR(render(plan, f.processors, p, at::ones({1, 2, 64}, at::kLong)),
                     "grafx.render.sources", "floating-point");
  at::Tensor nan = x.clone();
  nan[0][1][5]   = NAN;
  EXPECT_GRAFX_ERROR(render(plan, f.processors, p, nan), "grafx.render.non_finite",
                     "source 0 has non-finite samples");
  EXPECT_GRAFX_ERROR(
      render(plan, f.processors, p, at::randn({3, 1, 2, 64}).index_put_({0, 0, 0, 0}, NAN)),
      "grafx.render.non_finite", "batch item 0, source 0");
  RenderOptions allowed;  // on purpose: non-finite in, non-finite out
  allowed.check_finite = false;
  EXPECT_FALSE(render(plan, f.processors, p, nan, allowed).outputs.isfinite().all().item<bool>());
  Parameters bad_parameter            = p;
  const std::string type              = bad_parameter.begin()->first;
  at::Tensor& first                   = bad_parameter.begin()->second.own.begin()->second;
  first                               = first.clone();
  first.view({-1})[first.numel() - 1] = INFINITY;
  EXPECT_GRAFX_ERROR(
      render(plan, f.processors, bad_parameter, x), "grafx.render.non_finite",
      "of type \"" + type + "\" holds NaN or infinity (row " + std::to_string(first.size(0) - 1));
  RenderOptions outputs;  // the first node whose output went non-finite is named
  outputs.check_finite_outputs = true;
  outputs.check_finite         = false;
  EXPECT_GRAFX_ERROR(render(plan, f.processors, p, nan, outputs), "grafx.render.non_finite",
                     "put out non-finite samples");

  Parameters missing = p;
  missing.erase("duck");
  EXPECT_GRAFX_ERROR(render(plan, f.processors, missing, x), "grafx.render.parameters",
                     "missing parameters for type \"duck\" (1 nodes)");
  Parameters extra = p;
  extra["p2"]      = {{"a", at::zeros({1, 2})}};
  EXPECT_GRAFX_ERROR(render(plan, f.processors, extra, x), "grafx.render.parameters",
                     "type \"p2\", which has no nodes in the graph");
  Parameters unknown = p;
  unknown["flanger"] = {};
  EXPECT_GRAFX_ERROR(render(plan, f.processors, unknown, x), "grafx.render.parameters",
                     "\"flanger\", which is not a processor type of the graph");
  Parameters no_name = p;
  no_name["p0"].own.erase("b");
  EXPECT_GRAFX_ERROR(render(plan, f.processors, no_name, x), "grafx.render.parameters",
                     "p0: missing parameter \"b\"");
  Parameters extra_name = p;
  extra_name["p0"]["c"] = at::zeros({2, 2});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, extra_name, x), "grafx.render.parameters",
                     "p0: unknown parameter \"c\"; expected: a, b");
  // Wet amounts have a place of their own: not a name among the processor's parameters, and
  // not given for a type without dry/wet nodes.
  Parameters wet_among_own           = p;
  wet_among_own["p0"].own["dry_wet"] = at::zeros({2, 1});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, wet_among_own, x), "grafx.render.parameters",
                     "p0: unknown parameter \"dry_wet\"; expected: a, b");
  Parameters stray_wet = p;
  stray_wet["p0"].wet  = at::zeros({2, 1});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, stray_wet, x), "grafx.render.parameters",
                     "p0: unknown parameter \"dry_wet\"; expected: a, b");
  Parameters misshapen = p;
  misshapen["p0"]["a"] = at::zeros({1, 2});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, misshapen, x), "grafx.render.parameters",
                     "p0.a: expected shape [2, 2], but got [1, 2]");
  EXPECT_GRAFX_ERROR(
      render(plan, f.processors, misshapen, at::randn({3, 1, 2, 64})), "grafx.render.parameters",
      "p0.a: expected shape [2, 2] (or [3, 2, 2], one set per batch item), but got [1, 2]");
  Parameters doubles = p;
  doubles["p0"]["a"] = doubles["p0"]["a"].to(at::kDouble);
  EXPECT_GRAFX_ERROR(render(plan, f.processors, doubles, x), "grafx.render.parameters",
                     "p0.a: expected float32 like the sources, but got float64");
  Parameters mixed = p;
  mixed["p0"]["a"] = mixed["p0"]["a"].unsqueeze(0).expand({3, 2, 2});
  EXPECT_GRAFX_ERROR(render(plan, f.processors, mixed, at::randn({3, 1, 2, 64})),
                     "grafx.render.parameters",
                     "p0.b: parameters of one type must all be shared or all per batch item");
  Processors without = f.processors;
  without.erase("p1");
  EXPECT_GRAFX_ERROR(render(plan, without, p, x), "grafx.render.processors",
                     "no processor for node type \"p1\" (1 nodes)");
  Processors wrong = f.processors;
  wrong["split"]   = make_test_processor("split", TestKind::kLinear);
  EXPECT_GRAFX_ERROR(render(plan, wrong, p, x), "grafx.render.processors", "other ports");
}

// A type's values keep each tensor in its place (own, wet, curves) and reach it by its spec's
// name; named() and from_named() are each other's inverses.
TEST(Parameters, EachTensorHasAPlaceAndAName) {
  TypeParameters v{{"a", at::zeros({2, 2})}};  // by name, as from_named
  EXPECT_EQ(v.own.size(), 1u);
  EXPECT_TRUE(TypeParameters({{"dry_wet", at::ones({2, 1})}}).own.empty());
  EXPECT_FALSE(v.empty());
  EXPECT_TRUE(TypeParameters{}.empty());
  v.wet                  = at::ones({2, 1});
  v.curves["a"]          = at::full({2, 3, 2}, 2.0);
  v.curves["dry_wet"]    = at::full({2, 3, 1}, 3.0);
  const TensorDict named = v.named();
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a@curve", "dry_wet", "dry_wet@curve"}));
  for (const auto& [name, t] : named) EXPECT_TRUE(v.at(name).is_same(t)) << name;
  EXPECT_TRUE(v["dry_wet"].is_same(v.wet));
  EXPECT_TRUE(v["a@curve"].is_same(v.curves.at("a")));
  EXPECT_TRUE(v["dry_wet@curve"].is_same(v.curves.at("dry_wet")));
  EXPECT_EQ(v.find("b"), nullptr);
  EXPECT_EQ(v.find("b@curve"), nullptr);
  EXPECT_THROW(v.at("b"), std::out_of_range);
  v["b@curve"] = at::zeros({2, 3, 1});  // by name, into its place
  EXPECT_EQ(v.curves.size(), 3u);
  EXPECT_EQ(v.own.size(), 1u);
  v.curves.erase("b");

  const TypeParameters back = TypeParameters::from_named(named);
  EXPECT_EQ(back.own.size(), 1u);
  EXPECT_TRUE(back.wet.is_same(v.wet));
  EXPECT_EQ(back.curves.size(), 2u);
  const TypeParameters doubled =
      v.map([](const std::string&, const at::Tensor& t) { return t * 2; });
  EXPECT_TRUE(at::equal(doubled.wet, v.wet * 2));
  EXPECT_TRUE(at::equal(doubled.curves.at("dry_wet"), at::full({2, 3, 1}, 6.0)));
  std::vector<std::string> seen;
  map_parameters({{"p0", v}},
                 [&](const std::string& type, const std::string& name, const at::Tensor& t) {
                   seen.push_back(type + "." + name);
                   return t;
                 });
  EXPECT_EQ(seen,
            (std::vector<std::string>{"p0.a", "p0.a@curve", "p0.dry_wet", "p0.dry_wet@curve"}));
}

TEST(Parameters, CreatedFromSpecsSeededAndDescribed) {
  Fixture f;
  Parameters a = create_parameters(f.graph, f.processors, {5});
  Parameters b = create_parameters(f.graph, f.processors, {5});
  Parameters c = create_parameters(f.graph, f.processors, {6});
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(a.at("p0").at("a").sizes(), at::IntArrayRef({2, 2}));
  EXPECT_TRUE(a.at("p0").at("a").requires_grad());
  EXPECT_TRUE(at::equal(a.at("p0").at("a"), b.at("p0").at("a")));
  EXPECT_FALSE(at::equal(a.at("p0").at("a"), c.at("p0").at("a")));
  EXPECT_NEAR(a.at("p0").at("a").mean().item<double>(), 1.0, 0.6) << "init_mean of spec a is 1";
  Parameters d = create_parameters(f.graph, f.processors, {5, at::kDouble, false});
  EXPECT_EQ(d.at("duck").at("k").scalar_type(), at::kDouble);
  EXPECT_NO_THROW(check_parameters(f.graph, f.processors, a));
  std::string text = describe_parameters(f.graph, f.processors, a);
  EXPECT_NE(text.find("node 6 (p0 \"dead\")\n  a = [2 values: "), std::string::npos) << text;
  EXPECT_NE(text.find("node 3 (duck)\n  k = "), std::string::npos) << text;
}

}  // namespace
}  // namespace grafx
