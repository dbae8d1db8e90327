#include <grafx/error.h>
#include <grafx/hash.h>
#include <grafx/render/parameters.h>
#include <grafx/text.h>

#include "render/checks.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>

namespace grafx {
namespace {

std::string number(double value) { return significant_digits(value, 4); }

}  // namespace

std::string automated_parameter(const std::string& name) {
  const std::string suffix = curve_name("");
  const bool curve         = name.size() > suffix.size() &&
                     name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  return curve ? name.substr(0, name.size() - suffix.size()) : std::string();
}

bool node_has(const Node& node, const std::string& parameter) {
  if (is_wet_amount(parameter)) return node.dry_wet;
  const std::string base = automated_parameter(parameter);
  const auto& automated  = node.automated;
  if (!base.empty()) return std::binary_search(automated.begin(), automated.end(), base);
  return !std::binary_search(automated.begin(), automated.end(), parameter);
}

Processors renderable_processors(const Graph& graph, const ProcessorConfig& config) {
  graph.check();
  Processors processors = make_processors(graph.types(), config);
  create_parameters(graph, processors, {0, at::kFloat, false});
  return processors;
}

Parameters create_parameters(const Graph& graph, const Processors& processors,
                             const ParameterOptions& options) {
  Parameters parameters;
  auto counts = graph.count_per_type();
  for (TypeId t = NodeTypes::kMix + 1; t < graph.types().size(); ++t) {
    if (counts[size_t(t)] == 0) continue;
    const std::string& type = graph.types().name(t);
    auto processor          = processors.find(type);
    if (processor == processors.end())
      throw RenderError("grafx.render.processors", "no processor for node type \"" + type + "\"");
    for (const auto& spec : graph_parameter_specs(graph, type, *processor->second)) {
      if (!automated_parameter(spec.name).empty()) continue;  // with_curves below
      std::vector<int64_t> shape{counts[size_t(t)]};
      shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
      const std::string key = type + "." + spec.name;  // each parameter its own stream
      at::Generator generator =
          at::detail::createCPUGenerator(options.seed ^ fnv1a(key.data(), key.size()));
      at::Tensor values = at::randn(shape, generator, at::TensorOptions().dtype(at::kDouble));
      values            = (values * spec.init_std + spec.init_mean).to(options.dtype);
      parameters[type][spec.name] = values.set_requires_grad(options.requires_grad);
    }
  }
  return with_curves(graph, processors, std::move(parameters));
}

Parameters with_curves(const Graph& graph, const Processors& processors, Parameters parameters) {
  for (auto& [type, values] : parameters) {
    if (!graph.types().contains(type) || !processors.count(type)) continue;
    std::set<std::string> automated;
    for (const auto& spec : graph_parameter_specs(graph, type, *processors.at(type))) {
      const std::string parameter = automated_parameter(spec.name);
      if (parameter.empty()) continue;
      automated.insert(parameter);
      const at::Tensor* value = values.find(parameter);  // a curve starts constant, at the value
      if (values.curves.count(parameter) || !value) continue;
      std::vector<int64_t> points = value->sizes().vec();
      points.insert(points.begin() + 1, spec.shape[0]);
      values.curves[parameter] =
          value->detach().unsqueeze(1).expand(points).clone().set_requires_grad(
              value->requires_grad());
    }
    for (auto it = values.curves.begin(); it != values.curves.end();)
      it = automated.count(it->first) ? std::next(it) : values.curves.erase(it);
  }
  return parameters;
}

int64_t row_in_type(const Graph& graph, NodeId id) {
  const std::vector<NodeId> of = graph.nodes_of_type(graph.type_name(id));
  return std::find(of.begin(), of.end(), id) - of.begin();
}

void set_physical(const Graph& graph, const Processor& processor, Parameters& parameters, NodeId id,
                  const TensorDict& settings) {
  c10::NoGradGuard no_grad;
  const std::string& type = graph.type_name(id);
  const int64_t row       = row_in_type(graph, id);
  for (const auto& spec : graph_parameter_specs(graph, type, processor)) {
    auto setting = settings.find(spec.physical_name);
    if (setting == settings.end() || !spec.to_raw) continue;
    at::Tensor& raw = parameters.at(type).at(spec.name);
    raw[row] =
        spec.to_raw(setting->second.to(at::kDouble).unsqueeze(0)).squeeze(0).to(raw.scalar_type());
  }
}

std::vector<ParameterSpec> graph_parameter_specs(const Graph& graph, const std::string& type,
                                                 const Processor& processor) {
  return detail::type_parameter_specs(processor, type, graph.types().id(type),
                                      detail::NodeExtras::of(graph));
}

void check_parameters(const Graph& graph, const Processors& processors,
                      const Parameters& parameters, int64_t batch, at::ScalarType dtype) {
  detail::check_parameters(graph.types(), graph.count_per_type(), detail::NodeExtras::of(graph),
                           processors, parameters, batch, dtype, at::kCPU);
}

std::string describe_parameters(const Graph& graph, const Processors& processors,
                                const Parameters& parameters) {
  std::ostringstream s;
  for (const auto& [type, values] : parameters) {
    auto ids = graph.nodes_of_type(type);
    for (size_t row = 0; row < ids.size(); ++row) {
      const Node& node = graph.node(ids[row]);
      s << graph.describe(ids[row]) << (node.bypassed ? " (bypassed)" : "") << "\n";
      for (const auto& spec : graph_parameter_specs(graph, type, *processors.at(type))) {
        if (!node_has(node, spec.name)) continue;
        const at::Tensor& raw = values.at(spec.name);
        at::Tensor value      = spec.to_physical(raw).detach().to(at::kDouble);
        bool per_item         = raw.dim() == int64_t(spec.shape.size()) + 2;
        value = (per_item ? value[0] : value)[int64_t(row)];  // per batch item: the first item
        s << "  " << spec.physical_name << " = ";
        if (value.numel() == 1) {
          s << number(value.item<double>());
        } else {
          s << "[" << value.numel() << " values: " << number(value.min().item<double>()) << " .. "
            << number(value.max().item<double>()) << ", mean "
            << number(value.mean().item<double>()) << "]";
        }
        s << (spec.unit.empty() ? "" : " " + spec.unit) << "\n";
      }
    }
  }
  return s.str();
}

Parameters cloned_parameters(const Parameters& parameters, bool requires_grad) {
  return map_parameters(parameters,
                        [&](const std::string&, const std::string&, const at::Tensor& p) {
                          return p.detach().clone().set_requires_grad(requires_grad);
                        });
}

Parameters parameters_without(const Graph& graph, const Parameters& parameters,
                              const std::vector<NodeId>& removed) {
  Parameters kept;
  for (const auto& [type, values] : parameters) {
    std::vector<int64_t> rows;
    std::vector<const Node*> remaining;
    const std::vector<NodeId> ids = graph.nodes_of_type(type);
    for (size_t row = 0; row < ids.size(); ++row)
      if (std::find(removed.begin(), removed.end(), ids[row]) == removed.end()) {
        rows.push_back(int64_t(row));
        remaining.push_back(&graph.node(ids[row]));
      }
    if (rows.empty()) continue;
    auto kept_rows = [&](const at::Tensor& t) {
      return t.index_select(0, at::tensor(rows, at::kLong).to(t.device()));
    };
    auto any_has = [&](const std::string& name) {
      return std::any_of(remaining.begin(), remaining.end(),
                         [&](const Node* node) { return node_has(*node, name); });
    };
    TypeParameters& left = kept[type];
    for (const auto& [name, t] : values.own) left.own[name] = kept_rows(t);
    // a wet amount or curve while a remaining node has it
    if (values.wet.defined() && any_has(dry_wet_spec().name)) left.wet = kept_rows(values.wet);
    for (const auto& [name, t] : values.curves)
      if (any_has(curve_name(name))) left.curves[name] = kept_rows(t);
  }
  return kept;
}

}  // namespace grafx
