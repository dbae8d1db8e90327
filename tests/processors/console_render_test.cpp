// The registered processors inside rendered mixing consoles: batched rendering (each type's
// nodes in one call) equals the naive per-node reference, outputs, auxiliary losses and every
// gradient, for the paper's chain and a chain of the variants.

#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/graph/random_graph.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using testing::relative_error;

struct Rendered {
  at::Tensor outputs, source_gradient;
  std::map<std::string, TensorDict> aux, gradients;
};

template <class RenderFunction>
Rendered render_and_backward(RenderFunction&& render_function, const Parameters& initial,
                             const at::Tensor& initial_sources) {
  Parameters parameters;
  for (const auto& [type, tensors] : initial)
    for (const auto& [name, t] : tensors.named())
      parameters[type][name] = t.detach().clone().requires_grad_(true);
  at::Tensor sources  = initial_sources.detach().clone().requires_grad_(true);
  RenderResult result = render_function(parameters, sources);
  at::manual_seed(7);
  at::Tensor loss = (result.outputs * at::randn_like(result.outputs)).sum();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) loss = loss + value.sum();
  loss.backward();
  Rendered r{result.outputs.detach(), sources.grad(), result.aux_losses, {}};
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named()) r.gradients[type][name] = t.grad();
  return r;
}

void expect_batched_equals_naive(const Graph& graph, int64_t source_channels = 2) {
  Processors processors = make_processors(graph.types(), {4000});
  Parameters parameters = create_parameters(graph, processors, {3, at::kDouble, false});
  at::manual_seed(4);
  for (auto& [type, tensors] : parameters)  // wider than the initial spread: processors act
    for (const auto& [name, t] : tensors.named()) tensors[name] = t + 0.3 * at::randn_like(t);
  GraphTensor tensor = to_tensor(graph);
  int64_t n_sources  = tensor.type_counts[tensor.types.id("in")].item<int64_t>();
  at::Tensor sources = at::randn({n_sources, source_channels, 2000}, at::kDouble) * 0.3;
  Rendered naive     = render_and_backward(
      [&](const Parameters& p, const at::Tensor& s) {
        return render_naive(graph, processors, p, s);
      },
      parameters, sources);
  EXPECT_GT(naive.outputs.abs().max().item<double>(), 0.01);
  for (auto method : {ScheduleMethod::kOptimal, ScheduleMethod::kOneByOne}) {
    SCOPED_TRACE(to_string(method));
    RenderPlan plan  = make_render_plan(tensor, method);
    Rendered batched = render_and_backward(
        [&](const Parameters& p, const at::Tensor& s) { return render(plan, processors, p, s); },
        parameters, sources);
    ASSERT_EQ(batched.outputs.sizes(), naive.outputs.sizes());
    EXPECT_LT(relative_error(batched.outputs, naive.outputs), 1e-9);
    EXPECT_LT(relative_error(batched.source_gradient, naive.source_gradient), 1e-9);
    for (const auto& [type, named] : naive.aux)
      for (const auto& [name, value] : named)
        EXPECT_LT(relative_error(batched.aux.at(type).at(name), value), 1e-9)
            << type << "." << name;
    for (const auto& [type, grads] : naive.gradients)
      for (const auto& [name, g] : grads) {
        const at::Tensor& mine = batched.gradients.at(type).at(name);
        ASSERT_EQ(mine.defined(), g.defined()) << type << "." << name;
        if (!g.defined()) continue;  // every node of the type is dead, or the parameter unused
        EXPECT_TRUE(g.isfinite().all().item<bool>()) << type << "." << name;
        // Relative, with an absolute floor for gradients that are zero up to rounding (a hard
        // knee's log_knee).
        EXPECT_LT((mine - g).abs().max().item<double>(),
                  1e-9 * g.abs().max().item<double>() + 1e-14)
            << type << "." << name;
      }
  }
}

Graph console_of(const std::vector<std::string>& chain, bool dry_wet = false) {
  NodeTypes types = console_node_types();
  for (const auto& name : chain) types.add(name);
  ConsoleOptions options;
  options.n_tracks     = 3;
  options.track_groups = {0, 1, 1};
  options.chain        = chain;
  options.dry_wet      = dry_wet;
  return build_console(options, types).graph;
}

TEST(ConsoleRender, ThePapersChainBatchedEqualsNaive) {
  expect_batched_equals_naive(console_of(console_chain()));
}

TEST(ConsoleRender, DryWetMixesFoldedIntoTheProcessorsEqualTheMixAfter) {
  // The dynamics, the imager and gain/pan fold a node's dry/wet mix into their gain or matrix
  // (Processor::forward_mixed); the naive reference mixes after each node. Mono sources: the
  // channel matrices take them as dual mono, the mix as a broadcast dry signal.
  const Graph graph = console_of(console_chain(), true);
  expect_batched_equals_naive(graph);
  expect_batched_equals_naive(graph, 1);
}

TEST(ConsoleRender, TheDelaysMixFoldedIntoItsResponsesEqualsTheMixAfterInEveryLayout) {
  // The delay folds its mix into its responses (w·h + (1 − w)·δ): in each channel layout, with
  // stereo and mono sources, against the naive render's mix after the node.
  for (const char* layout : {"stereo", "midside", "mono"}) {
    SCOPED_TRACE(layout);
    NodeTypes types = console_node_types();
    types.add(
        {"delay_" + std::string(layout), {"main"}, {"main"}, "delay", {{"channels", layout}}});
    types.add("gain_pan");
    ConsoleOptions options;
    options.n_tracks     = 3;
    options.track_groups = {0, 1, 1};
    options.chain        = {"delay_" + std::string(layout), "gain_pan"};
    options.dry_wet      = true;
    const Graph graph    = build_console(options, types).graph;
    expect_batched_equals_naive(graph);
    expect_batched_equals_naive(graph, 1);
  }
}

TEST(ConsoleRender, TheVariantsBatchedEqualNaive) {
  expect_batched_equals_naive(
      console_of({"eq_midside", "compressor_ballistics", "noise_gate_ballistics", "eq_stereo",
                  "stereo_imager", "gain_pan", "delay", "reverb"}));
}

TEST(ConsoleRender, FiltersAndEqualizersBatchedEqualNaive) {
  expect_batched_equals_naive(
      console_of({"parametric_eq_midside", "graphic_eq", "lowpass", "state_variable_filter",
                  "fir_eq", "pole_zero", "gain_pan"}));
}

TEST(ConsoleRender, TheMultiPortExamplesBatchedEqualNaive) {
  // examples/multiband_compressor.json: a 3-band crossover feeding one compressor per band;
  // examples/ducking.json: a bass ducked by the kick through a sidechain compressor.
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  // examples/mid_side.json: an EQ on the mid and a compressor on the side, merged again.
  // examples/channel_strips.json: configured types and containers.
  for (const char* name : {"multiband_compressor", "ducking", "mid_side", "channel_strips"}) {
    SCOPED_TRACE(name);
    expect_batched_equals_naive(
        load_graph(std::string(source) + "/examples/" + name + ".json", registry_node_types()));
  }
}

TEST(ConsoleRender, SendBusesAndSidechainsBatchedEqualNaive) {
  ConsoleOptions options;
  options.n_tracks     = 4;
  options.track_groups = {0, 0, 1, 1};
  options.chain        = {"eq", "gain_pan"};
  options.dry_wet      = true;
  options.sends        = {{"reverb", {"reverb"}, {}}, {"delay", {"delay"}, {1, 3}}};
  options.sidechains   = {{1, 0, "sidechain_compressor"}, {3, 2, "sidechain_gate"}};
  expect_batched_equals_naive(build_console(options, registry_node_types()).graph);
}

TEST(ConsoleRender, BypassedSendsSendNothingAndTheirBusGoesWithThem) {
  // A console whose sends are all bypassed renders as the same console built without its bus;
  // so does the graph with those sends taken out (Graph::bypass), the bus going with them.
  ConsoleOptions options;
  options.n_tracks            = 3;
  options.track_groups        = {0, 1, 1};
  options.chain               = {"eq", "gain_pan"};
  options.dry_wet             = true;
  const Graph without         = build_console(options, registry_node_types()).graph;
  options.sends               = {{"reverb", {"reverb"}, {}}};
  Graph with                  = build_console(options, registry_node_types()).graph;
  const Processors processors = make_processors(with.types(), {4000});
  Parameters parameters       = create_parameters(with, processors, {3, at::kDouble, false});
  at::manual_seed(4);
  for (auto& [type, tensors] : parameters)
    for (const auto& [name, t] : tensors.named()) tensors[name] = t + 0.3 * at::randn_like(t);
  const at::Tensor sources = at::randn({3, 2, 2000}, at::kDouble) * 0.3;
  Parameters without_bus   = parameters;
  without_bus.erase("send"), without_bus.erase("reverb");
  const at::Tensor expected =
      render(make_render_plan(to_tensor(without)), processors, without_bus, sources).outputs;

  auto rendered = [&](const Graph& graph, const Parameters& p) {
    return render(make_render_plan(to_tensor(graph)), processors, p, sources).outputs;
  };
  EXPECT_GT(relative_error(rendered(with, parameters), expected), 0.01) << "the bus is heard";
  for (NodeId send : with.nodes_of_type("send")) with.set_bypassed(send);
  EXPECT_LT(relative_error(rendered(with, parameters), expected), 1e-12);
  EXPECT_LT(relative_error(render_naive(with, processors, parameters, sources).outputs, expected),
            1e-12);

  Graph pruned = with;
  pruned.set_bypassed(pruned.nodes_of_type("reverb").front());
  std::vector<NodeId> removed;
  for (NodeId send : with.nodes_of_type("send"))
    for (NodeId node : pruned.bypass(send)) removed.push_back(node);
  EXPECT_EQ(removed.size(), 3u + 2u) << "three sends, the bus's mix and its reverb";
  EXPECT_EQ(pruned.n_nodes(), without.n_nodes());
  EXPECT_TRUE(pruned.validate().empty());
  EXPECT_LT(
      relative_error(rendered(pruned, parameters_without(with, parameters, removed)), expected),
      1e-12);
}

TEST(ConsoleRender, ConfiguredTypesAndContainersBatchedEqualNaive) {
  // Types of the graph file that configure processors: options, and containers whose members
  // are registered processors and other configured types.
  NodeTypes types = console_node_types();
  types.add({"biased_drive",
             {"main"},
             {"main"},
             "tanh_distortion",
             {{"use_bias", true}, {"inverse_post_gain", false}}});
  types.add({"smooth_compressor",
             {"main"},
             {"main"},
             "compressor",
             {{"knee", std::string("exponential")},
              {"gain_smoothing", std::string("ballistics")},
              {"gain_smoothing_domain", std::string("log")}}});
  types.add({"strip",
             {"main"},
             {"main"},
             "serial_chain",
             {{"members", std::vector<std::string>{"eq", "biased_drive", "smooth_compressor"}}}});
  types.add({"effects",
             {"main"},
             {"main"},
             "parallel_mix",
             {{"members", std::vector<std::string>{"delay", "strip", "gain_pan"}},
              {"activation", std::string("softplus")}}});
  ConsoleOptions options;
  options.n_tracks     = 3;
  options.track_groups = {0, 1, 1};
  options.chain        = {"strip", "smooth_compressor", "effects"};
  expect_batched_equals_naive(build_console(options, types).graph);
}

/// A seeded random DAG (dead nodes, parallel edges, several ins and outs) whose test types are
/// replaced by registered processors with as many ports.
Graph random_processor_graph(uint64_t seed,
                             const std::map<std::string, std::string>& processor_of) {
  RandomGraphOptions options;
  options.n_processors = 8 + int64_t(seed % 8);
  options.n_types      = 3;
  Graph test_graph     = random_graph(seed, options);
  Graph graph(registry_node_types());
  for (NodeId id : test_graph.nodes()) {
    const std::string& type = test_graph.type_name(id);
    graph.insert(id, processor_of.count(type) ? processor_of.at(type) : type);
    if (seed % 3 == 0 && !is_utility_type(graph.node(id).type)) graph.set_dry_wet(id);
  }
  for (const Edge& e : test_graph.edges()) {
    const NodeTypes& types = graph.types();
    graph.connect(e.source, e.dest, types[graph.node(e.source).type].outlets[size_t(e.outlet)],
                  types[graph.node(e.dest).type].inlets[size_t(e.inlet)]);
  }
  return graph;
}

TEST(ConsoleRender, RandomGraphsOfMultiPortProcessorsBatchedEqualNaive) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_batched_equals_naive(random_processor_graph(
        seed, {{"p0", "eq"},
               {"p1", "send"},
               {"p2", seed % 2 ? "compressor" : "lowpass"},
               {"split", "crossover"},
               {"duck", seed % 2 ? "sidechain_compressor" : "sidechain_gate"}}));
  }
}

TEST(ConsoleRender, GraphsThatChangeChannelCountsBatchedEqualNaive) {
  // Mono and stereo sources; mid/side splits and merges, mono-to-stereo, and processors that
  // need stereo (gain/pan, reverb) taking mono, all meeting in batched calls and mixes.
  int64_t mixed = 0;
  for (uint64_t seed = 10; seed < 18; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Graph graph = random_processor_graph(
        seed, {{"p0", seed % 2 ? "eq" : "gain_pan"},
               {"p1", "mono_to_stereo"},
               {"p2", seed % 4 < 2 ? "compressor" : "reverb"},
               {"split", seed % 3 ? "stereo_to_mid_side" : "crossover"},
               {"duck", seed % 3 ? "mid_side_to_stereo" : "sidechain_compressor"}});
    mixed += !graph.nodes_of_type("stereo_to_mid_side").empty() ||
             (seed % 2 && !graph.nodes_of_type("mono_to_stereo").empty());
    expect_batched_equals_naive(graph, seed % 2 ? 1 : 2);
  }
  EXPECT_GE(mixed, 4) << "graphs in which channel counts change";
}

}  // namespace
}  // namespace grafx
