#include <grafx/graph/console.h>

#include "support/test_support.h"

#include <functional>
#include <set>

namespace grafx {
namespace {

TEST(Console, ChainLettersNameTheRegisteredTypes) {
  auto chain = chain_from_letters("ecnsgdr");
  EXPECT_EQ(chain, (std::vector<std::string>{"eq", "compressor", "noise_gate", "stereo_imager",
                                             "gain_pan", "delay", "reverb"}));
  EXPECT_EQ(chain, console_chain());  // the default chain is the paper's
  EXPECT_EQ(chain_from_letters("gmg"), (std::vector<std::string>{"gain_pan", "mix", "gain_pan"}));
  // Variants have letters of their own.
  EXPECT_EQ(chain_from_letters("ECNQ"),
            (std::vector<std::string>{"eq_stereo", "compressor_ballistics", "noise_gate_ballistics",
                                      "eq_midside"}));
  EXPECT_GRAFX_ERROR(chain_from_letters("e7"), "grafx.graph.unknown_type",
                     "chain letter '7' names no processor; letters: m mix, e eq, E eq_stereo");
  EXPECT_EQ(chain_from_letters("lqG"),
            (std::vector<std::string>{"lowpass", "parametric_eq", "graphic_eq"}));
  EXPECT_GRAFX_ERROR(chain_from_letters(""), "grafx.graph.unknown_type",
                     "expected a chain of type letters");
}

TEST(Console, ChainsTakeOnlyOneInOneOutTypes) {
  ConsoleOptions options;
  options.n_tracks = 2;
  options.chain    = {"eq", "crossover"};
  EXPECT_GRAFX_ERROR(build_console(options, registry_node_types()), "grafx.graph.invalid_console",
                     "\"crossover\" has 1 and 2 (wire it in a graph file)");
  options.chain = {"sidechain_compressor"};
  EXPECT_GRAFX_ERROR(build_console(options, registry_node_types()), "grafx.graph.invalid_console",
                     "\"sidechain_compressor\" has 2 and 1");
}

TEST(Console, DryWetMarksEveryProcessor) {
  ConsoleOptions options;
  options.n_tracks     = 3;
  options.track_groups = {0, 0, 1};
  options.dry_wet      = true;
  Graph g              = build_console(options).graph;
  int64_t marked       = 0;
  for (NodeId id : g.nodes()) {
    EXPECT_EQ(g.node(id).dry_wet, !is_utility_type(g.node(id).type)) << g.describe(id);
    marked += g.node(id).dry_wet;
  }
  EXPECT_EQ(marked, (3 + 2) * 7);
}

TEST(Console, EvenGroupsAreContiguousAndBalanced) {
  EXPECT_EQ(ConsoleOptions::even_groups(8, 3), (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(ConsoleOptions::even_groups(3, 3), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_GRAFX_ERROR(ConsoleOptions::even_groups(2, 3), "grafx.graph.invalid_console",
                     "between 1 and 2 subgroups");
  EXPECT_GRAFX_ERROR(ConsoleOptions::even_groups(2, 0), "grafx.graph.invalid_console", "got 0");
}

TEST(Console, HasTheLayoutOfThePaper) {
  ConsoleOptions options;
  options.n_tracks     = 8;
  options.track_groups = ConsoleOptions::even_groups(8, 3);
  Console console      = build_console(options);
  const Graph& g       = console.graph;
  const int64_t chain = 7, processors = (8 + 3) * chain;
  EXPECT_EQ(g.n_nodes(), 8 + processors + 3 + 1 + 1);
  EXPECT_EQ(console.inputs, (std::vector<NodeId>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(console.group_mixes.size(), 3u);
  EXPECT_NO_THROW(g.check());
  auto counts = g.count_per_type();
  for (const auto& type : console_chain()) EXPECT_EQ(counts[size_t(g.types().id(type))], 11);
  EXPECT_EQ(counts[NodeTypes::kMix], 4);
  // Walk track 4: in -> e c n s g d r -> group 1's mix -> its chain -> master -> out.
  NodeId id = console.inputs[4];
  for (const auto& type : console_chain()) {
    ASSERT_EQ(g.successors(id).size(), 1u);
    id = g.successors(id)[0];
    EXPECT_EQ(g.type_name(id), type);
    EXPECT_EQ(g.node(id).name, "track4." + type);
  }
  ASSERT_EQ(g.successors(id), std::vector<NodeId>{console.group_mixes[1]});
  EXPECT_EQ(g.predecessors(console.group_mixes[1]).size(), 3u);
  id = console.group_mixes[1];
  for (int i = 0; i < chain; ++i) id = g.successors(id)[0];
  EXPECT_EQ(g.node(id).name, "group1.reverb");
  EXPECT_EQ(g.successors(id), std::vector<NodeId>{console.master});
  EXPECT_EQ(g.successors(console.master), std::vector<NodeId>{console.output});
}

TEST(Console, WithoutSubgroupsAndWithCustomChainAndNames) {
  ConsoleOptions options;
  options.n_tracks    = 2;
  options.chain       = {"gain_pan"};
  options.track_names = {"bass", "drums"};
  Console console     = build_console(options);
  EXPECT_TRUE(console.group_mixes.empty());
  EXPECT_EQ(console.graph.n_nodes(), 2 + 2 + 1 + 1);
  EXPECT_EQ(console.graph.node(0).name, "bass");
  NodeId gain = console.graph.successors(1)[0];
  EXPECT_EQ(console.graph.node(gain).name, "drums.gain_pan");
  EXPECT_EQ(console.graph.successors(gain), std::vector<NodeId>{console.master});
  options.chain = {};
  Console bare  = build_console(options, console_node_types());
  EXPECT_EQ(bare.graph.successors(0), std::vector<NodeId>{bare.master});
}

TEST(Console, RejectsBadOptions) {
  ConsoleOptions options;
  options.n_tracks = 0;
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console",
                     "a console takes 1 to 100000 tracks, but got 0");
  options.n_tracks = ConsoleOptions::kMaxTracks + 1;  // refused before anything is allocated
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console", "but got 100001");
  EXPECT_GRAFX_ERROR(ConsoleOptions::even_groups(int64_t(1) << 40, 2),
                     "grafx.graph.invalid_console",
                     "a console takes 1 to 100000 tracks, but got 1099511627776");
  options.n_tracks     = 3;
  options.track_groups = {0, 1};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console",
                     "a subgroup for each of the 3 tracks");
  options.track_groups = {0, 2, 2};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console",
                     "subgroup 1 has no track");
  options.track_groups = {0, -1, 0};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console", "negative");
  options.track_groups = {};
  options.track_names  = {"a"};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console", "3 track names");
  options.track_names = {};
  options.chain       = {"eq", "out"};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.invalid_console", "cannot contain");
  options.chain = {"flanger"};
  EXPECT_GRAFX_ERROR(build_console(options), "grafx.graph.unknown_type", "flanger");
}

ConsoleOptions routed_console() {
  ConsoleOptions options;
  options.n_tracks     = 4;
  options.track_names  = {"kick", "bass", "keys", "vocals"};
  options.track_groups = {0, 0, 1, 1};
  options.chain        = {"eq", "gain_pan"};
  options.dry_wet      = true;
  options.sends        = {{"reverb", {"reverb"}, {}}, {"delay", {"eq", "delay"}, {3, 2}}};
  options.sidechains   = {{1, 0, "sidechain_compressor"}, {2, 0, "sidechain_gate"}};
  return options;
}

TEST(Console, SendBusesAndSidechainsAreWiredAsDeclared) {
  ConsoleOptions options = routed_console();
  Console console        = build_console(options, registry_node_types());
  const Graph& g         = console.graph;
  EXPECT_NO_THROW(g.check());
  ASSERT_EQ(console.bus_mixes.size(), 2u);
  ASSERT_EQ(console.sidechains.size(), 2u);
  auto counts = g.count_per_type();
  EXPECT_EQ(counts[size_t(g.types().id("send"))], 4 + 2);
  EXPECT_EQ(counts[NodeTypes::kMix], 2 + 2 + 1);  // subgroups, buses, master
  // The bass: in -> e -> g -> ducked by the kick's input -> its subgroup and both its sends.
  NodeId duck = console.sidechains[0];
  EXPECT_EQ(g.type_name(duck), "sidechain_compressor");
  EXPECT_EQ(g.node(duck).name, "bass.sidechain_compressor keyed by kick");
  EXPECT_TRUE(g.node(duck).dry_wet);
  std::set<std::pair<NodeId, int64_t>> into_duck;
  for (const Edge& e : g.in_edges(duck)) into_duck.insert({e.source, e.inlet});
  NodeId bass_gain = g.successors(g.successors(console.inputs[1])[0])[0];
  EXPECT_EQ(g.type_name(bass_gain), "gain_pan");
  EXPECT_EQ(into_duck,
            (std::set<std::pair<NodeId, int64_t>>{{bass_gain, 0}, {console.inputs[0], 1}}));
  std::set<std::string> after_duck;
  for (NodeId next : g.successors(duck)) after_duck.insert(g.node(next).name);
  EXPECT_EQ(after_duck, (std::set<std::string>{"group0.mix", "bass.send to reverb"}));
  // Every track sends to the reverb bus; the keys and vocals also to the delay bus, whose chain
  // runs in order; sends and bus processors carry no wet amount (their level is the send's).
  EXPECT_EQ(g.predecessors(console.bus_mixes[0]).size(), 4u);
  EXPECT_EQ(g.predecessors(console.bus_mixes[1]).size(), 2u);
  for (NodeId send : g.predecessors(console.bus_mixes[1])) {
    EXPECT_EQ(g.type_name(send), "send");
    EXPECT_FALSE(g.node(send).dry_wet);
  }
  NodeId bus_eq = g.successors(console.bus_mixes[1])[0];
  EXPECT_EQ(g.node(bus_eq).name, "delay bus.eq");
  NodeId bus_delay = g.successors(bus_eq)[0];
  EXPECT_EQ(g.node(bus_delay).name, "delay bus.delay");
  EXPECT_FALSE(g.node(bus_delay).dry_wet);
  EXPECT_EQ(g.successors(bus_delay), std::vector<NodeId>{console.master});
  EXPECT_EQ(g.predecessors(console.master).size(), 2u + 2u);  // subgroups and buses
}

TEST(Console, RejectsBadRouting) {
  auto expect_refused = [](std::function<void(ConsoleOptions&)> change, const std::string& text) {
    ConsoleOptions options = routed_console();
    change(options);
    EXPECT_GRAFX_ERROR(build_console(options, registry_node_types()), "grafx.graph.invalid_console",
                       text);
  };
  expect_refused([](ConsoleOptions& o) { o.sends[0].name = ""; }, "send bus 0 has no name");
  expect_refused([](ConsoleOptions& o) { o.sends[1].name = "reverb"; }, "two send buses");
  expect_refused([](ConsoleOptions& o) { o.sends[0].chain = {}; }, "has no processor");
  expect_refused([](ConsoleOptions& o) { o.sends[0].chain = {"crossover"}; }, "has 1 and 2");
  expect_refused(
      [](ConsoleOptions& o) {
        o.sends[1].tracks = {3, 3};
      },
      "lists track \"vocals\" twice");
  expect_refused([](ConsoleOptions& o) { o.sends[1].tracks = {4}; }, "tracks 0 to 3");
  expect_refused([](ConsoleOptions& o) { o.sidechains[0].key = -1; }, "names track -1");
  expect_refused([](ConsoleOptions& o) { o.sidechains[0].key = 1; }, "\"bass\" by itself");
  expect_refused([](ConsoleOptions& o) { o.sidechains[0].type = "compressor"; },
                 "inlets main and sidechain");
  expect_refused([](ConsoleOptions& o) { o.sidechains[0].type = "crossover"; },
                 "inlets main and sidechain");
  expect_refused([](ConsoleOptions& o) { o.sidechains[0].type = "flanger"; }, "unknown type");
}

TEST(Console, TracksAreFoundByNameOnceOrRefused) {
  ConsoleOptions options = routed_console();  // kick, bass, keys, vocals
  EXPECT_EQ(options.track_named("keys", "--send"), 2);
  EXPECT_GRAFX_ERROR(options.track_named("snare", "--send \"echo=d@snare\""),
                     "grafx.graph.invalid_console",
                     "--send \"echo=d@snare\": no track is named \"snare\" (tracks: kick, bass, "
                     "keys, vocals)");
  options.track_names[1] = "kick";
  EXPECT_GRAFX_ERROR(options.track_named("kick", "x"), "grafx.graph.invalid_console",
                     "x: two tracks are named \"kick\"; rename one");
  options.track_names = {};  // the default names
  EXPECT_EQ(options.track_named("track3", "x"), 3);
  EXPECT_GRAFX_ERROR(options.track_named("track4", "x"), "grafx.graph.invalid_console",
                     "no track is named \"track4\"");
}

TEST(Console, MasterChainRunsFromTheMasterMixToTheOutputInOrder) {
  ConsoleOptions options;
  options.n_tracks     = 2;
  options.track_groups = {0, 1};
  options.chain        = {"gain_pan"};
  options.dry_wet      = true;
  options.master_chain = {"parametric_eq", "compressor_ballistics"};
  Console console      = build_console(options, registry_node_types());
  const Graph& g       = console.graph;
  ASSERT_EQ(g.successors(console.master).size(), 1u);
  NodeId eq = g.successors(console.master)[0];
  ASSERT_EQ(g.successors(eq).size(), 1u);
  NodeId compressor = g.successors(eq)[0];
  EXPECT_EQ(g.node(eq).name, "master.parametric_eq");
  EXPECT_EQ(g.node(compressor).name, "master.compressor_ballistics");
  EXPECT_TRUE(g.node(eq).dry_wet && g.node(compressor).dry_wet);
  EXPECT_EQ(g.successors(compressor), std::vector<NodeId>{console.output});
  EXPECT_EQ(g.predecessors(console.master).size(), 2u);  // both subgroups, as without the chain
  // Without dry_wet the chain is fully wet, as every other chain.
  options.dry_wet = false;
  Console dry     = build_console(options, registry_node_types());
  EXPECT_FALSE(dry.graph.node(dry.graph.predecessors(dry.output)[0]).dry_wet);
  options.master_chain = {"crossover"};
  EXPECT_GRAFX_ERROR(build_console(options, registry_node_types()), "grafx.graph.invalid_console",
                     "the master chain takes types of one inlet and one outlet");
}

TEST(Console, RandomPruningIsSeededAndKeepsTheGraphValid) {
  ConsoleOptions options;
  options.n_tracks     = 40;
  options.track_groups = ConsoleOptions::even_groups(40, 6);
  Graph full           = build_console(options).graph;
  Graph a = full, b = full, c = full;
  PruneOptions prune;
  prune.probability = random_pruning_rates();
  prune.seed        = 7;
  auto bypassed_a   = prune_randomly(a, prune);
  auto bypassed_b   = prune_randomly(b, prune);
  EXPECT_EQ(bypassed_a, bypassed_b);
  EXPECT_EQ(a, b);
  prune.seed = 8;
  prune_randomly(c, prune);
  EXPECT_NE(a, c);
  EXPECT_NO_THROW(a.check());
  // Pruning keeps every utility node and every track's path to the output.
  EXPECT_EQ(a.count_per_type()[NodeTypes::kMix], 7);
  EXPECT_EQ(a.n_nodes(), full.n_nodes() - int64_t(bypassed_a.size()));
  // The per-type ratio is near the paper's (46 nodes per type; loose bounds).
  auto full_counts = full.count_per_type(), counts = a.count_per_type();
  for (const auto& [type, p] : prune.probability) {
    size_t t = size_t(full.types().id(type));
    if (full_counts[t] == 0) continue;  // a registered type the console does not use
    double ratio = 1.0 - double(counts[t]) / double(full_counts[t]);
    EXPECT_NEAR(ratio, p, 0.25) << type;
  }
  PruneOptions none;
  none.probability.clear();
  Graph d = full;
  EXPECT_TRUE(prune_randomly(d, none).empty());
  EXPECT_EQ(d, full);
}

}  // namespace
}  // namespace grafx
