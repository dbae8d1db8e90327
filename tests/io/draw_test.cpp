#include <grafx/graph/console.h>
#include <grafx/io/draw.h>

#include "support/test_support.h"

namespace grafx {
namespace {

using testing::contains;

TEST(Draw, DotHasALetteredBoxPerNodeAndMarksInAndOut) {
  ConsoleOptions options;
  options.n_tracks = 2;
  Graph g          = build_console(options).graph;
  std::string dot  = graph_to_dot(g);
  EXPECT_TRUE(contains(dot, "rankdir=LR"));
  for (const char* letter : {"e", "c", "n", "s", "g", "d", "r", "m"})
    EXPECT_TRUE(contains(dot, std::string("label=\"") + letter + "\"")) << letter;
  EXPECT_TRUE(contains(dot, "n0 [tooltip=\"0 in &quot;track0&quot;\", label=\"track0\""))
      << "inputs show their names";
  EXPECT_TRUE(contains(dot, "label=\"out\""));
  EXPECT_TRUE(contains(dot, "fillcolor=\"" + type_color("eq") + "\""));
  EXPECT_NE(type_color("eq"), type_color("compressor"));
  EXPECT_EQ(type_color("mix"), type_color("mute")) << "colours follow the letter";
  // A configured type draws as its processor: a serial chain named "strip" is an A, not an s.
  const NodeType strip{"strip", {"main"}, {"main"}, "serial_chain", {}};
  EXPECT_EQ(type_color(strip), type_color("serial_chain"));
  EXPECT_NE(type_color(strip), type_color("strip"));
  EXPECT_TRUE(contains(graph_to_dot(g, {true, true, "My console"}), "rankdir=TB"));
  EXPECT_TRUE(contains(graph_to_dot(g, {true, true, "My console"}), "label=\"My console\""));
  NodeId eq = g.nodes_of_type("eq").front();
  g.set_dry_wet(eq);
  g.set_bypassed(eq);
  g.set_automated(eq, "dry_wet");
  dot = graph_to_dot(g);
  EXPECT_TRUE(
      contains(dot, "n" + std::to_string(eq) + " [tooltip=\"" + std::to_string(eq) +
                        " eq &quot;track0.eq&quot;, dry/wet, bypassed, automates dry_wet\""))
      << dot;
  EXPECT_TRUE(contains(dot, "style=\"rounded,dashed\"")) << "a bypassed node is dashed";
}

TEST(Draw, MultiPortNodesShowTheirPorts) {
  NodeTypes types;
  types.add({"crossover", {"main"}, {"low", "high"}});
  types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  Graph g(types);
  NodeId in = g.add("in"), x = g.add("crossover"), sc = g.add("sidechain_compressor"),
         out = g.add("out");
  g.connect(in, x);
  g.connect(x, sc, "low");
  g.connect(x, sc, "high", "sidechain");
  g.connect(sc, out);
  std::string dot = graph_to_dot(g);
  EXPECT_TRUE(contains(dot, "<td port=\"o1\"><font point-size=\"6\">high</font></td>"));
  EXPECT_TRUE(contains(dot, "<td port=\"i1\"><font point-size=\"6\">sidechain</font></td>"));
  EXPECT_TRUE(contains(dot, "n1:o1:e -> n2:i1:w [style=dashed];")) << "a key signal is dashed";
  EXPECT_TRUE(contains(dot, "n1:o0:e -> n2:i0:w;"));
  EXPECT_TRUE(contains(dot, "label=\"in\"")) << "an unnamed input";
}

TEST(Draw, StripsBoxTheNodesOfEachTrackGroupAndBus) {
  ConsoleOptions options;
  options.n_tracks    = 2;
  options.track_names = {"kick", "bass"};
  options.chain       = {"gain_pan"};
  options.sends       = {{"reverb", {"reverb"}, {}}};
  Graph g             = build_console(options, registry_node_types()).graph;
  EXPECT_FALSE(contains(graph_to_dot(g), "subgraph"));
  DrawOptions draw;
  draw.strips     = true;
  std::string dot = graph_to_dot(g, draw);
  // kick: in, gain_pan and its send; reverb bus: mix, reverb; the master stands alone.
  EXPECT_TRUE(contains(dot, "subgraph cluster_1 {graph [label=\"kick\"")) << dot;
  EXPECT_TRUE(contains(dot,
                       "label=\"kick\", style=rounded, color=\"#bbbbbb\", fontsize=8, "
                       "margin=4]; n0; n2; n6;}"))
      << dot;
  EXPECT_TRUE(contains(dot, "label=\"reverb bus\"")) << dot;
  EXPECT_FALSE(contains(dot, "label=\"master\", style=rounded")) << dot;
}

TEST(Draw, APictureIsTheSameWhateverWasDrawnBefore) {
  // Graphviz orders the strips' boxes by its ids for their names, by default the addresses of
  // its copies of them: the same console was laid out otherwise from run to run.
  testing::TempDir dir;
  ConsoleOptions options;
  options.n_tracks     = 8;
  options.track_groups = ConsoleOptions::even_groups(8, 3);
  options.sends        = {{"reverb", {"reverb"}, {}}};
  Graph g              = build_console(options, registry_node_types()).graph;
  DrawOptions draw;
  draw.strips = true;
  draw_graph(g, dir.file("first.svg"), draw);
  const std::string first = testing::read_file(dir.file("first.svg"));
  for (int k = 0; k < 6; ++k) {  // other pictures, and memory taken and given back between
    ConsoleOptions other = options;
    other.n_tracks       = 3 + k;
    other.track_groups   = {};
    std::vector<std::string> held(size_t(50 * (k + 1)), std::string(size_t(24 + 8 * k), 'x'));
    draw_graph(build_console(other, registry_node_types()).graph, dir.file("other.svg"), draw,
               /*overwrite=*/true);
    draw_graph(g, dir.file("again.svg"), draw, /*overwrite=*/true);
    EXPECT_EQ(testing::read_file(dir.file("again.svg")), first) << "after " << k + 1;
  }
}

TEST(Draw, RendersSvgPngAndDotFilesOfBigConsoles) {
  testing::TempDir dir;
  ConsoleOptions options;
  options.n_tracks     = 40;
  options.track_groups = ConsoleOptions::even_groups(40, 6);
  Graph g              = build_console(options).graph;
  ASSERT_GT(g.n_nodes(), 300);
  draw_graph(g, dir.file("console.svg"));
  draw_graph(g, dir.file("console.png"));
  draw_graph(g, dir.file("console.dot"));
  std::string svg = testing::read_file(dir.file("console.svg"));
  EXPECT_TRUE(contains(svg, "<svg"));
  EXPECT_TRUE(contains(svg, "track39.reverb")) << "tooltips carry node names";
  std::string png = testing::read_file(dir.file("console.png"));
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_EQ(testing::read_file(dir.file("console.dot")), graph_to_dot(g));
}

TEST(Draw, Errors) {
  testing::TempDir dir;
  Graph g = build_console({}).graph;
  EXPECT_GRAFX_ERROR(draw_graph(g, dir.file("g.bmp")), "grafx.io.draw",
                     "unknown picture format \".bmp\"");
  draw_graph(g, dir.file("g.svg"));
  EXPECT_GRAFX_ERROR(draw_graph(g, dir.file("g.svg")), "grafx.io.exists", "refusing to overwrite");
  EXPECT_NO_THROW(draw_graph(g, dir.file("g.svg"), {}, true));
  EXPECT_GRAFX_ERROR(draw_graph(g, dir.file("no/g.svg")), "grafx.io.unwritable", "does not exist");
  // Too many nodes to lay out in reasonable time: refused at once (15,000 tracks once ran for
  // hours); .dot text has no limit.
  ConsoleOptions big;
  big.n_tracks      = 1300;
  Graph huge        = build_console(big).graph;
  DrawOptions small = {};
  EXPECT_GRAFX_ERROR(draw_graph(huge, dir.file("huge.svg")), "grafx.io.draw",
                     std::to_string(huge.n_nodes()) +
                         " nodes are more than a picture lays out in reasonable time (10000)");
  EXPECT_FALSE(testing::file_exists(dir.file("huge.svg")));
  EXPECT_NO_THROW(draw_graph(huge, dir.file("huge.dot")));
  small.max_nodes = 50;
  EXPECT_GRAFX_ERROR(check_drawable(g, dir.file("g.png"), small), "grafx.io.draw", "(50)");
  EXPECT_NO_THROW(check_drawable(g, dir.file("g.dot"), small));
}

}  // namespace
}  // namespace grafx
