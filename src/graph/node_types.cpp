#include <grafx/error.h>
#include <grafx/graph/node_types.h>
#include <grafx/text.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace grafx {
namespace {

int64_t port_index(const std::vector<std::string>& ports, const std::string& port) {
  auto it = std::find(ports.begin(), ports.end(), port);
  return it == ports.end() ? -1 : static_cast<int64_t>(it - ports.begin());
}

void check_ports(const NodeType& type, const std::vector<std::string>& ports, const char* kind) {
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].empty())
      throw GraphError("grafx.graph.invalid_type", "node type \"" + type.name + "\": " + kind +
                                                       " " + std::to_string(i) +
                                                       " has an empty name");
    if (port_index(ports, ports[i]) != static_cast<int64_t>(i))
      throw GraphError("grafx.graph.invalid_type", "node type \"" + type.name + "\": " + kind +
                                                       " \"" + ports[i] + "\" is listed twice");
  }
}

/// What a type is, for messages: its ports, and its processor and options when configured.
std::string describe(const NodeType& type) {
  std::string text =
      "inlets (" + join(type.inlets, "none") + ") and outlets (" + join(type.outlets, "none") + ")";
  if (type.processor_name() != type.name) text += ", processor \"" + type.processor + "\"";
  if (!type.options.empty()) text += ", options " + to_json_text(type.options);
  return text;
}

}  // namespace

namespace {

nlohmann::json json_of(const OptionValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

std::string dump(const nlohmann::json& item) {
  return item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string to_json_text(const OptionValue& value) { return dump(json_of(value)); }

std::string to_json_text(const ProcessorOptions& options) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : options) object[key] = json_of(value);
  return dump(object);
}

NodeTypes::NodeTypes() {
  add(NodeType{"in", {}, {"main"}});
  add(NodeType{"out", {"main"}, {}});
  add(NodeType{"mix", {"main"}, {"main"}});
}

TypeId NodeTypes::add(const NodeType& type) {
  if (type.name.empty()) throw GraphError("grafx.graph.invalid_type", "a node type needs a name");
  auto it = index_.find(type.name);
  if (it != index_.end()) {
    if (types_[static_cast<size_t>(it->second)] == type) return it->second;
    const NodeType& known = types_[static_cast<size_t>(it->second)];
    throw GraphError("grafx.graph.duplicate_type",
                     "node type \"" + type.name + "\" is already declared with " + describe(known) +
                         ", but got " + describe(type));
  }
  check_ports(type, type.inlets, "inlet");
  check_ports(type, type.outlets, "outlet");
  types_.push_back(type);
  TypeId id         = static_cast<TypeId>(types_.size()) - 1;
  index_[type.name] = id;
  return id;
}

TypeId NodeTypes::id(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::vector<std::string> names;
    for (const auto& type : types_) names.push_back(type.name);
    throw GraphError("grafx.graph.unknown_type",
                     "unknown node type \"" + name + "\"; known types: " + join(names, "none"));
  }
  return it->second;
}

int64_t NodeTypes::inlet_index(TypeId id, const std::string& inlet) const {
  const NodeType& type = (*this)[id];
  int64_t index        = port_index(type.inlets, inlet);
  if (index < 0)
    throw GraphError("grafx.graph.unknown_port",
                     "node type \"" + type.name + "\" has no inlet \"" + inlet +
                         "\"; its inlets: " + join(type.inlets, "none"));
  return index;
}

int64_t NodeTypes::outlet_index(TypeId id, const std::string& outlet) const {
  const NodeType& type = (*this)[id];
  int64_t index        = port_index(type.outlets, outlet);
  if (index < 0)
    throw GraphError("grafx.graph.unknown_port",
                     "node type \"" + type.name + "\" has no outlet \"" + outlet +
                         "\"; its outlets: " + join(type.outlets, "none"));
  return index;
}

bool NodeTypes::single_port_only() const {
  return std::all_of(types_.begin(), types_.end(), [](const NodeType& type) {
    return type.inlets.size() <= 1 && type.outlets.size() <= 1;
  });
}

int64_t NodeType::passed_inlet(int64_t outlet) const {
  const std::string& name = outlets.at(size_t(outlet));
  if (processor_name() == kSendProcessor) return -1;
  auto it = std::find(inlets.begin(), inlets.end(), name);
  if (it != inlets.end()) return it - inlets.begin();
  return outlet == 0 && !inlets.empty() ? 0 : -1;
}

}  // namespace grafx
