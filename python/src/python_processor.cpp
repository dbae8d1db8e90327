// A Python module as a graph's processor: any torch.nn.Module (or callable) with GRAFX's
// processor interface, rendered in grafx's batched render next to the C++ processors.

#include "bindings.h"

#include <grafx/error.h>

#include <sstream>

namespace grafx::python {

namespace {

std::string describe(const py::handle& value) {
  return std::string(py::str(py::type::handle_of(value).attr("__name__")));
}

/// GRAFX's interface: `parameter_size()` gives {name: int | tuple} per node, `forward(*inputs,
/// **parameters)` (called as `module(...)`) takes N×C×L inputs, one per inlet, and N×shape
/// parameters, and returns the output (a tuple of them for several outlets), or (output,
/// intermediates): intermediates that are tensors of shape [N] are the node's auxiliary losses.
/// Its temporal support is `temporal_support(parameters)` -> (past, future) samples if it
/// has one, else unbounded: chunked renders then render it whole.
class PythonProcessor final : public Processor {
 public:
  PythonProcessor(const NodeType& type, py::object module)
      : type_(type), module_(std::move(module)) {
    const std::string where =
        "node type \"" + type_.name + "\" (a Python " + describe(module_) + ")";
    if (!py::hasattr(module_, "parameter_size") || !PyCallable_Check(module_.ptr()))
      throw ProcessorError("grafx.processor.python",
                           where +
                               ": expected a callable with GRAFX's processor interface "
                               "(forward(*inputs, **parameters) and parameter_size())");
    const py::object sizes = module_.attr("parameter_size")();
    if (!py::isinstance<py::dict>(sizes))
      throw ProcessorError("grafx.processor.python",
                           where +
                               ": parameter_size() should give a dict {name: shape}, but gave " +
                               describe(sizes));
    for (const auto& [key, size] : sizes.cast<py::dict>()) {
      const std::string name = py::str(key);
      std::vector<int64_t> shape;
      if (py::isinstance<py::int_>(size)) {
        shape = {size.cast<int64_t>()};
      } else if (py::isinstance<py::tuple>(size) || py::isinstance<py::list>(size)) {
        for (const auto& n : size) {
          if (!py::isinstance<py::int_>(n))
            throw ProcessorError("grafx.processor.python",
                                 where + ": parameter \"" + name + "\" has a shape of " +
                                     std::string(py::repr(size)) + "; expected whole numbers");
          shape.push_back(n.cast<int64_t>());
        }
      } else {
        throw ProcessorError("grafx.processor.python",
                             where + ": parameter \"" + name + "\" has a shape of " +
                                 std::string(py::repr(size)) +
                                 "; expected an int or a tuple (nested processors, such as "
                                 "GRAFX's SerialChain, are not taken: give each its own type)");
      }
      for (int64_t n : shape)
        if (n < 1)
          throw ProcessorError("grafx.processor.python",
                               where + ": parameter \"" + name + "\" has a shape of " +
                                   std::string(py::repr(size)) + "; expected sizes of at least 1");
      if (is_wet_amount(name))
        throw ProcessorError("grafx.processor.python",
                             where +
                                 ": \"dry_wet\" is the graph's own wet amount; name the "
                                 "parameter otherwise");
      ParameterSpec spec = ParameterSpec::raw(name, shape).about("a Python processor's parameter");
      spec.physical(name, "raw");
      specs_.push_back(std::move(spec));
    }
  }

  ~PythonProcessor() override {
    if (!Py_IsInitialized()) {  // after Python's end: nothing left to release it to
      module_.release();
      return;
    }
    py::gil_scoped_acquire gil;  // a render's thread may drop the last reference
    module_ = py::object();
  }

  std::string name() const override { return type_.name; }
  std::vector<std::string> inlets() const override { return type_.inlets; }
  std::vector<std::string> outlets() const override { return type_.outlets; }
  std::vector<ParameterSpec> parameter_specs() const override { return specs_; }

  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override {
    py::gil_scoped_acquire gil;  // renders run without it
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    py::dict kwargs;
    for (const auto& [name, value] : parameters) kwargs[py::str(name)] = py::cast(value);
    py::object result  = module_(*args, **kwargs);
    py::object outputs = result;
    ProcessorOutput output;
    if (py::isinstance<py::tuple>(result) && py::len(result) == 2 &&
        py::isinstance<py::dict>(result.cast<py::tuple>()[1])) {
      outputs         = result.cast<py::tuple>()[0];
      const int64_t n = inputs.empty() ? 0 : inputs[0].size(0);
      for (const auto& [key, value] : result.cast<py::tuple>()[1].cast<py::dict>())
        if (THPVariable_Check(value.ptr())) {
          at::Tensor loss = value.cast<at::Tensor>();
          if (loss.dim() == 1 && loss.size(0) == n) output.aux_losses[py::str(key)] = loss;
        }
    }
    if (THPVariable_Check(outputs.ptr())) {
      output.outputs.push_back(outputs.cast<at::Tensor>());
    } else if (py::isinstance<py::tuple>(outputs) || py::isinstance<py::list>(outputs)) {
      for (const auto& y : outputs) {
        if (!THPVariable_Check(y.ptr())) refuse_outputs(inputs, "a " + describe(y) + " among them");
        output.outputs.push_back(y.cast<at::Tensor>());
      }
    } else {
      refuse_outputs(inputs, "a " + describe(outputs));
    }
    if (output.outputs.size() != type_.outlets.size())
      refuse_outputs(inputs, std::to_string(output.outputs.size()) + " of them");
    for (const at::Tensor& y : output.outputs)
      if (y.dim() != 3 || y.size(0) != inputs[0].size(0) || y.size(2) != inputs[0].size(2))
        refuse_outputs(inputs, "one of shape " + shape_text(y));
    return output;
  }

  TemporalSupport temporal_support(const TensorDict& parameters) const override {
    py::gil_scoped_acquire gil;
    if (!py::hasattr(module_, "temporal_support"))
      return {TemporalSupport::kUnbounded, TemporalSupport::kUnbounded};
    py::dict raw;
    for (const auto& [name, value] : parameters) raw[py::str(name)] = py::cast(value);
    const auto [past, future] =
        module_.attr("temporal_support")(raw).cast<std::pair<int64_t, int64_t>>();
    return {past, future};
  }

  const py::object& module() const { return module_; }

 private:
  static std::string shape_text(const at::Tensor& y) {
    std::ostringstream text;
    text << y.sizes();
    return text.str();
  }

  [[noreturn]] void refuse_outputs(const std::vector<at::Tensor>& inputs,
                                   const std::string& got) const {
    const std::string shape = inputs.empty() ? "N×C×L"
                                             : std::to_string(inputs[0].size(0)) + "×C×" +
                                                   std::to_string(inputs[0].size(2));
    throw ProcessorError("grafx.processor.python",
                         "node type \"" + type_.name + "\" (a Python " + describe(module_) +
                             "): expected " + std::to_string(type_.outlets.size()) +
                             " output tensor(s) of " + shape + " (one per outlet), but got " + got);
  }

  NodeType type_;
  py::object module_;
  std::vector<ParameterSpec> specs_;
};

}  // namespace

ProcessorSet make_processor_set(const NodeTypes& types, SampleRate sample_rate,
                                const py::dict& overrides) {
  ProcessorSet set{{}, sample_rate, types, overrides};
  ProcessorConfig config{sample_rate};
  config.types = &set.types;
  for (TypeId t = NodeTypes::kMix + 1; t < set.types.size(); ++t) {
    const NodeType& type = set.types[t];
    if (!overrides.contains(type.name)) {
      set.processors[type.name] = make_processor(type, config);
      continue;
    }
    const py::object chosen = overrides[py::str(type.name)];
    if (py::isinstance<py::tuple>(chosen)) {  // (registered processor, options) for this type
      const py::tuple named = chosen.cast<py::tuple>();
      NodeType as           = type;
      as.processor          = named[0].cast<std::string>();
      as.options = options_from_python(named[1].cast<py::dict>(), "type \"" + type.name + "\"");
      set.processors[type.name] = make_processor(as, config);
    } else {
      set.processors[type.name] = std::make_shared<PythonProcessor>(type, chosen);
    }
  }
  return set;
}

py::object python_module(const Processor& processor) {
  const auto* python = dynamic_cast<const PythonProcessor*>(&processor);
  return python ? python->module() : py::none();
}

}  // namespace grafx::python
