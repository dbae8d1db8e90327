#pragma once
/// Creating, checking and describing the raw parameters of a graph.
///
///   Parameters p = create_parameters(graph, processors, {/*seed=*/0});
///   std::cout << describe_parameters(graph, processors, p);   // physical units per node
///
/// Parameters are kept in graph order: for each processor type, one row per node of that type,
/// in ascending node id (dead nodes included), so a parameter set stays valid whatever the
/// schedule.

#include <grafx/graph/graph.h>
#include <grafx/render/render.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace grafx {

struct ParameterOptions {
  uint64_t seed        = 0;  ///< same seed, same values, on every platform
  at::ScalarType dtype = at::kFloat;
  bool requires_grad   = true;
};

/// The specs of a type's values in `graph` (TypeParameters, by name): its processor's specs,
/// plus `dry_wet_spec()` when any node of the type carries a wet amount and a curve_spec for
/// each parameter any node automates (one row per node of the type either way). Throws RenderError
/// [grafx.render.automation] for a parameter the processor cannot automate.
std::vector<ParameterSpec> graph_parameter_specs(const Graph& graph, const std::string& type,
                                                 const Processor& processor);

/// The parameter an automation curve's raw name belongs to ("log_gain" of "log_gain@curve"),
/// or "" for a name that is not a curve's.
std::string automated_parameter(const std::string& name);

/// Whether a node uses its row of the type's values named `parameter` (TypeParameters names):
/// the wet amount's where it carries one, a curve's where it automates its parameter, any other
/// where it does not automate it.
bool node_has(const Node& node, const std::string& parameter);

/// Initial raw parameters from the processors' specs: N(init_mean, init_std²) per element,
/// drawn from a generator seeded by (seed, type, parameter), so adding a type to a graph does
/// not change the others' values. Automation curves start constant, at their parameter's
/// initial values.
Parameters create_parameters(const Graph& graph, const Processors& processors,
                             const ParameterOptions& options = {});

/// `parameters` with the automation curves `graph` needs and they lack, each constant at its
/// parameter's values (where a fit of the graph without automation left them), and without
/// curves the graph does not automate.
Parameters with_curves(const Graph& graph, const Processors& processors, Parameters parameters);

/// The checks every render makes of a graph before it reads audio, in its order: the graph is
/// valid (Graph::check), each of its types has a processor with its ports that takes its
/// options at `config`'s sample rate (make_processors), and initial parameters can be made
/// (create_parameters). Throws the first problem's error; returns the processors. `grafx info`
/// and `grafx render` share it, so that no graph is called valid that every render refuses.
Processors renderable_processors(const Graph& graph, const ProcessorConfig& config);

/// Node `id`'s row in its type's values (the rows follow Graph::nodes_of_type).
int64_t row_in_type(const Graph& graph, NodeId id);

/// Sets node `id`'s raw parameters (its row of its type's) to physical settings: {physical
/// name: value of the parameter's per-node shape}, "wet" for its dry/wet amount; names the node
/// has no parameter of are ignored. In place, without gradient tracking.
void set_physical(const Graph& graph, const Processor& processor, Parameters& parameters, NodeId id,
                  const TensorDict& settings);

/// Throws RenderError naming the type and parameter unless `parameters` has exactly the
/// processor types of `graph` that have nodes, each with exactly its specs' parameters of
/// shape [N_t, spec...] (or [B, N_t, spec...] when `batch` > 0), all of `dtype`.
void check_parameters(const Graph& graph, const Processors& processors,
                      const Parameters& parameters, int64_t batch = 0,
                      at::ScalarType dtype = at::kFloat);

/// Copies of `parameters` that share no storage with them, detached (leaves that require
/// gradients when `requires_grad`).
Parameters cloned_parameters(const Parameters& parameters, bool requires_grad = false);

/// The parameters of `graph` without the nodes `removed`: each type's rows of the nodes that
/// remain, in order; no wet amounts or curve for a type whose remaining nodes carry none, and no
/// entry for a type left without nodes. What the graph with those nodes removed (Graph::remove
/// or bypass) takes.
Parameters parameters_without(const Graph& graph, const Parameters& parameters,
                              const std::vector<NodeId>& removed);

/// A table of every node's parameters in physical units (scalars in full; vectors summarised
/// by range and mean).
std::string describe_parameters(const Graph& graph, const Processors& processors,
                                const Parameters& parameters);

}  // namespace grafx
