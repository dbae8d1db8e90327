#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/text.h>

#include <algorithm>
#include <random>

namespace grafx {

namespace {

// Both the console and its even groups refuse a count before they allocate per track.
void check_track_count(int64_t n_tracks) {
  if (n_tracks < 1 || n_tracks > ConsoleOptions::kMaxTracks)
    throw GraphError("grafx.graph.invalid_console",
                     "a console takes 1 to " + std::to_string(ConsoleOptions::kMaxTracks) +
                         " tracks, but got " + std::to_string(n_tracks));
}

}  // namespace

std::string ConsoleOptions::track_name(int64_t t) const {
  if (track_names.empty()) return "track" + std::to_string(t);
  // Names are looked up (routing, node names) before build_console checks their count.
  if (int64_t(track_names.size()) != n_tracks || t < 0 || t >= n_tracks)
    throw GraphError("grafx.graph.invalid_console", "expected " + std::to_string(n_tracks) +
                                                        " track names, but got " +
                                                        std::to_string(track_names.size()));
  return track_names[size_t(t)];
}

int64_t ConsoleOptions::track_named(const std::string& name, const std::string& context) const {
  auto refuse = [&](const std::string& what) {
    throw GraphError("grafx.graph.invalid_console", context + ": " + what);
  };
  if (track_names.empty()) {  // "track<t>", read rather than listed: n_tracks may be anything
    const std::string digits = name.rfind("track", 0) == 0 ? name.substr(5) : "";
    const bool canonical     = !digits.empty() && digits.size() <= 18 &&
                           digits.find_first_not_of("0123456789") == std::string::npos &&
                           (digits == "0" || digits[0] != '0');
    if (canonical && std::stoll(digits) < n_tracks) return std::stoll(digits);
    refuse("no track is named \"" + name + "\" (tracks: track0 to track" +
           std::to_string(n_tracks - 1) + ")");
  }
  std::vector<int64_t> found;
  for (int64_t t = 0; t < n_tracks; ++t)
    if (track_name(t) == name) found.push_back(t);
  if (found.empty())
    refuse("no track is named \"" + name + "\" (tracks: " + join(track_names) + ")");
  if (found.size() > 1) refuse("two tracks are named \"" + name + "\"; rename one");
  return found.front();
}

std::vector<int64_t> ConsoleOptions::even_groups(int64_t n_tracks, int64_t n_groups) {
  check_track_count(n_tracks);
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
  check_track_count(options.n_tracks);
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
  auto check_chain = [&](const std::vector<std::string>& chain, const std::string& where) {
    for (const auto& type : chain) {
      if (type == "in" || type == "out") fail(where + " cannot contain \"" + type + "\" nodes");
      if (types.contains(type)) {
        TypeId id = types.id(type);
        if (types.n_inlets(id) != 1 || types.n_outlets(id) != 1)
          fail(where + " takes types of one inlet and one outlet, but \"" + type + "\" has " +
               std::to_string(types.n_inlets(id)) + " and " + std::to_string(types.n_outlets(id)) +
               " (wire it in a graph file)");
      }
    }
  };
  check_chain(options.chain, "a console chain");
  check_chain(options.master_chain, "the master chain");
  auto check_track = [&](int64_t track, const std::string& where) {
    if (track < 0 || track >= options.n_tracks)
      fail(where + " names track " + std::to_string(track) + ", but the console has tracks 0 to " +
           std::to_string(options.n_tracks - 1));
  };
  for (size_t b = 0; b < options.sends.size(); ++b) {
    const SendBus& bus = options.sends[b];
    std::string where  = "send bus \"" + bus.name + "\"";
    if (bus.name.empty()) fail("send bus " + std::to_string(b) + " has no name");
    for (size_t other = 0; other < b; ++other)
      if (options.sends[other].name == bus.name)
        fail("two send buses are named \"" + bus.name + "\"");
    if (bus.chain.empty()) fail(where + " has no processor (e.g. a reverb)");
    check_chain(bus.chain, where);
    for (auto t = bus.tracks.begin(); t != bus.tracks.end(); ++t) {
      check_track(*t, where);
      if (std::find(bus.tracks.begin(), t, *t) != t)
        fail(where + " lists track \"" + options.track_name(*t) + "\" twice");
    }
  }
  for (const SidechainRoute& route : options.sidechains) {
    check_track(route.track, "a sidechain");
    check_track(route.key, "a sidechain");
    if (route.track == route.key)
      fail("a sidechain keys track \"" + options.track_name(route.track) +
           "\" by itself (a compressor does that)");
    if (!types.contains(route.type)) fail("a sidechain uses unknown type \"" + route.type + "\"");
    TypeId id          = types.id(route.type);
    const auto& inlets = types[id].inlets;
    if (inlets.size() != 2 || inlets[1] != kSidechainInlet || types.n_outlets(id) != 1)
      fail("a sidechain needs a type with inlets main and " + std::string(kSidechainInlet) +
           " and one outlet, but \"" + route.type + "\" is not one");
  }

  Console console{Graph(types), {}, {}, {}, {}, -1, -1};
  Graph& g         = console.graph;
  auto chain_names = [](const std::vector<std::string>& chain, const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& type : chain) names.push_back(prefix + "." + type);
    return names;
  };
  // Adds `chain` after `from` and returns its last node (or `from` for an empty chain).
  auto add_chain = [&](NodeId from, const std::string& prefix,
                       const std::vector<std::string>& chain) {
    if (chain.empty()) return from;
    auto [first, last] = g.add_serial_chain(chain, chain_names(chain, prefix));
    g.connect(from, first);
    if (options.dry_wet)
      for (NodeId id = first; id <= last; ++id)
        if (!is_utility_type(g.node(id).type)) g.set_dry_wet(id);
    return last;
  };

  // Ids follow the signal: track inputs first (so source k feeds track k), then track chains,
  // sidechains, subgroups, send buses, the master mix, its chain and the output.
  std::vector<NodeId> track_ends;
  for (int64_t t = 0; t < options.n_tracks; ++t)
    console.inputs.push_back(g.add("in", options.track_name(t)));
  for (int64_t t = 0; t < options.n_tracks; ++t)
    track_ends.push_back(
        add_chain(console.inputs[size_t(t)], options.track_name(t), options.chain));
  for (const SidechainRoute& route : options.sidechains) {
    NodeId node = g.add(route.type, options.track_name(route.track) + "." + route.type +
                                        " keyed by " + options.track_name(route.key));
    if (options.dry_wet) g.set_dry_wet(node);
    g.connect(track_ends[size_t(route.track)], node);
    g.connect(console.inputs[size_t(route.key)], node, "main", kSidechainInlet);
    track_ends[size_t(route.track)] = node;
    console.sidechains.push_back(node);
  }
  std::vector<NodeId> group_ends;
  for (int64_t group = 0; group < n_groups; ++group) {
    std::string prefix = "group" + std::to_string(group);
    console.group_mixes.push_back(g.add("mix", prefix + ".mix"));
    group_ends.push_back(add_chain(console.group_mixes.back(), prefix, options.chain));
  }
  // Bus processors are fully wet: the send levels say how much of them is heard.
  std::vector<NodeId> bus_ends;
  for (const SendBus& bus : options.sends) {
    std::string prefix = bus.name + " bus";
    console.bus_mixes.push_back(g.add("mix", prefix + ".mix"));
    auto [first, last] = g.add_serial_chain(bus.chain, chain_names(bus.chain, prefix));
    g.connect(console.bus_mixes.back(), first);
    bus_ends.push_back(last);
    std::vector<int64_t> senders = bus.tracks;
    if (senders.empty())
      for (int64_t t = 0; t < options.n_tracks; ++t) senders.push_back(t);
    for (int64_t t : senders) {
      NodeId send = g.add("send", options.track_name(t) + ".send to " + bus.name);
      g.connect(track_ends[size_t(t)], send);
      g.connect(send, console.bus_mixes.back());
    }
  }
  console.master          = g.add("mix", "master");
  const NodeId master_end = add_chain(console.master, "master", options.master_chain);
  console.output          = g.add("out", "out");
  for (int64_t t = 0; t < options.n_tracks; ++t)
    g.connect(track_ends[size_t(t)],
              groups.empty() ? console.master : console.group_mixes[size_t(groups[size_t(t)])]);
  for (NodeId end : group_ends) g.connect(end, console.master);
  for (NodeId end : bus_ends) g.connect(end, console.master);
  g.connect(master_end, console.output);
  return console;
}

std::vector<NodeId> prune_randomly(Graph& graph, const PruneOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<NodeId> removed;
  for (NodeId id : graph.nodes()) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // same stream on every platform
    if (!graph.contains(id) || is_utility_type(graph.node(id).type)) continue;
    auto it = options.probability.find(graph.types().name(graph.node(id).type));
    if (it == options.probability.end() || u >= it->second) continue;
    try {
      for (NodeId gone : graph.bypass(id)) removed.push_back(gone);
    } catch (const GraphError& e) {  // a kept node needs what it would leave silent: it stays
      if (e.code() != "grafx.graph.invalid_bypass") throw;
    }
  }
  return removed;
}

}  // namespace grafx
