// grafx prune: prune a fitted console to the processors that matter (prune/prune.h), from the
// folder of a fit; also the pruning step of `grafx fit --prune`.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "output_folder.h"
#include "pruning_session.h"
#include "stop_request.h"

#include <grafx/duration.h>
#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/fit/fit_record.h>
#include <grafx/io/parameter_file.h>
#include <grafx/report/prune_report.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

namespace grafx::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

void add_prune_command(CLI::App& app) {
  struct Args {
    std::string fit, output;
    bool force = false, resume = false;
    PruningOptions options;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "prune", "Prune a fitted console to the processors that matter (the pruning paper's search)");
  cmd->add_option("fit", args->fit, "Folder of a fit (grafx fit or grafx demo)")->required();
  cmd->add_option("-o,--output", args->output, "Output folder")->required();
  add_pruning_options(*cmd, args->options, "");
  cmd->add_flag("--resume", args->resume, "Continue the pruning saved in the output folder");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    StopRequest stop;  // loading and set-up take seconds: Ctrl-C then also ends with a coded error
    auto [inputs, options] = read_fit_record(args->fit);
    check_fit_audio_unchanged(inputs, args->fit);
    // Fine-tuning goes on at the rate the fit ended with, constant (as `fit --prune` does),
    // from the fit's parameters.
    options.optimizer.lr *= options.lr_schedule.final_ratio;
    options.lr_schedule    = {};
    options.initialisation = InitialisationOptions::none();
    Graph graph            = load_graph_file(args->fit + "/console.json");
    ParameterFile file     = read_parameter_file(args->fit + "/parameters.safetensors", graph);
    if (file.sample_rate > 0 && file.sample_rate != inputs.sample_rate)
      throw IoError("grafx.io.fit_folder", args->fit + ": parameters.safetensors was made at " +
                                               std::to_string(file.sample_rate) +
                                               " Hz, but fit.json says " +
                                               std::to_string(inputs.sample_rate) + " Hz");
    std::vector<std::string> sources = inputs.tracks;
    sources.push_back(inputs.mix);
    for (const char* name : {"console.json", "parameters.safetensors", "fit.json"})
      sources.push_back(args->fit + "/" + name);
    const fs::path output(args->output);
    std::vector<std::string> files = prune_output_files();
    files.push_back(kPruneCheckpoint);
    files.push_back(kPruneState);
    for (const auto& name : files) check_not_an_input(args->output + "/" + name, sources);
    if (args->resume &&
        !(fs::exists(output / kPruneCheckpoint) && fs::exists(output / kPruneState)))
      throw FitError("grafx.fit.checkpoint", args->output + ": holds no saved pruning to resume (" +
                                                 kPruneState + " and " + kPruneCheckpoint + ")");
    auto [tracks, mix, notes] = load_fit_audio(inputs);
    print_notes(notes);
    options.n_steps       = args->options.rounds * args->options.steps_between;
    options.adapt_threads = !threads_chosen();
    Fitter fitter(graph, tracks, mix, inputs.sample_rate, options, file.parameters);
    stop_if_requested(stop);
    prepare_output_folder(args->output, files, args->resume, args->force, "pruning");
    run_pruning(fitter, args->options,
                {args->output, "grafx prune: " + fs::path(args->fit).filename().string(),
                 args->resume, /*keep_state=*/true},
                stop);
  });
}

}  // namespace grafx::cli
