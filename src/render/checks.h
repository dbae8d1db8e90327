#pragma once
// Argument checks shared by the renderers (private to the library).

#include <grafx/render/render.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace grafx::detail {

/// Checks sources (K×C×L or B×K×C×L, floating point, K = n_sources, finite if asked); returns
/// whether they are batched.
bool check_sources(int64_t n_sources, const at::Tensor& sources, bool check_finite);

/// Brings signals to one channel count along `channel_dim`: the largest among them, each mono
/// signal spread to it (a mono signal is its dual-mono stereo; processors give the same result
/// for either, so both renderers may spread wherever signals meet). Throws RenderError
/// [grafx.render.channels] for two counts of which neither is 1, naming `where`.
void match_channels(std::vector<at::Tensor>& signals, int64_t channel_dim,
                    const std::function<std::string()>& where);

/// Throws RenderError [grafx.render.non_finite] naming the type, parameter and row (graph
/// order among the type's nodes) of the first NaN or infinite value; `per_item` as returned by
/// check_parameters.
void check_finite_parameters(const Parameters& parameters,
                             const std::map<std::string, bool>& per_item);

/// What a graph's nodes add to their types' processor parameters: per type, whether any node
/// carries a wet amount ("dry_wet") and the parameters any node automates ("<name>@curve", with
/// the graph's points per curve).
struct NodeExtras {
  std::vector<bool> dry_wet;
  std::vector<std::set<std::string>> automated;
  int64_t points = 1;

  static NodeExtras of(const Graph& graph);
  static NodeExtras of(const RenderPlan& plan);
};

/// The parameters of type `t` (named `type`) in a graph: its processor's specs, then
/// dry_wet_spec() where a node carries a wet amount, then curve_spec of each automated
/// parameter. Throws RenderError [grafx.render.automation] naming the type and the parameter
/// when a node automates one the processor has not, or cannot automate, and listing those it
/// can.
std::vector<ParameterSpec> type_parameter_specs(const Processor& processor, const std::string& type,
                                                TypeId t, const NodeExtras& extras);

/// Checks that `parameters` holds exactly the types of `types` with nodes (counts per type),
/// each with a processor of matching ports and exactly its type_parameter_specs, shaped
/// [N_t, spec...] or, when `batch` > 0, possibly [batch, N_t, spec...], of `dtype` on
/// `device`. Returns, per type, whether its parameters are per batch item.
std::map<std::string, bool> check_parameters(const NodeTypes& types,
                                             const std::vector<int64_t>& counts,
                                             const NodeExtras& extras, const Processors& processors,
                                             const Parameters& parameters, int64_t batch,
                                             at::ScalarType dtype, at::Device device,
                                             const std::string& where = "");

/// The nodes of `graph` that reach an `out`, given its topological `order`: the per-node
/// renderers (render_naive, Stream) render these only.
std::set<NodeId> live_nodes(const Graph& graph, const std::vector<NodeId>& order);
/// Each node's row among its type's parameters: its rank in graph order within its type.
std::map<NodeId, int64_t> parameter_rows(const Graph& graph);

}  // namespace grafx::detail
