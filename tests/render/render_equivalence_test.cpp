// The core claim: batched rendering under every schedule equals one-by-one rendering and a naive
// per-node reference (topological order, no batching, no plan), for outputs and for every
// gradient (parameters and sources), within 1e-5 relative in float32, on seeded random graphs
// with linear, nonlinear and multi-port test processors.

#include <grafx/graph/random_graph.h>
#include <grafx/render/as_heard.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <random>

namespace grafx {
namespace {

using testing::relative_error;

struct Rendered {
  at::Tensor outputs;
  at::Tensor source_gradient;
  std::map<std::string, TensorDict> gradients;
  std::map<std::string, TensorDict> aux;
};

/// Renders, backpropagates a fixed random weighting of the outputs plus the aux losses, and
/// collects every gradient.
template <class RenderFunction>
Rendered render_and_backward(RenderFunction&& render_function, const Parameters& initial,
                             const at::Tensor& initial_sources) {
  Parameters parameters;
  for (const auto& [type, tensors] : initial)
    for (const auto& [name, t] : tensors.named())
      parameters[type][name] = t.detach().clone().requires_grad_(true);
  at::Tensor sources  = initial_sources.detach().clone().requires_grad_(true);
  RenderResult result = render_function(parameters, sources);
  at::manual_seed(99);
  at::Tensor weights = at::randn_like(result.outputs);
  at::Tensor loss    = (result.outputs * weights).sum();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) loss = loss + value.sum();
  loss.backward();
  Rendered r{result.outputs.detach(), sources.grad(), {}, {}};
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named()) r.gradients[type][name] = t.grad();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) r.aux[type][name] = value.detach();
  return r;
}

/// Outputs, aux losses and gradients agree to `tolerance` relative to each one's largest value;
/// parameter gradients, sums over all samples whose order differs between renderers (a
/// gradient flowing to several readers is summed per reader in one, per piece in another), to
/// twice that in float32. A dry/wet amount's gradient, Σ g·(f − dry) over every sample, sums
/// terms that cancel where a processor changes little: the naive render's float sums and the
/// batched render's (double per row, dsp::dry_wet) differ by float32's error of that sum (the
/// naive's own error against a float64 render measured up to 4e-4), so in float32 they agree to
/// 1e-4; the float64 seeds hold them to `tolerance`.
void expect_equal(const Rendered& a, const Rendered& b, const std::string& what, double tolerance) {
  const bool single = a.outputs.scalar_type() == at::kFloat;
  const double sums = single ? 2 * tolerance : tolerance, mixes = single ? 1e-4 : tolerance;
  EXPECT_LT(relative_error(a.outputs, b.outputs), tolerance) << what << ": outputs";
  EXPECT_LT(relative_error(a.source_gradient, b.source_gradient), tolerance)
      << what << ": source gradient";
  for (const auto& [type, grads] : b.gradients)
    for (const auto& [name, g] : grads) {
      const at::Tensor& mine = a.gradients.at(type).at(name);
      // A type whose nodes are all dead gets no gradient from either renderer; one whose live
      // nodes are all bypassed gets none, or zeros.
      if (mine.defined() != g.defined()) {
        const at::Tensor& given = mine.defined() ? mine : g;
        EXPECT_EQ(given.abs().max().item<double>(), 0.0) << what << ": " << type << "." << name;
      } else if (g.defined()) {
        EXPECT_LT(relative_error(mine, g), is_wet_amount(name) ? mixes : sums)
            << what << ": " << type << "." << name;
      }
    }
  for (const auto& [type, named] : b.aux)
    for (const auto& [name, value] : named)
      EXPECT_LT(relative_error(a.aux.at(type).at(name), value), tolerance)
          << what << ": aux " << type << "." << name;
}

TEST(RenderEquivalence, BatchedEqualsOneByOneEqualsNaiveOnRandomGraphs) {
  const std::vector<ScheduleMethod> methods = {ScheduleMethod::kOneByOne, ScheduleMethod::kGreedy,
                                               ScheduleMethod::kBeam, ScheduleMethod::kOptimal};
  for (uint64_t seed = 0; seed < 60; ++seed) {
    // Every fifth seed in float64, to 1e-10: equal but for rounding.
    const testing::EquivalenceCase c = testing::equivalence_case(seed, 256);
    const Graph& graph               = c.graph;  // (references, not bindings: lambdas take them)
    const Processors& processors     = c.processors;
    const Parameters& parameters     = c.parameters;
    const at::Tensor& sources        = c.sources;
    const double tolerance           = c.tolerance;

    Rendered naive = render_and_backward(
        [&](const Parameters& p, const at::Tensor& s) {
          return render_naive(graph, processors, p, s);
        },
        parameters, sources);
    for (auto method : methods) {
      RenderPlan plan  = make_render_plan(to_tensor(graph), method);
      Rendered batched = render_and_backward(
          [&](const Parameters& p, const at::Tensor& s) { return render(plan, processors, p, s); },
          parameters, sources);
      expect_equal(batched, naive, "seed " + std::to_string(seed) + ", " + to_string(method),
                   tolerance);
    }
  }
}

TEST(RenderEquivalence, DryWetAndBypassByHand) {
  // in -> split (dry/wet, w = σ(z)) -> low to out 0, high to out 1; in -> duck's sidechain.
  NodeTypes types;
  types.add({"split", {"main"}, {"low", "high"}});
  Graph g(types);
  NodeId in = g.add("in"), split = g.add("split"), out_low = g.add("out"), out_high = g.add("out");
  g.connect(in, split);
  g.connect(split, out_low, "low");
  g.connect(split, out_high, "high");
  g.set_dry_wet(split);
  Processors processors = {
      {"split", testing::make_test_processor("split", testing::TestKind::kSplit)}};
  at::Tensor x          = at::randn({1, 2, 64}, at::kDouble);
  at::Tensor z          = at::tensor({0.7}, at::kDouble).view({1, 1}).requires_grad_(true);
  at::Tensor p          = at::tensor({-0.3}, at::kDouble).view({1, 1});
  Parameters parameters = {{"split", {{"p", p}, {"dry_wet", z}}}};
  RenderPlan plan       = make_render_plan(to_tensor(g));
  at::Tensor y          = render(plan, processors, parameters, x).outputs;  // [2, 2, 64]
  // The processor's own outlets, by hand: low = s·x + (1 − s)·x[n−1], high = x − low.
  at::Tensor s  = p.sigmoid().item<double>() * at::ones({1}, at::kDouble);
  at::Tensor x0 = x[0], delayed = at::constant_pad_nd(x0.narrow(-1, 0, 63), {1, 0});
  at::Tensor low = s * x0 + (1 - s) * delayed, high = x0 - low;
  const double w = 1 / (1 + std::exp(-0.7));
  // The dry signal of outlet low (the first) is the input; high has none.
  EXPECT_TRUE(at::allclose(y[0], w * low + (1 - w) * x0, 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(y[1], w * high, 1e-12, 1e-12));
  // d(Σ y)/dz = σ'(z)·Σ(low − x + high) = σ'(z)·Σ(x − x) = 0 here; weight the outlets instead.
  (y[0].sum() + 2 * y[1].sum()).backward();
  double expected = w * (1 - w) * ((low - x0).sum() + 2 * high.sum()).item<double>();
  EXPECT_NEAR(z.grad().item<double>(), expected, 1e-10);
  // The node as heard alone (as the report pictures it) is what the graph renders.
  const TensorDict row = {{"p", p}};
  auto heard           = as_heard(*processors.at("split"), g.node(split), z.detach());
  auto heard_outputs   = heard->forward({x}, row).outputs;
  EXPECT_TRUE(at::allclose(heard_outputs[0][0], y[0].detach(), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(heard_outputs[1][0], y[1].detach(), 1e-12, 1e-12));
  // Bypassed: low passes the input on, high is silent; the parameters stay.
  g.set_bypassed(split);
  y = render(make_render_plan(to_tensor(g)), processors, parameters, x).outputs;
  EXPECT_TRUE(at::equal(y[0], x0));
  EXPECT_TRUE(at::equal(y[1], at::zeros_like(x0)));
  heard_outputs =
      as_heard(*processors.at("split"), g.node(split), z.detach())->forward({x}, row).outputs;
  EXPECT_TRUE(at::equal(heard_outputs[0][0], x0));
  EXPECT_TRUE(at::equal(heard_outputs[1][0], at::zeros_like(x0)));
  // A type with a dry/wet node needs its "dry_wet" rows; one without must not have them.
  EXPECT_GRAFX_ERROR(render(plan, processors, {{"split", {{"p", p}}}}, x),
                     "grafx.render.parameters", "split: missing parameter \"dry_wet\"");
  g.set_dry_wet(split, false);
  EXPECT_GRAFX_ERROR(render(make_render_plan(to_tensor(g)), processors, parameters, x),
                     "grafx.render.parameters",
                     "split: unknown parameter \"dry_wet\"; expected: p");
}

TEST(RenderEquivalence, PerItemParametersEqualRenderingEachItem) {
  Graph graph           = random_graph(5, RandomGraphOptions{});
  Processors processors = testing::random_graph_processors(graph.types());
  RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  at::Tensor sources    = at::randn({4, 3, 2, 128});
  std::vector<Parameters> items;
  Parameters stacked;
  for (uint64_t b = 0; b < 4; ++b)
    items.push_back(create_parameters(graph, processors, {b, at::kFloat, false}));
  for (const auto& [type, tensors] : items[0])
    for (const auto& [name, t] : tensors.named()) {
      std::vector<at::Tensor> per_item;
      for (const auto& p : items) per_item.push_back(p.at(type).at(name));
      stacked[type][name] = at::stack(per_item);
    }
  at::Tensor together = render(plan, processors, stacked, sources).outputs;
  for (int64_t b = 0; b < 4; ++b) {
    at::Tensor alone = render(plan, processors, items[size_t(b)], sources[b]).outputs;
    EXPECT_LT(relative_error(together[b], alone), 1e-6) << b;
  }
  // Shared parameters broadcast over the batch.
  at::Tensor shared = render(plan, processors, items[1], sources).outputs;
  EXPECT_LT(relative_error(shared[2], render(plan, processors, items[1], sources[2]).outputs),
            1e-6);
}

TEST(RenderEquivalence, GraphBatchingEqualsRenderingEachGraph) {
  std::vector<Graph> graphs;
  std::vector<Parameters> parameters;
  std::vector<at::Tensor> sources;
  RandomGraphOptions options;
  for (uint64_t seed = 20; seed < 25; ++seed) {
    options.n_inputs  = 1 + int64_t(seed % 3);
    options.n_outputs = 1 + int64_t(seed % 2);
    graphs.push_back(random_graph(seed, options));
  }
  Processors processors = testing::random_graph_processors(graphs[0].types());
  for (size_t g = 0; g < graphs.size(); ++g) {
    parameters.push_back(create_parameters(graphs[g], processors, {g, at::kFloat, false}));
    sources.push_back(at::randn({graphs[g].count_per_type()[NodeTypes::kIn], 2, 200}));
  }
  auto outputs = render_graphs(graphs, processors, parameters, sources, ScheduleMethod::kOptimal);
  ASSERT_EQ(outputs.size(), graphs.size());
  for (size_t g = 0; g < graphs.size(); ++g) {
    at::Tensor alone = render_naive(graphs[g], processors, parameters[g], sources[g]).outputs;
    EXPECT_EQ(outputs[g].sizes(), alone.sizes());
    EXPECT_LT(relative_error(outputs[g], alone), 1e-5) << g;
  }
  EXPECT_GRAFX_ERROR(render_graphs(graphs, processors, {}, sources), "grafx.render.batch",
                     "for each of the 5 graphs");
}

}  // namespace
}  // namespace grafx
