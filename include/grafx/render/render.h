#pragma once
/// Rendering: a RenderPlan executed with processors and parameters on source audio.
///
///   RenderPlan plan = make_render_plan(to_tensor(graph), {ScheduleMethod::kOptimal});
///   Processors processors = make_processors(graph.types(), {sample_rate});
///   Parameters parameters = create_parameters(plan, processors, {seed});
///   RenderResult result = render(plan, processors, parameters, sources);
///   loss(result.outputs).backward();   // gradients reach every parameter
///
/// Shapes:
///   sources      K×C×L, or B×K×C×L for a batch of B source sets through one graph
///                (source k feeds the k-th `in` node in id order)
///   parameters   per processor type, per parameter: N_t×... (shared across the batch) or
///                B×N_t×... (one set per batch item), N_t = nodes of that type in the graph,
///                rows in graph order (ascending node id)
///   outputs      n_out×C×L or B×n_out×C×L, one per `out` node in id order
///
/// Channels: processors may change the channel count (a mid/side split's outlets are mono;
/// mono_to_stereo's output is stereo). Where signals of different counts meet (a mix, the
/// inlets of one call, the rows of a batched call, the outputs) mono is spread to the wider
/// count: a mono signal is its dual-mono stereo, and every registered processor gives the same
/// result for either (a contract test). The outputs have the channel count of the widest
/// signal rendered, the same in every schedule and in render_naive. Other counts that meet
/// (2 and 3) are refused: RenderError [grafx.render.channels].
///
/// Each step stacks the ready nodes of one type into one processor call. Step outputs are kept
/// as separate tensors (no shared signal buffer is copied or written in place), cut once into
/// the pieces later steps read (so that a gradient is one concatenation, not a full-size zero
/// tensor per reader), and released as soon as no later step reads them, so autograd keeps
/// only what a backward needs.

#include <grafx/plan/render_plan.h>
#include <grafx/processors/registry.h>
#include <grafx/render/type_parameters.h>

#include <ATen/Tensor.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace grafx {

/// Gradient surgery on one type's parameters, applied to each parameter's gradient as it flows
/// back to the caller's tensors (rows in plan order, one row per node; see RenderPlan).
struct GradientHook {
  std::function<at::Tensor(const std::string& parameter, const at::Tensor& gradient)> apply;

  /// Scales each node's gradient (of each parameter) down to at most `max_norm`.
  static GradientHook clip_norm(double max_norm);
  /// Divides each node's gradient (of each parameter) by its norm (plus `eps`).
  static GradientHook normalize(double eps = 1e-7);
  /// Any function of (parameter name, gradient) returning the new gradient.
  static GradientHook custom(std::function<at::Tensor(const std::string&, const at::Tensor&)> f);
};

/// Gradient surgery on signals (the Tangent paper's insert_grad_of): a function applied to the
/// cotangent of a node's outputs or of one edge as it flows back, [B, C, L] (B = 1 for unbatched
/// sources), returning the cotangent to pass on (same shape). Both the autograd renderer and the
/// adjoint executor (render/adjoint.h) apply it at the same place.
struct SignalHook {
  std::function<at::Tensor(const at::Tensor& cotangent)> apply;
  /// What it does, as text ("scale:0.5", "clip:1", "stop", "custom"): a fit's checkpoint
  /// records it, so that a resume with other hooks is refused.
  std::string description = "custom";
  /// Multiplies the cotangent by `factor` (0 stops it; −1 flips it).
  static SignalHook scale(double factor);
  /// Scales each batch item's cotangent down to a norm of at most `max_norm`.
  static SignalHook clip_norm(double max_norm);
  /// Lets no gradient through (the signal is treated as a constant).
  static SignalHook stop();
  /// Any function of the cotangent.
  static SignalHook custom(std::function<at::Tensor(const at::Tensor&)> f);
};

/// What an observer sees after each step.
struct StepView {
  int64_t index        = 0;  ///< step index in the plan
  const PlanStep* step = nullptr;
  std::vector<NodeId> nodes;        ///< graph ids of the step's nodes
  std::vector<at::Tensor> inputs;   ///< one per inlet, [B,] m × C × L (empty for `in`)
  std::vector<at::Tensor> outputs;  ///< one per outlet, [B,] m × C × L (`out`: its input)
};

/// Where rendered samples lie on the song's clock, on which automation curves are drawn
/// (graph.h, Automation): needed to render a graph that automates parameters.
struct SongTime {
  SampleRate sample_rate = 0;  ///< of the sources; 0: unknown (automated graphs are refused)
  int64_t first_sample   = 0;  ///< the song sample the sources' first sample is
  /// For a batch of sources that lie at different places of the song (a fit's crops): the
  /// first sample of each batch item; empty: `first_sample` for all.
  std::vector<int64_t> item_first_samples;
  /// The same first samples held on the sources' device (B values, or one for all), which then
  /// take the place of `first_sample` and `item_first_samples`: the curves read their place
  /// there, so that a captured fit step replays at each crop's own place
  /// (dsp::piecewise_linear_at).
  at::Tensor first_samples;
};

struct RenderOptions {
  /// Where the sources lie on the song's clock (for automation curves).
  SongTime time;
  /// Types whose parameters get no gradient (and no gradient work).
  std::set<std::string> frozen_types;
  /// Per-type gradient hooks.
  std::map<std::string, GradientHook> gradient_hooks;
  /// Signal hooks on the cotangents of nodes' outputs (every outlet) and of edges. A node or
  /// edge that is not rendered (absent or dead) is refused: RenderError [grafx.render.hooks].
  std::map<NodeId, SignalHook> node_gradient_hooks;
  std::map<Edge, SignalHook> edge_gradient_hooks;
  /// Called after every step (metering, debugging).
  std::function<void(const StepView&)> observer;
  /// Throws RenderError [grafx.render.non_finite] for NaN or infinite source samples or
  /// parameter values, naming the source or the type, parameter and row. On by default; turn it
  /// off only to render such values on purpose.
  bool check_finite = true;
  /// Checks every step's outputs and throws RenderError [grafx.render.non_finite] naming the
  /// first node (in plan order) whose output holds NaN or infinity (e.g. a gain that overflows),
  /// instead of returning non-finite outputs. One reduction per step; `grafx render` uses it.
  bool check_finite_outputs = false;
  /// More auxiliary losses per processor call, from its inputs and its own outputs (before
  /// dry/wet, or after it where the processor folds the mix into its pass:
  /// Processor::forward_mixed), each [rows] like the processor's (e.g. the fit's gain staging,
  /// whose types fold none).
  std::function<TensorDict(const std::string& type, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& outputs)>
      extra_aux_losses;
};

struct RenderResult {
  at::Tensor outputs;  ///< n_out×C×L or B×n_out×C×L
  /// Auxiliary losses: type -> name -> [N] or [B, N], one value per rendered (live) node of
  /// that type, in graph order (ascending node id).
  std::map<std::string, TensorDict> aux_losses;
};

/// Renders a plan. Throws RenderError (codes in docs/errors.md) for sources or parameters that
/// do not fit, naming the type, the parameter, what was expected and what came.
RenderResult render(const RenderPlan& plan, const Processors& processors,
                    const Parameters& parameters, const at::Tensor& sources,
                    const RenderOptions& options = {});

/// The naive reference: every live node on its own, in a topological order of the graph, with
/// no batching and no plan. Same arguments and results as `render`. For tests and benchmarks.
RenderResult render_naive(const Graph& graph, const Processors& processors,
                          const Parameters& parameters, const at::Tensor& sources,
                          const SongTime& time = {});

/// Graph-level batching: renders several graphs (same node types) in one pass. `parameters`
/// and `sources` are given per graph; outputs come back per graph.
std::vector<at::Tensor> render_graphs(const std::vector<Graph>& graphs,
                                      const Processors& processors,
                                      const std::vector<Parameters>& parameters,
                                      const std::vector<at::Tensor>& sources,
                                      const ScheduleOptions& schedule = {},
                                      const RenderOptions& options    = {});

}  // namespace grafx
