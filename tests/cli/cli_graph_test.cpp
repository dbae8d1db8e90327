// The grafx program's graph commands, run as a user would.

#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

TEST(CliGraph, ConsoleInfoAndDraw) {
  testing::TempDir dir;
  std::string json = dir.file("console.json");
  auto r           = run_grafx(
                {"console", "--tracks", "8", "--groups", "3", "-o", json, "--draw", dir.file("console.svg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "8 tracks, 3 subgroups, 90 nodes (77 processors), 89 edges"))
      << r.out;
  Graph g = load_graph(json, console_node_types());
  EXPECT_EQ(g.n_nodes(), 90);
  EXPECT_FALSE(g.node(g.nodes_of_type("eq").front()).dry_wet);
  r = run_grafx({"console", "--tracks", "2", "--dry-wet", "-o", dir.file("wet.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Graph wet = load_graph(dir.file("wet.json"), console_node_types());
  for (NodeId id : wet.nodes())
    EXPECT_EQ(wet.node(id).dry_wet, !is_utility_type(wet.node(id).type)) << id;
  EXPECT_TRUE(testing::file_exists(dir.file("console.svg")));

  r = run_grafx({"info", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "e  eq                        11")) << r.out;
  EXPECT_TRUE(contains(r.out, "valid"));

  r = run_grafx({"draw", json, "-o", dir.file("console.png"), "--vertical", "--ids"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::read_file(dir.file("console.png")).substr(1, 3), "PNG");
}

TEST(CliGraph, ConsolesOfConfiguredTypesFromAGraphFile) {
  // --types takes the configured types (options, containers) a graph file declares; --chain
  // names them among letters.
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  testing::TempDir dir;
  auto r = run_grafx({"console", "--tracks", "3", "--groups", "0,0,1", "--types",
                      std::string(source) + "/examples/channel_strips.json", "--chain",
                      "strip,g,space", "-o", dir.file("c.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 tracks, 2 subgroups, 22 nodes (15 processors)")) << r.out;
  Graph g = load_graph(dir.file("c.json"));        // self-describing: no known types needed
  EXPECT_EQ(g.nodes_of_type("strip").size(), 5u);  // 3 tracks, 2 subgroups
  EXPECT_EQ(g.types()[g.types().id("strip")].processor_name(), "serial_chain");
  EXPECT_EQ(g.types()[g.types().id("glue")].options.at("knee"), OptionValue(std::string("hard")));
  r = run_grafx({"info", dir.file("c.json")});
  EXPECT_TRUE(contains(r.out, "A  strip                     5")) << r.out;
  r = run_grafx({"console", "--tracks", "2", "--chain", "strip,g", "-o", dir.file("x.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.graph.unknown_type] unknown node type \"strip\"")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("x.json")));
}

TEST(CliGraph, ConsolesWithSendsAndSidechainsAreBuiltAndDrawn) {
  testing::TempDir dir;
  auto r = run_grafx({"console", "--names", "kick,bass,keys", "--chain", "eg", "--send", "reverb=r",
                      "--send", "delay=ed@keys", "--sidechain", "bass=kick", "--dry-wet", "-o",
                      dir.file("r.json"), "--draw", dir.file("r.svg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 tracks, 0 subgroups, 2 send buses, 1 sidechain, ")) << r.out;
  Graph g = load_graph(dir.file("r.json"), registry_node_types());
  EXPECT_EQ(g.nodes_of_type("send").size(), 4u);
  EXPECT_EQ(g.nodes_of_type("sidechain_compressor").size(), 1u);
  EXPECT_EQ(g.node(0).name, "kick");
  std::string svg = testing::read_file(dir.file("r.svg"));
  EXPECT_TRUE(contains(svg, ">reverb bus</text>")) << "strips are boxed and named";
  EXPECT_TRUE(contains(svg, ">kick</text>")) << "inputs show their track names";
  EXPECT_TRUE(contains(svg, "stroke-dasharray")) << "the sidechain edge is dashed";

  for (auto [routing, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--sidechain", "bass=snare"},
            "no track is named \"snare\" (tracks: kick, bass, keys)"},
           {{"--sidechain", "bass=kick:c"}, "inlets main and sidechain"},
           {{"--send", "reverb"}, "expected NAME=CHAIN[@TRACK,...]"},
           {{"--send", "reverb=r@keys,keys"}, "lists track \"keys\" twice"},
           {{"--send", "reverb=7"}, "chain letter '7' names no processor"}}) {
    std::vector<std::string> args = {"console", "--names", "kick,bass,keys", "-o",
                                     dir.file("x.json")};
    args.insert(args.end(), routing.begin(), routing.end());
    r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 1) << routing[1];
    EXPECT_TRUE(contains(r.err, "[grafx.graph.invalid_console]") && contains(r.err, message))
        << r.err;
    EXPECT_FALSE(testing::file_exists(dir.file("x.json")));
  }
}

TEST(CliGraph, OutOfMemoryIsOneLineNotAnAbort) {
  // A console of 100,000 tracks under a 700 MB address-space limit: once an abort (exit 134,
  // a JSON value's destructor allocating while unwinding), now one line and exit 1.
  testing::TempDir dir;
  auto r = run_grafx({"console", "--tracks", "100000", "-o", dir.file("big.json")}, {},
                     {"sh", "-c", "ulimit -v 700000 && exec \"$0\" \"$@\""});
  if (r.exit_code == 127) GTEST_SKIP() << "the program cannot even start under the limit here";
  if (r.exit_code == 0) GTEST_SKIP() << "the console fits in the limit on this machine";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "grafx: error: [grafx.cli.out_of_memory] out of memory")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("big.json")));
}

TEST(CliGraph, InputsAreBoundedBeforeTheyAreRead) {
  testing::TempDir dir;
  // An endless file stops at the limit instead of filling the memory.
  auto r = run_grafx({"--max-input-mb", "2", "info", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err,
                       "[grafx.io.too_large] /dev/zero: larger than the input limit of "
                       "2 MiB; raise it with grafx --max-input-mb"))
      << r.err;
  ASSERT_EQ(run_grafx({"console", "--tracks", "200", "-o", dir.file("c.json")}).exit_code, 0);
  r = run_grafx({"--max-input-mb", "0.1", "info", dir.file("c.json")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.too_large] " + dir.file("c.json"))) << r.err;
  EXPECT_EQ(run_grafx({"--max-input-mb", "10", "info", dir.file("c.json")}).exit_code, 0);
  // Audio counts as the float32 samples it becomes: 1 s of stereo at 44.1 kHz is 345 KiB.
  write_audio(dir.file("a.wav"), at::zeros({2, 44100}), 44100);
  r = run_grafx(
      {"--max-input-mb", "0.3", "process", "eq", "-i", dir.file("a.wav"), "-o", dir.file("b.wav")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.too_large] " + dir.file("a.wav"))) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("b.wav")));
  r = run_grafx({"--max-input-mb", "nan", "info", dir.file("c.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "--max-input-mb: expected a finite number above 0")) << r.err;
}

TEST(CliGraph, PrunedConsolesAndExplicitGroups) {
  testing::TempDir dir;
  auto r = run_grafx({"console", "--tracks", "5", "--groups", "0,1,1,0,2", "--chain", "egr",
                      "--prune-seed", "4", "-o", dir.file("p.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "bypassed")) << r.out;
  Graph g = load_graph(dir.file("p.json"), console_node_types());
  EXPECT_NO_THROW(g.check());
  EXPECT_EQ(g.count_per_type()[NodeTypes::kMix], 4);
  EXPECT_EQ(g.nodes_of_type("compressor").size(), 0u);
}

TEST(CliGraph, ErrorsAreOneLineAndNonZeroAndLoseNothing) {
  testing::TempDir dir;
  std::string json = dir.file("c.json");
  ASSERT_EQ(run_grafx({"console", "-o", json}).exit_code, 0);
  std::string before = testing::read_file(json);

  auto r = run_grafx({"console", "-o", json});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]")) << r.err;
  EXPECT_EQ(testing::read_file(json), before) << "an existing file is never overwritten";
  EXPECT_EQ(run_grafx({"console", "-o", json, "--tracks", "3", "--force"}).exit_code, 0);
  EXPECT_NE(testing::read_file(json), before);

  r = run_grafx({"console", "--chain", "e7q", "-o", dir.file("x.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(
      r.err.rfind("grafx: error: [grafx.graph.unknown_type] chain letter '7' names no "
                  "processor; letters: m mix, e eq, E eq_stereo, Q eq_midside, c compressor, ",
                  0),
      0u)
      << r.err;
  EXPECT_TRUE(contains(r.err, "l lowpass, h highpass")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line";
  EXPECT_FALSE(testing::file_exists(dir.file("x.json")));

  r = run_grafx({"console", "--tracks", "2", "--groups", "3", "-o", dir.file("y.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "between 1 and 2 subgroups")) << r.err;
  r = run_grafx({"console", "--groups", "a,b", "-o", dir.file("y.json")});
  EXPECT_TRUE(contains(r.err, "\"a\" is not a subgroup number")) << r.err;

  testing::write_file(dir.file("bad.json"),
                      "{\"format\": \"grafx.graph\", \"version\": 1, "
                      "\"nodes\": [{\"id\": 0, \"type\": \"eqq\"}], "
                      "\"edges\": []}");
  r = run_grafx({"info", dir.file("bad.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "nodes[0]: unknown node type \"eqq\"")) << r.err;
  r = run_grafx({"draw", dir.file("bad.json"), "-o", dir.file("bad.svg")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(testing::file_exists(dir.file("bad.svg")));

  testing::write_file(dir.file("invalid.json"),
                      "{\"format\": \"grafx.graph\", \"version\": 1, \"nodes\": [{\"id\": 0, "
                      "\"type\": \"in\"}, {\"id\": 1, \"type\": \"eq\"}], \"edges\": []}");
  r = run_grafx({"info", dir.file("invalid.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "[grafx.graph.no_output]")) << r.out;
  EXPECT_TRUE(contains(r.out, "[grafx.graph.unconnected_inlet] node 1 (eq)")) << r.out;

  r = run_grafx({"nonsense"});
  EXPECT_NE(r.exit_code, 0);
  r = run_grafx({"draw", dir.file("missing.json"), "-o", dir.file("m.svg")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.unreadable]")) << r.err;
}

}  // namespace
}  // namespace grafx
