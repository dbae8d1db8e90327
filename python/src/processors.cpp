// Bindings of the processor layer: the registry, single processors, processor sets, parameters
// and their physical units.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/fit/demo.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/parameter_file.h>
#include <grafx/processors/parameter_values.h>
#include <grafx/render/parameters.h>

namespace grafx::python {

namespace {

// pybind11 holds processors by non-const shared pointers; Python only calls const methods.
using ProcessorHandle = std::shared_ptr<Processor>;

ProcessorHandle handle(std::shared_ptr<const Processor> processor) {
  return std::const_pointer_cast<Processor>(std::move(processor));
}

py::dict spec_to_python(const ParameterSpec& spec) {
  py::dict result;
  result["name"]          = spec.name;
  result["shape"]         = spec.shape;
  result["physical_name"] = spec.physical_name;
  result["unit"]          = spec.unit;
  result["description"]   = spec.description;
  result["raw_mapping"]   = spec.raw_mapping;
  result["element_names"] = spec.element_names;
  result["physical_min"]  = spec.physical_min;
  result["physical_max"]  = spec.physical_max;
  result["init_mean"]     = spec.init_mean;
  result["init_std"]      = spec.init_std;
  result["settable"]      = static_cast<bool>(spec.to_raw);
  return result;
}

const char* option_kind(OptionSpec::Kind kind) {
  switch (kind) {
    case OptionSpec::Kind::kFlag:
      return "flag";
    case OptionSpec::Kind::kNumber:
      return "number";
    case OptionSpec::Kind::kInteger:
      return "integer";
    case OptionSpec::Kind::kChoice:
      return "choice";
    case OptionSpec::Kind::kNames:
      return "names";
  }
  return "";
}

py::dict descriptor_to_python(const ProcessorDescriptor& d) {
  py::dict result;
  result["name"]       = d.name;
  result["letter"]     = d.letter ? std::string(1, d.letter) : std::string();  // "": none
  result["summary"]    = d.summary;
  result["grafx_name"] = d.grafx_name;
  py::list options;
  for (const OptionSpec& option : d.options) {
    py::dict o;
    o["name"]        = option.name;
    o["kind"]        = option_kind(option.kind);
    o["default"]     = option_to_python(option.default_value);
    o["accepted"]    = option.accepted();
    o["description"] = option.description;
    options.append(o);
  }
  result["options"] = options;
  return result;
}

/// Raw values of values given by raw or physical name (Python's `to_raw`), each for as many
/// nodes as its first dimension holds when it has the dimensions of [N, shape...], else one.
TensorDict raw_of(const std::vector<ParameterSpec>& specs, const TensorDict& values,
                  const std::string& processor) {
  TensorDict raw;
  for (const auto& [name, value] : values) {
    const NamedParameter named = find_parameter(specs, name, processor);
    if (raw.count(named.spec->name))
      throw ProcessorError("grafx.processor.parameters",
                           processor + ": got both the raw and the physical name of " +
                               named.spec->name + "; give one of them");
    const int64_t n = value.dim() == int64_t(value_shape(named, 1).size()) ? value.size(0) : 1;
    const at::TensorOptions options =
        value.is_floating_point() ? value.options() : at::TensorOptions(at::kFloat);
    raw[named.spec->name] = raw_values(named, value, n, options, processor);
  }
  return raw;
}

/// The raw parameters `forward` gets from values given by raw or physical name, for the batch
/// of `inputs` and in their dtype (grafx/processors/parameter_values.h).
TensorDict forward_parameters(const Processor& p, const std::vector<at::Tensor>& inputs,
                              const TensorDict& values) {
  if (inputs.empty() || !inputs[0].defined() || inputs[0].dim() != 3) {
    p.check_arguments(inputs, values);  // throws the inputs' error
    throw ProcessorError("grafx.processor.inputs", p.name() + ": expected N×C×L inputs");
  }
  return raw_parameters(p.parameter_specs(), p.name(), values, inputs[0].size(0),
                        inputs[0].options());
}

std::vector<ParameterSpec> specs_with_dry_wet(const Processor& processor) {
  return node_parameter_specs(processor, true);
}

}  // namespace

void bind_processors(py::module_& m) {
  m.def(
      "processor_registry",
      [] {
        py::list result;
        for (const ProcessorDescriptor& d : processor_registry())
          result.append(descriptor_to_python(d));
        return result;
      },
      "The registered processors, each a dict with `name`, `letter` (its chain letter, \"\" for "
      "none), `summary`, "
      "`grafx_name` and `options` (dicts with `name`, `kind`, `default`, `accepted`, "
      "`description`).");
  m.def(
      "describe_processor",
      [](const std::string& name, SampleRate sample_rate, bool detailed) {
        return describe_processor(processor_descriptor(name), sample_rate, detailed);
      },
      py::arg("name"), py::arg("sample_rate") = 44100, py::arg("detailed") = true,
      "A processor's description as text (as `grafx processors NAME` prints it): its summary, "
      "options and, if `detailed`, its parameters with their units and ranges at `sample_rate` "
      "(Hz). ProcessorError for an unknown name.");

  py::class_<Processor, ProcessorHandle>(m, "Processor", "One processor (batch-first, stateless).")
      .def_property_readonly("name", &Processor::name, "The processor's registered name.")
      .def_property_readonly("inlets", &Processor::inlets, "The names of its input ports.")
      .def_property_readonly("outlets", &Processor::outlets, "The names of its output ports.")
      .def(
          "parameter_specs",
          [](const Processor& p) {
            py::list result;
            for (const ParameterSpec& spec : p.parameter_specs())
              result.append(spec_to_python(spec));
            return result;
          },
          "Its parameters, each a dict with `name` (raw), `shape` (per node), `physical_name`, "
          "`unit`, `description`, `raw_mapping` (how raw values map, where not plain), "
          "`element_names` (where its elements mean different things), `physical_min`, "
          "`physical_max`, `init_mean`, `init_std` and `settable` (whether a physical value can "
          "be set).")
      .def(
          "forward",
          [](const Processor& p, const std::vector<at::Tensor>& inputs,
             const py::handle& parameters) {
            const TensorDict values = tensors_from_python(parameters, p.name() + " parameters");
            ProcessorOutput output;
            {
              py::gil_scoped_release released;
              const TensorDict raw = forward_parameters(p, inputs, values);
              p.check_arguments(inputs, raw);
              output = p.forward(inputs, raw);
            }
            return py::make_tuple(output.outputs, tensors_to_python(output.aux_losses));
          },
          py::arg("inputs"), py::arg("parameters"),
          "Processes one N×C×L tensor per inlet with `parameters` ({name: tensor}, raw or physical "
          "names, one row per node or one for all N); returns (outputs, aux_losses): one N×C×L "
          "tensor per outlet and {name: [N]} auxiliary losses. ProcessorError for wrong shapes or "
          "names.")
      .def(
          "to_physical",
          [](const Processor& p, const py::handle& raw) {
            return tensors_to_python(
                to_physical(specs_with_dry_wet(p), tensors_from_python(raw, p.name())));
          },
          py::arg("raw"),
          "Physical values ({physical_name: tensor}, in their units) of raw parameters ({name: "
          "tensor}).")
      .def(
          "to_raw",
          [](const Processor& p, const py::handle& physical) {
            return tensors_to_python(
                raw_of(specs_with_dry_wet(p), tensors_from_python(physical, p.name()), p.name()));
          },
          py::arg("physical"),
          "Raw parameters ({name: tensor}) of values given by physical (or raw) name; "
          "ProcessorError for an unknown name or a parameter without a physical mapping.")
      .def(
          "raw_parameters",
          [](const Processor& p, const py::handle& values, int64_t n, py::object dtype) {
            return tensors_to_python(raw_parameters(p.parameter_specs(), p.name(),
                                                    tensors_from_python(values, p.name()), n,
                                                    at::TensorOptions(dtype_from_python(dtype))));
          },
          py::arg("values"), py::arg("num_nodes"), py::arg("dtype"),
          "Raw parameters for `num_nodes` nodes in `dtype`: each parameter from `values` (raw or "
          "physical name) or its initial value.")
      .def(
          "temporal_support",
          [](const Processor& p, const py::handle& raw) {
            TemporalSupport s = p.temporal_support(tensors_from_python(raw, p.name()));
            return py::make_tuple(s.past_samples, s.future_samples);
          },
          py::arg("parameters"),
          "How far an output sample reaches into the input, for raw `parameters`: (past_samples, "
          "future_samples).");
  m.def(
      "make_processor",
      [](const std::string& name, SampleRate sample_rate, const py::dict& options) {
        const ProcessorOptions own = options_from_python(options, "processor \"" + name + "\"");
        NodeType type = processor_descriptor(name).make({sample_rate, own})->node_type();
        type.options  = own;
        return handle(make_processor(type, {sample_rate}));
      },
      py::arg("name"), py::arg("sample_rate"), py::arg("options"));

  py::class_<ProcessorSet>(m, "ProcessorSet", "The processors of a graph's types, for one rate.")
      .def(py::pickle(
          // The types as the text of a graph file without nodes (its writer and reader keep each
          // type's name, ports, processor and options), and the rate.
          // Then the overrides (Python modules pickled by Python), device and dtype; states
          // from before they were kept have two fields.
          [](const ProcessorSet& s) {
            return py::make_tuple(kPickleVersion, graph_to_json(Graph(s.types)), s.sample_rate,
                                  s.overrides, s.device, s.dtype);
          },
          [](const py::tuple& state) {
            const bool full = state.size() == 6;
            check_pickled_state(state, full ? 5 : 2, "ProcessorSet");
            const NodeTypes types =
                graph_from_json(state[1].cast<std::string>(), "pickled grafx.ProcessorSet").types();
            ProcessorSet set = make_processor_set(types, state[2].cast<SampleRate>(),
                                                  full ? state[3].cast<py::dict>() : py::dict());
            if (full) set.device = state[4], set.dtype = state[5];
            return set;
          }))
      .def_property(
          "device", [](const ProcessorSet& s) { return s.device; },
          [](ProcessorSet& s, py::object device) { s.device = std::move(device); },
          "The device parameters are made on by default (None: the CPU).")
      .def_property(
          "dtype", [](const ProcessorSet& s) { return s.dtype; },
          [](ProcessorSet& s, py::object dtype) { s.dtype = std::move(dtype); },
          "The dtype parameters are made in by default (None: float32).")
      .def_readonly("sample_rate", &ProcessorSet::sample_rate,
                    "The sample rate the processors are made for, in Hz.")
      .def("__getitem__",
           [](const ProcessorSet& s, const std::string& type) {
             auto it = s.processors.find(type);
             if (it == s.processors.end())
               throw py::key_error("no processor for node type \"" + type + "\"");
             return handle(it->second);
           })
      .def(
          "module",
          [](const ProcessorSet& s, const std::string& type) {
            auto it = s.processors.find(type);
            return it == s.processors.end() ? py::object(py::none()) : python_module(*it->second);
          },
          py::arg("type"), "The Python module that processes `type`, if one does (else None).")
      .def("__contains__", [](const ProcessorSet& s,
                              const std::string& type) { return s.processors.count(type) > 0; })
      .def(
          "types",
          [](const ProcessorSet& s) {
            std::vector<std::string> names;
            for (const auto& entry : s.processors) names.push_back(entry.first);
            return names;
          },
          "The node type names with a processor, sorted.");
  m.def(
      "make_processors",
      [](const Graph& graph, SampleRate sample_rate, const py::dict& overrides) {
        return make_processor_set(graph.types(), sample_rate, overrides);
      },
      py::arg("graph"), py::arg("sample_rate"), py::arg("overrides") = py::dict());

  m.def(
      "create_parameters",
      [](const Graph& graph, const ProcessorSet& set, uint64_t seed, py::object dtype,
         bool requires_grad) {
        ParameterOptions options{seed, dtype_from_python(dtype), requires_grad};
        return parameters_to_python(create_parameters(graph, set.processors, options));
      },
      py::arg("graph"), py::arg("processors"), py::arg("seed"), py::arg("dtype"),
      py::arg("requires_grad"));
  m.def(
      "musical_parameters",
      [](const Graph& graph, const ProcessorSet& set, uint64_t seed) {
        return parameters_to_python(
            musical_parameters(graph, set.processors, set.sample_rate, seed));
      },
      py::arg("graph"), py::arg("processors"), py::arg("seed"));
  m.def(
      "check_parameters",
      [](const Graph& graph, const ProcessorSet& set, const py::handle& parameters, int64_t batch,
         py::object dtype) {
        check_parameters(graph, set.processors, parameters_from_python(parameters), batch,
                         dtype_from_python(dtype));
      },
      py::arg("graph"), py::arg("processors"), py::arg("parameters"), py::arg("batch"),
      py::arg("dtype"));
  m.def(
      "to_physical",
      [](const Graph& graph, const ProcessorSet& set, const py::handle& parameters) {
        py::dict physical;  // by physical name
        for (const auto& [type, raw] : parameters_from_python(parameters)) {
          auto it = set.processors.find(type);
          if (it == set.processors.end())
            throw RenderError("grafx.render.parameters",
                              "parameters name type \"" + type + "\", which has no processor");
          physical[py::str(type)] =
              tensors_to_python(to_physical(specs_with_dry_wet(*it->second), raw.named()));
        }
        return physical;
      },
      py::arg("graph"), py::arg("processors"), py::arg("parameters"));
  m.def(
      "describe_parameters",
      [](const Graph& graph, const ProcessorSet& set, const py::handle& parameters) {
        return describe_parameters(graph, set.processors, parameters_from_python(parameters));
      },
      py::arg("graph"), py::arg("processors"), py::arg("parameters"));
  m.def(
      "load_parameters",
      [](const std::string& path, const Graph& graph) {
        ParameterFile file = read_parameter_file(path, graph);
        return py::make_tuple(parameters_to_python(file.parameters), file.sample_rate);
      },
      py::arg("path"), py::arg("graph"));
  m.def(
      "save_parameters",
      [](const std::string& path, const Graph& graph, const py::handle& parameters, bool overwrite,
         SampleRate sample_rate) {
        save_parameters(path, graph, parameters_from_python(parameters), overwrite, sample_rate);
      },
      py::arg("path"), py::arg("graph"), py::arg("parameters"), py::arg("overwrite"),
      py::arg("sample_rate"));
}

}  // namespace grafx::python
