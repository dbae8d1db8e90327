#pragma once
// Shared pieces of the Python module's bindings (one source file per layer bound).

#include <grafx/graph/graph.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>

#include <torch/extension.h>

#include <memory>
#include <string>

namespace grafx::python {

namespace py = pybind11;

/// The processors of a graph, made for one sample rate (opaque to Python).
struct ProcessorSet {
  Processors processors;
  SampleRate sample_rate = 0;
};

/// Option values from Python: bool, int or float (a number), str, or a list of str.
ProcessorOptions options_from_python(const py::dict& options, const std::string& where);
py::object option_to_python(const OptionValue& value);
py::dict options_to_python(const ProcessorOptions& options);

/// A torch.dtype as a ScalarType (TypeError for anything else).
at::ScalarType dtype_from_python(const py::handle& dtype);

/// Parameters from any mapping of mappings of tensors (dicts, ModuleDict of ParameterDicts).
Parameters parameters_from_python(const py::handle& parameters);
py::dict parameters_to_python(const Parameters& parameters);
TensorDict tensors_from_python(const py::handle& mapping, const std::string& where);
py::dict tensors_to_python(const TensorDict& tensors);

void bind_errors(py::module_& m);
void bind_graph(py::module_& m);
void bind_processors(py::module_& m);
void bind_render(py::module_& m);
void bind_loss_and_fit(py::module_& m);
void bind_io(py::module_& m);

}  // namespace grafx::python
