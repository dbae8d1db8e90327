#pragma once
/// Mixing consoles as in "Searching for Music Mixing Graphs: A Pruning Approach" (Lee et al.,
/// DAFx 2024), and a seeded random pruner that produces realistic pruned consoles.
///
///   in -> track chain -> subgroup mix -> subgroup chain -> master mix -> out
///
/// Every track gets the same serial chain of processors (by default e-c-n-s-g-d-r: eq,
/// compressor, noise gate, stereo imager, gain/pan, delay, reverb), tracks are summed into
/// subgroups, each subgroup gets the chain too, and the subgroups are summed by the master mix.
/// Without subgroups the tracks' chains feed the master mix directly.

#include <grafx/graph/graph.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grafx {

/// The processor types of the console, in the paper's chain order (letters e c n s g d r).
const std::vector<std::string>& console_chain();

/// The utility types plus the console's processor types (one `main` inlet and outlet each).
NodeTypes console_node_types();

/// Turns letters into type names, each letter naming the one processor or mix type of `types`
/// with that first letter ("ecnsgdr" -> eq, compressor, ...; "m" -> mix); where variants share
/// a letter, the one whose name begins all the others' (eq of eq, eq_stereo, eq_midside).
/// Throws GraphError [grafx.graph.unknown_type] for a letter no type (or several unrelated
/// types) has.
std::vector<std::string> chain_from_letters(const std::string& letters, const NodeTypes& types);

struct ConsoleOptions {
  int64_t n_tracks = 8;
  /// The subgroup of each track (0-based, every group from 0 to max used at least once);
  /// empty for no subgroups.
  std::vector<int64_t> track_groups;
  /// Processor types of each track's and each subgroup's chain, in order.
  std::vector<std::string> chain = console_chain();
  /// Optional names of the tracks (used for node names); "track<i>" otherwise.
  std::vector<std::string> track_names;

  /// `n_tracks` tracks split into `n_groups` contiguous, near-equal subgroups.
  static std::vector<int64_t> even_groups(int64_t n_tracks, int64_t n_groups);
};

/// The console and where its parts are.
struct Console {
  Graph graph;
  std::vector<NodeId> inputs;        ///< the `in` node of each track, in track order
  std::vector<NodeId> group_mixes;   ///< the `mix` node of each subgroup
  NodeId master = -1;                ///< the master `mix` node
  NodeId output = -1;                ///< the `out` node
};

/// Builds a console; throws GraphError [grafx.graph.invalid_console] for bad options.
Console build_console(const ConsoleOptions& options, const NodeTypes& types = console_node_types());

struct PruneOptions {
  uint64_t seed = 0;
  /// Probability of bypassing a processor of each type. Defaults: the per-type pruning ratios
  /// of the paper's hybrid method at tolerance 0.01 (Table 2).
  std::map<std::string, double> probability = {
      {"gain_pan", 0.51},   {"stereo_imager", 0.86}, {"eq", 0.46},   {"reverb", 0.71},
      {"compressor", 0.71}, {"noise_gate", 0.79},    {"delay", 0.63},
  };
};

/// Bypasses each processor node (not in, out or mix) with its type's probability; types
/// without a probability are kept. Deterministic for a seed. Returns the bypassed node ids.
std::vector<NodeId> prune_randomly(Graph& graph, const PruneOptions& options);

}  // namespace grafx
