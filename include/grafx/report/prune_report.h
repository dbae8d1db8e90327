#pragma once
/// The outputs of pruning, written into one folder:
///
///   mix.wav                  the pruned console's mix of the whole song (float WAV)
///   console.json, .svg       the pruned console (pruned nodes taken out) and its picture
///   console_before.svg       the full console with the pruned nodes dashed
///   parameters.safetensors   its raw parameters (what `grafx render` takes)
///   parameters.json          every node's parameters in physical units
///   rounds.csv, trials.csv   every round (method, losses, processors left, time) and trial
///   pruning.svg              the whole-song loss against the processors removed
///   report.html              one page: summary, per-type table of pruning ratios (as the
///                            paper's Table 2), the loss curve, both consoles

#include <grafx/prune/prune.h>

#include <string>
#include <vector>

namespace grafx {

struct PruneSummary {
  std::string title;              ///< e.g. "grafx prune: my-fit"
  MixLossTerms unpruned, pruned;  ///< whole-song loss of the full and the pruned console
  double seconds = 0;             ///< time spent pruning
};

/// Writes every file above into `folder` (which must exist), each atomically; existing files
/// are replaced only when `overwrite`. `fitter` is the one `pruner` pruned.
void write_prune_outputs(const Pruner& pruner, const Fitter& fitter, const PruneSummary& summary,
                         const std::string& folder, bool overwrite);
/// The files write_prune_outputs writes, relative to the folder.
const std::vector<std::string>& prune_output_files();

}  // namespace grafx
