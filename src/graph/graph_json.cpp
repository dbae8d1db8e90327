#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/graph_json.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace grafx {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 16;  // deeper nesting is never a graph file; bounds parser work

const char* kind(const json& value) {
  if (value.is_number_integer() || value.is_number_unsigned()) return "an integer";
  if (value.is_number_float()) return "a fractional number";
  return value.type_name();
}

/// Reads fields of one JSON object, naming the file and the field path in every error.
class Reader {
 public:
  Reader(const json& value, std::string origin, std::string path)
      : value_(value), origin_(std::move(origin)), path_(std::move(path)) {
    if (!value_.is_object()) fail(std::string("expected an object, but got ") + kind(value_));
  }

  [[noreturn]] void fail(const std::string& what, const std::string& field = "") const {
    std::string where = path_;
    if (!field.empty()) where += (where.empty() ? "" : ".") + field;
    throw IoError("grafx.io.format", origin_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  void allow_only(std::initializer_list<const char*> fields) const {
    for (const auto& item : value_.items())
      if (std::none_of(fields.begin(), fields.end(),
                       [&](const char* f) { return item.key() == f; }))
        fail("unknown field \"" + item.key() + "\"");
  }

  bool has(const char* field) const { return value_.contains(field); }

  const json& get(const char* field) const {
    auto it = value_.find(field);
    if (it == value_.end()) fail("missing field \"" + std::string(field) + "\"");
    return *it;
  }

  std::string string(const char* field, const std::string& fallback = "",
                     bool required = true) const {
    if (!required && !has(field)) return fallback;
    const json& v = get(field);
    if (!v.is_string()) fail(std::string("expected a string, but got ") + kind(v), field);
    return v.get<std::string>();
  }

  int64_t integer(const char* field) const {
    const json& v = get(field);
    if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t{1} << 53))
      fail("expected an integer up to 2^53, but got " + v.dump(), field);
    if (!v.is_number_integer()) fail(std::string("expected an integer, but got ") + kind(v), field);
    return v.get<int64_t>();
  }

  /// An optional flag: false when absent.
  bool boolean(const char* field) const {
    if (!has(field)) return false;
    const json& v = get(field);
    if (!v.is_boolean()) fail(std::string("expected true or false, but got ") + kind(v), field);
    return v.get<bool>();
  }

  const json& array(const char* field) const {
    const json& v = get(field);
    if (!v.is_array()) fail(std::string("expected an array, but got ") + kind(v), field);
    return v;
  }

  std::vector<std::string> strings(const char* field) const {
    const json& v = array(field);
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        fail(std::string("expected a string, but got ") + kind(v[i]),
             std::string(field) + "[" + std::to_string(i) + "]");
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  std::string path() const { return path_; }

 private:
  const json& value_;
  std::string origin_;
  std::string path_;
};

std::string element(const char* array, size_t i) {
  return std::string(array) + "[" + std::to_string(i) + "]";
}

/// Runs a graph operation, re-throwing its error with the file and field in front.
template <class F>
void annotate(const std::string& origin, const std::string& where, F&& operation) {
  try {
    operation();
  } catch (const GraphError& e) {
    throw GraphError(e.code(), origin + ": " + where + ": " + e.message());
  }
}

}  // namespace

std::string graph_to_json(const Graph& graph) {
  json types = json::array();
  for (TypeId t = NodeTypes::kMix + 1; t < graph.types().size(); ++t) {
    const NodeType& type = graph.types()[t];
    types.push_back({{"name", type.name}, {"inlets", type.inlets}, {"outlets", type.outlets}});
  }
  json nodes = json::array();
  for (NodeId id : graph.nodes()) {
    const Node& node = graph.node(id);
    json item        = {{"id", id}, {"type", graph.types().name(node.type)}};
    if (!node.name.empty()) item["name"] = node.name;
    if (node.dry_wet) item["dry_wet"] = true;
    if (node.bypassed) item["bypassed"] = true;
    nodes.push_back(item);
  }
  json edges = json::array();
  for (const Edge& e : graph.edges()) {
    json item                 = {{"source", e.source}, {"dest", e.dest}};
    const std::string& outlet = graph.types()[graph.node(e.source).type].outlets[size_t(e.outlet)];
    const std::string& inlet  = graph.types()[graph.node(e.dest).type].inlets[size_t(e.inlet)];
    if (outlet != "main") item["outlet"] = outlet;
    if (inlet != "main") item["inlet"] = inlet;
    edges.push_back(item);
  }
  // nlohmann sorts object keys; build the top level with a fixed, readable key order instead.
  std::string text = "{\n";
  text += "  \"format\": \"grafx.graph\",\n";
  text += "  \"version\": " + std::to_string(kGraphFormatVersion) + ",\n";
  auto lines = [](const json& items) {
    if (items.empty()) return std::string("[]");
    std::string out = "[\n";
    for (size_t i = 0; i < items.size(); ++i)
      out += "    " + items[i].dump(-1, ' ', false, json::error_handler_t::replace) +
             (i + 1 < items.size() ? ",\n" : "\n");
    return out + "  ]";
  };
  text += "  \"node_types\": " + lines(types) + ",\n";
  text += "  \"nodes\": " + lines(nodes) + ",\n";
  text += "  \"edges\": " + lines(edges) + ",\n";
  text += "  \"next_id\": " + std::to_string(graph.next_id()) + "\n}\n";
  return text;
}

Graph graph_from_json(const std::string& text, const std::string& origin,
                      const NodeTypes& known_types) {
  json root;
  try {
    bool too_deep = false;
    root          = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) too_deep = true;
      return !too_deep;
    });
    if (too_deep)
      throw IoError("grafx.io.format",
                    origin + ": nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  } catch (const json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    std::string what = e.what();
    auto at          = what.find("parse error");
    throw IoError("grafx.io.format",
                  origin + ": invalid JSON: " + (at == std::string::npos ? what : what.substr(at)));
  }

  Reader top(root, origin, "");
  top.allow_only({"format", "version", "node_types", "nodes", "edges", "next_id"});
  if (top.string("format") != "grafx.graph")
    top.fail("expected \"grafx.graph\", but got \"" + top.string("format") + "\"", "format");
  const int64_t version = top.integer("version");
  if (version < 1 || version > kGraphFormatVersion)
    top.fail("unsupported version " + std::to_string(version) +
                 " (this grafx reads versions 1 to " + std::to_string(kGraphFormatVersion) + ")",
             "version");

  NodeTypes types;
  if (top.has("node_types")) {
    const json& list = top.array("node_types");
    for (size_t i = 0; i < list.size(); ++i) {
      Reader t(list[i], origin, element("node_types", i));
      t.allow_only({"name", "inlets", "outlets"});
      NodeType type{t.string("name"), t.strings("inlets"), t.strings("outlets")};
      annotate(origin, t.path(), [&] { types.add(type); });
    }
  }

  const json& nodes = top.array("nodes");
  Graph graph(types);
  for (size_t i = 0; i < nodes.size(); ++i) {
    Reader n(nodes[i], origin, element("nodes", i));
    if (version >= 2)
      n.allow_only({"id", "type", "name", "dry_wet", "bypassed"});
    else
      n.allow_only({"id", "type", "name"});
    int64_t id       = n.integer("id");
    std::string type = n.string("type");
    std::string name = n.string("name", "", false);
    bool dry_wet = n.boolean("dry_wet"), bypassed = n.boolean("bypassed");
    annotate(origin, n.path(), [&] {
      if (!graph.types().contains(type) && known_types.contains(type))
        graph.add_type(known_types[known_types.id(type)]);
      graph.insert(id, type, name);
      graph.set_dry_wet(id, dry_wet);
      graph.set_bypassed(id, bypassed);
    });
  }

  const json& edges = top.array("edges");
  for (size_t i = 0; i < edges.size(); ++i) {
    Reader e(edges[i], origin, element("edges", i));
    e.allow_only({"source", "dest", "outlet", "inlet"});
    int64_t source = e.integer("source"), dest = e.integer("dest");
    std::string outlet = e.string("outlet", "main", false);
    std::string inlet  = e.string("inlet", "main", false);
    if (!graph.contains(source)) e.fail("no node with id " + std::to_string(source), "source");
    if (!graph.contains(dest)) e.fail("no node with id " + std::to_string(dest), "dest");
    annotate(origin, e.path(), [&] { graph.connect(source, dest, outlet, inlet); });
  }

  if (top.has("next_id")) {
    int64_t next = top.integer("next_id");
    if (next < graph.next_id())
      top.fail("must exceed every node id (at least " + std::to_string(graph.next_id()) +
                   "), but got " + std::to_string(next),
               "next_id");
    graph.reserve_ids(next);
  }
  return graph;
}

Graph load_graph(const std::string& path, const NodeTypes& known_types) {
  return graph_from_json(read_text_file(path), path, known_types);
}

void save_graph(const Graph& graph, const std::string& path, bool overwrite) {
  write_text_file(path, graph_to_json(graph), overwrite);
}

}  // namespace grafx
