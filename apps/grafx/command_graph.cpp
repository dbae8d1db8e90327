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
#include <grafx/processors/registry.h>
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
}  // namespace

void add_console_command(CLI::App& app) {
  struct Args {
    int64_t n_tracks = 8;
    std::string groups, names;
    RoutingArgs routing{{}, {}, "none"};
    std::string chain  = chain_letters(default_console_chain()), types;
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
  add_routing_options(*cmd, args->routing);
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
    parse_routing(args->routing, types, options);
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
