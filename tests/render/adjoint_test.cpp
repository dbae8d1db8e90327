// The explicit backward pass (AdjointRender) against LibTorch's autograd through `render`: the
// same gradients for every parameter and the sources on seeded random multi-port graphs (dry/wet,
// bypass, batches, frozen types, both memory policies; 1e-5 in float32, 1e-10 in float64);
// signal hooks equal in both and against a hand-derived case; the observer, dead-work removal
// and the printed plan.

#include <grafx/graph/random_graph.h>
#include <grafx/render/adjoint.h>
#include <grafx/render/parameters.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <random>

namespace grafx {
namespace {

using testing::relative_error;

struct Reference {
  at::Tensor outputs, sources;
  Parameters gradients;
  std::map<std::string, TensorDict> aux;
};

/// Autograd: loss = Σ w·outputs + Σ aux, backward through `render`.
Reference autograd_gradients(const RenderPlan& plan, const Processors& processors,
                             const Parameters& initial, const at::Tensor& initial_sources,
                             const at::Tensor& weights, const RenderOptions& options) {
  Parameters parameters;
  for (const auto& [type, tensors] : initial)
    for (const auto& [name, t] : tensors.named())
      parameters[type][name] = t.detach().clone().requires_grad_(true);
  at::Tensor sources  = initial_sources.detach().clone().requires_grad_(true);
  RenderResult result = render(plan, processors, parameters, sources, options);
  at::Tensor loss     = (result.outputs * weights).sum();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) loss = loss + value.sum();
  loss.backward();
  Reference r{result.outputs.detach(), sources.grad(), {}, {}};
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named())
      r.gradients[type][name] = t.grad().defined() ? t.grad() : at::zeros_like(t);
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) r.aux[type][name] = value.detach();
  return r;
}

/// The explicit backward of the same loss.
Gradients adjoint_gradients(const RenderPlan& plan, const Processors& processors,
                            const Parameters& parameters, const at::Tensor& sources,
                            const at::Tensor& weights, const AdjointOptions& options,
                            RenderResult* result = nullptr) {
  AdjointRender run(plan, processors, parameters, sources, options);
  std::map<std::string, TensorDict> aux;
  for (const auto& [type, named] : run.result().aux_losses)
    for (const auto& [name, value] : named) aux[type][name] = at::ones_like(value);
  if (result) *result = run.result();
  return run.backward(weights, aux);
}

void expect_equal(const Gradients& mine, const Reference& reference, const std::string& what,
                  double tolerance, const std::set<std::string>& frozen = {}) {
  EXPECT_LT(relative_error(mine.sources, reference.sources), tolerance) << what << ": sources";
  for (const auto& [type, grads] : reference.gradients) {
    if (frozen.count(type)) {
      EXPECT_FALSE(mine.parameters.count(type)) << what << ": frozen " << type;
      continue;
    }
    for (const auto& [name, g] : grads.named()) {
      const at::Tensor& m = mine.parameters.at(type).at(name);
      ASSERT_EQ(m.sizes(), g.sizes()) << what << ": " << type << "." << name;
      if (g.abs().max().item<double>() == 0)
        EXPECT_EQ(m.abs().max().item<double>(), 0.0) << what << ": " << type << "." << name;
      else
        EXPECT_LT(relative_error(m, g), tolerance) << what << ": " << type << "." << name;
    }
  }
}

TEST(AdjointRender, EqualsAutogradOnRandomGraphs) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const testing::EquivalenceCase c = testing::equivalence_case(seed, 200);
    const Graph& graph               = c.graph;  // (references, not bindings: lambdas take them)
    const Processors& processors     = c.processors;
    const Parameters& parameters     = c.parameters;
    const at::Tensor& sources        = c.sources;
    const double tolerance           = c.tolerance;
    // Every third seed freezes a type; every other seed recomputes the nonlinear ones.
    AdjointOptions adjoint;
    if (seed % 3 == 1) adjoint.render.frozen_types = {"p0", "split"};
    for (const auto& [type, tensors] : parameters)
      if (seed % 2 == 0 && type != "p0") adjoint.memory[type] = MemoryPolicy::kRecompute;
    for (auto method : {ScheduleMethod::kOneByOne, ScheduleMethod::kOptimal}) {
      RenderPlan plan    = make_render_plan(to_tensor(graph), method);
      at::Tensor weights = at::randn_like(render(plan, processors, parameters, sources).outputs);
      Reference reference =
          autograd_gradients(plan, processors, parameters, sources, weights, adjoint.render);
      RenderResult result;
      Gradients mine =
          adjoint_gradients(plan, processors, parameters, sources, weights, adjoint, &result);
      const std::string what = "seed " + std::to_string(seed) + ", " + to_string(method);
      EXPECT_TRUE(at::equal(result.outputs, reference.outputs)) << what;
      for (const auto& [type, named] : reference.aux)
        for (const auto& [name, value] : named)
          EXPECT_TRUE(at::equal(result.aux_losses.at(type).at(name), value)) << what;
      expect_equal(mine, reference, what, tolerance, adjoint.render.frozen_types);
    }
  }
}

TEST(AdjointRender, EqualsAutogradOnTheConsoleOfRegisteredProcessors) {
  ConsoleOptions console;
  console.n_tracks      = 4;
  console.track_groups  = {0, 0, 1, 1};
  console.dry_wet       = true;
  Graph graph           = build_console(console).graph;
  Processors processors = make_processors(graph.types(), {8000});
  for (auto dtype : {at::kFloat, at::kDouble}) {
    Parameters parameters = create_parameters(graph, processors, {3, dtype});
    at::manual_seed(4);
    at::Tensor sources = at::randn({4, 1, 4000}, dtype) * 0.3;
    RenderPlan plan    = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
    at::Tensor weights = at::randn({1, 2, 4000}, dtype);
    for (auto policy : {MemoryPolicy::kSave, MemoryPolicy::kRecompute}) {
      AdjointOptions options;
      for (const auto& [type, tensors] : parameters) options.memory[type] = policy;
      expect_equal(adjoint_gradients(plan, processors, parameters, sources, weights, options),
                   autograd_gradients(plan, processors, parameters, sources, weights, {}),
                   "console, " + to_string(policy), dtype == at::kFloat ? 1e-5 : 1e-10);
    }
  }
}

TEST(AdjointRender, PerItemParametersEqualAutograd) {
  Graph graph           = random_graph(5, RandomGraphOptions{});
  Processors processors = testing::random_graph_processors(graph.types());
  RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  at::Tensor sources    = at::randn({3, plan.n_sources, 2, 128}, at::kDouble);
  Parameters parameters;  // one set per batch item: B×N×...
  for (const auto& [type, tensors] : create_parameters(graph, processors, {1, at::kDouble}))
    for (const auto& [name, t] : tensors.named()) {
      at::Tensor items       = t.detach().unsqueeze(0).repeat_interleave(3, 0);
      parameters[type][name] = items + 0.1 * at::randn_like(items);
    }
  at::Tensor weights = at::randn_like(render(plan, processors, parameters, sources).outputs);
  expect_equal(adjoint_gradients(plan, processors, parameters, sources, weights, {}),
               autograd_gradients(plan, processors, parameters, sources, weights, {}), "per item",
               1e-10);
}

TEST(AdjointRender, SignalHooksEqualAutogradsAndStopWhatTheyStop) {
  // in -> p0 -> out and in -> p2 -> out, both linear: stopping the edge p0 -> out leaves p0
  // without gradient and p2's unchanged; scaling the node p2 by 3 triples p2's gradient and
  // the part of the source gradient through p2.
  Graph graph(random_graph(0, {}).types());
  NodeId in = graph.add("in"), a = graph.add("p0"), b = graph.add("p2"), out = graph.add("out");
  graph.connect(in, a);
  graph.connect(in, b);
  graph.connect(a, out);
  graph.connect(b, out);
  Processors processors = testing::random_graph_processors(graph.types());
  Parameters parameters = create_parameters(graph, processors, {1, at::kDouble});
  at::Tensor sources    = at::randn({1, 2, 64}, at::kDouble);
  RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  at::Tensor weights    = at::randn({1, 2, 64}, at::kDouble);

  Reference before = autograd_gradients(plan, processors, parameters, sources, weights, {});
  AdjointOptions hooked;
  hooked.render.edge_gradient_hooks[Edge{a, out, 0, 0}] = SignalHook::stop();
  hooked.render.node_gradient_hooks[b]                  = SignalHook::scale(3);
  Reference after =
      autograd_gradients(plan, processors, parameters, sources, weights, hooked.render);

  // The linear processors' aux loss Σ a² adds 2a to the gradients of a, through no signal.
  Reference aux        = autograd_gradients(plan, processors, parameters, sources, weights * 0, {});
  auto through_signals = [&](const Reference& r, const std::string& type) {
    return r.gradients.at(type).at("a") - aux.gradients.at(type).at("a");
  };
  EXPECT_EQ(through_signals(after, "p0").abs().max().item<double>(), 0.0);
  EXPECT_TRUE(
      at::allclose(through_signals(after, "p2"), 3 * through_signals(before, "p2"), 1e-12, 1e-12));
  expect_equal(adjoint_gradients(plan, processors, parameters, sources, weights, hooked), after,
               "hooks", 1e-12);
  // A custom hook sees [B, C, L] and may clip.
  std::vector<int64_t> seen;
  hooked.render.node_gradient_hooks[b] = SignalHook::custom([&](const at::Tensor& g) {
    seen = g.sizes().vec();
    return SignalHook::clip_norm(0.01).apply(g);
  });
  Gradients clipped = adjoint_gradients(plan, processors, parameters, sources, weights, hooked);
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 64}));
  expect_equal(clipped,
               autograd_gradients(plan, processors, parameters, sources, weights, hooked.render),
               "clip", 1e-12);
  // Hooks on what is not rendered.
  hooked.render.node_gradient_hooks[999] = SignalHook::stop();
  EXPECT_GRAFX_ERROR(AdjointRender(plan, processors, parameters, sources, hooked),
                     "grafx.render.hooks", "node 999");
  EXPECT_GRAFX_ERROR(render(plan, processors, parameters, sources, hooked.render),
                     "grafx.render.hooks", "node 999");
  hooked.render.node_gradient_hooks.erase(999);
  hooked.render.edge_gradient_hooks[Edge{in, out, 0, 0}] = SignalHook::stop();
  EXPECT_GRAFX_ERROR(render(plan, processors, parameters, sources, hooked.render),
                     "grafx.render.hooks", "edge");
}

TEST(AdjointRender, TheObserverSeesTheStepsInReverseAndDeadWorkIsSkipped) {
  Graph graph           = random_graph(7, {});
  Processors processors = testing::random_graph_processors(graph.types());
  Parameters parameters = create_parameters(graph, processors, {2, at::kFloat});
  RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  at::Tensor sources    = at::randn({plan.n_sources, 2, 100});

  AdjointOptions options;
  std::vector<int64_t> forward_steps;
  options.backward_observer = [&](const BackwardStepView& view) {
    forward_steps.push_back(view.step->forward_step);
    for (const auto& c : view.output_cotangents)
      if (c.defined()) {
        EXPECT_EQ(c.size(1), int64_t(view.nodes.size()));
      }
  };
  AdjointRender run(plan, processors, parameters, sources, options);
  ASSERT_EQ(run.adjoint_plan().steps.size(), plan.steps.size());  // nothing frozen: all run
  run.backward(at::ones_like(run.result().outputs));
  ASSERT_EQ(forward_steps.size(), plan.steps.size());
  for (size_t i = 0; i < forward_steps.size(); ++i)
    EXPECT_EQ(forward_steps[i], int64_t(plan.steps.size() - 1 - i));
  EXPECT_GRAFX_ERROR(run.backward(at::ones_like(run.result().outputs)), "grafx.render.adjoint",
                     "already ran");

  // Everything frozen and no source gradients: only routing that leads nowhere, all skipped.
  AdjointPlanOptions frozen;
  for (const auto& [type, tensors] : parameters) frozen.frozen_types.insert(type);
  frozen.source_gradients = false;
  AdjointPlan nothing     = make_adjoint_plan(plan, frozen);
  EXPECT_TRUE(nothing.steps.empty());
  EXPECT_EQ(nothing.skipped.size(), plan.steps.size());
  // Sources only: no step computes parameter gradients.
  frozen.source_gradients = true;
  for (const auto& step : make_adjoint_plan(plan, frozen).steps)
    EXPECT_FALSE(step.parameter_gradients);
}

TEST(AdjointRender, ThePlanPrintsItsReverseProgram) {
  // in -> p0 -> p1 -> out, with two tracks summed into out: a sum whose transpose broadcasts.
  Graph graph(random_graph(0, {}).types());
  NodeId out = graph.add("out");
  for (int t = 0; t < 2; ++t) {
    NodeId in = graph.add("in"), a = graph.add("p0"), b = graph.add("p1");
    graph.connect(in, a);
    graph.connect(a, b);
    graph.connect(b, out);
  }
  RenderPlan plan = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  AdjointPlanOptions options;
  options.frozen_types   = {"p0"};
  options.memory         = {{"p1", MemoryPolicy::kRecompute}};
  AdjointPlan adjoint    = make_adjoint_plan(plan, options);
  const std::string text = adjoint.to_string();
  EXPECT_TRUE(testing::contains(text,
                                "Adjoint #0 (of Render #3)\n  - Node type: out\n"
                                "  - Cotangent read: output cotangents\n"
                                "  - Aggregation transpose: broadcast (of sum)\n"))
      << text;
  EXPECT_TRUE(testing::contains(text,
                                "  - Vector-Jacobian product: p1 on 2 rows, forward pass "
                                "recomputed from its saved inputs\n"))
      << text;
  EXPECT_TRUE(testing::contains(text, "  - Node type: p0\n")) << text;  // passes cotangents on
  EXPECT_TRUE(testing::contains(text, "  - Source gradient write: sources slice with (0, 2)"))
      << text;
  nlohmann::json j = nlohmann::json::parse(adjoint.to_json());
  EXPECT_EQ(j["format"], "grafx.adjoint_plan");
  EXPECT_EQ(j["steps"].size(), 4u);
  EXPECT_EQ(j["steps"][1]["memory"], "recompute");
  EXPECT_EQ(j["steps"][2]["parameter_rows"], nullptr);  // p0 is frozen
  // Without source gradients, p0 (frozen) leads to nothing: skipped.
  options.source_gradients = false;
  AdjointPlan shorter      = make_adjoint_plan(plan, options);
  EXPECT_EQ(shorter.steps.size(), 2u);
  EXPECT_TRUE(testing::contains(shorter.to_string(),
                                "Skipped (no gradient needed through them): "
                                "Render #1 Render #0"))
      << shorter.to_string();
  EXPECT_GRAFX_ERROR(make_adjoint_plan(plan, {{}, {}, true, {{"bogus", MemoryPolicy::kSave}}}),
                     "grafx.schedule.invalid_options", "bogus");
}

}  // namespace
}  // namespace grafx
