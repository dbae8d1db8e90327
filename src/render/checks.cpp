#include "render/checks.h"

#include "common/tensors.h"

#include <grafx/error.h>
#include <grafx/text.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <sstream>

namespace grafx::detail {

NodeExtras NodeExtras::of(const Graph& graph) {
  NodeExtras extras;
  extras.dry_wet.assign(size_t(graph.types().size()), false);
  extras.automated.assign(size_t(graph.types().size()), {});
  extras.points = graph.automation().points;
  for (NodeId id : graph.nodes()) {
    const Node& node = graph.node(id);
    if (node.dry_wet) extras.dry_wet[size_t(node.type)] = true;
    extras.automated[size_t(node.type)].insert(node.automated.begin(), node.automated.end());
  }
  return extras;
}

NodeExtras NodeExtras::of(const RenderPlan& plan) {
  return {plan.dry_wet_types, plan.automated_types, plan.automation.points};
}

std::vector<ParameterSpec> type_parameter_specs(const Processor& processor, const std::string& type,
                                                TypeId t, const NodeExtras& extras) {
  std::vector<ParameterSpec> specs = node_parameter_specs(processor, extras.dry_wet[size_t(t)]);
  const size_t n_own               = specs.size();
  for (const std::string& name : extras.automated[size_t(t)]) {
    auto spec = std::find_if(specs.begin(), specs.begin() + long(n_own),
                             [&](const ParameterSpec& s) { return s.name == name; });
    if (spec == specs.begin() + long(n_own) || spec->automation.empty()) {
      std::vector<std::string> automatable;
      for (size_t i = 0; i < n_own; ++i)
        if (!specs[i].automation.empty()) automatable.push_back(specs[i].name);
      throw RenderError(
          "grafx.render.automation",
          "a node of type \"" + type + "\" automates \"" + name + "\", which " +
              (spec == specs.begin() + long(n_own) ? std::string("is not one of its parameters")
                                                   : processor.name() + " cannot automate") +
              "; automatable: " + join(automatable, "none"));
    }
    specs.push_back(curve_spec(*spec, extras.points));
  }
  return specs;
}

void match_channels(std::vector<at::Tensor>& signals, int64_t channel_dim,
                    const std::function<std::string()>& where) {
  int64_t widest = 1;
  for (const auto& x : signals) widest = std::max(widest, x.size(channel_dim));
  for (auto& x : signals) {
    if (x.size(channel_dim) == widest) continue;
    if (x.size(channel_dim) != 1)
      throw RenderError("grafx.render.channels",
                        where() + " receives signals of " +
                            std::to_string(std::min(x.size(channel_dim), widest)) + " and " +
                            std::to_string(std::max(x.size(channel_dim), widest)) +
                            " channels (only mono spreads to more channels)");
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape[size_t(channel_dim)] = widest;
    x                          = x.expand(shape);
  }
}

void check_finite_parameters(const Parameters& parameters,
                             const std::map<std::string, bool>& per_item) {
  std::vector<at::Tensor> any_bad;  // one reduction each, read once (one wait on a GPU)
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, tensor] : tensors.named())
      any_bad.push_back((~tensor.detach().isfinite()).any());
  if (any_bad.empty() || !at::stack(any_bad).any().item<bool>()) return;
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, tensor] : tensors.named()) {
      const bool items = per_item.count(type) && per_item.at(type);
      at::Tensor bad   = ~tensor.detach().isfinite();
      if (!bad.any().item<bool>()) continue;
      at::Tensor first = bad.nonzero()[0];  // [batch item,] row, ...
      std::string row  = items ? "batch item " + std::to_string(first[0].item<int64_t>()) +
                                    ", row " + std::to_string(first[1].item<int64_t>())
                               : "row " + std::to_string(first[0].item<int64_t>());
      throw RenderError("grafx.render.non_finite", "parameter \"" + name + "\" of type \"" + type +
                                                       "\" holds NaN or infinity (" + row +
                                                       " of the type's nodes in id order)");
    }
}

bool check_sources(int64_t n_sources, const at::Tensor& sources, bool check_finite) {
  if (!sources.defined() || (sources.dim() != 3 && sources.dim() != 4))
    throw RenderError("grafx.render.sources",
                      "expected sources of shape K×C×L or B×K×C×L, but got " +
                          (sources.defined() ? shape_text(sources.sizes()) : std::string("none")));
  if (!at::isFloatingType(sources.scalar_type()))
    throw RenderError("grafx.render.sources", "expected floating-point sources, but got " +
                                                  dtype_name(sources.scalar_type()));
  const bool batched = sources.dim() == 4;
  const int64_t k    = sources.size(batched ? 1 : 0);
  if (k != n_sources)
    throw RenderError("grafx.render.sources", "expected " + std::to_string(n_sources) + " source" +
                                                  (n_sources == 1 ? "" : "s") +
                                                  " (one per `in` node), but got " +
                                                  std::to_string(k) + " (sources of shape " +
                                                  shape_text(sources.sizes()) + ")");
  if (sources.size(-1) == 0 || sources.size(-2) == 0)
    throw RenderError(
        "grafx.render.sources",
        "expected sources with channels and samples, but got " + shape_text(sources.sizes()));
  if (check_finite) {
    at::Tensor bad = non_finite_rows(sources, batched ? 2 : 1);  // [B,] K
    if (bad.any().item<bool>()) {
      at::Tensor which  = bad.nonzero()[0];
      std::string where = batched ? "batch item " + std::to_string(which[0].item<int64_t>()) +
                                        ", source " + std::to_string(which[1].item<int64_t>())
                                  : "source " + std::to_string(which[0].item<int64_t>());
      throw RenderError("grafx.render.non_finite",
                        where + " has non-finite samples (NaN or infinity)");
    }
  }
  return batched;
}

std::map<std::string, bool> check_parameters(const NodeTypes& types,
                                             const std::vector<int64_t>& counts,
                                             const NodeExtras& extras, const Processors& processors,
                                             const Parameters& parameters, int64_t batch,
                                             at::ScalarType dtype, at::Device device,
                                             const std::string& where) {
  auto fail = [&](const std::string& code, const std::string& message) {
    throw RenderError(code, where + message);
  };
  std::map<std::string, bool> per_item;
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t) {
    const std::string& type = types.name(t);
    const int64_t n         = counts[size_t(t)];
    auto given              = parameters.find(type);
    if (n == 0) {
      if (given != parameters.end())
        fail("grafx.render.parameters",
             "parameters given for type \"" + type + "\", which has no nodes in the graph");
      continue;
    }
    auto processor = processors.find(type);
    if (processor == processors.end())
      fail("grafx.render.processors",
           "no processor for node type \"" + type + "\" (" + std::to_string(n) + " nodes)");
    if (processor->second->inlets() != types[t].inlets ||
        processor->second->outlets() != types[t].outlets)
      fail("grafx.render.processors",
           "the processor for \"" + type + "\" has other ports than the graph's type");
    auto specs = type_parameter_specs(*processor->second, type, t, extras);
    if (given == parameters.end() && specs.empty()) {  // a type without parameters
      per_item[type] = false;
      continue;
    }
    if (given == parameters.end())
      fail("grafx.render.parameters",
           "missing parameters for type \"" + type + "\" (" + std::to_string(n) + " nodes)");
    auto unknown = [&](const std::string& name, const std::vector<ParameterSpec>& known) {
      std::vector<std::string> names;
      for (const auto& spec : known) names.push_back(spec.name);
      if (std::find(names.begin(), names.end(), name) == names.end())
        fail("grafx.render.parameters",
             type + ": unknown parameter \"" + name + "\"; expected: " + join(names, "none"));
    };
    for (const auto& [name, tensor] : given->second.own)  // no wet amount or curve among them
      unknown(name, processor->second->parameter_specs());
    for (const auto& [name, tensor] : given->second.named()) unknown(name, specs);
    std::optional<bool> item;
    for (const auto& spec : specs) {
      const at::Tensor* found = given->second.find(spec.name);
      if (!found)
        fail("grafx.render.parameters", type + ": missing parameter \"" + spec.name + "\"");
      const at::Tensor& p = *found;
      std::vector<int64_t> shared{n};
      shared.insert(shared.end(), spec.shape.begin(), spec.shape.end());
      std::vector<int64_t> batched{batch};
      batched.insert(batched.end(), shared.begin(), shared.end());
      bool is_shared   = p.defined() && p.sizes() == at::IntArrayRef(shared);
      bool is_batched  = batch > 0 && p.defined() && p.sizes() == at::IntArrayRef(batched);
      std::string name = type + "." + spec.name;
      if (!is_shared && !is_batched)
        fail("grafx.render.parameters",
             name + ": expected shape " + shape_text(shared) +
                 (batch > 0 ? " (or " + shape_text(batched) + ", one set per batch item)" : "") +
                 ", but got " + (p.defined() ? shape_text(p.sizes()) : std::string("none")));
      if (item && *item != is_batched)
        fail("grafx.render.parameters",
             name + ": parameters of one type must all be shared or all per batch item");
      item = is_batched;
      if (p.scalar_type() != dtype)
        fail("grafx.render.parameters", name + ": expected " + dtype_name(dtype) +
                                            " like the sources, but got " +
                                            dtype_name(p.scalar_type()));
      if (p.device() != device)
        fail("grafx.render.parameters", name + ": expected device " + device.str() +
                                            " like the sources, but got " + p.device().str());
    }
    per_item[type] = item.value_or(false);
  }
  for (const auto& [type, tensors] : parameters)
    if (!types.contains(type) || types.id(type) <= NodeTypes::kMix)
      fail("grafx.render.parameters", "parameters given for type \"" + type +
                                          "\", which is not a processor type of the graph");
  return per_item;
}

std::set<NodeId> live_nodes(const Graph& graph, const std::vector<NodeId>& order) {
  std::set<NodeId> live;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool reaches = graph.node(*it).type == NodeTypes::kOut;
    for (NodeId next : graph.successors(*it)) reaches = reaches || live.count(next);
    if (reaches) live.insert(*it);
  }
  return live;
}

std::map<NodeId, int64_t> parameter_rows(const Graph& graph) {
  std::map<NodeId, int64_t> rows;
  std::vector<int64_t> seen(size_t(graph.types().size()), 0);
  for (NodeId id : graph.nodes()) rows[id] = seen[size_t(graph.node(id).type)]++;
  return rows;
}

}  // namespace grafx::detail
