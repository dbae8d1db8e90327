#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/graph_json.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

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

  double number(const char* field) const {
    const json& v = get(field);
    if (!v.is_number()) fail(std::string("expected a number, but got ") + kind(v), field);
    return v.get<double>();
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

  /// An object of option values: true/false, numbers, strings, or arrays of strings.
  ProcessorOptions options(const char* field) const {
    const json& v = get(field);
    if (!v.is_object()) fail(std::string("expected an object, but got ") + kind(v), field);
    ProcessorOptions options;
    for (const auto& item : v.items()) {
      const json& value = item.value();
      std::string where = std::string(field) + "." + item.key();
      if (value.is_boolean()) {
        options[item.key()] = value.get<bool>();
      } else if (value.is_number()) {
        options[item.key()] = value.get<double>();
      } else if (value.is_string()) {
        options[item.key()] = value.get<std::string>();
      } else if (value.is_array()) {
        std::vector<std::string> names;
        for (size_t i = 0; i < value.size(); ++i) {
          if (!value[i].is_string())
            fail(std::string("expected a string, but got ") + kind(value[i]),
                 where + "[" + std::to_string(i) + "]");
          names.push_back(value[i].get<std::string>());
        }
        options[item.key()] = names;
      } else {
        fail(std::string("expected true, false, a number, a string or an array of strings, "
                         "but got ") +
                 kind(value),
             where);
      }
    }
    return options;
  }

  std::string path() const { return path_; }

 private:
  const json& value_;
  std::string origin_;
  std::string path_;
};

/// Whether brackets and braces outside strings nest deeper than `most` levels somewhere.
bool nesting_exceeds(const std::string& text, int most) {
  int depth      = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > most) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

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

namespace {

/// A JSON string literal (a string value's destruction never allocates, unlike nlohmann's
/// arrays and objects, so a write that runs out of memory fails cleanly).
std::string quoted(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + quoted(items[i]);
  return out + "]";
}

/// Writes the graph file item by item, without building it whole: a console of a million
/// nodes streams to its file in constant extra memory.
void write_graph_json(const Graph& graph, std::ostream& out) {
  // A fixed, readable key order (nlohmann would sort keys) and one item per line.
  auto list = [&](const char* key, int64_t n, const std::function<std::string(int64_t)>& item,
                  bool last) {
    out << "  \"" << key << "\": [";
    for (int64_t i = 0; i < n; ++i) out << (i ? ",\n    " : "\n    ") << item(i);
    out << (n ? "\n  ]" : "]") << (last ? "\n" : ",\n");
  };
  const bool automated = graph.has_automation();
  out << "{\n  \"format\": \"grafx.graph\",\n  \"version\": " << (automated ? 3 : 2) << ",\n";
  if (automated) {
    std::ostringstream rate;
    rate.precision(17);
    rate << graph.automation().rate_hz;
    out << "  \"automation\": {\"points\":" << graph.automation().points
        << ",\"rate_hz\":" << rate.str() << "},\n";
  }
  const NodeTypes& types = graph.types();
  // Keys in each item sorted, as the files written by earlier versions (nlohmann's order).
  list(
      "node_types", types.size() - NodeTypes::kMix - 1,
      [&](int64_t i) {
        const NodeType& type = types[NodeTypes::kMix + 1 + i];
        std::string item =
            "{\"inlets\":" + quoted_list(type.inlets) + ",\"name\":" + quoted(type.name);
        if (!type.options.empty()) item += ",\"options\":" + to_json_text(type.options);
        item += ",\"outlets\":" + quoted_list(type.outlets);
        if (type.processor_name() != type.name) item += ",\"processor\":" + quoted(type.processor);
        return item + "}";
      },
      false);
  const std::vector<NodeId> ids = graph.nodes();
  list(
      "nodes", int64_t(ids.size()),
      [&](int64_t i) {
        const Node& node = graph.node(ids[size_t(i)]);
        std::string item = "{";
        if (!node.automated.empty()) item += "\"automated\":" + quoted_list(node.automated) + ",";
        if (node.bypassed) item += "\"bypassed\":true,";
        if (node.dry_wet) item += "\"dry_wet\":true,";
        item += "\"id\":" + std::to_string(ids[size_t(i)]);
        if (!node.name.empty()) item += ",\"name\":" + quoted(node.name);
        return item + ",\"type\":" + quoted(types.name(node.type)) + "}";
      },
      false);
  const std::vector<Edge> edges = graph.edges();
  list(
      "edges", int64_t(edges.size()),
      [&](int64_t i) {
        const Edge& e             = edges[size_t(i)];
        const std::string& outlet = types[graph.node(e.source).type].outlets[size_t(e.outlet)];
        const std::string& inlet  = types[graph.node(e.dest).type].inlets[size_t(e.inlet)];
        std::string item          = "{\"dest\":" + std::to_string(e.dest);
        if (inlet != "main") item += ",\"inlet\":" + quoted(inlet);
        if (outlet != "main") item += ",\"outlet\":" + quoted(outlet);
        return item + ",\"source\":" + std::to_string(e.source) + "}";
      },
      false);
  out << "  \"next_id\": " << graph.next_id() << "\n}\n";
}

}  // namespace

std::string graph_to_json(const Graph& graph) {
  std::ostringstream text;
  write_graph_json(graph, text);
  return text.str();
}

Graph graph_from_json(const std::string& text, const std::string& origin,
                      const NodeTypes& known_types) {
  // Nesting is bounded before parsing, by a scan: nlohmann's parser with a callback (the way
  // to bound it while parsing) looks through an array's elements at the end of each element
  // object, quadratic in a 40,000-node file.
  // Binary data (a sound file, a parameter file) is named as what it is not, before the scan or
  // the parser report its brackets or bytes.
  const size_t head = std::min<size_t>(text.size(), 4096);
  if (std::any_of(text.begin(), text.begin() + std::ptrdiff_t(head), [](char c) {
        return c == '\0' || (static_cast<unsigned char>(c) < 0x20 && !std::isspace(c));
      }))
    throw IoError("grafx.io.format",
                  origin + ": not a graph file (it holds binary data; a graph file is JSON text)");
  if (nesting_exceeds(text, kMaxDepth))
    throw IoError("grafx.io.format",
                  origin + ": nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 5: ..." or
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'".
    std::string what = e.what();
    auto at          = what.find("] ");
    throw IoError("grafx.io.format", origin + ": invalid JSON: " +
                                         (at == std::string::npos ? what : what.substr(at + 2)));
  }

  Reader top(root, origin, "");
  top.allow_only({"format", "version", "automation", "node_types", "nodes", "edges", "next_id"});
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
      t.allow_only({"name", "inlets", "outlets", "processor", "options"});
      NodeType type;
      type.name      = t.string("name");
      type.processor = t.string("processor", "", false);
      if (type.processor == type.name) type.processor.clear();
      // A configured type may leave out its ports: then they are its processor's.
      if (!t.has("inlets") || !t.has("outlets")) {
        if (type.processor.empty() || !known_types.contains(type.processor))
          t.fail("missing field \"" + std::string(t.has("inlets") ? "outlets" : "inlets") +
                 "\" (only a type naming a known processor may leave out its ports)");
        const NodeType& known = known_types[known_types.id(type.processor)];
        type.inlets           = known.inlets;
        type.outlets          = known.outlets;
      }
      if (t.has("inlets")) type.inlets = t.strings("inlets");
      if (t.has("outlets")) type.outlets = t.strings("outlets");
      if (t.has("options")) type.options = t.options("options");
      annotate(origin, t.path(), [&] { types.add(type); });
    }
  }

  const json& nodes = top.array("nodes");
  Graph graph(types);
  if (top.has("automation")) {
    if (version < 3) top.fail("automation needs version 3 of the format", "automation");
    Reader a(top.get("automation"), origin, "automation");
    if (!top.get("automation").is_object()) a.fail("expected an object {\"rate_hz\", \"points\"}");
    a.allow_only({"rate_hz", "points"});
    Automation clock{a.number("rate_hz"), a.integer("points")};
    annotate(origin, "automation", [&] { graph.set_automation(clock); });
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    Reader n(nodes[i], origin, element("nodes", i));
    if (version >= 3)
      n.allow_only({"id", "type", "name", "dry_wet", "bypassed", "automated"});
    else if (version >= 2)
      n.allow_only({"id", "type", "name", "dry_wet", "bypassed"});
    else
      n.allow_only({"id", "type", "name"});
    int64_t id       = n.integer("id");
    std::string type = n.string("type");
    NodeProperties properties;
    properties.name     = n.string("name", "", false);
    properties.dry_wet  = n.boolean("dry_wet");
    properties.bypassed = n.boolean("bypassed");
    if (n.has("automated")) properties.automated = n.strings("automated");
    annotate(origin, n.path(), [&] {
      if (!graph.types().contains(type) && known_types.contains(type))
        graph.add_type(known_types[known_types.id(type)]);
      graph.insert(id, type);
      graph.set_properties(id, properties);
    });
  }

  // Edges are connected all at once (Graph::connect_all, linear in the graph's size), with
  // the errors of connecting them in turn: a malformed edge after one that closes a cycle
  // reports the cycle.
  const json& edges = top.array("edges");
  std::vector<Graph::PortEdge> requests;
  requests.reserve(edges.size());
  auto connect = [&] {
    graph.connect_all(requests, [&](size_t i, const GraphError& e) {
      throw GraphError(e.code(), origin + ": " + element("edges", i) + ": " + e.message());
    });
  };
  for (size_t i = 0; i < edges.size(); ++i) {
    try {
      Reader e(edges[i], origin, element("edges", i));
      e.allow_only({"source", "dest", "outlet", "inlet"});
      Graph::PortEdge r;
      r.source = e.integer("source");
      r.dest   = e.integer("dest");
      r.outlet = e.string("outlet", "main", false);
      r.inlet  = e.string("inlet", "main", false);
      if (!graph.contains(r.source))
        e.fail("no node with id " + std::to_string(r.source), "source");
      if (!graph.contains(r.dest)) e.fail("no node with id " + std::to_string(r.dest), "dest");
      requests.push_back(std::move(r));
    } catch (const IoError&) {
      connect();  // an earlier edge's error comes first
      throw;
    }
  }
  connect();

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
  write_atomically(path, overwrite, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw IoError("grafx.io.unwritable", path + ": cannot be written");
    write_graph_json(graph, out);
    out.close();
    if (!out) throw IoError("grafx.io.unwritable", path + ": write failed");
  });
}

}  // namespace grafx
