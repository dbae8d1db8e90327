#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>

#include "support/test_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace grafx {
namespace {

Graph multi_port_graph() {
  NodeTypes types;
  types.add("eq");
  types.add({"crossover", {"main"}, {"low", "high"}});
  types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  Graph g(types);
  NodeId in  = g.add("in", "bass");
  NodeId key = g.add("in", "kick");
  NodeId x   = g.add("crossover");
  NodeId sc  = g.add("sidechain_compressor", "duck \"low\"");
  NodeId e   = g.add("eq");
  NodeId out = g.add("out");
  g.connect(in, x);
  g.connect(x, sc, "low");
  g.connect(key, sc, "main", "sidechain");
  g.connect(x, e, "high");
  g.connect(sc, out);
  g.connect(e, out);
  g.remove(g.add("eq"));  // leaves a gap in the ids
  return g;
}

TEST(GraphJson, RoundTripsExactly) {
  Graph g          = multi_port_graph();
  std::string text = graph_to_json(g);
  Graph loaded     = graph_from_json(text);
  EXPECT_EQ(loaded, g);
  EXPECT_EQ(loaded.next_id(), 7);
  EXPECT_EQ(graph_to_json(loaded), text);
  Graph console = build_console({}).graph;
  EXPECT_EQ(graph_from_json(graph_to_json(console)), console);
}

TEST(GraphJson, ConfiguredTypesRoundTripWithTheirProcessorAndOptions) {
  NodeTypes types;
  types.add({"warm_drive",
             {"main"},
             {"main"},
             "tanh_distortion",
             {{"use_bias", true}, {"max_order", 4.0}, {"knee", std::string("hard \"x\"")}}});
  types.add({"strip",
             {"main"},
             {"main"},
             "serial_chain",
             {{"members", std::vector<std::string>{"eq", "warm_drive"}}}});
  Graph g(types);
  NodeId in = g.add("in"), a = g.add("warm_drive"), b = g.add("strip"), out = g.add("out");
  g.connect(in, a);
  g.connect(a, b);
  g.connect(b, out);
  std::string text = graph_to_json(g);
  EXPECT_NE(
      text.find(
          R"({"inlets":["main"],"name":"strip","options":{"members":["eq","warm_drive"]},"outlets":["main"],"processor":"serial_chain"})"),
      std::string::npos)
      << text;
  Graph loaded = graph_from_json(text);
  EXPECT_EQ(loaded, g);
  EXPECT_EQ(graph_to_json(loaded), text);
  const NodeType& drive = loaded.types()[loaded.types().id("warm_drive")];
  EXPECT_EQ(drive.processor_name(), "tanh_distortion");
  EXPECT_EQ(std::get<double>(drive.options.at("max_order")), 4.0);
  EXPECT_EQ(std::get<std::string>(drive.options.at("knee")), "hard \"x\"");
  // A configured type may leave out its ports: they are its processor's among the known types.
  NodeTypes known;
  known.add({"crossover", {"main"}, {"low", "high"}});
  Graph short_form = graph_from_json(R"({"format": "grafx.graph", "version": 2,
    "node_types": [{"name": "split", "processor": "crossover", "options": {"order": 4}}],
    "nodes": [{"id": 0, "type": "split"}], "edges": []})",
                                     "g.json", known);
  EXPECT_EQ(short_form.types()[short_form.types().id("split")].outlets,
            (std::vector<std::string>{"low", "high"}));
  // The same name with other options is another type.
  NodeTypes clash = types;
  EXPECT_GRAFX_ERROR(clash.add({"warm_drive", {"main"}, {"main"}, "tanh_distortion", {}}),
                     "grafx.graph.duplicate_type", "processor \"tanh_distortion\", options {");
}

TEST(GraphJson, NodeFlagsRoundTripAndVersionOneFilesLoad) {
  Graph g = build_console({}).graph;
  g.set_dry_wet(10);
  g.set_bypassed(11);
  g.set_dry_wet(11);
  std::string text = graph_to_json(g);
  EXPECT_NE(text.find(R"("dry_wet":true,"id":10,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"({"bypassed":true,"dry_wet":true,"id":11,)"), std::string::npos) << text;
  Graph loaded = graph_from_json(text, "g.json", console_node_types());
  EXPECT_EQ(loaded, g);
  EXPECT_TRUE(loaded.node(11).bypassed && loaded.node(11).dry_wet && !loaded.node(12).dry_wet);
  loaded.set_bypassed(11, false);
  EXPECT_NE(loaded, g);
  std::string version_1 = R"({"format": "grafx.graph", "version": 1,
    "nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "eq"}, {"id": 2, "type": "out"}],
    "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 2}]})";
  Graph old             = graph_from_json(version_1, "old.json", console_node_types());
  EXPECT_FALSE(old.node(1).dry_wet || old.node(1).bypassed);
  EXPECT_NE(graph_to_json(old).find("\"version\": 2"), std::string::npos)
      << "saved as the current version";
  EXPECT_GRAFX_ERROR(g.set_dry_wet(0), "grafx.graph.node_property",
                     "only processor nodes have one");
}

TEST(GraphJson, HasTheDocumentedLayout) {
  Graph g          = multi_port_graph();
  std::string text = graph_to_json(g);
  EXPECT_NE(text.find("\"format\": \"grafx.graph\""), std::string::npos);
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos);
  EXPECT_NE(text.find(R"({"inlets":["main"],"name":"crossover","outlets":["low","high"]})"),
            std::string::npos);
  EXPECT_NE(text.find(R"({"id":3,"name":"duck \"low\"","type":"sidechain_compressor"})"),
            std::string::npos);
  EXPECT_NE(text.find(R"({"dest":3,"inlet":"sidechain","source":1})"), std::string::npos);
  EXPECT_NE(text.find(R"({"dest":4,"outlet":"high","source":2})"), std::string::npos);
}

TEST(GraphJson, KnownTypesNeedNoDeclaration) {
  std::string text = R"({"format": "grafx.graph", "version": 1,
    "nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "eq"}, {"id": 2, "type": "out"}],
    "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 2}]})";
  EXPECT_GRAFX_ERROR(graph_from_json(text, "g.json"), "grafx.graph.unknown_type",
                     "g.json: nodes[1]: unknown node type \"eq\"");
  Graph g = graph_from_json(text, "g.json", console_node_types());
  EXPECT_EQ(g.n_nodes(), 3);
  EXPECT_EQ(g.types().size(), 4);
  EXPECT_EQ(g.next_id(), 3);
}

struct BadFile {
  const char* text;
  const char* code;
  const char* message;
};

void PrintTo(const BadFile& file, std::ostream* os) { *os << file.text; }

class GraphJsonErrors : public ::testing::TestWithParam<BadFile> {};

TEST_P(GraphJsonErrors, NameTheFieldOrNode) {
  EXPECT_GRAFX_ERROR(graph_from_json(GetParam().text, "g.json", console_node_types()),
                     GetParam().code, GetParam().message);
}

#define HEAD R"("format": "grafx.graph", "version": 1, )"
const BadFile kBadFiles[] = {
    BadFile{"{", "grafx.io.format", "g.json: invalid JSON: parse error at line 1, column 2"},
    BadFile{"[]", "grafx.io.format", "g.json: expected an object, but got array"},
    BadFile{R"({"version": 1, "nodes": [], "edges": []})", "grafx.io.format",
            "missing field \"format\""},
    BadFile{R"({"format": "x", "version": 1, "nodes": [], "edges": []})", "grafx.io.format",
            "format: expected \"grafx.graph\""},
    BadFile{R"({"format": "grafx.graph", "version": 4, "nodes": [], "edges": []})",
            "grafx.io.format", "version: unsupported version 4 (this grafx reads versions 1 to 3)"},
    BadFile{
        R"({"format": "grafx.graph", "version": 1, "nodes": [{"id": 0, "type": "eq", "dry_wet": true}],
                 "edges": []})",
        "grafx.io.format", "nodes[0]: unknown field \"dry_wet\""},
    BadFile{
        R"({"format": "grafx.graph", "version": 2, "nodes": [{"id": 0, "type": "eq", "dry_wet": 1}],
                 "edges": []})",
        "grafx.io.format", "nodes[0].dry_wet: expected true or false, but got an integer"},
    BadFile{
        R"({"format": "grafx.graph", "version": 2, "nodes": [{"id": 0, "type": "in", "bypassed": true}],
                 "edges": []})",
        "grafx.graph.node_property", "g.json: nodes[0]: cannot bypass node 0 (in)"},
    BadFile{"{" HEAD R"("edges": []})", "grafx.io.format", "missing field \"nodes\""},
    BadFile{"{" HEAD R"("nodes": {}, "edges": []})", "grafx.io.format",
            "nodes: expected an array, but got object"},
    BadFile{"{" HEAD R"("nodes": [], "edges": [], "extra": 1})", "grafx.io.format",
            "unknown field \"extra\""},
    BadFile{"{" HEAD R"("nodes": [{"id": "0", "type": "in"}], "edges": []})", "grafx.io.format",
            "nodes[0].id: expected an integer, but got string"},
    BadFile{"{" HEAD R"("nodes": [{"id": 1.5, "type": "in"}], "edges": []})", "grafx.io.format",
            "nodes[0].id: expected an integer, but got a fractional"},
    BadFile{"{" HEAD R"("nodes": [{"id": 18446744073709551615, "type": "in"}], "edges": []})",
            "grafx.io.format", "nodes[0].id: expected an integer up to 2^53"},
    BadFile{"{" HEAD R"("nodes": [{"id": -1, "type": "in"}], "edges": []})",
            "grafx.graph.invalid_id", "nodes[0]: node ids must be non-negative"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0}], "edges": []})", "grafx.io.format",
            "nodes[0]: missing field \"type\""},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "flanger"}], "edges": []})",
            "grafx.graph.unknown_type", "nodes[0]: unknown node type \"flanger\""},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "in", "nmae": "x"}], "edges": []})",
            "grafx.io.format", "nodes[0]: unknown field \"nmae\""},
    BadFile{"{" HEAD
            R"("nodes": [{"id": 0, "type": "in"}, {"id": 0, "type": "out"}], "edges": []})",
            "grafx.graph.duplicate_node", "nodes[1]: node id 0 is already used"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "in"}], "edges": [{"source": 0, "dest": 4}]})",
            "grafx.io.format", "edges[0].dest: no node with id 4"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "in"}], "edges": [{"dest": 0}]})",
            "grafx.io.format", "edges[0]: missing field \"source\""},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "eq"}],
                 "edges": [{"source": 0, "dest": 1, "outlet": "low"}]})",
            "grafx.graph.unknown_port", "edges[0]: edge 0.low -> 1.main"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "eq"}, {"id": 1, "type": "eq"}],
                 "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 0}]})",
            "grafx.graph.cycle", "edges[1]: edge 1.main -> 0.main would close the cycle"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "eq"}], "edges": [{"source": 0, "dest": 0}]})",
            "grafx.graph.self_loop", "edges[0]"},
    BadFile{"{" HEAD R"("nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "eq"}],
                 "edges": [{"source": 0, "dest": 1}, {"source": 0, "dest": 1}]})",
            "grafx.graph.duplicate_edge", "edges[1]"},
    BadFile{"{" HEAD R"("node_types": [{"name": "eq", "inlets": ["main"], "outlets": []},
                 {"name": "eq", "inlets": ["a", "b"], "outlets": []}], "nodes": [], "edges": []})",
            "grafx.graph.duplicate_type", "node_types[1]: node type \"eq\""},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "inlets": "main", "outlets": []}],
                 "nodes": [], "edges": []})",
            "grafx.io.format", "node_types[0].inlets: expected an array, but got string"},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "inlets": [3], "outlets": []}],
                 "nodes": [], "edges": []})",
            "grafx.io.format", "node_types[0].inlets[0]: expected a string, but got an integer"},
    BadFile{"{" HEAD R"("node_types": [{"name": "in", "inlets": [], "outlets": ["a"]}],
                 "nodes": [], "edges": []})",
            "grafx.graph.duplicate_type", "node type \"in\" is already declared"},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "processor": "eq", "options": {"a": {}}}],
                 "nodes": [], "edges": []})",
            "grafx.io.format",
            "node_types[0].options.a: expected true, false, a number, a string or an array of "
            "strings, but got object"},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "processor": "eq", "options": {"m": [1]}}],
                 "nodes": [], "edges": []})",
            "grafx.io.format", "node_types[0].options.m[0]: expected a string, but got an integer"},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "processor": "eq", "options": {"m": 1e400}}],
                 "nodes": [], "edges": []})",
            "grafx.io.format", "invalid JSON: number overflow parsing '1e400'"},
    BadFile{"{" HEAD R"("node_types": [{"name": "x", "processor": "nothing"}],
                 "nodes": [], "edges": []})",
            "grafx.io.format",
            "node_types[0]: missing field \"inlets\" (only a type naming a known processor may "
            "leave out its ports)"},
    BadFile{"{" HEAD R"("nodes": [{"id": 4, "type": "in"}], "edges": [], "next_id": 2})",
            "grafx.io.format", "next_id: must exceed every node id"},
};
INSTANTIATE_TEST_SUITE_P(Malformed, GraphJsonErrors, ::testing::ValuesIn(kBadFiles));

TEST(GraphJson, DeepNestingIsRejectedEarly) {
  std::string deep = "{" HEAD "\"nodes\": " + std::string(100000, '[') + std::string(100000, ']') +
                     ", \"edges\": []}";
  EXPECT_GRAFX_ERROR(graph_from_json(deep, "g.json"), "grafx.io.format",
                     "g.json: nesting deeper than 16 levels");
}

TEST(GraphJson, FilesAreWrittenAtomicallyAndNeverOverwrittenByDefault) {
  testing::TempDir dir;
  Graph g          = multi_port_graph();
  std::string path = dir.file("g.json");
  save_graph(g, path);
  EXPECT_EQ(load_graph(path), g);
  EXPECT_GRAFX_ERROR(save_graph(g, path), "grafx.io.exists", "refusing to overwrite");
  save_graph(Graph(g.types()), path, /*overwrite=*/true);
  EXPECT_EQ(load_graph(path).n_nodes(), 0);
  EXPECT_GRAFX_ERROR(save_graph(g, dir.file("missing/g.json")), "grafx.io.unwritable",
                     "does not exist");
  EXPECT_GRAFX_ERROR(load_graph(dir.file("nope.json")), "grafx.io.unreadable", "nope.json");
  EXPECT_GRAFX_ERROR(load_graph(dir.path()), "grafx.io.unreadable", "is a folder");
  // What is not a regular file is never replaced, even when overwriting is allowed: a pipe (as
  // /dev/null would be) stays a pipe, and a folder a folder.
  const std::string pipe = dir.file("pipe.json");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  EXPECT_GRAFX_ERROR(save_graph(g, pipe, /*overwrite=*/true), "grafx.io.unwritable",
                     "not a regular file");
  EXPECT_TRUE(std::filesystem::is_fifo(pipe));
  EXPECT_GRAFX_ERROR(write_text_file(dir.path(), "{}", /*overwrite=*/true), "grafx.io.unwritable",
                     "not a regular file");
}

TEST(GraphJson, WritesRemoveTheTemporaryFilesOfKilledWrites) {
  testing::TempDir dir;
  // A temporary file of a write by a process that is gone (pid 4194303: beyond any running
  // process here), one of this process's own, and an unrelated file.
  const std::string stale = dir.file(".g.tmp4194303-0.json"),
                    mine  = dir.file(".g.tmp" + std::to_string(::getpid()) + "-99.json"),
                    other = dir.file(".h.tmp4194303-0.json");
  for (const auto& path : {stale, mine, other}) write_text_file(path, "{}", false);
  save_graph(multi_port_graph(), dir.file("g.json"));
  EXPECT_FALSE(testing::file_exists(stale));
  EXPECT_TRUE(testing::file_exists(mine)) << "a running process's write is left alone";
  EXPECT_TRUE(testing::file_exists(other)) << "another file's temporaries are left alone";
}

// A chain in -> eq x n -> out whose edges are listed last first.
std::string backward_chain_file(int64_t n) {
  std::string nodes = "{\"id\":0,\"type\":\"in\"}", edges;
  for (int64_t i = 1; i <= n + 1; ++i)
    nodes += ",{\"id\":" + std::to_string(i) + ",\"type\":\"" + (i <= n ? "eq" : "out") + "\"}";
  for (int64_t i = n; i >= 0; --i)
    edges += std::string(i == n ? "" : ",") + "{\"source\":" + std::to_string(i) +
             ",\"dest\":" + std::to_string(i + 1) + "}";
  return "{\"format\":\"grafx.graph\",\"version\":2,\"nodes\":[" + nodes + "],\"edges\":[" + edges +
         "]}";
}

TEST(GraphJson, LoadingTakesTimeLinearInTheFile) {
  // Issue 29: each edge searched the graph for a cycle, so a 40,000-node chain listed backwards
  // took 141 s. Not a speed target (bench/schedule_bench.cpp times that file): a ratio, with a
  // wide margin, between 4x the nodes (linear: ~4x the time; quadratic: ~16x).
  auto seconds = [](int64_t n) {
    const std::string text = backward_chain_file(n);
    double best            = 1e9;
    for (int repeat = 0; repeat < 3; ++repeat) {
      auto start  = std::chrono::steady_clock::now();
      Graph graph = graph_from_json(text, "chain.json", console_node_types());
      best        = std::min(
                 best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      EXPECT_EQ(graph.n_edges(), n + 1);
      EXPECT_TRUE(graph.validate().empty());
    }
    return best;
  };
  const double small = seconds(5000), large = seconds(20000);
  EXPECT_LT(large / small, 8.0) << small << " s for 5,000 nodes, " << large << " s for 20,000";
}

TEST(GraphJson, EdgeErrorsComeInTheFileOrder) {
  // Edges are connected at once after they are read: an edge that closes a cycle still comes
  // before a malformed edge after it, and a malformed edge before a cycle after it.
  const std::string head =
      R"({"format":"grafx.graph","version":2,"nodes":[{"id":0,"type":"in"},)"
      R"({"id":1,"type":"eq"},{"id":2,"type":"eq"},{"id":3,"type":"out"}],"edges":[)";
  auto error = [&](const std::string& edges) {
    try {
      graph_from_json(head + edges + "]}", "g.json", console_node_types());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"source":1,"dest":2},{"source":2,"dest":1},{"source":9,"dest":1})"),
            "[grafx.graph.cycle] g.json: edges[1]: edge 2.main -> 1.main would close the cycle "
            "node 1 (eq) -> node 2 (eq) -> node 1 (eq)");
  EXPECT_EQ(error(R"({"source":1,"dest":2},{"source":9,"dest":1},{"source":2,"dest":1})"),
            "[grafx.io.format] g.json: edges[1].source: no node with id 9");
  EXPECT_EQ(
      error(R"({"source":1,"dest":2},{"source":1,"dest":2,"inlet":"x"},{"source":2,"dest":1})"),
      "[grafx.graph.unknown_port] g.json: edges[1]: edge 1.main -> 2.x: node type "
      "\"eq\" has no inlet \"x\"; its inlets: main");
}

}  // namespace
}  // namespace grafx
