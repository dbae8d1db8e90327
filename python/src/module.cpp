// The extension module grafx._grafx; the package grafx (python/grafx) wraps it.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/memory.h>

#include <torch/csrc/Dtype.h>

namespace grafx::python {

ProcessorOptions options_from_python(const py::dict& options, const std::string& where) {
  ProcessorOptions result;
  for (const auto& item : options) {
    const std::string name = py::str(item.first);
    const py::handle value = item.second;
    if (py::isinstance<py::bool_>(value)) {
      result[name] = value.cast<bool>();
    } else if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) {
      result[name] = value.cast<double>();
    } else if (py::isinstance<py::str>(value)) {
      result[name] = value.cast<std::string>();
    } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      std::vector<std::string> names;
      for (const auto& element : value) {
        if (!py::isinstance<py::str>(element))
          throw ProcessorError("grafx.processor.options",
                               where + ": option \"" + name + "\": a list of names must hold str");
        names.push_back(element.cast<std::string>());
      }
      result[name] = names;
    } else {
      throw ProcessorError("grafx.processor.options",
                           where + ": option \"" + name + "\": expected a bool, number, str or " +
                               "list of str, but got " + std::string(py::str(value.get_type())));
    }
  }
  return result;
}

py::object option_to_python(const OptionValue& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

py::dict options_to_python(const ProcessorOptions& options) {
  py::dict result;
  for (const auto& [name, value] : options) result[py::str(name)] = option_to_python(value);
  return result;
}

at::ScalarType dtype_from_python(const py::handle& dtype) {
  if (!THPDtype_Check(dtype.ptr()))
    throw py::type_error("expected a torch.dtype, but got " +
                         std::string(py::str(dtype.get_type())));
  return reinterpret_cast<THPDtype*>(dtype.ptr())->scalar_type;
}

TensorDict tensors_from_python(const py::handle& mapping, const std::string& where) {
  if (!py::hasattr(mapping, "items"))
    throw RenderError("grafx.render.parameters",
                      where + ": expected a mapping of names to tensors, but got " +
                          std::string(py::str(mapping.get_type())));
  TensorDict result;
  for (const auto& item : mapping.attr("items")()) {
    auto pair              = item.cast<py::tuple>();
    const std::string name = py::str(pair[0]);
    if (!THPVariable_Check(pair[1].ptr()))
      throw RenderError("grafx.render.parameters", where + ": \"" + name +
                                                       "\" is not a tensor but " +
                                                       std::string(py::str(pair[1].get_type())));
    result[name] = pair[1].cast<at::Tensor>();
  }
  return result;
}

py::dict tensors_to_python(const TensorDict& tensors) {
  py::dict result;
  for (const auto& [name, tensor] : tensors) result[py::str(name)] = tensor;
  return result;
}

Parameters parameters_from_python(const py::handle& parameters) {
  if (!py::hasattr(parameters, "items"))
    throw RenderError("grafx.render.parameters",
                      "parameters: expected a mapping of types to mappings of tensors, but got " +
                          std::string(py::str(parameters.get_type())));
  Parameters result;
  for (const auto& item : parameters.attr("items")()) {
    auto pair              = item.cast<py::tuple>();
    const std::string type = py::str(pair[0]);
    result[type]           = TypeParameters::from_named(
                  tensors_from_python(pair[1], "parameters of type \"" + type + "\""));
  }
  return result;
}

void check_pickled_state(const py::tuple& state, size_t n_fields, const std::string& class_name) {
  const bool known = state.size() == n_fields + 1 && py::isinstance<py::int_>(state[0]) &&
                     state[0].cast<int64_t>() == kPickleVersion;
  if (!known)
    throw IoError("grafx.io.format",
                  "pickled grafx." + class_name + ": expected a state of version " +
                      std::to_string(kPickleVersion) + " with " + std::to_string(n_fields) +
                      " fields, but got " + std::string(py::repr(state)).substr(0, 200));
}

py::dict parameters_to_python(const Parameters& parameters) {
  py::dict result;
  for (const auto& [type, values] : parameters)
    result[py::str(type)] = tensors_to_python(values.named());
  return result;
}

namespace {

// A layer's error class: the Python class and whether a thrown Error belongs to it.
struct ErrorLayer {
  py::handle python_class;
  bool (*matches)(const Error&);
};

template <class E>
ErrorLayer error_layer(py::module_& m, const char* name, py::handle base, const char* doc) {
  // Leaked on purpose: the classes live as long as the interpreter.
  auto* type            = new py::exception<E>(m, name, base.ptr());
  type->attr("__doc__") = doc;
  return {*type, [](const Error& e) {
            if constexpr (std::is_same_v<E, Error>)
              return true;
            else
              return dynamic_cast<const E*>(&e) != nullptr;
          }};
}

}  // namespace

// grafx::Error and its layers as Python exceptions carrying `code` and `message`.
void bind_errors(py::module_& m) {
  // The translator must be a plain function: the classes live in statics, made once.
  static const ErrorLayer base = error_layer<Error>(
      m, "Error", PyExc_RuntimeError,
      "A grafx error: `code` is its stable code (docs/errors.md, e.g. \"grafx.graph.cycle\"), "
      "`message` the message without it; each layer raises a subclass.");
  static const std::vector<ErrorLayer> layers = {
      error_layer<GraphError>(m, "GraphError", base.python_class,
                              "A graph error (grafx.graph.*): an unknown node, type or port, a "
                              "cycle, a repeated edge, an unrenderable graph."),
      error_layer<ScheduleError>(m, "ScheduleError", base.python_class,
                                 "A scheduling error (grafx.schedule.*): an unknown method, a bad "
                                 "fixed order or search setting."),
      error_layer<RenderError>(m, "RenderError", base.python_class,
                               "A render error (grafx.render.*): sources or parameters that do not "
                               "fit the plan, non-finite values, tracing."),
      error_layer<ProcessorError>(m, "ProcessorError", base.python_class,
                                  "A processor error (grafx.processor.*): an unknown processor, "
                                  "option or parameter, inputs of the wrong shape."),
      error_layer<IoError>(m, "IoError", base.python_class,
                           "A file error (grafx.io.*): a file that cannot be read or written, a "
                           "malformed file, one that exists already."),
      error_layer<FitError>(
          m, "FitError", base.python_class,
          "A fitting error (grafx.fit.*): bad options or data, a fit that diverged."),
      error_layer<LossError>(m, "LossError", base.python_class,
                             "A loss error (grafx.loss.*): bad loss options, or estimate and "
                             "target that do not match."),
  };
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      py::handle cls = base.python_class;
      for (const ErrorLayer& layer : layers)
        if (layer.matches(e)) cls = layer.python_class;
      py::object exception      = cls(e.what());
      exception.attr("code")    = e.code();
      exception.attr("message") = e.message();
      PyErr_SetObject(cls.ptr(), exception.ptr());
    }
  });
}

}  // namespace grafx::python

PYBIND11_MODULE(_grafx, m) {
  m.doc() = "grafx: differentiable audio processing graphs (C++ core; see the package grafx)";
  m.attr("__version__") = GRAFX_VERSION;
  namespace gp          = grafx::python;
  grafx::keep_freed_memory();  // renders allocate and free the same signals every step
  gp::bind_errors(m);
  gp::bind_graph(m);
  gp::bind_processors(m);
  gp::bind_render(m);
  gp::bind_loss_and_fit(m);
  gp::bind_io(m);
}
