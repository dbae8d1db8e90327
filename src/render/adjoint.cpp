#include <grafx/error.h>
#include <grafx/render/adjoint.h>

#include "render/checks.h"
#include "render/steps.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <optional>

namespace grafx {

using namespace detail;

namespace {

/// What a processor step keeps for its vector-Jacobian product.
struct Tape {
  std::vector<at::Tensor> inputs;   ///< per inlet [B, m, C, L]; leaves where a cotangent is needed
  TypeParameters rows;              ///< parameter rows, leaves where a gradient is wanted
  std::vector<at::Tensor> outputs;  ///< with the step's history (policy save)
  std::map<std::string, at::Tensor> aux_losses;  ///< [B, m], with history (policy save)
};

/// Sums a cotangent over channels down to `channels` (a mono signal spread to stereo
/// receives the sum of both channels' cotangents).
at::Tensor to_channels(const at::Tensor& cotangent, int64_t channels) {
  return cotangent.size(2) == channels ? cotangent : cotangent.sum(2, /*keepdim=*/true);
}

/// The cotangents of the step outputs, per step and outlet, summed as reads add to them;
/// undefined: a zero never made.
struct Cotangents {
  const std::vector<std::vector<std::vector<int64_t>>>& shapes;  // [step][outlet] sizes
  std::vector<std::vector<at::Tensor>> of_step;

  explicit Cotangents(const std::vector<std::vector<std::vector<int64_t>>>& output_shapes)
      : shapes(output_shapes), of_step(output_shapes.size()) {
    for (size_t k = 0; k < shapes.size(); ++k) of_step[k].resize(shapes[k].size());
  }
  /// Adds `piece` to rows [start, start + rows) of outlet `outlet` of step `step`.
  void add(int64_t step, int64_t outlet, int64_t start, const at::Tensor& piece) {
    const auto& shape = shapes[size_t(step)][size_t(outlet)];
    at::Tensor c      = to_channels(piece, shape[2]);
    at::Tensor& sum   = of_step[size_t(step)][size_t(outlet)];
    if (!sum.defined()) {
      if (start == 0 && c.size(1) == shape[1]) {
        sum = c.clone();
        return;
      }
      sum = at::zeros(shape, c.options());
    }
    sum.narrow(1, start, c.size(1)).add_(c);
  }
};

/// Cotangents of the aux losses per type and name, [B, N_t] in plan order.
using AuxCotangents = std::map<TypeId, std::map<std::string, at::Tensor>>;

}  // namespace

struct AdjointRender::State {
  const RenderPlan& plan;
  const Processors& processors;
  AdjointOptions options;
  AdjointPlan adjoint;
  RenderResult result;
  bool batched = false, done = false;
  int64_t B = 0;
  std::vector<int64_t> source_sizes;  // the caller's sources' shape
  at::TensorOptions source_options;
  std::map<TypeId, PreparedParameters> prepared;  // detached, plan order
  RowHome home;
  std::vector<int64_t> step_index;  // forward step -> adjoint step (-1: skipped)
  std::vector<std::vector<std::vector<int64_t>>> output_shapes;  // [step][outlet] sizes
  std::vector<std::optional<Tape>> tapes;
  std::map<TypeId, std::map<int64_t, int64_t>> aux_step_offsets;  // type -> step -> first row
  std::optional<SignalHooks> hooks;

  State(const RenderPlan& plan, const Processors& processors, AdjointOptions options)
      : plan(plan), processors(processors), options(std::move(options)) {}

  /// Runs processor step k on its tape's inputs and rows, with grad mode as it is.
  StepResult run(size_t k, const Tape& tape) const {
    const PlanStep& step = plan.steps[k];
    const int64_t m      = int64_t(step.nodes.size());
    const bool per_item  = prepared.count(step.type) && prepared.at(step.type).per_item;
    return run_processor_step(plan, k, processors, flatten_rows(tape.rows, per_item, B, m),
                              tape.inputs, B, options.render);
  }

  // ---- the backward pass, phase by phase ----

  /// Throws RenderError for a second backward or cotangents not shaped like what they belong to.
  void check_cotangents(const at::Tensor& output_cotangent,
                        const std::map<std::string, TensorDict>& aux_cotangents) const {
    if (done)
      throw RenderError("grafx.render.adjoint",
                        "backward: this render's adjoint already ran (its saved passes are gone)");
    if (!output_cotangent.defined() || output_cotangent.sizes() != result.outputs.sizes() ||
        output_cotangent.scalar_type() != result.outputs.scalar_type())
      throw RenderError("grafx.render.tangents",
                        "backward: the output cotangent must be shaped and typed like the outputs");
    for (const auto& [type, named] : aux_cotangents)
      for (const auto& [name, c] : named) {
        auto t = result.aux_losses.find(type);
        if (t == result.aux_losses.end() || !t->second.count(name) || !c.defined() ||
            c.sizes() != t->second.at(name).sizes())
          throw RenderError("grafx.render.tangents", "backward: the cotangent of aux loss " + type +
                                                         "." + name +
                                                         " must be shaped like that loss");
      }
  }

  /// The aux losses' cotangents per type and name, [B, N_t] in plan order.
  AuxCotangents aux_in_plan_order(const std::map<std::string, TensorDict>& aux_cotangents) const {
    AuxCotangents in_plan_order;
    for (const auto& [type, named] : aux_cotangents) {
      const TypeId t         = plan.types.id(type);
      const at::Tensor order = device_index(aux_graph_order(plan, t), source_options.device());
      for (const auto& [name, c] : named) {
        at::Tensor batch       = batched ? c : c.unsqueeze(0);
        in_plan_order[t][name] = at::zeros_like(batch).index_copy(1, order, batch);
      }
    }
    return in_plan_order;
  }

  /// The sources' shape as a batch, [B, K, C, L].
  std::vector<int64_t> source_batch_sizes() const {
    std::vector<int64_t> shape = source_sizes;
    if (!batched) shape.insert(shape.begin(), 1);
    return shape;
  }

  /// The sources' gradient [B, K, C, L] from the `in` step's output cotangent.
  at::Tensor sources_of(const at::Tensor& cotangent) const {
    const at::Tensor index = device_index(plan.source_index, source_options.device());
    return at::zeros(source_batch_sizes(), cotangent.options()).index_add(1, index, cotangent);
  }

  /// A processor step's vector-Jacobian product from its tape (recomputed where the plan did
  /// not save it): the cotangents of its inputs (per read), its parameters' gradients added to
  /// `type_gradients` (plan order) and shown in `view`.
  std::vector<at::Tensor> processor_vjp(const AdjointStep& a,
                                        const std::vector<at::Tensor>& output_cotangents,
                                        const AuxCotangents& aux_cotangents,
                                        TensorDict& type_gradients, BackwardStepView& view) {
    const size_t k       = size_t(a.forward_step);
    const PlanStep& step = plan.steps[k];
    const int64_t m      = int64_t(step.nodes.size());
    Tape& tape           = *tapes[k];
    auto aux             = aux_cotangents.find(step.type);
    bool zero            = aux == aux_cotangents.end();  // a lazy zero: nothing to run
    for (const auto& c : output_cotangents) zero = zero && !c.defined();
    if (a.memory == MemoryPolicy::kRecompute && !zero) {
      c10::AutoGradMode grad_mode(true);
      StepResult recomputed = run(k, tape);
      tape.outputs          = recomputed.outputs;
      tape.aux_losses       = recomputed.aux_losses;
    }
    // Only outputs that carry history (a step whose outputs ignore every leaf has none).
    std::vector<at::Tensor> outputs, grad_outputs;
    auto take = [&](const at::Tensor& output, const at::Tensor& cotangent) {
      if (!cotangent.defined() || !output.requires_grad()) return;
      outputs.push_back(output);
      grad_outputs.push_back(cotangent);
    };
    for (size_t o = 0; o < tape.outputs.size(); ++o) take(tape.outputs[o], output_cotangents[o]);
    if (aux != aux_cotangents.end())
      for (const auto& [name, c] : aux->second)
        if (tape.aux_losses.count(name))
          take(tape.aux_losses.at(name),
               c.narrow(1, aux_step_offsets.at(step.type).at(int64_t(k)), m));
    std::vector<at::Tensor> wrt;
    std::vector<std::string> names;
    for (const auto& inlet : a.inlets) wrt.push_back(tape.inputs[size_t(inlet.read)]);
    if (a.parameter_gradients)
      for (const auto& [name, t] : tape.rows.named()) {
        wrt.push_back(t);
        names.push_back(name);
      }
    std::vector<at::Tensor> grads(wrt.size());
    if (!outputs.empty() && !wrt.empty())
      grads = torch::autograd::grad(outputs, wrt, grad_outputs, false, false, true);
    std::vector<at::Tensor> input_cotangents(step.reads.size());
    size_t g = 0;
    for (const auto& inlet : a.inlets) input_cotangents[size_t(inlet.read)] = grads[g++];
    const PreparedParameters& whole = prepared.at(step.type);
    for (const auto& name : names) {
      at::Tensor gradient = grads[g++];
      if (!gradient.defined()) continue;
      view.parameter_gradients[name] = gradient;
      at::Tensor& sum                = type_gradients[name];
      if (!sum.defined()) sum = at::zeros_like(whole.values.at(name));
      sum.narrow(whole.per_item ? 1 : 0, step.parameter_rows.start, m).add_(gradient);
    }
    tapes[k].reset();  // its saved values are no longer needed
    return input_cotangents;
  }

  /// The transposes of a step's reads, aggregation then gather (a scatter-add): each input
  /// cotangent added to the outputs it was read from.
  void transpose_reads(const AdjointStep& a, const std::vector<at::Tensor>& input_cotangents,
                       Cotangents& cotangents, BackwardStepView& view) const {
    const size_t k = size_t(a.forward_step);
    for (const auto& inlet : a.inlets) {
      const size_t r = size_t(inlet.read);
      at::Tensor c   = input_cotangents[r];
      view.input_cotangents.push_back(c);
      if (!c.defined()) continue;
      std::vector<int64_t> rows = inlet.rows.rows();
      const int64_t n           = int64_t(rows.size());
      switch (inlet.aggregation) {
        case Aggregation::kNone:
          break;
        case Aggregation::kSum:
          c = c.expand({c.size(0), n, c.size(2), c.size(3)});
          break;
        case Aggregation::kSegmentSum:
          c = c.index_select(1, device_index(inlet.segments, c.device()));
          break;
      }
      c              = hooks->apply_to_read(k, r, c);
      int64_t offset = 0;
      for (const Run& run : runs_of(rows, home).runs) {
        cotangents.add(run.step, run.outlet, run.start, c.narrow(1, offset, run.length));
        offset += run.length;
      }
    }
  }

  /// The parameters' gradients in the caller's shapes (each type's gradient hooks applied,
  /// graph order) and the sources' where asked.
  Gradients gradients_as_given(std::map<TypeId, TensorDict>& gradients,
                               at::Tensor source_gradient) const {
    Gradients out;
    for (const auto& [type, tensors] : prepared) {
      const std::string& type_name = plan.types.name(type);
      if (options.render.frozen_types.count(type_name)) continue;
      const bool reorder = !plan.parameters_in_graph_order(type);
      auto hook          = options.render.gradient_hooks.find(type_name);
      for (const auto& [name, whole] : tensors.values.named()) {
        at::Tensor g = gradients[type][name];
        if (!g.defined()) g = at::zeros_like(whole);
        if (hook != options.render.gradient_hooks.end()) g = hook->second.apply(name, g);
        if (reorder) {
          const int64_t dim          = tensors.per_item ? 1 : 0;
          std::vector<int64_t> shape = g.sizes().vec();
          shape[size_t(dim)]         = plan.n_graph_nodes[size_t(type)];
          const at::Tensor order =
              device_index(plan.parameter_graph_rows[size_t(type)], g.device());
          g = at::zeros(shape, g.options()).index_add(dim, order, g);
        }
        out.parameters[type_name][name] = g;
      }
    }
    if (options.source_gradients) {
      if (!source_gradient.defined())
        source_gradient = at::zeros(source_batch_sizes(), source_options);
      out.sources = batched ? source_gradient : source_gradient.squeeze(0);
    }
    return out;
  }
};

AdjointRender::AdjointRender(const RenderPlan& plan, const Processors& processors,
                             const Parameters& parameters, const at::Tensor& sources,
                             AdjointOptions options)
    : state_(std::make_unique<State>(plan, processors, std::move(options))) {
  State& s                            = *state_;
  const RenderOptions& render_options = s.options.render;
  CheckedInputs checked =
      check_render_inputs(plan, processors, parameters, sources, render_options);
  checked.source_batch      = checked.source_batch.detach();
  s.batched                 = checked.batched;
  s.B                       = checked.B;
  s.source_sizes            = sources.sizes().vec();
  s.source_options          = sources.options();
  const Parameters detached = map_parameters(
      parameters,
      [](const std::string&, const std::string&, const at::Tensor& t) { return t.detach(); });
  RenderOptions plain = render_options;
  plain.gradient_hooks.clear();  // applied to the assembled gradients instead
  s.prepared = prepare_parameters(plan, detached, checked.per_item, plain, sources.device());

  AdjointPlanOptions adjoint_options;
  for (const auto& type : render_options.frozen_types)  // as render: types it lacks are ignored
    if (plan.types.contains(type) && plan.n_graph_nodes[size_t(plan.types.id(type))] > 0)
      adjoint_options.frozen_types.insert(type);
  adjoint_options.source_gradients = s.options.source_gradients;
  adjoint_options.memory           = s.options.memory;
  for (TypeId t = NodeTypes::kMix + 1; t < plan.types.size(); ++t) {
    auto it = processors.find(plan.types.name(t));
    if (it != processors.end() && it->second->parameter_specs().empty())
      adjoint_options.parameterless_types.insert(plan.types.name(t));
  }
  s.adjoint = make_adjoint_plan(plan, adjoint_options);
  s.step_index.assign(plan.steps.size(), -1);
  for (size_t i = 0; i < s.adjoint.steps.size(); ++i)
    s.step_index[size_t(s.adjoint.steps[i].forward_step)] = int64_t(i);

  s.hooks.emplace(plan, render_options);  // validates the hooks now
  s.home = locate_rows(plan);
  s.tapes.resize(plan.steps.size());
  s.output_shapes.resize(plan.steps.size());
  c10::NoGradGuard no_grad;  // each step records only its own call, below
  // The forward loop without hooks (the backward applies them to cotangents); each processor
  // step keeps a tape of what its adjoint step needs: its inputs and parameter rows (leaves where
  // the adjoint differentiates them) and, where the plan saves, the recorded call.
  auto run_processor = [&](size_t k, const std::vector<at::Tensor>& inputs) {
    const PlanStep& step = plan.steps[k];
    const AdjointStep* a =
        s.step_index[k] >= 0 ? &s.adjoint.steps[size_t(s.step_index[k])] : nullptr;
    Tape tape;
    tape.inputs = inputs;
    if (s.prepared.count(step.type)) tape.rows = step_rows(s.prepared.at(step.type), step);
    if (a) {
      for (const auto& inlet : a->inlets)
        tape.inputs[size_t(inlet.read)] =
            tape.inputs[size_t(inlet.read)].detach().requires_grad_(true);
      if (a->parameter_gradients)
        tape.rows = tape.rows.map([](const std::string&, const at::Tensor& t) {
          return t.detach().requires_grad_(true);
        });
    }
    const bool record = a && a->memory == MemoryPolicy::kSave;
    StepResult out;
    {
      c10::AutoGradMode grad_mode(record);
      out = s.run(k, tape);
    }
    StepResult detached_out;
    for (auto& [name, loss] : out.aux_losses) {
      s.aux_step_offsets[step.type][int64_t(k)] = 0;  // filled below
      detached_out.aux_losses[name]             = loss.detach();
    }
    for (const auto& y : out.outputs) detached_out.outputs.push_back(y.detach());
    if (record) {
      tape.outputs    = std::move(out.outputs);
      tape.aux_losses = std::move(out.aux_losses);
    }
    if (a) s.tapes[k] = std::move(tape);
    return detached_out;
  };
  s.result = run_steps(plan, checked, s.home, render_options, nullptr, run_processor,
                       [&](size_t k, const std::vector<at::Tensor>& outputs) {
                         for (const auto& y : outputs)
                           s.output_shapes[k].push_back(y.sizes().vec());
                       });
  // Where each step's aux losses sit among its type's, in plan order.
  for (auto& [type, offsets] : s.aux_step_offsets) {
    int64_t offset = 0;
    for (auto& [k, start] : offsets) {
      start = offset;
      offset += int64_t(plan.steps[size_t(k)].nodes.size());
    }
  }
}

AdjointRender::~AdjointRender()                        = default;
AdjointRender::AdjointRender(AdjointRender&&) noexcept = default;

const RenderResult& AdjointRender::result() const { return state_->result; }
const AdjointPlan& AdjointRender::adjoint_plan() const { return state_->adjoint; }

Gradients AdjointRender::backward(const at::Tensor& output_cotangent,
                                  const std::map<std::string, TensorDict>& aux_cotangents) {
  State& s               = *state_;
  const RenderPlan& plan = s.plan;
  s.check_cotangents(output_cotangent, aux_cotangents);
  s.done = true;
  c10::NoGradGuard no_grad;

  Cotangents cotangents(s.output_shapes);
  const AuxCotangents aux = s.aux_in_plan_order(aux_cotangents);
  const size_t last       = plan.steps.size() - 1;
  cotangents.add(int64_t(last), 0, 0, s.batched ? output_cotangent : output_cotangent.unsqueeze(0));

  std::map<TypeId, TensorDict> gradients;  // plan order, like the prepared parameters
  at::Tensor source_gradient;
  for (size_t i = 0; i < s.adjoint.steps.size(); ++i) {
    const AdjointStep& a             = s.adjoint.steps[i];
    const size_t k                   = size_t(a.forward_step);
    const PlanStep& step             = plan.steps[k];
    std::vector<at::Tensor>& outlets = cotangents.of_step[k];
    for (auto& c : outlets) c = s.hooks->apply_to_outputs(k, c);
    BackwardStepView view;
    view.index             = int64_t(i);
    view.step              = &a;
    view.output_cotangents = outlets;
    for (int64_t node : step.nodes) view.nodes.push_back(plan.node_ids[size_t(node)]);

    std::vector<at::Tensor> input_cotangents(step.reads.size());
    if (step.type == NodeTypes::kIn) {
      if (a.source_gradients && outlets[0].defined()) source_gradient = s.sources_of(outlets[0]);
    } else if (!a.vjp) {
      input_cotangents[0] = outlets[0];  // out and mix pass their input on
    } else {
      input_cotangents = s.processor_vjp(a, outlets, aux, gradients[step.type], view);
    }
    s.transpose_reads(a, input_cotangents, cotangents, view);
    outlets.clear();
    if (s.options.backward_observer) s.options.backward_observer(view);
  }
  return s.gradients_as_given(gradients, source_gradient);
}

}  // namespace grafx
