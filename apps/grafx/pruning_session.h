#pragma once
// Pruning as `grafx prune` and `grafx fit --prune` run it: options, live progress, outputs.

#include "stop_request.h"

#include <grafx/prune/prune.h>

#include <CLI/CLI.hpp>

#include <string>

namespace grafx::cli {

/// The files of a pruning run that --resume continues from, in its output folder.
inline constexpr char kPruneCheckpoint[] = "checkpoint.safetensors";
inline constexpr char kPruneState[]      = "pruning.json";

/// Adds the pruning options (--PREFIXmethod, --PREFIXtolerance, ...) to a subcommand.
void add_pruning_options(CLI::App& command, PruningOptions& options, const std::string& prefix);
/// Where and how a pruning run writes.
struct PruningSession {
  std::string folder;       ///< must exist; outputs are replaced
  std::string title;        ///< of the report
  bool resume     = false;  ///< continue from the state saved in the folder
  bool keep_state = false;  ///< save the state after every round (for --resume)
};
/// Prunes with live progress and writes the outputs (report/prune_report.h) into the folder;
/// `stop` (the command's, held since its start) ends it after the current trial or step.
void run_pruning(Fitter& fitter, const PruningOptions& options, const PruningSession& session,
                 const StopRequest& stop);

}  // namespace grafx::cli
