#pragma once
// Subcommands of the grafx program. Each add_*_command registers one subcommand whose callback
// does the work; errors propagate as grafx::Error and are reported by main(). What the
// commands share lives in one header per concern: arguments.h, console_options.h,
// output_folder.h, parameter_values.h, pruning_session.h, stop_request.h; the rest is the
// library's.

#include <CLI/CLI.hpp>

namespace grafx::cli {

void add_console_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_draw_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_render_command(CLI::App& app);
void add_stream_command(CLI::App& app);
void add_export_lv2_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_processors_command(CLI::App& app);
void add_process_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_loss_command(CLI::App& app);
void add_bench_command(CLI::App& app);

}  // namespace grafx::cli
