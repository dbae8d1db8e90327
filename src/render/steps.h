#pragma once
// The pieces of a render step, shared by the autograd renderer (render.cpp) and the adjoint
// executor (adjoint.cpp): where buffer rows live, how reads gather and aggregate them, how a
// processor step runs on its rows (private to the library).

#include <grafx/render/render.h>

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace grafx::detail {

/// Where each buffer row lives: the step that wrote it, the outlet, the position in the step.
struct RowHome {
  std::vector<int64_t> step, outlet, position;
};

RowHome locate_rows(const RenderPlan& plan);

/// A run of consecutive rows of one step output: rows [start, start + length) of outlet
/// `outlet` of step `step`.
struct Run {
  int64_t step, outlet, start, length;
};

/// The rows a read takes, as runs of one output each; `one_tensor` when all come from one output
/// (then a read that is not a single run is one index_select).
struct Runs {
  std::vector<Run> runs;
  bool one_tensor = true;
};

Runs runs_of(const std::vector<int64_t>& rows, const RowHome& home);

/// Step outputs ([B, m, C, L] per outlet), each also cut once into the pieces its readers take.
/// A slice's gradient is a zero tensor the size of the whole output with the slice's gradient
/// copied in, and the gradients of all readers are summed: whole-output adds and fills that
/// cost batched backwards more than their processors saved (docs/benchmarks.md, "Where the
/// backward goes"). The gradient of one split is one concatenation.
struct StepOutputs {
  std::vector<std::vector<at::Tensor>> whole;        // [step][outlet]
  std::vector<std::vector<std::set<int64_t>>> cuts;  // [step][outlet]: piece boundaries
  std::vector<std::vector<std::map<int64_t, at::Tensor>>> pieces;  // by first row

  /// Sets step k's outputs and cuts them at the boundaries its readers need.
  void set(size_t k, std::vector<at::Tensor> outlets) {
    pieces[k].assign(outlets.size(), {});
    for (size_t o = 0; o < outlets.size(); ++o) {
      const int64_t m = outlets[o].size(1);
      std::vector<int64_t> sizes, starts;
      int64_t previous = 0;
      for (int64_t cut : cuts[k][o])
        if (cut > previous && cut < m) {
          starts.push_back(previous);
          sizes.push_back(cut - previous);
          previous = cut;
        }
      if (sizes.empty()) continue;  // read whole, or by index
      starts.push_back(previous);
      sizes.push_back(m - previous);
      std::vector<at::Tensor> split = outlets[o].split_with_sizes(sizes, 1);
      for (size_t i = 0; i < split.size(); ++i) pieces[k][o][starts[i]] = split[i];
    }
    whole[k] = std::move(outlets);
  }
  void release(size_t k) {
    whole[k].clear();
    pieces[k].clear();
  }
  /// The rows of a run: the whole output, one piece, or consecutive pieces joined.
  at::Tensor take(const Run& r) const {
    const at::Tensor& all = whole[size_t(r.step)][size_t(r.outlet)];
    if (r.start == 0 && r.length == all.size(1)) return all;
    const auto& by_start = pieces[size_t(r.step)][size_t(r.outlet)];
    if (by_start.empty()) return all.narrow(1, r.start, r.length);  // where no cut was planned
    std::vector<at::Tensor> parts;
    for (auto it = by_start.find(r.start); it != by_start.end() && it->first < r.start + r.length;
         ++it)
      parts.push_back(it->second);
    return parts.size() == 1 ? parts[0] : at::cat(parts, 1);
  }
};

/// Step outputs sized for a plan, cut where its reads begin and end; `last_reader[k]` is the
/// last step that reads step k's outputs (-1: none).
StepOutputs plan_step_outputs(const RenderPlan& plan, const RowHome& home,
                              std::vector<int64_t>& last_reader);

/// Reads buffer rows from the step outputs: one piece (or joined pieces) per run of
/// consecutive rows of one output, one index_select when all rows come from one output.
at::Tensor gather(const std::vector<int64_t>& rows, const RowHome& home, const StepOutputs& outputs,
                  const std::function<std::string()>& where);

/// An inlet's aggregation of its gathered rows into the step's m nodes.
at::Tensor aggregate(const InletRead& read, const at::Tensor& gathered, int64_t m);

/// A type's parameters prepared for one render: plan order, frozen types detached, hooks set.
struct PreparedParameters {
  TypeParameters values;  // [N_live, ...] or [B, N_live, ...]
  bool per_item = false;
};

std::map<TypeId, PreparedParameters> prepare_parameters(const RenderPlan& plan,
                                                        const Parameters& parameters,
                                                        const std::map<std::string, bool>& per_item,
                                                        const RenderOptions& options,
                                                        at::Device device);

/// A step's rows of its type's parameters: [m, ...], or [B, m, ...] per item.
TypeParameters step_rows(const PreparedParameters& prepared, const PlanStep& step);

/// A step's parameter rows as its processor takes them, [B·m, ...] (shared ones expanded over
/// the batch).
TypeParameters flatten_rows(const TypeParameters& rows, bool per_item, int64_t B, int64_t m);

/// What a processor step puts out: per outlet [B, m, C, L], and its auxiliary losses [B, m].
struct StepResult {
  std::vector<at::Tensor> outputs;
  std::map<std::string, at::Tensor> aux_losses;
};

/// Runs processor step k on its inputs (per inlet [B, m, C, L]) and parameters (from
/// flatten_rows): the processor call, the nodes' wet amounts and bypasses, the aux losses.
StepResult run_processor_step(const RenderPlan& plan, size_t k, const Processors& processors,
                              TypeParameters parameters, const std::vector<at::Tensor>& inputs,
                              int64_t B, const RenderOptions& options);

/// The signal hooks of a render placed on the plan: the rows of each step's outputs and reads
/// they apply to.
class SignalHooks {
 public:
  /// Throws RenderError [grafx.render.hooks] for a hook on a node or edge the plan lacks.
  SignalHooks(const RenderPlan& plan, const RenderOptions& options);

  /// For the autograd renderer: the outputs of step k ([B, m, C, L] per outlet) and the rows
  /// gathered by read `read` ([B, n, C, L]), with the hooks registered on their gradients.
  std::vector<at::Tensor> on_outputs(size_t k, std::vector<at::Tensor> outputs) const;
  at::Tensor on_read(size_t k, size_t read, at::Tensor gathered) const;

  /// For the adjoint executor: the hooks applied to cotangents of the same shapes.
  at::Tensor apply_to_outputs(size_t k, const at::Tensor& cotangent) const;
  at::Tensor apply_to_read(size_t k, size_t read, const at::Tensor& cotangent) const;

 private:
  using Rows = std::vector<std::pair<int64_t, SignalHook>>;  // (row, hook)
  std::map<size_t, Rows> outputs_;
  std::map<std::pair<size_t, size_t>, Rows> reads_;
  static at::Tensor apply(const Rows& rows, const at::Tensor& cotangent);
  static at::Tensor hooked(const Rows& rows, const at::Tensor& t);
};

/// The `in` step's output: the sources [B, K, C, L] in the order of its nodes.
at::Tensor source_rows(const RenderPlan& plan, const at::Tensor& source_batch);

/// Throws RenderError [grafx.render.non_finite] naming the first node of step k whose output
/// holds NaN or infinity (nothing for `in`).
void check_finite_outputs(const RenderPlan& plan, size_t k, const std::vector<at::Tensor>& outputs);

/// Shows step k's inputs and outputs to an observer (without the batch dimension for unbatched
/// sources).
void observe(const RenderPlan& plan, size_t k, std::vector<at::Tensor> inputs,
             std::vector<at::Tensor> outputs, bool batched,
             const std::function<void(const StepView&)>& observer);

/// Auxiliary losses per type and name: the steps' pieces [B, m] in plan order.
using AuxPieces = std::map<TypeId, std::map<std::string, std::vector<at::Tensor>>>;

/// For the rendered nodes of `type` in graph order (ascending id), their plan-order positions.
std::vector<int64_t> aux_graph_order(const RenderPlan& plan, TypeId type);

/// A render's sources and parameters, checked: the sources as a batch [B, K, C, L] (`batched`
/// when the caller gave one) and which types' parameters are per batch item.
struct CheckedInputs {
  at::Tensor source_batch;
  bool batched = false;
  int64_t B    = 1;
  std::map<std::string, bool> per_item;
};

/// The checks of render and the adjoint executor, once: the sources' and parameters' shapes
/// and types against the plan (RenderError naming what is wrong), and finite values where
/// `options.check_finite` asks.
CheckedInputs check_render_inputs(const RenderPlan& plan, const Processors& processors,
                                  const Parameters& parameters, const at::Tensor& sources,
                                  const RenderOptions& options);

/// A processor step as a renderer runs it: k and the step's inputs (per inlet [B, m, C, L]).
using ProcessorStepRunner =
    std::function<StepResult(size_t k, const std::vector<at::Tensor>& inputs)>;

/// The loop over a plan's steps, written once for the autograd renderer and the adjoint
/// executor: the `in` step's sources, every other step's reads gathered and aggregated, mix and
/// out passing their input on, processor steps run by `run_processor`; outputs (whose rows
/// `home` locates, locate_rows(plan)) kept until their
/// last reader, shown to the observer and checked for finite values where the options ask.
/// `hooks` (the autograd renderer's) are placed on reads and outputs; `produced(k, outputs)`
/// sees every step's outputs. Returns the assembled result.
RenderResult run_steps(
    const RenderPlan& plan, const CheckedInputs& inputs, const RowHome& home,
    const RenderOptions& options, const SignalHooks* hooks,
    const ProcessorStepRunner& run_processor,
    const std::function<void(size_t, const std::vector<at::Tensor>&)>& produced = {});

/// A render's result: the `out` step's output [B, n_out, C, L] widened to `widest` channels (the
/// widest signal rendered: the same count in every schedule), the aux losses in graph order;
/// the batch dimension dropped for unbatched sources.
RenderResult assemble_result(const RenderPlan& plan, const at::Tensor& out, int64_t widest,
                             const AuxPieces& aux, bool batched);

/// "step K (type)", for messages.
std::string step_name(const RenderPlan& plan, size_t k);

}  // namespace grafx::detail
