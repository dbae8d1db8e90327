// Feeds thousands of randomly corrupted graph files through the loader. Built with
// AddressSanitizer and UndefinedBehaviorSanitizer (see tests/CMakeLists.txt): every file must
// either load (and then round-trip) or throw one grafx::Error; nothing else is acceptable.

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>

#include "support/fuzz_campaign.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

namespace grafx {
namespace {

using json = nlohmann::json;

// The graph layer alone (no processor registry): the paper's console types by name.
const std::vector<std::string> kChain = {"eq",       "compressor", "noise_gate", "stereo_imager",
                                         "gain_pan", "delay",      "reverb"};

NodeTypes console_node_types() {
  NodeTypes types;
  for (const auto& name : kChain) types.add(name);
  return types;
}

std::vector<std::string> seed_files() {
  ConsoleOptions options;
  options.n_tracks     = 5;
  options.track_groups = ConsoleOptions::even_groups(5, 2);
  options.chain        = kChain;
  options.dry_wet      = true;
  Graph console        = build_console(options, console_node_types()).graph;
  PruneOptions prune;
  prune.seed = 3;
  for (const auto& type : kChain) prune.probability[type] = 0.5;
  prune_randomly(console, prune);
  for (NodeId id : console.nodes())  // a few bypassed nodes, for the version 2 flags
    if (id % 5 == 0 && !is_utility_type(console.node(id).type)) console.set_bypassed(id);

  NodeTypes types = console_node_types();
  types.add({"crossover", {"main"}, {"low", "high"}});
  types.add({"sidechain_compressor", {"main", "sidechain"}, {"main"}});
  Graph multi(types);
  NodeId in = multi.add("in", "bass"), key = multi.add("in", "kick");
  NodeId x = multi.add("crossover"), sc = multi.add("sidechain_compressor", "duck");
  NodeId out = multi.add("out");
  multi.connect(in, x);
  multi.connect(x, sc, "low");
  multi.connect(key, sc, "main", "sidechain");
  multi.connect(x, out, "high");
  multi.connect(sc, out);
  return {graph_to_json(console), graph_to_json(multi)};
}

/// A random JSON value of a random kind.
json random_value(std::mt19937_64& rng) {
  switch (rng() % 9) {
    case 0:
      return nullptr;
    case 1:
      return bool(rng() % 2);
    case 2:
      return int64_t(rng() % 40) - 5;
    case 3:
      return -1e300 + double(rng() % 3) * 1e300;
    case 4:
      return "main";
    case 5:
      return std::string(1 + rng() % 3, char('a' + rng() % 26));
    case 6:
      return json::array({int64_t(rng() % 10)});
    case 7:
      return json::object({{"id", int64_t(rng() % 10)}});
    default:
      return uint64_t(-1) - rng() % 3;
  }
}

/// Picks a random element (object member or array item) somewhere inside `root`.
json* random_element(json& root, std::mt19937_64& rng) {
  json* at = &root;
  for (int depth = 0; depth < 4; ++depth) {
    if (!(at->is_object() || at->is_array()) || at->empty() || rng() % 4 == 0) break;
    auto it = at->begin();
    std::advance(it, long(rng() % at->size()));
    at = &*it;
  }
  return at;
}

std::string corrupt_bytes(std::string text, std::mt19937_64& rng) {
  int edits = 1 + int(rng() % 4);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    size_t at = rng() % text.size();
    switch (rng() % 5) {
      case 0:
        text[at] = char(rng() % 256);
        break;
      case 1:
        text.erase(at, 1 + rng() % 20);
        break;
      case 2:
        text.insert(at, 1, "{}[],:\"0123456789-e.xn"[rng() % 22]);
        break;
      case 3:
        text.resize(at);
        break;
      default:
        text.insert(at, text.substr(rng() % text.size(), rng() % 30));
        break;
    }
  }
  return text;
}

std::string corrupt_structure(const std::string& text, std::mt19937_64& rng) {
  json root = json::parse(text);
  int edits = 1 + int(rng() % 3);
  for (int i = 0; i < edits; ++i) {
    json* element = random_element(root, rng);
    switch (rng() % 4) {
      case 0:
        *element = random_value(rng);
        break;  // wrong type or value
      case 1:   // remove a member or item
        if (element->is_object() && !element->empty())
          element->erase(element->begin());
        else if (element->is_array() && !element->empty())
          element->erase(element->begin() + long(rng() % element->size()));
        break;
      case 2:  // duplicate an item (duplicate ids and edges)
        if (element->is_array() && !element->empty())
          element->push_back((*element)[rng() % element->size()]);
        break;
      default:  // an edge between random nodes (dangling, self-loop, cycle, bad port)
        if (root.contains("edges") && root["edges"].is_array())
          root["edges"].push_back({{"source", int64_t(rng() % 30)},
                                   {"dest", int64_t(rng() % 30)},
                                   {"outlet", rng() % 3 ? "main" : "low"}});
    }
  }
  return root.dump();
}

void check_loads_or_throws(const std::string& text, int64_t& loaded, int64_t& rejected) {
  try {
    Graph g = graph_from_json(text, "fuzz.json", console_node_types());
    ASSERT_EQ(graph_from_json(graph_to_json(g), "again.json"), g) << text;
    ++loaded;
  } catch (const Error& e) {
    ASSERT_FALSE(e.code().empty());
    ASSERT_NE(std::string(e.what()).find("fuzz.json"), std::string::npos) << e.what();
    ++rejected;
  }
  // Any other exception escapes and fails the test; memory errors abort under the sanitizers.
}

TEST(GraphFileFuzz, CorruptedBytesLoadOrThrowOneClearError) {
  std::mt19937_64 rng(testing::fuzz_seed(1));
  int64_t loaded = 0, rejected = 0;
  const int64_t cases = testing::fuzz_cases(2500);  // per seed file
  for (const auto& file : seed_files())
    for (int64_t i = 0; i < cases; ++i)
      check_loads_or_throws(corrupt_bytes(file, rng), loaded, rejected);
  EXPECT_GT(rejected, testing::fuzz_cases(4000));
  std::cout << "bytes: " << loaded << " loaded, " << rejected << " rejected\n";
}

TEST(GraphFileFuzz, CorruptedStructureLoadsOrThrowsOneClearError) {
  std::mt19937_64 rng(testing::fuzz_seed(2));
  int64_t loaded = 0, rejected = 0;
  const int64_t cases = testing::fuzz_cases(2500);  // per seed file
  for (const auto& file : seed_files())
    for (int64_t i = 0; i < cases; ++i)
      check_loads_or_throws(corrupt_structure(file, rng), loaded, rejected);
  EXPECT_GT(rejected, testing::fuzz_cases(2500));
  EXPECT_GT(loaded, 10) << "some corruptions (a removed name, an added valid edge) still load";
  std::cout << "structure: " << loaded << " loaded, " << rejected << " rejected\n";
}

}  // namespace
}  // namespace grafx
