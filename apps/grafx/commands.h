#pragma once
// Subcommands of the grafx program. Each add_*_command registers one subcommand whose callback
// does the work; errors propagate as grafx::Error and are reported by main().

#include <grafx/graph/graph.h>

#include <CLI/CLI.hpp>

#include <string>

namespace grafx::cli {

void add_console_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_draw_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_render_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_processors_command(CLI::App& app);

/// Node types a graph file may use without declaring them.
NodeTypes known_node_types();
/// Loads a graph file with the known node types.
Graph load_graph_file(const std::string& path);
/// Subgroups from "--groups": a count (tracks split evenly), or a subgroup per track ("0,0,1");
/// empty or "0" for none.
std::vector<int64_t> parse_groups(const std::string& text, int64_t n_tracks);
/// Adds the usual "--force" flag (replace existing outputs) to a subcommand.
CLI::Option* add_force_flag(CLI::App& command, bool& force);

}  // namespace grafx::cli
