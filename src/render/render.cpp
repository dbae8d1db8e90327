#include <grafx/error.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/render.h>

#include "render/checks.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <optional>
#include <set>

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

GradientHook GradientHook::custom(
    std::function<at::Tensor(const std::string&, const at::Tensor&)> f) {
  return {std::move(f)};
}

// ---- rendering -----------------------------------------------------------------------------

namespace {

/// Where each buffer row lives: the step that wrote it, the outlet, the position in the step.
struct RowHome {
  std::vector<int64_t> step, outlet, position;
};

RowHome locate_rows(const RenderPlan& plan) {
  RowHome home;
  home.step.resize(size_t(plan.n_buffer_rows));
  home.outlet.resize(size_t(plan.n_buffer_rows));
  home.position.resize(size_t(plan.n_buffer_rows));
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    auto rows       = plan.steps[k].writes.rows();
    const int64_t m = int64_t(plan.steps[k].nodes.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      home.step[size_t(rows[i])]     = int64_t(k);
      home.outlet[size_t(rows[i])]   = int64_t(i) / m;
      home.position[size_t(rows[i])] = int64_t(i) % m;
    }
  }
  return home;
}

/// A run of consecutive rows of one step output: rows [start, start + length) of outlet
/// `outlet` of step `step`.
struct Run {
  int64_t step, outlet, start, length;
};

/// The rows a read takes, as runs of one output each; `one_tensor` when all come from one output
/// (then a read that is not a single run is one index_select).
struct Runs {
  std::vector<Run> runs;
  bool one_tensor = true;
};

Runs runs_of(const std::vector<int64_t>& rows, const RowHome& home) {
  Runs result;
  std::vector<Run>& runs = result.runs;
  for (int64_t row : rows) {
    int64_t s = home.step[size_t(row)], o = home.outlet[size_t(row)],
            p = home.position[size_t(row)];
    if (!runs.empty() && runs.back().step == s && runs.back().outlet == o &&
        runs.back().start + runs.back().length == p) {
      ++runs.back().length;
      continue;
    }
    result.one_tensor =
        result.one_tensor && (runs.empty() || (runs.front().step == s && runs.front().outlet == o));
    runs.push_back({s, o, p, 1});
  }
  return result;
}

/// Step outputs ([B, m, C, L] per outlet), each also cut once into the pieces its readers take.
/// A slice's gradient is a zero tensor the size of the whole output with the slice's gradient
/// copied in, and the gradients of all readers are summed: whole-output adds and fills that
/// cost batched backwards more than their processors saved (docs/benchmarks.md, "Where the
/// backward goes"). The gradient of one split is one concatenation.
struct StepOutputs {
  std::vector<std::vector<at::Tensor>> whole;        // [step][outlet]
  std::vector<std::vector<std::set<int64_t>>> cuts;  // [step][outlet]: piece boundaries
  std::vector<std::vector<std::map<int64_t, at::Tensor>>> pieces;  // by first row

  /// Sets step k's outputs and cuts them at the boundaries its readers need.
  void set(size_t k, std::vector<at::Tensor> outlets) {
    pieces[k].assign(outlets.size(), {});
    for (size_t o = 0; o < outlets.size(); ++o) {
      const int64_t m = outlets[o].size(1);
      std::vector<int64_t> sizes, starts;
      int64_t previous = 0;
      for (int64_t cut : cuts[k][o])
        if (cut > previous && cut < m) {
          starts.push_back(previous);
          sizes.push_back(cut - previous);
          previous = cut;
        }
      if (sizes.empty()) continue;  // read whole, or by index
      starts.push_back(previous);
      sizes.push_back(m - previous);
      std::vector<at::Tensor> split = outlets[o].split_with_sizes(sizes, 1);
      for (size_t i = 0; i < split.size(); ++i) pieces[k][o][starts[i]] = split[i];
    }
    whole[k] = std::move(outlets);
  }
  void release(size_t k) {
    whole[k].clear();
    pieces[k].clear();
  }
  /// The rows of a run: the whole output, one piece, or consecutive pieces joined.
  at::Tensor take(const Run& r) const {
    const at::Tensor& all = whole[size_t(r.step)][size_t(r.outlet)];
    if (r.start == 0 && r.length == all.size(1)) return all;
    const auto& by_start = pieces[size_t(r.step)][size_t(r.outlet)];
    if (by_start.empty()) return all.narrow(1, r.start, r.length);  // where no cut was planned
    std::vector<at::Tensor> parts;
    for (auto it = by_start.find(r.start); it != by_start.end() && it->first < r.start + r.length;
         ++it)
      parts.push_back(it->second);
    return parts.size() == 1 ? parts[0] : at::cat(parts, 1);
  }
};

/// Reads buffer rows from the step outputs: one piece (or joined pieces) per run of
/// consecutive rows of one output, one index_select when all rows come from one output.
at::Tensor gather(const std::vector<int64_t>& rows, const RowHome& home, const StepOutputs& outputs,
                  const std::function<std::string()>& where) {
  const Runs runs = runs_of(rows, home);
  if (runs.runs.size() == 1) return outputs.take(runs.runs[0]);
  if (runs.one_tensor) {
    std::vector<int64_t> positions;
    for (int64_t row : rows) positions.push_back(home.position[size_t(row)]);
    const at::Tensor& source =
        outputs.whole[size_t(runs.runs[0].step)][size_t(runs.runs[0].outlet)];
    return source.index_select(1, at::tensor(positions, at::kLong).to(source.device()));
  }
  std::vector<at::Tensor> pieces;
  for (const Run& r : runs.runs) pieces.push_back(outputs.take(r));
  detail::match_channels(pieces, 2, where);
  return at::cat(pieces, 1);
}

at::Tensor aggregate(const InletRead& read, const at::Tensor& gathered, int64_t m) {
  switch (read.aggregation) {
    case Aggregation::kNone:
      return gathered;
    case Aggregation::kSum:
      return gathered.sum(1, /*keepdim=*/true);
    case Aggregation::kSegmentSum: {
      std::vector<int64_t> shape(gathered.sizes().begin(), gathered.sizes().end());
      shape[1]            = m;
      at::Tensor segments = at::tensor(read.segments, at::kLong).to(gathered.device());
      return at::zeros(shape, gathered.options()).index_add(1, segments, gathered);
    }
  }
  return gathered;
}

/// How a step's nodes mix their processed and dry signals (each [B·m, 1, 1], undefined when
/// no node of the step needs it): `wet` the weight of the processed signal (σ(dry_wet) for
/// dry/wet nodes, 1 for the others), `kept` false for bypassed nodes.
struct NodeMix {
  at::Tensor wet, kept;
};

/// The step's node mix; takes "dry_wet" out of the step's parameters (processors never see it).
NodeMix node_mix_of(const RenderPlan& plan, const PlanStep& step, TensorDict& step_parameters,
                    int64_t B, const at::TensorOptions& options) {
  NodeMix mix;
  std::vector<double> dry_wet, kept;
  for (int64_t node : step.nodes) {
    dry_wet.push_back(plan.node_dry_wet[size_t(node)] ? 1.0 : 0.0);
    kept.push_back(plan.node_bypassed[size_t(node)] ? 0.0 : 1.0);
  }
  auto per_row = [&](const std::vector<double>& values) {  // [m] -> [B·m, 1, 1]
    return at::tensor(values, at::kDouble).to(options).repeat({B}).view({-1, 1, 1});
  };
  auto raw = step_parameters.find(kDryWetParameter);
  if (raw != step_parameters.end()) {
    auto n_dry_wet = std::count(dry_wet.begin(), dry_wet.end(), 1.0);
    if (n_dry_wet > 0) {
      at::Tensor w = raw->second.sigmoid().view({-1, 1, 1});
      at::Tensor has;
      if (n_dry_wet < int64_t(dry_wet.size())) has = per_row(dry_wet);  // not every node has one
      mix.wet = has.defined() ? has * w + (1 - has) : w;
    }
    step_parameters.erase(raw);
  }
  if (std::find(kept.begin(), kept.end(), 0.0) != kept.end()) mix.kept = per_row(kept) > 0.5;
  return mix;
}

/// A type's parameters prepared for one render: plan order, frozen types detached, hooks set.
struct PreparedParameters {
  TensorDict tensors;  // [N_live, ...] or [B, N_live, ...]
  bool per_item = false;
};

}  // namespace

RenderResult render(const RenderPlan& plan, const Processors& processors,
                    const Parameters& parameters, const at::Tensor& sources,
                    const RenderOptions& options) {
  const bool batched = detail::check_sources(plan.n_sources, sources, options.check_finite);
  const at::Tensor source_batch = batched ? sources : sources.unsqueeze(0);  // [B, K, C, L]
  const int64_t B = source_batch.size(0), L = source_batch.size(3);
  auto per_item = detail::check_parameters(plan.types, plan.n_graph_nodes, plan.dry_wet_types,
                                           processors, parameters, batched ? B : 0,
                                           sources.scalar_type(), sources.device());
  if (options.check_finite) detail::check_finite_parameters(parameters, per_item);

  // Without anything that needs a gradient, skip autograd's bookkeeping altogether.
  bool needs_gradient = sources.requires_grad();
  for (const auto& [type, tensors] : parameters)
    if (!options.frozen_types.count(type))
      for (const auto& [name, tensor] : tensors)
        needs_gradient = needs_gradient || tensor.requires_grad();
  std::optional<c10::NoGradGuard> no_grad;
  if (!needs_gradient) no_grad.emplace();

  std::map<TypeId, PreparedParameters> prepared;
  for (const auto& [type_name, tensors] : parameters) {
    TypeId type           = plan.types.id(type_name);
    PreparedParameters& p = prepared[type];
    p.per_item            = per_item.at(type_name);
    const bool reorder    = !plan.parameters_in_graph_order(type);
    at::Tensor order;
    if (reorder)
      order = at::tensor(plan.parameter_graph_rows[size_t(type)], at::kLong).to(sources.device());
    auto hook = options.gradient_hooks.find(type_name);
    for (const auto& [name, tensor] : tensors) {
      at::Tensor t = options.frozen_types.count(type_name) ? tensor.detach() : tensor;
      if (reorder) t = t.index_select(p.per_item ? 1 : 0, order);
      if (hook != options.gradient_hooks.end() && t.requires_grad()) {
        if (!reorder) t = t.view(t.sizes());  // a node of our own to hang the hook on
        auto apply            = hook->second.apply;
        std::string parameter = name;
        t.register_hook([apply, parameter](const at::Tensor& g) { return apply(parameter, g); });
      }
      p.tensors[name] = t;
    }
  }

  // The last step that reads each step's outputs (they are released after it), and where the
  // runs that later steps read begin and end (the outputs are cut there).
  const RowHome home = locate_rows(plan);
  std::vector<int64_t> last_reader(plan.steps.size(), -1);
  StepOutputs outputs;
  outputs.whole.resize(plan.steps.size());
  outputs.pieces.resize(plan.steps.size());
  outputs.cuts.resize(plan.steps.size());
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    outputs.cuts[k].resize(std::max<size_t>(1, plan.types[plan.steps[k].type].outlets.size()));
    for (const auto& read : plan.steps[k].reads) {
      const std::vector<int64_t> rows = read.rows.rows();
      for (int64_t row : rows) last_reader[size_t(home.step[size_t(row)])] = int64_t(k);
      const Runs runs = runs_of(rows, home);
      if (runs.one_tensor && runs.runs.size() > 1) continue;  // an index_select of the whole
      for (const Run& r : runs.runs)
        outputs.cuts[size_t(r.step)][size_t(r.outlet)].insert({r.start, r.start + r.length});
    }
  }

  RenderResult result;
  std::map<TypeId, std::map<std::string, std::vector<at::Tensor>>> aux;  // per step, plan order
  int64_t widest = 1;  // channels of the widest signal so far
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& step = plan.steps[k];
    const int64_t m      = int64_t(step.nodes.size());
    std::vector<at::Tensor> inputs, produced;  // one per inlet; one per outlet
    if (step.type == NodeTypes::kIn) {
      RowAccess sources_read = RowAccess::of(plan.source_index);
      produced               = {sources_read.kind == RowAccess::Kind::kSlice
                                    ? source_batch.narrow(1, sources_read.start, sources_read.size())
                                    : source_batch.index_select(
                                          1, at::tensor(plan.source_index, at::kLong).to(sources.device()))};
    } else {
      auto where = [&] {
        return "step " + std::to_string(k) + " (" + plan.types.name(step.type) + ")";
      };
      for (const auto& read : step.reads)
        inputs.push_back(aggregate(read, gather(read.rows.rows(), home, outputs, where), m));
      if (step.type == NodeTypes::kOut || step.type == NodeTypes::kMix) {
        produced = {inputs[0]};
      } else {
        const std::string& type_name = plan.types.name(step.type);
        const PreparedParameters& p  = prepared[step.type];  // empty for a type without any
        TensorDict step_parameters;
        for (const auto& [name, t] : p.tensors) {
          at::Tensor rows = p.per_item ? t.narrow(1, step.parameter_rows.start, m)
                                       : t.narrow(0, step.parameter_rows.start, m);
          if (!p.per_item && B > 1) {
            std::vector<int64_t> expanded{B};
            expanded.insert(expanded.end(), rows.sizes().begin(), rows.sizes().end());
            rows = rows.unsqueeze(0).expand(expanded);
          }
          std::vector<int64_t> flat{B * m};
          flat.insert(flat.end(), rows.sizes().begin() + (p.per_item || B > 1 ? 2 : 1),
                      rows.sizes().end());
          step_parameters[name] = rows.reshape(flat);
        }
        std::vector<at::Tensor> flat_inputs;
        for (const auto& x : inputs) flat_inputs.push_back(x.reshape({B * m, x.size(2), L}));
        detail::match_channels(flat_inputs, 1, where);
        NodeMix node_mix    = node_mix_of(plan, step, step_parameters, B, sources.options());
        ProcessorOutput out = processors.at(type_name)->forward(flat_inputs, step_parameters);
        if (options.extra_aux_losses)
          for (auto& [name, loss] : options.extra_aux_losses(type_name, flat_inputs, out.outputs))
            out.aux_losses[name] = loss;
        for (size_t o = 0; o < out.outputs.size(); ++o) {
          at::Tensor y = out.outputs[o];
          if (node_mix.wet.defined() || node_mix.kept.defined()) {
            int64_t passed = plan.types.passed_inlet(step.type, int64_t(o));
            at::Tensor dry = passed >= 0 ? flat_inputs[size_t(passed)] : at::zeros_like(y);
            // w·f + (1 − w)·dry, written so that ∂/∂w = f − dry has no cancellation
            if (node_mix.wet.defined()) y = dry + node_mix.wet * (y - dry);
            if (node_mix.kept.defined()) y = at::where(node_mix.kept, y, dry);
          }
          produced.push_back(y.view({B, m, y.size(1), L}));
        }
        for (auto& [name, loss] : out.aux_losses) {
          at::Tensor per_node = loss.view({B * m});
          if (node_mix.kept.defined())
            per_node = at::where(node_mix.kept.view({B * m}), per_node, at::zeros_like(per_node));
          aux[step.type][name].push_back(per_node.view({B, m}));
        }
      }
    }
    outputs.set(k, produced);
    if (options.observer) {
      StepView view{int64_t(k), &step, {}, inputs, produced};
      for (int64_t node : step.nodes) view.nodes.push_back(plan.node_ids[size_t(node)]);
      if (!batched) {
        for (auto& x : view.inputs) x = x.squeeze(0);
        for (auto& y : view.outputs) y = y.squeeze(0);
      }
      options.observer(view);
    }
    for (const auto& y : produced) widest = std::max(widest, y.size(2));
    if (options.check_finite_outputs && step.type != NodeTypes::kIn)
      for (size_t o = 0; o < produced.size(); ++o) {
        const at::Tensor& y = produced[o];                                        // [B, m, C, L]
        at::Tensor bad      = (~y.detach().isfinite()).flatten(2).any(2).any(0);  // [m]
        if (!bad.any().item<bool>()) continue;
        NodeId id = plan.node_ids[size_t(step.nodes[size_t(bad.nonzero()[0][0].item<int64_t>())])];
        throw RenderError("grafx.render.non_finite",
                          "node " + std::to_string(id) + " (" + plan.types.name(step.type) +
                              ") put out non-finite samples (NaN or infinity) at outlet \"" +
                              plan.types[step.type].outlets[o] +
                              "\"; the first node to do so in this render");
      }
    for (size_t j = 0; j < k; ++j)
      if (last_reader[j] == int64_t(k)) outputs.release(j);  // no later step reads it
  }
  // The outputs have the channel count of the widest signal rendered: the same in every
  // schedule (a batched call may spread a node's mono signal to its batch-mates' stereo).
  at::Tensor y = outputs.whole.back()[0];
  if (y.size(2) < widest) y = y.expand({y.size(0), y.size(1), widest, y.size(3)});
  result.outputs = batched ? y : y.squeeze(0);

  // Aux losses back in graph order (ascending node id) of the rendered nodes.
  for (auto& [type, named] : aux) {
    std::vector<NodeId> ids;
    for (const auto& step : plan.steps)
      if (step.type == type)
        for (int64_t node : step.nodes) ids.push_back(plan.node_ids[size_t(node)]);
    std::vector<int64_t> order(ids.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
    at::Tensor index = at::tensor(order, at::kLong).to(sources.device());
    for (auto& [name, pieces] : named) {
      at::Tensor all                                 = at::cat(pieces, 1).index_select(1, index);
      result.aux_losses[plan.types.name(type)][name] = batched ? all : all.squeeze(0);
    }
  }
  return result;
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
                             detail::dry_wet_types(graphs[g]), processors, parameters[g], 0,
                             sources[g].scalar_type(), sources[g].device(),
                             "graph " + std::to_string(g) + ": ");
  }
  for (TypeId t = NodeTypes::kMix + 1; t < batch.graph.types.size(); ++t) {
    const std::string& type = batch.graph.types.name(t);
    std::map<std::string, std::vector<at::Tensor>> pieces;
    for (size_t g = 0; g < graphs.size(); ++g) {
      auto it = parameters[g].find(type);
      if (it != parameters[g].end())
        for (const auto& [name, tensor] : it->second) pieces[name].push_back(tensor);
    }
    for (auto& [name, list] : pieces) joined[type][name] = at::cat(list, 0);
  }
  at::Tensor all_sources = at::cat(sources, sources.front().dim() == 4 ? 1 : 0);
  RenderResult result    = render(plan, processors, joined, all_sources, options);
  return batch.split_outputs(result.outputs, result.outputs.dim() == 4 ? 1 : 0);
}

}  // namespace grafx
