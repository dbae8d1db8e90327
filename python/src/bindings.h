#pragma once
// Shared pieces of the Python module's bindings (one source file per layer bound).

#include <grafx/graph/graph.h>
#include <grafx/plan/render_plan.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>

#include <torch/extension.h>

#include <memory>
#include <string>

namespace grafx::python {

namespace py = pybind11;

/// The processors of a graph, made for one sample rate (opaque to Python). The types they were
/// made from are kept so that the set pickles: processors hold no state, so making them again
/// from the types and the rate gives the same set.
struct ProcessorSet {
  Processors processors;
  SampleRate sample_rate = 0;
  NodeTypes types;
  /// Types processed otherwise than by their own processor: type name -> (the name of a
  /// registered processor, its options) (a grafx module, or a GRAFX class mapped to grafx's),
  /// or a Python module (GRAFX's processor interface); kept so that the set pickles with them.
  py::dict overrides;
  /// Where and in what dtype the set's users make parameters by default (None: the CPU,
  /// float32); the C++ processors themselves follow their inputs.
  py::object device = py::none(), dtype = py::none();
};

/// The processors of `types` at `sample_rate`, those of `overrides` as it says.
ProcessorSet make_processor_set(const NodeTypes& types, SampleRate sample_rate,
                                const py::dict& overrides = py::dict());
/// The Python module of a Python processor, else None.
py::object python_module(const Processor& processor);

/// A render plan with the graph and the schedule it was compiled from. Compiling them again gives
/// the same plan (the compile is deterministic), which is how it pickles; scheduling again would
/// not (a search with a time budget), and the plan alone lacks its dead nodes' types and edges.
struct CompiledPlan : RenderPlan {
  Graph graph;
  Schedule schedule;
};

/// Pickled states are tuples (version, fields...), so that a later layout can still read (or
/// refuse by name) the states of earlier ones. Throws IoError [grafx.io.format] naming the class
/// unless `state` is a state of this version with `n_fields` fields.
constexpr int64_t kPickleVersion = 1;
void check_pickled_state(const py::tuple& state, size_t n_fields, const std::string& class_name);

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
