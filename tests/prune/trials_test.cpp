// Fast pruning trials (prune/trials.h): the loss of a graph with nodes bypassed, rendering only
// what changes, equals a full re-render's, for consoles with subgroups, send buses and
// sidechains, single nodes and sets, before and after commits, in float64 and float32.

#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/prune/trials.h>
#include <grafx/render/parameters.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr SampleRate kRate = 8000;

struct Song {
  Graph graph;
  Processors processors;
  Parameters parameters;
  at::Tensor tracks, mix;
  MixLossOptions loss;
};

Song song(at::ScalarType dtype) {
  ConsoleOptions options;
  options.n_tracks     = 6;
  options.track_groups = {0, 0, 1, 1, 2, 2};
  options.chain        = default_console_chain();
  options.dry_wet      = true;
  options.sends        = {{"verb", {"reverb"}, {1, 4}}};
  options.sidechains   = {{3, 0, "sidechain_compressor"}};
  Song s;
  s.graph      = build_console(options, registry_node_types()).graph;
  s.processors = make_processors(s.graph.types(), {kRate});
  s.parameters = create_parameters(s.graph, s.processors, {2, dtype, false});
  at::manual_seed(5);
  for (auto& [type, named] : s.parameters)
    for (const auto& [name, t] : named.named()) named[name] = t + 0.3 * at::randn_like(t);
  s.tracks           = at::randn({6, 2, 4 * kRate}, at::TensorOptions().dtype(dtype)) * 0.2;
  s.mix              = at::randn({2, 4 * kRate}, at::TensorOptions().dtype(dtype)) * 0.3;
  s.loss.sample_rate = kRate;
  return s;
}

/// The reference: the whole graph with `bypassed` rendered again, in chunks, and its loss.
double full_loss(const Song& s, const std::vector<NodeId>& bypassed) {
  Graph g = s.graph;
  for (NodeId id : bypassed) g.set_bypassed(id, true);
  MixLossStream stream = MixLoss(s.loss).stream(s.tracks.size(-1));
  render_chunks(make_render_plan(to_tensor(g)), s.processors, s.parameters, s.tracks,
                [&](int64_t start, const at::Tensor& y) {
                  stream.add(y[0], s.mix.narrow(-1, start, y.size(-1)));
                });
  return stream.finish().total.item<double>();
}

double relative(double a, double b) { return std::abs(a - b) / std::abs(b); }

TEST(Trials, EqualAFullReRenderAndRenderLess) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    SCOPED_TRACE(dtype == at::kDouble ? "float64" : "float32");
    const double tolerance = dtype == at::kDouble ? 1e-10 : 1e-6;
    Song s                 = song(dtype);
    TrialEvaluator trials(s.graph, s.processors, s.parameters, s.tracks, s.mix, s.loss);
    EXPECT_LT(relative(trials.base_loss(), full_loss(s, {})), tolerance);
    int64_t processors = 0;
    for (NodeId id : s.graph.nodes()) processors += is_utility_type(s.graph.node(id).type) ? 0 : 1;
    // A track's EQ, a sidechain key track's compressor, a send, a subgroup's reverb, two at once.
    std::vector<std::vector<NodeId>> cases;
    for (const char* type : {"eq", "compressor", "send", "reverb", "sidechain_compressor"})
      cases.push_back({s.graph.nodes_of_type(type).front()});
    cases.push_back({s.graph.nodes_of_type("eq")[2], s.graph.nodes_of_type("delay")[4]});
    cases.push_back({s.graph.nodes_of_type("reverb").back()});
    for (const auto& extra : cases) {
      const double fast = trials.loss(extra);
      EXPECT_LT(relative(fast, full_loss(s, extra)), tolerance) << "node " << extra[0];
      EXPECT_LT(trials.last_trial_nodes(), processors) << "node " << extra[0];
    }
  }
}

TEST(Trials, SeveralCandidatesRenderedAsOneBatchGiveTheirOwnLosses) {
  Song s = song(at::kDouble);
  TrialEvaluator trials(s.graph, s.processors, s.parameters, s.tracks, s.mix, s.loss);
  // Trials of different shapes in one batch: a track's, a subgroup's (its bus reverb without a
  // wet amount beside the tracks' reverbs with one), the sidechain, two nodes at once.
  std::vector<std::vector<NodeId>> candidates = {
      {s.graph.nodes_of_type("eq")[3]},
      {s.graph.nodes_of_type("reverb").back()},
      {s.graph.nodes_of_type("sidechain_compressor").front()},
      {s.graph.nodes_of_type("gain_pan")[0], s.graph.nodes_of_type("delay")[5]}};
  std::vector<double> losses = trials.losses(candidates);
  ASSERT_EQ(losses.size(), candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i)
    EXPECT_LT(relative(losses[i], full_loss(s, candidates[i])), 1e-10) << "candidate " << i;
  trials.commit(candidates[1]);  // not captured in a batch: rendered again
  EXPECT_LT(relative(trials.base_loss(), full_loss(s, candidates[1])), 1e-10);
  EXPECT_LT(
      relative(trials.loss(candidates[0]), full_loss(s, {candidates[0][0], candidates[1][0]})),
      1e-10);
}

TEST(Trials, CommittedTrialsStayAndLaterTrialsSeeThem) {
  Song s = song(at::kDouble);
  TrialEvaluator trials(s.graph, s.processors, s.parameters, s.tracks, s.mix, s.loss);
  NodeId first = s.graph.nodes_of_type("eq")[1], second = s.graph.nodes_of_type("gain_pan")[1];
  NodeId third = s.graph.nodes_of_type("compressor")[5];
  trials.loss({first});
  trials.commit({first});  // the last trial: its cut signals are kept
  EXPECT_TRUE(trials.graph().node(first).bypassed);
  EXPECT_LT(relative(trials.loss({second}), full_loss(s, {first, second})), 1e-10);
  trials.loss({third});
  trials.commit({second});  // not the last trial: rendered again
  EXPECT_LT(relative(trials.loss({third}), full_loss(s, {first, second, third})), 1e-10);
}

}  // namespace
}  // namespace grafx
