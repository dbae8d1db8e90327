#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/draw.h>
#include <grafx/processors/registry.h>
#include <grafx/text.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

namespace grafx {
namespace {

// One pastel colour per letter, so a type looks the same in every picture.
constexpr const char* kLetterColors[26] = {
    "#f2e3bc", "#c6dbef",       "#f4a6a6" /*c*/, "#f1b6da" /*d*/, "#9ed9f5" /*e*/,
    "#e8c4f0", "#ffc078" /*g*/, "#d9d9d9",       "#c7e9c0",       "#fbb4ae",
    "#decbe4", "#e5d8bd",       "#e4e4e4" /*m*/, "#c2e6b8" /*n*/, "#b3cde3",
    "#f6d0b1", "#d4e8b0",       "#c9c3f7" /*r*/, "#f9e79f" /*s*/, "#a8e6cf",
    "#ffcfdf", "#d0f0fd",       "#e2f0cb",       "#f6dfeb",       "#c5cae9",
    "#ffe0b2"};

std::string quote(const std::string& text) { return "\"" + escape_markup(text) + "\""; }

std::string tooltip(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::string text = std::to_string(id) + " " + graph.types().name(node.type);
  if (!node.name.empty()) text += " \"" + node.name + "\"";
  if (node.dry_wet) text += ", dry/wet";
  if (node.bypassed) text += ", bypassed";
  for (const std::string& parameter : node.automated) text += ", automates " + parameter;
  return text;
}

bool multi_port(const NodeType& type) { return type.inlets.size() > 1 || type.outlets.size() > 1; }

}  // namespace

std::string type_color(const std::string& type_name) {
  char letter = type_letter(type_name);
  if (letter >= 'A' && letter <= 'Z') letter = static_cast<char>(letter - 'A' + 'a');
  return letter >= 'a' && letter <= 'z' ? kLetterColors[letter - 'a'] : "#eeeeee";
}

std::string type_color(const NodeType& type) { return type_color(type.processor_name()); }

std::string graph_to_dot(const Graph& graph, const DrawOptions& options) {
  const NodeTypes& types = graph.types();
  std::ostringstream dot;
  dot << "digraph grafx {\n"
      << "  graph [rankdir=" << (options.vertical ? "TB" : "LR")
      << ", nodesep=0.06, ranksep=0.22, bgcolor=white, fontname=\"Helvetica\", fontsize=11";
  if (!options.title.empty()) dot << ", label=" << quote(options.title) << ", labelloc=t";
  dot << "];\n"
      << "  node [shape=box, style=\"rounded,filled\", width=0.26, height=0.22, fixedsize=true, "
         "fontname=\"Helvetica\", fontsize=9, penwidth=0.6, margin=0];\n"
      << "  edge [arrowsize=0.35, penwidth=0.6];\n";
  for (NodeId id : graph.nodes()) {
    const Node& node     = graph.node(id);
    const NodeType& type = types[node.type];
    std::string letter(1, type_letter(type));
    if (options.show_ids) letter += " " + std::to_string(id);
    dot << "  n" << id << " [tooltip=" << quote(tooltip(graph, id));
    if (node.type == NodeTypes::kIn || node.type == NodeTypes::kOut) {
      bool in           = node.type == NodeTypes::kIn;
      std::string label = node.name.empty() ? type.name : node.name;
      dot << ", label=" << quote(options.show_ids ? label + " " + std::to_string(id) : label)
          << ", fixedsize=false, width=0.3, margin=\"0.04,0.01\", fillcolor=white, color="
          << (in ? "\"#1f5fbf\"" : "\"#c0392b\"")
          << ", fontcolor=" << (in ? "\"#1f5fbf\"" : "\"#c0392b\"");
    } else if (multi_port(type)) {
      // A table: inlets on the left, the letter in the middle, outlets on the right.
      size_t rows = std::max(type.inlets.size(), type.outlets.size());
      dot << ", shape=plain, fixedsize=false, style=\"\", label=<<table border=\"0\" "
             "cellborder=\"1\" cellspacing=\"0\" cellpadding=\"1\" bgcolor=\""
          << type_color(type) << "\">";
      for (size_t r = 0; r < rows; ++r) {
        dot << "<tr>";
        auto port_cell = [&](const std::vector<std::string>& ports, const char* prefix) {
          if (r < ports.size())
            dot << "<td port=\"" << prefix << r << "\"><font point-size=\"6\">"
                << escape_markup(ports[r]) << "</font></td>";
          else if (r == ports.size())
            dot << "<td rowspan=\"" << rows - r << "\" border=\"0\"></td>";
        };
        port_cell(type.inlets, "i");
        if (r == 0) dot << "<td rowspan=\"" << rows << "\">" << escape_markup(letter) << "</td>";
        port_cell(type.outlets, "o");
        dot << "</tr>";
      }
      dot << "</table>>";
    } else {
      dot << ", label=" << quote(letter) << ", fillcolor=\"" << type_color(type) << "\"";
      if (node.bypassed) dot << ", style=\"rounded,dashed\"";  // kept, but passes its input on
      if (options.show_ids) dot << ", fixedsize=false";
    }
    dot << "];\n";
  }
  if (!options.strips) {  // sources in the first column (ranks cannot cross strip boxes)
    dot << "  {rank=min;";
    for (NodeId id : graph.nodes())
      if (graph.node(id).type == NodeTypes::kIn) dot << " n" << id << ";";
    dot << "}\n";
  }
  if (options.strips) {
    // Nodes named "<strip>" or "<strip>.<anything>" share a labelled box.
    std::map<std::string, std::vector<NodeId>> strips;
    for (NodeId id : graph.nodes()) {
      const std::string& name = graph.node(id).name;
      if (!name.empty()) strips[name.substr(0, name.find('.'))].push_back(id);
    }
    int64_t k = 0;
    for (const auto& [strip, ids] : strips) {
      if (ids.size() < 2) continue;
      dot << "  subgraph cluster_" << k++ << " {graph [label=" << quote(strip)
          << ", style=rounded, color=\"#bbbbbb\", fontsize=8, margin=4];";
      for (NodeId id : ids) dot << " n" << id << ";";
      dot << "}\n";
    }
  }
  for (const Edge& e : graph.edges()) {
    const NodeType& source = types[graph.node(e.source).type];
    const NodeType& dest   = types[graph.node(e.dest).type];
    dot << "  n" << e.source;
    if (multi_port(source)) dot << ":o" << e.outlet << (options.vertical ? ":s" : ":e");
    dot << " -> n" << e.dest;
    if (multi_port(dest)) dot << ":i" << e.inlet << (options.vertical ? ":n" : ":w");
    std::vector<std::string> style;
    if (graph.node(e.source).type == NodeTypes::kIn) style.push_back("color=\"#1f5fbf\"");
    if (graph.node(e.dest).type == NodeTypes::kOut) style.push_back("color=\"#c0392b\"");
    // A key signal is listened to, not heard: dashed.
    if (dest.inlets[size_t(e.inlet)] == kSidechainInlet) style.push_back("style=dashed");
    if (!style.empty()) {
      dot << " [";
      for (size_t i = 0; i < style.size(); ++i) dot << (i ? ", " : "") << style[i];
      dot << "]";
    }
    dot << ";\n";
  }
  dot << "}\n";
  return dot.str();
}

namespace {

std::string lower_extension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  return extension;
}

bool is_dot(const std::string& extension) { return extension == ".dot" || extension == ".gv"; }

}  // namespace

void check_drawable(const Graph& graph, const std::string& path, const DrawOptions& options) {
  std::string extension = lower_extension(path);
  if (is_dot(extension)) return;
  if (extension != ".svg" && extension != ".png" && extension != ".pdf")
    throw IoError("grafx.io.draw", path + ": unknown picture format \"" + extension +
                                       "\"; expected .svg, .png, .pdf or .dot");
  if (graph.n_nodes() > options.max_nodes)
    throw IoError("grafx.io.draw",
                  path + ": " + std::to_string(graph.n_nodes()) +
                      " nodes are more than a picture lays out in reasonable time (" +
                      std::to_string(options.max_nodes) +
                      "); write .dot, or raise the limit (grafx draw --max-nodes)");
}

namespace {

// Graphviz's default ids for named objects are the addresses of its copies of the names, and it
// orders subgraphs (the strips' boxes) by id: the same graph was laid out otherwise whenever
// the heap was (from run to run, or after other pictures). These ids number the names in the
// order they are read (even, as Graphviz wants named ids; anonymous objects get odd ones).
struct ReadOrderIds {
  std::map<std::string, IDTYPE> ids;
  std::deque<std::string> names;  // a deque: Graphviz keeps pointers to the names it prints
  IDTYPE next_anonymous = 1;
};

Agiddisc_t read_order_ids() {
  Agiddisc_t disc = AgIdDisc;
  disc.open       = [](Agraph_t*, Agdisc_t*) -> void* { return new ReadOrderIds; };
  disc.map        = [](void* state, int, char* name, IDTYPE* id, int create) -> long {
    auto& s = *static_cast<ReadOrderIds*>(state);
    if (!name) {
      *id = s.next_anonymous;
      s.next_anonymous += 2;
      return 1;
    }
    auto known = s.ids.find(name);
    if (known != s.ids.end()) {
      *id = known->second;
      return 1;
    }
    if (!create) return 0;
    s.names.emplace_back(name);
    *id = s.ids[name] = IDTYPE(2 * s.names.size());
    return 1;
  };
  disc.alloc = [](void*, int, IDTYPE) -> long { return 0; };
  disc.free  = [](void*, int, IDTYPE) {};  // the names live until the graph closes
  disc.print = [](void* state, int, IDTYPE id) -> char* {
    auto& s = *static_cast<ReadOrderIds*>(state);
    return id % 2 == 0 && id / 2 <= s.names.size() ? s.names[size_t(id / 2 - 1)].data() : nullptr;
  };
  disc.close      = [](void* state) { delete static_cast<ReadOrderIds*>(state); };
  disc.idregister = [](void*, int, void*) {};
  return disc;
}

/// DOT text read as Graphviz's agmemread reads it, with read-order ids.
Agraph_t* read_dot(const std::string& dot) {
  struct Reader {
    const std::string& text;
    size_t at = 0;
  } reader{dot};
  static Agiddisc_t ids = read_order_ids();
  static Agiodisc_t io  = {
       [](void* channel, char* buffer, int size) -> int {  // a line at a time, as agmemread
        auto& r = *static_cast<Reader*>(channel);
        int n   = 0;
        while (n < size && r.at < r.text.size()) {
           const char c = r.text[r.at++];
           buffer[n++]  = c;
           if (c == '\n') break;
        }
         return n;
      },
       AgIoDisc.putstr, AgIoDisc.flush};
  static Agdisc_t disc = {&AgMemDisc, &ids, &io};
  return agread(&reader, &disc);
}

/// Lays out DOT text and renders it to `path` in `format` (svg, png, pdf), atomically.
void render_dot(const std::string& dot, const std::string& path, const std::string& format,
                bool overwrite) {
  static std::mutex graphviz_mutex;  // Graphviz keeps global state
  std::lock_guard<std::mutex> lock(graphviz_mutex);
  static std::string errors;
  errors.clear();
  agseterr(AGERR);  // collect errors, not warnings
  agseterrf([](char* message) -> int {
    errors += message;
    return 0;
  });
  // One context for the whole process, never freed: Graphviz's text layout keeps a pointer to
  // the last font's name across contexts, which gvFreeContext frees, and the next drawing reads
  // it (valgrind: a use after free in libgvplugin_pango at a process's second picture).
  static GVC_t* const context = gvContext();
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> g(read_dot(dot), agclose);
  auto fail = [&](const std::string& what) {
    while (!errors.empty() && errors.back() == '\n') errors.pop_back();
    std::replace(errors.begin(), errors.end(), '\n', ' ');  // Graphviz's lines, in one
    throw IoError("grafx.io.draw", path + ": " + what + (errors.empty() ? "" : ": " + errors));
  };
  if (!context || !g) fail("Graphviz could not read the picture description");
  if (gvLayout(context, g.get(), "dot") != 0) {
    gvFreeLayout(context, g.get());  // the context outlives the graph
    fail("Graphviz layout failed");
  }
  // Rendered in memory and written by grafx: Graphviz ends the whole process when it cannot
  // write a file (a full disk, a file-size limit).
  char* data          = nullptr;
  unsigned int length = 0;
  int status          = gvRenderData(context, g.get(), format.c_str(), &data, &length);
  gvFreeLayout(context, g.get());
  const std::string bytes = data ? std::string(data, length) : std::string();
  gvFreeRenderData(data);
  if (status != 0 || bytes.empty()) fail("Graphviz could not render " + format);
  write_text_file(path, bytes, overwrite);
}

}  // namespace

void draw_graph(const Graph& graph, const std::string& path, const DrawOptions& options,
                bool overwrite) {
  check_drawable(graph, path, options);
  std::string extension = lower_extension(path);
  std::string dot       = graph_to_dot(graph, options);
  if (is_dot(extension)) return write_text_file(path, dot, overwrite);
  render_dot(dot, path, extension.substr(1), overwrite);
}

void write_svg_picture(const std::string& path, const std::string& svg, bool overwrite) {
  const std::string extension = lower_extension(path);
  if (extension != ".svg" && extension != ".png" && extension != ".pdf")
    throw IoError("grafx.io.draw", path + ": unknown picture format \"" + extension +
                                       "\"; expected .svg, .png or .pdf");
  // Graphviz reads an image's size from its root element's width and height (pixels, taken
  // as points), and only on a line of its own after an XML declaration.
  std::smatch size;
  if (!std::regex_search(
          svg, size, std::regex(R"re(<svg[^>]*\swidth="([0-9.]+)"[^>]*\sheight="([0-9.]+)")re")))
    throw IoError("grafx.io.draw", path + ": the picture's SVG has no width and height");
  const std::string body = svg.substr(svg.find("<svg"));
  const std::string text =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
      std::regex_replace(body, std::regex(">"), ">\n", std::regex_constants::format_first_only);
  if (extension == ".svg") return write_text_file(path, text, overwrite);
  check_writable(path, overwrite);
  // The SVG goes beside the output (Graphviz takes image paths relative to its imagepath), as
  // a temporary file, drawn as the one node of a graph, at twice the pixels for PNG.
  const std::filesystem::path target(path);
  const std::filesystem::path folder =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string image = "." + target.filename().string() + ".picture.svg";
  write_text_file((folder / image).string(), text, /*overwrite=*/true);
  struct Remove {
    std::filesystem::path file;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(file, ec);
    }
  } remove{folder / image};
  const double width = std::stod(size[1]) / 72, height = std::stod(size[2]) / 72;  // inches
  std::ostringstream dot;
  dot << "digraph { graph [pad=0, margin=0, dpi=" << (extension == ".png" ? 144 : 72)
      << ", imagepath=" << quote(std::filesystem::absolute(folder).string())
      << "]; node [shape=none, margin=0, label=\"\", fixedsize=true, imagescale=true, width="
      << width << ", height=" << height << ", image=" << quote(image) << "]; picture }";
  render_dot(dot.str(), path, extension.substr(1), overwrite);
}

}  // namespace grafx
