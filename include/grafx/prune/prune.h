#pragma once
/// Pruning a fitted console to the processors that matter, as "Searching for Music Mixing
/// Graphs: A Pruning Approach" (Lee et al., DAFx 2024) does: rounds of pruning trials, each
/// round followed by fine-tuning with a sparsity term on the wet amounts.
///
///   Fitter fitter(console, tracks, mix, 30000, options);   // dry/wet nodes
///   fitter.run();                                          // fit the full console first
///   Pruner pruner(fitter, {PruneMethod::kHybrid});
///   pruner.run([](const PruningProgress& p) { print(p); });
///   auto [graph, parameters] = pruner.result();            // the pruned console
///
/// A trial bypasses candidate nodes (their inputs pass through, Fitter::set_bypassed) and
/// measures the whole-song loss L (Fitter::evaluate, in chunks). It is kept when
/// L ≤ L_min + τ, L_min being the lowest whole-song loss seen so far; otherwise the candidates
/// are restored. The methods (the paper's):
///   - dry/wet: per type, the fraction r_t of its nodes with the lowest wet amounts w = σ(raw).
///     Types are tried in a random order; r_t grows by a step that starts at 0.1 and is halved
///     when a trial fails, never below one node (1/n_t), and a type's search ends after a
///     failure at that smallest step or when all its nodes are gone.
///   - brute force: every remaining processor node alone, in a random order, each trial on top
///     of those kept so far.
///   - hybrid: dry/wet, with brute force every `brute_force_every`-th round (4, 8, 12).
/// Between rounds the console is fine-tuned for `steps_between` steps with a fresh optimizer
/// and the sparsity term λ·Σ w (Fitter::set_sparsity_weight), λ ramped linearly from 0 to
/// `sparsity_weight` over the first `sparsity_ramp_steps` fine-tuning steps.
///
/// A run can be planned (`estimate`: trials, whole-song losses and fine-tuning steps left, and
/// their time at given costs) and saved at any point of a round (`save_state` from a progress
/// callback, `resume`), so that an interrupted run loses at most the trial or the fine-tuning
/// steps under way.

#include <grafx/fit/fit.h>
#include <grafx/prune/trials.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace grafx {

enum class PruneMethod { kHybrid, kDryWet, kBruteForce };
/// "hybrid", "dry-wet", "brute-force".
std::string to_string(PruneMethod method);
/// The method of one of those names; FitError [grafx.fit.options] otherwise.
PruneMethod parse_prune_method(const std::string& name);

struct PruningOptions {
  PruneMethod method          = PruneMethod::kHybrid;
  double tolerance            = 0.01;  ///< τ: a trial is kept when L ≤ L_min + τ
  int64_t rounds              = 12;
  int64_t steps_between       = 500;   ///< fine-tuning steps after each round
  double sparsity_weight      = 1e-4;  ///< λ of the sparsity term λ·Σ w
  int64_t sparsity_ramp_steps = 2000;  ///< λ grows linearly from 0 over these steps
  double initial_ratio        = 0.1;   ///< first step of each type's fraction (dry/wet)
  int64_t brute_force_every   = 4;     ///< hybrid: brute force in rounds 4, 8, 12, ...
  uint64_t seed               = 0;     ///< the random orders of types and nodes
  /// Trials render only what they change (TrialEvaluator, prune/trials.h); false: every trial
  /// renders the whole console again (the reference, for tests and benchmarks).
  bool fast_trials = true;
  /// Brute force with fast trials: up to this many candidates rendered as one graph batch while
  /// trials keep failing (the decisions stay those of one trial at a time). 1: no batches; on
  /// this project's 2-core CPU batches were 15-20 % slower per trial (docs/benchmarks.md).
  int64_t max_trial_batch = 1;
  /// Fast trials keep song-long signals (TrialEvaluator's cache: every signal into a mix node);
  /// a round whose cache would exceed this many MiB renders its trials in full instead.
  double max_cache_mib = 4096;
};

/// One trial: the nodes it bypassed (with those kept before), its loss, whether it was kept.
struct PruningTrial {
  int64_t round = 0;
  std::vector<NodeId> nodes;
  double loss = 0;
  bool kept   = false;
};

/// One round: how it pruned and what it left.
struct PruningRound {
  int64_t round      = 0;
  PruneMethod method = PruneMethod::kDryWet;  ///< kDryWet or kBruteForce
  double loss_before = 0;                     ///< whole-song loss at the round's start
  double loss_pruned = 0;                     ///< after its trials
  double loss_tuned  = 0;                     ///< after the fine-tuning that follows
  int64_t removed    = 0;                     ///< processors bypassed in this round
  int64_t remaining  = 0;                     ///< processors left after it
  int64_t trials     = 0;
  bool fast_trials   = false;  ///< its trials rendered what they change (else in full)
  double seconds     = 0;      ///< trials and fine-tuning
};

/// What a progress callback sees: during trials (step = 0) or fine-tuning.
struct PruningProgress {
  int64_t round = 0, n_rounds = 0;
  PruneMethod method             = PruneMethod::kDryWet;
  int64_t trial                  = 0;  ///< trials done in this round
  const PruningTrial* last_trial = nullptr;
  /// The last trial was taken from the saved record of a round cut short (Pruner::resume), not
  /// evaluated again.
  bool replayed = false;
  int64_t step = 0, n_steps = 0;  ///< fine-tuning steps done in this round (0: trials)
  const FitRecord* record = nullptr;
  double min_loss         = 0;  ///< L_min
  int64_t remaining       = 0;  ///< processors left
  double elapsed_seconds  = 0;
};

/// What is left of a pruning run and how long it should take (Pruner::estimate). The counts
/// come from the console as it is: brute force tries every processor left, one trial each (the
/// most a later round can take, when processors go before it); a dry/wet round's search tries
/// each type with nodes left in a number of trials that depends on which trials are kept, and
/// is counted as its expectation with each trial kept with probability 1/2 (exactly one trial
/// for a type of at most 1/initial_ratio nodes, e.g. 10 with the default ratio).
struct PruningEstimate {
  int64_t rounds             = 0;  ///< rounds left, the one under way included
  int64_t brute_force_rounds = 0;  ///< of those, brute-force rounds
  double trials              = 0;  ///< trials left (expected)
  /// Whole-song losses outside trials: one at each round's start (which also fills the fast
  /// trials' cache) and one after its fine-tuning.
  int64_t evaluations  = 0;
  int64_t steps        = 0;                                            ///< fine-tuning steps left
  double trial_seconds = 0, evaluation_seconds = 0, step_seconds = 0;  ///< the costs given
  double seconds() const {
    return trials * trial_seconds + double(evaluations) * evaluation_seconds +
           double(steps) * step_seconds;
  }
};

class Pruner {
 public:
  /// Prunes `fitter`'s graph (kept by reference; every node to prune must carry a dry/wet
  /// amount for the dry/wet method). Throws FitError [grafx.fit.options] for invalid options.
  Pruner(Fitter& fitter, PruningOptions options = {});
  ~Pruner();

  /// Runs the remaining rounds, each: trials, then fine-tuning.
  void run(const std::function<void(const PruningProgress&)>& progress = {});
  /// One round (trials and fine-tuning); returns its summary. A round cut short (by an
  /// exception from `progress`, or as `resume` found it) continues as the uninterrupted run:
  /// cut in its trials, it runs again from its start and takes the trials made so far from
  /// their record (a kept one is rendered again for the fast trials' cache, the others not);
  /// cut in its fine-tuning, it goes on from the step it reached.
  PruningRound run_round(const std::function<void(const PruningProgress&)>& progress = {});

  const PruningOptions& options() const { return options_; }
  int64_t rounds_done() const { return static_cast<int64_t>(rounds_.size()); }
  const std::vector<PruningRound>& rounds() const { return rounds_; }
  const std::vector<PruningTrial>& trials() const { return trials_; }
  double min_loss() const { return min_loss_; }
  /// The processor nodes pruned so far (bypassed in the fitter's graph), ascending.
  std::vector<NodeId> removed() const;
  /// Processor nodes of the graph at the start and now.
  int64_t initial_processors() const { return initial_processors_; }
  int64_t remaining_processors() const;
  /// The pruned console: the graph with the pruned nodes taken out (their inputs passing
  /// through, Graph::bypass; a pruned send takes with it a bus left with nothing, and a pruned
  /// node whose silent outlet feeds a kept node stays, bypassed) and its parameters
  /// (detached), which render as the fitter does.
  std::pair<Graph, Parameters> result() const;

  /// What is left of the run (the round under way included, from where it is) and its time at
  /// these costs: a trial, a whole-song loss (Fitter::evaluate) and a fine-tuning step, in
  /// seconds. May be called at any time, also from a progress callback.
  PruningEstimate estimate(double trial_seconds, double evaluation_seconds,
                           double step_seconds) const;
  /// The time of a fine-tuning step, measured on a copy of the fitter (the fastest of
  /// `n_steps`; the first pays for one-time costs): the fitter's parameters, optimizer and
  /// history are not touched and the global random generator is restored, so the run's result
  /// stays what it would have been.
  double measure_step_seconds(int64_t n_steps = 2) const;

  /// Writes the state (`state_path`, JSON, version 2: options, rounds, trials, best loss,
  /// pruned nodes, the round under way) and the fitter's checkpoint (`checkpoint_path`,
  /// Fitter::save_checkpoint: parameters, optimizer, fine-tuning history), each atomically.
  /// Between rounds, or from a progress callback (or after its exception) during one:
  ///   - during fine-tuning: both, at the step reached;
  ///   - during trials: the record alone, with the round's trials so far. Trials change no
  ///     parameter, so the checkpoint at `checkpoint_path` must be the one this pruning saved
  ///     at the round's start (save_state before the first round and after each round): resume
  ///     runs the round again from there and replays the recorded trials.
  void save_state(const std::string& checkpoint_path, const std::string& state_path) const;
  /// Continues from save_state's files (versions 1 and 2), as the uninterrupted run would:
  /// the pruned nodes are bypassed again, the checkpoint loaded, the record restored, and a
  /// round cut short is continued by the next run_round. More rounds than before may be asked
  /// for. FitError [grafx.fit.checkpoint] for files of another pruning (other options, graph or
  /// data), files that do not agree with each other, or a newer version.
  void resume(const std::string& checkpoint_path, const std::string& state_path);
  /// Where the round under way stands (one cut short and resumed, or run_round's).
  struct Position {
    int64_t round    = 0;      ///< 0: none under way
    bool fine_tuning = false;  ///< its trials are done
    int64_t trials   = 0;      ///< its trials recorded so far
    int64_t steps    = 0;      ///< its fine-tuning steps done
  };
  Position under_way() const;

 private:
  /// Whole-song loss with `extra` nodes bypassed on top of those pruned (or its record, while
  /// replaying); leaves them bypassed only when the trial is kept.
  bool try_pruning(const std::vector<NodeId>& extra, PruningTrial& trial);
  /// The tolerance rule for a trial of `extra` whose loss is known; commits it when kept.
  bool decide(const std::vector<NodeId>& extra, double loss, PruningTrial& trial);
  int64_t prune_dry_wet(const std::function<void(const PruningTrial&)>& on_trial);
  int64_t prune_brute_force(const std::function<void(const PruningTrial&)>& on_trial);
  /// Live (not bypassed) processor nodes of a type, by ascending wet amount.
  std::vector<NodeId> ranked_nodes(const std::string& type) const;
  /// The method of round `round` (1-based).
  PruneMethod method_of(int64_t round) const;
  /// Decides a trial of `extra`: from its record while replaying a round cut short (it must be
  /// the trial recorded next), else from `evaluate`'s loss.
  bool judge(const std::vector<NodeId>& extra, const std::function<double()>& evaluate,
             PruningTrial& trial);
  /// Undoes a round's trials after an exception in them, so that the round runs again from
  /// its start and replays them (as after resume).
  void rewind_trials();

  /// The round under way: run_round's, or the one a resume found cut short.
  struct Underway {
    bool active = false;
    PruningRound round;                ///< what it has done so far
    bool loss_before_known   = false;  ///< round.loss_before is (from the record, on resume)
    bool searching           = false;  ///< its trials are under way in this run
    bool fine_tuning         = false;  ///< its trials are done
    int64_t steps_done       = 0;      ///< its fine-tuning steps done
    double min_loss_at_start = 0;      ///< L_min before its first loss
    std::vector<NodeId> removed_at_start;
    double seconds_before    = 0;  ///< spent on it before a resume
    double started           = 0;  ///< when this run began it (steady clock, seconds)
    int64_t brute_force_left = 0;  ///< brute force: candidates not yet tried
  };
  struct DryWetSearch;  // a dry/wet round's search, defined in prune.cpp

  Fitter& fitter_;
  PruningOptions options_;
  std::unique_ptr<TrialEvaluator> trials_evaluator_;  // this round's, with fast trials
  std::vector<PruningRound> rounds_;
  std::vector<PruningTrial> trials_;
  std::vector<PruningTrial> replay_;  // recorded trials of the round under way, not yet replayed
  Underway underway_;
  std::unique_ptr<DryWetSearch> dry_wet_;  // the dry/wet round's search, while under way
  double min_loss_            = 0;
  int64_t initial_processors_ = 0;
  int64_t fine_tuning_steps_  = 0;  // for the sparsity ramp
  bool last_trial_replayed_   = false;
};

}  // namespace grafx
