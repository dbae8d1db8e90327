#include <grafx/error.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/render.h>
#include <grafx/text.h>

#include "render/checks.h"
#include "render/steps.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

namespace grafx {

// ---- gradient hooks ------------------------------------------------------------------------

namespace {

/// Norm of each node's gradient: over every dimension but the node dimension (the last two
/// leading dimensions for batched parameters are (batch, node): both kept).
at::Tensor row_norms(const at::Tensor& gradient, int64_t node_dims) {
  at::Tensor flat = gradient.reshape({-1});
  if (gradient.dim() <= node_dims) return gradient.abs();
  std::vector<int64_t> shape(gradient.sizes().begin(), gradient.sizes().begin() + node_dims);
  shape.push_back(-1);
  at::Tensor norms = gradient.reshape(shape).norm(2, {-1}, /*keepdim=*/true);
  std::vector<int64_t> view(gradient.sizes().begin(), gradient.sizes().begin() + node_dims);
  view.resize(size_t(gradient.dim()), 1);
  return norms.reshape(view);
}

/// A number as text that reads back to the same double.
std::string exact_text(double value) { return significant_digits(value, 17); }

}  // namespace

GradientHook GradientHook::clip_norm(double max_norm) {
  return {[max_norm](const std::string&, const at::Tensor& g) {
    at::Tensor norms = row_norms(g, 1);
    return g * (max_norm / norms.clamp_min(max_norm));
  }};
}

GradientHook GradientHook::normalize(double eps) {
  return {[eps](const std::string&, const at::Tensor& g) { return g / (row_norms(g, 1) + eps); }};
}

SignalHook SignalHook::scale(double factor) {
  return {[factor](const at::Tensor& g) { return g * factor; }, "scale:" + exact_text(factor)};
}

SignalHook SignalHook::clip_norm(double max_norm) {
  return {[max_norm](const at::Tensor& g) {
            at::Tensor norms = g.reshape({g.size(0), -1}).norm(2, {1}, true);
            std::vector<int64_t> shape(size_t(g.dim()), 1);
            shape[0] = g.size(0);
            return g * (max_norm / norms.clamp_min(max_norm)).view(shape);
          },
          "clip:" + exact_text(max_norm)};
}

SignalHook SignalHook::stop() {
  return {[](const at::Tensor& g) { return at::zeros_like(g); }, "stop"};
}

SignalHook SignalHook::custom(std::function<at::Tensor(const at::Tensor&)> f) {
  return {std::move(f)};
}

GradientHook GradientHook::custom(
    std::function<at::Tensor(const std::string&, const at::Tensor&)> f) {
  return {std::move(f)};
}

// ---- rendering -----------------------------------------------------------------------------

using namespace detail;

RenderResult render(const RenderPlan& plan, const Processors& processors,
                    const Parameters& parameters, const at::Tensor& sources,
                    const RenderOptions& options) {
  const detail::CheckedInputs checked =
      detail::check_render_inputs(plan, processors, parameters, sources, options);

  // Without anything that needs a gradient, skip autograd's bookkeeping altogether.
  bool needs_gradient = sources.requires_grad();
  for (const auto& [type, values] : parameters)
    if (!options.frozen_types.count(type))
      for (const auto& [name, tensor] : values.named())
        needs_gradient = needs_gradient || tensor.requires_grad();
  std::optional<c10::NoGradGuard> no_grad;
  if (!needs_gradient) no_grad.emplace();

  std::map<TypeId, PreparedParameters> prepared =
      prepare_parameters(plan, parameters, checked.per_item, options, sources.device());
  const SignalHooks hooks(plan, options);
  return run_steps(plan, checked, locate_rows(plan), options, &hooks,
                   [&](size_t k, const std::vector<at::Tensor>& inputs) {
                     const PlanStep& step        = plan.steps[k];
                     const PreparedParameters& p = prepared[step.type];  // empty: no parameters
                     return run_processor_step(plan, k, processors,
                                               flatten_rows(step_rows(p, step), p.per_item,
                                                            checked.B, int64_t(step.nodes.size())),
                                               inputs, checked.B, options);
                   });
}

std::vector<at::Tensor> render_graphs(const std::vector<Graph>& graphs,
                                      const Processors& processors,
                                      const std::vector<Parameters>& parameters,
                                      const std::vector<at::Tensor>& sources,
                                      const ScheduleOptions& schedule,
                                      const RenderOptions& options) {
  if (graphs.size() != parameters.size() || graphs.size() != sources.size())
    throw RenderError("grafx.render.batch",
                      "expected parameters and sources for each of the " +
                          std::to_string(graphs.size()) + " graphs, but got " +
                          std::to_string(parameters.size()) + " parameter sets and " +
                          std::to_string(sources.size()) + " source tensors");
  std::vector<GraphTensor> tensors;
  for (const auto& g : graphs) tensors.push_back(to_tensor(g));
  GraphBatch batch = batch_graphs(tensors);
  RenderPlan plan  = make_render_plan(batch.graph, schedule);
  Parameters joined;
  for (size_t g = 0; g < graphs.size(); ++g) {
    detail::check_parameters(graphs[g].types(), graphs[g].count_per_type(),
                             detail::NodeExtras::of(graphs[g]), processors, parameters[g], 0,
                             sources[g].scalar_type(), sources[g].device(),
                             "graph " + std::to_string(g) + ": ");
  }
  for (TypeId t = NodeTypes::kMix + 1; t < batch.graph.types.size(); ++t) {
    const std::string& type = batch.graph.types.name(t);
    std::map<std::string, std::vector<at::Tensor>> pieces;
    for (size_t g = 0; g < graphs.size(); ++g) {
      auto it = parameters[g].find(type);
      if (it != parameters[g].end())
        for (const auto& [name, tensor] : it->second.named()) pieces[name].push_back(tensor);
    }
    for (auto& [name, list] : pieces) joined[type][name] = at::cat(list, 0);
  }
  at::Tensor all_sources = at::cat(sources, sources.front().dim() == 4 ? 1 : 0);
  RenderResult result    = render(plan, processors, joined, all_sources, options);
  return batch.split_outputs(result.outputs, result.outputs.dim() == 4 ? 1 : 0);
}

}  // namespace grafx
