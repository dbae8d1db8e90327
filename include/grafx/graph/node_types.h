#pragma once
/// Node types: the vocabulary of a graph.
///
/// A node type is a name with the names of its inlets (input ports) and outlets (output ports).
/// Every `NodeTypes` starts with the three utility types at fixed indices:
///
///   0 `in`  : no inlet, outlet `main`  (a source)
///   1 `out` : inlet `main`, no outlet  (a graph output; sums what it receives)
///   2 `mix` : inlet `main`, outlet `main` (sums what it receives)
///
/// Processor types follow in the order they are added. Most have one inlet and one outlet named
/// `main`; multi-port types (a sidechain compressor with inlets `main` and `sidechain`, a
/// crossover with outlets `low` and `high`) are declared with their own port names.
///
///   NodeTypes types;
///   types.add("eq");                                            // main -> main
///   types.add({"crossover", {"main"}, {"low", "high"}});         // multi-port
///
/// A type may also configure a registered processor under a name of its own: its `processor`
/// names the processor and its `options` set the processor's options (see
/// grafx/processors/options.h), e.g. a tanh distortion with a bias:
///
///   types.add({"biased_drive", {"main"}, {"main"}, "tanh_distortion", {{"use_bias", true}}});

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace grafx {

using TypeId = int64_t;

/// The name of an inlet that only drives level detection (a sidechain compressor's key): its
/// signal is not heard. Consoles route keys into it; pictures draw its edges dashed.
inline constexpr char kSidechainInlet[] = "sidechain";
/// The processor whose nodes pass nothing when bypassed (and whose dry signal is silence): a
/// send switched off sends nothing to its bus, as in a DAW. The one processor the graph's rules
/// know by name, as they know the utility types.
inline constexpr char kSendProcessor[] = "send";

/// The value of a processor option: a flag, a number, a choice among names, or a list of names
/// (a container's member types).
using OptionValue = std::variant<bool, double, std::string, std::vector<std::string>>;
/// Options by name.
using ProcessorOptions = std::map<std::string, OptionValue>;

/// An option value as graph files write it: true, 0.5, "quadratic", ["eq", "compressor"].
std::string to_json_text(const OptionValue& value);
/// Options as graph files write them: {"knee":"hard","use_bias":true}, keys in order.
std::string to_json_text(const ProcessorOptions& options);

struct NodeType {
  std::string name;
  std::vector<std::string> inlets{"main"};
  std::vector<std::string> outlets{"main"};
  /// The registered processor that renders the type; empty: the one named `name`.
  std::string processor;
  /// Options of that processor that differ from its defaults.
  ProcessorOptions options;

  /// The registered processor that renders the type.
  const std::string& processor_name() const { return processor.empty() ? name : processor; }
  /// The inlet whose signal a bypassed (or dry) node passes on at `outlet`: the inlet of the
  /// same name, else the first inlet for the first outlet; -1 for none (the outlet is silent),
  /// and for every outlet of a send (kSendProcessor).
  int64_t passed_inlet(int64_t outlet) const;

  bool operator==(const NodeType& other) const {
    return name == other.name && inlets == other.inlets && outlets == other.outlets &&
           processor_name() == other.processor_name() && options == other.options;
  }
  bool operator!=(const NodeType& other) const { return !(*this == other); }
};

class NodeTypes {
 public:
  static constexpr TypeId kIn  = 0;
  static constexpr TypeId kOut = 1;
  static constexpr TypeId kMix = 2;

  /// The utility types `in`, `out` and `mix` only.
  NodeTypes();

  /// Adds a type; throws GraphError [grafx.graph.duplicate_type] if the name exists with other
  /// ports, and returns the existing id if it exists with the same ports.
  TypeId add(const NodeType& type);
  /// Adds a type with one `main` inlet and outlet.
  TypeId add(const std::string& name) { return add(NodeType{name}); }

  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  /// Throws GraphError [grafx.graph.unknown_type] naming the type and the known ones.
  TypeId id(const std::string& name) const;
  const NodeType& operator[](TypeId id) const { return types_.at(static_cast<size_t>(id)); }
  const std::string& name(TypeId id) const { return (*this)[id].name; }
  int64_t size() const { return static_cast<int64_t>(types_.size()); }
  const std::vector<NodeType>& all() const { return types_; }

  int64_t n_inlets(TypeId id) const { return static_cast<int64_t>((*this)[id].inlets.size()); }
  int64_t n_outlets(TypeId id) const { return static_cast<int64_t>((*this)[id].outlets.size()); }
  /// Index of a port by name; throws GraphError [grafx.graph.unknown_port] naming the type,
  /// the port and the ports that exist.
  int64_t inlet_index(TypeId id, const std::string& inlet) const;
  int64_t outlet_index(TypeId id, const std::string& outlet) const;

  /// True when every type has at most one inlet and one outlet.
  bool single_port_only() const;
  /// NodeType::passed_inlet of type `id`.
  int64_t passed_inlet(TypeId id, int64_t outlet) const { return (*this)[id].passed_inlet(outlet); }

  bool operator==(const NodeTypes& other) const { return types_ == other.types_; }
  bool operator!=(const NodeTypes& other) const { return !(*this == other); }

 private:
  std::vector<NodeType> types_;
  std::unordered_map<std::string, TypeId> index_;
};

/// True for the utility types `in`, `out` and `mix`.
inline bool is_utility_type(TypeId id) { return id <= NodeTypes::kMix; }

}  // namespace grafx
