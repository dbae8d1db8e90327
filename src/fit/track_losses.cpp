#include <grafx/fit/track_losses.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/chunked.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <set>

namespace grafx {
namespace {

/// A track's own part of a graph: the processor nodes only its `in` node feeds, and the signals
/// leaving the part, its `in` node included.
struct OwnPart {
  int64_t track = 0;
  std::vector<NodeId> processors;                 ///< not bypassed, in id order
  std::vector<std::pair<NodeId, int64_t>> exits;  ///< (node, outlet) feeding a node outside
};

std::vector<OwnPart> own_parts(const Graph& graph) {
  std::map<NodeId, std::set<int64_t>> fed_by;  // the tracks each node is fed from
  std::vector<OwnPart> parts;
  for (NodeId id : graph.nodes())  // sources feed `in` nodes in id order
    if (graph.node(id).type == NodeTypes::kIn) {
      fed_by[id] = {int64_t(parts.size())};
      parts.push_back({int64_t(parts.size()), {}, {}});
    }
  for (NodeId id : graph.topological_order())
    for (NodeId next : graph.successors(id))
      fed_by[next].insert(fed_by[id].begin(), fed_by[id].end());
  auto owner = [&](NodeId id) {  // the track whose own part holds the node, or −1
    const std::set<int64_t>& tracks = fed_by[id];
    return tracks.size() == 1 && graph.node(id).type != NodeTypes::kOut ? *tracks.begin()
                                                                        : int64_t(-1);
  };
  for (NodeId id : graph.nodes()) {
    const int64_t track = owner(id);
    if (track < 0) continue;
    OwnPart& part    = parts[size_t(track)];
    const Node& node = graph.node(id);
    if (!is_utility_type(node.type) && !node.bypassed) part.processors.push_back(id);
    std::set<std::pair<NodeId, int64_t>> exits;
    for (const Edge& e : graph.out_edges(id))
      if (owner(e.dest) != track) exits.insert({id, e.outlet});
    part.exits.insert(part.exits.end(), exits.begin(), exits.end());
  }
  parts.erase(std::remove_if(parts.begin(), parts.end(),
                             [](const OwnPart& p) { return p.processors.empty(); }),
              parts.end());
  return parts;
}

}  // namespace

std::vector<TrackLoss> track_losses(const Fitter& fitter,
                                    const std::function<void(int64_t, int64_t)>& progress) {
  c10::NoGradGuard no_grad;
  const Graph graph                = fitter.rendered_graph();
  const Parameters parameters      = fitter.rendered_parameters();
  const Processors& processors     = fitter.processors();
  const at::Tensor& tracks         = fitter.tracks();  // K×C×L
  const std::vector<OwnPart> parts = own_parts(graph);
  if (parts.empty()) return {};
  const int64_t total             = 1 + int64_t(parts.size());
  const ScheduleOptions& schedule = fitter.options().schedule;
  const ChunkOptions whole_song   = ChunkOptions::whole_song(fitter.sample_rate());

  // What each part sends on, rendered once through an `out` per exit and reduced as it comes
  // to the least-squares gain per channel: Σ x·y over Σ x·x, summed over the part's exits.
  Graph probe = graph;
  std::vector<std::vector<int64_t>> outputs_of(parts.size());  // the exits' rows of the outputs
  int64_t row = int64_t(graph.nodes_of_type("out").size());    // new `out`s come last by id
  for (size_t p = 0; p < parts.size(); ++p)
    for (const auto& [node, outlet] : parts[p].exits) {
      const NodeId out = probe.add("out");
      probe.connect(node, out, graph.types()[graph.node(node).type].outlets[size_t(outlet)]);
      outputs_of[p].push_back(row++);
    }
  std::vector<at::Tensor> sent(parts.size()), power(parts.size());  // [C] each, float64
  render_chunks(
      make_render_plan(to_tensor(probe), schedule), processors, parameters, tracks,
      [&](int64_t start, const at::Tensor& outputs) {  // [n_out, C, T]
        for (size_t p = 0; p < parts.size(); ++p) {
          at::Tensor x = tracks[parts[p].track].narrow(-1, start, outputs.size(-1));
          x            = x.to(at::kDouble).expand({outputs.size(1), x.size(-1)});  // mono spreads
          at::Tensor y = outputs.index_select(0, at::tensor(outputs_of[p]).to(outputs.device()))
                             .to(at::kDouble);
          const at::Tensor xy = (y * x).sum(at::IntArrayRef{0, 2});
          const at::Tensor xx = x.square().sum(1) * double(y.size(0));
          sent[p]             = sent[p].defined() ? sent[p] + xy : xy;
          power[p]            = power[p].defined() ? power[p] + xx : xx;
        }
      },
      whole_song);
  if (progress) progress(1, total);

  // Each part bypassed, its track scaled by those gains: the loss of that mix.
  std::vector<TrackLoss> result;
  for (size_t p = 0; p < parts.size(); ++p) {
    const at::Tensor gain = at::where(power[p] > 0, sent[p] / power[p], at::zeros_like(power[p]));
    Graph as_gain         = graph;
    for (NodeId id : parts[p].processors) as_gain.set_bypassed(id);
    at::Tensor sources = tracks.expand({tracks.size(0), gain.size(0), tracks.size(2)}).clone();
    sources[parts[p].track].mul_(gain.to(sources.options()).unsqueeze(1));
    TrackLoss t;
    t.track                 = parts[p].track;
    t.nodes                 = parts[p].processors;
    const at::Tensor on_cpu = gain.to(at::kCPU).contiguous();
    t.gain =
        std::vector<double>(on_cpu.data_ptr<double>(), on_cpu.data_ptr<double>() + on_cpu.numel());
    t.loss =
        whole_song_terms(make_render_plan(to_tensor(as_gain), schedule), processors, parameters,
                         sources, fitter.target(), fitter.sample_rate(), fitter.options().loss)
            .total.item<double>();
    result.push_back(std::move(t));
    if (progress) progress(int64_t(p) + 2, total);
  }
  return result;
}

}  // namespace grafx
