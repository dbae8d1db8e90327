#pragma once
// Graph files and consoles from the command line: known types, --chain, --types, --groups, --send,
// --sidechain, --master.

#include <grafx/graph/console.h>
#include <grafx/graph/graph.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace grafx::cli {

/// Node types a graph file may use without declaring them.
NodeTypes known_node_types();
/// A chain's type letters, e.g. of default_console_chain() ("ecnsgdr", the paper's) or of
/// default_fit_chain() ("hqcnsgdr"), as --chain shows its default.
std::string chain_letters(const std::vector<std::string>& chain);
/// Loads a graph file with the known node types.
Graph load_graph_file(const std::string& path);
/// The types a console may be built of: the registry's, plus the types the graph file
/// `types_file` declares (configured processors, containers), when given.
NodeTypes console_types(const std::string& types_file);
/// --chain and --types of the commands that build consoles; returns both options.
std::pair<CLI::Option*, CLI::Option*> add_chain_options(CLI::App& command, std::string& chain,
                                                        std::string& types_file);
/// Subgroups from "--groups": a count (tracks split evenly), or a subgroup per track ("0,0,1");
/// empty or "0" for none.
std::vector<int64_t> parse_groups(const std::string& text, int64_t n_tracks);
/// Console routing given on the command line: --send, --sidechain and --master.
struct RoutingArgs {
  std::vector<std::string> sends, sidechains;
  std::string master;  ///< a chain as parse_chain reads it, or "none"
};
/// Adds "--send", "--sidechain" and "--master" (its default: `routing.master`) to a subcommand.
void add_routing_options(CLI::App& command, RoutingArgs& routing);
/// Adds the send buses ("NAME=CHAIN[@TRACK,...]", CHAIN as parse_chain reads it), sidechains
/// ("TRACK=KEY[:TYPE]", TYPE a letter or name) and master chain to a console's options; types of
/// `types`, tracks by name (options.track_names, else "track<i>"). Throws GraphError
/// [grafx.graph.invalid_console] naming the option.
void parse_routing(const RoutingArgs& routing, const NodeTypes& types, ConsoleOptions& options);

}  // namespace grafx::cli
