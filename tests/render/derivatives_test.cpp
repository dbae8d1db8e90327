// Forward mode and Hessian-vector products through whole renders, in float64: the tangent of
// a render equals central differences and the double-backward J·v (the transpose of the
// gradient), on random multi-port graphs (dry/wet, bypass, batches) and on the paper's console
// of registered processors; the Hessian-vector product equals reverse-over-reverse and
// differences of gradients on the console with the paper's mix loss, along every parameter and
// along some only.

#include <grafx/graph/random_graph.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/render/derivatives.h>
#include <grafx/render/parameters.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <random>

namespace grafx {
namespace {

using testing::relative_error;

/// Whether a parameter's derivative is an estimate by design (the delay's straight-through
/// pole): its tangent is the estimator's, and its Hessian rows are no second derivative.
bool is_surrogate(const std::string& type, const std::string& name) {
  const ProcessorDescriptor* d = find_processor(type);
  return d && d->gradient_check.surrogate_parameters.count(name);
}

/// A random direction, zero for surrogate parameters.
Parameters random_like(const Parameters& parameters, uint64_t seed) {
  at::manual_seed(int64_t(seed));
  Parameters direction;
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named())
      direction[type][name] = is_surrogate(type, name) ? at::zeros_like(t) : at::randn_like(t);
  return direction;
}

Parameters moved(const Parameters& parameters, const Parameters& direction, double step) {
  Parameters result = parameters;
  for (const auto& [type, tensors] : direction)
    for (const auto& [name, d] : tensors.named())
      result[type][name] = parameters.at(type).at(name) + step * d;
  return result;
}

/// J·v by double backward: d/du of (Jᵀu)·v, the reference forward mode must equal.
at::Tensor double_backward_jvp(const RenderPlan& plan, const Processors& processors,
                               const Parameters& parameters, const at::Tensor& sources,
                               const Parameters& direction, const at::Tensor& source_direction) {
  Parameters leaves;
  std::vector<at::Tensor> flat, directions;
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named()) {
      leaves[type][name] = t.detach().requires_grad_(true);
      flat.push_back(leaves[type][name]);
      directions.push_back(direction.at(type).at(name));
    }
  at::Tensor s = sources.detach().requires_grad_(true);
  flat.push_back(s);
  directions.push_back(source_direction);
  at::Tensor y   = render(plan, processors, leaves, s).outputs;
  at::Tensor u   = at::randn_like(y).requires_grad_(true);
  auto vjp       = torch::autograd::grad({y}, flat, {u}, true, true, true);
  at::Tensor dot = at::zeros({}, y.options());
  for (size_t i = 0; i < vjp.size(); ++i)
    if (vjp[i].defined()) dot = dot + (vjp[i] * directions[i]).sum();
  return torch::autograd::grad({dot}, {u})[0];
}

TEST(Derivatives, ForwardModeEqualsDifferencesAndDoubleBackwardOnRandomGraphs) {
  for (uint64_t seed = 0; seed < 16; ++seed) {
    testing::EquivalenceCase c   = testing::equivalence_case(seed, 128);
    const Processors& processors = c.processors;
    Parameters parameters        = c.parameters;
    for (auto& [type, named] : parameters)  // float64 throughout, for the differences
      for (const auto& [name, t] : named.named()) named[name] = t.to(at::kDouble);
    const at::Tensor sources    = c.sources.to(at::kDouble);
    Parameters direction        = random_like(parameters, seed + 100);
    at::Tensor source_direction = at::randn_like(sources);
    RenderPlan plan             = make_render_plan(to_tensor(c.graph), ScheduleMethod::kOptimal);

    TangentResult t = jvp(plan, processors, parameters, sources, direction, source_direction);
    EXPECT_TRUE(at::equal(t.outputs, render(plan, processors, parameters, sources).outputs));
    const double step  = 1e-6;
    at::Tensor numeric = (render(plan, processors, moved(parameters, direction, step),
                                 sources + step * source_direction)
                              .outputs -
                          render(plan, processors, moved(parameters, direction, -step),
                                 sources - step * source_direction)
                              .outputs) /
                         (2 * step);
    EXPECT_LT(relative_error(t.tangent, numeric), 1e-7) << "seed " << seed;
    at::Tensor reference =
        double_backward_jvp(plan, processors, parameters, sources, direction, source_direction);
    EXPECT_LT(relative_error(t.tangent, reference), 1e-10) << "seed " << seed;
    // Aux losses' tangents too.
    for (const auto& [type, named] : t.aux_tangents)
      for (const auto& [name, tangent] : named) {
        auto aux_of = [&](double s) {
          return render(plan, processors, moved(parameters, direction, s),
                        sources + s * source_direction)
              .aux_losses.at(type)
              .at(name);
        };
        EXPECT_LT(relative_error(tangent, (aux_of(step) - aux_of(-step)) / (2 * step)), 1e-6)
            << "seed " << seed << ", aux " << type << "." << name;
      }
  }
}

/// The paper's console (e c n s g d r) of registered processors, 4 tracks in 2 groups, with wet
/// amounts, at 8 kHz.
struct SmallConsole {
  Graph graph;
  Processors processors;
  Parameters parameters;
  at::Tensor sources, target;
  RenderPlan plan;

  SmallConsole() {
    ConsoleOptions options;
    options.n_tracks     = 4;
    options.track_groups = {0, 0, 1, 1};
    options.dry_wet      = true;
    graph                = build_console(options).graph;
    processors           = make_processors(graph.types(), {8000});
    parameters           = create_parameters(graph, processors, {3, at::kDouble});
    for (auto& [type, named] : parameters)  // away from the initial values
      for (const auto& [name, t] : named.named()) named[name] = t + 0.2 * at::randn_like(t);
    at::manual_seed(4);
    sources = at::randn({4, 1, 2048}, at::kDouble) * 0.3;
    target  = at::randn({2, 2048}, at::kDouble) * 0.1;
    plan    = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  }
};

TEST(Derivatives, ForwardModeThroughTheConsoleOfRegisteredProcessors) {
  SmallConsole c;
  Parameters direction = random_like(c.parameters, 5);
  TangentResult t      = jvp(c.plan, c.processors, c.parameters, c.sources, direction);
  const double step    = 1e-6;
  at::Tensor numeric =
      (render(c.plan, c.processors, moved(c.parameters, direction, step), c.sources).outputs -
       render(c.plan, c.processors, moved(c.parameters, direction, -step), c.sources).outputs) /
      (2 * step);
  EXPECT_LT(relative_error(t.tangent, numeric), 1e-6);
  at::Tensor reference = double_backward_jvp(c.plan, c.processors, c.parameters, c.sources,
                                             direction, at::zeros_like(c.sources));
  EXPECT_LT(relative_error(t.tangent, reference), 1e-9);
}

TEST(Derivatives, HessianVectorProductsOfTheMixLossOnTheConsole) {
  SmallConsole c;
  MixLossOptions loss_options;
  loss_options.fft_sizes   = {256, 512};
  loss_options.sample_rate = 8000;
  loss_options.n_mels      = 32;
  MixLoss mix_loss(loss_options);
  auto loss = [&](const Parameters& p) {
    return mix_loss(render(c.plan, c.processors, p, c.sources).outputs, c.target.unsqueeze(0));
  };
  // Along every parameter, and along the last gains alone: then the processors upstream run
  // without tangents and their backward passes receive gradients that carry them (each
  // hand-written backward must pass them on, or their H·v is zero where it is not).
  const Parameters everywhere = random_like(c.parameters, 6);
  const Parameters gains_only = {{"gain_pan", everywhere.at("gain_pan")}};
  for (const Parameters* direction : {&everywhere, &gains_only}) {
    const std::string along   = direction == &everywhere ? "every parameter" : "gain_pan only";
    CurvatureResult curvature = hvp(loss, c.parameters, *direction);

    // Reverse over reverse: ∇(∇loss·v).
    Parameters leaves;
    std::vector<at::Tensor> flat, v;
    for (const auto& [type, tensors] : c.parameters)
      for (const auto& [name, t] : tensors.named()) {
        leaves[type][name] = t.detach().requires_grad_(true);
        flat.push_back(leaves[type][name]);
        v.push_back(direction->count(type) ? direction->at(type).at(name) : at::zeros_like(t));
      }
    at::Tensor value = loss(leaves);
    EXPECT_NEAR(value.item<double>(), curvature.loss.item<double>(), 1e-12);
    auto g         = torch::autograd::grad({value}, flat, {}, true, true, true);
    at::Tensor dot = at::zeros({}, at::kDouble);
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i].defined()) dot = dot + (g[i] * v[i]).sum();
    auto second = torch::autograd::grad({dot}, flat, {}, false, false, true);

    // Differences of gradients, in steps small enough not to cross the kinks of the gradient
    // (the loss's magnitude floor, the knees): along the gains, steps of 1e-5 did.
    const double step = 1e-7;
    auto gradient_at  = [&](double s) { return hvp(loss, moved(c.parameters, *direction, s), {}); };
    CurvatureResult plus = gradient_at(step), minus = gradient_at(-step);
    size_t i = 0;
    for (const auto& [type, tensors] : c.parameters)
      for (const auto& [name, t] : tensors.named()) {
        if (is_surrogate(type, name)) {
          ++i;
          continue;
        }
        const at::Tensor& mine = curvature.hessian_vector.at(type).at(name);
        at::Tensor expected    = second[i].defined() ? second[i] : at::zeros_like(mine);
        EXPECT_LT((mine - expected).abs().max().item<double>(),
                  1e-8 * (1 + expected.abs().max().item<double>()))
            << type << "." << name << " along " << along;
        at::Tensor numeric =
            (plus.gradient.at(type).at(name) - minus.gradient.at(type).at(name)) / (2 * step);
        EXPECT_LT((mine - numeric).abs().max().item<double>(),
                  1e-4 * (1 + numeric.abs().max().item<double>()))
            << type << "." << name << " along " << along;
        EXPECT_TRUE(at::allclose(curvature.gradient.at(type).at(name),
                                 g[i].defined() ? g[i].detach() : at::zeros_like(t), 1e-10, 1e-12));
        ++i;
      }
  }
}

TEST(Derivatives, DirectionsThatDoNotFitAreRefused) {
  SmallConsole c;
  EXPECT_GRAFX_ERROR(jvp(c.plan, c.processors, c.parameters, c.sources, {{"bogus", {}}}),
                     "grafx.render.tangents", "type \"bogus\"");
  EXPECT_GRAFX_ERROR(
      jvp(c.plan, c.processors, c.parameters, c.sources, {{"eq", {{"nope", at::zeros({1})}}}}),
      "grafx.render.tangents", "eq.nope");
  const at::Tensor& gains = c.parameters.at("gain_pan").own.begin()->second;
  EXPECT_GRAFX_ERROR(jvp(c.plan, c.processors, c.parameters, c.sources,
                         {{"gain_pan",
                           {{c.parameters.at("gain_pan").own.begin()->first,
                             at::zeros({gains.size(0) + 1}, at::kDouble)}}}}),
                     "grafx.render.tangents", "shaped and typed like it");
  EXPECT_GRAFX_ERROR(
      hvp([&](const Parameters&) { return at::zeros({2}, at::kDouble); }, c.parameters, {}),
      "grafx.render.tangents", "scalar");
}

}  // namespace
}  // namespace grafx
