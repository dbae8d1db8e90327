// Bindings of the render layer: render, render_naive, chunked renders and observers. Tensors
// pass through unchanged, so LibTorch's autograd (the one PyTorch runs) records the render and
// gradients reach the caller's parameters and sources. Gradient hooks are torch's own,
// registered on the parameters by grafx/render.py, so no Python object lives in the C++ parts
// of the autograd graph.

#include "bindings.h"

#include <grafx/render/chunked.h>

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

py::dict aux_to_python(const std::map<std::string, TensorDict>& aux) {
  py::dict result;
  for (const auto& [type, losses] : aux) result[py::str(type)] = tensors_to_python(losses);
  return result;
}

}  // namespace

void bind_render(py::module_& m) {
  m.def(
      "render",
      [](const RenderPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, const std::vector<std::string>& frozen_types, bool check_finite,
         const py::object& observer) {
        const Parameters raw        = parameters_from_python(parameters);
        const RenderOptions options = render_options(frozen_types, check_finite, observer);
        RenderResult result;
        {
          py::gil_scoped_release released;
          result = render(plan, set.processors, raw, sources, options);
        }
        return py::make_tuple(result.outputs, aux_to_python(result.aux_losses));
      },
      py::arg("plan"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("frozen_types"), py::arg("check_finite"), py::arg("observer"));
  m.def(
      "render_naive",
      [](const Graph& graph, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources) {
        const Parameters raw = parameters_from_python(parameters);
        py::gil_scoped_release released;
        return render_naive(graph, set.processors, raw, sources).outputs;
      },
      py::arg("graph"), py::arg("processors"), py::arg("parameters"), py::arg("sources"));
  m.def(
      "render_in_chunks",
      [](const RenderPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, int64_t chunk_samples) {
        const Parameters raw = parameters_from_python(parameters);
        ChunkOptions options;
        options.chunk_samples = chunk_samples;
        py::gil_scoped_release released;
        return render_in_chunks(plan, set.processors, raw, sources, options);
      },
      py::arg("plan"), py::arg("processors"), py::arg("parameters"), py::arg("sources"),
      py::arg("chunk_samples"));

  // The same forward+backward as a Python caller's, timed in C++ as render_bench times it
  // (gradients cleared after each): the reference for the cost of calling from Python
  // (bench/python_render_bench.py).
  m.def(
      "_time_forward_backward",
      [](const RenderPlan& plan, const ProcessorSet& set, const py::handle& parameters,
         const at::Tensor& sources, int64_t repeats, bool clear_gradients) {
        Parameters raw = parameters_from_python(parameters);
        std::vector<double> milliseconds;
        py::gil_scoped_release released;
        for (int64_t i = 0; i < repeats; ++i) {
          auto start = std::chrono::steady_clock::now();
          render(plan, set.processors, raw, sources).outputs.pow(2).mean().backward();
          for (auto& [type, named] : raw)
            for (auto& [name, tensor] : named)
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
