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

// Version 2 names tensors by where they sit in a type's values: "<type>.parameters.<name>",
// "<type>.wet", "<type>.curves.<parameter>". Version 1 named them as the specs do:
// "<type>.<name>", with the wet amount "<type>.dry_wet" and curves "<type>.<parameter>@curve".
constexpr int kVersion      = 2;
constexpr char kOwnPrefix[] = "parameters.", kWet[] = "wet", kCurvePrefix[] = "curves.";

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0 && text.size() > prefix.size();
}

/// Puts a tensor of version `version`'s name `part` (after "<type>.") in its place; false for
/// a name the version does not have.
bool place(TypeParameters& values, int version, const std::string& part, const at::Tensor& tensor) {
  if (version == 1) {
    values[part] = tensor;
    return true;
  }
  if (part == kWet) {
    values.wet = tensor;
  } else if (starts_with(part, kOwnPrefix)) {
    values.own[part.substr(sizeof kOwnPrefix - 1)] = tensor;
  } else if (starts_with(part, kCurvePrefix)) {
    values.curves[part.substr(sizeof kCurvePrefix - 1)] = tensor;
  } else {
    return false;
  }
  return true;
}

/// The format version a file's metadata records (1 where it records none).
int file_version(const std::string& path, const std::map<std::string, std::string>& metadata) {
  auto recorded = metadata.find("version");
  if (recorded == metadata.end() || recorded->second == "1") return 1;
  if (recorded->second == std::to_string(kVersion)) return kVersion;
  throw IoError("grafx.io.format", path + ": parameter file version \"" + recorded->second +
                                       "\"; this grafx reads versions 1 to " +
                                       std::to_string(kVersion));
}

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
  std::map<std::string, std::string> metadata{{"format", "grafx.parameters"},
                                              {"version", std::to_string(kVersion)}};
  if (sample_rate > 0) metadata["sample_rate"] = std::to_string(sample_rate);
  for (const auto& [type, values] : parameters) {
    metadata["node_ids." + type] = id_list(graph.nodes_of_type(type));
    for (const auto& [name, tensor] : values.own) tensors[type + "." + kOwnPrefix + name] = tensor;
    if (values.wet.defined()) tensors[type + "." + kWet] = values.wet;
    for (const auto& [name, tensor] : values.curves)
      tensors[type + "." + kCurvePrefix + name] = tensor;
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
  const int version = file_version(path, file.metadata);
  ParameterFile result;
  Parameters& parameters = result.parameters;
  for (const auto& [key, tensor] : file.tensors) {
    auto dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
        !place(parameters[key.substr(0, dot)], version, key.substr(dot + 1), tensor))
      throw IoError("grafx.io.format",
                    path + ": tensor \"" + key + "\" is not named " +
                        (version == 1 ? "<type>.<parameter>"
                                      : "<type>.parameters.<name>, <type>.wet or "
                                        "<type>.curves.<parameter>"));
  }
  for (const auto& [type, values] : parameters) {
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
  for (const auto& [type, raw_values] : parameters) {
    auto specs = graph_parameter_specs(graph, type, *processors.at(type));
    auto ids   = graph.nodes_of_type(type);
    for (size_t row = 0; row < ids.size(); ++row) {
      const Node& node = graph.node(ids[row]);
      json values      = json::object();
      for (const auto& spec : specs) {
        if (!node_has(node, spec.name)) continue;  // a wet amount or curve it lacks
        const at::Tensor& raw      = raw_values.at(spec.name);
        bool per_item              = raw.dim() == int64_t(spec.shape.size()) + 2;
        at::Tensor value           = spec.to_physical(raw);
        values[spec.physical_name] = to_json((per_item ? value[0] : value)[int64_t(row)]);
      }
      by_id[ids[row]] = {
          {"id", ids[row]}, {"type", type}, {"name", node.name}, {"parameters", values}};
      if (node.bypassed) by_id[ids[row]]["bypassed"] = true;
    }
  }
  for (auto& [id, node] : by_id) nodes.push_back(node);
  json units = json::object();
  for (const auto& [type, values] : parameters)
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
