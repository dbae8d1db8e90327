// grafx console | info | draw: build, inspect and picture graphs.

#include "commands.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/draw.h>

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
  s << graph.n_nodes() << " nodes (" << processors << " processors), " << graph.n_edges()
    << " edges";
  return s.str();
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
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
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

void add_console_command(CLI::App& app) {
  struct Args {
    int64_t n_tracks = 8;
    std::string groups;
    std::string chain  = default_chain_letters();
    int64_t prune_seed = -1;
    std::string output, picture;
    bool dry_wet = false, force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("console", "Build a mixing console graph (optionally pruned)");
  cmd->add_option("--tracks", args->n_tracks, "Number of tracks")->check(CLI::Range(1, 100000));
  cmd->add_option("--groups", args->groups,
                  "Subgroups: a count (tracks split evenly) or a subgroup per track, e.g. 0,0,1");
  cmd->add_option("--chain", args->chain, "Processor chain as type letters")->capture_default_str();
  cmd->add_option("--prune-seed", args->prune_seed,
                  "Bypass processors at random (per-type ratios of the paper) with this seed")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--dry-wet", args->dry_wet,
                "Give every processor a learnable wet amount (the pruning paper's console)");
  cmd->add_option("-o,--output", args->output, "Graph file to write (.json)")->required();
  cmd->add_option("--draw", args->picture, "Also draw the console (.svg, .png, .pdf)");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    ConsoleOptions options;
    options.n_tracks     = args->n_tracks;
    options.track_groups = parse_groups(args->groups, args->n_tracks);
    options.chain        = chain_from_letters(args->chain);
    options.dry_wet      = args->dry_wet;
    Console console      = build_console(options, known_node_types());
    std::string pruned;
    if (args->prune_seed >= 0) {
      PruneOptions prune;
      prune.seed        = static_cast<uint64_t>(args->prune_seed);
      prune.probability = random_pruning_rates();
      pruned = ", " + std::to_string(prune_randomly(console.graph, prune).size()) + " bypassed";
    }
    if (!args->picture.empty()) check_writable(args->picture, args->force);
    save_graph(console.graph, args->output, args->force);
    std::cout << "console: " << args->n_tracks << " tracks, " << console.group_mixes.size()
              << " subgroups, " << summary(console.graph) << pruned << " -> " << args->output
              << "\n";
    if (!args->picture.empty()) {
      draw_graph(console.graph, args->picture, {}, args->force);
      std::cout << "picture: " << args->picture << "\n";
    }
  });
}

void add_info_command(CLI::App& app) {
  auto path     = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "Describe a graph file and validate it");
  cmd->add_option("graph", *path, "Graph file (.json)")->required();
  cmd->callback([path] {
    Graph graph = load_graph_file(*path);
    std::cout << *path << ": " << summary(graph) << "\n";
    auto counts = graph.count_per_type();
    for (TypeId t = 0; t < graph.types().size(); ++t) {
      const NodeType& type = graph.types()[t];
      std::cout << "  " << type_letter(type.name) << "  " << type.name;
      for (size_t pad = type.name.size(); pad < 16; ++pad) std::cout << ' ';
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
    auto issues = graph.validate();
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
  cmd->add_option("--title", args->options.title, "Title above the picture");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    Graph graph = load_graph_file(args->graph);
    draw_graph(graph, args->output, args->options, args->force);
    std::cout << "picture: " << args->output << " (" << graph.n_nodes() << " nodes)\n";
  });
}

}  // namespace grafx::cli
