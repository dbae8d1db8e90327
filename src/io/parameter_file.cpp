#include <grafx/error.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/safetensors.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace grafx {
namespace {

using json = nlohmann::json;

std::string id_list(const std::vector<NodeId>& ids) { return json(ids).dump(); }

/// A tensor as nested JSON lists (a scalar for one element).
json to_json(const at::Tensor& t) {
  at::Tensor d = t.detach().to(at::kCPU, at::kDouble).contiguous();
  if (d.numel() == 1) return d.item<double>();
  if (d.dim() == 1)
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  json list = json::array();
  for (int64_t i = 0; i < d.size(0); ++i) list.push_back(to_json(d[i]));
  return list;
}

}  // namespace

void save_parameters(const std::string& path, const Graph& graph, const Parameters& parameters,
                     bool overwrite, SampleRate sample_rate) {
  TensorDict tensors;
  std::map<std::string, std::string> metadata{{"format", "grafx.parameters"}, {"version", "1"}};
  if (sample_rate > 0) metadata["sample_rate"] = std::to_string(sample_rate);
  for (const auto& [type, named] : parameters) {
    metadata["node_ids." + type] = id_list(graph.nodes_of_type(type));
    for (const auto& [name, tensor] : named) tensors[type + "." + name] = tensor;
  }
  save_safetensors(path, tensors, metadata, overwrite);
}

ParameterFile read_parameter_file(const std::string& path, const Graph& graph) {
  SafetensorsFile file = load_safetensors(path);
  auto format          = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != "grafx.parameters")
    throw IoError("grafx.io.format", path +
                                         ": not a grafx parameter file (metadata \"format\" is not "
                                         "\"grafx.parameters\")");
  ParameterFile result;
  Parameters& parameters = result.parameters;
  for (const auto& [key, tensor] : file.tensors) {
    auto dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size())
      throw IoError("grafx.io.format",
                    path + ": tensor \"" + key + "\" is not named <type>.<parameter>");
    parameters[key.substr(0, dot)][key.substr(dot + 1)] = tensor;
  }
  for (const auto& [type, named] : parameters) {
    if (!graph.types().contains(type))
      throw IoError("grafx.io.mismatch",
                    path + ": parameters of type \"" + type + "\", which the graph does not have");
    std::vector<NodeId> graph_ids = graph.nodes_of_type(type);
    auto ids                      = file.metadata.find("node_ids." + type);
    if (ids == file.metadata.end()) continue;
    // Compared as lists of ids, so any JSON spelling reads ("[2, 9, 16]" from Python too).
    json listed = json::parse(ids->second, nullptr, /*allow_exceptions=*/false);
    bool ids_ok = listed.is_array();
    for (const auto& id : listed) ids_ok = ids_ok && id.is_number_integer();
    if (!ids_ok)
      throw IoError("grafx.io.format", path + ": metadata \"node_ids." + type + "\" is \"" +
                                           ids->second + "\"; expected a JSON list of node ids");
    if (listed.get<std::vector<NodeId>>() != graph_ids)
      throw IoError("grafx.io.mismatch", path + ": " + type + " parameters are for nodes " +
                                             ids->second + ", but the graph's " + type +
                                             " nodes are " + id_list(graph_ids));
  }
  auto rate = file.metadata.find("sample_rate");
  if (rate == file.metadata.end()) return result;
  try {
    size_t used     = 0;
    long long value = std::stoll(rate->second, &used);
    if (used == rate->second.size() && value > 0) {
      result.sample_rate = SampleRate(value);
      return result;
    }
  } catch (const std::logic_error&) {
  }
  throw IoError("grafx.io.format", path + ": metadata \"sample_rate\" is \"" + rate->second +
                                       "\"; expected a positive whole number of Hz");
}

Parameters load_parameters(const std::string& path, const Graph& graph) {
  return read_parameter_file(path, graph).parameters;
}

std::string physical_parameters_json(const Graph& graph, const Processors& processors,
                                     const Parameters& parameters) {
  json nodes = json::array();
  std::map<NodeId, json> by_id;
  for (const auto& [type, named] : parameters) {
    auto specs = graph_parameter_specs(graph, type, *processors.at(type));
    auto ids   = graph.nodes_of_type(type);
    for (size_t row = 0; row < ids.size(); ++row) {
      const Node& node = graph.node(ids[row]);
      json values      = json::object();
      for (const auto& spec : specs) {
        if (!node_has(node, spec.name)) continue;  // a wet amount or curve it lacks
        bool per_item              = named.at(spec.name).dim() == int64_t(spec.shape.size()) + 2;
        at::Tensor value           = spec.to_physical(named.at(spec.name));
        values[spec.physical_name] = to_json((per_item ? value[0] : value)[int64_t(row)]);
      }
      by_id[ids[row]] = {
          {"id", ids[row]}, {"type", type}, {"name", node.name}, {"parameters", values}};
      if (node.bypassed) by_id[ids[row]]["bypassed"] = true;
    }
  }
  for (auto& [id, node] : by_id) nodes.push_back(node);
  json units = json::object();
  for (const auto& [type, named] : parameters)
    for (const auto& spec : graph_parameter_specs(graph, type, *processors.at(type)))
      units[type][spec.physical_name] = {{"unit", spec.unit}, {"description", spec.description}};
  return json({{"format", "grafx.physical_parameters"},
               {"version", 1},
               {"units", units},
               {"nodes", nodes}})
             .dump(2, ' ', false, json::error_handler_t::replace) +
         "\n";
}

}  // namespace grafx
