#pragma once
/// A pruning run's state as a file format of its own: the JSON that Pruner::save_state writes
/// beside the fit's checkpoint and Pruner::resume continues from ("format":
/// "grafx.prune_state"). Its versions, each still read:
///   1  saved after whole rounds only
///   2  also during one: the round under way ("under_way") and its trials
/// Reading checks the fields and their types; whether the state fits this run (its options,
/// graph and checkpoint) is the Pruner's to judge.

#include <grafx/prune/prune.h>

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace grafx {

inline constexpr int64_t kPruneStateVersion = 2;

struct PruneState {
  nlohmann::json course;  ///< the options that decide the run's course (prune_course)
  double min_loss = std::numeric_limits<double>::infinity();  ///< best loss (none yet: ∞)
  int64_t fine_tuning_steps = 0;
  int64_t steps_done        = 0;  ///< the checkpoint's, which must agree
  std::vector<NodeId> removed;    ///< bypassed, as of the checkpoint
  std::vector<PruningRound> rounds;
  std::vector<PruningTrial>
      trials;  ///< every recorded trial, of finished rounds and the one under way

  /// A round cut short: in its trials (run again from its start, replaying them) or in its
  /// fine-tuning (loss_pruned, removed, trials and steps_done known).
  struct UnderWay {
    PruningRound round;  ///< loss_tuned and remaining unknown; in trials, only round to fast_trials
    bool loss_before_known = false;
    bool fine_tuning       = false;
    int64_t steps_done     = 0;  ///< its fine-tuning steps done
  };
  std::optional<UnderWay> under_way;
};

/// The options that decide a pruning run's course (all but the number of rounds), as recorded.
nlohmann::json prune_course(const PruningOptions& options);

/// Writes `state` at `path`, atomically, replacing a file there.
void write_prune_state(const std::string& path, const PruneState& state);

/// Reads a state of any version. Throws FitError [grafx.fit.checkpoint] (the path first) for a
/// file that is not JSON, not a pruning state, of another version, or with a field missing or of
/// the wrong type.
PruneState read_prune_state(const std::string& path);

}  // namespace grafx
