#include "render/steps.h"

#include "render/automation.h"
#include "render/checks.h"

#include <grafx/dsp/signal.h>
#include <grafx/error.h>

#include <algorithm>

namespace grafx::detail {

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

StepOutputs plan_step_outputs(const RenderPlan& plan, const RowHome& home,
                              std::vector<int64_t>& last_reader) {
  last_reader.assign(plan.steps.size(), -1);
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
  return outputs;
}

at::Tensor gather(const std::vector<int64_t>& rows, const RowHome& home, const StepOutputs& outputs,
                  const std::function<std::string()>& where) {
  const Runs runs = runs_of(rows, home);
  if (runs.runs.size() == 1) return outputs.take(runs.runs[0]);
  if (runs.one_tensor) {
    std::vector<int64_t> positions;
    for (int64_t row : rows) positions.push_back(home.position[size_t(row)]);
    const at::Tensor& source =
        outputs.whole[size_t(runs.runs[0].step)][size_t(runs.runs[0].outlet)];
    return source.index_select(1, device_index(positions, source.device()));
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
      shape[1]                  = m;
      const at::Tensor segments = device_index(read.segments, gathered.device());
      return at::zeros(shape, gathered.options()).index_add(1, segments, gathered);
    }
  }
  return gathered;
}

namespace {

/// How a step's nodes mix their processed and dry signals (each [B·m, 1, 1], undefined when
/// no node of the step needs it): `wet` the weight of the processed signal (σ(dry_wet) for
/// dry/wet nodes, 1 for the others), `kept` false for bypassed nodes.
struct NodeMix {
  at::Tensor wet, kept;
};

/// The step's node mix, of the step's wet amounts `raw` ([B·m, 1] or, automated, [B·m, 1, L];
/// undefined where no node of the type carries one).
NodeMix node_mix_of(const RenderPlan& plan, const PlanStep& step, const at::Tensor& raw, int64_t B,
                    const at::TensorOptions& options) {
  NodeMix mix;
  std::vector<int64_t> dry_wet, kept;
  for (int64_t node : step.nodes) {
    const NodeProperties& properties = plan.node_properties[size_t(node)];
    dry_wet.push_back(properties.dry_wet ? 1 : 0);
    kept.push_back(properties.bypassed ? 0 : 1);
  }
  auto per_row = [&](const std::vector<int64_t>& values) {  // [m] -> [B·m, 1, 1]
    return device_index(values, options.device()).to(options).repeat({B}).view({-1, 1, 1});
  };
  const auto n_dry_wet = std::count(dry_wet.begin(), dry_wet.end(), 1);
  if (raw.defined() && n_dry_wet > 0) {
    at::Tensor w = raw.sigmoid().view({raw.size(0), 1, -1});  // [B·m, 1, 1] or [B·m, 1, L]
    at::Tensor has;
    if (n_dry_wet < int64_t(dry_wet.size())) has = per_row(dry_wet);  // not every node has one
    mix.wet = has.defined() ? has * w + (1 - has) : w;
  }
  if (std::find(kept.begin(), kept.end(), 0) != kept.end()) mix.kept = per_row(kept) > 0.5;
  return mix;
}

}  // namespace

std::map<TypeId, PreparedParameters> prepare_parameters(const RenderPlan& plan,
                                                        const Parameters& parameters,
                                                        const std::map<std::string, bool>& per_item,
                                                        const RenderOptions& options,
                                                        at::Device device) {
  std::map<TypeId, PreparedParameters> prepared;
  for (const auto& [type_name, values] : parameters) {
    TypeId type           = plan.types.id(type_name);
    PreparedParameters& p = prepared[type];
    p.per_item            = per_item.at(type_name);
    const bool reorder    = !plan.parameters_in_graph_order(type);
    at::Tensor order;
    if (reorder) order = device_index(plan.parameter_graph_rows[size_t(type)], device);
    auto hook = options.gradient_hooks.find(type_name);
    p.values  = values.map([&](const std::string& name, const at::Tensor& tensor) {
      at::Tensor t = options.frozen_types.count(type_name) ? tensor.detach() : tensor;
      if (reorder) t = t.index_select(p.per_item ? 1 : 0, order);
      if (hook != options.gradient_hooks.end() && t.requires_grad()) {
        if (!reorder) t = t.view(t.sizes());  // a node of our own to hang the hook on
        auto apply            = hook->second.apply;
        std::string parameter = name;
        t.register_hook([apply, parameter](const at::Tensor& g) { return apply(parameter, g); });
      }
      return t;
    });
  }
  return prepared;
}

TypeParameters step_rows(const PreparedParameters& prepared, const PlanStep& step) {
  const int64_t m = int64_t(step.nodes.size());
  return prepared.values.map([&](const std::string&, const at::Tensor& t) {
    return t.narrow(prepared.per_item ? 1 : 0, step.parameter_rows.start, m);
  });
}

TypeParameters flatten_rows(const TypeParameters& rows, bool per_item, int64_t B, int64_t m) {
  return rows.map([&](const std::string&, const at::Tensor& t) {
    at::Tensor r = t;
    if (!per_item && B > 1) {
      std::vector<int64_t> expanded{B};
      expanded.insert(expanded.end(), r.sizes().begin(), r.sizes().end());
      r = r.unsqueeze(0).expand(expanded);
    }
    std::vector<int64_t> flat{B * m};
    flat.insert(flat.end(), r.sizes().begin() + (per_item || B > 1 ? 2 : 1), r.sizes().end());
    return r.reshape(flat);
  });
}

SignalHooks::SignalHooks(const RenderPlan& plan, const RenderOptions& options) {
  if (options.node_gradient_hooks.empty() && options.edge_gradient_hooks.empty()) return;
  std::map<NodeId, std::pair<size_t, int64_t>> place;  // graph id -> (step, position)
  for (size_t k = 0; k < plan.steps.size(); ++k)
    for (size_t p = 0; p < plan.steps[k].nodes.size(); ++p)
      place[plan.node_ids[size_t(plan.steps[k].nodes[p])]] = {k, int64_t(p)};
  for (const auto& [id, hook] : options.node_gradient_hooks) {
    auto it = place.find(id);
    if (it == place.end())
      throw RenderError("grafx.render.hooks", "a gradient hook names node " + std::to_string(id) +
                                                  ", which is not rendered (absent or dead)");
    outputs_[it->second.first].emplace_back(it->second.second, hook);
  }
  if (options.edge_gradient_hooks.empty()) return;
  const RowHome home = locate_rows(plan);
  std::map<Edge, std::pair<std::pair<size_t, size_t>, int64_t>> edges;  // -> ((step, read), row)
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& step = plan.steps[k];
    for (size_t i = 0; i < step.reads.size(); ++i) {
      const InletRead& read = step.reads[i];
      const auto& inlets    = plan.types[step.type].inlets;
      const int64_t inlet   = std::find(inlets.begin(), inlets.end(), read.inlet) - inlets.begin();
      std::vector<int64_t> rows = read.rows.rows();
      for (size_t j = 0; j < rows.size(); ++j) {
        const int64_t s = home.step[size_t(rows[j])];
        const int64_t source_node =
            plan.steps[size_t(s)].nodes[size_t(home.position[size_t(rows[j])])];
        const size_t dest = read.aggregation == Aggregation::kNone  ? j
                            : read.aggregation == Aggregation::kSum ? 0
                                                                    : size_t(read.segments[j]);
        Edge edge{plan.node_ids[size_t(source_node)], plan.node_ids[size_t(step.nodes[dest])],
                  home.outlet[size_t(rows[j])], inlet};
        edges[edge] = {{k, i}, int64_t(j)};
      }
    }
  }
  for (const auto& [edge, hook] : options.edge_gradient_hooks) {
    auto it = edges.find(edge);
    if (it == edges.end())
      throw RenderError("grafx.render.hooks",
                        "a gradient hook names the edge " + std::to_string(edge.source) + " -> " +
                            std::to_string(edge.dest) + " (outlet " + std::to_string(edge.outlet) +
                            ", inlet " + std::to_string(edge.inlet) +
                            "), which is not rendered (absent or dead)");
    reads_[it->second.first].emplace_back(it->second.second, hook);
  }
}

at::Tensor SignalHooks::apply(const Rows& rows, const at::Tensor& cotangent) {
  std::vector<at::Tensor> parts = cotangent.unbind(1);
  for (const auto& [row, hook] : rows) {
    at::Tensor changed = hook.apply(parts[size_t(row)]);
    TORCH_CHECK(changed.sizes() == parts[size_t(row)].sizes(),
                "a gradient hook returned a cotangent of shape ", changed.sizes(), " for one of ",
                parts[size_t(row)].sizes());
    parts[size_t(row)] = changed;
  }
  return at::stack(parts, 1);
}

at::Tensor SignalHooks::hooked(const Rows& rows, const at::Tensor& t) {
  if (!t.requires_grad()) return t;
  at::Tensor node = t.view(t.sizes());  // a node of our own to hang the hook on
  node.register_hook([rows](const at::Tensor& g) { return apply(rows, g); });
  return node;
}

std::vector<at::Tensor> SignalHooks::on_outputs(size_t k, std::vector<at::Tensor> outputs) const {
  auto it = outputs_.find(k);
  if (it != outputs_.end())
    for (auto& y : outputs) y = hooked(it->second, y);
  return outputs;
}

at::Tensor SignalHooks::on_read(size_t k, size_t read, at::Tensor gathered) const {
  auto it = reads_.find({k, read});
  return it == reads_.end() ? gathered : hooked(it->second, gathered);
}

at::Tensor SignalHooks::apply_to_outputs(size_t k, const at::Tensor& cotangent) const {
  auto it = outputs_.find(k);
  return it == outputs_.end() || !cotangent.defined() ? cotangent : apply(it->second, cotangent);
}

at::Tensor SignalHooks::apply_to_read(size_t k, size_t read, const at::Tensor& cotangent) const {
  auto it = reads_.find({k, read});
  return it == reads_.end() ? cotangent : apply(it->second, cotangent);
}

at::Tensor source_rows(const RenderPlan& plan, const at::Tensor& source_batch) {
  RowAccess read = RowAccess::of(plan.source_index);
  return read.kind == RowAccess::Kind::kSlice
             ? source_batch.narrow(1, read.start, read.size())
             : source_batch.index_select(1, device_index(plan.source_index, source_batch.device()));
}

void check_finite_outputs(const RenderPlan& plan, size_t k,
                          const std::vector<at::Tensor>& outputs) {
  const PlanStep& step = plan.steps[k];
  if (step.type == NodeTypes::kIn) return;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const at::Tensor& y = outputs[o];                    // [B, m, C, L]
    at::Tensor bad      = non_finite_rows(y, 2).any(0);  // [m]
    if (!bad.any().item<bool>()) continue;
    NodeId id = plan.node_ids[size_t(step.nodes[size_t(bad.nonzero()[0][0].item<int64_t>())])];
    throw RenderError("grafx.render.non_finite",
                      "node " + std::to_string(id) + " (" + plan.types.name(step.type) +
                          ") put out non-finite samples (NaN or infinity) at outlet \"" +
                          plan.types[step.type].outlets[o] +
                          "\"; the first node to do so in this render");
  }
}

void observe(const RenderPlan& plan, size_t k, std::vector<at::Tensor> inputs,
             std::vector<at::Tensor> outputs, bool batched,
             const std::function<void(const StepView&)>& observer) {
  const PlanStep& step = plan.steps[k];
  StepView view{int64_t(k), &step, {}, std::move(inputs), std::move(outputs)};
  for (int64_t node : step.nodes) view.nodes.push_back(plan.node_ids[size_t(node)]);
  if (!batched) {
    for (auto& x : view.inputs) x = x.squeeze(0);
    for (auto& y : view.outputs) y = y.squeeze(0);
  }
  observer(view);
}

std::vector<int64_t> aux_graph_order(const RenderPlan& plan, TypeId type) {
  std::vector<NodeId> ids;
  for (const auto& step : plan.steps)
    if (step.type == type)
      for (int64_t node : step.nodes) ids.push_back(plan.node_ids[size_t(node)]);
  std::vector<int64_t> order(ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
  return order;
}

RenderResult assemble_result(const RenderPlan& plan, const at::Tensor& out, int64_t widest,
                             const AuxPieces& aux, bool batched) {
  RenderResult result;
  at::Tensor y = out;
  if (y.size(2) < widest) y = y.expand({y.size(0), y.size(1), widest, y.size(3)});
  result.outputs = batched ? y : y.squeeze(0);
  for (const auto& [type, named] : aux) {
    const std::vector<int64_t> order = aux_graph_order(plan, type);
    bool in_order                    = true;  // then no gather (the usual case)
    for (size_t i = 0; i < order.size(); ++i) in_order = in_order && order[i] == int64_t(i);
    for (const auto& [name, pieces] : named) {
      at::Tensor all = at::cat(pieces, 1);
      if (!in_order) all = all.index_select(1, device_index(order, out.device()));
      result.aux_losses[plan.types.name(type)][name] = batched ? all : all.squeeze(0);
    }
  }
  return result;
}

std::string step_name(const RenderPlan& plan, size_t k) {
  return "step " + std::to_string(k) + " (" + plan.types.name(plan.steps[k].type) + ")";
}

StepResult run_processor_step(const RenderPlan& plan, size_t k, const Processors& processors,
                              TypeParameters parameters, const std::vector<at::Tensor>& inputs,
                              int64_t B, const RenderOptions& options) {
  const PlanStep& step                   = plan.steps[k];
  const int64_t m                        = int64_t(step.nodes.size());
  const std::string& type_name           = plan.types.name(step.type);
  const at::TensorOptions tensor_options = inputs.at(0).options();
  std::vector<at::Tensor> flat_inputs;
  for (const auto& x : inputs) flat_inputs.push_back(x.reshape({B * m, x.size(2), x.size(3)}));
  match_channels(flat_inputs, 1, [&] { return step_name(plan, k); });
  if (!plan.automated_types[size_t(step.type)].empty()) {
    std::vector<std::vector<std::string>> automated;
    for (int64_t node : step.nodes)
      automated.push_back(plan.node_properties[size_t(node)].automated);
    automate_rows(parameters, automated, B, plan.automation, options.time, flat_inputs[0].size(2));
  }
  NodeMix node_mix           = node_mix_of(plan, step, parameters.wet, B, tensor_options);
  const Processor& processor = *processors.at(type_name);
  std::optional<ProcessorOutput> mixed;  // the dry/wet mix folded into the processor's pass
  if (node_mix.wet.defined() && !node_mix.kept.defined() && node_mix.wet.size(-1) == 1)
    mixed = processor.forward_mixed(flat_inputs, parameters.own, node_mix.wet);
  ProcessorOutput out = mixed ? std::move(*mixed) : processor.forward(flat_inputs, parameters.own);
  if (options.extra_aux_losses)
    for (auto& [name, loss] : options.extra_aux_losses(type_name, flat_inputs, out.outputs))
      out.aux_losses[name] = loss;
  StepResult result;
  for (size_t o = 0; o < out.outputs.size(); ++o) {
    at::Tensor y = out.outputs[o];
    if (!mixed && (node_mix.wet.defined() || node_mix.kept.defined())) {
      int64_t passed = plan.types.passed_inlet(step.type, int64_t(o));
      at::Tensor dry = passed >= 0 ? flat_inputs[size_t(passed)] : at::zeros_like(y);
      // w·f + (1 − w)·dry in one pass each way (∂/∂w = f − dry, without cancellation)
      if (node_mix.wet.defined()) y = dsp::dry_wet(dry, y, node_mix.wet);
      if (node_mix.kept.defined()) y = at::where(node_mix.kept, y, dry);
    }
    result.outputs.push_back(y.view({B, m, y.size(1), y.size(2)}));
  }
  for (auto& [name, loss] : out.aux_losses) {
    at::Tensor per_node = loss.view({B * m});
    if (node_mix.kept.defined())
      per_node = at::where(node_mix.kept.view({B * m}), per_node, at::zeros_like(per_node));
    result.aux_losses[name] = per_node.view({B, m});
  }
  return result;
}

CheckedInputs check_render_inputs(const RenderPlan& plan, const Processors& processors,
                                  const Parameters& parameters, const at::Tensor& sources,
                                  const RenderOptions& options) {
  CheckedInputs checked;
  checked.batched      = check_sources(plan.n_sources, sources, options.check_finite);
  checked.source_batch = checked.batched ? sources : sources.unsqueeze(0);
  checked.B            = checked.source_batch.size(0);
  checked.per_item =
      check_parameters(plan.types, plan.n_graph_nodes, NodeExtras::of(plan), processors, parameters,
                       checked.batched ? checked.B : 0, sources.scalar_type(), sources.device());
  if (options.check_finite) check_finite_parameters(parameters, checked.per_item);
  return checked;
}

RenderResult run_steps(
    const RenderPlan& plan, const CheckedInputs& inputs, const RowHome& home,
    const RenderOptions& options, const SignalHooks* hooks,
    const ProcessorStepRunner& run_processor,
    const std::function<void(size_t, const std::vector<at::Tensor>&)>& produced) {
  // The last step that reads each step's outputs (they are released after it), and where the
  // runs that later steps read begin and end (the outputs are cut there).
  std::vector<int64_t> last_reader;
  StepOutputs outputs = plan_step_outputs(plan, home, last_reader);
  AuxPieces aux;
  int64_t widest = 1;  // channels of the widest signal so far
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& step = plan.steps[k];
    const int64_t m      = int64_t(step.nodes.size());
    std::vector<at::Tensor> reads, outlets;  // one per inlet; one per outlet
    if (step.type == NodeTypes::kIn) {
      outlets = {source_rows(plan, inputs.source_batch)};
    } else {
      auto where = [&] { return step_name(plan, k); };
      for (size_t i = 0; i < step.reads.size(); ++i) {
        at::Tensor gathered = gather(step.reads[i].rows.rows(), home, outputs, where);
        if (hooks) gathered = hooks->on_read(k, i, gathered);
        reads.push_back(aggregate(step.reads[i], gathered, m));
      }
      if (step.type == NodeTypes::kOut || step.type == NodeTypes::kMix) {
        outlets = {reads[0]};
      } else {
        StepResult out = run_processor(k, reads);
        outlets        = std::move(out.outputs);
        for (auto& [name, loss] : out.aux_losses) aux[step.type][name].push_back(loss);
      }
    }
    if (hooks) outlets = hooks->on_outputs(k, std::move(outlets));
    if (produced) produced(k, outlets);
    outputs.set(k, outlets);
    if (options.observer) observe(plan, k, reads, outlets, inputs.batched, options.observer);
    for (const auto& y : outlets) widest = std::max(widest, y.size(2));
    if (options.check_finite_outputs) check_finite_outputs(plan, k, outlets);
    for (size_t j = 0; j < k; ++j)
      if (last_reader[j] == int64_t(k)) outputs.release(j);  // no later step reads it
  }
  return assemble_result(plan, outputs.whole.back()[0], widest, aux, inputs.batched);
}

}  // namespace grafx::detail
