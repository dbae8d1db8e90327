#include <grafx/error.h>
#include <grafx/graph/console.h>

#include <algorithm>
#include <random>

namespace grafx {

std::vector<int64_t> ConsoleOptions::even_groups(int64_t n_tracks, int64_t n_groups) {
  if (n_groups < 1 || n_groups > n_tracks)
    throw GraphError("grafx.graph.invalid_console",
                     "expected between 1 and " + std::to_string(n_tracks) +
                         " subgroups (one per track at most), but got " + std::to_string(n_groups));
  std::vector<int64_t> groups(static_cast<size_t>(n_tracks));
  for (int64_t i = 0; i < n_tracks; ++i) groups[size_t(i)] = i * n_groups / n_tracks;
  return groups;
}

Console build_console(const ConsoleOptions& options, const NodeTypes& types) {
  auto fail = [](const std::string& message) {
    throw GraphError("grafx.graph.invalid_console", message);
  };
  if (options.n_tracks < 1)
    fail("a console needs at least one track, but got " + std::to_string(options.n_tracks));
  const auto& groups = options.track_groups;
  if (!groups.empty() && static_cast<int64_t>(groups.size()) != options.n_tracks)
    fail("expected a subgroup for each of the " + std::to_string(options.n_tracks) +
         " tracks, but got " + std::to_string(groups.size()));
  int64_t n_groups = groups.empty() ? 0 : *std::max_element(groups.begin(), groups.end()) + 1;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i] < 0) fail("track " + std::to_string(i) + " has a negative subgroup");
  for (int64_t g = 0; g < n_groups; ++g)
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      fail("subgroup " + std::to_string(g) + " has no track (subgroups are numbered from 0 " +
           "without gaps)");
  if (!options.track_names.empty() &&
      static_cast<int64_t>(options.track_names.size()) != options.n_tracks)
    fail("expected " + std::to_string(options.n_tracks) + " track names, but got " +
         std::to_string(options.track_names.size()));
  for (const auto& type : options.chain) {
    if (type == "in" || type == "out")
      fail("a console chain cannot contain \"" + type + "\" nodes");
    if (types.contains(type)) {
      TypeId id = types.id(type);
      if (types.n_inlets(id) != 1 || types.n_outlets(id) != 1)
        fail("a console chain takes types of one inlet and one outlet, but \"" + type + "\" has " +
             std::to_string(types.n_inlets(id)) + " and " + std::to_string(types.n_outlets(id)) +
             " (wire it in a graph file)");
    }
  }

  Console console{Graph(types), {}, {}, -1, -1};
  Graph& g         = console.graph;
  auto chain_names = [&](const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& type : options.chain) names.push_back(prefix + "." + type);
    return names;
  };
  // Adds a chain after `from` and returns its last node (or `from` for an empty chain).
  auto add_chain = [&](NodeId from, const std::string& prefix) {
    if (options.chain.empty()) return from;
    auto [first, last] = g.add_serial_chain(options.chain, chain_names(prefix));
    g.connect(from, first);
    if (options.dry_wet)
      for (NodeId id = first; id <= last; ++id)
        if (!is_utility_type(g.node(id).type)) g.set_dry_wet(id);
    return last;
  };

  // Ids follow the signal: track inputs first (so source k feeds track k), then track chains,
  // subgroups, the master mix and the output.
  std::vector<NodeId> track_ends;
  for (int64_t t = 0; t < options.n_tracks; ++t)
    console.inputs.push_back(g.add("in", options.track_names.empty()
                                             ? "track" + std::to_string(t)
                                             : options.track_names[size_t(t)]));
  for (int64_t t = 0; t < options.n_tracks; ++t)
    track_ends.push_back(
        add_chain(console.inputs[size_t(t)], g.node(console.inputs[size_t(t)]).name));
  std::vector<NodeId> group_ends;
  for (int64_t group = 0; group < n_groups; ++group) {
    std::string prefix = "group" + std::to_string(group);
    console.group_mixes.push_back(g.add("mix", prefix + ".mix"));
    group_ends.push_back(add_chain(console.group_mixes.back(), prefix));
  }
  console.master = g.add("mix", "master");
  console.output = g.add("out", "out");
  for (int64_t t = 0; t < options.n_tracks; ++t)
    g.connect(track_ends[size_t(t)],
              groups.empty() ? console.master : console.group_mixes[size_t(groups[size_t(t)])]);
  for (NodeId end : group_ends) g.connect(end, console.master);
  g.connect(console.master, console.output);
  return console;
}

std::vector<NodeId> prune_randomly(Graph& graph, const PruneOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<NodeId> bypassed;
  for (NodeId id : graph.nodes()) {
    TypeId type = graph.node(id).type;
    double u    = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // same stream on every platform
    if (is_utility_type(type)) continue;
    auto it = options.probability.find(graph.types().name(type));
    if (it != options.probability.end() && u < it->second) {
      graph.bypass(id);
      bypassed.push_back(id);
    }
  }
  return bypassed;
}

}  // namespace grafx
