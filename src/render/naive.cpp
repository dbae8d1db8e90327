// The naive reference renderer: every live node on its own, in a topological order, straight
// from the graph (no schedule, no plan, no batching of nodes). Batched rendering must equal it.

#include <grafx/error.h>
#include <grafx/render/render.h>

#include "render/automation.h"
#include "render/checks.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

namespace grafx {

RenderResult render_naive(const Graph& graph, const Processors& processors,
                          const Parameters& parameters, const at::Tensor& sources,
                          const SongTime& time) {
  graph.check();
  const NodeTypes& types        = graph.types();
  auto counts                   = graph.count_per_type();
  const bool batched            = detail::check_sources(counts[NodeTypes::kIn], sources, false);
  const at::Tensor source_batch = batched ? sources : sources.unsqueeze(0);
  const int64_t B = source_batch.size(0), L = source_batch.size(3);
  auto per_item =
      detail::check_parameters(types, counts, detail::NodeExtras::of(graph), processors, parameters,
                               batched ? B : 0, sources.scalar_type(), sources.device());

  const std::vector<NodeId> order = graph.topological_order();
  const std::set<NodeId> live     = detail::live_nodes(graph, order);
  std::map<NodeId, int64_t> rank  = detail::parameter_rows(graph);

  std::map<NodeId, std::vector<at::Tensor>> outputs;  // [B, 1, C, L] per outlet
  std::map<NodeId, at::Tensor> results;
  std::map<std::string, std::map<std::string, std::map<NodeId, at::Tensor>>> aux;
  for (NodeId id : order) {
    if (!live.count(id)) continue;
    TypeId type = graph.node(id).type;
    if (type == NodeTypes::kIn) {
      outputs[id] = {source_batch.narrow(1, rank[id], 1)};
      continue;
    }
    auto where = [&] { return graph.describe(id); };
    std::vector<at::Tensor> inputs(size_t(types.n_inlets(type)));
    for (const Edge& e : graph.in_edges(id)) {
      std::vector<at::Tensor> sum = {outputs.at(e.source)[size_t(e.outlet)]};
      at::Tensor& u               = inputs[size_t(e.inlet)];
      if (u.defined()) sum.push_back(u);
      detail::match_channels(sum, 2, where);
      u = sum.size() > 1 ? sum[1] + sum[0] : sum[0];
    }
    if (type == NodeTypes::kOut) {
      results[id] = inputs[0];
    } else if (type == NodeTypes::kMix) {
      outputs[id] = {inputs[0]};
    } else {
      const std::string& name = types.name(type);
      auto given              = parameters.find(name);  // absent for a type without parameters
      TypeParameters node_parameters =
          given == parameters.end()
              ? TypeParameters{}
              : given->second.map([&](const std::string&, const at::Tensor& tensor) {
                  at::Tensor row = per_item.at(name) ? tensor.narrow(1, rank[id], 1).squeeze(1)
                                                     : tensor.narrow(0, rank[id], 1);
                  if (!per_item.at(name) && B > 1) {
                    std::vector<int64_t> expanded(row.sizes().begin(), row.sizes().end());
                    expanded[0] = B;
                    row         = row.expand(expanded);
                  }
                  return row;
                });
      for (auto& x : inputs) x = x.reshape({B, x.size(2), L});
      detail::match_channels(inputs, 1, where);
      const Node& node = graph.node(id);
      detail::automate_rows(node_parameters, {node.automated}, B, graph.automation(), time, L);
      at::Tensor wet = node_parameters.wet;  // raw; [B, 1] or [B, 1, L]
      if (wet.defined()) wet = wet.view({B, 1, -1});
      ProcessorOutput out = processors.at(name)->forward(inputs, node_parameters.own);
      for (int64_t o = 0; o < types.n_outlets(type); ++o) {
        int64_t passed = types.passed_inlet(type, o);
        at::Tensor dry = passed >= 0 ? inputs[size_t(passed)] : at::zeros_like(inputs[0]);
        at::Tensor y   = out.outputs[size_t(o)];
        if (node.bypassed)
          y = dry;
        else if (node.dry_wet)
          y = mix_dry_wet(dry, y, wet);
        outputs[id].push_back(y.view({B, 1, y.size(1), L}));
      }
      for (auto& [loss_name, loss] : out.aux_losses)
        aux[name][loss_name][id] =
            node.bypassed ? at::zeros({B, 1}, loss.options()) : loss.view({B, 1});
    }
  }
  RenderResult result;
  std::vector<at::Tensor> outs;
  for (const auto& [id, y] : results) outs.push_back(y);  // ascending id
  int64_t widest = 1;  // the outputs have the channels of the widest signal rendered
  for (const auto& [id, ys] : outputs)
    for (const auto& y : ys) widest = std::max(widest, y.size(2));
  for (auto& y : outs)
    if (y.size(2) < widest) y = y.expand({y.size(0), y.size(1), widest, y.size(3)});
  detail::match_channels(outs, 2, [] { return std::string("the graph's outputs"); });
  result.outputs = at::cat(outs, 1);
  if (!batched) result.outputs = result.outputs.squeeze(0);
  for (auto& [type, named] : aux)
    for (auto& [name, by_node] : named) {
      std::vector<at::Tensor> pieces;
      for (auto& [id, loss] : by_node) pieces.push_back(loss);  // ascending id
      at::Tensor all                = at::cat(pieces, 1);
      result.aux_losses[type][name] = batched ? all : all.squeeze(0);
    }
  return result;
}

}  // namespace grafx
