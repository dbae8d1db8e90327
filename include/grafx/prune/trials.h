#pragma once
/// Fast pruning trials: the whole-song loss of a graph with some nodes bypassed, rendering only
/// what bypassing them changes.
///
///   TrialEvaluator trials(graph, processors, parameters, tracks, mix, loss_options);
///   double base = trials.base_loss();         // one full render, which fills the cache
///   double l    = trials.loss({node});        // renders node's descendants and what feeds them
///   if (l <= best + tolerance) trials.commit({node});
///
/// The evaluator caches, for the whole song and without gradients, the **cut signals**: every
/// signal that enters a `mix` node (a console's track, subgroup and bus outputs). A trial that
/// bypasses nodes S renders the trial graph R: S's descendants, and upstream of them whatever
/// feeds them back to a cut signal or a source, which become the trial graph's inputs. For a
/// track's processor in a console, R is that track's chain, its subgroup's chain and the master,
/// a fraction of the console; the other tracks are not rendered again. R is rendered in chunks
/// (render/chunked.h) widened by its own temporal support, so the result is exact up to float
/// rounding (tests: equal to a full re-render within 1e-6 relative) and its working memory is
/// bounded; the cache holds one song-long signal per cut (e.g. 11 stereo signals for an 8-track
/// console with 3 subgroups). Committing a trial keeps its bypassed nodes and the cut signals
/// it changed, captured while it rendered.

#include <grafx/loss/mix_loss.h>
#include <grafx/render/chunked.h>

#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace grafx {

class TrialEvaluator {
 public:
  /// `parameters` without gradients; `tracks` K×C×L and `mix` C×L as the Fitter's; `loss` the
  /// whole-song loss options (no warm-up skip, as Fitter::evaluate).
  TrialEvaluator(Graph graph, Processors processors, Parameters parameters, at::Tensor tracks,
                 at::Tensor mix, MixLossOptions loss, ScheduleOptions schedule = {},
                 ChunkOptions chunks = {});

  /// The whole-song loss of the graph as it is, with the trials committed so far.
  double base_loss() const { return base_loss_; }
  /// The whole-song loss with `extra` processor nodes bypassed as well.
  double loss(const std::vector<NodeId>& extra);
  /// The losses of several trials, each with its nodes bypassed on top of the graph as it is
  /// (not of the others), rendered together: their trial graphs as one graph batch, each
  /// type's nodes of all of them in one call.
  std::vector<double> losses(const std::vector<std::vector<NodeId>>& candidates);
  /// Keeps `extra` bypassed: the last trial, which must have been `extra` (its changed cut
  /// signals are kept), or a fresh render of it otherwise.
  void commit(const std::vector<NodeId>& extra);

  const Graph& graph() const { return graph_; }
  /// Processor rows rendered by the last trial and by a full render, for benchmarks.
  int64_t last_trial_nodes() const { return last_trial_nodes_; }
  /// Bytes the cut signals of `graph` take for `tracks`' length and dtype, as stereo (the most
  /// they take): what a TrialEvaluator would cache, without its target frames.
  static double cache_bytes_for(const Graph& graph, const at::Tensor& tracks);
  /// Bytes held by the cached cut signals and the target's mel frames.
  int64_t cache_bytes() const;

 private:
  using Signal = std::pair<NodeId, int64_t>;  // (node, outlet)
  /// Every signal into a mix node (not straight from a source): what the cache holds.
  static std::set<Signal> cut_signals(const Graph& graph);
  /// What one trial renders: the nodes that change and what feeds them, with its inputs.
  struct Trial {
    std::vector<NodeId> extra;        // sorted
    Graph graph;                      // the trial graph (the console's ids, new `in` nodes)
    std::vector<at::Tensor> signals;  // one per `in` node of it, in id order
    Parameters parameters;
    std::set<Signal> captured;  // the cut signals it renders
    int64_t processors = 0;
  };
  /// The trial with `extra` bypassed as well (`everything`: the whole graph, from the sources).
  Trial build(const std::vector<NodeId>& extra, bool everything) const;
  /// Renders trials in chunks and returns their losses; with `capture` (one trial), keeps the
  /// new values of its cut signals in pending_ for commit.
  std::vector<double> render_trials(const std::vector<Trial>& trials, bool capture);

  Graph graph_;
  Processors processors_;
  Parameters parameters_;
  at::Tensor tracks_, mix_;
  MixLoss loss_;
  ScheduleOptions schedule_;
  ChunkOptions chunks_;
  std::shared_ptr<const MixLossTargetFrames> target_frames_;
  std::map<Signal, at::Tensor> cache_;    // cut signals, C×L each
  std::map<Signal, at::Tensor> pending_;  // their values in the last trial
  std::vector<NodeId> pending_extra_;
  double base_loss_         = 0;
  double pending_loss_      = 0;
  int64_t last_trial_nodes_ = 0;
};

}  // namespace grafx
