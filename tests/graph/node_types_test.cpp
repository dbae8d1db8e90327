#include <grafx/graph/node_types.h>

#include "support/test_support.h"

namespace grafx {
namespace {

TEST(NodeTypes, UtilityTypesComeFirstAtFixedIndices) {
  NodeTypes types;
  ASSERT_EQ(types.size(), 3);
  EXPECT_EQ(types.id("in"), NodeTypes::kIn);
  EXPECT_EQ(types.id("out"), NodeTypes::kOut);
  EXPECT_EQ(types.id("mix"), NodeTypes::kMix);
  EXPECT_TRUE(types[NodeTypes::kIn].inlets.empty());
  EXPECT_EQ(types[NodeTypes::kIn].outlets, std::vector<std::string>{"main"});
  EXPECT_EQ(types[NodeTypes::kOut].inlets, std::vector<std::string>{"main"});
  EXPECT_TRUE(types[NodeTypes::kOut].outlets.empty());
  EXPECT_EQ(types.n_inlets(NodeTypes::kMix), 1);
  EXPECT_EQ(types.n_outlets(NodeTypes::kMix), 1);
  EXPECT_TRUE(is_utility_type(NodeTypes::kMix));
  EXPECT_FALSE(is_utility_type(3));
}

TEST(NodeTypes, AddsSingleAndMultiPortTypes) {
  NodeTypes types;
  TypeId eq        = types.add("eq");
  TypeId crossover = types.add({"crossover", {"main"}, {"low", "high"}});
  TypeId sidechain = types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  EXPECT_EQ(eq, 3);
  EXPECT_EQ(crossover, 4);
  EXPECT_EQ(types.name(sidechain), "sidechain_compressor");
  EXPECT_TRUE(types.contains("crossover"));
  EXPECT_FALSE(types.contains("reverb"));
  EXPECT_EQ(types.outlet_index(crossover, "high"), 1);
  EXPECT_EQ(types.inlet_index(sidechain, "sidechain"), 1);
  EXPECT_EQ(types.add("eq"), eq) << "re-adding an identical type returns its id";
  EXPECT_FALSE(types.single_port_only());
  NodeTypes simple;
  simple.add("eq");
  EXPECT_TRUE(simple.single_port_only());
}

TEST(NodeTypes, Errors) {
  NodeTypes types;
  types.add("eq");
  EXPECT_GRAFX_ERROR(types.id("eqq"), "grafx.graph.unknown_type", "unknown node type \"eqq\"");
  EXPECT_GRAFX_ERROR(types.add({"eq", {"main", "sidechain"}, {"main"}}),
                     "grafx.graph.duplicate_type", "already declared");
  EXPECT_GRAFX_ERROR(types.add({"x", {"a", "a"}, {"main"}}), "grafx.graph.invalid_type",
                     "listed twice");
  EXPECT_GRAFX_ERROR(types.add({"x", {""}, {"main"}}), "grafx.graph.invalid_type", "empty name");
  EXPECT_GRAFX_ERROR(types.add(""), "grafx.graph.invalid_type", "needs a name");
  EXPECT_GRAFX_ERROR(types.inlet_index(types.id("eq"), "sidechain"), "grafx.graph.unknown_port",
                     "has no inlet \"sidechain\"; its inlets: main");
  EXPECT_GRAFX_ERROR(types.outlet_index(NodeTypes::kOut, "main"), "grafx.graph.unknown_port",
                     "its outlets: none");
}

TEST(NodeTypes, PassedInletsAndEquality) {
  NodeTypes types;
  TypeId crossover = types.add({"crossover", {"main"}, {"low", "high"}});
  TypeId duck      = types.add({"duck", {"main", "sidechain"}, {"main"}});
  TypeId merge     = types.add({"merge", {"mid", "side"}, {"left", "side"}});
  EXPECT_EQ(types.passed_inlet(crossover, 0), 0);   // everything goes to the first outlet
  EXPECT_EQ(types.passed_inlet(crossover, 1), -1);  // and nothing to the others
  EXPECT_EQ(types.passed_inlet(duck, 0), 0);        // the sidechain is dropped
  EXPECT_EQ(types.passed_inlet(merge, 0), 0);
  EXPECT_EQ(types.passed_inlet(merge, 1), 1);  // namesakes pass through
  EXPECT_EQ(types.passed_inlet(NodeTypes::kMix, 0), 0);
  NodeTypes a, b;
  a.add("eq");
  EXPECT_NE(a, b);
  b.add("eq");
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace grafx
