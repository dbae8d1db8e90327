// grafx console | info | draw: build, inspect and picture graphs.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "output_folder.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/draw.h>
#include <grafx/render/parameters.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace grafx::cli {
namespace {

std::string summary(const Graph& graph) {
  std::ostringstream s;
  auto counts        = graph.count_per_type();
  int64_t processors = 0;
  for (TypeId t = NodeTypes::kMix + 1; t < graph.types().size(); ++t)
    processors += counts[size_t(t)];
  s << counted(graph.n_nodes(), "node") << " (" << counted(processors, "processor") << "), "
    << counted(graph.n_edges(), "edge");
  return s.str();
}

/// The index of the track named `name`, naming the option and the track names otherwise.
int64_t track_index(const std::vector<std::string>& names, const std::string& name,
                    const std::string& option) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    throw GraphError("grafx.graph.invalid_console",
                     option + ": no track is named \"" + name + "\" (tracks: " + join(names) + ")");
  if (std::find(it + 1, names.end(), name) != names.end())
    throw GraphError("grafx.graph.invalid_console",
                     option + ": two tracks are named \"" + name + "\"; rename one");
  return it - names.begin();
}

}  // namespace

std::vector<int64_t> parse_groups(const std::string& text, int64_t n_tracks) {
  if (text.empty() || text == "0") return {};
  if (text.find(',') == std::string::npos) {
    try {
      size_t used = 0;
      int64_t n   = std::stoll(text, &used);
      if (used == text.size()) return ConsoleOptions::even_groups(n_tracks, n);
    } catch (const std::logic_error&) {
    }
    throw GraphError("grafx.graph.invalid_console",
                     "--groups: expected a number of subgroups or a comma-separated subgroup per "
                     "track, but got \"" +
                         text + "\"");
  }
  std::vector<int64_t> groups;
  for (const auto& item : split(text, ',')) {
    try {
      size_t used = 0;
      groups.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::logic_error&) {
      throw GraphError("grafx.graph.invalid_console",
                       "--groups: \"" + item + "\" is not a subgroup number");
    }
  }
  return groups;
}

void add_routing_options(CLI::App& command, std::vector<std::string>& sends,
                         std::vector<std::string>& sidechains) {
  command.add_option("--send", sends,
                     "A send bus NAME=CHAIN[@TRACK,...] (CHAIN as --chain takes it): every track "
                     "(or those listed) sends to it, e.g. --send reverb=r --send "
                     "echo=eq,delay@vocals,guitar");
  command.add_option("--sidechain", sidechains,
                     "TRACK=KEY[:TYPE]: TRACK's level follows KEY's input, e.g. --sidechain "
                     "bass=kick (a sidechain_compressor; TYPE is a letter or name)");
}

std::pair<CLI::Option*, CLI::Option*> add_chain_options(CLI::App& command, std::string& chain,
                                                        std::string& types_file) {
  CLI::Option* chain_option =
      command
          .add_option("--chain", chain,
                      "Processor chain of every track and subgroup: type letters (ecnsgdr) or "
                      "comma-separated type names or letters (e.g. strip,gain_pan,r)")
          ->capture_default_str();
  CLI::Option* types_option = command.add_option(
      "--types", types_file,
      "A graph file whose declared types (configured processors, containers) --chain may name");
  return {chain_option, types_option};
}

void parse_routing(const std::vector<std::string>& sends,
                   const std::vector<std::string>& sidechains, const NodeTypes& types,
                   ConsoleOptions& options) {
  std::vector<std::string> names;
  for (int64_t t = 0; t < options.n_tracks; ++t) names.push_back(options.track_name(t));
  auto fail = [](const std::string& option, const std::string& text, const std::string& what) {
    throw GraphError("grafx.graph.invalid_console", option + " \"" + text + "\": " + what);
  };
  for (const auto& text : sends) {
    size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0)
      fail("--send", text, "expected NAME=CHAIN[@TRACK,...], e.g. reverb=r or echo=eq,delay");
    size_t at = text.find('@', equals);
    SendBus bus;
    bus.name = text.substr(0, equals);
    try {
      bus.chain = parse_chain(text.substr(equals + 1, at - equals - 1), types);
    } catch (const Error& e) {
      fail("--send", text, e.message());
    }
    if (at != std::string::npos)
      for (const auto& name : split(text.substr(at + 1), ','))
        bus.tracks.push_back(track_index(names, name, "--send \"" + text + "\""));
    options.sends.push_back(bus);
  }
  for (const auto& text : sidechains) {
    size_t equals = text.find('='), colon = text.find(':', equals);
    if (equals == std::string::npos) fail("--sidechain", text, "expected TRACK=KEY[:TYPE]");
    std::string option = "--sidechain \"" + text + "\"";
    SidechainRoute route;
    route.track = track_index(names, text.substr(0, equals), option);
    route.key   = track_index(names, text.substr(equals + 1, colon - equals - 1), option);
    if (colon != std::string::npos) {
      try {
        route.type = parse_chain(text.substr(colon + 1), types).front();
      } catch (const Error& e) {
        fail("--sidechain", text, e.message());
      }
    }
    options.sidechains.push_back(route);
  }
}

void add_console_command(CLI::App& app) {
  struct Args {
    int64_t n_tracks = 8;
    std::string groups, names;
    std::vector<std::string> sends, sidechains;
    std::string chain  = default_chain_letters(), types;
    int64_t prune_seed = -1;
    std::string output, picture;
    bool dry_wet = false, force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("console", "Build a mixing console graph (optionally pruned)");
  CLI::Option* n_tracks =
      cmd->add_option("--tracks", args->n_tracks, "Number of tracks")->check(CLI::Range(1, 100000));
  cmd->add_option("--names", args->names,
                  "Track names, comma-separated (their count sets --tracks when not given)");
  cmd->add_option("--groups", args->groups,
                  "Subgroups: a count (tracks split evenly) or a subgroup per track, e.g. 0,0,1");
  add_chain_options(*cmd, args->chain, args->types);
  add_routing_options(*cmd, args->sends, args->sidechains);
  cmd->add_option("--prune-seed", args->prune_seed,
                  "Bypass processors at random (per-type ratios of the paper) with this seed")
      ->check(whole_number(0));
  cmd->add_flag("--dry-wet", args->dry_wet,
                "Give every processor a learnable wet amount (the pruning paper's console)");
  cmd->add_option("-o,--output", args->output, "Graph file to write (.json)")->required();
  cmd->add_option("--draw", args->picture, "Also draw the console (.svg, .png, .pdf)");
  add_force_flag(*cmd, args->force);
  cmd->callback([args, n_tracks] {
    ConsoleOptions options;
    if (!args->names.empty()) {
      options.track_names = split(args->names, ',');
      if (!*n_tracks) args->n_tracks = int64_t(options.track_names.size());
    }
    options.n_tracks      = args->n_tracks;
    options.track_groups  = parse_groups(args->groups, args->n_tracks);
    const NodeTypes types = console_types(args->types);
    options.chain         = parse_chain(args->chain, types);
    options.dry_wet       = args->dry_wet;
    parse_routing(args->sends, args->sidechains, types, options);
    Console console = build_console(options, types);
    std::string pruned;
    if (args->prune_seed >= 0) {
      PruneOptions prune;
      prune.seed        = static_cast<uint64_t>(args->prune_seed);
      prune.probability = random_pruning_rates();
      pruned = ", " + std::to_string(prune_randomly(console.graph, prune).size()) + " bypassed";
    }
    DrawOptions draw;
    draw.strips = true;
    // The types file is an input like any other: --force never replaces it.
    if (!args->types.empty()) check_not_an_input(args->output, {args->types});
    if (!args->picture.empty()) {
      check_drawable(console.graph, args->picture, draw);
      check_writable(args->picture, args->force);
    }
    save_graph(console.graph, args->output, args->force);
    note_written(args->output);
    std::cout << "console: " << counted(args->n_tracks, "track") << ", "
              << counted(int64_t(console.group_mixes.size()), "subgroup") << ", ";
    if (!options.sends.empty())
      std::cout << counted(int64_t(options.sends.size()), "send bus", "send buses") << ", ";
    if (!options.sidechains.empty())
      std::cout << counted(int64_t(options.sidechains.size()), "sidechain") << ", ";
    std::cout << summary(console.graph) << pruned << " -> " << args->output << "\n";
    if (!args->picture.empty()) {
      draw_graph(console.graph, args->picture, draw, args->force);
      std::cout << "picture: " << args->picture << "\n";
    }
  });
}

// Processors whose making depends on the rate are made at the fit's default rate.
constexpr SampleRate kInfoSampleRate = 30000;

void add_info_command(CLI::App& app) {
  auto path     = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "Describe a graph file and validate it");
  cmd->add_option("graph", *path, "Graph file (.json)")->required();
  cmd->callback([path] {
    Graph graph = load_graph_file(*path);
    std::cout << *path << ": " << summary(graph) << "\n";
    auto counts = graph.count_per_type();
    for (TypeId t = 0; t < graph.types().size(); ++t) {
      if (counts[size_t(t)] == 0) continue;  // the types present, not every known one
      const NodeType& type = graph.types()[t];
      std::cout << "  " << type_letter(type) << "  " << type.name;
      std::cout << std::string(std::max<size_t>(1, 26 - type.name.size()), ' ');
      std::cout << counts[size_t(t)];
      if (type.inlets.size() > 1 || type.outlets.size() > 1) {
        std::cout << "   (";
        for (size_t i = 0; i < type.inlets.size(); ++i)
          std::cout << (i ? ", " : "") << type.inlets[i];
        std::cout << " -> ";
        for (size_t i = 0; i < type.outlets.size(); ++i)
          std::cout << (i ? ", " : "") << type.outlets[i];
        std::cout << ")";
      }
      std::cout << "\n";
    }
    if (graph.has_automation()) {
      int64_t curves = 0;
      for (NodeId id : graph.nodes()) curves += int64_t(graph.node(id).automated.size());
      const Automation& clock = graph.automation();
      std::cout << "automation: " << counted(curves, "parameter") << " on curves of "
                << counted(clock.points, "point") << " at " << clock.rate_hz << " per second ("
                << clock.seconds() << " s)\n";
    }
    auto issues = graph.validate();
    if (issues.empty()) {  // then what every render checks before it reads audio
      try {
        renderable_processors(graph, {kInfoSampleRate});
      } catch (const Error& e) {
        issues.push_back({e.code(), -1, e.message()});
      }
    }
    if (issues.empty()) {
      std::cout << "valid\n";
      return;
    }
    std::cout << "invalid: " << issues.size() << " problem" << (issues.size() > 1 ? "s" : "")
              << "\n";
    for (const auto& issue : issues)
      std::cout << "  [" << issue.code << "] " << issue.message << "\n";
    throw GraphError(issues.front().code, *path + ": the graph is not valid");
  });
}

void add_draw_command(CLI::App& app) {
  struct Args {
    std::string graph, output;
    DrawOptions options;
    bool force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("draw", "Draw a graph file (.svg, .png, .pdf or .dot)");
  cmd->add_option("graph", args->graph, "Graph file (.json)")->required();
  cmd->add_option("-o,--output", args->output, "Picture to write")->required();
  cmd->add_flag("--vertical", args->options.vertical, "Top to bottom instead of left to right");
  cmd->add_flag("--ids", args->options.show_ids, "Show node ids");
  cmd->add_option("--max-nodes", args->options.max_nodes,
                  "Largest graph to lay out as a picture (layout time grows fast)")
      ->capture_default_str()
      ->check(whole_number(1));
  cmd->add_flag("--strips", args->options.strips,
                "Box each strip: nodes named STRIP or STRIP.anything (a console's tracks, "
                "subgroups and buses)");
  cmd->add_option("--title", args->options.title, "Title above the picture");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    Graph graph = load_graph_file(args->graph);
    check_not_an_input(args->output, {args->graph});
    draw_graph(graph, args->output, args->options, args->force);
    std::cout << "picture: " << args->output << " (" << counted(graph.n_nodes(), "node") << ")\n";
  });
}

}  // namespace grafx::cli
