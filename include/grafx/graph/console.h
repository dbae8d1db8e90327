#pragma once
/// Mixing consoles as in "Searching for Music Mixing Graphs: A Pruning Approach" (Lee et al.,
/// DAFx 2024), and a seeded random pruner that produces realistic pruned consoles.
///
///   in -> track chain -> subgroup mix -> subgroup chain -> master mix -> out
///
/// Every track gets the same serial chain of processors (the paper's e-c-n-s-g-d-r is
/// `default_console_chain()` of the processor registry), tracks are summed into subgroups, each
/// subgroup gets the chain too, and the subgroups are summed by the master mix. Without
/// subgroups the tracks' chains feed the master mix directly.
///
/// Routing (see docs/routing.md):
///   - a send bus: each sending track's signal after its chain passes a `send` node (a
///     learnable level) into the bus's mix, then the bus's chain (e.g. a reverb, fully wet:
///     the send levels say how much of it is heard), then the master mix;
///   - a sidechain: a processor with inlets `main` and `sidechain` (e.g. `sidechain_compressor`)
///     at the end of a track's chain, detecting level on another track's input (the bass
///     ducked by the kick).
///
///   ConsoleOptions options;
///   options.chain = default_console_chain();
///   options.dry_wet = true;
///   Graph g = build_console(options, registry_node_types()).graph;

#include <grafx/graph/graph.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grafx {

/// An effect bus fed by sends from tracks.
struct SendBus {
  std::string name;                ///< e.g. "reverb"; its nodes are named "<name> bus...."
  std::vector<std::string> chain;  ///< processor types of the bus, in order (at least one)
  std::vector<int64_t> tracks;     ///< tracks that send to it (0-based); empty: every track
};

/// A track's level processed by a two-inlet processor listening to another track.
struct SidechainRoute {
  int64_t track    = 0;                       ///< the track processed (0-based)
  int64_t key      = 0;                       ///< the track whose input drives the level detection
  std::string type = "sidechain_compressor";  ///< inlets `main` and `sidechain`, one outlet
};

struct ConsoleOptions {
  /// The most tracks a console takes: far above any session; a larger count is a mistake that
  /// would only fill the memory.
  static constexpr int64_t kMaxTracks = 100000;
  int64_t n_tracks                    = 8;  ///< 1 to kMaxTracks
  /// The subgroup of each track (0-based, every group from 0 to max used at least once);
  /// empty for no subgroups.
  std::vector<int64_t> track_groups;
  /// Processor types of each track's and each subgroup's chain, in order.
  std::vector<std::string> chain;
  /// Every processor node carries a learnable wet amount (the pruning paper's console).
  bool dry_wet = false;
  /// Optional names of the tracks (used for node names); "track<i>" otherwise.
  std::vector<std::string> track_names;
  std::vector<SendBus> sends;
  std::vector<SidechainRoute> sidechains;
  /// Processor types of the master bus, in order, between the master mix and the output
  /// (e.g. a glue compressor); with `dry_wet`, each with a wet amount. Empty: none.
  std::vector<std::string> master_chain;

  /// The name of track t: track_names[t], or "track<t>" without names.
  std::string track_name(int64_t t) const;
  /// The track whose track_name is `name` (routing by name, for the CLI and Python alike);
  /// throws GraphError [grafx.graph.invalid_console], prefixed by `context`, for no such track
  /// or two of that name.
  int64_t track_named(const std::string& name, const std::string& context) const;

  /// `n_tracks` tracks split into `n_groups` contiguous, near-equal subgroups.
  static std::vector<int64_t> even_groups(int64_t n_tracks, int64_t n_groups);
};

/// The console and where its parts are.
struct Console {
  Graph graph;
  std::vector<NodeId> inputs;       ///< the `in` node of each track, in track order
  std::vector<NodeId> group_mixes;  ///< the `mix` node of each subgroup
  std::vector<NodeId> bus_mixes;    ///< the `mix` node of each send bus
  std::vector<NodeId> sidechains;   ///< the node of each sidechain route
  NodeId master = -1;               ///< the master `mix` node
  NodeId output = -1;               ///< the `out` node
};

/// Builds a console; throws GraphError [grafx.graph.invalid_console] for bad options.
/// `types` must hold the chain's types.
Console build_console(const ConsoleOptions& options, const NodeTypes& types);

struct PruneOptions {
  uint64_t seed = 0;
  /// Probability of bypassing a processor of each type, e.g. `random_pruning_rates()` of the
  /// processor registry (the paper's per-type pruning ratios).
  std::map<std::string, double> probability;
};

/// Bypasses each processor node (not in, out or mix) with its type's probability; types
/// without a probability are kept. Deterministic for a seed. Returns the removed node ids:
/// the bypassed ones, and what a bypassed send left with nothing (Graph::bypass); a node whose
/// bypass Graph::bypass refuses stays.
std::vector<NodeId> prune_randomly(Graph& graph, const PruneOptions& options);

}  // namespace grafx
