#pragma once
/// Processors of a fitting console: every processor wrapped with a learnable dry/wet weight, as
/// in the pruning paper, y = w·f(u) + (1 − w)·u with w = σ(dry_wet), and (for the types that
/// ask for it) the gain-staging regulariser of f reported as an auxiliary loss.
///
///   Processors p = console_processors(graph.types(), {30000});

#include <grafx/processors/registry.h>

#include <set>
#include <string>

namespace grafx {

struct ConsoleProcessorOptions {
  bool dry_wet = true;
  /// Raw dry/wet logit at initialisation: 0 gives w = 0.5 (grafx-prune's initialisation).
  double dry_wet_init = 0.0;
  /// Types whose processors report "gain_staging" = |log energy of f(u) − log energy of u| per
  /// node (grafx-prune regularises its EQs and reverbs).
  std::set<std::string> gain_staging_types = {"eq", "reverb"};
};

/// Wraps one processor (single inlet and outlet). The wrapper has the processor's name and
/// ports and its parameters plus "dry_wet" ([1], physical "wet", a ratio in [0, 1]).
std::shared_ptr<const Processor> with_dry_wet(std::shared_ptr<const Processor> processor,
                                              const ConsoleProcessorOptions& options);

/// The registered processors for every processor type of `types`, wrapped as above
/// (multi-port processors are left unwrapped).
Processors console_processors(const NodeTypes& types, const ProcessorConfig& config,
                              const ConsoleProcessorOptions& options = {});

}  // namespace grafx
