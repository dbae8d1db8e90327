// Bindings of the render layer: render, render_naive, chunked renders, observers, signal hooks
// and adjoint plans. Tensors pass through unchanged, so LibTorch's autograd (the one PyTorch
// runs) records the render and gradients reach the caller's parameters and sources; dual
// tensors of PyTorch's forward mode pass too (grafx's kernels carry their tangents). Parameter
// gradient hooks are torch's own, registered by grafx/render.py. A Python signal hook lives in
// the C++ autograd graph: it is held so that it is called and released under the GIL only.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/plan/adjoint_plan.h>
#include <grafx/render/chunked.h>

#include <algorithm>
#include <chrono>

namespace grafx::python {

namespace {

RenderOptions render_options(const std::vector<std::string>& frozen_types, bool check_finite,
                             const py::object& observer) {
  RenderOptions options;
  options.frozen_types = {frozen_types.begin(), frozen_types.end()};
  options.check_finite = check_finite;
  if (!observer.is_none()) {
    // Borrowed: the caller's reference outlives the render, which calls it synchronously, and a
    // handle can be copied without the GIL.
    options.observer = [callable = py::handle(observer)](const StepView& view) {
      py::gil_scoped_acquire acquired;
      py::dict step;
      step["index"]   = view.index;
      step["nodes"]   = view.nodes;
      step["inputs"]  = view.inputs;
      step["outputs"] = view.outputs;
      callable(step);
    };
  }
  return options;
}

/// A signal hook from Python: a callable of the cotangent, "stop", ("scale", factor) or
/// ("clip_norm", max_norm).
SignalHook signal_hook_from_python(const py::handle& spec, const std::string& where) {
  if (py::isinstance<py::str>(spec) && spec.cast<std::string>() == "stop")
    return SignalHook::stop();
  if (py::isinstance<py::tuple>(spec) && py::len(spec) == 2) {
    auto kind    = spec.cast<py::tuple>()[0].cast<std::string>();
    double value = spec.cast<py::tuple>()[1].cast<double>();
    if (kind == "scale") return SignalHook::scale(value);
    if (kind == "clip_norm") return SignalHook::clip_norm(value);
  }
  if (!PyCallable_Check(spec.ptr()))
    throw py::type_error(where +
                         ": expected a callable, \"stop\", (\"scale\", factor) or "
                         "(\"clip_norm\", max_norm)");
  // Autograd copies and frees the hook wherever it likes: the callable is freed under the GIL.
  std::shared_ptr<py::function> callable(
      new py::function(py::reinterpret_borrow<py::function>(spec)), [](py::function* f) {
        py::gil_scoped_acquire acquired;
        delete f;
      });
  return SignalHook::custom([callable](const at::Tensor& cotangent) {
    py::gil_scoped_acquire acquired;
    return (*callable)(cotangent).cast<at::Tensor>();
  });
}

/// A port of an edge hook's key: its index, or its name as `Graph.edges()` gives it.
int64_t port_from_python(const py::handle& port, const std::vector<std::string>& names,
                         const std::string& where) {
  if (py::isinstance<py::str>(port)) {
    const std::string name = port.cast<std::string>();
    auto found             = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw RenderError("grafx.render.hooks",
                        where + ": expected a port of " + known + ", but got \"" + name + "\"");
    }
    return found - names.begin();
  }
  if (py::isinstance<py::int_>(port) && !py::isinstance<py::bool_>(port)) {
    const int64_t index = port.cast<int64_t>();
    if (index < 0 || index >= int64_t(names.size()))
      throw RenderError("grafx.render.hooks", where + ": expected a port index from 0 to " +
                                                  std::to_string(names.size() - 1) + ", but got " +
                                                  std::to_string(index));
    return index;
  }
  throw RenderError("grafx.render.hooks", where + ": expected a port name or index, but got " +
                                              std::string(py::repr(port)));
}

void add_signal_hooks(RenderOptions& options, const Graph& graph, const py::dict& node_hooks,
                      const py::dict& edge_hooks) {
  for (const auto& [key, spec] : node_hooks) {
    if (!py::isinstance<py::int_>(key) || py::isinstance<py::bool_>(key))
      throw RenderError("grafx.render.hooks", "node_hooks[" + std::string(py::repr(key)) +
                                                  "]: expected a node id, but got " +
                                                  std::string(py::str(key.get_type())));
    NodeId id = key.cast<NodeId>();
    options.node_gradient_hooks[id] =
        signal_hook_from_python(spec, "node_hooks[" + std::to_string(id) + "]");
  }
  // Keys as Graph.edges() gives them, (source, dest, outlet, inlet), each port by name or index.
  for (const auto& [key, spec] : edge_hooks) {
    const std::string where = "edge_hooks[" + std::string(py::repr(key)) + "]";
    if (!py::isinstance<py::tuple>(key) || py::len(key) != 4)
      throw RenderError("grafx.render.hooks",
                        where +
                            ": expected a key (source, dest, outlet, inlet), as "
                            "Graph.edges() gives it");
    auto t = key.cast<py::tuple>();
    Edge edge;
    try {
      edge.source = t[0].cast<NodeId>();
      edge.dest   = t[1].cast<NodeId>();
    } catch (const py::cast_error&) {
      throw RenderError("grafx.render.hooks",
                        where + ": expected node ids, but got " + std::string(py::repr(key)));
    }
    for (NodeId id : {edge.source, edge.dest})
      if (!graph.contains(id))
        throw RenderError(
            "grafx.render.hooks",
            where + ": expected a node of the plan's graph, but got " + std::to_string(id));
    const NodeTypes& types = graph.types();
    edge.outlet            = port_from_python(t[2], types[graph.node(edge.source).type].outlets,
                                              where + " outlet of node " + std::to_string(edge.source));
    edge.inlet             = port_from_python(t[3], types[graph.node(edge.dest).type].inlets,
                                              where + " inlet of node " + std::to_string(edge.dest));
    options.edge_gradient_hooks[edge] = signal_hook_from_python(spec, where);
  }
}

py::dict aux_to_python(const std::map<std::string, TensorDict>& aux) {
  py::dict result;
  for (const auto& [type, losses] : aux) result[py::str(type)] = tensors_to_python(losses);
  return result;
}

}  // namespace

void bind_render(py::module_& m) {
  m.def(
      "render",
      [](const CompiledPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, const std::vector<std::string>& frozen_types, bool check_finite,
         const py::object& observer, const py::dict& node_hooks, const py::dict& edge_hooks) {
        const Parameters raw  = parameters_from_python(parameters);
        RenderOptions options = render_options(frozen_types, check_finite, observer);
        options.time          = {set.sample_rate, 0};
        // Finite but huge sources or parameters can overflow inside a node: an error naming
        // the node, as `grafx render` gives, rather than NaN or infinite outputs.
        options.check_finite_outputs = check_finite;
        add_signal_hooks(options, plan.graph, node_hooks, edge_hooks);
        RenderResult result;
        {
          py::gil_scoped_release released;
          result = render(plan, set.processors, raw, sources, options);
        }
        return py::make_tuple(result.outputs, aux_to_python(result.aux_losses));
      },
      py::arg("plan"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("frozen_types"), py::arg("check_finite"), py::arg("observer"), py::arg("node_hooks"),
      py::arg("edge_hooks"));

  py::class_<AdjointPlan>(m, "AdjointPlan",
                          "A render plan's reverse program: the backward pass, step by step.")
      .def_property_readonly("num_steps", [](const AdjointPlan& a) { return a.steps.size(); })
      .def_readonly("skipped", &AdjointPlan::skipped)
      .def("to_json", &AdjointPlan::to_json)
      .def("__str__", &AdjointPlan::to_string)
      .def("__repr__", [](const AdjointPlan& a) {
        return "<grafx.AdjointPlan: " + std::to_string(a.steps.size()) + " of " +
               std::to_string(a.n_forward_steps) + " steps>";
      });
  m.def(
      "adjoint_plan",
      [](const CompiledPlan& plan, const std::vector<std::string>& frozen_types,
         const std::vector<std::string>& recompute, bool source_gradients,
         const std::vector<std::string>& parameterless_types) {
        AdjointPlanOptions options;
        options.frozen_types        = {frozen_types.begin(), frozen_types.end()};
        options.parameterless_types = {parameterless_types.begin(), parameterless_types.end()};
        options.source_gradients    = source_gradients;
        for (const auto& type : recompute) options.memory[type] = MemoryPolicy::kRecompute;
        return make_adjoint_plan(plan, options);
      },
      py::arg("plan"), py::arg("frozen_types"), py::arg("recompute"), py::arg("source_gradients"),
      py::arg("parameterless_types"));
  m.def(
      "batch_graphs",
      [](const std::vector<Graph>& graphs) {
        std::vector<GraphTensor> tensors;
        for (const Graph& graph : graphs) tensors.push_back(to_tensor(graph));
        const GraphBatch batch = batch_graphs(tensors);
        return py::make_tuple(to_graph(batch.graph), batch.node_offsets, batch.source_offsets,
                              batch.output_offsets);
      },
      py::arg("graphs"));
  m.def(
      "render_graphs",
      [](const std::vector<Graph>& graphs, const ProcessorSet& set, const py::list& parameters,
         const std::vector<at::Tensor>& sources, const std::string& method, bool check_finite) {
        std::vector<Parameters> raw;
        for (const auto& p : parameters) raw.push_back(parameters_from_python(p));
        RenderOptions options;
        options.check_finite         = check_finite;
        options.check_finite_outputs = check_finite;
        options.time                 = {set.sample_rate, 0};
        py::gil_scoped_release released;
        return render_graphs(graphs, set.processors, raw, sources,
                             ScheduleOptions(parse_schedule_method(method)), options);
      },
      py::arg("graphs"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("method"), py::arg("check_finite"));
  m.def(
      "render_naive",
      [](const Graph& graph, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources) {
        const Parameters raw = parameters_from_python(parameters);
        py::gil_scoped_release released;
        return render_naive(graph, set.processors, raw, sources, {set.sample_rate, 0}).outputs;
      },
      py::arg("graph"), py::arg("processors"), py::arg("parameters"), py::arg("sources"));
  m.def(
      "render_in_chunks",
      [](const CompiledPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, int64_t chunk_samples, bool check_finite) {
        const Parameters raw = parameters_from_python(parameters);
        ChunkOptions options;
        options.chunk_samples               = chunk_samples;
        options.render.check_finite         = check_finite;
        options.render.check_finite_outputs = check_finite;
        options.render.time                 = {set.sample_rate, 0};
        py::gil_scoped_release released;
        return render_in_chunks(plan, set.processors, raw, sources, options);
      },
      py::arg("plan"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("chunk_samples"), py::arg("check_finite"));

  // The same forward+backward as a Python caller's, timed in C++ as render_bench times it
  // (gradients cleared after each): the reference for the cost of calling from Python
  // (bench/python_render_bench.py).
  m.def(
      "_time_forward_backward",
      [](const CompiledPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, int64_t repeats, bool clear_gradients) {
        Parameters raw = parameters_from_python(parameters);
        std::vector<double> milliseconds;
        py::gil_scoped_release released;
        for (int64_t i = 0; i < repeats; ++i) {
          auto start = std::chrono::steady_clock::now();
          render(plan, set.processors, raw, sources).outputs.pow(2).mean().backward();
          for (auto& [type, values] : raw)
            for (auto& [name, tensor] : values.named())
              if (clear_gradients) tensor.mutable_grad() = at::Tensor();
          milliseconds.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
        }
        return milliseconds;
      },
      py::arg("plan"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("repeats"), py::arg("clear_gradients") = true);
}

}  // namespace grafx::python
