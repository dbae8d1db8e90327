// The registered processors inside rendered mixing consoles: batched rendering (each type's
// nodes in one call) equals the naive per-node reference, outputs, auxiliary losses and every
// gradient, for the paper's chain and a chain of the variants.

#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

struct Rendered {
  at::Tensor outputs;
  std::map<std::string, TensorDict> aux, gradients;
};

template <class RenderFunction>
Rendered render_and_backward(RenderFunction&& render_function, const Parameters& initial,
                             const at::Tensor& sources) {
  Parameters parameters;
  for (const auto& [type, tensors] : initial)
    for (const auto& [name, t] : tensors)
      parameters[type][name] = t.detach().clone().requires_grad_(true);
  RenderResult result = render_function(parameters);
  at::manual_seed(7);
  at::Tensor loss = (result.outputs * at::randn_like(result.outputs)).sum();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) loss = loss + value.sum();
  loss.backward();
  Rendered r{result.outputs.detach(), result.aux_losses, {}};
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors) r.gradients[type][name] = t.grad();
  return r;
}

void expect_batched_equals_naive(const Graph& graph) {
  Processors processors = make_processors(graph.types(), {4000});
  Parameters parameters = create_parameters(graph, processors, {3, at::kDouble, false});
  at::manual_seed(4);
  for (auto& [type, tensors] : parameters)  // wider than the initial spread: processors act
    for (auto& [name, t] : tensors) t = t + 0.3 * at::randn_like(t);
  GraphTensor tensor = to_tensor(graph);
  int64_t n_sources  = tensor.type_counts[tensor.types.id("in")].item<int64_t>();
  at::Tensor sources = at::randn({n_sources, 2, 2000}, at::kDouble) * 0.3;
  RenderPlan plan    = make_render_plan(tensor);
  Rendered batched =
      render_and_backward([&](const Parameters& p) { return render(plan, processors, p, sources); },
                          parameters, sources);
  Rendered naive = render_and_backward(
      [&](const Parameters& p) { return render_naive(graph, processors, p, sources); }, parameters,
      sources);
  EXPECT_GT(batched.outputs.abs().max().item<double>(), 0.01);
  EXPECT_LT(relative_error(batched.outputs, naive.outputs), 1e-9);
  for (const auto& [type, named] : naive.aux)
    for (const auto& [name, value] : named)
      EXPECT_LT(relative_error(batched.aux.at(type).at(name), value), 1e-9) << type << "." << name;
  for (const auto& [type, grads] : naive.gradients)
    for (const auto& [name, g] : grads) {
      ASSERT_TRUE(g.defined()) << type << "." << name;
      EXPECT_TRUE(g.isfinite().all().item<bool>()) << type << "." << name;
      EXPECT_LT(relative_error(batched.gradients.at(type).at(name), g), 1e-9)
          << type << "." << name;
    }
}

Graph console_of(const std::vector<std::string>& chain) {
  NodeTypes types = console_node_types();
  for (const auto& name : chain) types.add(name);
  ConsoleOptions options;
  options.n_tracks     = 3;
  options.track_groups = {0, 1, 1};
  options.chain        = chain;
  return build_console(options, types).graph;
}

TEST(ConsoleRender, ThePapersChainBatchedEqualsNaive) {
  expect_batched_equals_naive(console_of(console_chain()));
}

TEST(ConsoleRender, TheVariantsBatchedEqualNaive) {
  expect_batched_equals_naive(
      console_of({"eq_midside", "compressor_ballistics", "noise_gate_ballistics", "eq_stereo",
                  "stereo_imager", "gain_pan", "delay", "reverb"}));
}

TEST(ConsoleRender, FiltersAndEqualizersBatchedEqualNaive) {
  expect_batched_equals_naive(
      console_of({"parametric_eq_midside", "graphic_eq", "lowpass", "state_variable_filter",
                  "fir_eq", "pole_zero", "gain_pan"}));
}

TEST(ConsoleRender, TheMultiPortExamplesBatchedEqualNaive) {
  // examples/multiband_compressor.json: a 3-band crossover feeding one compressor per band;
  // examples/ducking.json: a bass ducked by the kick through a sidechain compressor.
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  for (const char* name : {"multiband_compressor", "ducking"}) {
    SCOPED_TRACE(name);
    expect_batched_equals_naive(
        load_graph(std::string(source) + "/examples/" + name + ".json", registry_node_types()));
  }
}

}  // namespace
}  // namespace grafx
